"""The lifecycle of a submission's units: plan, advance, finish, fail, rescore.

Each function takes ids, loads rows, does one step and writes its result keyed by the
unit's natural key, so running it twice changes nothing. The database is the source of
truth: the submission's status is derived from its units, never from queue state. The
units themselves run in rendering.py and judging.py.
"""

from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluation.models import (
    ACTIVE,
    OPEN_CALLS,
    RESUMABLE,
    CallStatus,
    Judgement,
    JudgeRoute,
    PromptCall,
    PromptEntry,
    Render,
    Status,
    Submission,
    UnitStatus,
)
from evaluator.backends import BackendConfig
from evaluator.judge.routes import route_for_task
from evaluator.judge.skills import get_skill
from evaluator.judge.types import Side, TaskInput
from tasks import difficulty
from tasks.models import PinnedTask, Task
from tasks.selectors import RevisionGone, task_at, tasks_at

from . import runtime
from .figures import figures_rebuild
from .judges import JudgeKey
from .selectors import skill_missing
from .signals import submission_failed, submission_finished
from .workqueue import BOARD_JOB, DIFFICULTY_JOB, FINISH_JOB, JUDGE_JOB, RENDER_JOB, enqueue

log = logging.getLogger(__name__)


def task_input(task: Task) -> TaskInput:
    """The judge's view of a task."""
    return TaskInput(
        task_id=task.task_id,
        category=task.category,
        title=task.title,
        brief=task.brief,
        constraints=dict(task.constraints or {}),
        prompt_checklist=tuple(task.prompt_checklist),
        image_checklist=tuple(task.image_checklist),
    )


def entry_task(row: PromptEntry | PromptCall) -> PinnedTask:
    """The task of an entry (or a prompt call) as its submission's pack revision had it (tasks.selectors.task_at): what
    is shown, rendered and judged, whatever the pack became since. Set on the row, so it is looked up once; RevisionGone
    when that revision's content is not kept."""
    if not isinstance(row.task, PinnedTask):
        row.task = task_at(row.task, row.submission.pack_revision)
    return row.task


def submission_start(submission_id: int) -> None:
    """Claim a queued submission, create every render and prompt-judgement row, and enqueue them."""
    if not Submission.objects.filter(pk=submission_id, status=Status.QUEUED).update(status=Status.RENDERING, started=timezone.now()):
        return  # already started by another job
    configs, judge = runtime.backend_configs(), runtime.judge()
    if not configs:
        submission_fail(submission_id, "no rendering backend is enabled in the backends file")
        return
    try:
        with transaction.atomic():
            Submission.objects.filter(pk=submission_id).update(**runtime.snapshot_fields(judge, configs))
            _plan_entries(Submission.objects.get(pk=submission_id))
    except RevisionGone as exc:  # nothing was planned (rolled back) and nothing is judged against another revision
        revision_gone(submission_id, exc)


def revision_gone(submission_id: int, exc: RevisionGone) -> None:
    log.warning("submission %s cannot be planned: %s", submission_id, exc)
    submission_fail(submission_id, str(exc))


def _plan_entries(submission: Submission) -> None:
    """Render and prompt-judgement rows for every entry, on the backends the submission recorded when it started, with
    each entry's task as the submission's revision had it (RevisionGone, before anything is planned, when not kept)."""
    configs = runtime.backend_configs()
    configs = {b["name"]: configs[b["name"]] for b in submission.backends if b["name"] in configs}
    entries = _pinned_entries(submission)
    if difficulty.installed():  # sent first: the predictions need no image, and the in-process worker runs in order
        enqueue(DIFFICULTY_JOB, submission.pk)
    for entry in entries:
        _plan_entry(entry, configs, submission.judge_id, submission.judge_version)


def _pinned_entries(submission: Submission) -> list[PromptEntry]:
    """The submission's entries, each with its task as the submission's revision had it (one query for all)."""
    entries = list(submission.entries.select_related("task"))
    for entry, task in zip(entries, tasks_at([e.task for e in entries], submission.pack_revision)):
        entry.task = task
    return entries


def _plan_entry(entry: PromptEntry, configs: dict[str, BackendConfig], judge_id: str, judge_version: str) -> None:
    prompt_sha = hashlib.sha256(entry.text.encode()).hexdigest()
    for config in configs.values():
        for k, seed in enumerate(config.seeds_for(entry.task.task_id, entry.sample_index)):
            Render.objects.get_or_create(
                entry=entry,
                backend=config.name,
                image_index=k,
                defaults={"seed": seed, "config_hash": config.version_hash(), "prompt_sha": prompt_sha},
            )
        enqueue(RENDER_JOB, entry.pk, config.name, backend=config.name)
    queue_judgements(plan_judgements(entry, judge_id, judge_version, [None]))


