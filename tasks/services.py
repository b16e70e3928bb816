"""Writes for task packs. A pack load is one transaction, so a failed load leaves nothing behind.

Versions: a task's `version` goes up whenever what prompters or the judge see changes (brief,
constraints, tags, checklists, seed prompt, target), and so does its pack's `revision`.
Submissions record the revision they were made against, and a leaderboard shows one
(pack, revision) at a time, so results on edited tasks are never ranked together. Each version's
content is kept (TaskVersion, written here and nowhere else), so a submission is judged against its
revision's content however often the pack changed since (tasks.selectors.task_at).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import F

from .loaders import PackData, TaskRecord
from .models import CONTENT_FIELDS, TAG_GROUP_OF, Tag, Task, TaskPack, TaskVersion


def task_hash(task: Task, tag_names: list[str], target_sha: str) -> str:
    content = {
        "title": task.title,
        "brief": task.brief,
        "constraints": task.constraints,
        "tags": sorted(tag_names),
        "prompt_checklist": task.prompt_checklist,
        "image_checklist": task.image_checklist,
        "seed_prompt": task.seed_prompt,
        "target": target_sha,
        "split": task.split,
        "category": task.category,
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def _target_sha(task: Task) -> str:
    if not task.target_image:
        return ""
    with task.target_image.open("rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


@dataclass(frozen=True)
class PackRevision:
    """One run's changes to a pack (an admin edit, a render_targets run): a run is one revision. Its first change
    raises the pack's revision, in that change's transaction; later changes of the run join that revision, and a
    run that changes nothing raises nothing. Raising at the first change, not at the end, keeps a submission made
    during a long run off the revision that the run is changing."""

    pack_id: int
    base: int  # the pack's revision when the run began

    @classmethod
    def begin(cls, pack_id: int) -> PackRevision:
        return cls(pack_id, TaskPack.objects.values_list("revision", flat=True).get(pk=pack_id))

    def changed(self) -> None:
        """Call inside the transaction that stores a change of what is judged. A conditional update, not a flag:
        a change whose transaction rolled back leaves the revision to the next change."""
        TaskPack.objects.filter(pk=self.pack_id, revision=self.base).update(revision=self.base + 1)


@transaction.atomic
def task_touch(*, task: Task, revision: PackRevision | None = None) -> bool:
    """After an edit (admin, render_targets): bump the task's version if its content changed, and the pack's
    revision through `revision` (the run's; by default a run of this one edit)."""
    tag_names = [t.name for t in task.tags.all()]
    digest = task_hash(task, tag_names, _target_sha(task))
    if digest == task.content_hash:
        return False
    Task.objects.filter(pk=task.pk).update(content_hash=digest, version=F("version") + 1)
    (revision or PackRevision.begin(task.pack_id)).changed()
    task.refresh_from_db()
    _version_keep(task, tag_names, TaskPack.objects.values_list("revision", flat=True).get(pk=task.pack_id))
    return True


def _version_keep(task: Task, tag_names: list[str], revision: int) -> None:
    """Keep the task's content as its current version, the content of pack revisions from `revision` on."""
    content = {name: getattr(task, name) for name in CONTENT_FIELDS}
    TaskVersion.objects.create(task=task, version=task.version, revision=revision, tags=sorted(tag_names), **content)


@transaction.atomic
def pack_save(*, data: PackData) -> tuple[TaskPack, dict[str, int]]:
    """Create or update a pack version; returns the pack and counts of created/changed/unchanged tasks."""
    pack, created = TaskPack.objects.update_or_create(
        name=data.name,
        version=data.version,
        defaults={"source": data.source, "title": data.title, "description": data.description, "license": data.license},
    )
    counts = {"created": 0, "changed": 0, "unchanged": 0}
    tags = _ensure_tags()
    revision = pack.revision if created else pack.revision + 1  # the pack row is locked (update_or_create) until commit
    for record in data.tasks:
        counts[_task_save(pack, record, tags, revision)] += 1
    if not created and (counts["created"] or counts["changed"]):
        TaskPack.objects.filter(pk=pack.pk).update(revision=F("revision") + 1)
        pack.refresh_from_db()
    return pack, counts


def _ensure_tags() -> dict[str, Tag]:
    for name, group in TAG_GROUP_OF.items():
        Tag.objects.get_or_create(name=name, defaults={"group": group})
    return {tag.name: tag for tag in Tag.objects.all()}


def _task_save(pack: TaskPack, record: TaskRecord, tags: dict[str, Tag], revision: int) -> str:
    task = Task.objects.filter(pack=pack, task_id=record.task_id).first()
    outcome = "created" if task is None else "changed"
    task = task or Task(pack=pack, task_id=record.task_id, version=0)
    task.category, task.split, task.title, task.brief = record.category, record.split, record.title, record.brief
    task.constraints, task.seed_prompt = record.constraints, record.seed_prompt
    task.prompt_checklist, task.image_checklist = record.prompt_checklist, record.image_checklist
    target_bytes = record.target_image.read_bytes() if record.target_image else None
    target_sha = hashlib.sha256(target_bytes).hexdigest() if target_bytes is not None else _target_sha(task)
    tag_names = [t.lstrip("#") for t in record.tags]
    digest = task_hash(task, tag_names, target_sha)
    if digest == task.content_hash:
        return "unchanged"
    if target_bytes is not None:
        task.target_image.save(f"{pack.name}/{pack.version}/{record.task_id}.png", ContentFile(target_bytes), save=False)
        task.target_note = "target image shipped with the pack"
    task.version, task.content_hash = task.version + 1, digest
    task.save()
    task.tags.set([tags[name] for name in tag_names])
    _version_keep(task, tag_names, revision)
    return outcome
