"""The judge's batch route (Submission.judge_route = batch: ATELIER_JUDGE_BATCH=all, or the team's choice with `ask`):
a submission's judge requests go out as batch files.

units.queue_judgements marks each planned judgement `by_batch` instead of sending its job. The scheduler's reconcile
calls `batch_check`: once a submission has no render pending, a send job builds every waiting judgement's request
body exactly as the synchronous route would (judging.judge_unit with a route that keeps the body: skips, metrics,
gates and reused judgements settle as they always do) and sends them in files within the provider's limits; open
batches are polled, and an ended one gets a collect job. Collecting passes each reply through judge_unit again, with
the reply as the answer to its first request: the same parsing, checks and storage as a synchronous reply. Lines
that failed or are missing (a failed, expired or cancelled batch) are sent again as ATELIER_JUDGE_BATCH_RETRY says:
in the next batch (after MAX_BATCH_TRIES batches, synchronously) or synchronously. Only a judgement still pending in
the batch being collected takes a reply, so nothing is judged twice.

Nothing is sent that no row knows of: a file's row is stored ("sending", with a random send key and its judgements)
before the upload, and the batch is started with that key in its metadata and no client retry. A send job that stops
between the provider's answer and the row's update leaves the row "sending"; once it is older than the reconcile grace
and its job is gone, the check looks the key up in the provider's batch list: found, the row takes that batch and it
is polled as any other (nothing sent again); not found, the provider never started it, so the row fails and its lines
go in the next file (an uploaded file is deleted). A cancelled submission's open batches are cancelled at the provider;
a refusal is logged, kept on the row and asked again at the next check.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import openai
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from evaluation.models import JudgeBatch, Judgement, Render, Status, UnitStatus
from evaluator.failures import class_name, exception_reason, remote_text
from evaluator.judge import batch as provider

from . import runtime
from .judging import Run, judge_fail, judge_unit
from .workqueue import JUDGE_BATCH_COLLECT_JOB, JUDGE_BATCH_SEND_JOB, JUDGE_JOB, enqueue, job_alive

log = logging.getLogger(__name__)
MAX_BATCH_TRIES = 3  # a line that failed in this many batches is judged synchronously (a request the provider refuses)
SENDING = "sending"  # the row is stored, the provider's batch not known to exist (yet)
POLL_ERROR = "could not poll"  # how a row's error starts while the provider could not be asked for its progress
CLOCK_SLACK = timedelta(hours=1)  # the provider's clock against ours, when its batch list is walked back to a row's birth


def custom_id(judgement: Judgement) -> str:
    """The judgement's natural key (entry or render, skill, judge): what its batch line is called."""
    side = f"render:{judgement.render_id}" if judgement.render_id else f"entry:{judgement.entry_id}"
    return f"{side}/{judgement.skill}/{judgement.judge_id}/{judgement.judge_version}"


def batch_check(cutoff: datetime | None = None) -> str:
    """The scheduler's part: send what waits, recover rows left "sending" since before `cutoff` (default: the reconcile
    grace), cancel a cancelled submission's batches, poll what is open, collect what ended. Says what it did ("" if
    nothing). With the route turned off since, what waits is judged synchronously and open batches are still read."""
    cutoff = cutoff or timezone.now() - timedelta(seconds=settings.ATELIER_RECONCILE_AFTER)
    waiting = Judgement.objects.filter(status=UnitStatus.PENDING, by_batch=True, batch__isnull=True)
    if settings.ATELIER_JUDGE_BATCH == "off":
        _judge_now(waiting)
    sent = 0
    for submission_id in set(waiting.values_list("submission_id", flat=True)):
        rendering = Render.objects.filter(entry__submission_id=submission_id, status=UnitStatus.PENDING).exists()
        if not rendering and not job_alive(JUDGE_BATCH_SEND_JOB, submission_id):
            enqueue(JUDGE_BATCH_SEND_JOB, submission_id)
            sent += 1
    said = [_recover(cutoff), _cancel_cancelled()]
    open_batches = JudgeBatch.objects.filter(collected=False).exclude(status=SENDING)
    for batch in open_batches.exclude(status__in=provider.ENDED):
        _poll(batch)
    ended = [
        pk
        for pk in open_batches.filter(status__in=provider.ENDED).values_list("pk", flat=True)
        if not job_alive(JUDGE_BATCH_COLLECT_JOB, pk)
    ]
    for pk in ended:
        enqueue(JUDGE_BATCH_COLLECT_JOB, pk)
    said = [f"judge batches: {sent} submission(s) sent, {len(ended)} collected" if sent or ended else "", *said]
    return "; ".join(filter(None, said))


