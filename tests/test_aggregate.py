"""The aggregation's bootstrap; the formula's worked examples are data in tests/cases/aggregate.json."""

from __future__ import annotations

from evaluator.metrics.aggregate import bootstrap_ci


def test_bootstrap_interval_contains_the_mean_and_is_deterministic():
    values = [10.0, 20.0, 30.0, 40.0, 90.0]
    low, high = bootstrap_ci(values)
    assert low < 38 < high and (low, high) == bootstrap_ci(values)
    assert bootstrap_ci([5.0]) == (None, None) and bootstrap_ci([7.0, 7.0]) == (7.0, 7.0)
