"""The aggregation's intervals; the formula's worked examples are data in tests/cases/aggregate.json."""

from __future__ import annotations

import pytest

from evaluator.metrics.aggregate import Unit, figures, macro_mean_ci, mean_ci
from evaluator.metrics.intervals import mean_interval
from evaluator.metrics.order import task_order


def test_a_figures_interval_is_the_bounded_mean_interval_on_its_scale_from_one_task_on():
    values = [10.0, 20.0, 30.0, 40.0, 90.0, 55.0, 35.0, 60.0]
    assert mean_ci(values) == mean_interval(values, 0, 100)
    assert mean_ci([2.0, 4.5, 5.0], "likert_1_5") == mean_interval([2.0, 4.5, 5.0], 1, 5)
    one = mean_ci([5.0])  # one task: an interval already, nearly the whole scale
    assert one == mean_interval([5.0], 0, 100) and one[0] <= 5.0 and one[1] > 99 and mean_ci([]) == (None, None)
    assert mean_ci([100.0 + 1e-12, 0.0]) == mean_interval([100.0, 0.0], 0, 100)  # rounding noise at an end folds in
    with pytest.raises(ValueError, match="outside its scale"):
        mean_ci([101.0])


def test_the_overall_interval_is_the_average_of_category_intervals_at_a_bonferroni_level():
    groups = [[70.0, 80.0, 90.0, 85.0], [20.0, 30.0, 25.0], [50.0, 55.0, 60.0, 65.0, 70.0]]
    parts = [mean_interval(g, 0, 100, 1 - 0.05 / 3) for g in groups]
    assert macro_mean_ci(groups) == pytest.approx((sum(p[0] for p in parts) / 3, sum(p[1] for p in parts) / 3))
    assert macro_mean_ci([[50.0], []]) == (None, None)
    units = [
        Unit(f"{c.lower()}-{i}", c, 0, "prompt_rubric", "ok", float(v), scale="score_0_100", composite=True)
        for c, g in zip(("OE", "CO", "IM"), groups)
        for i, v in enumerate(g)
    ]
    overall = next(f for f in figures(units) if f.scope == "overall")
    # each category's values in the tasks' fixed shuffle (order.task_order), as figures() reads them
    in_order = [
        [g[int(t.split("-")[1])] for t in task_order(f"{c.lower()}-{i}" for i in range(len(g)))] for c, g in zip(("OE", "CO", "IM"), groups)
    ]
    assert (overall.ci_low, overall.ci_high) == pytest.approx(
        macro_mean_ci(in_order)
    ) and overall.ci_low <= overall.value <= overall.ci_high
