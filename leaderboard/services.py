"""Rebuilding a submission's leaderboard figures from its stored units, in one transaction."""

from __future__ import annotations

from django.db import transaction

from evaluator.metrics.aggregate import Unit, figures
from submissions.models import Judgement, Render, Submission, UnitStatus

from .models import SubmissionScore


def submission_units(submission: Submission, judge_id: str, judge_version: str) -> list[Unit]:
    judgements = Judgement.objects.filter(submission=submission, judge_id=judge_id, judge_version=judge_version)
    rows = judgements.values_list("entry__task__task_id", "entry__task__category", "entry__sample_index", "skill", "status", "value", "render__backend", "render_id")
    units = [Unit(t, c, s, skill, status, value, backend or "", render or -1) for t, c, s, skill, status, value, backend, render in rows]
    failed = Render.objects.filter(entry__submission=submission, status=UnitStatus.FAILED)
    units += [Unit(t, c, s, "render", "failed", None, b) for t, c, s, b in failed.values_list("entry__task__task_id", "entry__task__category", "entry__sample_index", "backend")]
    return units


@transaction.atomic
def scores_rebuild(*, submission: Submission) -> list[SubmissionScore]:
    """Recompute the figures of the submission's current judge; other judges' figures are kept."""
    judge = {"judge_id": submission.judge_id, "judge_version": submission.judge_version}
    SubmissionScore.objects.filter(submission=submission, **judge).delete()
    return SubmissionScore.objects.bulk_create(
        SubmissionScore(submission=submission, **judge, judge_label=submission.judge_label, scope=f.scope, key=f.key,
                        value=f.value, n=f.n, failures=f.failures, ci_low=f.ci_low, ci_high=f.ci_high)  # fmt: skip
        for f in figures(submission_units(submission, **judge))
    )
