"""A process-wide bound on judge calls in flight.

One BoundedSemaphore, shared by every judge in the process, is held around each
client call (including the client's own retries and back-off), so a worker running
many judge jobs in threads never has more than `max_in_flight` requests open against
the endpoint. None (the default) means no bound. The budget of requests and tokens per minute that every worker
process shares is evaluator/judge/budget.py.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_semaphore: threading.BoundedSemaphore | None = None
_limit: int | None = None


def set_max_in_flight(limit: int | None) -> None:
    """Bound calls in flight process-wide (None: unbounded). Calls already waiting keep the old bound."""
    global _semaphore, _limit
    if limit is not None and limit < 1:
        raise ValueError(f"max_in_flight must be at least 1, got {limit}")
    with _lock:
        if limit != _limit:
            _limit = limit
            _semaphore = threading.BoundedSemaphore(limit) if limit is not None else None


def max_in_flight() -> int | None:
    return _limit


@contextmanager
def call_slot() -> Iterator[None]:
    """Hold one slot for the duration of a client call (no-op when unbounded)."""
    semaphore = _semaphore  # the bound in force when the call starts
    if semaphore is None:
        yield
        return
    with semaphore:
        yield
