"""RQ entry point of this app: a board's signed release, made whenever what the release carries changes (leaderboard/apps.py)."""

from __future__ import annotations

import logging

from .releases import NoReleaseKey, releases_make

log = logging.getLogger(__name__)


def release_job(pack_id: int | None = None, revision: int | None = None) -> None:
    """Release the board of every judge of this pack revision (of every board when none is named); without a signing
    key the site makes none (its board page says so), which is a setting to fix, not a failed job. Any other failure
    stays in RQ's failed-job registry."""
    try:
        releases_make(pack_id, revision)
    except NoReleaseKey as exc:
        log.warning("board %s rev %s not released: %s", pack_id, revision, exc)
