"""A board's statistics as plain data: what BoardStats stores and what a board download recomputes.

Input: per-task scores and prompt lengths (mean words) of each entry, each task's category and split.
"""

from __future__ import annotations

from dataclasses import asdict
from statistics import fmean

from .ranking import adjacent_tests, board_score, length_effect, rank_ranges, win_rates

PAIRWISE_ENTRIES = 30  # the pairwise win matrix covers the top entries by score (the field rate covers everyone)
SETTINGS = {"replicates": 1000, "seed": 0, "alpha": 0.05, "resamples": 9999, "tie_margin": 0.0}


def board_stats_compute(scores: dict, lengths: dict, categories: dict, splits: dict, settings: dict = SETTINGS) -> dict:
    """Everything BoardStats stores, as plain data (the board download's recompute script calls this too)."""
    ranges = rank_ranges(scores, categories, replicates=settings["replicates"], seed=settings["seed"])
    order = [r.entry for r in ranges]
    comparisons = adjacent_tests(scores, categories, order, alpha=settings["alpha"], resamples=settings["resamples"], seed=settings["seed"])
    field, pairs = win_rates(scores, tie_margin=settings["tie_margin"], pairs_for=order[:PAIRWISE_ENTRIES])
    effects = length_effect(scores, lengths, categories)
    entries = {}
    for r in ranges:
        controlled = [e.controlled[r.entry] for e in effects if r.entry in e.controlled]
        by_split = {s: board_score({t: v for t, v in scores[r.entry].items() if splits.get(t) == s}, categories) for s in ("dev", "test")}
        gap = by_split["dev"] - by_split["test"] if None not in by_split.values() else None
        entries[r.entry] = {
            "score": r.score, "low": r.low, "high": r.high, "rank": r.rank, "rank_low": r.rank_low, "rank_high": r.rank_high,
            "arena_rank": r.arena_rank, "win_rate": field[r.entry].rate, "lc": fmean(controlled) if controlled else None,
            "dev": by_split["dev"], "test": by_split["test"], "gap": gap,
            "length": fmean(v for v in lengths.get(r.entry, {}).values()) if lengths.get(r.entry) else None,
        }  # fmt: skip
    return {
        "entries": entries,
        "comparisons": [asdict(c) for c in comparisons],
        "wins": {f"{a}:{b}": [w.wins, w.ties, w.losses] for (a, b), w in pairs.items()},
        "length": [{"category": e.category, "coefficient": e.coefficient, "low": e.low, "high": e.high, "n": e.n} for e in effects],
    }
