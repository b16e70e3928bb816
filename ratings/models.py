"""Human judgements: exemplars that calibrate the judge (its memory), and expert ratings that test it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluator.judge.types import Side
from submissions.models import PromptEntry, Render
from tasks.models import Category, Task


class Pool(models.TextChoices):
    """Where an expert's rating goes: the judge's memory, or the test of the judge on /judge/. Never both for one task."""

    EXEMPLAR = "exemplar", "exemplar (calibrates the judge)"
    EVALUATION = "evaluation", "evaluation (tests the judge)"


class Exemplar(models.Model):
    """A human-scored prompt or image, retrieved (K most similar, same category, never the same task) as calibration."""

    side = models.CharField(max_length=6, choices=[(s.value, s.value) for s in Side])
    category = models.CharField(max_length=2, choices=Category.choices)
    task_id = models.CharField(max_length=40, help_text="the task it was scored on; never used as calibration for that task")
    text = models.TextField(blank=True)
    image = models.ImageField(upload_to="exemplars/", blank=True)
    scores = models.JSONField(default=dict, help_text="dimension -> score 1..5")
    notes = models.JSONField(default=dict, blank=True, help_text="dimension -> short rationale")
    source = models.CharField(max_length=200, help_text="e.g. an imported file, or a rating made on this site")
    content_sha = models.CharField(max_length=64, help_text="sha256 of text and image: the same content is stored once")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["side", "category", "task_id", "content_sha"], name="unique_exemplar")]
        ordering = ["category", "task_id", "side"]

    def __str__(self) -> str:
        return f"{self.side} exemplar for {self.task_id} ({self.category})"


class ExemplarEmbedding(models.Model):
    """An exemplar's unit embedding by one model (evaluator.judge.encoders identity): retrieval reads the current model's."""

    exemplar = models.ForeignKey(Exemplar, on_delete=models.CASCADE, related_name="embeddings")
    model = models.CharField(max_length=200)
    vector = models.JSONField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["exemplar", "model"], name="unique_exemplar_embedding")]


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
