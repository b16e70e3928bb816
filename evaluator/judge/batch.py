"""The judge's batch route: OpenAI's files and batches API, with no Django.

Each line of a batch file carries the body the synchronous route would send (openai_judge.request_body), so the same
replies give the same judgements. A file holds at most MAX_REQUESTS lines and MAX_BYTES bytes (the provider's limits);
`files` splits a submission's lines to fit. Batch requests go through their own client, which takes nothing from the
shared synchronous budget (budget.py): the provider counts batch requests apart.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import openai

from .config import JudgeConfig

log = logging.getLogger(__name__)

ENDPOINT = "/v1/chat/completions"
WINDOW = "24h"
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024
OPEN = ("validating", "in_progress", "finalizing", "cancelling")  # the provider is still working on it
ENDED = ("completed", "failed", "expired", "cancelled")  # its output (what there is of it) can be read
KEY = "atelier_batch"  # the metadata entry that names our row's send key: how a batch whose id we lost is found again


@dataclass(frozen=True)
class BatchState:
    status: str
    total: int
    completed: int
    failed: int
    output_file_id: str
    error_file_id: str


@dataclass(frozen=True)
class LineResult:
    """One output or error line: the chat-completion body of a 200, else why there is none (our words and theirs)."""

    body: dict | None
    error: str


def batch_client(config: JudgeConfig) -> openai.OpenAI:
    """The endpoint's client without the shared budget's hooks: batch requests do not spend the synchronous budget."""
    return openai.OpenAI(base_url=config.base_url, api_key=config.api_key or "none", timeout=config.timeout, max_retries=config.max_retries)


def line(custom_id: str, body: dict[str, Any]) -> bytes:
    return (json.dumps({"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}) + "\n").encode()


def files(
    lines: Iterable[tuple[str, bytes]], max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES
) -> Iterator[list[tuple[str, bytes]]]:
    """The (custom id, line) pairs cut into files within the limits, in order. A line over max_bytes alone still goes
    in a file of its own (the provider then refuses that file, and its lines are retried as the setting says)."""
    chunk: list[tuple[str, bytes]] = []
    size = 0
    for custom_id, data in lines:
        if chunk and (len(chunk) == max_requests or size + len(data) > max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append((custom_id, data))
        size += len(data)
    if chunk:
        yield chunk


def upload(client: openai.OpenAI, chunk: list[tuple[str, bytes]]) -> str:
    """Upload one batch file: its id. A retried upload at worst leaves a second file unused: nothing is judged."""
    return client.files.create(file=("judge-batch.jsonl", b"".join(data for _, data in chunk)), purpose="batch").id


def start(client: openai.OpenAI, file_id: str, metadata: dict[str, str]) -> str:
    """Start the uploaded file's batch: its id. Never retried by the client: a retry after a lost answer would start
    (and bill) a second batch of the same lines; a caller that cannot tell whether it started finds it by its KEY."""
    return (
        client.with_options(max_retries=0)
        .batches.create(input_file_id=file_id, endpoint=ENDPOINT, completion_window=WINDOW, metadata=metadata)
        .id
    )


@dataclass(frozen=True)
class Found:
    """A batch found at the provider by the KEY in its metadata."""

    batch_id: str
    file_id: str


def find(client: openai.OpenAI, keys: set[str], since: float) -> dict[str, list[Found]]:
    """The provider's batches whose metadata carries one of `keys` (KEY), oldest first, among those created from
    `since` (a Unix time) on: the list comes newest first, so the walk stops at the first one older than that."""
    found: dict[str, list[Found]] = {}
    for batch in client.batches.list(limit=100):
        if batch.created_at < since:
            break
        key = (batch.metadata or {}).get(KEY)
        if key in keys:
            found.setdefault(key, []).insert(0, Found(batch.id, batch.input_file_id))
    return found


def cancel(client: openai.OpenAI, batch_id: str) -> str:
    """Ask the provider to stop a batch (lines it has not run are not billed): its status as the provider answers."""
    return str(client.batches.cancel(batch_id).status)


def delete_file(client: openai.OpenAI, file_id: str) -> None:
    client.files.delete(file_id)


def state(client: openai.OpenAI, batch_id: str) -> BatchState:
    batch = client.batches.retrieve(batch_id)
    counts = batch.request_counts
    return BatchState(
        status=str(batch.status),
        total=getattr(counts, "total", 0) or 0,
        completed=getattr(counts, "completed", 0) or 0,
        failed=getattr(counts, "failed", 0) or 0,
        output_file_id=batch.output_file_id or "",
        error_file_id=batch.error_file_id or "",
    )


def results(client: openai.OpenAI, *file_ids: str) -> dict[str, LineResult]:
    """Every line of the output and error files, by custom id. A line that cannot be read is skipped (its unit is then
    missing, and retried); the reply text itself is untrusted and read by the judge's own checks."""
    found: dict[str, LineResult] = {}
    for file_id in filter(None, file_ids):
        unread = 0
        for text in filter(str.strip, client.files.content(file_id).text.splitlines()):
            parsed = _line(text)
            if parsed is None:
                unread += 1
            else:
                found[parsed[0]] = parsed[1]
        if unread:
            log.warning(
                "judge batch file %s: %d line(s) not JSON or without a custom_id, skipped (their units are retried)", file_id, unread
            )
    return found


def _line(text: str) -> tuple[str, LineResult] | None:
    try:
        row = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(row, dict) or not isinstance(row.get("custom_id"), str):
        return None
    response = row.get("response") if isinstance(row.get("response"), dict) else {}
    if response.get("status_code") == 200 and isinstance(response.get("body"), dict):
        return row["custom_id"], LineResult(response["body"], "")
    error = row.get("error") or response.get("body") or {}
    message = error.get("message") if isinstance(error, dict) else None
    return row["custom_id"], LineResult(None, f"HTTP {response.get('status_code')}: {message or error}"[:500])
