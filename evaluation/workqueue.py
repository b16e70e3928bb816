"""One seam for queueing work: RQ when REDIS_URL is set, an in-process FIFO otherwise.

(Named workqueue, not queue, so it never shadows the standard library's queue module.)

Jobs are always enqueued after the surrounding transaction commits, so a worker never
sees an id whose row is not there yet (django-rq's commit mode, done by hand so the
in-process runner gets the same guarantee). Jobs are named by dotted path, as rq itself
stores them: the unit work that enqueues the next job never imports the job module that
calls it (no import cycle), and a test checks that every name resolves.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, Callable

import django_rq
import redis
from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string

START_JOB = "evaluation.jobs.start_submission_job"
RENDER_JOB = "evaluation.jobs.render_job"
JUDGE_JOB = "evaluation.jobs.judge_job"
FINISH_JOB = "evaluation.jobs.finish_submission_job"
JOBS = (START_JOB, RENDER_JOB, JUDGE_JOB, FINISH_JOB)

log = logging.getLogger(__name__)
_inline: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()
_draining = False


class QueueUnavailable(Exception):
    """The work queue (Redis) could not be reached: nothing was enqueued."""


def render_queue(backend: str) -> str:
    return f"render-{backend}"


def enqueue(queue_name: str, job: str, *args: Any) -> None:
    """Run `job` (a dotted path in JOBS) with `args` on `queue_name` once the current transaction commits."""
    if queue_name not in settings.ATELIER_QUEUES:
        raise ValueError(f"unknown queue {queue_name!r}")
    if job not in JOBS:
        raise ValueError(f"unknown job {job!r}")
    transaction.on_commit(lambda: _send(queue_name, job, args))


def _send(queue_name: str, job: str, args: tuple[Any, ...]) -> None:
    if settings.REDIS_URL:
        try:
            django_rq.get_queue(queue_name).enqueue(job, *args, job_timeout=settings.RQ_QUEUES[queue_name]["DEFAULT_TIMEOUT"])
        except redis.RedisError as exc:
            raise QueueUnavailable(f"the work queue could not be reached ({type(exc).__name__}: {exc})") from exc
        return
    _inline.append((import_string(job), args))
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
