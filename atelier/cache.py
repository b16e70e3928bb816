"""Django's Redis cache, failing open, whose clear() empties only this site's keys.

A cache is an optimisation: when its Redis is down or does not answer within the one-second timeouts (settings
`_cache`), a read is a miss and a write is dropped, so every page renders uncached instead of failing. The first
failure in a minute is logged as a warning; readiness (/readyz) reports the cache apart. What must not fail open
keeps its own Redis calls: the judge's shared budget fails closed (evaluator/judge/budget.py), the API token lockout
fails open on purpose (teams/ratelimit.py; docs/deploying.md says why).

Unless ATELIER_CACHE_URL names another, the cache lives in REDIS_URL's database beside the work queues, where
Django's own clear() (FLUSHDB) would drop every queued job with the cached values.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache

log = logging.getLogger(__name__)
_BATCH = 500
_QUIET_SECONDS = 60  # one warning a minute per process while the cache is out
_warned = {"at": 0.0}
_warned_lock = threading.Lock()


def _outage(operation: str, exc: Exception) -> None:
    with _warned_lock:
        now = time.monotonic()
        if now - _warned["at"] < _QUIET_SECONDS:
            return
        _warned["at"] = now
    log.warning("cache unreachable (%s: %s: %s): serving uncached", operation, type(exc).__name__, exc)


class RedisCache(DjangoRedisCache):
    def get(self, key, default=None, version=None):
        try:
            return super().get(key, default, version)
        except redis.RedisError as exc:
            _outage("get", exc)
            return default

    def probe(self) -> None:
        """Ask Redis once (a PING), raising redis.RedisError when it does not answer: for /readyz, since every other
        call here fails open and so cannot tell an outage from a miss."""
        self._cache.get_client(None, write=False).ping()

    def clear(self) -> bool:
        """Delete the keys under KEY_PREFIX (every version), nothing else."""
        client = self._cache.get_client(None, write=True)
        keys: list[bytes] = []
        for key in client.scan_iter(match=f"{self.key_prefix}:*", count=_BATCH):
            keys.append(key)
            if len(keys) == _BATCH:
                client.delete(*keys)
                keys.clear()
        if keys:
            client.delete(*keys)
        return True


def _fail_open(name: str, fallback: Callable[..., Any]) -> Callable[..., Any]:
    """Django's `name`, answering fallback(*args) when Redis is down or silent."""
    parent = getattr(DjangoRedisCache, name)

    def method(self, *args, **kwargs):
        try:
            return parent(self, *args, **kwargs)
        except redis.RedisError as exc:
            _outage(name, exc)
            return fallback(*args)

    method.__name__ = name
    return method


# What each call answers without Redis: nothing found, nothing stored (set_many: every key not stored), nothing deleted.
for _name, _fallback in {
    "get_many": lambda *args: {},
    "has_key": lambda *args: False,
    "set": lambda *args: None,
    "add": lambda *args: False,
    "set_many": lambda data, *args: list(data),
    "touch": lambda *args: False,
    "delete": lambda *args: False,
    "delete_many": lambda *args: None,
}.items():
    setattr(RedisCache, _name, _fail_open(_name, _fallback))
