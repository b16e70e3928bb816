"""Django's Redis cache, whose clear() empties only this site's keys.

Unless ATELIER_CACHE_URL names another, the cache lives in REDIS_URL's database beside the work queues, where
Django's own clear() (FLUSHDB) would drop every queued job with the cached values.
"""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache

_BATCH = 500


class RedisCache(DjangoRedisCache):
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
