"""Rebuilding a submission's leaderboard figures from its stored units, in one transaction."""

from __future__ import annotations

from django.db import transaction

from evaluation.models import Figure, Judgement, Render, Submission, UnitStatus
from evaluator.judge.official.composite import entry_figures
from evaluator.judge.skills import get_skill
from evaluator.metrics.aggregate import Unit
from evaluator.metrics.coverage import coverage

_UNIT_FIELDS = (
    "entry__task__task_id",
    "entry__task__category",
    "entry__sample_index",
    "skill",
    "status",
    "value",
    "render__backend",
    "render_id",
    "scale",
    "render__image_index",
)
_RENDER_FIELDS = ("entry__task__task_id", "entry__task__category", "entry__sample_index", "backend")


def submission_units(submission: Submission, judge_id: str, judge_version: str) -> list[Unit]:
    """The plain units the aggregation reads: each judgement's value with its stored scale, and the
    skill's declared composite membership and top-1 rank; failed renders as units of their own."""
    rows = Judgement.objects.filter(submission=submission, judge_id=judge_id, judge_version=judge_version).values_list(*_UNIT_FIELDS)
    units = []
    for task_id, category, sample, skill, status, value, backend, render, scale, index in rows:
        declared = get_skill(skill)
        units.append(
            Unit(
                task_id,
                category,
                sample,
                skill,
                status,
                value,
                backend or "",
                render or -1,
                scale,
                declared.composite,
                declared.top1_rank,
                index if index is not None else -1,
            )
        )
    failed = Render.objects.filter(entry__submission=submission, status=UnitStatus.FAILED).values_list(*_RENDER_FIELDS)
    units += [Unit(t, c, s, "render", UnitStatus.FAILED, None, b) for t, c, s, b in failed]
    return units


@transaction.atomic
def figures_rebuild(*, submission: Submission) -> list[Figure]:
    """Recompute the figures of the submission's current judge; other judges' figures are kept."""
    judge = {"judge_id": submission.judge_id, "judge_version": submission.judge_version}
    Figure.objects.filter(submission=submission, **judge).delete()
    units = submission_units(submission, **judge)
    covered = coverage(units)
    return Figure.objects.bulk_create(
        Figure(
            submission=submission,
            **judge,
            judge_label=submission.judge_label,
            scope=f.scope,
            key=f.key,
            value=f.value,
            scale=f.scale,
            n=f.n,
            failures=f.failures,
            ci_low=f.ci_low,
            ci_high=f.ci_high,
            coverage=covered.get((f.scope, f.key), {}),
        )
        for f in all_figures(units, first_image=first_image_composite(submission.judge_spec))
    )


def first_image_composite(spec: dict) -> bool:
    """The official route's composite keeps the first image of each prompt and backend, as the release's runner
    judges it (evaluator/judge/official/composite.py)."""
    return spec.get("engine") == "official"


def all_figures(units: list[Unit], first_image: bool = False) -> list:
    """The board's figures, more views of them (parts, category × backend) and each task's score (Scope.TASK:
    common-task comparisons, e.g. with human baselines, and the board statistics); with first_image (the official
    route) on each prompt's first image, the best-of-N figures excepted (composite.entry_figures)."""
    return entry_figures(units, first_image)
