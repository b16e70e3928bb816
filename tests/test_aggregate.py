"""The aggregation's interval; the formula's worked examples are data in tests/cases/aggregate.json."""

from __future__ import annotations

from scipy import stats

from evaluator.metrics.aggregate import MIN_TASKS_FOR_INTERVAL, mean_ci


def test_the_interval_is_students_t_and_none_below_the_minimum():
    values = [10.0, 20.0, 30.0, 40.0, 90.0, 55.0, 35.0, 60.0]
    assert len(values) == MIN_TASKS_FOR_INTERVAL
    expected = stats.t.interval(0.95, len(values) - 1, loc=sum(values) / len(values), scale=stats.sem(values))
    assert mean_ci(values) == (expected[0], expected[1])
    assert mean_ci(values[:-1]) == (None, None) and mean_ci([5.0]) == (None, None)
    assert mean_ci([7.0] * MIN_TASKS_FOR_INTERVAL) == (7.0, 7.0)
