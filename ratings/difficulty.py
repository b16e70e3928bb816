"""How the difficulty predictor's scores agree with this site's judge: validated on the platform's own data.

Items are the entries of published, finished submissions: the entry's predicted score (tasks/difficulty.py, made
before rendering) against its image part as judged (0–100: the mean over backends of the image-side composite, by
the judge the submission is scored with on the board). Pearson r and Kendall τ-b per category and overall, with
task-bootstrap intervals under evaluator.metrics.agreement's rules (none below 10 tasks). Cached until a
submission is published, withdrawn or finishes again, or the predictor changes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Count, Max

from evaluation.figures import submission_units
from evaluation.models import Status, Submission
from evaluator.metrics.aggregate import sample_image_scores
from evaluator.metrics.agreement import Interval, Prediction, prediction_agreement
from tasks import difficulty
from tasks.models import PredictedDifficulty

from .agreement import CACHE_SECONDS


@dataclass(frozen=True)
class DifficultyReport:
    predictor: str
    rows: list[tuple[str, Interval, Interval]]  # (category or "overall", Pearson, Kendall)
    submissions: int  # published submissions with at least one item counted
    judges: list[str]  # the labels of their judges ("smoke (random weights)" included where it applies)


def _published():
    return Submission.objects.filter(published=True, status=Status.DONE).exclude(judge_id="")


def prediction_items(version: str) -> tuple[list[Prediction], list[Submission]]:
    """The items, and the submissions that gave at least one."""
    items, contributing = [], []
    for submission in _published().order_by("pk"):
        observed = sample_image_scores(submission_units(submission, submission.judge_id, submission.judge_version))
        entries = list(submission.entries.select_related("task"))
        predicted = difficulty.scores([e.text for e in entries], version)
        before = len(items)
        for e in entries:
            key = (e.task.task_id, e.sample_index)
            if e.text in predicted and key in observed:
                items.append(Prediction(e.task.task_id, e.task.category, predicted[e.text], observed[key]))
        if len(items) > before:
            contributing.append(submission)
    return items, contributing


def difficulty_report(resamples: int = 1000) -> DifficultyReport | None:
    """None without a predictor; rows are empty until a published submission has judged entries it has scored."""
    manifest = difficulty.installed()
    if manifest is None:
        return None
    stamp = _published().aggregate(n=Count("pk"), last=Max("finished"), ids=Max("pk"))
    scored = PredictedDifficulty.objects.filter(predictor=manifest["version"]).count()  # predictions made since
    raw = f"{manifest['version']}:{scored}:{stamp['n']}:{stamp['last']}:{stamp['ids']}:{resamples}"
    key = "difficulty-agreement:" + hashlib.sha256(raw.encode()).hexdigest()
    report = cache.get(key)
    if report is None:
        items, contributing = prediction_items(manifest["version"])
        rows = prediction_agreement(items, resamples=resamples) if items else []
        judges = sorted({s.judge_label or s.judge_id for s in contributing})
        report = DifficultyReport(manifest["version"], rows, len(contributing), judges)
        cache.set(key, report, timeout=CACHE_SECONDS)
    return report
