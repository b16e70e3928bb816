"""Anonymous board pages from Django's cache, keyed by the boards' version, with the headers that let browsers,
proxies and CDNs keep them (issue 22).

A shared page is stored under a key made of the deployed code's version, the boards' version
(`evaluation.boards.boards_version`, which changes whenever the board job or a human-row rebuild writes), the latest
signed release (the board's cite block names it; the release job makes it after the rebuild), the path and
the query parameters the page reads, so a new board write invalidates every page by changing their keys: nothing is
ever deleted, old keys expire after ATELIER_BOARD_CACHE_SECONDS. The same key is the page's weak ETag and the
version's time its Last-Modified, answered by Django's own `condition` (304), and the response says `public,
max-age=ATELIER_BOARD_MAX_AGE` with `Vary: Cookie`.

Only pages every visitor gets alike are shared. A signed-in visitor (their team's unpublished rows, their name, staff
links, a CSRF token in the log-out form) or one with messages waiting gets a page rendered for them alone, sent
`private, no-store` and never read from or written to the store. A page whose rendering asked for a CSRF token or a CSP
nonce (both per visitor) is sent the same way and not stored: the board's scripts are static files under
`script-src 'self'`, so today neither is used. A request whose parameters the page did not answer as asked (an unknown
sort, a page past the end, a judge that is not there) is served but not stored, so the pages kept are bounded by the
boards, not by what visitors type; parameters the page never reads (`?utm_source=…`) are left out of the key.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import wraps
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.messages import get_messages
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.utils.cache import add_never_cache_headers, patch_cache_control, patch_vary_headers
from django.views.decorators.http import condition

from evaluation.boards import boards_version

from .models import Release

log = logging.getLogger(__name__)

View = Callable[..., HttpResponse]
Answered = Callable[[dict], dict[str, str]]


@dataclass(frozen=True)
class SharedPage:
    key: str
    etag: str
    modified: datetime | None


def shared_page(request: HttpRequest, params: tuple[str, ...]) -> SharedPage | None:
    """The page every anonymous visitor gets for this request, or None when this visitor's page is their own."""
    if request.user.is_authenticated or len(get_messages(request)):  # len() reads the messages without using them up
        return None
    version = boards_version()
    # The board's cite block names its latest release, made by a job after the board's rebuild: a new release is news too.
    released = Release.objects.order_by("-pk").values_list("pk", "created").first() or (0, None)
    query = urlencode([(name, value) for name in params for value in request.GET.getlist(name)])
    named = "|".join((settings.ATELIER_CODE_VERSION, version.key, f"release-{released[0]}", request.path, query))
    digest = hashlib.sha256(named.encode()).hexdigest()[:32]
    modified = max((at for at in (version.at, released[1]) if at is not None), default=None)
    return SharedPage(key=f"board-page:{digest}", etag=f'W/"{digest}"', modified=modified)


def board_page_cache(params: tuple[str, ...], answered: Answered) -> Callable[[View], View]:
    """Serve a board view's anonymous pages from the cache. `params` are the query parameters the view reads; `answered`
    gives, from the view's TemplateResponse context, the value of each that the page shows."""

    def decorate(view: View) -> View:
        conditional = condition(etag_func=_etag, last_modified_func=_modified)(_from_cache(view, params, answered))

        @wraps(view)
        def served(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not settings.ATELIER_BOARD_CACHE_SECONDS:
                return view(request, *args, **kwargs)
            request.board_page = shared_page(request, params)
            response = conditional(request, *args, **kwargs)
            # Private when the page became the visitor's own while rendering (a CSRF token, a nonce), or when the response
            # will set a CSRF cookie (a malformed one is replaced): a proxy must never keep a Set-Cookie for everyone.
            if request.board_page is None or request.META.get("CSRF_COOKIE_NEEDS_UPDATE"):
                for header in ("ETag", "Last-Modified"):
                    response.headers.pop(header, None)
                add_never_cache_headers(response)  # private, no-store: no proxy keeps it, no browser reuses it
            else:
                patch_cache_control(response, public=True, max_age=settings.ATELIER_BOARD_MAX_AGE)
            patch_vary_headers(response, ("Cookie",))
            return response

        return served

    return decorate


def _etag(request: HttpRequest, *args, **kwargs) -> str | None:
    return request.board_page.etag if request.board_page else None


def _modified(request: HttpRequest, *args, **kwargs) -> datetime | None:
    return request.board_page.modified if request.board_page else None


def _from_cache(view: View, params: tuple[str, ...], answered: Answered) -> View:
    @wraps(view)
    def cached(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        page = request.board_page
        stored = cache.get(page.key) if page else None
        if stored is not None:
            return HttpResponse(stored["content"], content_type=stored["type"])
        replaced = request.META.get("CSRF_COOKIE_NEEDS_UPDATE")  # a malformed CSRF cookie is replaced before any view runs
        response = view(request, *args, **kwargs)
        if page is not None and response.status_code == 200:
            _keep(request, page, response, params, answered, quiet=bool(replaced))
        return response

    return cached


def _keep(request: HttpRequest, page: SharedPage, response: HttpResponse, params: tuple[str, ...], answered: Answered, quiet: bool) -> None:
    """Store a freshly rendered anonymous page if every visitor may be given it, else mark the request private (`quiet`:
    the visitor's CSRF cookie was being replaced anyway, so a token in the page is no news worth a warning)."""
    shown: dict[str, str] = {}
    if hasattr(response, "render"):  # a TemplateResponse: what the page answered is in its context
        shown = answered(response.context_data)
        response.render()
    used = {"a CSRF token": request.META.get("CSRF_COOKIE_NEEDS_UPDATE"), "a CSP nonce": getattr(request, "_csp_nonce", None)}
    own = [what for what, found in used.items() if found]
    if own or response.cookies:
        (log.debug if quiet else log.warning)("board page %s not shared: its rendering used %s", request.path, ", ".join(own) or "cookies")
        request.board_page = None
    elif all(request.GET.getlist(name) == [shown.get(name)] for name in params if name in request.GET):
        content = {"content": response.content, "type": response["Content-Type"]}
        cache.set(page.key, content, settings.ATELIER_BOARD_CACHE_SECONDS)
