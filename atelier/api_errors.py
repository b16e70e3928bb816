"""Middleware for /api/: answers every error in JSON, and never asks for a CSRF token.

Every API route authenticates by bearer token, never by the session cookie, so a forged cross-site request carries
nothing the API trusts: Django's CSRF check is skipped there (a POST to a GET-only route then gets its 405, not a
403 page about CSRF). An error Django or a view answers in HTML or empty (404, 405, 413, 500) is answered as
`{"error": "..."}` with the same status and headers (Allow on a 405, Retry-After where given).
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

from django.http import HttpRequest, HttpResponse, JsonResponse

KEPT_HEADERS = ("Allow", "Retry-After", "Cache-Control", "WWW-Authenticate")
WORDS = {
    404: "not found: see /api/v1/openapi.json for the routes",
    405: "method not allowed on this route",
    413: "request body too large",
    500: "server error: the request was not completed",
}


class ApiErrors:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            return self.get_response(request)
        request._dont_enforce_csrf_checks = True  # token-authenticated: see the module's docstring
        response = self.get_response(request)
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
