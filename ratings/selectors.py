"""Reads for the experts' queue."""

from __future__ import annotations

from collections import Counter

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from tasks.models import Split

from .models import RatingAssignment
from .services import sees_hidden


def assignments_of(user: AbstractBaseUser) -> QuerySet[RatingAssignment]:
    """The expert's items they may see: an item of a hidden (test-split) task only with HIDDEN_PERMISSION, even one
    queued before it was required or kept after the permission was taken away."""
    rows = RatingAssignment.objects.filter(rater=user)
    return rows if sees_hidden(user) else rows.filter(entry__task__split=Split.DEV)


def next_assignment(user: AbstractBaseUser) -> RatingAssignment | None:
    """The expert's oldest open item."""
    rows = assignments_of(user).filter(done_at=None).select_related("entry__task", "render")
    return rows.order_by("created", "pk").first()


def progress(user: AbstractBaseUser) -> tuple[int, int]:
    """(done, assigned) for one expert."""
    rows = assignments_of(user)
    return rows.exclude(done_at=None).count(), rows.count()


def queue_summary(submissions: QuerySet) -> dict[str, Counter]:
    """Items, assignments and done assignments per pool, for the queue of these submissions."""
    rows = list(RatingAssignment.objects.filter(entry__submission__in=submissions).values_list("pool", "entry_id", "done_at"))
    return {
        "items": Counter(pool for pool, _ in {(pool, entry) for pool, entry, _ in rows}),
        "assignments": Counter(pool for pool, _, _ in rows),
        "done": Counter(pool for pool, _, done in rows if done is not None),
    }
