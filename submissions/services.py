"""Writes for teams, tokens and submissions (HackSoft-style keyword-only services)."""

from __future__ import annotations

import hashlib
import json
import secrets

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from evaluation.workqueue import START_JOB, QueueUnavailable, enqueue
from tasks.models import TaskPack

from .models import ApiToken, Membership, PromptEntry, Status, Submission, Team
from .parsing import Limits, parse_prompt_file

TOKEN_PREFIX = "atl_"


@transaction.atomic
def team_create(*, user, name: str) -> Team:
    team = Team.objects.create(name=name.strip(), slug=slugify(name)[:100] or f"team-{secrets.token_hex(3)}")
    Membership.objects.create(team=team, user=user, is_owner=True)
    return team


def token_create(*, team: Team, name: str) -> tuple[ApiToken, str]:
    """Returns the row and the token itself, which is shown once and never stored."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(team=team, name=name, prefix=token[:12], digest=ApiToken.digest_of(token))
    return row, token


def token_team(token: str) -> Team | None:
    row = ApiToken.objects.select_related("team").filter(digest=ApiToken.digest_of(token), revoked=False).first()
    if row is None:
        return None
    ApiToken.objects.filter(pk=row.pk).update(last_used=timezone.now())
    return row.team


def upload_limits() -> Limits:
    return Limits(
        max_bytes=settings.ATELIER_MAX_UPLOAD_BYTES,
        max_chars=settings.ATELIER_MAX_PROMPT_CHARS,
        max_samples=settings.ATELIER_MAX_SAMPLES,
    )


class IdempotencyConflict(Exception):
    """An Idempotency-Key already used by this team for a different upload."""


def _fingerprint(pack: TaskPack, prompter: str, condition: str, data: bytes) -> str:
    return hashlib.sha256(json.dumps([pack.pk, prompter, condition, hashlib.sha256(data).hexdigest()]).encode()).hexdigest()


def _replay(team: Team, key: str, fingerprint: str) -> Submission | None:
    """The submission an earlier request with this key created, if any (a different request with it is a conflict)."""
    earlier = Submission.objects.filter(team=team, idempotency_key=key).first() if key else None
    if earlier is not None and earlier.request_fingerprint != fingerprint:
        raise IdempotencyConflict(f"Idempotency-Key {key!r} was already used for a different upload (submission #{earlier.pk})")
    return earlier


def submission_create(
    *, team: Team, pack: TaskPack, prompter: str, filename: str, data: bytes, condition: str = "", is_baseline: bool = False,
    idempotency_key: str = "",
) -> Submission:
    """Parse the file (raises PromptFileError listing every bad line), then store all prompts and enqueue the start
    in one step: if the work queue cannot be reached, nothing stays stored and QueueUnavailable is raised. With an
    idempotency key, a retried upload returns the submission the first one created."""
    fingerprint = _fingerprint(pack, prompter, condition, data)
    earlier = _replay(team, idempotency_key, fingerprint)
    if earlier is not None:
        return earlier
    tasks = {t.task_id: t for t in pack.tasks.all()}
    rows = parse_prompt_file(filename, data, set(tasks), upload_limits())
    submission = Submission(
        team=team, pack=pack, pack_revision=pack.revision, prompter=prompter, condition=condition, source_name=_safe_name(filename),
        is_baseline=is_baseline, idempotency_key=idempotency_key, request_fingerprint=fingerprint if idempotency_key else "",
    )  # fmt: skip
    try:
        with transaction.atomic():
            submission.save()
            PromptEntry.objects.bulk_create(
                PromptEntry(submission=submission, task=tasks[r.task_id], sample_index=r.sample, text=r.prompt, line=r.line) for r in rows
            )
            enqueue("default", START_JOB, submission.pk)  # sent once the rows are committed
    except IntegrityError:
        if idempotency_key and (earlier := _replay(team, idempotency_key, fingerprint)) is not None:
            return earlier  # the same request, retried while the first was being stored
        raise
    except QueueUnavailable:
        Submission.objects.filter(pk=submission.pk).delete()  # the rows were committed before the send failed
        raise
    return submission


def _safe_name(filename: str) -> str:
    """The uploaded file's name as it can be stored: no NUL, no unpaired surrogate, at most 255 characters."""
    return filename.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")[:255]


def submissions_publish(*, submissions) -> int:
    """Publish finished submissions; unfinished ones are left as they are. Returns how many were published."""
    return submissions.filter(status=Status.DONE).update(published=True)
