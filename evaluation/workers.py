"""Workers that survive what a deployment throws at them (used by `manage.py work` and `manage.py scheduler`).

`AtelierWorker` is rq's SimpleWorker (jobs run in the worker process, so models loaded once stay loaded:
the forking worker reloads them for every job) plus a heartbeat thread, so a worker busy with a long job
still looks alive and a killed one stops looking alive within ATELIER_WORKER_STALE_AFTER seconds.
`run_resilient` restarts a worker or scheduler after Redis drops (restart, failover) with backoff,
instead of exiting with ConnectionError.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

import redis
from django.conf import settings
from rq.worker import SimpleWorker

log = logging.getLogger(__name__)
BACKOFF_START, BACKOFF_MAX = 1.0, 60.0


class AtelierWorker(SimpleWorker):
    def work(self, *args, **kwargs) -> bool:
        stop = threading.Event()
        beat = threading.Thread(target=self._beat, args=(stop,), name=f"heartbeat-{self.name}", daemon=True)
        beat.start()
        try:
            worked = super().work(*args, **kwargs)
        finally:
            stop.set()
        if not kwargs.get("burst") and not self.stop_was_requested():
            # rq logs an unhandled error (a lost connection, mostly) and leaves its loop: start again instead.
            raise redis.ConnectionError(f"worker {self.name} left its loop without a stop request")
        return worked

    def stop_was_requested(self) -> bool:
        """SIGINT/SIGTERM arrived. rq sets _stop_requested only for a worker that was busy (it stops after the
        job); an idle one leaves its loop at once with only the request's date set."""
        return self._stop_requested or self._shutdown_requested_date is not None

    def _beat(self, stop: threading.Event) -> None:
        while not stop.wait(settings.ATELIER_WORKER_HEARTBEAT):
            try:
                self.heartbeat()
            except redis.RedisError as exc:  # the main loop notices too and restarts; the beat just waits for it
                log.warning("worker %s: heartbeat failed (%s)", self.name, exc)


def run_resilient(start: Callable[[], object], what: str, sleep: Callable[[float], None] = time.sleep) -> None:
    """Call `start` (which runs until asked to stop) again whenever it dies of a lost Redis connection."""
    backoff = BACKOFF_START
    while True:
        began = time.monotonic()
        try:
            start()
            return  # asked to stop (SIGINT/SIGTERM): a normal exit
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            if time.monotonic() - began > BACKOFF_MAX:
                backoff = BACKOFF_START  # it ran fine for a while: this is a new outage
            log.warning("%s lost Redis (%s: %s); starting again in %.0f s", what, type(exc).__name__, exc, backoff)
            sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)
