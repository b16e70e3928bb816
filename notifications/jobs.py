"""The mail queue's job: thin, as every job is (registered in apps.py by dotted name)."""

from __future__ import annotations

from .services import notice_send


def notice_send_job(notice_id: int) -> str:
    """One try at a notice; its result (rq keeps it) says what happened."""
    return notice_send(notice_id=notice_id)
