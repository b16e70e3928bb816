"""The aggregation formula on hand-made units whose figures are known."""

from __future__ import annotations

import pytest

from evaluator.metrics.aggregate import Unit, bootstrap_ci, figures, normalise


def by_key(units):
    return {(f.scope, f.key): f for f in figures(units)}


def test_normalise_maps_both_scales_to_0_100():
    assert normalise("prompt_subjective", 1) == 0 and normalise("image_subjective", 5) == 100
    assert normalise("prompt_objective", 0.25) == 25


def test_task_score_averages_prompt_and_image_parts_and_overall_is_macro():
    units = [
        Unit("oe-1", "OE", 0, "prompt_subjective", "ok", 5.0),  # 100
        Unit("oe-1", "OE", 0, "prompt_objective", "ok", 0.5),  # 50  -> prompt part 75
        Unit("oe-1", "OE", 0, "image_objective", "ok", 1.0, "a"),  # backend a: 100
        Unit("oe-1", "OE", 0, "image_objective", "ok", 0.0, "b"),  # backend b: 0 -> image part 50
        Unit("co-1", "CO", 0, "prompt_objective", "ok", 1.0),
        Unit("co-2", "CO", 0, "prompt_objective", "ok", 0.0),
        Unit("co-3", "CO", 0, "prompt_objective", "ok", 0.0),
    ]
    f = by_key(units)
    assert f[("category", "OE")].value == pytest.approx(62.5)
    assert f[("category", "CO")].value == pytest.approx(100 / 3)
    assert f[("overall", "overall")].value == pytest.approx((62.5 + 100 / 3) / 2)  # not the mean of 4 tasks
    assert f[("backend", "a")].value == 100 and f[("backend", "b")].value == 0
    assert f[("skill", "prompt_objective")].value == pytest.approx(0.375)


def test_samples_average_within_a_task_before_tasks_average():
    units = [Unit("t", "IM", s, "prompt_objective", "ok", v) for s, v in ((0, 1.0), (1, 0.0), (2, 0.0))]
    units.append(Unit("u", "IM", 0, "prompt_objective", "ok", 1.0))
    assert by_key(units)[("category", "IM")].value == pytest.approx((100 / 3 + 100) / 2)


def test_failures_are_counted_and_never_scored_and_skips_are_ignored():
    units = [
        Unit("t", "OE", 0, "prompt_objective", "ok", 1.0),
        Unit("t", "OE", 0, "prompt_subjective", "failed", None),
        Unit("t", "OE", 0, "image_subjective", "skipped", None, "a"),
        Unit("t", "OE", 0, "render", "failed", None, "b"),
    ]
    f = by_key(units)
    assert f[("overall", "overall")].value == 100
    assert f[("overall", "overall")].failures == 2
    assert f[("backend", "b")].failures == 1 and f[("backend", "b")].value is None
    assert ("skill", "image_subjective") not in f and ("skill", "render") not in f


def test_bootstrap_interval_contains_the_mean_and_is_deterministic():
    values = [10.0, 20.0, 30.0, 40.0, 90.0]
    low, high = bootstrap_ci(values)
    assert low < 38 < high and (low, high) == bootstrap_ci(values)
    assert bootstrap_ci([5.0]) == (None, None) and bootstrap_ci([7.0, 7.0]) == (7.0, 7.0)


def test_top1_keeps_the_best_image_and_reports_its_checklist_accuracy():
    units = [
        # task t, backend a: image 1 scores 3 (checklist 0.2), image 2 scores 5 (checklist 0.6)
        Unit("t", "OE", 0, "image_subjective", "ok", 3.0, "a", 1),
        Unit("t", "OE", 0, "image_objective", "ok", 0.2, "a", 1),
        Unit("t", "OE", 0, "image_subjective", "ok", 5.0, "a", 2),
        Unit("t", "OE", 0, "image_objective", "ok", 0.6, "a", 2),
        # task u (IM, no image-subjective): ranked by checklist accuracy; the tie goes to the first image
        Unit("u", "IM", 0, "image_objective", "ok", 0.5, "a", 3),
        Unit("u", "IM", 0, "image_objective", "ok", 0.5, "a", 4),
        Unit("u", "IM", 0, "image_objective", "ok", 0.1, "a", 5),
    ]
    f = by_key(units)
    assert f[("top1", "image_subjective")].value == 5.0 and f[("top1", "image_subjective")].n == 1
    assert f[("top1", "image_objective")].value == pytest.approx((0.6 + 0.5) / 2)
    assert f[("skill", "image_objective")].value == pytest.approx((0.4 + 1.1 / 3) / 2)  # the mean over images stays
