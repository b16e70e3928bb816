"""STaR-Bets confidence intervals for the mean of bounded scores: Voráček & Orabona, "STaR-Bets: Sequential
Target-Recalculating Bets for Tighter Confidence Intervals" (NeurIPS 2025, arXiv 2505.22422), deterministic.

The guarantee is the paper's Theorem 2 (with Markov's inequality, its Proposition 1): for x_1 … x_n drawn independently
from one distribution on [low, high] with mean μ, n fixed in advance and the order of the values not chosen by looking
at them, the interval holds μ with probability at least `confidence`. Nothing is assumed about the distribution's shape.

The test (unit scale, x mapped to (x − low) / (high − low); the paper's Algorithm 4 with its Appendix D details, as the
authors' code runs it): for a candidate mean m, wealth W_0 = 1 and, before each x_t (s = t − 1 values seen, n − s
rounds left),

    v_t = min{m(1 − m), (1/s) Σ_{i ≤ s} (x_i − m)² + m·n/s²}      (v_1 = m(1 − m)),
    ℓ_t = min(1/m, sqrt(2 · max(log(1/δ) − log W_{t−1}, 0) / ((n − s) · v_t))),
    W_t = W_{t−1} · (1 + ℓ_t (x_t − m)).

ℓ_t reads x_1 … x_{t−1} only and 0 ≤ ℓ_t ≤ 1/m, so under mean m, W is a nonnegative martingale with W_0 = 1 and
P(W_n ≥ 1/δ) ≤ δ: m is rejected when W_n ≥ 1/δ (the bet is 0 once W reaches 1/δ, so W_n ≥ 1/δ exactly when W ever
reaches it). Each side gets δ = (1 − confidence)/2; the upper end is 1 minus the lower end of 1 − x.

The candidates (the paper's Section 4, "Discretization"): m_k = k/GRID, k = 1 … GRID − 1. The lower end is m_{k−1} for
the first k whose test does not reject (m_0 = 0; m_GRID = 1 is never rejected: its bets never win). This is valid for
every μ, not only grid points: a μ in (m_{k−1}, m_k] is tested by copying m_k's bets (predictable, 0 ≤ ℓ ≤ 1/m_k ≤ 1/μ,
so a test process under mean μ), whose wealth is at least m_k's since each factor 1 + ℓ(x − μ) ≥ 1 + ℓ(x − m_k); so if
μ < m_{k−1} then m_k' was rejected for the k' with μ ∈ (m_{k'−1}, m_{k'}], and that single test rejects its null with
probability at most δ (μ = 0 means x ≡ 0, and then no candidate is rejected). Each end is conservative by at most
1/GRID of the range.

Speed: the ends are those of evaluating all GRID − 1 candidates (bench/mean_intervals.py does), found from a few
dozen runs per row. First a search runs the test at a handful of candidates per row at a time and narrows to a kept
candidate m_k whose predecessor is rejected. That alone would assume the rejected candidates form a prefix, which is
not proved for STaR-Bets (the paper discretizes because m ↦ W_n(m) has no known simple structure), so every candidate
below m_k is then proved rejected, a whole range of them per run, by the following argument; a range that fails is
split, a single candidate that fails is run itself, and a kept one found below m_k takes its place.

Write h_t(m) = max(log(1/δ) − log W_t(m), 0), the log-wealth still missing (0 once m is rejected, +∞ at wealth 0; m is
rejected exactly when h_n(m) = 0). Step t maps h_{t−1} to h_t = max(N(h_{t−1}), 0), where N(h) = h − log(1 + φ(h)),
φ(h) = ℓ(h)(x_t − m) and ℓ(h) = min(1/m, sqrt(2h/((n − s) v_t(m)))): the test's own bet at missing log-wealth h.

1. h ↦ max(N(h), 0) is nondecreasing. Where x_t ≥ m, φ(h) is concave and nondecreasing in h (a min of 1/m·(x_t − m)
   and a multiple of √h), so log(1 + φ(h)) is concave with value 0 at h = 0: N is convex with N(0) = 0, hence
   nondecreasing wherever N ≥ 0. Where x_t < m, φ(h) is nonincreasing in h, so N is increasing.
2. For candidates m in [a, b] ⊂ (0, 1), bound the bet. v_t(m) = min(m(1 − m), u_t(m)) with u_t(m) = σ²_s + (x̄_s −
   m)² + m·n/s² (x̄_s, σ²_s: mean and variance of x_1 … x_s), a convex quadratic in m with vertex x̄_s − n/(2s²); so
   v_lo ≤ v_t(m) ≤ v_hi with v_hi = min(max over [a, b] of m(1 − m), max(u_t(a), u_t(b))) and v_lo = min(a(1 − a),
   b(1 − b), u_t(the vertex clipped to [a, b])) (s = 0: v_1 = m(1 − m) alone). Hence ℓ_lo(h) ≤ ℓ(h) ≤ ℓ_hi(h) with
   ℓ_lo(h) = min(1/b, sqrt(2h/((n − s) v_hi))) and ℓ_hi(h) = min(1/a, sqrt(2h/((n − s) v_lo))), and φ(h) ≥ L(h) for
   every m in [a, b], where L(h) = ℓ_lo(h)(x_t − b) if x_t ≥ b (then x_t − m ≥ x_t − b ≥ 0) and L(h) = ℓ_hi(h)(x_t − b)
   if x_t < b (for m ≤ x_t, φ ≥ 0 ≥ L; for m > x_t, 0 > x_t − m ≥ x_t − b and ℓ ≤ ℓ_hi).
3. Run H_0 = log(1/δ), H_t = max(H_{t−1} − log(1 + max(L(H_{t−1}), −1)), 0) (φ ≥ −1 always). By induction, for every m
   in [a, b], h_t(m) ≤ max(N(H_{t−1}), 0) ≤ H_t (point 1, then point 2 at h = H_{t−1}): if H_n = 0, every candidate
   in [a, b] is rejected. For a = b, L = φ and the run is the test itself.

Floating point: the range runs start from log(1/δ)·(1 + SAFETY), shrink each L and widen [v_lo, v_hi] by SAFETY
relative (and 1e-15 absolute), far more than the rounding of their few operations; a candidate they do not prove
rejected is run itself. So the ends equal the full grid's up to the rounding of the test's own arithmetic (that of
bench/mean_intervals.star_log_wealth, kept operation for operation), where the two can only differ for a candidate
whose final log-wealth lies within about 1e-15 of log(1/δ).

Order: as with every betting interval, the result depends on the order of the values, and the guarantee holds only for
an order that does not depend on them (callers pass tasks in order.task_order, a fixed shuffle of their ids).
STaR-Bets is more sensitive to a value-correlated order than the hedged betting interval: on values sorted by size its
bets chase the target late and the two ends cross (at n = 100, about 60 % of sorted uniform rows come out as the point
[x̄, x̄] after widening), where evaluator.metrics.betting still gives a 7-10 point interval (which then misses the mean
about half the time too).

Not used: the paper's Appendix D.2 randomised threshold (reject when W_n ≥ U/δ, U uniform), valid but it gives two
different intervals for the same scores. The authors' code also adds 1e-4 guards (to m(1 − m), to m in the second-moment
term and in the bet's cap 1/m); they only matter at m = 0 and 1, which are not candidates here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .betting import checked_rows

GRID = 1000  # candidate means k/GRID: each end conservative by at most 1/GRID of the range (0.1 point on 0-100)
SEARCH = 8  # candidates per row run at once while searching (fewer rounds of n steps vs more work per round)
FIRST, GUESS = 0.3, 1.3  # the first round's factors: FIRST · GUESS^j
BUDGET = 4096  # with few rows, candidates per row run at once: up to this many in all (all candidates for one row)
SAFETY = 1e-9  # relative margin by which the range runs are made pessimistic (floating point)
GROWTH = 4  # the ranges proved at once grow by this factor downwards from the kept candidate found …
ROWS = 50_000  # rows worked on at once
RATIO = 4  # … and near 0 each spans at most this ratio of means (a wider one rarely holds: bets near 0 are large)


def mean_interval(values: Sequence[float], low: float, high: float, confidence: float = 0.95) -> tuple[float, float] | None:
    """The STaR-Bets interval of the mean of `values` (each in [low, high], in an order that does not depend on them),
    or None for no values."""
    if len(values) == 0:
        return None
    lows, highs = mean_interval_rows(np.asarray([values], dtype=float), low, high, confidence)
    return float(lows[0]), float(highs[0])


def mean_interval_rows(
    rows: np.ndarray, low: float, high: float, confidence: float = 0.95, grid: int = GRID
) -> tuple[np.ndarray, np.ndarray]:
    """mean_interval of each row of a (rows × n) array at once (n ≥ 1), the same calling convention as
    evaluator.metrics.betting.betting_rows. Each end lies on the grid low + k (high − low)/grid, rounded outwards,
    then widened to hold the row's mean should it fall outside (a superset keeps the guarantee)."""
    if not (isinstance(grid, int) and grid >= 2):
        raise ValueError(f"grid must be an integer of at least 2, not {grid!r}")
    rows = checked_rows(rows, low, high, confidence)
    width = high - low
    x = np.clip((rows - low) / width, 0.0, 1.0)  # rounding can step a hair outside [0, 1]
    delta = (1 - confidence) / 2
    lower, upper = np.empty(x.shape[0]), np.empty(x.shape[0])
    for start in range(0, x.shape[0], ROWS):  # bounded memory: a few arrays of ROWS × (a dozen) per step
        part = x[start : start + ROWS]
        first = first_kept(np.concatenate([part, 1 - part]), delta, grid)  # both sides at once: one pass of n steps
        lower[start : start + ROWS] = (first[: part.shape[0]] - 1) / grid
        upper[start : start + ROWS] = 1 - (first[part.shape[0] :] - 1) / grid
    mean = x.mean(axis=1)
    lower, upper = np.minimum(lower, mean), np.maximum(upper, mean)
    return low + width * lower, np.minimum(low + width * upper, high)


