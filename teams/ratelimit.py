"""The API token limiter: a client address that sends too many bad tokens is refused for a while.

Policy (documented in docs/deploying.md): ATELIER_TOKEN_FAILURE_LIMIT failed token checks from one address within
ATELIER_TOKEN_FAILURE_WINDOW_SECONDS (counted from the first) lock that address out of the API until the window has
passed; valid tokens from other addresses are unaffected. The counting is the `limits` library's fixed window (the one
the judge's budget uses too, evaluator/judge/budget.py), kept where Django's cache is: on the cache's Redis whenever
REDIS_URL or ATELIER_CACHE_URL names one (atelier/settings.py), under the cache's key prefix, so every gunicorn worker
and host counts together, a restart forgets nothing and the cache's clear() forgets the lockouts with the rest; with
the local-memory cache, in this process's memory, each process counting alone. Counting is atomic (one script on
Redis); requests in flight at the same moment may each be checked before any of them is counted.

If the cache's Redis cannot be reached the limiter fails open: the check passes and the failure goes uncounted, with a
warning logged. Tokens are random secrets, so the lockout is a second line of defence, and a cache outage must not
turn every API call into a 500. Web logins are limited by django-axes.
"""

from __future__ import annotations

import logging
import re
import threading

import redis
from django.conf import settings
from django.core.cache.backends.redis import RedisCache
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils.module_loading import import_string
from ipware import get_client_ip
from limits import RateLimitItem, RateLimitItemPerSecond
from limits.storage import MemoryStorage, RedisStorage, Storage
from limits.strategies import FixedWindowRateLimiter

log = logging.getLogger(__name__)
_FORWARDED = ("HTTP_X_FORWARDED_FOR",)  # the header the proxies set (deploy/nginx/atelier.conf); any other is the client's word


def client_address(request: HttpRequest) -> str:
    """REMOTE_ADDR, or with ATELIER_PROXY_COUNT proxies in front, the address the outermost of them saw.

    Each proxy appends the address it saw to X-Forwarded-For and the innermost one is REMOTE_ADDR, so the header holds
    ATELIER_PROXY_COUNT - 1 proxies after the client: ipware's proxy_count. Entries a client forged stand to the left
    of those and are never read. A header too short to hold them all falls back to REMOTE_ADDR.
    """
    proxies = settings.AXES_IPWARE_PROXY_COUNT
    if proxies:
        address, _routable = get_client_ip(request, proxy_count=proxies - 1, request_header_order=_FORWARDED, strict=False)
        if address is not None:
            return address
    return request.META.get("REMOTE_ADDR", "")


_POOL_ONLY = ("pool_class", "parser_class", "serializer")  # Django's own OPTIONS for its Redis cache, not redis-py's
_limiter: FixedWindowRateLimiter | None = None
_limiter_lock = threading.Lock()


def _storage(cache: dict) -> Storage:
    """The `limits` storage beside Django's cache `cache` (a CACHES entry): its Redis (the first LOCATION, where
    Django writes, with its OPTIONS: the one-second timeouts) under its KEY_PREFIX, else this process's memory."""
    if not issubclass(import_string(cache["BACKEND"]), RedisCache):
        return MemoryStorage()
    location = cache["LOCATION"]
    url = (re.split("[;,]", location) if isinstance(location, str) else location)[0].strip()  # as Django splits it
    options = {k: v for k, v in cache.get("OPTIONS", {}).items() if k not in _POOL_ONLY}
    prefix = ":".join(p for p in (cache.get("KEY_PREFIX", ""), "token-lockout") if p)
    return RedisStorage(url, key_prefix=prefix, **options)  # redis-py reads the URL: redis://, rediss:// or unix://


def _fixed_window() -> FixedWindowRateLimiter:
    global _limiter
    with _limiter_lock:
        if _limiter is None:
            _limiter = FixedWindowRateLimiter(_storage(settings.CACHES["default"]))
        return _limiter


@receiver(setting_changed)
def _follow_the_cache(setting: str, **_) -> None:
    """A test that moves the cache (settings.CACHES) moves the counts with it, and starts from none in memory."""
    global _limiter
    if setting == "CACHES":
        with _limiter_lock:
            _limiter = None


def _policy() -> RateLimitItem:
    return RateLimitItemPerSecond(settings.ATELIER_TOKEN_FAILURE_LIMIT, settings.ATELIER_TOKEN_FAILURE_WINDOW, namespace="token-failures")


def locked_out(request: HttpRequest) -> bool:
    address = client_address(request)
    try:
        return not _fixed_window().test(_policy(), address)
    except redis.RedisError as exc:
        log.warning("token limiter: cache unreachable, %s not checked (%s: %s)", address, type(exc).__name__, exc)
        return False


def count_failure(request: HttpRequest) -> None:
    take(_policy(), client_address(request))


def take(limit: RateLimitItem, key: str) -> bool:
    """Count one use of `limit` under `key`; False once the window's uses are spent. Fails open (True) when the
    cache's Redis is unreachable, with a warning: the limits this serves are a second line of defence."""
    try:
        return _fixed_window().hit(limit, key)
    except redis.RedisError as exc:
        log.warning("limiter %s: cache unreachable, not counted (%s: %s)", limit.namespace, type(exc).__name__, exc)
        return True
