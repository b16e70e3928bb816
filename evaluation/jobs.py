"""RQ entry points: thin, take ids, call one unit of work (enqueued by name: see workqueue).

A job that raises first writes why onto the rows it was working on (and the submission
moves on or fails), then re-raises so RQ's failed-job registry keeps the traceback too.
"""

from __future__ import annotations

from submissions.models import Judgement, PromptEntry, Render, UnitStatus

from .judging import judge_unit, redactor
from .rendering import render_entry
from .units import submission_advance, submission_fail, submission_finish, submission_start


def _why(exc: Exception) -> str:
    return f"job error: {type(exc).__name__}: {exc}"


def start_submission_job(submission_id: int) -> None:
    try:
        submission_start(submission_id)
    except Exception as exc:
        submission_fail(submission_id, f"could not start: {_why(exc)}")
        raise


def render_job(entry_id: int, backend: str) -> None:
    try:
        render_entry(entry_id, backend)
    except Exception as exc:
        Render.objects.filter(entry_id=entry_id, backend=backend, status=UnitStatus.PENDING).update(status=UnitStatus.FAILED, error=_why(exc))
        submission_advance(PromptEntry.objects.values_list("submission_id", flat=True).get(pk=entry_id))
        raise


def judge_job(judgement_id: int) -> None:
    try:
        judge_unit(judgement_id)
    except Exception as exc:
        task = Judgement.objects.select_related("entry__task").get(pk=judgement_id).entry.task
        Judgement.objects.filter(pk=judgement_id, status=UnitStatus.PENDING).update(status=UnitStatus.FAILED, reason=redactor(task).text(_why(exc)))
        submission_advance(Judgement.objects.values_list("submission_id", flat=True).get(pk=judgement_id))
        raise


def finish_submission_job(submission_id: int) -> None:
    try:
        submission_finish(submission_id)
    except Exception as exc:
        submission_fail(submission_id, f"scoring failed: {_why(exc)}")
        raise
