"""A board's head-to-head decisions (evaluator.metrics.pairs) over every pair of its ranked entries, held together,
and what follows from them: rank ranges, the row order and the neighbour rows.

The family is fixed before any score is read: every unordered pair of the N ranked entries, on the overall tasks and
on each category whose number of tasks could decide a pair at all (winning every one of them at level 1 − α on its
own; a category too small for that is never tested and is said to be so). Each pair and scope gives two one-sided
claims, "A is ahead" and "B is ahead"; Holm's step-down over all of them (pairs.holm) keeps the chance that any stated
claim is false at α, under any dependence between them. Only pairs among the first DECIDED_ENTRIES entries by field
win rate are computed on a large board; the others count in the family with p-value 1 (a valid, conservative
p-value), so the guarantee stands and only their power is given up.

- Rank range: best rank 1 + the entries decided ahead of it, worst N − the entries it is decided ahead of.
- Row order: no row stands above an entry decided ahead of it (a topological order of the decisions), and among the
  rows that order leaves free, the higher field win rate (ECHO's pseudo-pairwise statistic) first, then the higher
  mean score. Should the decisions ever form a cycle (possible only through a false claim or intransitive win
  probabilities), the order breaks it at the highest win rate and counts the claims it cannot honour.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import replace

import numpy as np

from .betting import betting_rows
from .order import task_order
from .pairs import HeadToHead, best_possible, design_level, head_to_head, holm, one_sided_p, outcomes, tasks_needed

OVERALL = "overall"
DECIDED_ENTRIES = 200  # pairs among the first 200 entries by field win rate are computed (19,900 pairs per scope)


def scopes_tested(tasks: list[str], categories: dict[str, str], alpha: float) -> dict[str, list[str]]:
    """Scope -> its tasks in the fixed shuffle (order.task_order): overall, then each category that could decide a pair."""
    out = {OVERALL: task_order(tasks)}
    for category in sorted({categories[t] for t in tasks}):
        mine = [t for t in tasks if categories[t] == category]
        if len(mine) < len(tasks) and best_possible(len(mine), 1 - alpha):
            out[category] = task_order(mine)
    return out


def decide(scores: dict[str, dict[str, float]], categories: dict[str, str], rates: dict[str, float], alpha: float = 0.05) -> dict:
    """Every claim the board can state, decided together. `scores`: ranked entries, each with a score on the same
    tasks; `rates`: field win rates (which pairs are computed on a board over DECIDED_ENTRIES). Plain data: the
    family's size, the bets' design level, the level undecided claims are read at, and each decided claim
    [ahead, behind, scope, level]."""
    entries = sorted(scores)
    tasks = sorted(set.intersection(*(set(scores[e]) for e in entries))) if entries else []
    scopes = scopes_tested(tasks, categories, alpha) if tasks else {}
    pairs_total = len(entries) * (len(entries) - 1) // 2
    family = pairs_total * len(scopes)
    if not family:
        return {"tests": 0, "confidence": 1 - alpha, "scopes": list(scopes), "rest": None, "ahead": [], "computed": 0}
    design = design_level(1 - alpha, family)
    chosen = sorted(entries, key=lambda e: (-rates.get(e, 0.0), e))[:DECIDED_ENTRIES]
    pairs = [(a, b) for i, a in enumerate(chosen) for b in chosen[i + 1 :]]
    claims, p = [], []
    for scope, order in scopes.items():
        x = np.array([outcomes([scores[a][t] for t in order], [scores[b][t] for t in order]) for a, b in pairs])
        a_ahead, b_ahead = one_sided_p(x, 1 - design) if len(pairs) else (np.ones(0), np.ones(0))
        claims += [(a, b, scope) for a, b in pairs] + [(b, a, scope) for a, b in pairs]
        p += [*a_ahead, *b_ahead]
    decided, levels, rest = holm(np.asarray(p, dtype=float), alpha, total=2 * family)  # uncomputed claims: p = 1
    ahead = [[*claims[i], float(levels[i])] for i in np.flatnonzero(decided)]
    ahead.sort(key=lambda c: (c[2] != OVERALL, c[2], c[3], c[0], c[1]))
    return {"tests": family, "confidence": 1 - alpha, "scopes": list(scopes), "rest": rest, "ahead": ahead, "computed": len(chosen)}


def decided_overall(decisions: dict) -> set[tuple[str, str]]:
    """(ahead, behind) for every overall claim the board decided."""
    return {(a, b) for a, b, scope, _ in decisions.get("ahead", []) if scope == OVERALL}


def rank_bounds(entries: list[str], decisions: dict) -> dict[str, tuple[int, int]]:
    """Each entry's (best, worst) rank: 1 + the entries ahead of it, N − the entries it is ahead of."""
    above, below = defaultdict(int), defaultdict(int)
    for a, b in decided_overall(decisions):
        below[a] += 1
        above[b] += 1
    return {e: (1 + above[e], len(entries) - below[e]) for e in entries}


