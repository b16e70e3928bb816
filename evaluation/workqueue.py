"""One seam for queueing work: RQ when REDIS_URL is set, in this process otherwise.

Without Redis (the embedded default) a web process runs jobs on one background thread of its own
(`run_in_background`, called by atelier/wsgi.py), so a request answers at once and the pages show the same live
progress as with RQ; commands and tests drain jobs in the calling thread, in order, before they return.

(Named workqueue, not queue, so it never shadows the standard library's queue module.)

Jobs are always enqueued after the surrounding transaction commits, so a worker never
sees an id whose row is not there yet (django-rq's commit mode, done by hand so the
in-process runner gets the same guarantee). Jobs are named by dotted path, as rq itself
stores them: the unit work that enqueues the next job never imports the job module that
calls it (no import cycle), and a test checks that every name resolves.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta
from typing import Any

import django_rq
import redis
from django.conf import settings
from django.db import close_old_connections, transaction
from django.utils import timezone
from django.utils.module_loading import import_string
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.worker import Worker

from .queues import DEFAULT_QUEUE, JUDGE_QUEUE, PROMPTER_QUEUE, render_queue

START_JOB = "evaluation.jobs.start_submission_job"
RENDER_JOB = "evaluation.jobs.render_job"
JUDGE_JOB = "evaluation.jobs.judge_job"
JUDGE_BATCH_SEND_JOB = "evaluation.jobs.judge_batch_send_job"
JUDGE_BATCH_COLLECT_JOB = "evaluation.jobs.judge_batch_collect_job"
FINISH_JOB = "evaluation.jobs.finish_submission_job"
PROMPT_JOB = "evaluation.jobs.prompt_job"
FEEDBACK_RENDER_JOB = "evaluation.jobs.feedback_render_job"
FEEDBACK_JUDGE_JOB = "evaluation.jobs.feedback_judge_job"
BOARD_JOB = "evaluation.jobs.board_job"
DIFFICULTY_JOB = "evaluation.jobs.difficulty_job"
ERASE_JOB = "evaluation.jobs.erase_job"
RENDER = render_queue("{backend}")  # a render job runs on its backend's own queue, where that backend's GPU worker listens

# The one table of work: every job enqueue() accepts and the queue it runs on. This layer's jobs are here; an app
# above adds its own from its AppConfig.ready() (register_jobs), so this layer never imports it.
JOBS: dict[str, str] = {
    START_JOB: DEFAULT_QUEUE,
    FINISH_JOB: DEFAULT_QUEUE,
    BOARD_JOB: DEFAULT_QUEUE,
    ERASE_JOB: DEFAULT_QUEUE,
    RENDER_JOB: RENDER,
    FEEDBACK_RENDER_JOB: RENDER,
    JUDGE_JOB: JUDGE_QUEUE,
    JUDGE_BATCH_SEND_JOB: JUDGE_QUEUE,  # builds request bodies (images, exemplars) and parses replies: the judge's work
    JUDGE_BATCH_COLLECT_JOB: JUDGE_QUEUE,
    FEEDBACK_JUDGE_JOB: JUDGE_QUEUE,
    PROMPT_JOB: PROMPTER_QUEUE,
    DIFFICULTY_JOB: JUDGE_QUEUE,  # the predictor is a MiniLM forward, like the offline judge's; its artefact must be there
}


def register_jobs(jobs: dict[str, str]) -> None:
    """Let an app above this layer enqueue its own jobs (dotted path -> queue) without this layer importing it."""
    JOBS.update(jobs)


log = logging.getLogger(__name__)
_inline: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()
_draining = False
_sending_to: ContextVar[set[str] | None] = ContextVar("_sending_to", default=None)  # queues enqueued to inside enqueued_or_unchanged


class QueueUnavailable(Exception):
    """The work queue (Redis) could not be reached: nothing was enqueued."""


class JobsLost(RuntimeError):
    """The change was committed, but the queue went away between the check before the commit and the send after it."""


def queue_for(job: str, backend: str | None = None) -> str:
    """The queue `job` runs on (JOBS); a render job names its backend."""
    if job not in JOBS:
        raise ValueError(f"unknown job {job!r}")
    if (JOBS[job] == RENDER) != (backend is not None):
        raise ValueError(f"{job} runs on {JOBS[job]!r}: {'name' if backend is None else 'no'} backend")
    name = render_queue(backend) if backend is not None else JOBS[job]
    if name not in settings.ATELIER_QUEUES:
        raise ValueError(f"unknown queue {name!r}")
    return name


def enqueue(job: str, *args: Any, backend: str | None = None) -> None:
    """Run `job` (a dotted path in JOBS) with `args` on its queue once the current transaction commits."""
    queue_name = queue_for(job, backend)
    if (sending_to := _sending_to.get()) is not None:
        sending_to.add(queue_name)
    transaction.on_commit(lambda: _send(queue_name, job, args))


@contextmanager
def enqueued_or_unchanged() -> Iterator[None]:
    """A state change that enqueues work, as one transaction: committed with its jobs sent, or, when a queue it
    enqueued to cannot be reached, rolled back and QueueUnavailable raised, so nothing changed (the caller answers
    503). The jobs are still sent only after the commit, so a worker never reads the state from before it. If the
    queue is lost in the instant between the check and the send, JobsLost says that the change stands without them."""
    sending_to: set[str] = set()
    token, checked = _sending_to.set(sending_to), False
    try:
        with transaction.atomic():
            yield
            queues_reachable(sending_to)
            checked = True
    except QueueUnavailable as exc:
        if checked:
            raise JobsLost(f"committed, but its jobs were not sent: {exc}") from exc
        raise
    finally:
        _sending_to.reset(token)


def queues_reachable(queue_names: set[str]) -> None:
    """Raise QueueUnavailable unless Redis answers for every one of these queues (in-process mode always does)."""
    if not settings.REDIS_URL:
        return
    for name in sorted(queue_names):
        try:
            django_rq.get_connection(name).ping()
        except redis.RedisError as exc:
            raise QueueUnavailable(f"the work queue could not be reached ({type(exc).__name__}: {exc})") from exc


def job_id(job: str, args: tuple[Any, ...]) -> str:
    """A job's id is its unit's natural key (e.g. `render_job-12-smoke-sd`): reconcile can ask rq whether a
    unit still has a job behind it, and re-sending a unit's job replaces the old one instead of adding one."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", "-".join([job.rpartition(".")[2], *map(str, args)]))


