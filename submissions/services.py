"""Writes for teams, tokens and submissions (HackSoft-style keyword-only services)."""

from __future__ import annotations

import hashlib
import json
import math
import secrets
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlparse

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from evaluation.crypto import SecretUnreadable, encrypt
from evaluation.models import JudgeRoute, Origin, PromptEntry, Status, Submission
from evaluation.signals import submission_published
from evaluation.workqueue import BOARD_JOB, ERASE_JOB, START_JOB, enqueue, enqueued_or_unchanged
from evaluator.prompters.client import CallOutcome, PrompterClient
from tasks.models import Split, TaskPack
from tasks.selectors import prompter_tasks, prompter_view
from teams.models import ApiToken, Endpoint, Membership, Team
from teams.services import card_for, card_latest_version

from .parsing import Limits, parse_prompt_file

TOKEN_PREFIX = "atl_"


@transaction.atomic
def team_create(*, user, name: str) -> Team:
    team = Team.objects.create(name=name.strip(), slug=slugify(name)[:100] or f"team-{secrets.token_hex(3)}")
    Membership.objects.create(team=team, user=user, is_owner=True)
    return team


def token_create(*, team: Team, name: str) -> tuple[ApiToken, str]:
    """Returns the row and the token itself, which is shown once and never stored."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(team=team, name=name, prefix=token[:12], digest=ApiToken.digest_of(token))
    return row, token


def token_row(token: str) -> ApiToken | None:
    """The live token (its team selected) a bearer token is, its use recorded; None for an unknown or revoked one."""
    row = ApiToken.objects.select_related("team").filter(digest=ApiToken.digest_of(token), revoked=False).first()
    if row is not None:
        ApiToken.objects.filter(pk=row.pk).update(last_used=timezone.now())
    return row


def upload_limits() -> Limits:
    return Limits(
        max_bytes=settings.ATELIER_MAX_UPLOAD_BYTES, max_chars=settings.ATELIER_MAX_PROMPT_CHARS, max_samples=settings.ATELIER_MAX_SAMPLES
    )


class IdempotencyConflict(Exception):
    """An Idempotency-Key already used by this team for a different upload."""


def _fingerprint(pack: TaskPack, prompter: str, condition: str, data: bytes, route: str = JudgeRoute.SYNC) -> str:
    named = [pack.pk, prompter, condition, hashlib.sha256(data).hexdigest()] + ([route] if route != JudgeRoute.SYNC else [])
    return hashlib.sha256(json.dumps(named).encode()).hexdigest()


class JudgeRouteRefused(ValueError):
    """A judge route this site does not offer (ATELIER_JUDGE_BATCH): nothing was stored. The message names the field."""


def judge_route_for(judge_by_batch: bool | None) -> str:
    """The judge route a new submission takes. With ATELIER_JUDGE_BATCH=ask the team's choice (None: synchronous);
    with off or all the site's, and a choice that contradicts it is refused rather than quietly ignored."""
    mode = settings.ATELIER_JUDGE_BATCH
    if mode == "ask":
        return JudgeRoute.BATCH if judge_by_batch else JudgeRoute.SYNC
    route = JudgeRoute.BATCH if mode == "all" else JudgeRoute.SYNC
    if judge_by_batch is not None and judge_by_batch != (route == JudgeRoute.BATCH):
        offered = "judges every submission by batch" if mode == "all" else "does not offer the batch route"
        raise JudgeRouteRefused(f"judge by batch: this site {offered} (ATELIER_JUDGE_BATCH={mode}); leave the field out")
    return route


def _replay(team: Team, key: str, fingerprint: str) -> Submission | None:
    """The submission an earlier request with this key created, if any (a different request with it is a conflict)."""
    earlier = Submission.objects.filter(team=team, idempotency_key=key).first() if key else None
    if earlier is not None and earlier.request_fingerprint != fingerprint:
        raise IdempotencyConflict(f"Idempotency-Key {key!r} was already used for a different upload (submission #{earlier.pk})")
    return earlier