def _poll(batch: JudgeBatch) -> None:
    try:
        state = provider.state(_client(), batch.provider_id)
    except openai.OpenAIError as exc:  # polled again next time; the row says why it is behind
        JudgeBatch.objects.filter(pk=batch.pk).update(error=f"{POLL_ERROR}: {exception_reason(exc)}")
        log.warning("judge batch %s could not be polled: %s", batch.provider_id, exc)
        return
    finished = timezone.now() if state.status in provider.ENDED else None
    JudgeBatch.objects.filter(pk=batch.pk).update(
        status=state.status,
        total=state.total or batch.total,
        completed=state.completed,
        failed=state.failed,
        output_file_id=state.output_file_id,
        error_file_id=state.error_file_id,
        error="" if batch.error.startswith(POLL_ERROR) else batch.error,  # a poll that failed before is over; a note stays
        finished=finished,
    )


def batch_send(submission_id: int) -> None:
    """Build the waiting judgements' request bodies and send them, file by file, as batches."""
    waiting = Judgement.objects.filter(submission_id=submission_id, status=UnitStatus.PENDING, by_batch=True, batch__isnull=True)
    carried: dict[str, int] = {}
    for chunk in provider.files(_lines(list(waiting.values_list("pk", flat=True)), carried)):
        _send(submission_id, {cid: carried[cid] for cid, _ in chunk}, chunk)


def _lines(pks: list[int], carried: dict[str, int]) -> Iterator[tuple[str, bytes]]:
    """Each judgement through the synchronous route's own steps, up to the request it would send (kept as a line)."""
    for pk in pks:
        found: list[tuple[str, bytes]] = []
        _judge_one(pk, _kept_in(found))
        for key, data in found:
            carried[key] = pk
            yield key, data


def _kept_in(found: list[tuple[str, bytes]]) -> Run:
    """The route that keeps the first request's body as a batch line instead of sending it (None: nothing stored)."""

    def keep(judge: Any, judgement: Judgement, inputs: tuple, extras: dict) -> Any:
        body = judge.batch_body(*inputs, **extras)
        if not isinstance(body, dict):
            return body  # a skip or a metric: no request, stored now
        found.append((custom_id(judgement), provider.line(custom_id(judgement), body)))
        return None

    return keep


def _answered(reply: dict) -> Run:
    """The route whose first request a batch line answered already."""
    return lambda judge, judgement, inputs, extras: judge.run_reply(*inputs, reply=reply, **extras)


def _judge_one(pk: int, run: Run) -> None:
    """judge_unit on one judgement of many: one that raises fails alone, as its judge job would (jobs.unit_job)."""
    try:
        judge_unit(pk, run)
    except Exception as exc:
        log.exception("judgement %s raised on the batch route", pk)
        judge_fail(pk, f"job error ({class_name(exc)})", remote_text(exc))


