"""evaluator.metrics.star: the STaR-Bets interval (Voráček & Orabona, arXiv 2505.22422), fast and exact.

Its ends equal those of running the test at every candidate mean on the grid (bench/mean_intervals.py's reference
implementation, itself checked against the paper and the authors' code in tests/test_mean_interval_methods.py), its
coverage holds on the shapes the board sees at small n, it always holds the sample mean within [low, high], and what it
says at n = 1 and 2 is pinned down.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.mean_intervals import SHAPES, star_bets
from evaluator.metrics import star
from evaluator.metrics.betting import betting_rows

DELTA = 0.025  # each side of a 95 % interval


def _every_candidate(x: np.ndarray, delta: float, grid: int) -> np.ndarray:
    """The first kept candidate index per row, by running the test at all of them."""
    m = np.broadcast_to(np.arange(1, grid) / grid, (x.shape[0], grid - 1))
    kept = star.log_wealth(x, m, delta) < math.log(1 / delta)
    return np.where(kept.any(axis=1), np.argmax(kept, axis=1) + 1, grid)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 20, 50])
def test_equals_the_bench_on_random_inputs(n):
    rng = np.random.default_rng([11, n])
    for name in ("uniform", "Bernoulli(0.97)", "five levels", "two clusters", "spike 0.99 / 0", "Beta(5,1) ceiling"):
        x = SHAPES[name][0](rng, (25, n))
        low, high = star.mean_interval_rows(x, 0, 1)
        ref_low, ref_high = star_bets(x, 0.05)
        mean = x.mean(axis=1)  # star.py widens to the mean (never needed here, but the same on both sides)
        assert np.array_equal(low, np.minimum(ref_low, mean)), name
        assert np.array_equal(high, np.maximum(ref_high, mean)), name
        scaled_low, scaled_high = star.mean_interval_rows(100 * x, 0, 100)  # the board's scale
        assert np.allclose(scaled_low, 100 * low, atol=1e-9) and np.allclose(scaled_high, 100 * high, atol=1e-9), name


def test_one_row_and_many_rows_agree():
    # one row runs every candidate at once; many rows search and prove ranges: the same ends
    x = np.random.default_rng(5).random((300, 12))
    low, high = star.mean_interval_rows(x, 0, 1)
    for row in range(0, 300, 37):
        assert star.mean_interval(x[row].tolist(), 0, 1) == (low[row], high[row])


def _hard_rows(rng: np.random.Generator) -> list[np.ndarray]:
    """Orders and ties that make the betting interval's shape least regular."""
    out = []
    for n in (3, 7, 16, 40):
        u = rng.random((24, n)) ** rng.uniform(0.1, 8, (24, 1))
        out += [np.sort(u, axis=1), np.sort(u, axis=1)[:, ::-1].copy(), rng.integers(0, 3, (24, n)) / 2]
        clustered = np.clip(0.3 + rng.normal(0, 0.01, (24, n)), 0, 1)
        clustered[:, -1] = 1.0  # a cluster, then an outlier last
        out.append(clustered)
        out.append(np.stack([np.zeros(n), np.ones(n), np.full(n, 0.5), np.full(n, 0.001), np.full(n, 0.999)]))
    return out


@pytest.mark.parametrize("confidence, grid", [(0.95, 1000), (0.8, 50)])
def test_first_kept_is_that_of_every_candidate_on_hard_rows(confidence, grid):
    rng = np.random.default_rng(17)
    delta = (1 - confidence) / 2
    for x in _hard_rows(rng):
        both = np.concatenate([x, 1 - x])
        assert np.array_equal(star.first_kept(both, delta, grid), _every_candidate(both, delta, grid))


def test_range_runs_never_prove_a_kept_candidate():
    rng = np.random.default_rng(23)
    grid = 400
    for n in (1, 4, 12, 30):
        x = rng.random((40, n)) ** rng.uniform(0.2, 5, (40, 1))
        m = np.broadcast_to(np.arange(1, grid) / grid, (40, grid - 1))
        rejected = star.log_wealth(x, m, DELTA) >= math.log(1 / DELTA)
        start = rng.integers(1, grid, (40, 30))
        end = np.minimum(start + rng.integers(0, 60, (40, 30)), grid - 1)
        proved = star.proved_rejected(x, start / grid, end / grid, DELTA)
        for row, j in zip(*np.nonzero(proved)):
            assert rejected[row, start[row, j] - 1 : end[row, j]].all(), (n, row, start[row, j], end[row, j])
        single = star.proved_rejected(x, m, m, DELTA)  # one candidate: the test itself, a hair more cautious
        assert not (single & ~rejected).any() and (single == rejected).mean() > 0.999


