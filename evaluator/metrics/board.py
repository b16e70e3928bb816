"""A board's statistics as plain data: what BoardStats stores and what a board download recomputes.

Input: per-task scores and prompt styles (mean words, share written as a list) of each entry, each task's category
and split. The ranking statistics (score, rank range, neighbour tests, win rates, length control) use the board's
ranked tasks: its test split when every category has at least `ranked_split_min` test tasks (the hidden tasks are the
ones nobody can tune to), otherwise every task. Each entry's dev and test scores and their gap are shown either way.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from statistics import fmean

from evaluator.categories import CATEGORIES

from .decisions import decide, neighbours, pair_intervals, separable
from .intervals import macro_intervals
from .ranking import (
    MIN_STYLE_DOF,
    MIN_STYLE_TASKS,
    board_score,
    category_groups,
    length_effect,
    list_formatted,
    pair_records,
    rank_ranges,
    win_intervals,
    win_rates,
)
from .scopes import RankedOn

PAIRWISE_ENTRIES = 30  # the pairwise win matrix covers the top entries by score (the field rate covers everyone)
# alpha: every interval is at 1 - alpha (neighbour intervals together, dev and test together); nothing is random.
SETTINGS = {"alpha": 0.05, "tie_margin": 0.0, "ranked_split_min": 2}


def prompt_style(prompt: str) -> tuple[int, bool]:
    """All the statistics read of a prompt's text: its words and whether it is written as a list (a redacted release
    keeps these two in place of an erased prompt, so its statistics still recompute)."""
    return len(prompt.split()), list_formatted(prompt)


def prompt_styles(prompts: Iterable[tuple[str, str, str]]) -> tuple[dict, dict]:
    """(lengths[entry][task] = mean words, lists[entry][task] = share written as a list) from (entry, task, prompt) rows."""
    return styles_of((entry, task, *prompt_style(prompt)) for entry, task, prompt in prompts)


def styles_of(rows: Iterable[tuple[str, str, int, bool]]) -> tuple[dict, dict]:
    """prompt_styles from (entry, task, words, written as a list) rows."""
    words: dict[tuple[str, str], list[int]] = defaultdict(list)
    listed: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for entry, task, count, as_list in rows:
        words[(entry, task)].append(count)
        listed[(entry, task)].append(as_list)
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
    confidence = 1 - settings["alpha"]
    field, _ = win_rates(scores, settings["tie_margin"], pairs_for=[])
    rates = {e: w.rate for e, w in field.items() if w.rate is not None}
    decisions = decide(scores, categories, rates, settings["alpha"])
    ranges = rank_ranges(scores, categories, decisions, rates, confidence)
    order = [r.entry for r in ranges]
    pairs = pair_records(scores, order[:PAIRWISE_ENTRIES], settings["tie_margin"])
    bounds = pair_intervals(scores, order[:PAIRWISE_ENTRIES], decisions)
    wins = win_intervals(scores, settings["tie_margin"], confidence)
    effects = length_effect(scores, lengths, categories, lists)
    styled = {e.category for e in effects}
    identified = bool(scores) and styled == {categories[t] for t in ranked}
    entries = {r.entry: _ranked_entry(r, field, wins, effects if identified else []) | {"position": i} for i, r in enumerate(ranges)}
    gaps = _gaps(every, categories, splits, confidence)
    for entry in every:  # every entry shows its split scores and what it covers, ranked or not
        length = fmean(v for v in lengths.get(entry, {}).values()) if lengths.get(entry) else None
        entries.setdefault(entry, {"score": None, "rank": None}).update(
            **gaps[entry], length=length, feedback=entry in rounds, **covered[entry]
        )
    return {
        "ranked_on": {"split": split, "tasks": len({t for by_task in scores.values() for t in by_task}), "entries": len(scores)},
        "intervals": {"shown": bool(ranges), "confidence": confidence, "method": "star-bets"},
        "separable": separable(decisions, len(ranked) if scores else 0),
        "decisions": decisions,
        "style": {
            "identified": identified,
            "categories": sorted(styled, key=CATEGORIES.index),
            "minimum_tasks": MIN_STYLE_TASKS,
            "minimum_dof": MIN_STYLE_DOF,
        },
        "entries": entries,
        "comparisons": neighbours(scores, order, decisions),
        "wins": {f"{a}:{b}": [w.wins, w.ties, w.losses, *bounds[(a, b)]] for (a, b), w in pairs.items()},
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


def _ranked_entry(r, field: dict, wins: dict, effects: list) -> dict:
    """A ranked entry's statistics; its length-controlled score only where every category's fit gave it one, on 0-100."""
    controlled = [e.controlled.get(r.entry) for e in effects]
    lc = fmean(controlled) if controlled and None not in controlled else None
    win_low, win_high = wins.get(r.entry, (None, None))
    return {
        "score": r.score,
        "low": r.low,
        "high": r.high,
        "rank": r.rank,
        "rank_high": r.rank_high,
        "win_rate": field[r.entry].rate if r.entry in field else None,
        "win_low": win_low,
        "win_high": win_high,
        "lc": lc if lc is None or 0 <= lc <= 100 else None,
    }


def _gaps(every: dict, categories: dict, splits: dict, confidence: float) -> dict:
    """Each entry's dev and test scores and the gap dev − test with its interval: the dev and the test interval each
    at 1 - (1 - confidence) / 2 (both hold together with probability `confidence`), the gap's interval their
    difference's extremes. A gap from one or two tasks per category gets a wide interval, not a bare number."""
    split_tasks = {
        e: {s: {t: v for t, v in by_task.items() if splits.get(t) == s} for s in ("dev", "test")} for e, by_task in every.items()
    }
    level = 1 - (1 - confidence) / 2
    bounds = {
        s: dict(zip(every, macro_intervals([category_groups(split_tasks[e][s], categories) for e in every], level)))
        for s in ("dev", "test")
    }
    out = {}
    for entry in every:
        dev, test = (board_score(split_tasks[entry][s], categories) for s in ("dev", "test"))
        (dev_low, dev_high), (test_low, test_high) = bounds["dev"][entry], bounds["test"][entry]
        both = None not in (dev, test, dev_low, test_low)
        out[entry] = {
            "dev": dev,
            "test": test,
            "gap": dev - test if both else None,  # type: ignore[operator]
            "gap_low": dev_low - test_high if both else None,  # type: ignore[operator]
            "gap_high": dev_high - test_low if both else None,  # type: ignore[operator]
        }
    return out
