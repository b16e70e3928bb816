"""A board's human baseline rows as plain data (board.json). The rows themselves are built by studies.humans,
which reads the participants; this layer owns the table and never imports the studies app."""

from __future__ import annotations

from evaluation.models import HumanRow
from tasks.models import TaskPack

HUMAN_ROW_FIELDS = (
    "label",
    "tier",
    "scripted",
    "participants",
    "tasks_per_participant",
    "tasks",
    "protocols",
    "studies",
    "first",
    "last",
    "judge_id",
    "judge_version",
    "judge_label",
    "figures",
)


def human_rows_export(*, pack: TaskPack, revision: int, judge_id: str, judge_version: str) -> list[dict]:
    """A board's human rows for one judge as plain data, in HUMAN_ROW_FIELDS order (for board.json): people's rows
    (novice, skilled, all), then the scripted demo participants' rows, each with `scripted` and its label."""
    found = HumanRow.objects.filter(pack=pack, revision=revision, judge_id=judge_id, judge_version=judge_version)
    order = {tier: i for i, tier in enumerate(HumanRow.TIER_ORDER)}
    rows = sorted(found, key=lambda r: (r.scripted, order.get(r.tier, len(order))))
    return [{name: _plain(getattr(row, name)) for name in HUMAN_ROW_FIELDS} for row in rows]


def _plain(value: object) -> object:
    return value.isoformat() if hasattr(value, "isoformat") else value
