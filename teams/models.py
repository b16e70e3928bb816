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