def submission_create(
    *,
    team: Team,
    pack: TaskPack,
    prompter: str,
    filename: str,
    data: bytes,
    condition: str = "",
    is_baseline: bool = False,
    idempotency_key: str = "",
    judge_by_batch: bool | None = None,
) -> Submission:
    """Parse the file (raises PromptFileError listing every bad line), then store all prompts and enqueue the start
    in one step: if the work queue cannot be reached, nothing is stored and QueueUnavailable is raised. With an
    idempotency key, a retried upload returns the submission the first one created. `judge_by_batch`: the team's
    choice of judge route where the site asks (judge_route_for; JudgeRouteRefused where the site does not offer it)."""
    route = judge_route_for(judge_by_batch)
    fingerprint = _fingerprint(pack, prompter, condition, data, route)
    earlier = _replay(team, idempotency_key, fingerprint)
    if earlier is not None:
        return earlier
    tasks = {t.task_id: t for t in pack.tasks.all()}
    rows = parse_prompt_file(filename, data, set(tasks), upload_limits())
    submission = Submission(
        team=team,
        pack=pack,
        prompter=prompter,
        condition=condition,
        source_name=_safe_name(filename),
        is_baseline=is_baseline,
        idempotency_key=idempotency_key,
        request_fingerprint=fingerprint if idempotency_key else "",
        judge_route=route,
    )
    try:
        with enqueued_or_unchanged():
            if not is_baseline:
                daily_cap_check(team)  # the team's row stays locked until this commits: the count and the insert are one step
            submission.pack_revision = _revision_now(pack)
            submission.card = card_for(team=team, name=prompter, kind="rule" if is_baseline else "")
            submission.save()
            PromptEntry.objects.bulk_create(
                PromptEntry(submission=submission, task=tasks[r.task_id], sample_index=r.sample, text=r.prompt, line=r.line) for r in rows
            )
            enqueue(START_JOB, submission.pk)  # sent once the rows are committed
    except (IntegrityError, CapReached):
        if idempotency_key and (earlier := _replay(team, idempotency_key, fingerprint)) is not None:
            return earlier  # the same request, retried while the first was being stored
        raise
    return submission


def _revision_now(pack: TaskPack) -> int:
    """The pack's revision as committed now, read after its tasks were: a reload never deletes a task, so every task the
    upload names is part of it, and the submission is judged against that revision's content (tasks.selectors.task_at)."""
    return TaskPack.objects.values_list("revision", flat=True).get(pk=pack.pk)


