"""RQ entry points of a participant's IM attempt (studies.attempts), registered with the work queue by StudiesConfig."""

from __future__ import annotations

from evaluation.jobs import why

from .attempts import attempt_fail, attempt_judge, attempt_render


def attempt_render_job(attempt_id: int) -> None:
    try:
        attempt_render(attempt_id)
    except Exception as exc:
        attempt_fail(attempt_id, f"image: {why(exc)}")
        raise


def attempt_judge_job(attempt_id: int) -> None:
    try:
        attempt_judge(attempt_id)
    except Exception as exc:
        attempt_fail(attempt_id, f"score: {why(exc)}")
        raise
