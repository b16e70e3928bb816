"""What the site told a team by e-mail, and who wants to be told.

A Notice is the event's natural key (submission, event) and the mail's outbox row: created in the transaction that
made the event, so it exists exactly when the change committed; its job sends it later, tries again after a failure,
and a second event of the same kind finds the row and adds nothing. A user without a NotificationSetting gets mail.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from evaluation.models import Submission


class Event(models.TextChoices):
    DONE = "done", "finished"
    FAILED = "failed", "failed (or finished incomplete)"
    PUBLISHED = "published", "published on its board"


class NoticeStatus(models.TextChoices):
    PENDING = "pending", "pending (first try or a retry to come)"
    SENDING = "sending", "being sent"
    SENT = "sent", "sent"
    FAILED = "failed", "failed (every try)"


class Notice(models.Model):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="notices")
    event = models.CharField(max_length=10, choices=Event.choices)
    created = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, choices=NoticeStatus.choices, default=NoticeStatus.PENDING, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="times its job handed the messages to the mail backend")
    tried_at = models.DateTimeField(null=True, blank=True, help_text="when the last try began (for a sent notice: when it went)")
    next_try = models.DateTimeField(null=True, blank=True, help_text="when reconcile sends it again after a failed try")
    recipients = models.PositiveIntegerField(default=0, help_text="messages handed to the mail backend (one per member)")
    error = models.TextField(blank=True, help_text="why the mail backend refused the last try")

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
