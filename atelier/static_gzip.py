"""Static files gzipped as they leave, where nothing compressed them beforehand (issue 42).

Deployed (DEBUG off), collectstatic writes a .gz and a .br beside each file and whitenoise sends those. With DEBUG
(`make demo`, `make serve`) whitenoise serves the source folders through Django's finders, where no compressed copy
lies, so plotly.js went out whole (4.8 MB; about 1.4 MB gzipped). This middleware gzips the static responses for
clients that accept it. Static files only: a page carries a CSRF token, and compressing it invites BREACH.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.middleware.gzip import GZipMiddleware


class StaticGZip(GZipMiddleware):
    def process_request(self, request: HttpRequest) -> None:
        # The gzipped file goes out with its ETag made weak (W/"…"). If-None-Match compares weakly (RFC 9110, 13.1.2),
        # whitenoise strictly: unweakened here, a browser's revalidation gets its 304 instead of the whole file again.
        etag = request.META.get("HTTP_IF_NONE_MATCH", "")
        if request.path.startswith(settings.STATIC_URL) and "W/" in etag:
            request.META["HTTP_IF_NONE_MATCH"] = etag.replace("W/", "")

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if not request.path.startswith(settings.STATIC_URL):
            return response
        return super().process_response(request, response)
