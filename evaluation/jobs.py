"""RQ entry points: thin, take ids, call one unit of work (enqueued by name: see workqueue.JOBS).

Every job is one unit's work wrapped by `unit_job`: when the work raises, the wrapper first writes why onto the rows
it was working on, in our words (the unit moves on or the submission fails), then re-raises so RQ's failed-job
registry keeps the traceback too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from evaluator.failures import class_name, remote_text

from .batching import batch_collect, batch_send
from .boards import board_stats_rebuild
from .difficulty import predict_submission
from .erasure import entry_media_erase
from .judging import judge_fail, judge_unit
from .models import Origin, Submission
from .prompting import feedback_fail, feedback_render, feedback_score, prompt_call_fail, prompt_calls, prompting_start
from .rendering import render_entry, render_fail
from .units import submission_fail, submission_finish, submission_start


def why(exc: Exception) -> str:
    """Our words only (teams see it); the message and traceback stay in RQ's failed-job registry and the log."""
    return f"job error ({class_name(exc)})"


def unit_job(work: Callable[..., None], record: Callable[..., None]) -> Callable[..., None]:
    """A job running `work(*args)`; if it raises, `record(*args, exc)` writes why on the unit's rows, then it re-raises."""

    @functools.wraps(work)
    def job(*args: Any) -> None:
        try:
            work(*args)
        except Exception as exc:
            record(*args, exc)
            raise

    return job


def start_submission(submission_id: int) -> None:
    endpoint = Submission.objects.filter(pk=submission_id, origin=Origin.ENDPOINT).exists()
    (prompting_start if endpoint else submission_start)(submission_id)


def board_job(pack_id: int, revision: int) -> None:
    """Rebuild a board's statistics (rank ranges, tests, win rates, length control); RQ keeps the traceback of a failure."""
    board_stats_rebuild(pack_id=pack_id, revision=revision)


def erase_job(submission_id: int) -> None:
    """Delete a withdrawn entry's media from storage (evaluation/erasure.py); idempotent, RQ keeps a failure's traceback."""
    entry_media_erase(submission_id)


def judge_batch_send_job(submission_id: int) -> None:
    """Send a submission's judge requests as batch files (evaluation/batching.py); a unit that raises fails alone, and a
    failure of the job leaves the rest waiting for the scheduler to send again (RQ keeps the traceback)."""
    batch_send(submission_id)


def judge_batch_collect_job(batch_id: int) -> None:
    """Store an ended batch's replies and send its missing lines again (evaluation/batching.py)."""
    batch_collect(batch_id)


def difficulty_job(submission_id: int) -> None:
    """Predict each prompt's difficulty (evaluation/difficulty.py); a failure is kept by RQ and changes no unit."""
    predict_submission(submission_id)


start_submission_job = unit_job(start_submission, lambda pk, exc: submission_fail(pk, f"could not start: {why(exc)}"))
render_job = unit_job(render_entry, lambda entry_id, backend, exc: render_fail(entry_id, backend, why(exc)))
judge_job = unit_job(judge_unit, lambda pk, exc: judge_fail(pk, why(exc), remote_text(exc)))
finish_submission_job = unit_job(submission_finish, lambda pk, exc: submission_fail(pk, f"scoring failed: {why(exc)}"))
prompt_job = unit_job(prompt_calls, lambda pk, exc: prompt_call_fail(pk, why(exc)))
feedback_render_job = unit_job(feedback_render, lambda pk, exc: feedback_fail(pk, f"feedback image: {why(exc)}"))
feedback_judge_job = unit_job(feedback_score, lambda pk, exc: feedback_fail(pk, f"feedback score: {why(exc)}"))
