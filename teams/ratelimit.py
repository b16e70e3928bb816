"""The credential limiter: an address that presents too many wrong tokens has its further wrong ones refused a while.

Policy (documented in docs/deploying.md). Only presented credentials that fail are counted: a wrong or revoked API
token (`Authorization: Bearer …` on /api/v1/) and a wrong /metrics token, each kind in its own namespace. A request
that presents none (an anonymous GET, a probe, a browser) is never counted and never refused here, so nobody sharing
an address (a NAT, a CI provider) can spend the allowance of the others. ATELIER_TOKEN_FAILURE_LIMIT failures of one
kind from one address within ATELIER_TOKEN_FAILURE_WINDOW_SECONDS (a fixed window from the first) get every further
wrong credential of that kind from that address 429 until the window has passed. A valid token always passes, from
any address: it proves possession of a 256-bit random secret (submissions/services.py token_create), which is what
stops guessing; refusing it would let anyone behind the same address lock a team out with 20 made-up tokens. The
price: a locked-out guesser still learns from each request whether its guess was right (a 2xx), so the lockout no
longer caps how many guesses an address can test; it caps nothing that matters against 2^256 candidates (nor did the
per-address count before, against an IPv6 /64), and it keeps refusing and counting every wrong one. Passwords are
guessable, so web logins are django-axes's: it counts only failed password checks and locks the (username, address)
pair out, the right password included (settings.py AXES_*).

The counting is the `limits` library's fixed window (the one the judge's budget uses too, evaluator/judge/budget.py),
kept where Django's cache is: on the cache's Redis whenever REDIS_URL or ATELIER_CACHE_URL names one
(atelier/settings.py), under the cache's key prefix, so every gunicorn worker and host counts together, a restart
forgets nothing and the cache's clear() forgets the lockouts with the rest; with the local-memory cache, in this
process's memory, each process counting alone. Counting and checking are one atomic step (one script on Redis). The
per-address e-mail caps (password reset, address confirmation) count here too, by `take` under `address_key`.

If the cache's Redis cannot be reached the limiter fails open: the failure goes uncounted and is answered as a wrong
credential (401, or the 404 of /metrics), with a warning logged. A cache outage must not turn every API call into a 500.
"""

from __future__ import annotations

import hashlib
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


def bearer(request: HttpRequest) -> str:
    """The token of an `Authorization: Bearer <token>` header (the scheme in any case); '' when none is presented."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def credential_refused(request: HttpRequest, namespace: str) -> bool:
    """Count one presented credential that failed (kind `namespace`) against the request's address; True when that
    address has now sent more than ATELIER_TOKEN_FAILURE_LIMIT of them in the window: refuse it with 429."""
    limit = RateLimitItemPerSecond(settings.ATELIER_TOKEN_FAILURE_LIMIT, settings.ATELIER_TOKEN_FAILURE_WINDOW, namespace=namespace)
    return not take(limit, client_address(request))


def address_key(email: str) -> str:
    """The key of an e-mail address in a per-address limit: its digest (no address is kept in the cache), the same
    for every spelling that reaches one inbox in practice (case, surrounding spaces)."""
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()


def take(limit: RateLimitItem, key: str) -> bool:
    """Count one use of `limit` under `key`; False once the window's uses are spent. Fails open (True) when the
    cache's Redis is unreachable, with a warning: the limits this serves are a second line of defence."""
    try:
        return _fixed_window().hit(limit, key)
    except redis.RedisError as exc:
        log.warning("limiter %s: cache unreachable, not counted (%s: %s)", limit.namespace, type(exc).__name__, exc)
        return True
