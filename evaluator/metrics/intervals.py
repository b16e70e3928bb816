"""Confidence intervals for the mean of bounded scores, valid for every distribution at every number of tasks.

The method is the hedged-capital betting interval of Waudby-Smith & Ramdas, "Estimating means of bounded random
variables by betting" (J. R. Stat. Soc. B, 2024), with the predictable plug-in bets of their Section 5 tuned for a
fixed sample size. Its guarantee is a theorem, not a simulation: for x_1 … x_n drawn independently from any
distribution on [low, high] with mean μ, the interval holds μ with probability at least `confidence`, for every
n ≥ 1. Nothing is assumed about the shape (piles at 100, two clusters, a five-level rating, a point mass).

How it works, on the unit scale (x mapped to (x − low) / (high − low)): for a candidate mean m, a bettor starts with
capital 1 and bets on each observation in turn, winning when x_i − m has the sign it backs:

    K⁺_t(m) = Π_{i ≤ t} (1 + λ⁺_i(m) (x_i − m)),      K⁻_t(m) = Π_{i ≤ t} (1 − λ⁻_i(m) (x_i − m)).

If m is the true mean both are nonnegative martingales with initial value 1, so by Ville's inequality the chance
that θ·K⁺ or (1 − θ)·K⁻ ever reaches 1/α is at most α (θ = 1/2: the hedge). The interval is every m at which
neither ever does (the running maximum over t: stopping early is allowed). The bet sizes are predictable (they use
x_1 … x_{i−1} only):

    μ̂_i = (1/2 + Σ_{j ≤ i} x_j) / (i + 1),    σ̂²_i = (1/4 + Σ_{j ≤ i} (x_j − μ̂_j)²) / (i + 1),
    λ_i = sqrt(2 log(2/α) / (n σ̂²_{i−1})),      λ⁺_i(m) = min(λ_i, c/m),   λ⁻_i(m) = min(λ_i, c/(1 − m)),

with c = 1/2 as in the paper's experiments (a bet never stakes more than half the capital, so the capital cannot
drop to 0 on one observation). Each factor of K⁺ is nonincreasing in m (both when λ⁺ = λ and when λ⁺ = c/m,
whose factor is 1 − c + c·x/m), so {m : θK⁺ reaches 1/α} is an interval [0, a); likewise K⁻ excludes (b, 1]. The
interval is [a, b], found by bisection to 2⁻³⁰ of the range, each end rounded outwards (never narrower than the
exact set), then widened to hold the sample mean should the two ends cross (a superset keeps the guarantee).

Order: the capital depends on the order of the observations; the guarantee holds for any order that does not depend
on the values. Callers pass tasks in task-id order.

Command line (one JSON array of numbers per input line, one JSON object per output line):

    python -m evaluator.metrics.intervals [--confidence 0.95] [--low 0] [--high 100] < scores.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

TRUNCATION = 0.5  # c: the largest share of the capital one bet may stake
HEDGE = 0.5  # θ: the capital split between betting the mean is above m and betting it is below
STEPS = 30  # bisection steps: each end within 2^-30 of the range (about 1e-7 on 0-100), rounded outwards


def mean_interval(values: Sequence[float], low: float, high: float, confidence: float = 0.95) -> tuple[float, float] | None:
    """The interval of the mean of `values` (each in [low, high], in an order that does not depend on them), or None
    for no values."""
    if len(values) == 0:
        return None
    lows, highs = mean_interval_rows(np.asarray([values], dtype=float), low, high, confidence)
    return float(lows[0]), float(highs[0])


def mean_interval_rows(
    rows: np.ndarray, low: float, high: float, confidence: float = 0.95, design: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """mean_interval of each row of a (rows × n) array at once (n ≥ 1). `design`: the confidence the bet sizes are
    tuned for (default `confidence`); any fixed design keeps the guarantee at any level, so a step-down procedure
    (evaluator.metrics.pairs) can read one set of bets at several levels."""
    rows = checked_rows(rows, low, high, confidence)
    width = high - low
    lower, upper = _unit_rows((rows - low) / width, 1 - confidence, 1 - (design or confidence))
    return low + width * lower, low + width * upper


def checked_rows(rows: np.ndarray, low: float, high: float, confidence: float) -> np.ndarray:
    """`rows` as a 2-d float array with a value in each row, all within [low, high]; a ValueError names what is not."""
    if not (math.isfinite(low) and math.isfinite(high) and high > low):
        raise ValueError(f"the range [{low}, {high}] must be finite and not empty")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    rows = np.asarray(rows, dtype=float)
    if rows.ndim != 2 or rows.shape[1] == 0:
        raise ValueError("expected a 2-d array with at least one value per row")
    outside = ~((rows >= low) & (rows <= high))  # NaN counts as outside
    if outside.any():
        row, column = map(int, np.argwhere(outside)[0])
        raise ValueError(f"value {float(rows[row, column])!r} (row {row}, position {column}) lies outside [{low}, {high}]")
    return rows


def bet_sizes(x: np.ndarray, design_alpha: float) -> np.ndarray:
    """λ_i of each row of unit-scale values (predictable: λ_i reads x_1 … x_{i−1} only), tuned for `design_alpha`."""
    count, n = x.shape
    steps = np.arange(1, n + 1)
    mu = (0.5 + np.cumsum(x, axis=1)) / (steps + 1)
    sigma2 = (0.25 + np.cumsum((x - mu) ** 2, axis=1)) / (steps + 1)
    before = np.concatenate([np.full((count, 1), 0.25), sigma2[:, :-1]], axis=1)  # σ̂²_{i−1}: predictable
    return np.sqrt(2 * math.log(2 / design_alpha) / (n * before))


def log_capital(x: np.ndarray, lam: np.ndarray, m: np.ndarray, sign: int) -> np.ndarray:
    """The running maximum over t of log K⁺_t(m) (sign +1) or log K⁻_t(m) (sign −1), per row, unhedged."""
    room = m if sign > 0 else 1 - m
    bet = np.minimum(lam, TRUNCATION / np.maximum(room, 1e-300)[:, None])
    return np.cumsum(np.log1p(sign * bet * (x - m[:, None])), axis=1).max(axis=1)


def _unit_rows(x: np.ndarray, alpha: float, design_alpha: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    count = x.shape[0]
    lam = bet_sizes(x, design_alpha or alpha)
    threshold = math.log(1 / alpha)

    def reaches(m: np.ndarray, sign: int) -> np.ndarray:
        """Whether the hedged side's capital (θK⁺ for sign +1, (1 − θ)K⁻ for −1) ever reaches 1/α at m (per row)."""
        return math.log(HEDGE) + log_capital(x, lam, m, sign) >= threshold

    # a = inf{m : θK⁺(m) never reaches 1/α}: K⁺ falls as m grows, so `reaches` is true below a and false above.
    below, above = np.zeros(count), np.ones(count)
    for _ in range(STEPS):
        middle = (below + above) / 2
        hit = reaches(middle, +1)
        below, above = np.where(hit, middle, below), np.where(hit, above, middle)
    lower = below  # an excluded point (or 0): at or below a
    below, above = np.zeros(count), np.ones(count)
    for _ in range(STEPS):
        middle = (below + above) / 2
        hit = reaches(middle, -1)
        below, above = np.where(hit, below, middle), np.where(hit, middle, above)
    upper = above  # an excluded point (or 1): at or above b
    mean = x.mean(axis=1)
    return np.minimum(lower, mean), np.maximum(upper, mean)


