"""Stored files that nothing names any more, deleted: a withdrawn entry's renders and feedback images (the erase job),
a study participant's files when they withdraw (studies.services.participant_withdraw).

Files are stored by content (evaluation/rendering.py), so the same bytes may be named by another submission's render,
a prompter's feedback image or a participant's attempt: a file is deleted only when no row of any model names it. Every
delete goes through the field's storage (the filesystem or a bucket), never a local path.
"""

from __future__ import annotations

import logging

from django.apps import apps
from django.core.files.storage import Storage
from django.db import models, transaction

from .models import PromptCall, Render, Submission

log = logging.getLogger(__name__)


def file_fields() -> list[models.FileField]:
    """Every file field (ImageField included) of every installed model: each place a stored file can be named."""
    return [f for model in apps.get_models() for f in model._meta.concrete_fields if isinstance(f, models.FileField)]


def files_in_use(names: set[str]) -> set[str]:
    """Which of these storage names some row of any model still names (asked 500 at a time: SQLite limits parameters)."""
    ordered, used = sorted(names), set()
    for field in file_fields():
        rows = field.model._default_manager
        for start in range(0, len(ordered), 500):
            used |= set(rows.filter(**{f"{field.name}__in": ordered[start : start + 500]}).values_list(field.name, flat=True))
    return used


def files_delete_unused(files: dict[str, Storage]) -> list[str]:
    """Delete, each from its field's storage, the files no row names any more (files are stored by content: the same
    bytes may be another participant's render, a prompter's, a feedback image...). Returns the names deleted."""
    gone = sorted(set(files) - files_in_use(set(files)))
    for name in gone:
        files[name].delete(name)
    return gone


@transaction.atomic
def entry_media_erase(submission_id: int) -> list[str]:
    """A withdrawn entry's media erased: its renders and feedback images no longer name their files, and each file no
    other row names is deleted from the media storage (its scores, prompts and history stay, for its team). The deletes
    run inside the transaction that clears the names, so one that fails rolls the names back and the job's retry finds
    what is left (deleting a file already gone is no error, on disk or in a bucket). An entry shown again since its
    withdrawal keeps its files. Returns the names deleted."""
    submission = Submission.objects.select_for_update().filter(pk=submission_id, published=False, withdrawn__isnull=False).first()
    if submission is None:
        return []
    renders = Render.objects.filter(entry__submission=submission).exclude(image="")
    calls = PromptCall.objects.filter(submission=submission).exclude(feedback_image="")
    files = dict.fromkeys(renders.values_list("image", flat=True), Render._meta.get_field("image").storage)
    files |= dict.fromkeys(calls.values_list("feedback_image", flat=True), PromptCall._meta.get_field("feedback_image").storage)
    renders.update(image="")
    calls.update(feedback_image="")
    gone = files_delete_unused(files)
    log.info("entry %s erased: %d of its %d file(s) deleted (the rest are shared)", submission_id, len(gone), len(files))
    return gone