def queue_judgements(judgements: list[Judgement]) -> int:
    """Send each planned judgement's job, or, for a submission on the batch route (Submission.judge_route), mark it to
    wait for its submission's next batch file (evaluation/batching.py; one still waiting in an open batch stays there).
    With ATELIER_JUDGE_BATCH=off no batch is sent: every judgement gets its job. Returns how many."""
    batched: set[int] = set()
    if settings.ATELIER_JUDGE_BATCH != "off":
        submissions = {j.submission_id for j in judgements}
        batched = set(Submission.objects.filter(pk__in=submissions, judge_route=JudgeRoute.BATCH).values_list("pk", flat=True))
    for judgement in judgements:
        if judgement.submission_id not in batched:
            enqueue(JUDGE_JOB, judgement.pk)
    rows = Judgement.objects.filter(pk__in=[j.pk for j in judgements if j.submission_id in batched], status=UnitStatus.PENDING)
    rows.filter(Q(batch__isnull=True) | Q(batch__collected=True)).update(by_batch=True, batch=None)
    return len(judgements)


def plan_judgements(entry: PromptEntry, judge_id: str, judge_version: str, renders: list[Render | None]) -> list[Judgement]:
    """Pending judgement rows for every routed skill of one entry: prompt-side for None, image-side per render.

    Rows that exist already are kept as they are (their natural key is unique), so planning twice changes nothing;
    one insert and one read per call, not a query per row."""
    skills = route_for_task(task_input(entry_task(entry)), settings.ATELIER_JUDGE_ROUTE)
    planned = [
        Judgement(
            submission_id=entry.submission_id,
            entry=entry,
            render=render,
            skill=skill,
            judge_id=judge_id,
            judge_version=judge_version,
            scale=spec.scale.name if spec.scale else "",
        )
        for render in renders
        for skill, spec in ((s, get_skill(s)) for s in skills)
        if spec.side == (Side.PROMPT if render is None else Side.IMAGE)
    ]
    if not planned:
        return []
    Judgement.objects.bulk_create(planned, ignore_conflicts=True)
    rows = Judgement.objects.filter(entry=entry, judge_id=judge_id, judge_version=judge_version, skill__in={j.skill for j in planned})
    sides = Q(render_id__in=[r.pk for r in renders if r is not None])
    if None in renders:
        sides |= Q(render__isnull=True)
    found = {(j.render_id, j.skill): j for j in rows.filter(sides)}
    return [j for j in (found[(p.render_id, p.skill)] for p in planned) if j.status == UnitStatus.PENDING]


def submission_advance(submission_id: int) -> None:
    """Move the submission on when its units allow it. Safe to call after every unit, from any worker.

    It runs after every unit, so it reads the status once and asks only indexed questions (is any unit of this
    submission still pending?); the status changes themselves are conditional updates, so a stale read is harmless."""
    status = Submission.objects.filter(pk=submission_id).values_list("status", flat=True).first()
    if status is None:
        return
    if status == Status.PROMPTING:
        _prompting_advance(submission_id)
        return
    renders = Render.objects.filter(entry__submission_id=submission_id)
    if renders.filter(status=UnitStatus.PENDING).exists():
        return
    if status == Status.RENDERING:
        if not renders.filter(status=UnitStatus.OK).exists():
            first = renders.exclude(error="").values_list("error", flat=True).first() or "no renders were planned"
            submission_fail(submission_id, f"no image could be rendered: {first}")
            return
        Submission.objects.filter(pk=submission_id, status=Status.RENDERING).update(status=Status.JUDGING)
    if not Judgement.objects.filter(submission_id=submission_id, status=UnitStatus.PENDING).exists():
        enqueue(FINISH_JOB, submission_id)


def prompting_open(submission_id: int) -> bool:
    """Whether any call of an endpoint run is still to be made or waits on its feedback."""
    calls = PromptCall.objects.filter(submission_id=submission_id)
    return calls.filter(status__in=OPEN_CALLS).exists() or calls.filter(feedback_status=UnitStatus.PENDING).exists()


def _prompting_advance(submission_id: int) -> None:
    """Every trajectory has ended: plan the entries like an upload's (or fail when no call answered)."""
    if prompting_open(submission_id):
        return
    try:
        with transaction.atomic():
            if not Submission.objects.filter(pk=submission_id, status=Status.PROMPTING).update(status=Status.RENDERING):
                return  # another worker moved it on
            submission = Submission.objects.get(pk=submission_id)
            if not submission.entries.exists():
                first = PromptCall.objects.filter(submission_id=submission_id).exclude(error="").values_list("error", flat=True).first()
                submission_fail(submission_id, f"the endpoint gave no usable prompt: {first or 'no call was made'}")
                return
            _plan_entries(submission)
    except RevisionGone as exc:
        revision_gone(submission_id, exc)


