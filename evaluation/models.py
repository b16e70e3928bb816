"""The pipeline's tables: submissions and their prompts, renders, judgements and prompt calls; the figures, board
rows and statistics built from them; the judge's memory (exemplars and their embeddings).

The evaluation layer is their only writer. Every table keeps the name it had in the app it came from (submissions,
leaderboard, ratings), so the move was a change of Django's state only and no row moved.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from evaluator.judge.scales import SCALES
from evaluator.judge.types import Side
from evaluator.judge.types import Status as ResultStatus
from evaluator.metrics.scopes import Scope
from evaluator.tiers import ROW_TIERS, Tier
from tasks.models import Category, Task, TaskPack
from teams.models import Endpoint, Prompter, PrompterVersion, Team


class Status(models.TextChoices):
    QUEUED = "queued"
    PROMPTING = "prompting", "prompting (calling the endpoint)"
    RENDERING = "rendering"
    JUDGING = "judging"
    DONE = "done"
    INCOMPLETE = "incomplete", "incomplete (too many judgements failed)"
    FAILED = "failed"
    CANCELLED = "cancelled"


RESUMABLE = (Status.DONE, Status.INCOMPLETE)  # finished states that `rescore` picks up again
ACTIVE = (Status.QUEUED, Status.PROMPTING, Status.RENDERING, Status.JUDGING)  # work is under way (or should be: see reconcile)


class Origin(models.TextChoices):
    """Where a submission's prompts came from."""

    FILE = "file", "file (an upload)"
    ENDPOINT = "endpoint", "endpoint (the platform called a team's endpoint)"
    HUMAN = "human", "human (a study participant's prompts)"


class JudgeRoute(models.TextChoices):
    """How a submission's judge requests go out (evaluation/batching.py): chosen when it is made, kept for its life."""

    SYNC = "sync", "synchronous (each request as its unit is ready)"
    BATCH = "batch", "by batch (the provider's batch API: cheaper, replies within 24 h)"


def default_judge_route() -> str:
    """A new submission's route when nobody chose one: by batch where the deployer sends every submission so
    (ATELIER_JUDGE_BATCH=all), else synchronous (a team opts in with `ask`: submissions.services)."""
    return JudgeRoute.BATCH if settings.ATELIER_JUDGE_BATCH == "all" else JudgeRoute.SYNC


class Submission(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="submissions")
    pack = models.ForeignKey(TaskPack, on_delete=models.PROTECT, related_name="submissions")
    pack_revision = models.PositiveIntegerField(default=1, help_text="the pack's revision when the prompts came in")
    prompter = models.CharField(max_length=200, help_text="who or what wrote the prompts, e.g. a model name")
    condition = models.CharField(
        max_length=40, blank=True, help_text="e.g. novice or skilled; an endpoint run's condition name (plain, guided…)"
    )
    origin = models.CharField(
        max_length=20,
        choices=Origin.choices,
        default=Origin.FILE,
        help_text="where the prompts came from: file (an upload), endpoint (the platform called a team's endpoint) or human (a study participant's prompts)",
    )
    condition_version = models.CharField(
        max_length=40, blank=True, help_text="an endpoint run's condition version (evaluator/prompters/conditions.py)"
    )
    endpoint = models.ForeignKey(Endpoint, null=True, blank=True, on_delete=models.PROTECT, related_name="submissions")
    prompting = models.JSONField(
        default=dict, blank=True, help_text="an endpoint run's settings as they were: endpoint, parameters, condition, rounds, budgets"
    )
    samples = models.PositiveSmallIntegerField(default=1)
    rounds = models.PositiveSmallIntegerField(default=1, help_text="1 = single-turn; more = feedback rounds")
    feedback_backend = models.CharField(max_length=100, blank=True, help_text="the backend whose first image is fed back between rounds")
    is_baseline = models.BooleanField(default=False)
    baseline_note = models.TextField(blank=True, help_text="provenance of a baseline row")
    source_name = models.CharField(max_length=255, blank=True)
    idempotency_key = models.CharField(
        max_length=200, blank=True, help_text="the API's Idempotency-Key: a retried upload returns this submission"
    )
    request_fingerprint = models.CharField(max_length=64, blank=True, help_text="sha256 of what was uploaded with that key")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    published = models.BooleanField(default=False)
    published_at = models.DateTimeField(null=True, blank=True, help_text="when it was first published (a board's history dates)")
    card = models.ForeignKey(
        Prompter, null=True, blank=True, on_delete=models.PROTECT, related_name="submissions", help_text="the team's card for its prompter"
    )
    card_version = models.ForeignKey(
        PrompterVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+", help_text="the card as it was when published"
    )
    withdrawn = models.DateTimeField(null=True, blank=True, help_text="when the team last took it off the board (history kept)")
    judge_id = models.CharField(max_length=200, blank=True)
    judge_label = models.CharField(max_length=300, blank=True)
    judge_version = models.CharField(max_length=40, blank=True)
    judge_endpoint = models.CharField(
        max_length=300, blank=True, help_text="the host(s) the judge called, without credentials: staff only, never on a public page"
    )
    judge_spec = models.JSONField(
        default=dict, blank=True, help_text="the judge's full spec (models, route, rubric version, parameters) as it scored"
    )
    backends = models.JSONField(default=list, blank=True, help_text="backend configs used, with version hashes")
    judge_route = models.CharField(
        max_length=8,
        choices=JudgeRoute.choices,
        default=default_judge_route,
        help_text="how its judge requests go out: sync or batch (ATELIER_JUDGE_BATCH; with `ask` the team chose when it submitted)",
    )
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "submissions_submission"
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(fields=["team", "idempotency_key"], condition=~Q(idempotency_key=""), name="unique_idempotency_key")
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.team} / {self.prompter}"