def _send(submission_id: int, lines: dict[str, int], chunk: list[tuple[str, bytes]]) -> None:
    """The row and its judgements first, then the upload and the batch, each step recorded as it is known to be done."""
    with transaction.atomic():
        batch = JudgeBatch.objects.create(
            submission_id=submission_id, status=SENDING, send_key=secrets.token_hex(16), total=len(lines), lines=lines
        )
        Judgement.objects.filter(pk__in=lines.values(), status=UnitStatus.PENDING).update(batch=batch, batch_tries=F("batch_tries") + 1)
    client = _client()
    try:
        file_id = provider.upload(client, chunk)
    except openai.OpenAIError as exc:  # no batch can exist without its file
        _unsent(batch, f"could not be sent: {exception_reason(exc)}")
        return
    JudgeBatch.objects.filter(pk=batch.pk).update(file_id=file_id)
    try:
        provider_id = provider.start(client, file_id, {"submission": str(submission_id), provider.KEY: batch.send_key})
    except openai.OpenAIError as exc:
        if isinstance(exc, openai.APIStatusError) and exc.status_code < 500:  # refused: it was not started
            _unsent(batch, f"could not be sent: {exception_reason(exc)}", file_id)
            return
        # No answer, or the provider's own error: it may have started. The check finds it by its key, or sends again.
        JudgeBatch.objects.filter(pk=batch.pk).update(error=f"not known to have started ({exception_reason(exc)}): looked up by its key")
        log.warning("judge batch %s of submission %s: not known to have started: %s", batch.pk, submission_id, exc)
        return
    if not JudgeBatch.objects.filter(pk=batch.pk, status=SENDING).update(provider_id=provider_id, status="validating"):
        _raced(batch.pk, provider_id)


def _raced(pk: int, provider_id: str) -> None:
    """The check took this row for one whose send job had stopped (it was slower than the reconcile grace): a batch it
    found is the one just started; if it sent the lines again instead, the batch just started is a second one."""
    row = JudgeBatch.objects.get(pk=pk)
    if row.provider_id != provider_id:
        said = _cancel(_client(), provider_id)[1]
        log.error("judge batch %s: started as %s after the check gave it up; that batch %s", pk, provider_id, said)
        JudgeBatch.objects.filter(pk=pk).update(error=f"{row.error}; started late as {provider_id}, which {said}")


def _unsent(batch: JudgeBatch, error: str, file_id: str = "") -> None:
    """The batch was never started: the row fails with why, its lines go in the next file (or synchronously)."""
    log.warning("judge batch %s of submission %s %s", batch.pk, batch.submission_id, error)
    if file_id:
        error += _deleted(file_id)
    JudgeBatch.objects.filter(pk=batch.pk).update(status="failed", error=error, finished=timezone.now())
    batch_collect(batch.pk)


def _deleted(file_id: str) -> str:
    """Delete an input file no batch will read; what to add to the row's error when the provider did not."""
    try:
        provider.delete_file(_client(), file_id)
    except openai.OpenAIError as exc:
        log.warning("judge batch file %s could not be deleted: %s", file_id, exc)
        return f"; its file {file_id} could not be deleted: {exception_reason(exc)}"
    return ""


def _recover(cutoff: datetime) -> str:
    """Rows left "sending" since before `cutoff` by a send job that is gone: each takes the batch the provider started
    under its key, or, when there is none, fails and has its lines sent again."""
    stale = [
        b for b in JudgeBatch.objects.filter(status=SENDING, created__lt=cutoff) if not job_alive(JUDGE_BATCH_SEND_JOB, b.submission_id)
    ]
    if not stale:
        return ""
    client = _client()
    try:
        found = provider.find(client, {b.send_key for b in stale}, (min(b.created for b in stale) - CLOCK_SLACK).timestamp())
    except openai.OpenAIError as exc:  # looked up again next time
        JudgeBatch.objects.filter(pk__in=[b.pk for b in stale]).update(error=f"could not be looked up: {exception_reason(exc)}")
        log.warning("judge batches left sending could not be looked up: %s", exc)
        return ""
    adopted = lost = 0
    for batch in stale:
        first, *others = found.get(batch.send_key) or [None]
        if first is None:
            note = "never started at the provider: its send job stopped first"
            if JudgeBatch.objects.filter(pk=batch.pk, status=SENDING).update(status="failed", error=note, finished=timezone.now()):
                _unsent(batch, note, batch.file_id)
                lost += 1
            continue
        note = "found at the provider by its key: its send job stopped before recording it"
        for other in others:  # started twice under one key: only the first is read
            note += f"; {other.batch_id} started too, " + _cancel(client, other.batch_id)[1]
        updated = JudgeBatch.objects.filter(pk=batch.pk, status=SENDING).update(  # polled next, output files and all
            provider_id=first.batch_id, file_id=first.file_id, status="validating", error=note
        )
        adopted += updated
        log.warning("judge batch %s of submission %s: %s (%s)", batch.pk, batch.submission_id, note, first.batch_id)
    return f"judge batches left sending: {adopted} found at the provider, {lost} never started (sent again)"