def _send(queue_name: str, job: str, args: tuple[Any, ...]) -> None:
    if settings.REDIS_URL:
        try:
            queue = django_rq.get_queue(queue_name)
            queue.enqueue(job, *args, job_id=job_id(job, args), job_timeout=settings.RQ_QUEUES[queue_name]["DEFAULT_TIMEOUT"])
        except redis.RedisError as exc:
            raise QueueUnavailable(f"the work queue could not be reached ({type(exc).__name__}: {exc})") from exc
        return
    if _background is not None:
        _background_worker().submit(job, args)
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


def job_alive(job: str, *args: Any) -> bool:
    """Whether a unit's job is still coming: queued, or started on a worker whose heartbeat is recent.
    A job that is gone (Redis lost it), failed, stopped, or held by a dead worker is not. In-process,
    only the background thread holds jobs between calls."""
    if not settings.REDIS_URL:
        return _background is not None and _background.holds(job_id(job, args))
    connection = django_rq.get_connection(DEFAULT_QUEUE)
    try:
        found = Job.fetch(job_id(job, args), connection=connection)
    except NoSuchJobError:
        return False
    status = found.get_status(refresh=False)
    if status in (JobStatus.QUEUED, JobStatus.DEFERRED, JobStatus.SCHEDULED):
        return True
    if status != JobStatus.STARTED or not found.worker_name:
        return False
    worker = Worker.find_by_key(Worker.redis_worker_namespace_prefix + found.worker_name, connection=connection)
    stale = timezone.now() - timedelta(seconds=settings.ATELIER_WORKER_STALE_AFTER)
    return worker is not None and worker.last_heartbeat is not None and worker.last_heartbeat > stale


def listening(queue_names: list[str]) -> dict[str, int] | None:
    """Live workers per queue (None in in-process mode): what a page shows when units wait for a worker."""
    if not settings.REDIS_URL:
        return None
    connection = django_rq.get_connection(DEFAULT_QUEUE)
    stale = timezone.now() - timedelta(seconds=settings.ATELIER_WORKER_STALE_AFTER)
    alive = [w for w in Worker.all(connection=connection) if w.last_heartbeat and w.last_heartbeat > stale]
    return {name: sum(name in w.queue_names() for w in alive) for name in queue_names}


class _BackgroundWorker(threading.Thread):
    """The embedded default's worker: one thread of the web process, running jobs in the order they were sent.

    On start, and whenever it has been idle for ATELIER_RECONCILE_INTERVAL seconds, it runs reconcile, so units
    a previous process left pending (it was stopped mid-job) are sent again: the database is the source of truth."""

    def __init__(self) -> None:
        super().__init__(name="atelier-jobs", daemon=True)
        self.pid, self.jobs, self.held, self.lock = os.getpid(), queue.SimpleQueue(), set(), threading.Lock()

    def submit(self, job: str, args: tuple[Any, ...]) -> None:
        with self.lock:
            self.held.add(job_id(job, args))
        self.jobs.put((job, args))

    def holds(self, key: str) -> bool:
        with self.lock:
            return key in self.held

    def run(self) -> None:
        _run_job(RECONCILE_JOB, ())
        while True:
            try:
                job, args = self.jobs.get(timeout=settings.ATELIER_RECONCILE_INTERVAL)
            except queue.Empty:
                job, args = RECONCILE_JOB, ()
            if job is None:  # stop_background()
                return
            _run_job(job, args)
            with self.lock:
                self.held.discard(job_id(job, args))


def _run_job(job: str, args: tuple[Any, ...]) -> None:
    """One job on the background thread, with fresh database connections; a failure is logged (the job has already
    written why on its rows), as RQ's failed-job registry would keep it."""
    close_old_connections()
    try:
        import_string(job)(*args)
    except Exception:
        log.exception("background job %s%r failed", job, args)
    finally:
        close_old_connections()


RECONCILE_JOB = "evaluation.reconcile.reconcile_job"
_background: _BackgroundWorker | None = None
_background_lock = threading.Lock()


def run_in_background() -> None:
    """In the embedded default (no REDIS_URL), run this process's jobs on a background thread from now on."""
    global _background
    if not settings.REDIS_URL:
        with _background_lock:
            _background = _background or _BackgroundWorker()
        _background_worker()


def _background_worker() -> _BackgroundWorker:
    """The running worker of this process (a forked child starts its own: threads do not survive a fork)."""
    global _background
    with _background_lock:
        if _background.pid != os.getpid() or not _background.is_alive():
            if _background.pid != os.getpid() or _background.ident is not None:  # inherited by a fork, or ended
                _background = _BackgroundWorker()
            _background.start()
        return _background


def stop_background(timeout: float = 60.0) -> None:
    """Back to running jobs in the calling thread, once the background thread has finished the jobs it was sent."""
    global _background
    with _background_lock:
        worker, _background = _background, None
    if worker is not None and worker.is_alive() and worker.pid == os.getpid():
        worker.jobs.put((None, ()))
        worker.join(timeout)
