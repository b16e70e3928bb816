"""Reads about a submission's units: progress, cost, missing rates, figures, per-entry detail.

Used by the leaderboard pages, the downloads and the submissions API alike, so none of them
imports another app's selectors.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from datetime import timedelta

import redis
from django.conf import settings
from django.db.models import Count, F, Q, QuerySet, Sum
from django.utils import timezone

from evaluation.models import ACTIVE, Figure, JudgeBatch, Judgement, Origin, PromptEntry, Render, Status, Submission, UnitStatus
from evaluator.categories import CATEGORIES
from evaluator.judge.pricing import Usage, cost_record
from evaluator.metrics.coverage import coverage_words, standing
from evaluator.metrics.scopes import Scope

from . import runtime
from .judges import JudgeKey, submission_judge
from .workqueue import FEEDBACK_JUDGE_JOB, FEEDBACK_RENDER_JOB, FINISH_JOB, JUDGE_JOB, PROMPT_JOB, RENDER_JOB, listening, queue_for

log = logging.getLogger(__name__)


DETAIL_SCOPES = (Scope.TASK, Scope.CATEGORY_BACKEND, Scope.PART)  # stored for the board and the entry's views, not its scores table


def submission_figures(submission: Submission, judge: JudgeKey | None = None, every: bool = False) -> dict[str, list[Figure]]:
    """The stored figures of one judge, each with its `standing` (full, partial or withheld) and `rests_on` (words)."""
    judge = judge or submission_judge(submission)
    # Another judge's figures were built when that judge's run finished; the current judge's run may not have.
    done = submission.status == Status.DONE or judge.key != submission_judge(submission).key
    grouped: dict[str, list[Figure]] = defaultdict(list)
    rows = submission.figures.filter(judge_id=judge.judge_id, judge_version=judge.version)
    for figure in rows if every else rows.exclude(scope__in=DETAIL_SCOPES):
        figure.standing = standing(figure.coverage, done=done, max_missing=settings.ATELIER_MAX_MISSING_RATE)
        figure.rests_on = coverage_words(figure.coverage)
        grouped[figure.scope].append(figure)
    return dict(grouped)  # a plain dict: templates would read defaultdict's .items as a missing key


def _counts(units: QuerySet) -> dict[str, int]:
    by_status = dict(units.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    result = {s: by_status.get(s, 0) for s in UnitStatus.values}
    result["total"] = sum(result.values())
    result["done"] = result["total"] - result[UnitStatus.PENDING]
    pending = units.filter(status=UnitStatus.PENDING)
    result["running"] = pending.filter(started_at__isnull=False).count()  # a worker has begun them
    result["waiting"] = result[UnitStatus.PENDING] - result["running"]  # queued: waiting for a worker
    return result


def batch_progress(submission_id: int) -> dict[str, int] | None:
    """What the submission page shows while judging by batch: replies in (completed or failed) of lines sent."""
    sums = JudgeBatch.objects.filter(submission_id=submission_id).aggregate(
        batches=Count("pk"), total=Sum("total"), done=Sum(F("completed") + F("failed")), open=Count("pk", filter=Q(collected=False))
    )
    return None if not sums["batches"] else {name: sums[name] or 0 for name in ("done", "total", "open")}


def submission_progress(submission: Submission) -> dict[str, dict[str, int]]:
    return {
        "renders": _counts(Render.objects.filter(entry__submission=submission)),
        "judgements": _counts(Judgement.objects.filter(submission=submission)),
    }


ETA_MIN_DONE = 5  # units settled before a rate is trusted


def submission_eta(submission: Submission, progress: dict[str, dict[str, int]]) -> dict | None:
    """Time left for an active submission, from this run's own pace: units (renders and judgements) settled since
    it started, per second of wall time, applied to the units still pending. None until enough units settled."""
    if submission.status not in ACTIVE or submission.started is None:
        return None
    done = sum(p["done"] for p in progress.values())
    remaining = sum(p[UnitStatus.PENDING] for p in progress.values())
    elapsed = (timezone.now() - submission.started).total_seconds()
    if done < ETA_MIN_DONE or elapsed <= 0:
        return {"done": done, "remaining": remaining, "per_second": None, "seconds_left": None, "finishes_at": None}
    rate = done / elapsed
    left = remaining / rate
    return {
        "done": done,
        "remaining": remaining,
        "per_second": round(rate, 3),
        "seconds_left": round(left),
        "finishes_at": (timezone.now() + timedelta(seconds=left)).isoformat(),
    }


def submission_cost(submission: Submission) -> dict[str, int]:
    """Judge calls and tokens spent on a submission, over every judge version that scored it."""
    totals = Judgement.objects.filter(submission=submission).aggregate(
        calls=Sum("calls"), prompt_tokens=Sum("prompt_tokens"), completion_tokens=Sum("completion_tokens")
    )
    totals = {k: v or 0 for k, v in totals.items()}
    totals["cached"] = Judgement.objects.filter(submission=submission, cached=True).count()
    return totals


def submission_judge_cost(submission: Submission) -> dict:
    """Judge requests and the tokens the provider reported (the cached share among the prompt tokens), and what they
    cost at the deployer's prices with the prices' source (evaluator.judge.pricing.cost_record; without prices, tokens
    only and a note that says so), over every judge version that scored the submission."""
    sums = Judgement.objects.filter(submission=submission).aggregate(
        requests=Sum("calls"),
        prompt_tokens=Sum("prompt_tokens"),
        cached_prompt_tokens=Sum("cached_prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
    )
    return cost_record(Usage(**{name: value or 0 for name, value in sums.items()}), runtime.judge_prices())


def skill_missing(submission: Submission, judge: JudgeKey) -> list[dict]:
    """Per skill: how many judgements ended ok, failed, blocked or skipped, and the missing rate
    (failed / (all − skipped)): AtelierEval reports it so that a score is read with what it lacks."""
    rows = Judgement.objects.filter(submission=submission, judge_id=judge.judge_id, judge_version=judge.version)
    counts: dict[str, Counter] = defaultdict(Counter)
    for skill, status, n in rows.values_list("skill", "status").annotate(n=Count("pk")):
        counts[skill][status] += n
    out = []
    for skill, c in sorted(counts.items()):
        judged = sum(c.values()) - c[UnitStatus.SKIPPED]
        out.append({"skill": skill, **{s: c[s] for s in UnitStatus.values}, "missing": c[UnitStatus.FAILED] / judged if judged else None})
    return out


def entry_breakdown(entries: list[PromptEntry], judge: JudgeKey) -> dict[int, dict]:
    """For a page of entries: their renders and one judge's judgements, in two queries."""
    ids = [e.pk for e in entries]
    renders = defaultdict(list)
    for render in Render.objects.filter(entry_id__in=ids):
        renders[render.entry_id].append(render)
    judgements = defaultdict(list)
    same_judge = Q(judge_id=judge.judge_id, judge_version=judge.version)
    for judgement in Judgement.objects.filter(same_judge, entry_id__in=ids):
        judgements[judgement.entry_id].append(judgement)
    return {i: {"renders": renders[i], "judgements": judgements[i]} for i in ids}