COVERAGE_SHAPES = [
    "Beta(5,1) ceiling",
    "Beta(1,5) floor",
    "Bernoulli(0.97)",
    "point mass 0.7",
    "five levels",
    "two clusters",
    "uniform",
    "spike 0.99 / 0",
]
DRAWS = 2000  # per cell: a true coverage of 0.95 gives a share under 0.935 about once in 1,000 cells


@pytest.mark.parametrize("n", [1, 2, 5, 8, 20])
def test_coverage_on_the_board_shapes(n):
    shares = {}
    for index, name in enumerate(COVERAGE_SHAPES):
        draw, truth = SHAPES[name]
        x = draw(np.random.default_rng([20261206, index, n]), (DRAWS, n))
        low, high = star.mean_interval_rows(100 * x, 0, 100)
        shares[name] = float(np.mean((low <= 100 * truth) & (100 * truth <= high)))
    assert min(shares.values()) >= 0.935, shares


@pytest.mark.parametrize("n", [1, 2, 3, 10, 40])
def test_holds_the_mean_within_the_range(n):
    rng = np.random.default_rng([3, n])
    rows = np.concatenate(
        [rng.uniform(-3, 7, (200, n)), np.sort(rng.uniform(-3, 7, (50, n)), axis=1), np.full((2, n), 7.0), np.full((2, n), -3.0)]
    )
    low, high = star.mean_interval_rows(rows, -3, 7)
    mean = rows.mean(axis=1)
    assert (low <= mean).all() and (mean <= high).all()
    assert (low >= -3).all() and (high <= 7).all() and (low <= high).all()


def test_a_point_mass_is_narrow_at_large_n():
    narrow = {n: star.mean_interval([70.0] * n, 0, 100) for n in (20, 100, 300)}
    widths = {n: b - a for n, (a, b) in narrow.items()}
    assert all(a <= 70 <= b for a, b in narrow.values())
    assert widths[20] > widths[100] > widths[300] and widths[300] < 2.0
    betting = betting_rows(np.full((1, 300), 70.0), 0, 100)
    assert widths[300] < float(betting[1][0] - betting[0][0])  # narrower than the board's betting interval there


def test_what_one_and_two_scores_give_on_0_100():
    # n = 1: all but the whole scale (a lone 100 proves a mean of at least 0.4); n = 2: 88-100 points wide
    assert star.mean_interval([100], 0, 100) == pytest.approx((0.4, 100.0))
    assert star.mean_interval([0], 0, 100) == pytest.approx((0.0, 99.6))
    assert star.mean_interval([50], 0, 100) == pytest.approx((0.1, 99.9))
    assert star.mean_interval([100, 100], 0, 100) == pytest.approx((11.5, 100.0))
    assert star.mean_interval([50, 50], 0, 100) == pytest.approx((2.9, 97.1))
    assert star.mean_interval([0, 100], 0, 100) == pytest.approx((0.3, 99.8))
    for values in ([100], [0], [50], [100, 100], [50, 50], [0, 100]):
        low, high = star.mean_interval(values, 0, 100)
        assert high - low > 88


def test_errors_and_the_convenience():
    assert star.mean_interval([], 0, 100) is None
    with pytest.raises(ValueError, match=r"value 101\.0 \(row 1, position 2\) lies outside \[0, 100\]"):
        star.mean_interval_rows(np.array([[1.0, 2, 3], [4, 5, 101], [-1, 0, 0]]), 0, 100)
    with pytest.raises(ValueError, match="nan"):
        star.mean_interval_rows(np.array([[1.0, float("nan")]]), 0, 100)
    with pytest.raises(ValueError, match="2-d"):
        star.mean_interval_rows(np.zeros((2, 0)), 0, 100)
    with pytest.raises(ValueError, match="confidence"):
        star.mean_interval_rows(np.zeros((1, 3)), 0, 100, confidence=1.0)
    with pytest.raises(ValueError, match="range"):
        star.mean_interval_rows(np.zeros((1, 3)), 5, 5)
