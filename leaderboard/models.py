from django.db import models

from evaluator.judge.scales import SCALES
from submissions.models import Submission


class Figure(models.Model):
    """One leaderboard figure of a submission, rebuilt from its judgements (evaluation.figures.figures_rebuild)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="figures")
    judge_id = models.CharField(max_length=200)
    judge_version = models.CharField(max_length=40)
    judge_label = models.CharField(max_length=300, blank=True)
    scope = models.CharField(max_length=20)  # overall | category | backend | skill | top1
    key = models.CharField(max_length=100)
    value = models.FloatField(null=True, blank=True)
    scale = models.CharField(max_length=20, choices=[(name, s.label) for name, s in SCALES.items()], default="score_0_100")
    n = models.PositiveIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    computed = models.DateTimeField(auto_now=True)

    class Meta:
        # Scores of every judge version stay, so an old and a new judge can be compared side by side.
        constraints = [models.UniqueConstraint(fields=["submission", "judge_id", "judge_version", "scope", "key"], name="unique_figure")]
        ordering = ["submission", "scope", "key"]
