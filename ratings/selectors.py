"""Reads for the experts' queue."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Q, QuerySet

from evaluation.models import Submission, UnitStatus
from tasks.models import Split

from .models import RatingAssignment
from .services import RATE_PERMISSION, sees_hidden


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


def _holding(permission: str) -> Q:
    app_label, codename = permission.split(".")
    where = {"permissions__content_type__app_label": app_label, "permissions__codename": codename}
    return Q(**{f"groups__{k}": v for k, v in where.items()}) | Q(**{f"user_{k}": v for k, v in where.items()})


def expert_raters() -> QuerySet:
    """Active users who may rate (RATE_PERMISSION, from a group, their own permissions or superuser status)."""
    users = get_user_model().objects.filter(_holding(RATE_PERMISSION) | Q(is_superuser=True), is_active=True)
    return get_user_model().objects.filter(pk__in=users.values("pk")).order_by("username")


def rateable_submissions() -> QuerySet[Submission]:
    """Submissions with a rendered image to rate, newest first."""
    rendered = Submission.objects.filter(entries__renders__status=UnitStatus.OK).exclude(entries__renders__image="")
    return Submission.objects.filter(pk__in=rendered.values("pk")).select_related("team", "pack").order_by("-created")


@dataclass(frozen=True)
class RaterLoad:
    user: AbstractBaseUser
    hidden: bool
    open: int
    done: int


def rater_loads() -> list[RaterLoad]:
    """Every expert rater with their role and their items open and done (hidden ones included, whatever they may see now)."""
    counts = RatingAssignment.objects.values("rater_id").annotate(open=Count("pk", filter=Q(done_at=None)), done=Count("done_at"))
    by_rater = {row["rater_id"]: row for row in counts}
    return [
        RaterLoad(u, sees_hidden(u), by_rater.get(u.pk, {}).get("open", 0), by_rater.get(u.pk, {}).get("done", 0)) for u in expert_raters()
    ]
