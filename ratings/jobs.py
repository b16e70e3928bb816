"""RQ entry point of this app: one /judge/ statistics report recomputed (ratings/reports.py), sent by name (ratings/apps.py)."""

from __future__ import annotations

from .reports import report_fail, report_refresh


def report_job(kind: str, scripted: bool, subject: str) -> None:
    """Recompute one report unless it is current; a failure is written on its row (our words), then re-raised so RQ's
    failed-job registry keeps the traceback."""
    try:
        report_refresh(kind, scripted, subject)
    except Exception as exc:
        report_fail(kind, scripted, subject, exc)
        raise
