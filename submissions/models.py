from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from evaluator.judge.scales import SCALES
from evaluator.judge.types import Status as ResultStatus
from tasks.models import Task, TaskPack


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="teams")
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    is_owner = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="unique_membership")]


class ApiToken(models.Model):
    """A team's API token. Only its SHA-256 digest is stored; the token is shown once."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, help_text="first characters, to recognise the token")
    digest = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    last_used = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    @staticmethod
    def digest_of(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    def __str__(self) -> str:
        return f"{self.team}: {self.name} ({self.prefix}…)"


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


class Endpoint(models.Model):
    """A team's OpenAI-compatible prompter. The API key is stored encrypted (evaluation/crypto.py) and never shown."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="endpoints")
    name = models.CharField(max_length=100)
    base_url = models.CharField(max_length=500, help_text="OpenAI-compatible base URL, e.g. https://host/v1")
    model = models.CharField(max_length=200)
    key_encrypted = models.TextField(blank=True, help_text="Fernet token of the API key ('' when none)")
    temperature = models.FloatField(null=True, blank=True)
    top_p = models.FloatField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    seed = models.BigIntegerField(null=True, blank=True, help_text="sent where the server accepts one; sample k sends seed + k")
    max_in_flight = models.PositiveSmallIntegerField(default=4, help_text="calls in flight at once, across all workers")
    created = models.DateTimeField(auto_now_add=True)
    archived = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="unique_endpoint_name")]
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.model})"

    @property
    def has_key(self) -> bool:
        return bool(self.key_encrypted)

    def parameters(self) -> dict:
        """What the page and the submission's snapshot show: never the key."""
        return {"model": self.model, "temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens, "seed": self.seed}


class Submission(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="submissions")
    pack = models.ForeignKey(TaskPack, on_delete=models.PROTECT, related_name="submissions")
    pack_revision = models.PositiveIntegerField(default=1, help_text="the pack's revision when the prompts came in")
    prompter = models.CharField(max_length=200, help_text="who or what wrote the prompts, e.g. a model name")
    condition = models.CharField(max_length=40, blank=True, help_text="e.g. novice or skilled; an endpoint run's condition name (plain, guided…)")
    origin = models.CharField(max_length=20, default="file", help_text="where the prompts came from: file (an upload) or endpoint")
    condition_version = models.CharField(max_length=40, blank=True, help_text="an endpoint run's condition version (evaluator/prompters/conditions.py)")
    endpoint = models.ForeignKey(Endpoint, null=True, blank=True, on_delete=models.PROTECT, related_name="submissions")
    prompting = models.JSONField(default=dict, blank=True, help_text="an endpoint run's settings as they were: endpoint, parameters, condition, rounds, budgets")
    samples = models.PositiveSmallIntegerField(default=1)
    rounds = models.PositiveSmallIntegerField(default=1, help_text="1 = single-turn; more = feedback rounds")
    feedback_backend = models.CharField(max_length=100, blank=True, help_text="the backend whose first image is fed back between rounds")
    is_baseline = models.BooleanField(default=False)
    baseline_note = models.TextField(blank=True, help_text="provenance of a baseline row")
    source_name = models.CharField(max_length=255, blank=True)
    idempotency_key = models.CharField(max_length=200, blank=True, help_text="the API's Idempotency-Key: a retried upload returns this submission")
    request_fingerprint = models.CharField(max_length=64, blank=True, help_text="sha256 of what was uploaded with that key")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    published = models.BooleanField(default=False)
    withdrawn = models.DateTimeField(null=True, blank=True, help_text="when the team last took it off the board (history kept)")
    judge_id = models.CharField(max_length=200, blank=True)
    judge_label = models.CharField(max_length=300, blank=True)
    judge_version = models.CharField(max_length=40, blank=True)
    judge_endpoint = models.CharField(max_length=300, blank=True, help_text="the host(s) the judge called, without credentials: staff only, never on a public page")
    judge_spec = models.JSONField(default=dict, blank=True, help_text="the judge's full spec (models, route, rubric version, parameters) as it scored")
    backends = models.JSONField(default=list, blank=True, help_text="backend configs used, with version hashes")
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(fields=["team", "idempotency_key"], condition=~Q(idempotency_key=""), name="unique_idempotency_key"),
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
    note = models.CharField(max_length=200, blank=True, help_text="what the backend did to the prompt, e.g. cut it to what its text encoder reads")
    rewritten = models.TextField(blank=True, help_text="the prompt as the backend's middleware rewrote it before rendering ('' when it has none)")
    seconds = models.FloatField(null=True, blank=True)
    reused_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    queued_at = models.DateTimeField(default=timezone.now, help_text="when its job was last sent")
    started_at = models.DateTimeField(null=True, blank=True, help_text="when a worker last began it; empty: waiting for a worker")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["entry", "backend", "image_index"], name="unique_render")]
        indexes = [
            models.Index(fields=["config_hash", "prompt_sha", "seed"]),
            # "is any render of this submission still pending?" after every unit: without it each check walks every
            # entry of the submission, so a submission's checks grew with the square of its size.
            models.Index(fields=["status", "entry"], name="render_status_entry"),
        ]
        ordering = ["entry_id", "backend", "image_index"]