class PromptEntry(models.Model):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="entries")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="entries")
    sample_index = models.PositiveSmallIntegerField(default=0)
    text = models.TextField()
    line = models.PositiveIntegerField(default=0, help_text="line in the uploaded file")

    class Meta:
        db_table = "submissions_promptentry"
        verbose_name_plural = "prompt entries"
        constraints = [models.UniqueConstraint(fields=["submission", "task", "sample_index"], name="unique_entry")]
        ordering = ["task__category", "task__task_id", "sample_index"]


class UnitStatus(models.TextChoices):
    """A render's or a judgement's state: pending until its job settles it, then a judge result status."""

    PENDING = "pending"
    OK = ResultStatus.OK.value
    FAILED = ResultStatus.FAILED.value
    SKIPPED = ResultStatus.SKIPPED.value
    BLOCKED = ResultStatus.BLOCKED.value  # a safety gate stopped the sample: recorded, never scored


class Render(models.Model):
    entry = models.ForeignKey(PromptEntry, on_delete=models.CASCADE, related_name="renders")
    backend = models.CharField(max_length=100)
    image_index = models.PositiveSmallIntegerField()
    seed = models.BigIntegerField()
    config_hash = models.CharField(max_length=64)
    prompt_sha = models.CharField(max_length=64)
    status = models.CharField(max_length=8, choices=UnitStatus.choices, default=UnitStatus.PENDING)
    image = models.ImageField(upload_to="renders/", blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    note = models.CharField(
        max_length=200, blank=True, help_text="what the backend did to the prompt, e.g. cut it to what its text encoder reads"
    )
    rewritten = models.TextField(
        blank=True, help_text="the prompt as the backend's middleware rewrote it before rendering ('' when it has none)"
    )
    seconds = models.FloatField(null=True, blank=True)
    reused_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    queued_at = models.DateTimeField(default=timezone.now, help_text="when its job was last sent")
    started_at = models.DateTimeField(null=True, blank=True, help_text="when a worker last began it; empty: waiting for a worker")

    class Meta:
        db_table = "submissions_render"
        constraints = [models.UniqueConstraint(fields=["entry", "backend", "image_index"], name="unique_render")]
        indexes = [
            models.Index(fields=["config_hash", "prompt_sha", "seed"]),
            # "is any render of this submission still pending?" after every unit: without it each check walks every
            # entry of the submission, so a submission's checks grew with the square of its size.
            models.Index(fields=["status", "entry"], name="render_status_entry"),
        ]
        ordering = ["entry_id", "backend", "image_index"]


class JudgeBatch(models.Model):
    """One batch file sent to the judge's provider (evaluation/batching.py): the judgements it carries, keyed by custom id
    (the judgement's natural key), and the provider's progress as last polled."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="judge_batches")
    provider_id = models.CharField(max_length=200, blank=True, help_text="the provider's batch id; empty: it was never created")
    file_id = models.CharField(max_length=200, blank=True, help_text="the uploaded input file's id")
    output_file_id = models.CharField(max_length=200, blank=True, help_text="the replies' file, once the provider has one")
    error_file_id = models.CharField(max_length=200, blank=True, help_text="the failed lines' file, once the provider has one")
    status = models.CharField(
        max_length=20, default="validating", help_text="the provider's status, as last polled; sending: not known to exist there yet"
    )
    send_key = models.CharField(
        max_length=64,
        blank=True,
        help_text="sent as the batch's metadata (atelier_batch): how reconcile finds a batch the send job did not live to record",
    )
    cancel_requested = models.DateTimeField(
        null=True, blank=True, help_text="when the provider was asked to cancel it (its submission was cancelled)"
    )
    cancel_error = models.TextField(blank=True, help_text="why the provider did not take the cancel, in our words; empty: no failure")
    total = models.PositiveIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    lines = models.JSONField(default=dict, help_text="custom id -> judgement id, for every line of the file")
    error = models.TextField(blank=True, help_text="why it could not be sent or read, in our words")
    collected = models.BooleanField(default=False, help_text="its replies were stored and its missing lines sent again")
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"judge batch {self.provider_id or self.pk} ({self.status})"


class Judgement(models.Model):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="judgements")
    entry = models.ForeignKey(PromptEntry, on_delete=models.CASCADE, related_name="judgements")
    render = models.ForeignKey(Render, null=True, blank=True, on_delete=models.CASCADE, related_name="judgements")
    skill = models.CharField(max_length=40)
    judge_id = models.CharField(max_length=200)
    judge_version = models.CharField(max_length=40)
    status = models.CharField(max_length=8, choices=UnitStatus.choices, default=UnitStatus.PENDING)
    value = models.FloatField(null=True, blank=True, help_text="the skill's headline number, on `scale`; empty unless ok")
    scale = models.CharField(
        max_length=20, blank=True, choices=[(name, s.label) for name, s in SCALES.items()], help_text="empty for a gate"
    )
    scores = models.JSONField(default=dict, blank=True)
    checklist = models.JSONField(default=dict, blank=True)
    rationales = models.JSONField(default=dict, blank=True)
    raw = models.TextField(blank=True)
    reason = models.TextField(
        blank=True, help_text="why it failed, was skipped or blocked, in the platform's own words (evaluator.failures)"
    )
    remote_text = models.TextField(
        blank=True, help_text="what the judge's endpoint or the exception said, hidden items redacted: staff only"
    )
    calls = models.PositiveIntegerField(default=0)
    throttled = models.PositiveIntegerField(default=0, help_text="of the calls, how many the judge endpoint answered 429")
    prompt_tokens = models.PositiveIntegerField(default=0)
    cached_prompt_tokens = models.PositiveIntegerField(
        default=0, help_text="of the prompt tokens, how many the provider's prompt cache served (as the provider reported)"
    )
    completion_tokens = models.PositiveIntegerField(default=0)
    # (skill, judge, rubric version, hash of every input): an identical judgement anywhere is reused, with zero calls.
    cache_key = models.CharField(max_length=64, blank=True, db_index=True)
    cached = models.BooleanField(default=False, help_text="result copied from an identical earlier judgement")
    details = models.JSONField(default=dict, blank=True, help_text="skill extras: ensemble spread, faithfulness requirements…")
    queued_at = models.DateTimeField(default=timezone.now, help_text="when its job was last sent")
    started_at = models.DateTimeField(null=True, blank=True, help_text="when a worker last began it; empty: waiting for a worker")
    by_batch = models.BooleanField(default=False, help_text="waits for the batch route, not a judge job (ATELIER_JUDGE_BATCH)")
    batch = models.ForeignKey(
        JudgeBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="judgements", help_text="the batch it is in"
    )
    batch_tries = models.PositiveSmallIntegerField(default=0, help_text="batches it was sent in")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "submissions_judgement"
        # Prompt-side judgements have no render; NULLs never collide in a unique index, so two constraints.
        constraints = [
            models.UniqueConstraint(
                fields=["entry", "skill", "judge_id", "judge_version"], condition=Q(render__isnull=True), name="unique_prompt_judgement"
            ),
            models.UniqueConstraint(
                fields=["render", "skill", "judge_id", "judge_version"], condition=Q(render__isnull=False), name="unique_image_judgement"
            ),
        ]
        # "is any judgement of this submission still pending?" after every unit (see Render's index).
        indexes = [models.Index(fields=["submission", "status"], name="judgement_submission_status")]


class CallStatus(models.TextChoices):
    WAITING = "waiting", "waiting for the previous round's feedback"
    PENDING = "pending"
    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"
    REFUSED = "refused"
    SKIPPED = "skipped", "skipped (an earlier round ended the trajectory)"
    CANCELLED = "cancelled"


OPEN_CALLS = (CallStatus.WAITING, CallStatus.PENDING, CallStatus.RUNNING)


class PromptCall(models.Model):
    """One round of one (task, sample) of an endpoint run: the call, its log, and the feedback that followed.

    The rounds of a (task, sample) are its trajectory. The last round that answered becomes the
    PromptEntry that is rendered and judged like an uploaded prompt."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="calls")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="calls")
    sample_index = models.PositiveSmallIntegerField(default=0)
    round = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=10, choices=CallStatus.choices, default=CallStatus.PENDING)
    temperature = models.FloatField(null=True, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    request = models.JSONField(default=list, blank=True, help_text="the messages sent, images replaced by their size and hash")
    reply = models.TextField(blank=True)
    text = models.TextField(blank=True, help_text="the prompt taken from the reply")
    error = models.TextField(blank=True)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    requests = models.PositiveIntegerField(default=0, help_text="HTTP requests sent, retries included")
    latency = models.FloatField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    queued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Feedback (rounds > 1): the first image on the submission's feedback backend, and its score on 0-100.
    feedback_status = models.CharField(max_length=8, choices=UnitStatus.choices, blank=True, help_text="'' when the run has one round")
    feedback_image = models.ImageField(upload_to="feedback/", blank=True)
    feedback_score = models.FloatField(
        null=True, blank=True, help_text="IM: similarity to the target; OE/CO: share of image checks met; 0-100"
    )
    feedback_details = models.JSONField(default=dict, blank=True)
    feedback_error = models.TextField(blank=True)

    class Meta:
        db_table = "submissions_promptcall"
        constraints = [models.UniqueConstraint(fields=["submission", "task", "sample_index", "round"], name="unique_call")]
        ordering = ["submission_id", "task__category", "task__task_id", "sample_index", "round"]


class Figure(models.Model):
    """One leaderboard figure of a submission, rebuilt from its judgements (evaluation.figures.figures_rebuild)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="figures")
    judge_id = models.CharField(max_length=200)
    judge_version = models.CharField(max_length=40)
    judge_label = models.CharField(max_length=300, blank=True)
    scope = models.CharField(
        max_length=20, choices=[(s.value, s.value) for s in Scope], help_text="what the figure is of (evaluator.metrics.scopes)"
    )
    key = models.CharField(max_length=100)
    value = models.FloatField(null=True, blank=True)
    scale = models.CharField(max_length=20, choices=[(name, s.label) for name, s in SCALES.items()], default="score_0_100")
    n = models.PositiveIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    coverage = models.JSONField(
        default=dict,
        blank=True,
        help_text="{scored, planned, skills: {skill: [scored, planned]}}: what it rests on (evaluator.metrics.coverage)",
    )
    computed = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "leaderboard_figure"
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
    tier = models.CharField(
        max_length=8, choices=[(t.value, t.value) for t in Tier], help_text="a participant tier, or all of them (evaluator.tiers)"
    )
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
        db_table = "leaderboard_humanrow"
        constraints = [
            models.UniqueConstraint(fields=["pack", "revision", "tier", "judge_id", "judge_version", "scripted"], name="unique_human_row")
        ]
        ordering = ["pack", "revision", "-scripted", "tier"]  # people's rows last: a reader keyed by tier alone keeps theirs

    TIER_ORDER = ROW_TIERS

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
    entries = models.JSONField(
        default=dict,
        help_text="submission id -> {score, low, high, rank, rank_high, position, win_rate, win_low, win_high, lc, dev, test, gap, gap_low, gap_high, length, covers, of, missing}",
    )
    comparisons = models.JSONField(
        default=list,
        help_text="neighbouring rows in board order, head to head: upper, lower, tasks, upper_wins, lower_wins, ties, low, high, level, separated",
    )
    wins = models.JSONField(
        default=dict,
        help_text="'a:b' -> [wins, ties, losses, low, high] of a against b on common tasks, with the board's interval of P(a beats b)",
    )
    length = models.JSONField(default=list, help_text="per category: coefficient, interval, n")
    settings = models.JSONField(default=dict, help_text="alpha, tie margin, ranked split minimum: what recomputes the same numbers")
    backends = models.JSONField(default=dict, help_text="the board's backend columns: name -> label")
    ranked_on = models.JSONField(
        default=dict, help_text="{split: 'test' or 'all', tasks scored, ranked entries}: what the ranking statistics use"
    )
    intervals = models.JSONField(
        default=dict, help_text="{shown, confidence, method}: the intervals behind scores, rank ranges, neighbours, win rates and gaps"
    )
    separable = models.JSONField(
        default=dict, help_text="{possible, tests, tasks, needed}: whether any pair could be told apart at this board's number of tasks"
    )
    decisions = models.JSONField(
        default=dict,
        help_text="head-to-head decisions held together (evaluator.metrics.decisions): tests, confidence, scopes, rest, "
        "ahead [[ahead, behind, scope, level]], computed",
    )
    style = models.JSONField(
        default=dict, help_text="{identified, categories, minimum_tasks, minimum_dof}: where the length control is fitted"
    )
    # What the page needs besides one page of rows, stored so a request never scans the board's entries:
    judge_label = models.CharField(max_length=300, blank=True)
    entry_count = models.PositiveIntegerField(default=0, help_text="published entries scored by this judge")
    conditions = models.JSONField(default=list, help_text="condition names on the board, for its filter")
    has_split = models.BooleanField(default=False, help_text="some entry has both a dev and a test score")
    computed = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "leaderboard_boardstats"
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
    score = models.FloatField(null=True, help_text="the ranked score (BoardStats: test split or all tasks), the paper's figure")
    position = models.PositiveIntegerField(default=0, help_text="the row's place in the board's order (decided order, then unranked)")
    tasks_covered = models.PositiveIntegerField(default=0)
    figures = models.JSONField(default=dict, help_text="{overall: figure, category: {key: figure}, backend: {key: figure}}")
    sort = models.JSONField(default=dict, help_text="sort key -> value: OE, CO, IM, backend:<name>, lc, win_rate, test, dev, gap")
    stats = models.JSONField(default=dict, help_text="the entry's BoardStats figures, with tied and next_gap")
    backend_labels = models.JSONField(default=dict)

    class Meta:
        db_table = "leaderboard_boardrow"
        constraints = [models.UniqueConstraint(fields=["submission", "judge_id", "judge_version"], name="unique_board_row")]
        indexes = [
            models.Index(fields=["pack", "revision", "judge_id", "judge_version", "position", "submission"], name="board_row_by_position")
        ]
        # Two indexes in the order of the overall and ranked scores (best first, no value last, ties by submission) are
        # made by leaderboard's migration 0007 for each database: SQLite cannot say NULLS LAST in an index.


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
        db_table = "ratings_exemplar"
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
        db_table = "ratings_exemplarembedding"
        constraints = [models.UniqueConstraint(fields=["exemplar", "model"], name="unique_exemplar_embedding")]
