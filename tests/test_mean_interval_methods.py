"""The intervals bench/mean_intervals.py compares hold their 95 % and compute the formulas they cite.

Coverage by simulation on a few shapes at small n (fixed seed, a few hundred draws: each method's true coverage is at
least 0.95, so a share under 0.93 would be about 2 standard errors short), and each formula against a closed form or a
plain reimplementation: Hoeffding's width, Bentkus's bound when every value is 1, Maurer-Pontil's on a point mass,
and STaR-Bets' wealth against a scalar loop over one candidate mean.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.mean_intervals import ALPHA, SHAPES, bentkus, hoeffding, maurer_pontil, star_intervals, star_log_wealth
from bench.mean_intervals import intervals as all_intervals

RUNS = 400


@pytest.mark.parametrize("shape", ["Bernoulli(0.97)", "Beta(1,5) floor", "five levels", "spike 0.99 / 0"])
@pytest.mark.parametrize("n", [2, 8])
def test_every_method_covers(shape, n):
    draw, truth = SHAPES[shape]
    rng = np.random.default_rng([20261130, n])
    found = all_intervals(draw(rng, (RUNS, n)), 1 - rng.random((RUNS, 2)))
    short = {name: float(np.mean((low <= truth) & (truth <= high))) for name, (low, high) in found.items()}
    assert min(short.values()) >= 0.93, short


@pytest.mark.parametrize("n", [1, 5, 30])
def test_hoeffding_width_is_its_closed_form(n):
    low, high = hoeffding(np.random.default_rng(n).random((10, n)), ALPHA)
    assert np.allclose(high - low, 2 * math.sqrt(math.log(2 / ALPHA) / (2 * n)))


@pytest.mark.parametrize("n", [1, 8, 20])
def test_bentkus_when_every_value_is_one(n):
    # ΣX = n: e·P(B ≥ n) = e·μ^n, so the lower end is the μ with e·μ^n = α/2; the upper end excludes nothing
    low, high = bentkus(np.ones((1, n)), ALPHA)
    assert low[0] == pytest.approx((ALPHA / 2 / math.e) ** (1 / n), abs=1e-9) and low[0] <= (ALPHA / 2 / math.e) ** (1 / n)
    assert high[0] == 1


def test_maurer_pontil_on_a_point_mass():
    # V_n = 0: only the 7 log(2/δ) / (3(n − 1)) term is left, δ = α/2 per side; n = 1: the whole range
    low, high = maurer_pontil(np.full((1, 10), 0.7), ALPHA)
    assert high[0] - 0.7 == pytest.approx(7 * math.log(4 / ALPHA) / 27) and 0.7 - low[0] == pytest.approx(7 * math.log(4 / ALPHA) / 27)
    assert [float(v[0]) for v in maurer_pontil(np.full((1, 1), 0.7), ALPHA)] == [0.0, 1.0]


def _star_wealth(values, delta, m):
    """STaR-Bets' wealth against mean m, one value at a time (see bench/mean_intervals.star_log_wealth)."""
    n, wealth, squares = len(values), 1.0, 0.0
    for seen, value in enumerate(values):
        spread = m * (1 - m) if seen == 0 else min(m * (1 - m), n / seen**2 + squares / seen)
        need = max(math.log(1 / (wealth * delta)), 0.0) if wealth > 0 else math.inf
        wealth = max(wealth * (1 + min(math.sqrt(2 * need / ((n - seen) * spread)), 1 / m) * (value - m)), 0.0)
        squares += (value - m) ** 2
    return wealth


def test_star_wealth_matches_a_scalar_loop():
    values, grid = np.random.default_rng(3).random((3, 10)), np.arange(1, 100) / 100
    found = star_log_wealth(values, ALPHA / 2, grid)
    for row in range(3):
        for k in (5, 30, 50, 70, 95):
            wealth = _star_wealth(values[row], ALPHA / 2, grid[k])
            assert found[row, k] == pytest.approx(math.log(wealth) if wealth > 0 else -math.inf, abs=1e-9)


def test_star_bounds_sit_on_the_grid_below_the_first_kept_mean():
    values = np.random.default_rng(4).random((5, 12))
    (low, high), (low_random, _) = star_intervals(values, ALPHA, [np.zeros((5, 2)), np.full((5, 2), math.log(0.5))], grid=200)
    grid = np.arange(1, 200) / 200
    wealth = star_log_wealth(values, ALPHA / 2, grid)
    for row in range(5):
        first = int(np.argmax(wealth[row] < math.log(2 / ALPHA)))  # the first candidate not rejected
        assert low[row] == pytest.approx(first / 200) and (wealth[row, :first] >= math.log(2 / ALPHA)).all()
    assert (low <= values.mean(axis=1)).all() and (values.mean(axis=1) <= high).all()
    assert (low_random >= low).all()  # a lower threshold rejects more
