"""Django's Redis cache, failing open, whose clear() empties only this site's keys.

A cache is an optimisation: when its Redis is down or does not answer within the one-second timeouts (settings
`_cache`), a read is a miss and a write is dropped, so every page renders uncached instead of failing. The first
failure in a minute is logged as a warning; readiness (/readyz) reports the cache apart. What must not fail open
keeps its own Redis calls: the judge's shared budget fails closed (evaluator/judge/budget.py), the API token lockout
fails open on purpose (submissions/ratelimit.py; docs/deploying.md says why).

Unless ATELIER_CACHE_URL names another, the cache lives in REDIS_URL's database beside the work queues, where
Django's own clear() (FLUSHDB) would drop every queued job with the cached values.
"""

from __future__ import annotations

import logging
import threading
import time

import redis
from django.core.cache.backends.base import DEFAULT_TIMEOUT
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

    def get_many(self, keys, version=None):
        try:
            return super().get_many(keys, version)
        except redis.RedisError as exc:
            _outage("get_many", exc)
            return {}

    def has_key(self, key, version=None):
        try:
            return super().has_key(key, version)
        except redis.RedisError as exc:
            _outage("has_key", exc)
            return False

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            super().set(key, value, timeout, version)
        except redis.RedisError as exc:
            _outage("set", exc)

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            return super().add(key, value, timeout, version)
        except redis.RedisError as exc:
            _outage("add", exc)
            return False

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            return super().set_many(data, timeout, version)
        except redis.RedisError as exc:
            _outage("set_many", exc)
            return list(data)  # the keys not stored

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            return super().touch(key, timeout, version)
        except redis.RedisError as exc:
            _outage("touch", exc)
            return False

    def delete(self, key, version=None):
        try:
            return super().delete(key, version)
        except redis.RedisError as exc:
            _outage("delete", exc)
            return False

    def delete_many(self, keys, version=None):
        try:
            super().delete_many(keys, version)
        except redis.RedisError as exc:
            _outage("delete_many", exc)

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