def queues_waiting(submission: Submission) -> list[dict]:
    """For an active submission: the queues its waiting units need and how many live workers listen to each
    (empty in in-process mode, or when Redis cannot be asked: the page then says so)."""
    backends = set(Render.objects.filter(entry__submission=submission, status=UnitStatus.PENDING).values_list("backend", flat=True))
    needed = [queue_for(FINISH_JOB), *sorted(queue_for(RENDER_JOB, b) for b in backends)]
    if Judgement.objects.filter(submission=submission, status=UnitStatus.PENDING).exists():
        needed.append(queue_for(JUDGE_JOB))
    if submission.status == Status.PROMPTING:
        feedback = (
            [queue_for(FEEDBACK_JUDGE_JOB), queue_for(FEEDBACK_RENDER_JOB, submission.feedback_backend)]
            if submission.feedback_backend
            else []
        )
        needed = list(dict.fromkeys([*needed, queue_for(PROMPT_JOB), *feedback]))
    try:
        workers = listening(needed)
    except redis.RedisError as exc:  # shown as its type only: the message may name hosts
        log.warning("could not count workers for submission %s: %s", submission.pk, exc)
        return [{"queue": q, "workers": None, "error": type(exc).__name__} for q in needed]
    return [] if workers is None else [{"queue": q, "workers": n, "error": ""} for q, n in workers.items()]


PROMPTING_STAGES = (Status.QUEUED, Status.PROMPTING)  # an endpoint run's prompts are still coming (evaluation/prompting.py)


def pack_coverage(submission: Submission) -> dict | None:
    """Which of its pack's tasks the submission has prompts for; None when it covers every one. Only entries with a
    score on every ranked task are ranked (evaluator.metrics.board), so a team hears it at once, not at publication.
    None too for an endpoint run until its prompting is over and has given prompts: before that its entries are not
    all there yet (its Prompting section says how far it is), and "0 of 6 tasks" would only alarm."""
    if submission.origin == Origin.ENDPOINT and (submission.status in PROMPTING_STAGES or not submission.entries.exists()):
        return None
    tasks = dict(submission.pack.tasks.values_list("task_id", "category"))
    covered = set(submission.entries.values_list("task__task_id", flat=True).distinct())
    missing = Counter(category for task_id, category in tasks.items() if task_id not in covered)
    if not missing:
        return None
    parts = ", ".join(f"{missing[c]} {c}" for c in CATEGORIES if missing[c])
    words = f"These prompts cover {len(covered & set(tasks))} of the pack's {len(tasks)} tasks (missing: {parts}): they are scored, but listed unranked on the board, where only entries with every ranked task are ranked."
    return {
        "covers": len(covered & set(tasks)),
        "of": len(tasks),
        "missing": {c: missing[c] for c in CATEGORIES if missing[c]},
        "warning": words,
    }
