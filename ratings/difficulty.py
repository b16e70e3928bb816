"""How the difficulty predictor's scores agree with this site's judge, per board: validated on the platform's own data.

Items are a board's entries (published, finished, scored by the board's judge): each entry's predicted score
(tasks/difficulty.py, made before rendering) against its image part as that judge scored it (0–100: the mean over
backends of the image-side composite). Pearson r and Kendall τ-b per category and overall, with task-bootstrap
intervals under evaluator.metrics.agreement's rules (none below 10 tasks), computed by
evaluation.difficulty.difficulty_agreement: the function whose result each board's signed release carries in
board.json, so `recompute --check` rebuilds these very figures. One report per board and judge, computed by a job
when the board or the predictions change (ratings/reports.py), never per request.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.difficulty import board_entries, difficulty_agreement
from evaluation.models import BoardStats
from evaluator.metrics.agreement import Interval


@dataclass(frozen=True)
class BoardDifficulty:
    board: str  # the pack, its version and revision
    judge: str  # the judge's public label ("smoke (random weights)" included where it applies)
    predictor: str
    rows: list[tuple[str, Interval, Interval]]  # (category or "overall", Pearson, Kendall)
    submissions: int  # entries with at least one item counted


def board_difficulty(stats: BoardStats, predictor: str, resamples: int = 1000) -> BoardDifficulty:
    """One board and judge's report (`stats` with its pack), for the installed predictor's version."""
    entries = board_entries(stats.pack_id, stats.revision, stats.judge_id, stats.judge_version)
    found = difficulty_agreement(entries, stats.judge_id, stats.judge_version, resamples) or {}
    rows = [(r["group"], Interval(**r["pearson"]), Interval(**r["kendall"])) for r in found.get("rows", [])]
    return BoardDifficulty(board_name(stats), stats.judge_label or stats.judge_id, predictor, rows, found.get("submissions", 0))


def board_name(stats: BoardStats) -> str:
    """The pack, its version and revision (with `stats.pack` loaded)."""
    return f"{stats.pack.name} v{stats.pack.version}" + (f" rev {stats.revision}" if stats.revision > 1 else "")


def boards() -> list[BoardStats]:
    """Every board and judge, in the page's order: most entries first."""
    return list(BoardStats.objects.select_related("pack").order_by("-entry_count", "pack__name", "-revision", "judge_id"))
