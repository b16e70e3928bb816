"""The human baseline as board.json publishes it, rebuilt from humans.jsonl and human_units.jsonl with the functions
the site pools and shows it with (evaluator.metrics.humans): the rows, and, when they cover only some of the board's
tasks, every entry's score on those tasks."""

from __future__ import annotations

from ..metrics.humans import Participant, common_task_scores, common_tasks, human_rows
from .download import Download


def humans_section(scores: dict[str, dict[str, float]], download: Download) -> dict:
    """board.json's "humans" from the download's participants (each the sample of its line's place, as the site pools
    them in id order) and the entries' recomputed task scores (entry id -> task id -> score)."""
    rows = human_rows([participant(line, download) for line in download.participants])
    tasks, partial = common_tasks(((r["tier"], r["scripted"], r["tasks"]) for r in rows), len(download.tasks))
    return {
        "rows": rows,
        "partial": partial,
        "tasks": len(tasks),
        "common": common_task_scores(scores, tasks, download.categories) if partial else {},
    }


def participant(line: dict, download: Download) -> Participant:
    """A humans.jsonl line and its units, as the rows pool them."""
    return Participant(
        tier=line["tier"],
        scripted=bool(line.get("scripted")),
        units=download.human_units.get(line["participant"], []),
        entries=line["entries"],
        study=line["study"],
        protocol=line["protocol"],
        completed=line["completed"],
    )
