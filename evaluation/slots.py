"""A per-endpoint bound on calls in flight, shared by every worker process.

With Redis, a counting semaphore in one sorted set per endpoint: a holder adds its token
with the time, and holds a slot while its rank is below the limit; tokens older than the
lease (a holder that died) are dropped. Without Redis (in-process mode) a semaphore in
this process does the same.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import django_rq
from django.conf import settings

from .queues import PROMPTER_QUEUE

T = TypeVar("T")
_local: dict[tuple[int, int], threading.BoundedSemaphore] = {}
_local_lock = threading.Lock()
POLL = 0.02


class Slots:
    def __init__(self, endpoint_id: int, limit: int, lease: float) -> None:
        self.key, self.limit, self.lease = f"atelier:prompter-slots:{endpoint_id}", limit, lease
        self.endpoint_id = endpoint_id

    def run(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call func while holding one of the endpoint's slots."""
        if not settings.REDIS_URL:
            with _local_lock:
                semaphore = _local.setdefault((self.endpoint_id, self.limit), threading.BoundedSemaphore(self.limit))
            with semaphore:
                return func(*args, **kwargs)
        connection = django_rq.get_connection(PROMPTER_QUEUE)
        token = uuid.uuid4().hex
        while True:
            now = time.time()
            pipe = connection.pipeline()
            pipe.zremrangebyscore(self.key, "-inf", now - self.lease)
            pipe.zadd(self.key, {token: now})
            pipe.zrank(self.key, token)
            pipe.expire(self.key, int(self.lease) + 60)
            rank = pipe.execute()[2]
            if rank is not None and rank < self.limit:
                break
            connection.zrem(self.key, token)
            time.sleep(POLL)
        try:
            return func(*args, **kwargs)
        finally:
            connection.zrem(self.key, token)
