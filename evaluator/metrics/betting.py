"""The betting interval for the mean of bounded scores, valid for every distribution at every number of tasks and
at every stopping time (anytime-valid): what the head-to-head decisions read (evaluator.metrics.pairs, decisions).

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
on the values. Callers pass tasks in order.task_order (a fixed shuffle of their ids).

The intervals the site shows for a mean are STaR-Bets' (evaluator.metrics.intervals, star): narrower at a planned n.
This one stays for the decisions because its running maximum gives anytime p-values (pairs.one_sided_p) and one set
of bets can be read at every level of a step-down procedure.
"""

from __future__ import annotations

import math

import numpy as np

TRUNCATION = 0.5  # c: the largest share of the capital one bet may stake
HEDGE = 0.5  # θ: the capital split between betting the mean is above m and betting it is below
STEPS = 30  # bisection steps: each end within 2^-30 of the range (about 1e-7 on 0-100), rounded outwards


def betting_rows(
    rows: np.ndarray, low: float, high: float, confidence: float = 0.95, design: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The betting interval of the mean of each row of a (rows × n) array at once (n ≥ 1), each row in an order that
    does not depend on its values. `design`: the confidence the bet sizes are
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