class CapReached(ValueError):
    """The team's daily submission cap or board selection limit: nothing was stored or changed. `retry_after`: the
    seconds until the daily cap lets the next submission through (None for the board selection limit)."""

    def __init__(self, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after


def daily_cap_check(team: Team) -> None:
    """CapReached when the team has made ATELIER_DAILY_SUBMISSIONS submissions in the last 24 hours. Called inside the
    transaction that stores a submission, it locks the team's row until that transaction ends, so one team's concurrent
    submissions count and insert one at a time (counting alone let 12 at once through a cap of 10: issue 41). On SQLite
    the lock is the database's own: every transaction takes the write lock when it begins (IMMEDIATE, settings.py)."""
    cap = settings.ATELIER_DAILY_SUBMISSIONS
    if not cap:
        return
    since = timezone.now() - timedelta(days=1)
    counted = Submission.objects.filter(team=team, created__gte=since).exclude(status__in=[Status.FAILED, Status.CANCELLED])
    with transaction.atomic():  # outside a transaction (a check alone) the lock lasts for the count
        Team.objects.select_for_update(no_key=True).get(pk=team.pk)
        over = counted.count() >= cap
    if over:
        first = counted.order_by("created").first().created + timedelta(days=1)
        raise CapReached(
            f"submissions: this team has made {cap} submissions in the last 24 hours (the cap; failed and cancelled runs do not count); the next is possible after {first:%Y-%m-%d %H:%M} UTC",
            retry_after=max(1, math.ceil((first - timezone.now()).total_seconds())),
        )


def entry_select(*, submission: Submission) -> None:
    """The team shows a finished entry on its board: at most ATELIER_BOARD_SELECTION of its entries per board.
    QueueUnavailable: the board's rebuild could not be enqueued, and nothing changed."""
    limit = settings.ATELIER_BOARD_SELECTION
    with enqueued_or_unchanged():
        Team.objects.select_for_update().get(pk=submission.team_id)
        if submission.status != Status.DONE:
            raise CapReached("only a finished (done) submission can be shown on the board")
        shown = Submission.objects.filter(
            team=submission.team_id, pack=submission.pack_id, pack_revision=submission.pack_revision, published=True
        ).exclude(pk=submission.pk)
        if shown.count() >= limit:
            raise CapReached(f"this team already shows {limit} entries on this board (the limit); withdraw one first")
        _publish(Submission.objects.filter(pk=submission.pk))
        Submission.objects.filter(pk=submission.pk).update(withdrawn=None)
        boards_changed({(submission.pack_id, submission.pack_revision)})


def entry_withdraw(*, submission: Submission) -> None:
    """The team takes its entry off the board: it no longer ranks, the board is released without it and its earlier
    releases re-issued without its prompts and image links (leaderboard/redaction.py, after the board's rebuild), and
    its images are deleted from the media storage (the erase job); its scores, prompts and history stay for the team.
    QueueUnavailable: the board's rebuild could not be enqueued, and nothing changed."""
    with enqueued_or_unchanged():
        if Submission.objects.filter(pk=submission.pk, published=True).update(published=False, withdrawn=timezone.now()):
            boards_changed({(submission.pack_id, submission.pack_revision)})
            enqueue(ERASE_JOB, submission.pk)


def entries_erase(*, submissions) -> int:
    """Staff erasure: each submission taken off its board as its team's withdrawal takes it (one already off it too,
    say unpublished by staff), so its prompts and image links leave the board's releases and its images the media
    storage. Returns how many. QueueUnavailable: nothing changed."""
    rows = list(submissions.values_list("pk", "pack_id", "pack_revision"))
    chosen = Submission.objects.filter(pk__in=[pk for pk, _, _ in rows])
    with enqueued_or_unchanged():
        chosen.filter(withdrawn__isnull=True).update(withdrawn=timezone.now())
        chosen.update(published=False)
        boards_changed({(pack, revision) for _, pack, revision in rows})
        for pk, _, _ in rows:
            enqueue(ERASE_JOB, pk)
    return len(rows)


def _safe_name(filename: str) -> str:
    """The uploaded file's name as it can be stored: no NUL, no unpaired surrogate, at most 255 characters."""
    return filename.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")[:255]


def submissions_publish(*, submissions) -> int:
    """Publish finished submissions; unfinished ones are left as they are. Returns how many this call published
    (one already published, say by a concurrent call, is not counted again: the update only takes unpublished rows).
    QueueUnavailable: the boards' rebuilds could not be enqueued, and nothing changed."""
    done = submissions.filter(status=Status.DONE, published=False)
    boards = set(done.values_list("pack_id", "pack_revision"))
    with enqueued_or_unchanged():
        count = _publish(done)
        boards_changed(boards)
    return count


def _publish(submissions) -> int:
    """Mark unpublished submissions published, each with its card as it is now and its first publication date kept."""
    now, count = timezone.now(), 0
    for submission in submissions.filter(published=False).select_for_update():
        version = card_latest_version(submission.card_id) if submission.card_id else None
        count += Submission.objects.filter(pk=submission.pk, published=False).update(
            published=True, published_at=submission.published_at or now, card_version=version
        )
        submission_published.send(sender=Submission, submission_id=submission.pk)  # the row is locked: this call published it
    return count


def submissions_unpublish(*, submissions) -> int:
    """Take submissions off their boards; returns how many this call took off. QueueUnavailable: the boards' rebuilds
    could not be enqueued, and nothing changed."""
    shown = submissions.filter(published=True)
    boards = set(shown.values_list("pack_id", "pack_revision"))
    with enqueued_or_unchanged():
        count = shown.update(published=False)
        boards_changed(boards)
    return count


def boards_changed(boards) -> None:
    """Send each changed board's statistics to be rebuilt (after the surrounding transaction commits)."""
    for pack_id, revision in sorted(boards):
        enqueue(BOARD_JOB, pack_id, revision)


# --- endpoint prompters ------------------------------------------------------------------------------


class EndpointRefused(ValueError):
    """An endpoint or run the platform will not accept; the message names the field and the rule."""


def _check_endpoint_url(base_url: str) -> str:
    from evaluator.prompters.ssrf import UnsafeURL, check_url

    try:
        check_url(base_url, allowed=settings.ATELIER_PROMPTER_ALLOWED_HOSTS)
    except UnsafeURL as exc:
        raise EndpointRefused(f"base URL: {exc}") from None
    return base_url.rstrip("/")


def endpoint_create(*, team: Team, name: str, base_url: str, model: str, api_key: str = "", **params) -> Endpoint:
    """Register a prompter endpoint. The URL must pass the address guard; the key is stored encrypted."""
    if team.endpoints.filter(name=name.strip()).exists():
        raise EndpointRefused(f"name: this team already has an endpoint called {name.strip()!r}")
    limit = params.get("max_in_flight") or 4
    if limit > settings.ATELIER_PROMPTER_MAX_IN_FLIGHT:
        raise EndpointRefused(f"max in flight: at most {settings.ATELIER_PROMPTER_MAX_IN_FLIGHT} calls at once are allowed here")
    return Endpoint.objects.create(
        team=team,
        name=name.strip(),
        base_url=_check_endpoint_url(base_url.strip()),
        model=model.strip(),
        key_encrypted=encrypt(api_key.strip()),
        **{**{k: v for k, v in params.items() if v is not None}, "max_in_flight": limit},
    )


@dataclass(frozen=True)
class TestCall:
    task_id: str
    request: list
    outcome: CallOutcome


def endpoint_test_call(*, endpoint: Endpoint, pack: TaskPack, condition: str = "plain") -> TestCall:
    """Call the endpoint once on the pack's first public task, as round 1 of a run would; nothing is stored."""
    from evaluation.prompting import endpoint_spec
    from evaluation.runtime import conditions
    from evaluator.prompters.messages import elided, round_messages

    task = prompter_tasks(pack.tasks.filter(split=Split.DEV)).order_by("category", "task_id").first()
    if task is None:
        raise EndpointRefused(f"pack: {pack} has no public (dev-split) task a prompter can be shown")
    try:
        client = PrompterClient(endpoint_spec(endpoint))
    except SecretUnreadable as exc:
        raise EndpointRefused(f"API key: {exc}") from None
    messages = round_messages(conditions()[condition], prompter_view(task), [])
    outcome = client.call(messages, max_chars=settings.ATELIER_MAX_PROMPT_CHARS, seed=endpoint.seed)
    return TestCall(task_id=task.task_id, request=elided(messages), outcome=outcome)


def endpoint_run_create(
    *,
    team: Team,
    endpoint: Endpoint,
    pack: TaskPack,
    condition: str = "plain",
    samples: int = 1,
    temperatures: list[float] | None = None,
    rounds: int = 1,
    feedback_backend: str = "",
    call_budget: int | None = None,
    token_budget: int | None = None,
    idempotency_key: str = "",
    judge_by_batch: bool | None = None,
) -> Submission:
    """An endpoint run: the submission is stored and its start enqueued; the prompting stage makes the entries.
    `judge_by_batch` as for submission_create (a route the site does not offer: EndpointRefused naming the field)."""
    from evaluation.runtime import backend_configs, conditions

    chosen = conditions().get(condition)
    if chosen is None:
        raise EndpointRefused(f"condition: unknown condition {condition!r}; available: {', '.join(conditions())}")
    if endpoint.team_id != team.pk or endpoint.archived:
        raise EndpointRefused("endpoint: not one of this team's active endpoints")
    if not 1 <= samples <= settings.ATELIER_MAX_SAMPLES:
        raise EndpointRefused(f"samples: between 1 and {settings.ATELIER_MAX_SAMPLES}")
    if not 1 <= rounds <= settings.ATELIER_PROMPTER_MAX_ROUNDS:
        raise EndpointRefused(f"rounds: between 1 and {settings.ATELIER_PROMPTER_MAX_ROUNDS}")
    temperatures = list(temperatures or [])
    if len(temperatures) > samples or any(not 0 <= t <= 2 for t in temperatures):
        raise EndpointRefused(f"temperatures: at most one per sample ({samples}), each between 0 and 2")
    if rounds > 1 and feedback_backend not in backend_configs():
        raise EndpointRefused(f"feedback backend: choose one of {', '.join(backend_configs())} for feedback rounds")
    try:
        route = judge_route_for(judge_by_batch)
    except JudgeRouteRefused as exc:
        raise EndpointRefused(str(exc)) from None
    budget = {
        "calls": min(call_budget or settings.ATELIER_PROMPTER_MAX_CALLS, settings.ATELIER_PROMPTER_MAX_CALLS),
        "tokens": min(token_budget or settings.ATELIER_PROMPTER_MAX_TOKENS, settings.ATELIER_PROMPTER_MAX_TOKENS),
    }
    snapshot = {
        "endpoint": {"name": endpoint.name, "host": urlparse(endpoint.base_url).netloc, **endpoint.parameters()},
        "condition": chosen.label,
        "temperatures": temperatures,
        "budget": budget,
        "max_in_flight": endpoint.max_in_flight,
    }
    named = [pack.pk, endpoint.pk, condition, samples, temperatures, rounds, feedback_backend, budget]
    fingerprint = hashlib.sha256(json.dumps(named + ([route] if route != JudgeRoute.SYNC else [])).encode()).hexdigest()
    earlier = _replay(team, idempotency_key, fingerprint)
    if earlier is not None:
        return earlier
    submission = Submission(
        team=team,
        pack=pack,
        prompter=f"{endpoint.model} ({endpoint.name})",
        condition=condition,
        condition_version=chosen.version,
        origin=Origin.ENDPOINT,
        endpoint=endpoint,
        prompting=snapshot,
        samples=samples,
        rounds=rounds,
        feedback_backend=feedback_backend if rounds > 1 else "",
        source_name=f"endpoint {endpoint.name}",
        idempotency_key=idempotency_key,
        request_fingerprint=fingerprint if idempotency_key else "",
        judge_route=route,
    )
    try:
        with enqueued_or_unchanged():  # QueueUnavailable: nothing stored
            daily_cap_check(team)  # CapReached, as for uploads, counted and stored as one step
            submission.pack_revision = _revision_now(pack)
            submission.card = card_for(team=team, name=submission.prompter)
            submission.save()
            enqueue(START_JOB, submission.pk)
    except CapReached:
        if idempotency_key and (earlier := _replay(team, idempotency_key, fingerprint)) is not None:
            return earlier  # the same request, retried while the first was being stored
        raise
    return submission
