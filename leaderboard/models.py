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
    coverage = models.JSONField(default=dict, blank=True, help_text="{scored, planned, skills: {skill: [scored, planned]}}: what it rests on (evaluator.metrics.coverage)")
    computed = models.DateTimeField(auto_now=True)

    class Meta:
        # Scores of every judge version stay, so an old and a new judge can be compared side by side.
        constraints = [models.UniqueConstraint(fields=["submission", "judge_id", "judge_version", "scope", "key"], name="unique_figure")]
        ordering = ["submission", "scope", "key"]


class HumanRow(models.Model):
    """A human baseline row of one board and judge: a study tier's participants pooled (evaluation.humans).

    Per task, the score is the mean over the participants who did that task (each participant is
    one sample of the pooled units); figures then aggregate as for any submission. Scripted demo
    participants get rows of their own (`scripted`), never pooled with real people's."""

    pack = models.ForeignKey("tasks.TaskPack", on_delete=models.CASCADE, related_name="human_rows")
    revision = models.PositiveIntegerField()
    tier = models.CharField(max_length=8)  # novice | skilled | all
    judge_id = models.CharField(max_length=200)
    judge_version = models.CharField(max_length=40)
    judge_label = models.CharField(max_length=300, blank=True)
    figures = models.JSONField(default=list, help_text="[{scope, key, value, n, failures, ci_low, ci_high, scale}]")
    tasks = models.JSONField(default=list, help_text="task ids with a human score")
    participants = models.PositiveIntegerField(default=0)
    tasks_per_participant = models.FloatField(default=0)
    protocols = models.JSONField(default=list, help_text="study protocol versions pooled here")
    studies = models.JSONField(default=list, help_text="study names pooled here")
    first = models.DateTimeField(null=True, blank=True, help_text="first completed participant")
    last = models.DateTimeField(null=True, blank=True, help_text="last completed participant")
    scripted = models.BooleanField(default=False, help_text="pools scripted demo participants (rules, not people) only")
    computed = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pack", "revision", "tier", "judge_id", "judge_version", "scripted"], name="unique_human_row")]
        ordering = ["pack", "revision", "-scripted", "tier"]  # people's rows last: a reader keyed by tier alone keeps theirs

    TIER_ORDER = ("novice", "skilled", "all")

    @property
    def label(self) -> str:
        return f"Scripted (demo) — {self.tier}" if self.scripted else f"Humans — {self.tier}"


class BoardStats(models.Model):
    """A board's statistics for one judge, rebuilt by a job whenever the board changes (evaluation.boards):
    rank ranges, adjacent tests, win rates, length control and the dev/test split scores, keyed by submission id."""

    pack = models.ForeignKey("tasks.TaskPack", on_delete=models.CASCADE, related_name="board_stats")
    revision = models.PositiveIntegerField()
    judge_id = models.CharField(max_length=200)
    judge_version = models.CharField(max_length=40)
    entries = models.JSONField(default=dict, help_text="submission id -> {score, low, high, rank, rank_high, win_rate, lc, dev, test, gap, length, covers, of, missing}")
    comparisons = models.JSONField(default=list, help_text="neighbour pairs in score order: upper, lower, difference, tasks, p, p_holm, separated")
    wins = models.JSONField(default=dict, help_text="'a:b' -> [wins, ties, losses] of a against b on common tasks")
    length = models.JSONField(default=list, help_text="per category: coefficient, interval, n")
    settings = models.JSONField(default=dict, help_text="seed, alpha, resamples, tie margin, ranked split minimum: what recomputes the same numbers")
    backends = models.JSONField(default=dict, help_text="the board's backend columns: name -> label")
    ranked_on = models.JSONField(default=dict, help_text="{split: 'test' or 'all', tasks scored, ranked entries}: what the ranking statistics use")
    intervals = models.JSONField(default=dict, help_text="{shown, minimum_tasks}: whether the board has enough tasks for intervals and rank ranges")
    separable = models.JSONField(default=dict, help_text="{possible, best_p_holm, tests}: whether any neighbour test can reach alpha at all")
    style = models.JSONField(default=dict, help_text="{identified, categories, minimum_dof}: where the length control is fitted")
    # What the page needs besides one page of rows, stored so a request never scans the board's entries:
    judge_label = models.CharField(max_length=300, blank=True)
    entry_count = models.PositiveIntegerField(default=0, help_text="published entries scored by this judge")
    conditions = models.JSONField(default=list, help_text="condition names on the board, for its filter")
    has_split = models.BooleanField(default=False, help_text="some entry has both a dev and a test score")
    computed = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pack", "revision", "judge_id", "judge_version"], name="unique_board_stats")]
        indexes = [models.Index(fields=["pack", "revision", "entry_count"], name="board_stats_by_board")]


class BoardRow(models.Model):
    """One published entry's row on one board and judge, stored by the board job so the page reads a page of rows
    with one indexed query: figures as the page shows them, sort keys, and its statistics."""

    pack = models.ForeignKey("tasks.TaskPack", on_delete=models.CASCADE, related_name="board_rows")
    revision = models.PositiveIntegerField()
    judge_id = models.CharField(max_length=200)
    judge_version = models.CharField(max_length=40)
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="board_rows")
    condition = models.CharField(max_length=40, blank=True)
    overall = models.FloatField(null=True)
    score = models.FloatField(null=True, help_text="the ranked score (BoardStats: test split or all tasks): the statistics' order")
    tasks_covered = models.PositiveIntegerField(default=0)
    figures = models.JSONField(default=dict, help_text="{overall: figure, category: {key: figure}, backend: {key: figure}}")
    sort = models.JSONField(default=dict, help_text="sort key -> value: OE, CO, IM, backend:<name>, lc, win_rate, test, dev, gap")
    stats = models.JSONField(default=dict, help_text="the entry's BoardStats figures, with tied and next_gap")
    backend_labels = models.JSONField(default=dict)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["submission", "judge_id", "judge_version"], name="unique_board_row")]
        # Two indexes in the page's order (best first, no value last, ties by submission) are made by migration
        # 0007 for each database: SQLite cannot say NULLS LAST in an index (its DESC already puts NULLs last).
