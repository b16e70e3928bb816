"""Workers that survive what a deployment throws at them (used by `manage.py work` and `manage.py scheduler`).

`AtelierWorker` is rq's SimpleWorker (jobs run in the worker process, so models loaded once stay loaded:
the forking worker reloads them for every job) plus a heartbeat thread, so a worker busy with a long job
still looks alive and a killed one stops looking alive within ATELIER_WORKER_STALE_AFTER seconds.
`run_resilient` restarts a worker or scheduler after Redis drops (restart, failover) with backoff,
instead of exiting with ConnectionError.

A supervisor's stop (SIGTERM, or SIGINT) always wins over that: it ends the wait for Redis at once, a goodbye
that Redis refuses is not taken for a lost Redis, and a goodbye to a Redis that does not answer waits at most
ATELIER_WORKER_HEARTBEAT seconds (rq's own socket timeout is 415 s). A busy worker still finishes its job first,
as rq's warm shutdown does; a second signal stops it at once.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable

import redis
from django.conf import settings
from rq.cron import CronScheduler
from rq.exceptions import StopRequested
from rq.worker import SimpleWorker, WorkerStatus

log = logging.getLogger(__name__)
BACKOFF_START, BACKOFF_MAX = 1.0, 60.0
# Stop signals this process received. Appended by signal handlers, which run in the main thread between bytecodes:
# a list needs no lock (a threading.Event's lock could deadlock there).
_stop_signals: list[int] = []


def _note_stop(signum: int, frame: object = None) -> None:
    _stop_signals.append(signum)


def _listen_for_stop() -> None:
    """Our handlers, between runs: rq installs its own while a worker or scheduler runs and leaves them behind."""
    signal.signal(signal.SIGTERM, _note_stop)
    signal.signal(signal.SIGINT, _note_stop)


def _goodbye_within_heartbeat(connection: redis.Redis) -> None:
    """Fresh connections that give up after a heartbeat, for the last words of a process asked to stop."""
    pool = connection.connection_pool
    pool.connection_kwargs["socket_timeout"] = settings.ATELIER_WORKER_HEARTBEAT
    pool.reset()  # pooled connections keep the timeout they were made with


class AtelierWorker(SimpleWorker):
    # rq's own reconnect loop waits between tries; kept short so that a stop it missed is seen within seconds
    # (run_resilient does the long backoff once rq gives up the loop).
    max_connection_wait_time = 4.0

    def work(self, *args, **kwargs) -> bool:
        stop = threading.Event()
        beat = threading.Thread(target=self._beat, args=(stop,), name=f"heartbeat-{self.name}", daemon=True)
        beat.start()
        try:
            worked = super().work(*args, **kwargs)
        finally:
            stop.set()
            _listen_for_stop()
        if not kwargs.get("burst") and not self.stop_was_requested():
            # rq logs an unhandled error (a lost connection, mostly) and leaves its loop: start again instead.
            raise redis.ConnectionError(f"worker {self.name} left its loop without a stop request")
        return worked

    def request_stop(self, signum, frame) -> None:
        _note_stop(signum)
        super().request_stop(signum, frame)

    def teardown(self) -> None:
        if self.stop_was_requested():
            _goodbye_within_heartbeat(self.connection)
        super().teardown()

    def unsubscribe(self) -> None:
        """rq's unsubscribe, with the listener told to stop before the UNSUBSCRIBE instead of after.

        rq unsubscribes, then stops the listener thread and waits for it without a limit (redis-py 8). The thread
        wakes on UNSUBSCRIBE's reply and, still told to run, goes back to wait up to rq's 60 s sleep for a new
        subscription: one stop in about twenty took a minute (tests/test_worker_shutdown.py). Told first, it leaves
        on that reply; a thread that does not is a daemon and is not waited for past a second."""
        if self.pubsub_thread is None:
            return
        self.log.info("Worker %s: unsubscribing from channel %s", self.name, self.pubsub_channel_name)
        self.pubsub_thread.stop(timeout=0)  # clears its running flag; the join with no time is a no-op
        self.pubsub.unsubscribe()
        self.pubsub_thread.join(timeout=1)
        self.pubsub.close()

    def stop_was_requested(self) -> bool:
        """SIGINT/SIGTERM arrived. rq sets _stop_requested only for a worker that was busy (it stops after the
        job); an idle one leaves its loop at once with only the request's date set."""
        return bool(_stop_signals) or self._stop_requested or self._shutdown_requested_date is not None

    def heartbeat(self, *args, **kwargs) -> None:
        """rq's reconnect loop heartbeats at the top of every turn: a stop that arrived while rq was logging (logging
        swallows any exception, the StopRequested that rq's signal handler raises included) ends the idle loop here."""
        if _stop_signals and threading.current_thread() is threading.main_thread() and self.get_state() != WorkerStatus.BUSY:
            raise StopRequested()
        super().heartbeat(*args, **kwargs)

    def _beat(self, stop: threading.Event) -> None:
        while not stop.wait(settings.ATELIER_WORKER_HEARTBEAT):
            try:
                self.heartbeat()
            except redis.RedisError as exc:  # the main loop notices too and restarts; the beat just waits for it
                log.warning("worker %s: heartbeat failed (%s)", self.name, exc)


class AtelierCronScheduler(CronScheduler):
    """rq's CronScheduler whose stop is seen by run_resilient and whose goodbye cannot hang on a silent Redis."""

    def _request_stop(self, signum, frame) -> None:
        _note_stop(signum)
        super()._request_stop(signum, frame)

    def register_death(self, pipeline=None) -> None:
        if _stop_signals:
            _goodbye_within_heartbeat(self.connection)
        super().register_death(pipeline)


def run_resilient(start: Callable[[], object], what: str) -> None:
    """Call `start` (which runs until asked to stop) again whenever it dies of a lost Redis connection,
    until SIGTERM or SIGINT arrives."""
    _stop_signals.clear()
    try:
        _restart_until_stopped(start, what)
    except StopRequested:  # rq's handler, left behind by a worker or scheduler that had already stopped
        log.info("%s: stop requested", what)


def _restart_until_stopped(start: Callable[[], object], what: str) -> None:
    backoff = BACKOFF_START
    while True:
        _listen_for_stop()
        began = time.monotonic()
        try:
            start()
            return  # asked to stop (SIGINT/SIGTERM): a normal exit
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            lost = exc
        _listen_for_stop()
        if _stop_signals:
            log.warning("%s stopped on request; Redis did not take its goodbye (%s: %s)", what, type(lost).__name__, lost)
            return
        if time.monotonic() - began > BACKOFF_MAX:
            backoff = BACKOFF_START  # it ran fine for a while: this is a new outage
        log.warning("%s lost Redis (%s: %s); starting again in %.0f s", what, type(lost).__name__, lost, backoff)
        if _stopped_within(backoff):
            log.info("%s stopped on request while waiting for Redis", what)
            return
        backoff = min(backoff * 2, BACKOFF_MAX)


def _stopped_within(seconds: float) -> bool:
    """Wait up to `seconds`, in short naps so that a stop signal ends the wait at once."""
    deadline = time.monotonic() + seconds
    while not _stop_signals and time.monotonic() < deadline:
        time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
    return bool(_stop_signals)