def log_wealth(x: np.ndarray, m: np.ndarray, delta: float) -> np.ndarray:
    """STaR-Bets' final log-wealth against candidate means m (rows × k, each row's own candidates, 0 < m < 1) for each
    row of unit-scale values x (rows × n). The arithmetic is bench/mean_intervals.star_log_wealth's, operation for
    operation."""
    n = x.shape[1]
    target = math.log(1 / delta)
    cap = m * (1 - m)
    most = 1 / m
    scaled = m * n
    wealth = np.zeros(m.shape)
    squares = np.zeros(m.shape)
    with np.errstate(divide="ignore"):
        for seen in range(n):
            missing = np.maximum(target - wealth, 0)
            spread = cap if seen == 0 else np.minimum(cap, scaled / seen**2 + squares / seen)
            bet = np.sqrt(2 * missing / ((n - seen) * spread))
            np.minimum(bet, most, out=bet)
            step = x[:, seen, None] - m
            bet *= step
            np.maximum(bet, -1.0, out=bet)  # ℓ = 1/m and x = 0: wealth 0
            wealth += np.log1p(bet, out=bet)
            squares += step * step
    return wealth


def proved_rejected(x: np.ndarray, a: np.ndarray, b: np.ndarray, delta: float) -> np.ndarray:
    """Whether the pessimistic range run (module docstring, points 2-3) proves every candidate mean in [a, b] rejected
    (rows × k each, 0 < a ≤ b < 1), for each row of unit-scale values x (rows × n)."""
    n = x.shape[1]
    missing = np.full(a.shape, math.log(1 / delta) * (1 + SAFETY))
    middle = np.clip(0.5, a, b)
    p_most, p_least = middle * (1 - middle), np.minimum(a * (1 - a), b * (1 - b))
    most_a, most_b, a2, b2 = 1 / a, 1 / b, a * a, b * b
    seen = np.arange(1, n + 1)
    mean = np.cumsum(x, axis=1) / seen  # of x_1 … x_s in column s − 1
    second = np.cumsum(x * x, axis=1) / seen
    with np.errstate(divide="ignore", invalid="ignore"):
        for s in range(n):
            value = x[:, s, None]
            up = value >= b
            if s == 0:
                v_most, v_least = p_most, p_least
            else:  # u_s(m) = (1/s) Σ (x_i − m)² + m n/s² = E_s[x²] + m² − m (2 x̄_s − n/s²), vertex at (2 x̄_s − n/s²)/2
                slope = 2 * mean[:, s - 1, None] - n / s**2
                moment = second[:, s - 1, None]
                vertex = np.clip(slope / 2, a, b)
                v_most = np.minimum(p_most, np.maximum(moment + a2 - a * slope, moment + b2 - b * slope))
                v_least = np.minimum(p_least, moment + vertex * vertex - vertex * slope)
            v = np.where(up, v_most * (1 + SAFETY) + 1e-15, np.maximum(v_least * (1 - SAFETY) - 1e-15, 0))
            bet = np.minimum(np.where(up, most_b, most_a), np.sqrt(missing * (2 / (n - s)) / v))
            gain = bet * (value - b)
            gain -= SAFETY * np.abs(gain)
            missing = np.maximum(missing - np.log1p(np.maximum(gain, -1.0)), 0)
    return missing == 0


