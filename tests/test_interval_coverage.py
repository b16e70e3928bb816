"""The board's intervals (evaluator/metrics/intervals.py: betting intervals for bounded means) hold their 95 %.

Their guarantee is a theorem (any distribution on the range, any n); these tests check that the code keeps it: by
simulation on the shapes this platform's scores take (checklist rows piled at 100 or at 0, five-level ratings, two
clusters, a point mass) at every n from 1 task, and by properties any correct interval has. bench/intervals.py
prints the coverage and width tables, against the Student t interval the board used before.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluator.metrics.intervals import mean_interval, mean_interval_rows

RUNS = 10_000  # per (shape, n): the true coverage is at least 0.95, so a share under 0.945 is 2.3 standard errors short
SIZES = (1, 2, 3, 5, 8, 10, 20, 50)


def _mixture(rng, n, share, at, rest):
    return np.where(rng.random(n) < share, at, rest(rng, n))


# Score shapes on 0-100 (n may be a shape tuple: runs x tasks), each with its true mean.
SHAPES = {
    "normal": (lambda rng, n: np.clip(rng.normal(60, 15, n), 0, 100), None),
    "uniform": (lambda rng, n: rng.uniform(0, 100, n), 50.0),
    "U-shaped": (lambda rng, n: rng.beta(0.3, 0.3, n) * 100, 50.0),
    "skewed high": (lambda rng, n: rng.beta(5, 1, n) * 100, 500 / 6),
    "skewed low": (lambda rng, n: rng.beta(1, 5, n) * 100, 100 / 6),
    "rating piled at 100": (
        lambda rng, n: rng.choice([0.0, 25.0, 50.0, 75.0, 100.0], n, p=[0.02, 0.03, 0.05, 0.15, 0.75]),
        0.03 * 25 + 0.05 * 50 + 0.15 * 75 + 75.0,
    ),
    "85 % at 100": (lambda rng, n: _mixture(rng, n, 0.85, 100.0, lambda r, k: r.uniform(0, 100, k)), 85 + 0.15 * 50),
    "80 % at 0": (lambda rng, n: _mixture(rng, n, 0.8, 0.0, lambda r, k: r.uniform(0, 100, k)), 0.2 * 50),
    "checklist, half at 100": (
        lambda rng, n: rng.choice([0.0, 25.0, 50.0, 75.0, 100.0], n, p=[0.1, 0.1, 0.1, 0.2, 0.5]),
        0.1 * 25 + 0.1 * 50 + 0.2 * 75 + 50.0,
    ),
    "two clusters": (lambda rng, n: np.clip(np.where(rng.random(n) < 0.4, rng.normal(20, 4, n), rng.normal(85, 4, n)), 0, 100), None),
    "point mass": (lambda rng, n: np.full(n, 60.0), 60.0),
    "point mass at 0": (lambda rng, n: np.zeros(n), 0.0),
    "point mass at 100": (lambda rng, n: np.full(n, 100.0), 100.0),
    # each task its own difficulty (Beta(2, 2)), scored by a four-item checklist on it: tasks differ, items vary
    "per-task heterogeneity": (lambda rng, n: rng.binomial(4, rng.beta(2, 2, n)) * 25.0, 50.0),
    # a task's score is the mean of two samples' scores (two prompts per task), each piled at 100
    "two samples per task": (
        lambda rng, n: (
            (
                _mixture(rng, n, 0.85, 100.0, lambda r, k: r.uniform(0, 100, k))
                + _mixture(rng, n, 0.85, 100.0, lambda r, k: r.uniform(0, 100, k))
            )
            / 2
        ),
        85 + 0.15 * 50,
    ),
    "95 % at 100, else 0": (lambda rng, n: (rng.random(n) < 0.95) * 100.0, 95.0),
    "5 % at 100, else 0": (lambda rng, n: (rng.random(n) < 0.05) * 100.0, 5.0),
}


def true_mean(name: str, rng) -> float:
    draw, mean = SHAPES[name]
    return mean if mean is not None else float(draw(rng, 4_000_000).mean())  # within ±0.02 of the mean on 0-100


def test_every_shape_is_covered_at_every_n():
    rng = np.random.default_rng(20261129)
    short = []
    for name, (draw, _) in SHAPES.items():
        truth = true_mean(name, rng)
        for n in SIZES:
            low, high = mean_interval_rows(draw(rng, (RUNS, n)), 0, 100)
            covered = float(np.mean((low <= truth) & (truth <= high)))
            if covered < 0.945:
                short.append(f"{name} at n={n}: {covered:.4f}")
    assert not short, short


def test_the_macro_and_the_paired_difference_intervals_cover_too():
    """An entry's board score (macro over three categories of different shapes) and a neighbour pair's macro paired
    difference (on -100..100, two dependent entries; the compare view's) through the functions the site calls."""
    from evaluator.metrics.paired import paired_differences
    from evaluator.metrics.ranking import macro_ci

    rng = np.random.default_rng(7)
    shapes = [SHAPES["skewed high"][0], SHAPES["rating piled at 100"][0], SHAPES["80 % at 0"][0]]
    truth = float(np.mean([true_mean(name, rng) for name in ("skewed high", "rating piled at 100", "80 % at 0")]))
    for n in (1, 2, 5, 8, 20):
        categories = {f"{c}{i:02d}": c for c in ("OE", "CO", "IM") for i in range(n)}
        hits = differences = 0
        for _ in range(400):
            scores = {f"{c}{i:02d}": float(v) for c, draw in zip(("OE", "CO", "IM"), shapes) for i, v in enumerate(draw(rng, n))}
            low, high = macro_ci(scores, categories)
            hits += low <= truth <= high
            # a second entry: the same tasks, 10 points lower where it can be, so the true macro difference is known
            other = {t: max(v - 10.0, 0.0) for t, v in scores.items()}
            shift = float(np.mean([np.mean([scores[t] - other[t] for t in categories if t.startswith(c)]) for c in ("OE", "CO", "IM")]))
            comparison = paired_differences(scores, other, categories, ("CO", "IM", "OE"))[-1]
            differences += comparison.low <= shift <= comparison.high and comparison.low <= comparison.difference <= comparison.high
        assert hits / 400 >= 0.93 and differences == 400, (n, hits / 400, differences)


def test_a_wide_interval_at_few_tasks_and_a_narrow_one_at_many():
    two = mean_interval([40.0, 60.0], 0, 100)  # two tasks rule out only the last few points at each end
    assert two[0] < 5 and two[1] > 95
    values = [10.0, 80.0, 55.0, 35.0, 90.0, 60.0, 20.0, 75.0]
    low, high = mean_interval(values, 0, 100)
    assert low < float(np.mean(values)) < high and 30 < high - low < 100
    many = mean_interval(values * 25, 0, 100)
    assert many[0] > low and many[1] < high and many[1] - many[0] < 25
    assert mean_interval([], 0, 100) is None


@given(st.lists(st.floats(0, 100), min_size=1, max_size=60), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_an_interval_holds_its_mean_and_lies_in_the_range(values, confidence):
    low, high = mean_interval(values, 0, 100, confidence)
    mean = float(np.mean(values))
    assert 0 <= low <= mean + 1e-9 and mean - 1e-9 <= high <= 100


def test_scale_mirror_and_rows_agree():
    rng = np.random.default_rng(3)
    rows = rng.beta(2, 5, (50, 12)) * 100
    low, high = mean_interval_rows(rows, 0, 100)
    for i in (0, 17, 49):
        assert mean_interval(list(rows[i]), 0, 100) == pytest.approx((low[i], high[i]))
    on_unit = mean_interval_rows(rows / 100, 0, 1)
    assert np.allclose(on_unit[0] * 100, low, atol=1e-6) and np.allclose(on_unit[1] * 100, high, atol=1e-6)
    mirror = mean_interval_rows(100 - rows, 0, 100)
    assert np.allclose(100 - mirror[1], low, atol=1e-6) and np.allclose(100 - mirror[0], high, atol=1e-6)
    on_likert = mean_interval_rows(1 + rows / 25, 1, 5)
    assert np.allclose((on_likert[0] - 1) * 25, low, atol=1e-6)


def test_a_value_outside_the_range_is_named():
    with pytest.raises(ValueError, match=r"value 100\.5 .*outside \[0, 100\]"):
        mean_interval([50.0, 100.5], 0, 100)
    with pytest.raises(ValueError, match="nan"):
        mean_interval([50.0, float("nan")], 0, 100)
