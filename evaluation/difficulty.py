"""A submission's prompts scored by the installed difficulty predictor (tasks/difficulty.py), before any image."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from evaluator.metrics.aggregate import sample_image_scores
from evaluator.metrics.agreement import Prediction, prediction_document
from evaluator.metrics.scopes import Scope
from tasks import difficulty
from tasks.difficulty import predict_missing

from .figures import submission_units
from .models import PromptCall, PromptEntry, Status, Submission


def submission_texts(submission_id: int) -> set[str]:
    """Every prompt of a submission: its entries, and the calls of an endpoint run (every round's prompt)."""
    entries = PromptEntry.objects.filter(submission_id=submission_id).values_list("text", flat=True)
    return set(entries) | set(PromptCall.objects.filter(submission_id=submission_id).exclude(text="").values_list("text", flat=True))


def predict_submission(submission_id: int) -> int:
    return predict_missing(submission_texts(submission_id))


def boards_of_texts(texts: list[str]) -> set[tuple[int, int]]:
    """The boards (pack id, revision) with a published entry holding one of these prompts."""
    published = Submission.objects.filter(published=True, status=Status.DONE)
    found: set[tuple[int, int]] = set()
    for start in range(0, len(texts), difficulty.CHUNK):
        holding = published.filter(entries__text__in=texts[start : start + difficulty.CHUNK])
        found |= set(holding.values_list("pack_id", "pack_revision").distinct())
    return found


def board_entries(pack_id: int, revision: int, judge_id: str, judge_version: str) -> QuerySet[Submission]:
    """A board's entries as its page and release list them: published, done, with this judge's overall figure."""
    published = Submission.objects.filter(published=True, status=Status.DONE, pack_id=pack_id, pack_revision=revision)
    scored = published.filter(figures__judge_id=judge_id, figures__judge_version=judge_version, figures__scope=Scope.OVERALL)
    return scored.distinct().order_by("pk").select_related("team", "pack", "card_version")


def difficulty_agreement(entries: Iterable[Submission], judge_id: str, judge_version: str, resamples: int = 1000) -> dict | None:
    """How the installed predictor's scores (made before rendering) agree with this judge's image part of the same
    entries (0–100, the mean over backends of the image-side composite): Pearson r and Kendall τ-b per category and
    overall with task-bootstrap intervals (evaluator.metrics.agreement.prediction_agreement). None without a
    predictor. The whole-board release carries it in board.json, and the recompute rebuilds it from the release's
    breakdown (each prompt's predicted score) and units."""
    manifest = difficulty.installed()
    if manifest is None:
        return None
    items, contributing = [], 0
    for submission in entries:
        observed = sample_image_scores(submission_units(submission, judge_id, judge_version))
        rows = list(submission.entries.values_list("task__task_id", "task__category", "sample_index", "text"))
        predicted = difficulty.scores([text for *_, text in rows], manifest["version"])
        found = [Prediction(t, c, predicted[text], observed[(t, k)]) for t, c, k, text in rows if text in predicted and (t, k) in observed]
        items += found
        contributing += bool(found)
    return prediction_document(manifest["version"], contributing, items, resamples)
