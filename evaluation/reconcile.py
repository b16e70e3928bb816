"""Nothing stuck: re-send the job of every unit that has waited too long with no job behind it.

The database says what is pending; rq says which jobs are still coming (evaluation.workqueue.job_alive).
A unit is re-sent when it was queued more than ATELIER_RECONCILE_AFTER seconds ago and its job is gone
(Redis restarted), failed, or held by a worker whose heartbeat stopped (SIGKILL, lost machine). Jobs are
idempotent and keyed by the unit, so a re-sent unit is still done once. `manage.py scheduler` runs this
every ATELIER_RECONCILE_INTERVAL seconds; `manage.py reconcile` runs it once (with --now: no grace age).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db.models import Min
from django.utils import timezone

from evaluation.models import ACTIVE, CallStatus, Judgement, PromptCall, Render, Status, Submission, UnitStatus

from .units import prompting_open, submission_advance
from .workqueue import FEEDBACK_JUDGE_JOB, FEEDBACK_RENDER_JOB, FINISH_JOB, JUDGE_JOB, PROMPT_JOB, RENDER_JOB, START_JOB, enqueue, job_alive

# Checks of the apps above this layer, registered from their AppConfig.ready() so that this layer never imports them
# (ratings: /judge/'s statistics whose inputs changed with no job sent). Each sends what is owed and says so in words.
CHECKS: list[Callable[[], str]] = []


def register_check(check: Callable[[], str]) -> None:
    if check not in CHECKS:
        CHECKS.append(check)


@dataclass
class Resent:
    starts: list[int] = field(default_factory=list)
    renders: list[tuple[int, str]] = field(default_factory=list)
    judgements: list[int] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    advanced: list[int] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # what each registered check said

    def __str__(self) -> str:
        found = f"{len(self.starts)} start(s), {len(self.renders)} render job(s), {len(self.judgements)} judge job(s), {len(self.calls)} prompting job(s) re-sent; {len(self.advanced)} submission(s) moved on"
        return "; ".join([found, *self.checks])


def reconcile(after_seconds: float | None = None) -> Resent:
    cutoff = timezone.now() - timedelta(seconds=settings.ATELIER_RECONCILE_AFTER if after_seconds is None else after_seconds)
    resent = Resent()
    for submission in Submission.objects.filter(status__in=ACTIVE, created__lt=cutoff):
        if submission.status == Status.QUEUED:
            if not job_alive(START_JOB, submission.pk):
                enqueue(START_JOB, submission.pk)
                resent.starts.append(submission.pk)
            continue
        if submission.status == Status.PROMPTING:
            _resend_calls(submission, cutoff, resent)
            continue
        _resend_units(submission.pk, cutoff, resent)
    from .batching import batch_check  # here: it brings the openai client, which web processes never import

    resent.checks = [said for said in (batch_check(cutoff), *(check() for check in CHECKS)) if said]
    return resent


def _resend_units(submission_id: int, cutoff, resent: Resent) -> None:
    renders = Render.objects.filter(entry__submission_id=submission_id, status=UnitStatus.PENDING)
    pairs = renders.values_list("entry_id", "backend").annotate(queued=Min("queued_at")).filter(queued__lt=cutoff)
    for entry_id, backend, _ in pairs:
        if not job_alive(RENDER_JOB, entry_id, backend):
            renders.filter(entry_id=entry_id, backend=backend).update(queued_at=timezone.now(), started_at=None)
            enqueue(RENDER_JOB, entry_id, backend, backend=backend)
            resent.renders.append((entry_id, backend))
    judgements = Judgement.objects.filter(submission_id=submission_id, status=UnitStatus.PENDING)
    for pk in judgements.filter(queued_at__lt=cutoff, by_batch=False).values_list("pk", flat=True):  # batches: batch_check
        if not job_alive(JUDGE_JOB, pk):
            judgements.filter(pk=pk).update(queued_at=timezone.now(), started_at=None)
            enqueue(JUDGE_JOB, pk)
            resent.judgements.append(pk)
    if not renders.exists() and not judgements.exists() and not job_alive(FINISH_JOB, submission_id):
        submission_advance(submission_id)  # every unit settled but the submission did not move on: its job was lost
        resent.advanced.append(submission_id)


def _resend_calls(submission: Submission, cutoff, resent: Resent) -> None:
    """Prompting units: a pending call with no job, a call claimed by a job that died (held past the lease), and a
    feedback step whose render or score job is gone are sent again."""
    calls = PromptCall.objects.filter(submission=submission)
    lease = timezone.now() - timedelta(seconds=settings.ATELIER_PROMPTER_TIMEOUT * (settings.ATELIER_PROMPTER_MAX_RETRIES + 2))
    calls.filter(status=CallStatus.RUNNING, started_at__lt=lease).update(status=CallStatus.PENDING, queued_at=cutoff, started_at=None)
    for pk in calls.filter(status=CallStatus.PENDING, queued_at__lte=cutoff).values_list("pk", flat=True):
        if not job_alive(PROMPT_JOB, pk):
            calls.filter(pk=pk).update(queued_at=timezone.now())
            enqueue(PROMPT_JOB, pk)
            resent.calls.append(pk)
    for call in calls.filter(feedback_status=UnitStatus.PENDING, finished_at__lt=cutoff):
        job, backend = (FEEDBACK_JUDGE_JOB, None) if call.feedback_image else (FEEDBACK_RENDER_JOB, submission.feedback_backend)
        if not job_alive(job, call.pk):
            calls.filter(pk=call.pk).update(finished_at=timezone.now())
            enqueue(job, call.pk, backend=backend)
            resent.calls.append(call.pk)
    if not prompting_open(submission.pk):
        submission_advance(submission.pk)
        resent.advanced.append(submission.pk)


def reconcile_job() -> str:
    """The periodic job (`manage.py scheduler` registers it): its summary is the job's result in rq."""
    return str(reconcile())
