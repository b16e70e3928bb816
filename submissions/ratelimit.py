"""The API token limiter: a client address that sends too many bad tokens is refused for a while.

Policy (documented in the README): ATELIER_TOKEN_FAILURE_LIMIT failed token checks from one address within
ATELIER_TOKEN_FAILURE_WINDOW_SECONDS lock that address out of the API until the window has passed; valid tokens
from other addresses are unaffected. Counts live in Django's cache (per process with the default local-memory
cache; configure a shared cache for several web processes). Web logins are limited by django-axes.
"""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    """REMOTE_ADDR, or with ATELIER_PROXY_COUNT proxies in front, the address the outermost of them saw."""
    proxies = settings.AXES_IPWARE_PROXY_COUNT
    forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
    if proxies and len(forwarded) >= proxies:
        return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR", "")


def _key(address: str) -> str:
    return f"atelier:token-failures:{address}"


def locked_out(request: HttpRequest) -> bool:
    return cache.get(_key(client_address(request)), 0) >= settings.ATELIER_TOKEN_FAILURE_LIMIT


def count_failure(request: HttpRequest) -> None:
    key = _key(client_address(request))
    if cache.add(key, 1, timeout=settings.ATELIER_TOKEN_FAILURE_WINDOW):
        return
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=settings.ATELIER_TOKEN_FAILURE_WINDOW)