def _spread(low: np.ndarray, high: np.ndarray, count: int) -> np.ndarray:
    """`count` indices per row strictly between low and high (rows × count), evenly spread; all of them (the last
    repeated) where fewer lie between."""
    gap = (high - low)[:, None]
    j = np.arange(1, count + 1)[None, :]
    even = low[:, None] + (j * gap) // (count + 1)
    every = low[:, None] + np.minimum(j, gap - 1)
    return np.where(gap - 1 > count, even, every)


def _ranges(top: np.ndarray, grid: int) -> tuple[np.ndarray, np.ndarray]:
    """Ranges of candidate indices [start, end] covering 1 … top per row (rows × k; padded with start > end): widths
    1, GROWTH, GROWTH², … downwards from top, and each within a RATIO of means near 0."""
    cuts = [top + 1]  # each range is [cut_j, cut_{j−1} − 1] once sorted
    width, below = 1, top + 1
    while np.any(below > 1):
        below = below - width
        cuts.append(below)
        width *= GROWTH
    start = 1
    while start < grid:
        cuts.append(np.full(top.shape, start))
        start = max(start + 1, math.ceil(start * RATIO))
    cuts = np.sort(np.clip(np.stack(cuts, axis=1), 1, top[:, None] + 1), axis=1)
    start, end = cuts[:, :-1], cuts[:, 1:] - 1
    return start, end


