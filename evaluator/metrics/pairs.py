"""Head-to-head decisions between two entries, with a guarantee for any scores and power at a pack's real size.

On each common task, A's task score above B's is a win for A (outcome 1), equal is a tie (½), below is a loss (0).
The outcomes lie on [0, 1], and their mean estimates P(A beats B on a task) + ½ P(tie): "A beats B on 83 % of
common tasks". Its interval is the betting interval for bounded means (evaluator.metrics.betting), valid for any
joint law of the two scores at every number of tasks; A and B are *told apart* when it excludes ½, and the entry
the interval lies on the side of is *ahead*.

Why outcomes and not score differences: a mean difference lives on [−100, 100], and an interval valid for every law
on that range must leave room for an unseen −100, so a few-point gap is never told apart from 100 tasks whatever the
method. Outcomes keep the guarantee and carry the gap's natural spread: a 5-point gap with per-task spread 10 is won
on about 69 % of tasks, which 100 tasks separate from 50 % (bench/pairs_power.py measures it).

Several decisions held together: `head_to_head(..., tests=m)` takes the interval at 1 − α/m (Bonferroni). A board
(`decide`) holds every pair of its ranked entries, on the overall tasks and on each category with enough tasks to
be decidable at all, with Holm's step-down over the one-sided claims "A is ahead of B": the bets are tuned for the
first step (level 1 − α/m) and each claim is read at the level of the step that decides it, so a decision stated
anywhere (neighbours, rank ranges, the compare view, /sota/ steps) is false with probability at most α for all of
them together, and a decided pair's interval excludes ½ at the level shown beside it.

Command line (one JSON object per line in, one out; `python -m evaluator.metrics.pairs --help`):

    {"a": [80, 72, ...], "b": [75, 70, ...], "tests": 3}
    -> {"n", "a_wins", "b_wins", "ties", "low", "high", "told_apart", "ahead"}
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from .betting import HEDGE, bet_sizes, betting_rows, log_capital

HALF = 0.5  # the null: neither entry more likely to win a task


@dataclass(frozen=True)
class HeadToHead:
    """A against B over n common tasks; low/high: the interval of P(A beats B) (+ ½ P(tie)) at `confidence`."""

    n: int
    a_wins: int
    b_wins: int
    ties: int
    low: float | None
    high: float | None
    told_apart: bool
    ahead: str | None  # "a", "b" or None
    confidence: float | None = None

    @property
    def rate(self) -> float | None:
        return (self.a_wins + 0.5 * self.ties) / self.n if self.n else None

    def public(self) -> dict:
        """The command line's fields (the confidence is the caller's)."""
        return {k: v for k, v in asdict(self).items() if k != "confidence"}


def outcomes(a: Sequence[float], b: Sequence[float], tie_margin: float = 0.0) -> np.ndarray:
    """Per position: 1 where a is above b by more than tie_margin, 0 where below, ½ within it."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return np.where(d > tie_margin, 1.0, np.where(d < -tie_margin, 0.0, HALF))


def head_to_head(
    a: Sequence[float], b: Sequence[float], confidence: float = 0.95, tests: int = 1, *, level: float | None = None, tie_margin: float = 0.0
) -> HeadToHead:
    """A against B over positions paired in the given order (which must not depend on the values). The interval is
    at 1 − (1 − confidence)/tests with bets tuned for that level; `level` reads the same bets at another level (a
    step of Holm's procedure, see decide)."""
    if len(a) != len(b):
        raise ValueError(f"a has {len(a)} scores and b has {len(b)}: they must pair by position")
    design = design_level(confidence, tests)
    x = outcomes(a, b, tie_margin)
    wins, losses = int((x == 1).sum()), int((x == 0).sum())
    if not len(x):
        return HeadToHead(0, 0, 0, 0, None, None, False, None, design)
    shown = design if level is None else level
    low, high = (float(v[0]) for v in betting_rows(x[None, :], 0.0, 1.0, shown, design))
    ahead = "a" if low > HALF else "b" if high < HALF else None
    return HeadToHead(len(x), wins, losses, len(x) - wins - losses, low, high, ahead is not None, ahead, shown)


def design_level(confidence: float, tests: int) -> float:
    """The level `tests` decisions held together take each (Bonferroni): what the bets are tuned for."""
    return 1 - (1 - confidence) / tests


def best_possible(n: int, confidence: float = 0.95, tests: int = 1) -> bool:
    """Whether n tasks can tell two entries apart at all: A winning every one of them is told apart."""
    return n > 0 and head_to_head([1.0] * n, [0.0] * n, confidence, tests).told_apart


def tasks_needed(confidence: float = 0.95, tests: int = 1, limit: int = 100_000) -> int | None:
    """The fewest tasks on which winning every one tells two entries apart at these settings (None beyond limit)."""
    n = 1
    while n <= limit and not best_possible(n, confidence, tests):
        n *= 2
    if n > limit:
        return None
    low = n // 2  # best_possible is monotone in n: search (n/2, n]
    while low + 1 < n:
        middle = (low + n) // 2
        low, n = (low, middle) if best_possible(middle, confidence, tests) else (middle, n)
    return n


