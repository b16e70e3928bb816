"""How the difficulty predictor's scores agree with this site's judge, per board: validated on the platform's own data.

Items are a board's entries (published, finished, scored by the board's judge): each entry's predicted score
(tasks/difficulty.py, made before rendering) against its image part as that judge scored it (0–100: the mean over
backends of the image-side composite). Pearson r and Kendall τ-b per category and overall, with task-bootstrap
intervals under evaluator.metrics.agreement's rules (none below 10 tasks), computed by
evaluation.difficulty.difficulty_agreement: the function whose result each board's signed release carries in
board.json, so `recompute --check` rebuilds these very figures. Cached until a board or the predictor changes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.core.cache import cache

from evaluation.boards import boards_version
from evaluation.difficulty import board_entries, difficulty_agreement
from evaluation.models import BoardStats
from evaluator.metrics.agreement import Interval
from tasks import difficulty
from tasks.models import PredictedDifficulty

from .agreement import CACHE_SECONDS


@dataclass(frozen=True)
class BoardDifficulty:
    board: str  # the pack, its version and revision
    judge: str  # the judge's public label ("smoke (random weights)" included where it applies)
    predictor: str
    rows: list[tuple[str, Interval, Interval]]  # (category or "overall", Pearson, Kendall)
    submissions: int  # entries with at least one item counted


def difficulty_reports(resamples: int = 1000) -> list[BoardDifficulty] | None:
    """One report per board and judge (most entries first); None without a predictor."""
    manifest = difficulty.installed()
    if manifest is None:
        return None
    scored = PredictedDifficulty.objects.filter(predictor=manifest["version"]).count()  # predictions made since
    raw = f"{manifest['version']}:{scored}:{boards_version().key}:{resamples}"
    key = "difficulty-agreement:" + hashlib.sha256(raw.encode()).hexdigest()
    reports = cache.get(key)
    if reports is None:
        reports = []
        for stats in BoardStats.objects.select_related("pack").order_by("-entry_count", "pack__name", "-revision", "judge_id"):
            entries = board_entries(stats.pack_id, stats.revision, stats.judge_id, stats.judge_version)
            found = difficulty_agreement(entries, stats.judge_id, stats.judge_version, resamples) or {}
            rows = [(r["group"], Interval(**r["pearson"]), Interval(**r["kendall"])) for r in found.get("rows", [])]
            board = f"{stats.pack.name} v{stats.pack.version}" + (f" rev {stats.revision}" if stats.revision > 1 else "")
            label = stats.judge_label or stats.judge_id
            reports.append(BoardDifficulty(board, label, manifest["version"], rows, found.get("submissions", 0)))
        cache.set(key, reports, timeout=CACHE_SECONDS)
    return reports
