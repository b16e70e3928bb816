"""Human studies: a deployer's study, its invitations, the participants and what they wrote.

A participant is anonymous: a random code and the invitation's secret token, no name or email. Only the token's
SHA-256 is stored (as for API tokens): the link carries the token, shown once when it is made.
The protocol (consent text, questionnaire, tier rule) is copied into the study when it is
created, so editing the shipped files later never changes what a running study asked.
"""

from __future__ import annotations

import secrets

from django.db import models
from django.utils import timezone

from evaluation.models import Submission, UnitStatus
from evaluator.tiers import PARTICIPANT_TIERS
from tasks.models import Task, TaskPack
from teams.models import ApiToken, Team


def _token() -> str:
    """A link's secret (migration 0001 names this function as the old field's default)."""
    return secrets.token_urlsafe(18)


def participant_code() -> str:
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I to misread
    return "P-" + "".join(secrets.choice(alphabet) for _ in range(6))


class Study(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    pack = models.ForeignKey(TaskPack, on_delete=models.PROTECT, related_name="studies")
    split = models.CharField(max_length=4, blank=True, help_text="dev, test, or '' for both splits")
    per_category = models.PositiveSmallIntegerField(default=5, help_text="tasks of each category per round")
    rounds = models.PositiveSmallIntegerField(default=2)
    retry_attempts = models.PositiveSmallIntegerField(
        default=0, help_text="IM retry mode: at most this many rendered attempts per IM task (0 = off)"
    )
    retry_backend = models.CharField(max_length=100, blank=True, help_text="the fast backend that renders IM attempts")
    protocol_version = models.CharField(max_length=40)
    consent_text = models.TextField()
    questionnaire = models.JSONField(help_text="questions, as in studies/protocol/questionnaire.json")
    tier_rule = models.JSONField(help_text="points per answer and the skilled threshold, as in studies/protocol/tier_rule.json")
    modules = models.JSONField(help_text="the introduction screen of each module (category)")
    max_prompt_chars = models.PositiveIntegerField(default=2000)
    is_open = models.BooleanField(default=True, help_text="closed: links stop working for new and unfinished participants")
    team = models.OneToOneField(
        Team, on_delete=models.PROTECT, related_name="study", help_text="owns the participants' submissions (no members)"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["-created"]

    def __str__(self) -> str:
        return self.name

    @property
    def tasks_per_participant(self) -> int:
        return self.rounds * self.per_category * len(self.modules)


class Invitation(models.Model):
    """One participant's link: the first visit starts the session, later visits resume it. The link's token is never
    stored, only its SHA-256 (the API tokens' hash, teams.models.ApiToken.digest_of): studies.services.
    invitations_create gives the token once, on the rows it returns (`token`)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="invitations")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the link's token (the token itself is never stored)")
    prefix = models.CharField(max_length=6, blank=True, help_text="the token's first characters, to recognise a link")
    expires = models.DateTimeField(null=True, blank=True)
    note = models.CharField(max_length=200, blank=True, help_text="staff's own label, e.g. a recruitment batch")
    created = models.DateTimeField(auto_now_add=True)
    token: str | None = None  # the link's token, on a row invitations_create has just made only (never saved)

    @staticmethod
    def digest_of(token: str) -> str:
        return ApiToken.digest_of(token)

    def expired(self) -> bool:
        return self.expires is not None and self.expires <= timezone.now()


# A participant's tier (evaluator.tiers), as Django choices: Tier.NOVICE == "novice". Human rows add "all".
Tier = models.TextChoices("Tier", [(t.name, t.value) for t in PARTICIPANT_TIERS])


class Participant(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    invitation = models.OneToOneField(Invitation, on_delete=models.CASCADE, related_name="participant")
    code = models.CharField(max_length=12, unique=True, default=participant_code)
    consented = models.DateTimeField(null=True, blank=True)
    answers = models.JSONField(default=dict, blank=True, help_text="questionnaire answers; deleted on withdrawal")
    points = models.FloatField(null=True, blank=True, help_text="the tier rule's total")
    tier = models.CharField(max_length=8, choices=Tier.choices, blank=True)
    started = models.DateTimeField(auto_now_add=True)
    completed = models.DateTimeField(null=True, blank=True)
    withdrawn = models.DateTimeField(null=True, blank=True)
    submission = models.OneToOneField(Submission, null=True, blank=True, on_delete=models.SET_NULL, related_name="participant")
    scripted = models.BooleanField(
        default=False,
        help_text="a scripted demo participant (a rule, not a person): its rows are labelled "
        "scripted (demo) and never pooled with real people's",
    )

    class Meta:
        ordering = ["study", "started"]

    def __str__(self) -> str:
        return self.code

    @property
    def state(self) -> str:
        if self.withdrawn:
            return "withdrawn"
        if self.completed:
            return "completed"
        return "consent" if not self.consented else "questionnaire" if not self.tier else "tasks"


class Assignment(models.Model):
    """One task of a participant's plan, in the order it is shown; `text` is set once, when submitted."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="assignments")
    position = models.PositiveSmallIntegerField()
    round = models.PositiveSmallIntegerField()
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="study_assignments")
    intro = models.BooleanField(default=False, help_text="the first task of a module block: its introduction comes first")
    intro_seen = models.DateTimeField(null=True, blank=True)
    draft = models.TextField(blank=True)
    draft_saved = models.DateTimeField(null=True, blank=True)
    text = models.TextField(blank=True)
    shown = models.DateTimeField(null=True, blank=True, help_text="first shown")
    submitted = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="time on task: shown to submitted")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["participant", "position"], name="unique_position"),
            models.UniqueConstraint(fields=["participant", "task"], name="unique_participant_task"),
        ]
        ordering = ["participant", "position"]


class Attempt(models.Model):
    """An IM retry: the prompt rendered on the study's fast backend and its similarity to the target (0-100)."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField()
    text = models.TextField()
    status = models.CharField(max_length=8, choices=UnitStatus.choices, default=UnitStatus.PENDING)
    image = models.ImageField(upload_to="attempts/", blank=True)
    score = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["assignment", "number"], name="unique_attempt")]
        ordering = ["assignment", "number"]
