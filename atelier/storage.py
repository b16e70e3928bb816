"""Media on S3-compatible object storage (AWS S3, MinIO, Cloudflare R2), with the site's own URLs.

Pages and downloads link every file as /media/<name>, the same as on the filesystem: the media view checks who may
see it, then sends the bytes or a short-lived presigned URL (`delivery_url`). So a link on a page or in a board
download never expires and never lets a viewer past the permission check.
"""

from __future__ import annotations

from urllib.parse import urljoin

from django.conf import settings
from django.utils.encoding import filepath_to_uri
from storages.backends.s3 import S3Storage
from storages.utils import clean_name


class MediaStorage(S3Storage):
    def url(self, name: str, parameters: dict | None = None, expire: int | None = None, http_method: str | None = None) -> str:
        """The site's URL of the file (through the media view), never the bucket's."""
        return urljoin(settings.MEDIA_URL, filepath_to_uri(name))

    def delivery_url(self, name: str, *, public: bool) -> str:
        """Where the browser fetches the bytes once the view has allowed it: the public/CDN base for a published
        file when one is configured, else a presigned URL that lives ATELIER_S3_URL_SECONDS."""
        if public and settings.ATELIER_MEDIA_PUBLIC_URL:
            return urljoin(settings.ATELIER_MEDIA_PUBLIC_URL.rstrip("/") + "/", filepath_to_uri(self._normalize_name(clean_name(name))))
        return super().url(name, expire=settings.ATELIER_S3_URL_SECONDS)
