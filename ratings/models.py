"""Expert ratings that test the judge, and the queue that hands them out. (The exemplars that calibrate the judge,
its memory, are the evaluation layer's: evaluation.models.Exemplar; a rating in the exemplar pool becomes one.)"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluation.models import PromptEntry, Render
from tasks.models import Task


class Pool(models.TextChoices):
    """Where an expert's rating goes: the judge's memory, or the test of the judge on /judge/. Never both for one task."""

    EXEMPLAR = "exemplar", "exemplar (calibrates the judge)"
    EVALUATION = "evaluation", "evaluation (tests the judge)"


class ExpertRating(models.Model):
    """One expert's scores (and checklist labels) for one prompt (entry) or one image (render)."""

    rater = models.CharField(max_length=100)
    entry = models.ForeignKey(PromptEntry, on_delete=models.CASCADE, related_name="expert_ratings")
    render = models.ForeignKey(Render, null=True, blank=True, on_delete=models.CASCADE, related_name="expert_ratings")
    scores = models.JSONField(default=dict, blank=True, help_text="dimension -> score 1..5")
    checklist = models.JSONField(default=dict, blank=True, help_text="checklist item -> 0/1")
    note = models.TextField(blank=True)
    source = models.CharField(max_length=200, blank=True)
    pool = models.CharField(max_length=10, choices=Pool.choices, default=Pool.EVALUATION, help_text="imported files are evaluation ratings")
    scripted = models.BooleanField(
        default=False,
        help_text="a scripted demo rater's (a rule, not a person): its figures on /judge/ are labelled scripted (demo) "
        "and never pooled with real people's",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rater", "entry"], condition=Q(render__isnull=True), name="unique_prompt_rating"),
            models.UniqueConstraint(fields=["rater", "render"], condition=Q(render__isnull=False), name="unique_image_rating"),
        ]

    @property
    def item_id(self) -> str:
        return f"render:{self.render_id}" if self.render_id else f"entry:{self.entry_id}"


class TaskPool(models.Model):
    """A task's pool, decided the first time one of its items is assigned, and never changed."""

    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="rating_pool")
    pool = models.CharField(max_length=10, choices=Pool.choices)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.task} → {self.pool}"


class RatingAssignment(models.Model):
    """One prompt/image pair (an entry and one of its images) in one expert's queue."""

    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rating_assignments")
    entry = models.ForeignKey(PromptEntry, on_delete=models.CASCADE, related_name="rating_assignments")
    render = models.ForeignKey(Render, on_delete=models.CASCADE, related_name="rating_assignments")
    pool = models.CharField(max_length=10, choices=Pool.choices)
    created = models.DateTimeField(auto_now_add=True)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rater", "entry"], name="unique_assignment")]
        ordering = ["created", "pk"]
        permissions = [
            ("rate_items", "Can rate prompt/image pairs as an expert"),
            ("rate_hidden_items", "Can rate items of hidden (test-split) tasks, whose checklists are secret"),
        ]

    def __str__(self) -> str:
        return f"{self.entry.task.task_id} for {self.rater} ({self.pool})"
