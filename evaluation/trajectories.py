"""Reads about an endpoint run's prompting stage: progress with a rate and ETA, trajectories, scores by round,
steerability, and the call log. Used by the submission page, the API and the downloads."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from statistics import fmean

from django.db.models import Count, Max, Min, Sum
from django.utils import timezone

from evaluation.difficulty import submission_texts
from evaluation.models import CallStatus, PromptCall, Submission, UnitStatus
from evaluation.units import prompts_missing
from evaluator.metrics.order import task_order
from evaluator.metrics.steerability import steerability
from tasks import difficulty

SETTLED = (CallStatus.OK, CallStatus.FAILED, CallStatus.REFUSED)


def prompting_progress(submission: Submission) -> dict | None:
    """Calls by status, with calls per second over the calls settled so far and the ETA of the open ones (None for an upload)."""
    calls = PromptCall.objects.filter(submission=submission)
    by_status = dict(calls.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    if not by_status:
        return None
    counts = {s: by_status.get(s, 0) for s in CallStatus.values}
    counts["total"] = sum(by_status.values())
    counts["called"] = sum(counts[s] for s in SETTLED)
    counts["open"] = counts[CallStatus.WAITING] + counts[CallStatus.PENDING] + counts[CallStatus.RUNNING]
    span = calls.filter(status__in=SETTLED).aggregate(first=Min("started_at"), last=Max("finished_at"), requests=Sum("requests"))
    seconds = (span["last"] - span["first"]).total_seconds() if span["first"] and span["last"] else 0.0
    counts["per_second"] = counts["called"] / seconds if seconds > 0 else None
    counts["eta_seconds"] = counts["open"] / counts["per_second"] if counts["per_second"] and counts["open"] else None
    counts["requests"] = span["requests"] or 0
    tokens = calls.aggregate(p=Sum("prompt_tokens"), c=Sum("completion_tokens"))
    counts["prompt_tokens"], counts["completion_tokens"] = tokens["p"] or 0, tokens["c"] or 0
    feedback = dict(
        calls.exclude(feedback_status="").values_list("feedback_status").annotate(n=Count("pk")).values_list("feedback_status", "n")
    )
    counts["feedback"] = {s: feedback.get(s, 0) for s in (UnitStatus.PENDING, UnitStatus.OK, UnitStatus.FAILED)}
    # Task samples with no usable prompt (every call failed or was refused): not scored, never a zero. Known once no
    # call is open; before that a sample's prompt may still come.
    counts["missing"], counts["planned"] = prompts_missing(submission) if not counts["open"] else (None, None)
    counts["as_of"] = timezone.now()
    return counts


def trajectories(submission: Submission, limit: int | None = None) -> list[dict]:
    """Per task and sample: its rounds, the round ranked (the last that answered) and the best-scored round."""
    grouped: dict[tuple[int, int], list[PromptCall]] = defaultdict(list)
    for call in (
        PromptCall.objects.filter(submission=submission)
        .select_related("task")
        .order_by("task__category", "task__task_id", "sample_index", "round")
    ):
        grouped[(call.task_id, call.sample_index)].append(call)
    rows = []
    for rounds in list(grouped.values())[:limit]:
        answered = [c for c in rounds if c.status == CallStatus.OK]
        scored = [c for c in answered if c.feedback_score is not None]
        rows.append(
            {
                "task": rounds[0].task,
                "sample": rounds[0].sample_index,
                "rounds": rounds,
                "ranked": answered[-1].round if answered else None,
                "best": max(scored, key=lambda c: c.feedback_score).round if scored else None,
            }
        )
    return rows


def round_scores(submission: Submission) -> list[dict]:
    """Mean feedback score (0-100) by category and round (1-based), the data of the 'score by round' chart: per task
    the mean over its samples, then the mean over tasks with its 95 % interval over tasks (evaluator.metrics.intervals,
    order.task_order). n counts the scored calls, tasks the tasks they cover."""
    from evaluator.metrics.intervals import mean_interval  # numpy: imported when the chart is asked for

    calls = PromptCall.objects.filter(submission=submission, feedback_score__isnull=False)
    by_task: dict[tuple[str, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for category, task, at, score in calls.values_list("task__category", "task__task_id", "round", "feedback_score"):
        by_task[(category, at)][task].append(score)
    out = []
    for (category, at), tasks in sorted(by_task.items()):
        means = [fmean(tasks[t]) for t in task_order(tasks)]
        low, high = mean_interval(means, 0.0, 100.0)  # type: ignore[misc]
        n = sum(len(v) for v in tasks.values())
        out.append(
            {"category": category, "round": at + 1, "n": n, "tasks": len(means), "mean": sum(means) / len(means), "low": low, "high": high}
        )
    return out


def submission_steerability(submission: Submission, seed: int = 0) -> list[dict]:
    """ArtWhisperer's steerability per category from this run's trajectories of feedback scores on its feedback backend:
    one chain per task, whose samples are its trajectories, averaged over the category's tasks. Each row is the
    category, the backend and evaluator.metrics.steerability.Steerability as a dict: `status` says whether the figure
    is shown or why not (never reached, too few trajectories, mostly the smoothing prior)."""
    by_category: dict[str, dict[str, list[list[float]]]] = defaultdict(lambda: defaultdict(list))
    for row in trajectories(submission):
        scores = [c.feedback_score for c in row["rounds"] if c.feedback_score is not None]
        if scores:
            by_category[row["task"].category][row["task"].task_id].append(scores)
    return [
        {"category": category, "backend": submission.feedback_backend, **asdict(steerability(by_task, seed=seed))}
        for category, by_task in sorted(by_category.items())
    ]


def call_log(submission: Submission):
    """The run's calls for the team's log page and download (requests already have their images elided)."""
    return (
        PromptCall.objects.filter(submission=submission)
        .select_related("task")
        .order_by("task__category", "task__task_id", "sample_index", "round")
    )


CALL_LOG_FIELDS = (
    "task",
    "category",
    "sample",
    "round",
    "status",
    "temperature",
    "seed",
    "http_status",
    "requests",
    "latency",
    "prompt_tokens",
    "completion_tokens",
    "error",
    "text",
    "predicted_score",
    "reply",
    "request",
    "feedback_score",
    "started_at",
    "finished_at",
)


def call_log_rows(submission: Submission):
    """One dict per call, in CALL_LOG_FIELDS order: what the log download holds (no key, no image bytes), with the
    installed difficulty predictor's score of the call's prompt once it has made one."""
    predicted = difficulty.scores(submission_texts(submission.pk))
    for call in call_log(submission).iterator():
        yield {
            "task": call.task.task_id,
            "category": call.task.category,
            "sample": call.sample_index,
            "round": call.round + 1,
            "status": call.status,
            "temperature": call.temperature,
            "seed": call.seed,
            "http_status": call.http_status,
            "requests": call.requests,
            "latency": call.latency,
            "prompt_tokens": call.prompt_tokens,
            "completion_tokens": call.completion_tokens,
            "error": call.error,
            "text": call.text,
            "predicted_score": predicted.get(call.text),
            "reply": call.reply,
            "request": call.request,
            "feedback_score": call.feedback_score,
            "started_at": call.started_at.isoformat() if call.started_at else None,
            "finished_at": call.finished_at.isoformat() if call.finished_at else None,
        }
