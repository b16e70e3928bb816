"""E-mail to a team's members when its submission finishes, fails or is published (Django's e-mail framework).

One event, one Notice: the row is created in its own transaction before anything is sent, and only the call that
created it sends, so a retried job, a second Publish or two workers at once mail nobody twice. A backend that refuses
the messages leaves its error on the row (and in the log); the event is not tried again.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import EmailMessage, get_connection
from django.db import IntegrityError, transaction
from django.urls import reverse
from limits import RateLimitItemPerHour

from evaluation.models import Origin, Status, Submission
from teams import ratelimit

from .links import absolute
from .models import Event, Notice, NotificationSetting

log = logging.getLogger(__name__)
UNSUBSCRIBE_SALT = "notifications.unsubscribe"

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


def notify_on_commit(submission_id: int, event: str) -> None:
    """Mail about `event` once the transaction that made it commits; a rolled-back change sends nothing. A failure
    here is logged and never undoes the change that was committed (robust)."""
    transaction.on_commit(lambda: _notify(submission_id, event), robust=True)


def _notify(submission_id: int, event: str) -> None:
    if (submission := Submission.objects.select_related("team", "pack").filter(pk=submission_id).first()) is not None:
        submission_notify(submission=submission, event=event)


def submission_notify(*, submission: Submission, event: str) -> Notice | None:
    """One message to each member of the submission's team who has an address and did not opt out; None when nobody
    is to be told (a study participant's member-less team) or the event was told already."""
    recipients = [] if submission.origin == Origin.HUMAN else recipients_for(submission)
    if not recipients:
        return None
    try:
        with transaction.atomic():
            notice = Notice.objects.create(submission=submission, event=event, recipients=len(recipients))
    except IntegrityError:
        return None  # told already
    messages = [submission_message(submission, event, user) for user in recipients]
    try:
        get_connection().send_messages(messages)
    except Exception as exc:  # noqa: BLE001 - SMTP, socket or a custom backend's error: kept on the row and logged
        Notice.objects.filter(pk=notice.pk).update(error=f"{type(exc).__name__}: {exc}"[:2000])
        log.exception("notice %s of submission %s: the mail backend refused %d messages", event, submission.pk, len(messages))
    return notice


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
