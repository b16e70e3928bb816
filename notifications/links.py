"""The links in e-mails: absolute, under ATELIER_SITE_URL, since a mail is read outside the site and is often sent by
a worker that has no request to take a host from. Every mail the site sends builds its links here."""

from __future__ import annotations

from django.conf import settings

# Settings refuse to start without ATELIER_SITE_URL when DEBUG is off; with DEBUG, unset, links go to runserver's address.
DEBUG_SITE_URL = "http://127.0.0.1:8000"


def site_url() -> str:
    return settings.ATELIER_SITE_URL or DEBUG_SITE_URL


def absolute(path: str) -> str:
    """A site path (from reverse()) as the full URL a mail carries."""
    return site_url() + path
