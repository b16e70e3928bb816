"""How a stored file reaches a viewer the view has already allowed: the one place that knows the delivery routes.

Filesystem media are streamed by the web process, or by nginx (ATELIER_MEDIA_ACCEL_REDIRECT). Object-storage media
are redirected to a short-lived presigned URL (ATELIER_MEDIA_DELIVERY=redirect, the default), or to the public/CDN
base for a published file when ATELIER_MEDIA_PUBLIC_URL is set, or streamed (ATELIER_MEDIA_DELIVERY=stream).
"""

from __future__ import annotations

from django.conf import settings
from django.core.files.storage import Storage, default_storage
from django.http import FileResponse, HttpResponse, HttpResponseRedirect

PUBLIC = "public, max-age=31536000, immutable"
PRIVATE = "private, no-store"
PUBLIC_REDIRECT = "public, max-age=3600"  # the CDN URL of a published file is stable; the redirect may be kept a while


def media_response(name: str, cache_control: str, *, storage: Storage = default_storage) -> HttpResponse:
    """The file `name` of `storage` for a viewer already allowed to see it; cache_control is PUBLIC or PRIVATE."""
    deliver = getattr(storage, "delivery_url", None)  # atelier.storage.MediaStorage (object storage) has it
    if deliver is not None and settings.ATELIER_MEDIA_DELIVERY == "redirect":
        public = cache_control == PUBLIC
        response = HttpResponseRedirect(deliver(name, public=public))
        # A presigned URL expires: the redirect to it is the viewer's alone and never kept.
        response["Cache-Control"] = PUBLIC_REDIRECT if public and settings.ATELIER_MEDIA_PUBLIC_URL else PRIVATE
        return response
    if deliver is None and settings.ATELIER_MEDIA_ACCEL_REDIRECT:  # the front web server sends the file
        response = HttpResponse(content_type="image/png")
        response["X-Accel-Redirect"] = settings.ATELIER_MEDIA_ACCEL_REDIRECT.rstrip("/") + "/" + name
    else:
        response = FileResponse(storage.open(name, "rb"), content_type="image/png")
    response["Cache-Control"] = cache_control
    return response
