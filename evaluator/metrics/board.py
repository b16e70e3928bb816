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

from evaluator.categories import CATEGORIES

from .aggregate import MIN_TASKS_FOR_INTERVAL
from .ranking import MIN_STYLE_DOF, adjacent_tests, best_possible_p, board_score, length_effect, list_formatted, rank_ranges, win_rates
from .scopes import RankedOn

PAIRWISE_ENTRIES = 30  # the pairwise win matrix covers the top entries by score (the field rate covers everyone)
SETTINGS = {"seed": 0, "alpha": 0.05, "resamples": 9999, "tie_margin": 0.0, "ranked_split_min": 2}


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


def ranked_tasks(categories: dict, splits: dict, minimum: int) -> tuple[RankedOn, set[str]]:
    """(RankedOn.TEST, its tasks) when every category has at least `minimum` test tasks, else (RankedOn.ALL, every task)."""
    test = Counter(categories[t] for t, s in splits.items() if s == "test" and t in categories)
    if minimum and all(test[c] >= minimum for c in set(categories.values())):
        return RankedOn.TEST, {t for t, s in splits.items() if s == "test" and t in categories}
    return RankedOn.ALL, set(categories)


def coverage_of(by_task: dict, ranked: set[str], categories: dict) -> dict:
    """How much of the ranked tasks an entry has scores for: {covers, of, missing: categories with a task missing}."""
    missing = sorted({categories[t] for t in ranked if t not in by_task}, key=CATEGORIES.index)
    return {"covers": sum(t in by_task for t in ranked), "of": len(ranked), "missing": missing}


def board_stats_compute(
    every: dict,
    lengths: dict,
    categories: dict,
    splits: dict,
    settings: dict = SETTINGS,
    lists: dict | None = None,
    feedback: Iterable[str] = (),
) -> dict:
    """Everything BoardStats stores, as plain data (the board download's recompute script calls this too). Only
    single-turn entries with a score on every ranked task are ranked: the others are listed with what they cover, and
    runs with feedback rounds (`feedback`: entries that saw their images between rounds) are never ranked beside them."""
    split, ranked = ranked_tasks(categories, splits, settings.get("ranked_split_min", 0))
    covered = {e: coverage_of(by_task, ranked, categories) for e, by_task in every.items()}
    rounds = set(feedback)
    scores = {
        e: {t: v for t, v in by_task.items() if t in ranked}
        for e, by_task in every.items()
        if ranked and covered[e]["covers"] == len(ranked) and e not in rounds
    }
    ranges = rank_ranges(scores, categories)
    order = [r.entry for r in ranges]
    comparisons = adjacent_tests(scores, categories, order, alpha=settings["alpha"], resamples=settings["resamples"], seed=settings["seed"])
    intervals = bool(ranges) and all(r.low is not None for r in ranges)
    field, pairs = win_rates(scores, tie_margin=settings["tie_margin"], pairs_for=order[:PAIRWISE_ENTRIES]) if intervals else ({}, {})
    effects = length_effect(scores, lengths, categories, lists)
    styled = {e.category for e in effects}
    identified = bool(scores) and styled == {categories[t] for t in ranked}
    entries = {r.entry: _ranked_entry(r, field, effects if identified else []) for r in ranges}
    for entry, by_task in every.items():  # every entry shows its split scores and what it covers, ranked or not
        by_split = {s: board_score({t: v for t, v in by_task.items() if splits.get(t) == s}, categories) for s in ("dev", "test")}
        gap = by_split["dev"] - by_split["test"] if None not in by_split.values() else None
        length = fmean(v for v in lengths.get(entry, {}).values()) if lengths.get(entry) else None
        entries.setdefault(entry, {"score": None, "rank": None}).update(
            dev=by_split["dev"], test=by_split["test"], gap=gap, length=length, feedback=entry in rounds, **covered[entry]
        )
    return {
        "ranked_on": {"split": split, "tasks": len({t for by_task in scores.values() for t in by_task}), "entries": len(scores)},
        "intervals": {"shown": intervals, "minimum_tasks": MIN_TASKS_FOR_INTERVAL},
        "separable": _separable(comparisons, settings),
        "style": {"identified": identified, "categories": sorted(styled, key=CATEGORIES.index), "minimum_dof": MIN_STYLE_DOF},
        "entries": entries,
        "comparisons": [asdict(c) for c in comparisons],
        "wins": {f"{a}:{b}": [w.wins, w.ties, w.losses] for (a, b), w in pairs.items()},
        "length": [
            {
                "category": e.category,
                "coefficient": e.coefficient,
                "low": e.low,
                "high": e.high,
                "n": e.n,
                "list_coefficient": e.list_coefficient,
                "list_low": e.list_low,
                "list_high": e.list_high,
            }
            for e in effects
        ],
    }


def _ranked_entry(r, field: dict, effects: list) -> dict:
    """A ranked entry's statistics; its length-controlled score only where every category's fit gave it one, on 0-100."""
    controlled = [e.controlled.get(r.entry) for e in effects]
    lc = fmean(controlled) if controlled and None not in controlled else None
    return {
        "score": r.score,
        "low": r.low,
        "high": r.high,
        "rank": r.rank,
        "rank_high": r.rank_high,
        "win_rate": field[r.entry].rate if r.entry in field else None,
        "lc": lc if lc is None or 0 <= lc <= 100 else None,
    }


def _separable(comparisons: list, settings: dict) -> dict:
    """Whether any neighbour test can reach the significance level at all at this board's numbers of common tasks:
    Holm multiplies the smallest p by the number of tests, and an exact sign-flip test has a smallest p."""
    tested = [c for c in comparisons if c.p_value is not None]
    if not tested:
        return {"possible": False, "best_p_holm": None, "tests": 0}
    best = min(len(tested) * best_possible_p(c.tasks, settings["resamples"]) for c in tested)
    return {"possible": best < settings["alpha"], "best_p_holm": min(best, 1.0), "tests": len(tested)}
