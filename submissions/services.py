"""Writes for teams, tokens and submissions (HackSoft-style keyword-only services)."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from evaluation.workqueue import START_JOB, enqueue
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


def submission_create(
    *, team: Team, pack: TaskPack, prompter: str, filename: str, data: bytes, condition: str = "", is_baseline: bool = False
) -> Submission:
    """Parse the file (raises PromptFileError listing every bad line), then store all prompts in one transaction."""
    tasks = {t.task_id: t for t in pack.tasks.all()}
    rows = parse_prompt_file(filename, data, set(tasks), upload_limits())
    with transaction.atomic():
        submission = Submission.objects.create(
            team=team, pack=pack, pack_revision=pack.revision, prompter=prompter, condition=condition,
            source_name=filename, is_baseline=is_baseline,
        )  # fmt: skip
        PromptEntry.objects.bulk_create(
            PromptEntry(submission=submission, task=tasks[r.task_id], sample_index=r.sample, text=r.prompt, line=r.line)
            for r in rows
        )
        enqueue("default", START_JOB, submission.pk)
    return submission


def submissions_publish(*, submissions) -> int:
    """Publish finished submissions; unfinished ones are left as they are. Returns how many were published."""
    return submissions.filter(status=Status.DONE).update(published=True)