def digits_supported(half_width: float | None, most: int = 2) -> int:
    """Decimals a figure can be printed to when its uncertainty is ± half_width: its last digit at the order of the
    half-width's leading digit (± 2.4 → 0 decimals, ± 0.3 → 1), at most `most`; `most` where there is no uncertainty."""
    if half_width is None or not math.isfinite(half_width) or half_width <= 0:
        return most
    return max(0, min(most, -math.floor(math.log10(half_width))))


def macro_intervals(
    many: list[list[list[float]]], confidence: float = 0.95, low: float = 0.0, high: float = 100.0
) -> list[tuple[float | None, float | None]]:
    """The interval of each macro mean in `many` (a mean of K group means, e.g. an entry's categories): each group's
    interval at 1 - (1 - confidence) / K, averaged. With probability at least `confidence` all K cover their means at
    once (Bonferroni), and then the average covers the average. (None, None) for no groups or an empty one. Rows of equal length and level are computed together, so a
    board of 10,000 entries costs a few vectorised calls."""
    batches: dict[tuple[int, float], list[tuple[int, int, list[float]]]] = defaultdict(list)
    for i, groups in enumerate(many):
        if groups and all(groups):
            level = 1 - (1 - confidence) / len(groups)
            for k, values in enumerate(groups):
                batches[(len(values), level)].append((i, k, values))
    bounds: dict[tuple[int, int], tuple[float, float]] = {}
    for (_, level), rows in batches.items():
        lows, highs = mean_interval_rows(np.array([values for _, _, values in rows], dtype=float), low, high, level)
        for (i, k, _), a, b in zip(rows, lows, highs):
            bounds[(i, k)] = (float(a), float(b))
    out: list[tuple[float | None, float | None]] = []
    for i, groups in enumerate(many):
        if not groups or not all(groups):
            out.append((None, None))
            continue
        parts = [bounds[(i, k)] for k in range(len(groups))]
        out.append((float(np.mean([a for a, _ in parts])), float(np.mean([b for _, b in parts]))))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evaluator.metrics.intervals",
        description="Confidence intervals for the mean of bounded values (Waudby-Smith & Ramdas's betting interval): "
        "valid for any distribution on [low, high] at every n. Reads one JSON array of numbers per line (in an order that "
        'does not depend on the values); writes one JSON object per line: {"n", "mean", "low", "high"} (for [], nulls and a "reason"), '
        'or {"error"} for a line that is not such an array (the exit status is then 1). With the default range this is '
        "the interval of a board's category cell.",
    )
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--low", type=float, default=0.0, help="the values' lower bound (default 0)")
    parser.add_argument("--high", type=float, default=100.0, help="the values' upper bound (default 100)")
    options = parser.parse_args(argv)
    if not (0 < options.confidence < 1 and math.isfinite(options.low) and math.isfinite(options.high) and options.high > options.low):
        parser.error("need 0 < --confidence < 1 and finite --low < --high")
    failed = False
    for number, raw in enumerate(sys.stdin.buffer, start=1):  # bytes: a line that is not UTF-8 is one bad line
        if not raw.strip():
            continue
        try:
            values = json.loads(raw.decode("utf-8"))
            if not isinstance(values, list) or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                raise ValueError("expected a JSON array of numbers")
            if not values:  # a valid question with no answer: the board shows no figure either
                print(json.dumps({"n": 0, "mean": None, "low": None, "high": None, "reason": "no scores: a mean needs one at least"}))
                continue
            low, high = mean_interval(values, options.low, options.high, options.confidence)  # type: ignore[misc]
            print(json.dumps({"n": len(values), "mean": sum(values) / len(values), "low": low, "high": high}))
        # json.JSONDecodeError and UnicodeDecodeError are ValueErrors; an integer too large for a float overflows; arrays
        # nested thousands deep exhaust the decoder's recursion
        except (ValueError, OverflowError, RecursionError) as error:
            failed = True
            print(json.dumps({"error": f"line {number}: {error}"}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
