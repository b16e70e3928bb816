"""Teams, their members, their API tokens and their registered prompter endpoints: the bottom app every other builds on."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="teams")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "submissions_team"

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    is_owner = models.BooleanField(default=False)

    class Meta:
        db_table = "submissions_membership"
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

    class Meta:
        db_table = "submissions_apitoken"

    @staticmethod
    def digest_of(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    def __str__(self) -> str:
        return f"{self.team}: {self.name} ({self.prefix}…)"


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
        db_table = "submissions_endpoint"
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


class PrompterKind(models.TextChoices):
    MLLM = "mllm", "MLLM"
    HUMAN = "human", "human"
    RULE = "rule", "rule"
    AGENT = "agent", "agent"
    OTHER = "other", "other"


class Weights(models.TextChoices):
    OPEN = "open", "open weights"
    CLOSED = "closed", "closed weights"


CARD_FIELDS = ("name", "kind", "family", "weights", "parameters", "paper_url", "code_url", "licence", "description", "contact")
PUBLIC_CARD_FIELDS = CARD_FIELDS[:-1]  # the contact is staff's only


class Prompter(models.Model):
    """A team's description of one prompter (its card), shared by the team's submissions and endpoint runs under its
    name. A card with no kind is one nobody has described yet: made from a submission's prompter name alone."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="prompters")
    name = models.CharField(max_length=200, help_text="the display name; submissions under this name use this card")
    kind = models.CharField(max_length=10, choices=PrompterKind.choices, blank=True, help_text="blank: not described yet")
    family = models.CharField(max_length=100, blank=True, help_text="model family, e.g. Qwen2.5-VL")
    weights = models.CharField(max_length=10, choices=Weights.choices, blank=True, help_text="blank: not stated, or not a model")
    parameters = models.PositiveBigIntegerField(null=True, blank=True, help_text="parameter count (a number, not billions)")
    paper_url = models.URLField(max_length=500, blank=True)
    code_url = models.URLField(max_length=500, blank=True)
    licence = models.CharField(max_length=100, blank=True)
    description = models.TextField(max_length=600, blank=True, help_text="plain text, shown as text (never as HTML)")
    contact = models.CharField(max_length=200, blank=True, help_text="shown to staff only")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="unique_prompter_name")]
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.team})"

    @property
    def described(self) -> bool:
        return bool(self.kind)

    def values(self) -> dict:
        return {name: getattr(self, name) for name in CARD_FIELDS}


class PrompterVersion(models.Model):
    """One saved state of a card: every change makes one (who, when, what changed, all the values after it)."""

    prompter = models.ForeignKey(Prompter, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    values = models.JSONField(help_text="every card field after this change, the contact included (staff only)")
    changed = models.JSONField(default=list, help_text="the fields this change set")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="the API token that made this change"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["prompter", "number"], name="unique_prompter_version")]
        ordering = ["prompter", "number"]

    def public(self) -> dict:
        return {name: self.values.get(name) for name in PUBLIC_CARD_FIELDS}

    @property
    def by(self) -> str:
        """Who made this version, in words: a member, a named API token, or the platform."""
        if self.user is not None:
            return self.user.get_username()
        if self.token is not None:
            return f"API token {self.token.name!r} ({self.token.prefix}…)"
        if set(self.changed) <= set(CARD_FIELDS):  # a token's change whose token is deleted, or made before tokens were kept
            return "API token"
        return "the platform"  # teams.services.card_for and evaluation/0006 made it, and say how instead of naming fields
