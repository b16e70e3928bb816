"""What the site told a team by e-mail, and who wants to be told.

A Notice is the event's natural key (submission, event): created in its own transaction before anything is sent, so a
retried job or a second publish finds the row and sends nothing again. A user without a NotificationSetting gets mail.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from evaluation.models import Submission


class Event(models.TextChoices):
    DONE = "done", "finished"
    FAILED = "failed", "failed (or finished incomplete)"
    PUBLISHED = "published", "published on its board"


class Notice(models.Model):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="notices")
    event = models.CharField(max_length=10, choices=Event.choices)
    created = models.DateTimeField(auto_now_add=True)
    recipients = models.PositiveIntegerField(default=0, help_text="messages handed to the mail backend (one per member)")
    error = models.TextField(blank=True, help_text="why the mail backend refused them (nothing was sent again)")

    class Meta:
        ordering = ["-created"]
        constraints = [models.UniqueConstraint(fields=["submission", "event"], name="unique_notice_event")]

    def __str__(self) -> str:
        return f"#{self.submission_id} {self.event}"


class NotificationSetting(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_setting")
    email_enabled = models.BooleanField(default=True, help_text="e-mail when a team's submission finishes, fails or is published")
    updated = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.user}: {'on' if self.email_enabled else 'off'}"
