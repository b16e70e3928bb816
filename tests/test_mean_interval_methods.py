"""The intervals bench/mean_intervals.py compares hold their 95 % and compute the formulas they cite.

Coverage by simulation on a few shapes at small n (fixed seed, a few hundred draws: each method's true coverage is at
least 0.95, so a share under 0.93 would be about 2 standard errors short), and each formula against a closed form or a
plain reimplementation: Hoeffding's width, Bentkus's bound when every value is 1, Maurer-Pontil's on a point mass,
STaR-Bets' wealth against a scalar loop over one candidate mean, and its lower bound against a transcription of the
authors' code.
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
    """STaR-Bets' wealth against mean m, one value at a time, as Algorithm 4 of Voráček & Orabona (arXiv 2505.22422)
    with its Appendix D (second-moment estimate (1/s) Σ (x_i − m)² + c·m·n/s², c = 1, clipped at m(1 − m)) and the
    authors' code (github.com/vvoracek/STaR-bets-confidence-interval, star.py) run it (see
    bench/mean_intervals.star_log_wealth)."""
    n, wealth, squares = len(values), 1.0, 0.0
    for seen, value in enumerate(values):
        spread = m * (1 - m) if seen == 0 else min(m * (1 - m), m * n / seen**2 + squares / seen)
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


def _authors_lower(values, delta):
    """The lower bound of the authors' star() (github.com/vvoracek/STaR-bets-confidence-interval, star.py at its last
    commit), transcribed with the deterministic threshold log(1/δ) in place of log(U/δ); their 1e-4 guards kept."""
    ms = np.linspace(0, 1, 10000)
    target, log_wealth, squares, n = math.log(1 / delta), np.zeros(ms.shape), 0.0, len(values)
    with np.errstate(all="ignore"):
        for t, x in enumerate(values):
            t += 0.0001
            spread = np.minimum(squares / t + (ms + 0.0001) * n / t / t, 0.0001 + ms * (1 - ms))
            bet = np.clip(np.sqrt(2 * np.maximum(target - log_wealth, 0) / ((n - t) * spread)), 1 / (ms - 1 - 0.0001), 1 / (ms + 0.0001))
            log_wealth += np.log(1 + bet * (x - ms))
            squares += (x - ms) ** 2
    kept = ms[log_wealth < target]
    return kept.min() - ms[1] + ms[0] if kept.size else 1.0


@pytest.mark.parametrize("n", [5, 20, 60])
def test_star_lower_bound_is_the_authors_code_up_to_the_grids(n):
    # theirs: 10,000 candidates, ours 1,000 (rounded down a step each): within one of our steps and a bit
    rng = np.random.default_rng([5, n])
    for shape in ("uniform", "Bernoulli(0.97)", "five levels", "spike 0.99 / 0"):
        values = SHAPES[shape][0](rng, (8, n))
        ((low, _),) = star_intervals(values, ALPHA, [np.zeros((8, 2))])
        theirs = np.array([_authors_lower(row, ALPHA / 2) for row in values])
        assert np.abs(low - theirs).max() <= 0.0012, (shape, low - theirs)
