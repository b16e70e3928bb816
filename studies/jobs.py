"""RQ entry points of a participant's IM attempt (studies.attempts), registered with the work queue by StudiesConfig."""

from __future__ import annotations

from evaluation.jobs import unit_job, why

from .attempts import attempt_fail, attempt_judge, attempt_render

attempt_render_job = unit_job(attempt_render, lambda pk, exc: attempt_fail(pk, f"image: {why(exc)}"))
attempt_judge_job = unit_job(attempt_judge, lambda pk, exc: attempt_fail(pk, f"score: {why(exc)}"))
