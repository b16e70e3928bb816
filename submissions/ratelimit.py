"""The API token limiter: a client address that sends too many bad tokens is refused for a while.

Policy (documented in docs/deploying.md): ATELIER_TOKEN_FAILURE_LIMIT failed token checks from one address within
ATELIER_TOKEN_FAILURE_WINDOW_SECONDS (counted from the first) lock that address out of the API until the window has
passed; valid tokens from other addresses are unaffected. Counts live in Django's cache, which is Redis whenever
REDIS_URL or ATELIER_CACHE_URL names one (atelier/settings.py): every gunicorn worker and host counts together, and
a restart forgets nothing. Only with the local-memory cache does each process count alone. Counting is atomic
(ADD, then INCR); requests in flight at the same moment may each be checked before any of them is counted.

If the cache cannot be reached the limiter fails open: the check passes and the failure goes uncounted, with a
warning logged. Tokens are random secrets, so the lockout is a second line of defence, and a cache outage must not
turn every API call into a 500. Web logins are limited by django-axes.
"""

from __future__ import annotations

import logging

import redis
from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from ipware import get_client_ip

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


def _key(address: str) -> str:
    return f"token-failures:{address}"


def locked_out(request: HttpRequest) -> bool:
    address = client_address(request)
    try:
        failures = cache.get(_key(address), 0)
    except redis.RedisError as exc:
        log.warning("token limiter: cache unreachable, %s not checked (%s: %s)", address, type(exc).__name__, exc)
        return False
    return failures >= settings.ATELIER_TOKEN_FAILURE_LIMIT


def count_failure(request: HttpRequest) -> None:
    address = client_address(request)
    try:
        _increment(_key(address), settings.ATELIER_TOKEN_FAILURE_WINDOW)
    except redis.RedisError as exc:
        log.warning("token limiter: cache unreachable, a bad token from %s not counted (%s: %s)", address, type(exc).__name__, exc)


def _increment(key: str, window: int) -> None:
    if cache.add(key, 1, timeout=window):
        return
    try:
        if cache.incr(key) == 1:  # the key expired between Redis's EXISTS and INCR, and INCR made one that never expires
            cache.touch(key, timeout=window)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=window)
