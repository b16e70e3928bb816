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


class ReportKind(models.TextChoices):
    """The statistics /judge/ shows, each computed by a job (ratings/reports.py), never per request."""

    JUDGE = "judge", "the judge against the raters (one judge)"
    PEOPLE = "people", "agreement between the raters"
    DIFFICULTY = "difficulty", "predicted difficulty against a board's judge (one board and judge)"


class StoredReport(models.Model):
    """One report's figures as its job last computed them, with when, from which inputs (digest) and by which code;
    and why the last computation failed, if it did. The page reads these and never computes."""

    kind = models.CharField(max_length=10, choices=ReportKind.choices)
    scripted = models.BooleanField(default=False, help_text="over the demo's scripted raters' ratings (never pooled with people's)")
    subject = models.CharField(
        max_length=300, blank=True, help_text="judge: the judge key (id|version); difficulty: pack id:revision:judge key; people: empty"
    )
    data = models.JSONField(null=True, blank=True, help_text="the figures as the page reads them; empty until first computed")
    digest = models.CharField(max_length=64, blank=True, help_text="of the inputs and code the figures were computed from")
    code = models.CharField(max_length=12, blank=True, help_text="the code's digest: figures of other code are not read (their shape)")
    computed_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="how long the computation took")
    error = models.CharField(max_length=300, blank=True, help_text="why the last computation failed, in our words; empty when it did not")
    failed_digest = models.CharField(max_length=64, blank=True, help_text="the inputs it failed on: not tried again until they change")
    failed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "scripted", "subject"], name="unique_stored_report")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}{' (scripted)' if self.scripted else ''} {self.subject}".strip()
