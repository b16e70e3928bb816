"""RQ entry points: thin, take ids, call one unit of work (enqueued by name: see workqueue).

A job that raises first writes why onto the rows it was working on (and the submission
moves on or fails), then re-raises so RQ's failed-job registry keeps the traceback too.
"""

from __future__ import annotations

from evaluator.failures import class_name, remote_text
from evaluation.models import CallStatus, Judgement, PromptCall, PromptEntry, Render, Submission, UnitStatus

from .boards import board_stats_rebuild
from .judging import judge_unit, redactor
from .prompting import _end_early, feedback_fail, feedback_render, feedback_score, prompt_calls, prompting_start
from .rendering import render_entry
from .units import submission_advance, submission_fail, submission_finish, submission_start


def why(exc: Exception) -> str:
    """Our words only (teams see it); the message and traceback stay in RQ's failed-job registry and the log."""
    return f"job error ({class_name(exc)})"


def start_submission_job(submission_id: int) -> None:
    try:
        if Submission.objects.filter(pk=submission_id, origin="endpoint").exists():
            prompting_start(submission_id)
        else:
            submission_start(submission_id)
    except Exception as exc:
        submission_fail(submission_id, f"could not start: {why(exc)}")
        raise


def render_job(entry_id: int, backend: str) -> None:
    try:
        render_entry(entry_id, backend)
    except Exception as exc:
        Render.objects.filter(entry_id=entry_id, backend=backend, status=UnitStatus.PENDING).update(status=UnitStatus.FAILED, error=why(exc))
        submission_advance(PromptEntry.objects.values_list("submission_id", flat=True).get(pk=entry_id))
        raise


def judge_job(judgement_id: int) -> None:
    try:
        judge_unit(judgement_id)
    except Exception as exc:
        task = Judgement.objects.select_related("entry__task").get(pk=judgement_id).entry.task
        hide = redactor(task)
        Judgement.objects.filter(pk=judgement_id, status=UnitStatus.PENDING).update(status=UnitStatus.FAILED, reason=why(exc), remote_text=hide.text(remote_text(exc)))
        submission_advance(Judgement.objects.values_list("submission_id", flat=True).get(pk=judgement_id))
        raise


def finish_submission_job(submission_id: int) -> None:
    try:
        submission_finish(submission_id)
    except Exception as exc:
        submission_fail(submission_id, f"scoring failed: {why(exc)}")
        raise


def prompt_job(call_id: int) -> None:
    try:
        prompt_calls(call_id)
    except Exception as exc:
        # Calls this job claimed but did not finish stay `running` until reconcile's lease runs out; this one ends here.
        call = PromptCall.objects.get(pk=call_id)
        if PromptCall.objects.filter(pk=call_id, status__in=[CallStatus.PENDING, CallStatus.RUNNING]).update(status=CallStatus.FAILED, error=why(exc)):
            _end_early(call, f"round {call.round + 1} failed: {why(exc)}")
        submission_advance(call.submission_id)
        raise


def feedback_render_job(call_id: int) -> None:
    try:
        feedback_render(call_id)
    except Exception as exc:
        feedback_fail(call_id, f"feedback image: {why(exc)}")
        raise


def feedback_judge_job(call_id: int) -> None:
    try:
        feedback_score(call_id)
    except Exception as exc:
        feedback_fail(call_id, f"feedback score: {why(exc)}")
        raise


def board_job(pack_id: int, revision: int) -> None:
    """Rebuild a board's statistics (rank ranges, tests, win rates, length control); RQ keeps the traceback of a failure."""
    board_stats_rebuild(pack_id=pack_id, revision=revision)