def told_apart_rows(a: np.ndarray, b: np.ndarray, confidence: float = 0.95, tests: int = 1) -> np.ndarray:
    """head_to_head's told_apart for each row of (runs × n) scores at once, read off the bettors' capital at ½ (the
    interval excludes ½ exactly when one hedged bettor reaches 1/α there): no bisection, for simulations."""
    design = design_level(confidence, tests)
    up, down = one_sided_p(outcomes(a, b), 1 - design)
    return np.minimum(up, down) <= HEDGE * (1 - design)


@functools.lru_cache(maxsize=256)
def power(n: int, delta: float, sigma: float, tests: int = 1, runs: int = 2000, seed: int = 0) -> float:
    """The share of `runs` simulated pairs told apart on n tasks when A's task score minus B's is normal with mean
    `delta` and spread `sigma` (points): bench/pairs_power.py's cell, seeded, so a page shows the same figure each time."""
    d = np.random.default_rng(seed).normal(delta, sigma, (runs, n))
    return float(told_apart_rows(d, np.zeros_like(d), tests=tests).mean())


def one_sided_p(x: np.ndarray, design_alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row of outcomes: the p-values of "a is ahead" and "b is ahead" (each 1 / the running maximum of its bettor's
    capital at ½, Ville's inequality), with the bets that betting_rows uses at design level 1 − design_alpha."""
    lam = bet_sizes(x, design_alpha)
    m = np.full(x.shape[0], HALF)
    return tuple(np.minimum(1.0, np.exp(-log_capital(x, lam, m, sign))) for sign in (+1, -1))  # type: ignore[return-value]


def holm(p: np.ndarray, alpha: float, total: int | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Holm's step-down over one-sided p-values: (decided, the two-sided level each decided claim is read at, the
    level the rest are read at). Step j (from 0) decides p ≤ α/(m − j); `total` (default len(p)) counts claims not
    computed as well, whose p-value is 1 (they come last and are never decided). A one-sided claim at α' is the
    hedged two-sided interval at 1 − 2α' (intervals.HEDGE = ½), so its interval excludes ½ exactly when decided."""
    m = len(p) if total is None else total
    order = np.argsort(p, kind="stable")
    thresholds = alpha / (m - np.arange(len(p)))
    passed = p[order] <= thresholds
    stop = int(np.argmin(passed)) if not passed.all() else len(p)
    decided = np.zeros(len(p), dtype=bool)
    decided[order[:stop]] = True
    levels = np.ones(len(p))
    levels[order[:stop]] = 1 - thresholds[:stop] / HEDGE
    rest = 1 - alpha / (m - stop) / HEDGE if stop < m else 1 - alpha / HEDGE
    return decided, levels, float(rest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evaluator.metrics.pairs",
        description='Head-to-head decisions: reads one JSON object per line, {"a": [...], "b": [...], "tests": m} '
        "(per-task scores on 0-100 paired by position, in an order that does not depend on them; tests: how many decisions "
        'are held together, default 1), writes {"n", "a_wins", "b_wins", "ties", "low", "high", "told_apart", "ahead"} '
        'per line: low/high bound P(a beats b on a task) (ties half). A bad line gives {"error"} and exit status 1.',
    )
    parser.add_argument("--confidence", type=float, default=0.95)
    options = parser.parse_args(argv)
    if not 0 < options.confidence < 1:
        parser.error("need 0 < --confidence < 1")
    failed = False
    for number, raw in enumerate(sys.stdin.buffer, start=1):
        if not raw.strip():
            continue
        try:
            a, b, tests = _parsed(raw)
            print(json.dumps(head_to_head(a, b, options.confidence, tests).public()))
        except (ValueError, OverflowError, RecursionError) as error:  # JSON and UTF-8 errors are ValueErrors
            failed = True
            print(json.dumps({"error": f"line {number}: {error}"}))
    return 1 if failed else 0


def _parsed(raw: bytes) -> tuple[list[float], list[float], int]:
    line = json.loads(raw.decode("utf-8"))
    if not isinstance(line, dict):
        raise ValueError('expected a JSON object {"a": [...], "b": [...], "tests": m}')
    unknown = sorted(set(line) - {"a", "b", "tests"})
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r} (fields: a, b, tests)")
    tests = line.get("tests", 1)
    if isinstance(tests, bool) or not isinstance(tests, int) or tests < 1:
        raise ValueError(f"tests must be an integer of at least 1, not {tests!r}")
    sides = [_scores(line, side) for side in ("a", "b")]
    if len(sides[0]) != len(sides[1]):
        raise ValueError(f"a has {len(sides[0])} scores and b has {len(sides[1])}: they pair by position")
    return sides[0], sides[1], tests


def _scores(line: dict, side: str) -> list[float]:
    values = line.get(side)
    if not isinstance(values, list):
        raise ValueError(f"{side} must be a JSON array of scores on 0-100")
    for k, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int | float) or not (math.isfinite(v) and 0 <= v <= 100):
            raise ValueError(f"{side}[{k}] is {v!r}: scores are numbers on 0-100")
    return [float(v) for v in values]


if __name__ == "__main__":
    sys.exit(main())
