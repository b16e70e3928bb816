"""E-mail to a team's members when its submission finishes, fails or is published (Django's e-mail framework).

One event, one Notice: the row is created in the transaction that made the event (an outbox row: a rolled-back
change leaves none, a committed one always has one), and only the call that created it enqueues its job, on the
`mail` queue once that transaction commits. So no request and no pipeline job waits on the mail server, and a
second Publish or a retried job mails nobody twice. The job claims the row (pending -> sending in one UPDATE), sends,
and marks it sent; a refused try puts it back to pending with the reason and the time of the next try (RETRY_AFTER),
and reconcile sends it again then. After TRIES tries it is `failed`, with the reason, for staff (admin: Notices).

A row, not the queue, is the record, so nothing is lost: a job the queue never got (Redis down at the commit), lost
(Redis restarted) or killed mid-send is sent again by reconcile. SMTP cannot be made exactly-once: a server that
took the messages but did not answer, or a worker killed between the send and the UPDATE after it, sends them again.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import EmailMessage, get_connection
from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.urls import reverse
from django.utils import timezone
from limits import RateLimitItemPerHour

from evaluation.models import Origin, Status, Submission
from evaluation.workqueue import QueueUnavailable, enqueue, job_alive
from teams import ratelimit

from .apps import SEND_JOB
from .links import absolute
from .models import Event, Notice, NoticeStatus, NotificationSetting

log = logging.getLogger(__name__)
UNSUBSCRIBE_SALT = "notifications.unsubscribe"
# Seconds before the 2nd, 3rd and 4th try: a mail server that is down for half an hour (a restart, a full disk) still
# gets every notice. Reconcile sends a retry that is due, so the delays are rounded up to its interval.
RETRY_AFTER = (60, 300, 1800)
TRIES = len(RETRY_AFTER) + 1

# What happened, in our own words: never the submission's `error`, which may quote a remote prompter or judge.
WHAT = {
    Event.DONE: ("finished", "has finished: its scores are on its page."),
    Event.FAILED: ("failed", "failed: nothing of it can be ranked. Its page says which step stopped it."),
    Event.PUBLISHED: ("is on the leaderboard", "was published: it is now on the leaderboard of pack {pack}."),
}
INCOMPLETE = (
    "finished incomplete",
    "finished incomplete: too many of its judgements failed, so it cannot be published until staff score it again.",
)


def submission_event(submission_id: int, event: Event) -> None:
    """The signals' receiver (apps.py), in the transaction that made the event. A notice that cannot be recorded is
    logged and never undoes the change it tells of."""
    try:
        with transaction.atomic():  # a savepoint: whatever fails here rolls back this notice only
            if (submission := Submission.objects.filter(pk=submission_id).first()) is not None:
                submission_notify(submission=submission, event=event)
    except Exception:  # noqa: BLE001 - the database refused the row: the change stands, the log says what was not told
        log.exception("notice %s of submission %s not recorded", event, submission_id)


def submission_notify(*, submission: Submission, event: str) -> Notice | None:
    """The event's notice, pending, in the caller's transaction; its job goes to the mail queue once that commits.
    None when nobody is to be told (a study participant's member-less team) or the event was told already."""
    if submission.origin == Origin.HUMAN or not recipients_for(submission):
        return None
    try:
        with transaction.atomic():  # a savepoint: a notice that exists already leaves the caller's transaction intact
            notice = Notice.objects.create(submission=submission, event=event)
    except IntegrityError:
        return None  # told already
    transaction.on_commit(lambda: _send_later(notice.pk), robust=True)
    return notice


def _send_later(notice_id: int) -> None:
    """Its job to the mail queue. A queue that cannot be reached leaves the notice pending for reconcile (logged); the
    committed change never fails for it."""
    try:
        enqueue(SEND_JOB, notice_id)
    except QueueUnavailable as exc:
        log.warning("notice %s stays pending, for reconcile to send: %s", notice_id, exc)


def notice_send(*, notice_id: int) -> str:
    """One try at a notice (its job): claimed, so a notice that is sent, failed or in another job's hands is left."""
    now = timezone.now()
    pending = Notice.objects.filter(pk=notice_id, status=NoticeStatus.PENDING)
    if not pending.update(status=NoticeStatus.SENDING, attempts=F("attempts") + 1, tried_at=now, next_try=None):
        return f"notice {notice_id}: not pending, nothing sent"
    notice = Notice.objects.select_related("submission__team", "submission__pack").get(pk=notice_id)
    messages = [submission_message(notice.submission, notice.event, user) for user in recipients_for(notice.submission)]
    try:
        if messages:  # everyone may have opted out since the event
            get_connection().send_messages(messages)
    except Exception as exc:  # noqa: BLE001 - SMTP, socket or a custom backend's error: kept on the row, logged, tried again
        return _refused(notice, f"{type(exc).__name__}: {exc}"[:2000])
    Notice.objects.filter(pk=notice_id).update(status=NoticeStatus.SENT, recipients=len(messages), error="")
    return f"notice {notice_id}: {len(messages)} message(s) sent"


def _refused(notice: Notice, reason: str) -> str:
    """A try the mail backend refused: pending again until its next try is due, or failed after the last one."""
    done = Notice.objects.filter(pk=notice.pk)
    if notice.attempts >= TRIES:
        done.update(status=NoticeStatus.FAILED, error=reason)
        log.error("notice %s (%s of submission %s) failed after %d tries: %s", notice.pk, notice.event, notice.submission_id, TRIES, reason)
        return f"notice {notice.pk}: failed after {notice.attempts} tries: {reason}"
    next_try = timezone.now() + timedelta(seconds=RETRY_AFTER[notice.attempts - 1])
    done.update(status=NoticeStatus.PENDING, error=reason, next_try=next_try)
    log.warning("notice %s: try %d of %d refused, next at %s: %s", notice.pk, notice.attempts, TRIES, next_try.isoformat(), reason)
    return f"notice {notice.pk}: try {notice.attempts} of {TRIES} refused ({reason}); next at {next_try.isoformat()}"


def notices_reconcile() -> str:
    """Reconcile's check: send every notice that is owed a try and has no job behind it. A first try whose job never
    came (ATELIER_RECONCILE_AFTER after the event), a retry that is due, and a try whose job died mid-send (at least
    once: it may have gone)."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.ATELIER_RECONCILE_AFTER)
    for pk in Notice.objects.filter(status=NoticeStatus.SENDING, tried_at__lt=cutoff).values_list("pk", flat=True):
        if not job_alive(SEND_JOB, pk):
            Notice.objects.filter(pk=pk, status=NoticeStatus.SENDING).update(status=NoticeStatus.PENDING, next_try=now)
    owed = Notice.objects.filter(Q(attempts=0, created__lt=cutoff) | Q(attempts__gt=0, next_try__lte=now), status=NoticeStatus.PENDING)
    resent = [pk for pk in owed.values_list("pk", flat=True) if not job_alive(SEND_JOB, pk)]
    for pk in resent:
        _send_later(pk)
    return f"{len(resent)} notice(s) sent again"


def notices_retry(*, notices: QuerySet[Notice]) -> int:
    """Staff's "send again" of failed notices (the mail server works again): each gets TRIES tries more."""
    ids = list(notices.filter(status=NoticeStatus.FAILED).values_list("pk", flat=True))
    Notice.objects.filter(pk__in=ids, status=NoticeStatus.FAILED).update(status=NoticeStatus.PENDING, attempts=0, next_try=None)
    for pk in ids:
        transaction.on_commit(lambda pk=pk: _send_later(pk), robust=True)
    return len(ids)


def recipients_for(submission: Submission) -> list:
    """The team's active members with an e-mail address who have not turned mail off."""
    users = get_user_model().objects.filter(teams=submission.team_id, is_active=True).exclude(email="")
    return list(users.exclude(notification_setting__email_enabled=False).distinct().order_by("pk"))


def submission_message(submission: Submission, event: str, user) -> EmailMessage:
    subject, what = INCOMPLETE if event == Event.FAILED and submission.status == Status.INCOMPLETE else WHAT[Event(event)]
    unsubscribe = absolute(reverse("notifications-unsubscribe", args=[unsubscribe_token(user.pk)]))
    run = "Endpoint run" if submission.origin == Origin.ENDPOINT else "Submission"
    body = "\n".join(
        [
            f"Hello {user.get_username()},",
            "",
            f"{run} #{submission.pk} of team {one_line(submission.team.name)} (prompter {one_line(submission.prompter)}, "
            f"pack {submission.pack}) {what.format(pack=submission.pack)}",
            "",
            f"    {absolute(reverse('submission', args=[submission.pk]))}",
            "",
            "-- ",  # the signature delimiter, with its space
            f"You get this e-mail as a member of team {one_line(submission.team.name)} on the AtelierEval leaderboard.",
            f"Stop these e-mails: {unsubscribe}",
            f"Your e-mail settings: {absolute(reverse('notifications'))}",
        ]
    )
    headers = {"List-Unsubscribe": f"<{unsubscribe}>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}  # RFC 8058
    return EmailMessage(f"AtelierEval: {run.lower()} #{submission.pk} {subject}", body, to=[user.email], headers=headers)


def one_line(text: str) -> str:
    """A team's own text (team or prompter name) as one line: it cannot start lines of its own in the message."""
    return " ".join(text.split())


def unsubscribe_token(user_id: int) -> str:
    """The signed key of a mail's unsubscribe link: it only turns that user's mail off, so it never expires."""
    return signing.dumps(user_id, salt=UNSUBSCRIBE_SALT)


def unsubscribe_user(token: str) -> int | None:
    try:
        user_id = signing.loads(token, salt=UNSUBSCRIBE_SALT)
    except signing.BadSignature:
        return None
    return user_id if isinstance(user_id, int) else None


def email_enabled(user) -> bool:
    return not NotificationSetting.objects.filter(user=user, email_enabled=False).exists()


def email_setting_set(*, user_id: int, enabled: bool) -> None:
    NotificationSetting.objects.update_or_create(user_id=user_id, defaults={"email_enabled": enabled})


# An address is used only once its owner opened a link sent to it: nobody can sign up with someone else's address and
# have our mail sent there. The link carries the user, the new address and the one it replaces, so it works once and
# an old link cannot undo a later change.
ADDRESS_SALT = "notifications.address"
ADDRESS_LINK_DAYS = 3
ADDRESS_LINK_SECONDS = ADDRESS_LINK_DAYS * 24 * 3600


class AddressRefused(Exception):
    """The confirmation link is not valid, expired, or out of date; the message says which, in our words."""


class ConfirmationLimited(Exception):
    """The address was sent its hourly confirmation mail already; the message says so, in our words."""


def _per_hour() -> str:
    limit = settings.ATELIER_ADDRESS_CONFIRMATION_LIMIT
    return "one such e-mail" if limit == 1 else f"{limit} such e-mails"


def address_confirmation_send(*, user, email: str) -> bool:
    """Mail `email` a link that makes it `user`'s address. ConfirmationLimited when that address, in any case, has
    been sent ATELIER_ADDRESS_CONFIRMATION_LIMIT within the hour, whoever asked (the password reset's limiter): the
    same answer whether or not it is anyone's address. False (logged) when the mail backend refused it; that counts
    too, since a backend can fail after the message went."""
    limit = RateLimitItemPerHour(settings.ATELIER_ADDRESS_CONFIRMATION_LIMIT, namespace="address-confirmation")
    if not ratelimit.take(limit, ratelimit.address_key(email)):
        log.warning("address confirmation: the hourly limit for one address is spent; no message sent for user %s", user.pk)
        raise ConfirmationLimited(
            f"No new link was sent: a link for {email} was asked for less than an hour ago, and one address is sent at most"
            f" {_per_hour()} an hour. If you asked for it, open the link in that e-mail (it works for {ADDRESS_LINK_DAYS} days);"
            " if not, ask again in an hour."
        )
    token = signing.dumps({"u": user.pk, "e": email, "was": user.email}, salt=ADDRESS_SALT)
    link = absolute(reverse("notifications-address", args=[token]))
    body = "\n".join(
        [
            f"Hello {user.get_username()},",
            "",
            f"Open this link to use this address for your AtelierEval notifications (it works for {ADDRESS_LINK_DAYS} days):",
            "",
            f"    {link}",
            "",
            f"If you did not ask for this, ignore this e-mail: nothing changes. This address is sent at most {_per_hour()} an hour.",
        ]
    )
    try:
        EmailMessage("AtelierEval: confirm your e-mail address", body, to=[email]).send()
    except Exception:  # noqa: BLE001 - SMTP, socket or a custom backend's error: logged, and the caller says it failed
        log.exception("the mail backend refused the address confirmation for user %s", user.pk)
        return False
    return True


def address_change(*, user, email: str) -> tuple[int, str]:
    """Remove `user`'s address at once (an empty `email`); a new one is mailed a link first (address_confirmation_send).
    Returns what to tell the user: a django.contrib.messages level and the text (the settings page, sign-up)."""
    if not email:
        address_set(user_id=user.pk, email="")
        return messages.SUCCESS, "Removed: your account has no e-mail address, so you get no notifications."
    if email == user.email:
        return messages.INFO, f"{email} is already your address."
    try:
        sent = address_confirmation_send(user=user, email=email)
    except ConfirmationLimited as limited:
        return messages.WARNING, str(limited)
    if not sent:
        return messages.ERROR, "The confirmation e-mail could not be sent; nothing changed. Try again in an hour."
    return messages.SUCCESS, f"We sent a link to {email}: open it to use that address (it works for {ADDRESS_LINK_DAYS} days)."


def address_confirmed(token: str) -> tuple[int, str]:
    """The user and address a confirmation link names, if it is still good. AddressRefused otherwise."""
    try:
        found = signing.loads(token, salt=ADDRESS_SALT, max_age=ADDRESS_LINK_SECONDS)
    except signing.SignatureExpired:
        raise AddressRefused(
            f"This link has expired (links work for {ADDRESS_LINK_DAYS} days). Ask for a new one on your e-mail settings."
        ) from None
    except signing.BadSignature:
        raise AddressRefused("This link is not valid (it may have been cut when it was copied).") from None
    user = get_user_model().objects.filter(pk=found.get("u"), is_active=True).first()
    if user is None or user.email != found.get("was"):
        raise AddressRefused("This link is out of date: the account's address changed after it was sent.")
    return user.pk, found["e"]


def address_set(*, user_id: int, email: str) -> None:
    get_user_model().objects.filter(pk=user_id).update(email=email)