def row_order(entries: list[str], decisions: dict, rates: dict[str, float], means: dict[str, float]) -> tuple[list[str], int]:
    """(the rows in order, how many decided claims the order cannot honour: 0 unless the decisions form a cycle).
    Kahn's topological sort with the free rows in a heap by (higher win rate, higher mean, id)."""
    behind: dict[str, set[str]] = defaultdict(set)
    waiting = dict.fromkeys(entries, 0)
    for a, b in decided_overall(decisions):
        behind[a].add(b)
        waiting[b] += 1
    key = {e: (-(rates.get(e) or 0.0), -(means.get(e) or 0.0), e) for e in entries}
    free = [key[e] for e in entries if waiting[e] == 0]
    heapq.heapify(free)
    placed: set[str] = set()
    order, broken = [], 0
    while len(order) < len(entries):
        if free:
            pick = heapq.heappop(free)[2]
        else:  # a cycle: break it at the best remaining row, counting the claims it overrides
            pick = min((e for e in entries if e not in placed), key=key.__getitem__)
            broken += waiting[pick]
        order.append(pick)
        placed.add(pick)
        for b in behind[pick]:
            waiting[b] -= 1
            if waiting[b] == 0 and b not in placed:
                heapq.heappush(free, key[b])
    return order, broken


def claim_level(decisions: dict, a: str, b: str, scope: str = OVERALL) -> float | None:
    """The level the board reads A against B at on a scope: its decided claim's, else the level left undecided
    claims are read at; None where the scope is not in the family."""
    if scope not in decisions.get("scopes", []):
        return None
    for x, y, s, level in decisions.get("ahead", []):
        if s == scope and {x, y} == {a, b}:
            return level
    return decisions.get("rest")


def board_pair(
    decisions: dict, a: dict[str, float], b: dict[str, float], ids: tuple[str, str], order: list[str], scope: str = OVERALL
) -> HeadToHead | None:
    """A against B (`ids`: their entry ids) as the board decided it: the head-to-head over `order` at the claim's
    level with the board's bets, told apart exactly where the board decided it; None where the pair is not in the
    family."""
    level = claim_level(decisions, *ids, scope)
    if level is None or not decisions.get("tests"):
        return None
    found = head_to_head([a[t] for t in order], [b[t] for t in order], decisions["confidence"], decisions["tests"], level=level)
    ahead = {(x, y) for x, y, s, _ in decisions["ahead"] if s == scope}
    winner = "a" if tuple(ids) in ahead else "b" if tuple(reversed(ids)) in ahead else None
    return replace(found, told_apart=winner is not None, ahead=winner)


def neighbours(scores: dict[str, dict[str, float]], order: list[str], decisions: dict) -> list[dict]:
    """Each pair of neighbouring rows, upper against lower on the overall tasks, as the board decided it (the
    intervals of pairs read at one level computed together: a board of 10,000 rows has 9,999 neighbours)."""
    if not order:
        return []
    tasks = task_order(set.intersection(*(set(scores[e]) for e in order)))
    pairs = list(zip(order, order[1:]))
    if not decisions.get("tests") or not tasks:
        return [{"upper": u, "lower": w, "tasks": len(tasks), "low": None, "high": None, "separated": False} for u, w in pairs]
    x = np.array([outcomes([scores[u][t] for t in tasks], [scores[w][t] for t in tasks]) for u, w in pairs])
    ahead = {(a, b) for a, b, s, _ in decisions["ahead"] if s == OVERALL}
    level = {frozenset((a, b)): lv for a, b, s, lv in decisions["ahead"] if s == OVERALL}
    levels = np.array([level.get(frozenset(p), decisions["rest"]) for p in pairs])
    lows, highs = np.zeros(len(pairs)), np.ones(len(pairs))
    design = design_level(decisions["confidence"], decisions["tests"])
    for shown in np.unique(levels):
        rows = levels == shown
        lows[rows], highs[rows] = betting_rows(x[rows], 0.0, 1.0, float(shown), design)
    return [
        {
            "upper": u,
            "lower": w,
            "tasks": len(tasks),
            "upper_wins": int((x[i] == 1).sum()),
            "lower_wins": int((x[i] == 0).sum()),
            "ties": int((x[i] == 0.5).sum()),
            "low": float(lows[i]),
            "high": float(highs[i]),
            "level": float(levels[i]),
            "separated": (u, w) in ahead or (w, u) in ahead,
        }
        for i, (u, w) in enumerate(pairs)
    ]


def separable(decisions: dict, tasks: int) -> dict:
    """Whether any pair could be told apart at this board's number of tasks (winning every task, at the first step's
    level) and, where not, the fewest tasks that could."""
    tests, confidence = decisions.get("tests", 0), decisions.get("confidence", 0.95)
    if not tests:
        return {"possible": False, "tests": 0, "tasks": tasks, "needed": None}
    return {"possible": best_possible(tasks, confidence, tests), "tests": tests, "tasks": tasks, "needed": tasks_needed(confidence, tests)}


def pair_intervals(scores: dict[str, dict[str, float]], chosen: list[str], decisions: dict) -> dict[tuple[str, str], tuple]:
    """(a, b) -> the interval of P(a beats b) on the overall tasks as the board reads it (board_pair), for every ordered
    pair among `chosen`; (None, None) where the pair is not in the family."""
    if len(chosen) < 2:
        return {}
    tasks = task_order(set.intersection(*(set(scores[e]) for e in chosen)))
    out: dict[tuple[str, str], tuple] = {}
    for i, a in enumerate(chosen):
        for b in chosen[i + 1 :]:
            pair = board_pair(decisions, scores[a], scores[b], (a, b), tasks)
            out[(a, b)] = (pair.low, pair.high) if pair else (None, None)
            out[(b, a)] = (1 - pair.high, 1 - pair.low) if pair else (None, None)  # ties count half either way
    return out
