"""A submission's prompts scored by the installed difficulty predictor (tasks/difficulty.py), before any image."""

from __future__ import annotations

from tasks.difficulty import predict_missing

from .models import PromptCall, PromptEntry


def submission_texts(submission_id: int) -> set[str]:
    """Every prompt of a submission: its entries, and the calls of an endpoint run (every round's prompt)."""
    entries = PromptEntry.objects.filter(submission_id=submission_id).values_list("text", flat=True)
    return set(entries) | set(PromptCall.objects.filter(submission_id=submission_id).exclude(text="").values_list("text", flat=True))


def predict_submission(submission_id: int) -> int:
    return predict_missing(submission_texts(submission_id))