class Judgement(models.Model):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="judgements")
    entry = models.ForeignKey(PromptEntry, on_delete=models.CASCADE, related_name="judgements")
    render = models.ForeignKey(Render, null=True, blank=True, on_delete=models.CASCADE, related_name="judgements")
    skill = models.CharField(max_length=40)
    judge_id = models.CharField(max_length=200)
    judge_version = models.CharField(max_length=40)
    status = models.CharField(max_length=8, choices=UnitStatus.choices, default=UnitStatus.PENDING)
    value = models.FloatField(null=True, blank=True, help_text="the skill's headline number, on `scale`; empty unless ok")
    scale = models.CharField(max_length=20, blank=True, choices=[(name, s.label) for name, s in SCALES.items()], help_text="empty for a gate")
    scores = models.JSONField(default=dict, blank=True)
    checklist = models.JSONField(default=dict, blank=True)
    rationales = models.JSONField(default=dict, blank=True)
    raw = models.TextField(blank=True)
    reason = models.TextField(blank=True, help_text="why it failed, was skipped or blocked, in the platform's own words (evaluator.failures)")
    remote_text = models.TextField(blank=True, help_text="what the judge's endpoint or the exception said, hidden items redacted: staff only")
    calls = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    # (skill, judge, rubric version, hash of every input): an identical judgement anywhere is reused, with zero calls.
    cache_key = models.CharField(max_length=64, blank=True, db_index=True)
    cached = models.BooleanField(default=False, help_text="result copied from an identical earlier judgement")
    details = models.JSONField(default=dict, blank=True, help_text="skill extras: ensemble spread, faithfulness requirements…")
    queued_at = models.DateTimeField(default=timezone.now, help_text="when its job was last sent")
    started_at = models.DateTimeField(null=True, blank=True, help_text="when a worker last began it; empty: waiting for a worker")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        # Prompt-side judgements have no render; NULLs never collide in a unique index, so two constraints.
        constraints = [
            models.UniqueConstraint(
                fields=["entry", "skill", "judge_id", "judge_version"],
                condition=Q(render__isnull=True),
                name="unique_prompt_judgement",
            ),
            models.UniqueConstraint(
                fields=["render", "skill", "judge_id", "judge_version"],
                condition=Q(render__isnull=False),
                name="unique_image_judgement",
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
    feedback_score = models.FloatField(null=True, blank=True, help_text="IM: similarity to the target; OE/CO: share of image checks met; 0-100")
    feedback_details = models.JSONField(default=dict, blank=True)
    feedback_error = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["submission", "task", "sample_index", "round"], name="unique_call")]
        ordering = ["submission_id", "task__category", "task__task_id", "sample_index", "round"]