def first_kept(x: np.ndarray, delta: float, grid: int = GRID, search: int = SEARCH) -> np.ndarray:
    """For each row of unit-scale values, the first k in 1 … grid whose candidate m_k = k/grid STaR-Bets does not
    reject (k = grid: m = 1, never rejected), as running the test at every candidate would find (module docstring)."""
    count, n = x.shape
    target = math.log(1 / delta)
    search = min(grid - 1, max(search, BUDGET // count))  # few rows: more candidates per run, fewer runs
    low = np.zeros(count, dtype=np.int64)  # a rejected candidate (0: m = 0, vacuous), below the kept one `high`
    high = np.full(count, grid, dtype=np.int64)  # a kept candidate (grid: m = 1); the answer is at most high
    if search == grid - 1:  # every candidate at once: the first kept one is the answer
        kept = log_wealth(x, np.broadcast_to(np.arange(1, grid) / grid, (count, grid - 1)), delta) < target
        return np.where(kept.any(axis=1), np.argmax(kept, axis=1) + 1, grid)
    if search == SEARCH:  # the first round: below the row's mean by about the width the paper's analysis gives,
        # σ̂ sqrt(2 log(1/δ)/n), plus a small-sample term, times 0.3 … 1.9 (a guess: any candidates give the same ends,
        # good ones save a round)
        mean, spread = x.mean(axis=1), x.std(axis=1)
        guess = (np.sqrt(2 * spread**2 * target / n) + target / (2 * n)) * grid
        offsets = np.round(guess[:, None] * (FIRST * GUESS ** np.arange(search)[::-1])[None, :])
        candidates = np.clip(np.floor(mean * grid)[:, None] - offsets, 1, grid - 1).astype(np.int64)
    else:
        candidates = _spread(low, high, search)
    rows = np.arange(count)
    while rows.size:  # search: narrow (low, high) to neighbours
        kept = log_wealth(x[rows], candidates / grid, delta) < target
        first = np.where(kept.any(axis=1), np.argmax(kept, axis=1), search)
        pick = np.arange(rows.size)
        high[rows] = np.where(first < search, candidates[pick, np.minimum(first, search - 1)], high[rows])
        low[rows] = np.where(first > 0, np.maximum(low[rows], candidates[pick, np.maximum(first - 1, 0)]), low[rows])
        rows = rows[high[rows] - low[rows] > 1]
        candidates = _spread(low[rows], high[rows], search)
    # prove every candidate below low rejected (low itself was run): ranges, split where they fail
    rows = np.nonzero(low > 1)[0]
    start, end = _ranges(low[rows] - 1, grid)
    while rows.size:
        empty = start > end  # padding
        single = (start == end) & ~empty
        proved = proved_rejected(x[rows], np.where(empty, 1, start) / grid, np.where(empty, 1, end) / grid, delta) | empty
        if (single & ~proved).any():  # a single candidate not proved: run the test itself
            wealth = log_wealth(x[rows], np.where(single & ~proved, start, 1) / grid, delta)
            kept = single & ~proved & (wealth < target)
            high[rows] = np.minimum(high[rows], np.where(kept, start, grid).min(axis=1))
            proved |= single & ~kept
        failed = ~proved & (start < high[rows, None])  # candidates at or above a kept one no longer matter
        keep = failed.any(axis=1)
        rows, start, end, failed = rows[keep], start[keep], end[keep], failed[keep]
        if not rows.size:
            break
        width = int(failed.sum(axis=1).max())
        order = np.argsort(~failed, axis=1, kind="stable")[:, :width]  # each row's failed ranges first
        start, end, failed = (np.take_along_axis(part, order, axis=1) for part in (start, end, failed))
        middle = (start + end) // 2
        start = np.concatenate([np.where(failed, start, 1), np.where(failed, middle + 1, 1)], axis=1)
        end = np.concatenate([np.where(failed, middle, 0), np.where(failed, end, 0)], axis=1)
    return high
