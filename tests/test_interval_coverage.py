"""Every 95 % interval the board shows holds its 95 %: measured by simulation on known score distributions.

Task scores are drawn from six distributions on 0-100 whose true mean is known (computed from 400,000 draws), at
n = 2, 3, 5, 10, 20 and 50 tasks; the platform's interval (evaluator.metrics.aggregate.mean_ci) is computed on
each draw. Wherever it shows one, it must cover the true mean in at least 93 % of the runs; where it would not, it
shows none (the board says "too few tasks for an interval"). The printed table is the closing note's.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluator.metrics.aggregate import MIN_TASKS_FOR_INTERVAL, mean_ci, mean_ci_rows

RUNS = 20_000
SIZES = (2, 3, 5, 10, 20, 50)
DISTRIBUTIONS = {
    "normal": lambda rng, n: np.clip(rng.normal(60, 15, n), 0, 100),
    "uniform": lambda rng, n: rng.uniform(0, 100, n),
    "U-shaped": lambda rng, n: rng.beta(0.5, 0.5, n) * 100,
    "skewed": lambda rng, n: rng.beta(2, 8, n) * 100,
    "five levels": lambda rng, n: rng.choice([0.0, 25.0, 50.0, 75.0, 100.0], n, p=[0.05, 0.1, 0.2, 0.4, 0.25]),
    "half at 100": lambda rng, n: np.where(rng.random(n) < 0.5, 100.0, rng.uniform(0, 60, n)),
}


def coverage(draw, n: int, truth: float, rng) -> float | None:
    """Share of runs whose interval covers the truth; None when no interval is shown at this n."""
    if mean_ci(list(draw(rng, n)))[0] is None:
        return None  # the rule is about n alone: none is shown at this size
    return would_cover(draw, n, truth, rng)


def would_cover(draw, n: int, truth: float, rng) -> float:
    """The t interval's coverage at n tasks, whether or not the board would show it."""
    runs = np.vstack([draw(rng, n) for _ in range(RUNS)])
    low, high = mean_ci_rows(runs)
    if n >= MIN_TASKS_FOR_INTERVAL:
        assert (low[0], high[0]) == pytest.approx(mean_ci(list(runs[0])))  # the same interval the figures get
    return float(np.mean((low <= truth) & (truth <= high)))


def test_intervals_are_shown_only_where_they_cover_93_percent():
    rng = np.random.default_rng(20261127)
    table = {}
    for name, draw in DISTRIBUTIONS.items():
        truth = float(draw(rng, 400_000).mean())
        table[name] = {n: coverage(draw, n, truth, rng) for n in SIZES}
    print("\ncoverage of the 95 % interval (— = none shown: too few tasks)")
    print("distribution".ljust(14) + "".join(f"n={n}".rjust(8) for n in SIZES))
    for name, row in table.items():
        print(name.ljust(14) + "".join(("—" if c is None else f"{c:.3f}").rjust(8) for c in row.values()))
    for name, row in table.items():
        for n, covered in row.items():
            assert (covered is None) == (n < MIN_TASKS_FOR_INTERVAL), (name, n)
            assert covered is None or covered >= 0.93, f"{name} at n={n}: {covered:.3f}"
    # The minimum is where it must be: just below it, some distribution's interval would fall short.
    below = {name: would_cover(draw, 5, float(draw(rng, 400_000).mean()), rng) for name, draw in DISTRIBUTIONS.items()}
    print("had it been shown at n=5: " + ", ".join(f"{name} {c:.3f}" for name, c in below.items()))
    assert min(below.values()) < 0.93


def test_an_interval_holds_its_figure_and_none_is_given_below_the_minimum():
    assert mean_ci([40.0, 60.0]) == (None, None)  # "40.0 [40.0, 40.0]" from two tasks is never shown again
    values = [10.0, 80.0, 55.0, 35.0, 90.0, 60.0, 20.0, 75.0]
    low, high = mean_ci(values)
    assert low < float(np.mean(values)) < high and high - low > 20
    assert mean_ci([50.0] * MIN_TASKS_FOR_INTERVAL) == (50.0, 50.0)


@pytest.mark.parametrize("n", [MIN_TASKS_FOR_INTERVAL - 1, MIN_TASKS_FOR_INTERVAL])
def test_the_minimum_is_the_line(n):
    assert (mean_ci(list(np.linspace(0, 100, n)))[0] is None) == (n < MIN_TASKS_FOR_INTERVAL)


def test_the_board_scores_macro_interval_covers_too():
    """An entry's board score is the mean of its category means: its interval (ranking.macro_ci, which the ranks are
    built from) is measured the same way, each category's tasks from a different distribution."""
    from evaluator.metrics.ranking import macro_ci

    rng = np.random.default_rng(7)
    draws = [DISTRIBUTIONS["skewed"], DISTRIBUTIONS["five levels"], DISTRIBUTIONS["half at 100"]]
    truth = float(np.mean([d(rng, 400_000).mean() for d in draws]))
    table = {}
    for n in SIZES:
        categories = {f"{c}{i}": c for c in ("OE", "CO", "IM") for i in range(n)}
        hits = shown = 0
        for _ in range(4000):
            scores = {f"{c}{i}": float(v) for c, draw in zip(("OE", "CO", "IM"), draws) for i, v in enumerate(draw(rng, n))}
            low, high = macro_ci(scores, categories)
            shown += low is not None
            hits += low is not None and low <= truth <= high
        table[n] = hits / shown if shown else None
    print("\nboard score (3 categories): " + ", ".join(f"n={n}: {'—' if c is None else f'{c:.3f}'}" for n, c in table.items()))
    assert all((c is None) == (n < MIN_TASKS_FOR_INTERVAL) for n, c in table.items())
    assert all(c is None or c >= 0.93 for c in table.values())
