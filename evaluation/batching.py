"""The judge's batch route (ATELIER_JUDGE_BATCH=all): a submission's judge requests go out as batch files.

units.queue_judgements marks each planned judgement `by_batch` instead of sending its job. The scheduler's reconcile
calls `batch_check`: once a submission has no render pending, a send job builds every waiting judgement's request
body exactly as the synchronous route would (judging.judge_unit with a route that keeps the body: skips, metrics,
gates and reused judgements settle as they always do) and sends them in files within the provider's limits; open
batches are polled, and an ended one gets a collect job. Collecting passes each reply through judge_unit again, with
the reply as the answer to its first request: the same parsing, checks and storage as a synchronous reply. Lines
that failed or are missing (a failed, expired or cancelled batch) are sent again as ATELIER_JUDGE_BATCH_RETRY says:
in the next batch (after MAX_BATCH_TRIES batches, synchronously) or synchronously. Only a judgement still pending in
the batch being collected takes a reply, so nothing is judged twice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import openai
from django.conf import settings
from django.db.models import F
from django.utils import timezone

from evaluation.models import JudgeBatch, Judgement, Render, UnitStatus
from evaluator.failures import class_name, exception_reason, remote_text
from evaluator.judge import batch as provider

from . import runtime
from .judging import Run, judge_fail, judge_unit
from .workqueue import JUDGE_BATCH_COLLECT_JOB, JUDGE_BATCH_SEND_JOB, JUDGE_JOB, enqueue, job_alive

log = logging.getLogger(__name__)
MAX_BATCH_TRIES = 3  # a line that failed in this many batches is judged synchronously (a request the provider refuses)


def custom_id(judgement: Judgement) -> str:
    """The judgement's natural key (entry or render, skill, judge): what its batch line is called."""
    side = f"render:{judgement.render_id}" if judgement.render_id else f"entry:{judgement.entry_id}"
    return f"{side}/{judgement.skill}/{judgement.judge_id}/{judgement.judge_version}"


def batch_check() -> str:
    """The scheduler's part: send what waits, poll what is open, collect what ended. Says what it did ("" if nothing).
    With the route turned off since, what waits is judged synchronously and open batches are still read."""
    waiting = Judgement.objects.filter(status=UnitStatus.PENDING, by_batch=True, batch__isnull=True)
    if settings.ATELIER_JUDGE_BATCH == "off":
        _judge_now(waiting)
    sent = 0
    for submission_id in set(waiting.values_list("submission_id", flat=True)):
        rendering = Render.objects.filter(entry__submission_id=submission_id, status=UnitStatus.PENDING).exists()
        if not rendering and not job_alive(JUDGE_BATCH_SEND_JOB, submission_id):
            enqueue(JUDGE_BATCH_SEND_JOB, submission_id)
            sent += 1
    open_batches = JudgeBatch.objects.filter(collected=False)
    for batch in open_batches.exclude(status__in=provider.ENDED):
        _poll(batch)
    ended = [
        pk
        for pk in open_batches.filter(status__in=provider.ENDED).values_list("pk", flat=True)
        if not job_alive(JUDGE_BATCH_COLLECT_JOB, pk)
    ]
    for pk in ended:
        enqueue(JUDGE_BATCH_COLLECT_JOB, pk)
    return f"judge batches: {sent} submission(s) sent, {len(ended)} collected" if sent or ended else ""


def _poll(batch: JudgeBatch) -> None:
    try:
        state = provider.state(_client(), batch.provider_id)
    except openai.OpenAIError as exc:  # polled again next time; the row says why it is behind
        JudgeBatch.objects.filter(pk=batch.pk).update(error=f"could not poll: {exception_reason(exc)}")
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
        error="",
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
    try:
        file_id, provider_id = provider.send(_client(), chunk, {"submission": str(submission_id)})
        error = ""
    except openai.OpenAIError as exc:
        file_id, provider_id, error = "", "", f"could not be sent: {exception_reason(exc)}"
        log.warning("judge batch of submission %s could not be sent: %s", submission_id, exc)
    batch = JudgeBatch.objects.create(
        submission_id=submission_id,
        provider_id=provider_id,
        file_id=file_id,
        status="failed" if error else "validating",
        total=len(lines),
        lines=lines,
        error=error,
        finished=timezone.now() if error else None,
    )
    Judgement.objects.filter(pk__in=lines.values(), status=UnitStatus.PENDING).update(batch=batch, batch_tries=F("batch_tries") + 1)
    if error:
        batch_collect(batch.pk)


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