def submission_cancel(submission_id: int, reason: str) -> bool:
    """Stop a run: calls not made yet are cancelled (a call in flight finishes, and its result is dropped), units
    still pending are skipped with the reason. Finished runs are left as they are."""
    with transaction.atomic():
        if not Submission.objects.filter(pk=submission_id, status__in=ACTIVE).update(
            status=Status.CANCELLED, error=reason, finished=timezone.now()
        ):
            return False
        PromptCall.objects.filter(submission_id=submission_id, status__in=OPEN_CALLS).update(status=CallStatus.CANCELLED, error=reason)
        PromptCall.objects.filter(submission_id=submission_id, feedback_status=UnitStatus.PENDING).update(
            feedback_status=UnitStatus.SKIPPED, feedback_error=reason
        )
        Render.objects.filter(entry__submission_id=submission_id, status=UnitStatus.PENDING).update(status=UnitStatus.SKIPPED, error=reason)
        Judgement.objects.filter(submission_id=submission_id, status=UnitStatus.PENDING).update(status=UnitStatus.SKIPPED, reason=reason)
    return True


def submission_rescore(submission_id: int) -> int:
    """Score a finished (or incomplete) submission again with this process's judge. Judgements that exist
    for that judge version are kept, failed ones are retried, identical ones elsewhere are reused (cache),
    so an unchanged submission makes no model calls; the previous judge's figures stay. Returns how many
    judgements were queued. RevisionGone, with nothing changed, when its revision's tasks are not kept."""
    judge = runtime.judge()
    submission = Submission.objects.filter(pk=submission_id, status__in=RESUMABLE).first()
    entries = _pinned_entries(submission) if submission is not None else []  # RevisionGone before any change
    if not Submission.objects.filter(pk=submission_id, status__in=RESUMABLE).update(
        status=Status.JUDGING, **runtime.snapshot_fields(judge), finished=None, error=""
    ):
        return 0
    queued = 0
    with transaction.atomic():
        same_judge = Judgement.objects.filter(submission_id=submission_id, judge_id=judge.judge_id, judge_version=judge.version)
        same_judge.filter(status=UnitStatus.FAILED).update(
            status=UnitStatus.PENDING, reason="", remote_text="", queued_at=timezone.now(), started_at=None
        )
        for entry in entries:
            renders = [None, *entry.renders.filter(status=UnitStatus.OK)]
            queued += queue_judgements(plan_judgements(entry, judge.judge_id, judge.version, renders))
    if not queued:
        submission_advance(submission_id)
    return queued


def submission_finish(submission_id: int) -> None:
    """Done, or incomplete when too many judgements of a routed skill failed (figures are built either way, to show)."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission_id)
        if submission.status != Status.JUDGING:
            return  # finished already, or failed
        short = missing_over_limit(submission)
        submission.status = Status.INCOMPLETE if short else Status.DONE
        submission.error = f"judging incomplete, not publishable until `rescore` retries the failed judgements: {short}" if short else ""
        submission.finished = timezone.now()
        submission.save(update_fields=["status", "error", "finished"])
        figures_rebuild(submission=submission)
        if submission.published:  # a rescored entry: its board's statistics follow
            enqueue(BOARD_JOB, submission.pack_id, submission.pack_revision)
        submission_finished.send(sender=Submission, submission=submission)  # e.g. studies rebuilds its human rows


def missing_over_limit(submission: Submission) -> str:
    """The skills whose missing rate is above ATELIER_MAX_MISSING_RATE, as one line ('' when none)."""
    judge = JudgeKey(submission.judge_id, submission.judge_version)
    limit = settings.ATELIER_MAX_MISSING_RATE
    over = [row for row in skill_missing(submission, judge) if row["missing"] is not None and row["missing"] > limit]
    parts = [f"{r['skill']} {r['missing']:.0%} missing ({r[UnitStatus.FAILED]} failed)" for r in over]
    missing, planned = prompts_missing(submission)
    if planned and missing / planned > limit:
        parts.insert(0, f"prompting {missing / planned:.0%} missing ({missing} of {planned} task samples got no usable prompt)")
    return "; ".join(parts) + (f" (limit {limit:.0%})" if parts else "")


def prompts_missing(submission: Submission) -> tuple[int, int]:
    """(task samples with no prompt, task samples planned) of an endpoint run; (0, 0) for an upload."""
    planned = PromptCall.objects.filter(submission=submission, round=0).count()
    return (planned - submission.entries.count(), planned) if planned else (0, 0)


def submission_fail(submission_id: int, reason: str) -> None:
    failing = Submission.objects.filter(pk=submission_id).exclude(status__in=RESUMABLE)
    if failing.update(status=Status.FAILED, error=reason, finished=timezone.now()):
        submission_failed.send(sender=Submission, submission_id=submission_id)  # e.g. notifications mails the team


def pending_units(submission_id: int) -> tuple[list[tuple[int, str]], list[int]]:
    """(entry, backend) pairs with pending renders and pending judgement ids: what `reconcile` re-enqueues."""
    pairs = Render.objects.filter(entry__submission_id=submission_id, status=UnitStatus.PENDING).values_list("entry_id", "backend")
    judgements = Judgement.objects.filter(submission_id=submission_id, status=UnitStatus.PENDING).values_list("pk", flat=True)
    return sorted(set(pairs)), list(judgements)
