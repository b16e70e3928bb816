"""Middleware for /api/: answers every error in JSON, refuses over-long addresses, never asks for a CSRF token, and
compresses answers for clients that accept gzip.

Every API route authenticates by bearer token, never by the session cookie, so a forged cross-site request carries
nothing the API trusts: Django's CSRF check is skipped there (a POST to a GET-only route then gets its 405, not a
403 page about CSRF). An error Django or a view answers in HTML or empty (404, 405, 413, 500) is answered as
`{"error": "..."}` with the same status and headers (Allow on a 405, Retry-After where given).

An address (path and query) over URL_MAX bytes is a 414 before any view. gunicorn's own limit (deploy/gunicorn.conf.py)
and nginx's (deploy/nginx/atelier.conf, which answers its 414 in JSON too) lie above it, so the API's limit is this
one, with or without nginx, and the answer is JSON.

Compression (Django's GZipMiddleware, for /api/ only) is safe from BREACH-style attacks: they need a secret in a body
that a victim's browser fetches with its credentials next to text the attacker chose, and no /api/ answer is fetched
with a cookie (bearer tokens only) or carries a CSRF token, a session or an endpoint's key. Django also pads each
gzip header with random bytes (max_random_bytes), so lengths do not repeat.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.gzip import GZipMiddleware
from django.utils.cache import patch_vary_headers

KEPT_HEADERS = ("Allow", "Retry-After", "Cache-Control", "WWW-Authenticate")
WORDS = {
    404: "not found: see /api/v1/openapi.json for the routes",
    405: "method not allowed on this route",
    413: "request body too large",
    500: "server error: the request was not completed",
}
URL_MAX = 4096  # bytes of path and query string; gunicorn's default request line was 4094 (with the method)


class ApiErrors:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response
        self.gzip = GZipMiddleware(get_response)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            return self.get_response(request)
        request._dont_enforce_csrf_checks = True  # token-authenticated: see the module's docstring
        response = too_long(request) or as_json(self.get_response(request))
        if response.status_code == 304:  # the Vary a 200 would carry (RFC 9110 15.4.5), which gzip adds only to bodies
            patch_vary_headers(response, ("Accept-Encoding",))
        return self.gzip.process_response(request, response)


def too_long(request: HttpRequest) -> JsonResponse | None:
    """414 for an address over URL_MAX bytes (as sent: the path percent-encoded, the query string as it came)."""
    size = len(request.get_full_path().encode())
    if size <= URL_MAX:
        return None
    return JsonResponse({"error": f"request URL too long: {size:,} bytes of path and query; at most {URL_MAX:,}"}, status=414)


def as_json(response: HttpResponse) -> HttpResponse:
    """An error answered in HTML or empty, answered again as {"error": ...} with its status and kept headers."""
    if response.status_code < 400 or response.get("Content-Type", "").startswith("application/json"):
        return response
    code = response.status_code
    body = {"error": WORDS.get(code) or HTTPStatus(code).phrase.lower()}
    if code == 405 and response.has_header("Allow"):
        body["allowed"] = [m.strip() for m in response["Allow"].split(",")]
    answer = JsonResponse(body, status=code)
    for header in KEPT_HEADERS:
        if response.has_header(header):
            answer[header] = response[header]
    return answer