def _cancel(client: openai.OpenAI, batch_id: str) -> tuple[bool, str]:
    """Ask the provider to cancel a batch: (whether it took the request, what happened in words)."""
    try:
        status = provider.cancel(client, batch_id)
    except openai.OpenAIError as exc:
        log.error("judge batch %s could not be cancelled: %s", batch_id, exc)
        return False, f"could not be cancelled: {exception_reason(exc)}; the provider said: {remote_text(exc)[:500]}"
    return True, f"cancelled ({status})"


def _cancel_cancelled() -> str:
    """Open batches of cancelled submissions are cancelled at the provider (lines it has not run are not billed). A
    refusal is logged and kept on the row (cancel_error), and the cancel asked again at the next check."""
    rows = JudgeBatch.objects.filter(collected=False, cancel_requested__isnull=True, submission__status=Status.CANCELLED)
    rows = list(rows.exclude(status__in=(SENDING, "cancelling", *provider.ENDED)))
    if not rows:
        return ""
    client, failed = _client(), 0
    for batch in rows:
        ok, said = _cancel(client, batch.provider_id)
        if ok:
            JudgeBatch.objects.filter(pk=batch.pk).update(cancel_requested=timezone.now(), cancel_error="", status="cancelling")
        else:
            JudgeBatch.objects.filter(pk=batch.pk).update(cancel_error=said)
            failed += 1
    return f"judge batches of cancelled submissions: {len(rows) - failed} cancelled, {failed} could not be (asked again next time)"


def batch_collect(batch_id: int) -> None:
    """Store each reply of an ended batch as the synchronous route would, then send its missing lines again."""
    batch = JudgeBatch.objects.get(pk=batch_id)
    if batch.collected:
        return
    found = provider.results(_client(), batch.output_file_id, batch.error_file_id) if batch.provider_id else {}
    carried = Judgement.objects.filter(batch=batch, status=UnitStatus.PENDING)
    for pk in carried.values_list("pk", flat=True):
        line = found.get(_custom_ids(batch).get(pk, ""))
        if line is not None and line.body is not None:
            _judge_one(pk, _answered(line.body))
    errors = [line.error for line in found.values() if line.body is None]
    _retry(batch, errors)


def _retry(batch: JudgeBatch, errors: list[str]) -> None:
    """The batch's judgements still pending (failed, expired, cancelled or missing lines) are sent again."""
    missing = Judgement.objects.filter(batch=batch, status=UnitStatus.PENDING)
    count = missing.count()
    sync = missing if settings.ATELIER_JUDGE_BATCH_RETRY == "sync" else missing.filter(batch_tries__gte=MAX_BATCH_TRIES)
    sync_pks = _judge_now(sync)
    missing.update(batch=None, started_at=None)  # the rest wait for the next batch file
    notes = [batch.error] if batch.error else []
    if count:
        notes.append(f"{count} line(s) sent again ({len(sync_pks)} synchronously)" + (f"; first error: {errors[0]}" if errors else ""))
        log.warning("judge batch %s (%s): %s", batch.provider_id or batch.pk, batch.status, notes[-1])
    JudgeBatch.objects.filter(pk=batch.pk).update(collected=True, error="; ".join(notes))


def _judge_now(judgements) -> list[int]:
    """These judgements leave the batch route: each gets its synchronous judge job."""
    pks = list(judgements.values_list("pk", flat=True))
    Judgement.objects.filter(pk__in=pks).update(by_batch=False, batch=None, queued_at=timezone.now(), started_at=None)
    for pk in pks:
        enqueue(JUDGE_JOB, pk)
    return pks


def _custom_ids(batch: JudgeBatch) -> dict[int, str]:
    return {pk: cid for cid, pk in batch.lines.items()}


def _client() -> openai.OpenAI:
    return provider.batch_client(runtime.judge_config())
