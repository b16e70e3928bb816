"""A board's statistics as plain data: what BoardStats stores and what a board download recomputes.

Input: per-task scores and prompt styles (mean words, share written as a list) of each entry, each task's category
and split. The ranking statistics (score, rank range, neighbour tests, win rates, length control) use the board's
ranked tasks: its test split when every category has at least `ranked_split_min` test tasks (the hidden tasks are the
ones nobody can tune to), otherwise every task. Each entry's dev and test scores and their gap are shown either way.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict
from statistics import fmean

from .ranking import adjacent_tests, board_score, length_effect, list_formatted, rank_ranges, win_rates

PAIRWISE_ENTRIES = 30  # the pairwise win matrix covers the top entries by score (the field rate covers everyone)
SETTINGS = {"replicates": 1000, "seed": 0, "alpha": 0.05, "resamples": 9999, "tie_margin": 0.0, "ranked_split_min": 2}


def prompt_styles(prompts: Iterable[tuple[str, str, str]]) -> tuple[dict, dict]:
    """(lengths[entry][task] = mean words, lists[entry][task] = share written as a list) from (entry, task, prompt) rows."""
    words: dict[tuple[str, str], list[int]] = defaultdict(list)
    listed: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for entry, task, prompt in prompts:
        words[(entry, task)].append(len(prompt.split()))
        listed[(entry, task)].append(list_formatted(prompt))
    lengths: dict[str, dict[str, float]] = defaultdict(dict)
    lists: dict[str, dict[str, float]] = defaultdict(dict)
    for (entry, task), counts in words.items():
        lengths[entry][task], lists[entry][task] = fmean(counts), fmean(listed[(entry, task)])
    return dict(lengths), dict(lists)


def ranked_tasks(categories: dict, splits: dict, minimum: int) -> tuple[str, set[str]]:
    """("test", its tasks) when every category has at least `minimum` test tasks, else ("all", every task)."""
    test = Counter(categories[t] for t, s in splits.items() if s == "test" and t in categories)
    if minimum and all(test[c] >= minimum for c in set(categories.values())):
        return "test", {t for t, s in splits.items() if s == "test" and t in categories}
    return "all", set(categories)


def board_stats_compute(every: dict, lengths: dict, categories: dict, splits: dict, settings: dict = SETTINGS, lists: dict | None = None) -> dict:
    """Everything BoardStats stores, as plain data (the board download's recompute script calls this too)."""
    split, ranked = ranked_tasks(categories, splits, settings.get("ranked_split_min", 0))
    scores = {e: kept for e, by_task in every.items() if (kept := {t: v for t, v in by_task.items() if t in ranked})}
    ranges = rank_ranges(scores, categories, replicates=settings["replicates"], seed=settings["seed"])
    order = [r.entry for r in ranges]
    comparisons = adjacent_tests(scores, categories, order, alpha=settings["alpha"], resamples=settings["resamples"], seed=settings["seed"])
    field, pairs = win_rates(scores, tie_margin=settings["tie_margin"], pairs_for=order[:PAIRWISE_ENTRIES])
    effects = length_effect(scores, lengths, categories, lists)
    entries = {}
    for r in ranges:
        controlled = [e.controlled[r.entry] for e in effects if r.entry in e.controlled]
        entries[r.entry] = {
            "score": r.score, "low": r.low, "high": r.high, "rank": r.rank, "rank_low": r.rank_low, "rank_high": r.rank_high,
            "arena_rank": r.arena_rank, "win_rate": field[r.entry].rate, "lc": fmean(controlled) if controlled else None,
        }  # fmt: skip
    for entry, by_task in every.items():  # entries with no ranked task still show their split scores
        by_split = {s: board_score({t: v for t, v in by_task.items() if splits.get(t) == s}, categories) for s in ("dev", "test")}
        gap = by_split["dev"] - by_split["test"] if None not in by_split.values() else None
        length = fmean(v for v in lengths.get(entry, {}).values()) if lengths.get(entry) else None
        entries.setdefault(entry, {"score": None, "rank": None}).update(dev=by_split["dev"], test=by_split["test"], gap=gap, length=length)
    return {
        "ranked_on": {"split": split, "tasks": len(ranked)},
        "entries": entries,
        "comparisons": [asdict(c) for c in comparisons],
        "wins": {f"{a}:{b}": [w.wins, w.ties, w.losses] for (a, b), w in pairs.items()},
        "length": [{"category": e.category, "coefficient": e.coefficient, "low": e.low, "high": e.high, "n": e.n,
                    "list_coefficient": e.list_coefficient, "list_low": e.list_low, "list_high": e.list_high} for e in effects],
    }
