"""The human baseline as a board publishes it: its rows, and every entry's score on the humans' tasks.

One definition for the site and for the download's check: studies.humans pools a board's participants into the
HumanRow table with human_rows, leaderboard.selectors shows (and the board download publishes) the common-task scores
with common_tasks and common_task_scores, and evaluator.recompute rebuilds all of them from a download's files with
the same functions.

A row pools one tier's participants, or all of them (Tier.ALL), of one judge (the caller gives one judge's
participants: rows are never pooled across judges). Scripted demo participants (rules, not people) are pooled only
with each other, in rows of their own. Each participant is one sample of the pooled units, so aggregate's task score
(the mean over samples) is the mean over the participants who did the task, and every figure and interval is
computed exactly as for a prompter.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from statistics import fmean
from typing import Any, TypeVar

from ..tiers import ROW_TIERS, Tier
from .aggregate import Unit, figures, task_figures

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Participant:
    """One participant as the rows pool them: their units (scored by the rows' judge) and what a row says of them."""

    tier: str  # a participant tier (evaluator.tiers.PARTICIPANT_TIERS)
    scripted: bool  # a scripted demo participant: pooled only with other scripted ones
    units: Sequence[Unit]
    entries: int  # the prompts they wrote
    study: str
    protocol: str  # the study's protocol version
    completed: Any = None  # when they finished: a datetime on the site, ISO text in a download (only ever sorted)


def human_rows(participants: Sequence[Participant]) -> list[dict]:
    """One judge's human rows: people's, then the scripted participants', each in ROW_TIERS order (a tier nobody is
    in has no row). A participant is the sample of its place in `participants` (the site and the download give them
    in id order), so the rows do not depend on who reads them."""
    rows = []
    for scripted in (False, True):
        pool = [p for p in participants if p.scripted == scripted]
        rows += [human_row(tier, scripted, members) for tier in ROW_TIERS if (members := [p for p in pool if tier in (Tier.ALL, p.tier)])]
    return rows


def human_row(tier: str, scripted: bool, group: Sequence[Participant]) -> dict:
    """A row of `group` pooled: its figures (aggregate's, and each task's) and what it pools (every HumanRow field that
    is computed; the judge and the label name it)."""
    units = [replace(u, sample=sample) for sample, p in enumerate(group) for u in p.units]
    done = sorted(p.completed for p in group if p.completed)
    return {
        "tier": tier,
        "scripted": scripted,
        "participants": len(group),
        "tasks_per_participant": sum(p.entries for p in group) / len(group),
        "tasks": sorted({u.task_id for u in units}),
        "protocols": sorted({p.protocol for p in group}),
        "studies": sorted({p.study for p in group}),
        "first": done[0] if done else None,
        "last": done[-1] if done else None,
        "figures": [asdict(f) for f in (*figures(units), *task_figures(units))],
    }


def common_tasks(rows: Iterable[tuple[str, bool, Sequence[str]]], board_tasks: int) -> tuple[list[str], bool]:
    """The tasks the humans' scores rest on, from each row's (tier, scripted, tasks): those of the people's "all" row
    (every task any of them did), else of the scripted participants' "all" row; and whether they are only some of the
    board's `board_tasks` tasks, when every entry is also scored on them alone (common_task_scores)."""
    rows = list(rows)
    pooled = sorted((r for r in rows if r[0] == Tier.ALL), key=lambda r: r[1])  # people's (not scripted) first
    tasks = list(pooled[0][2]) if pooled else []
    return tasks, bool(rows) and len(tasks) < board_tasks


def common_task_scores(
    scores: Mapping[K, Mapping[str, float | None]], tasks: Sequence[str], categories: Mapping[str, str]
) -> dict[K, float]:
    """Each entry's overall on `tasks` only, from its task scores (task id -> score): the mean of its category means
    over those tasks, as its overall is the mean of its category means over all of them. An entry with no score on
    any of them is left out."""
    out = {}
    for entry, by_task in scores.items():
        by_category: dict[str, list[float]] = defaultdict(list)
        for task_id in tasks:
            if (value := by_task.get(task_id)) is not None:
                by_category[categories[task_id]].append(value)
        if by_category:
            out[entry] = fmean(fmean(v) for v in by_category.values())
    return out
