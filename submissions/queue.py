"""One seam for queueing work: RQ when REDIS_URL is set, an in-process FIFO otherwise.

Jobs are always enqueued after the surrounding transaction commits, so a worker never
sees an id whose row is not there yet (django-rq's commit mode, done by hand so the
in-process runner gets the same guarantee).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, Callable

from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)
_inline: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()
_draining = False


def enqueue(queue_name: str, func: Callable[..., Any], *args: Any) -> None:
    if queue_name not in settings.ATELIER_QUEUES:
        raise ValueError(f"unknown queue {queue_name!r}")
    transaction.on_commit(lambda: _send(queue_name, func, args))


def _send(queue_name: str, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
    if settings.REDIS_URL:
        import django_rq

        django_rq.get_queue(queue_name).enqueue(func, *args, job_timeout=settings.RQ_QUEUES[queue_name]["DEFAULT_TIMEOUT"])
        return
    _inline.append((func, args))
    _drain()


def _drain() -> None:
    """Run queued jobs one after another; jobs that enqueue more jobs extend the same loop instead of recursing."""
    global _draining
    if _draining:
        return
    _draining = True
    try:
        while _inline:
            func, args = _inline.popleft()
            try:
                func(*args)
            except Exception:
                # The job has already written its failure to the database; this log is the in-process
                # stand-in for RQ's failed-job registry.
                log.exception("in-process job %s%r failed", func.__name__, args)
    finally:
        _draining = False
