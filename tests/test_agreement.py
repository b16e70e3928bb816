"""Judge–expert agreement on hand-made ratings whose figures are known.

Expected values are worked out by hand in the comments, never by calling scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluator.metrics.agreement import (
    MIN_TASKS_FOR_INTERVAL,
    TOO_FEW_FOR_INTERVAL,
    Agreement,
    ChecklistLabel,
    Interval,
    Pair,
    agreement,
    checklist_agreement,
    majority,
    task_bootstrap,
)

FAST = {"resamples": 200}  # enough for the properties checked here, and keeps the file fast


def make_pairs(judge, experts, *, tasks=None, dimension="mood_atmosphere"):
    """One pair per item; each item its own task unless `tasks` says otherwise."""
    tasks = tasks or [f"t{i}" for i in range(len(judge))]
    experts = [e if isinstance(e, tuple) else (e,) for e in experts]
    return [
        Pair(t, f"entry:{i}", dimension, float(j), tuple(float(x) for x in e)) for i, (t, j, e) in enumerate(zip(tasks, judge, experts))
    ]


def row(pairs, dimension="mood_atmosphere", **options) -> Agreement:
    return next(a for a in agreement(pairs, **(FAST | options)) if a.dimension == dimension)


def assert_undefined(interval: Interval):
    assert (interval.value, interval.low, interval.high) == (None, None, None)


# Known answers: tests/cases/agreement.json; the judge beside the experts, like with like: tests/test_judge_like_for_like.py.


# --- intervals ----------------------------------------------------------------------------------


def noisy_pairs(n_tasks=12, per_task=4, seed=1):
    rng = np.random.default_rng(seed)
    judge, experts, tasks = [], [], []
    for t in range(n_tasks):
        for _ in range(per_task):
            truth = int(rng.integers(1, 6))
            judge.append(int(np.clip(truth + rng.integers(-1, 2), 1, 5)))
            experts.append((truth, int(np.clip(truth + rng.integers(-1, 2), 1, 5))))
            tasks.append(f"task-{t}")
    return make_pairs(judge, experts, tasks=tasks)


def test_interval_contains_the_estimate_and_is_reproducible_with_the_same_seed():
    pairs = noisy_pairs()
    first, again, other = (agreement(pairs, seed=s, **FAST) for s in (7, 7, 8))
    assert first == again
    assert first != other
    for a in first:
        for interval in (a.spearman, a.kendall_tau_b, a.mae, a.within_1):
            assert interval.low <= interval.value <= interval.high
            assert (interval.n_items, interval.n_tasks) == (48, 12)


def test_resampling_is_by_task_so_width_follows_the_number_of_tasks():
    # 60 items, half exactly right (error 0) and half 2 off: MAE 1 in every layout.
    # 2 tasks of 30 identical items: a resample draws {0s,0s}, {0s,2s} or {2s,2s} -> MAE 0, 1 or 2,
    # so the 95 % interval is [0, 2]. Item-level resampling (60 one-item tasks) would be far narrower.
    # (Two and six tasks are below the page's minimum for an interval; the resampler is checked here, so it is lowered.)
    judge, experts = [3] * 60, [3] * 30 + [5] * 30
    widths = {}
    for n_tasks in (2, 6, 60):
        tasks = [f"t{i * n_tasks // 60}" for i in range(60)]  # consecutive blocks of 60/n_tasks items
        mae = row(make_pairs(judge, experts, tasks=tasks), min_tasks=2).mae
        assert mae.value == 1 and mae.n_tasks == n_tasks
        widths[n_tasks] = mae.high - mae.low
    assert widths[2] == pytest.approx(2.0)
    assert widths[2] > widths[6] > widths[60]


def test_an_interval_needs_ten_tasks_and_says_so_below():
    below = row(noisy_pairs(n_tasks=MIN_TASKS_FOR_INTERVAL - 1, per_task=4))
    for interval in (below.spearman, below.kendall_tau_b, below.mae, below.within_1):
        assert interval.value is not None and (interval.low, interval.high) == (None, None)
        assert interval.note == TOO_FEW_FOR_INTERVAL == "too few items for an interval"
        assert interval.n_tasks == 9 and interval.n_items == 36  # many items, but only nine tasks to resample
    at = row(noisy_pairs(n_tasks=MIN_TASKS_FOR_INTERVAL, per_task=1))
    assert at.mae.low is not None and at.mae.note == "" and (at.mae.n_items, at.mae.n_tasks) == (10, 10)
    undefined = row(make_pairs([3, 3, 3], [1, 2, 3]))
    assert undefined.spearman.note == ""  # no value at all: nothing to qualify
    few_labels = checklist_agreement(labels([(1, (1,)), (0, (0,)), (1, (0,))]), **FAST)
    assert few_labels.accuracy.value == pytest.approx(2 / 3) and few_labels.accuracy.note == TOO_FEW_FOR_INTERVAL


def test_task_bootstrap_with_one_task_has_no_interval():
    assert task_bootstrap({"only": [1.0, 2.0, 3.0]}, lambda v: float(np.mean(v))) == (None, None)


def test_task_bootstrap_drops_undefined_resamples_and_gives_up_below_half():
    # statistic undefined whenever task "b" (value 1) is missing; P(missing in a 2-task draw) = 1/4
    values = {"a": [0.0], "b": [1.0]}
    mostly_defined = task_bootstrap(values, lambda v: float(np.mean(v)) if 1.0 in v else None, resamples=400)
    assert mostly_defined == (pytest.approx(0.5), pytest.approx(1.0))  # the all-"a" draws (mean 0) were dropped
    # defined only when task "a" is never drawn: 1/4 of the resamples, fewer than half -> no interval
    assert task_bootstrap(values, lambda v: 1.0 if 0.0 not in v else None, resamples=400) == (None, None)


def test_options_are_checked():
    with pytest.raises(ValueError):
        agreement(noisy_pairs(), confidence=1.0)
    with pytest.raises(ValueError):
        task_bootstrap({"a": [1.0], "b": [2.0]}, np.mean, resamples=0)


# --- undefined cases ----------------------------------------------------------------------------


def test_fewer_than_three_items_are_undefined_everywhere():
    a = row(make_pairs([1, 5], [(1, 2), (5, 4)]))
    for interval in (a.spearman, a.kendall_tau_b, a.mae, a.within_1):
        assert_undefined(interval)
    assert a.spearman.n_items == 2


def test_constant_input_leaves_correlations_undefined_but_errors_defined():
    a = row(make_pairs([3, 3, 3, 3], [1, 2, 4, 5], tasks=["a", "a", "b", "b"]), min_tasks=2)
    assert_undefined(a.spearman)
    assert_undefined(a.kendall_tau_b)
    assert a.mae.value == pytest.approx(1.5) and a.mae.low is not None


def test_no_nan_ever_comes_out():
    pairs = make_pairs([3, 3, 3], [3, 3, 3]) + make_pairs([1, 2], [2, 1], dimension="color_lighting")
    for a in agreement(pairs, **FAST):
        for interval in (a.spearman, a.kendall_tau_b, a.mae, a.within_1):
            for number in (interval.value, interval.low, interval.high):
                assert number is None or math.isfinite(number)


# --- shape of the answer ------------------------------------------------------------------------


def test_one_row_per_dimension_sorted_then_overall_pooling_all():
    pairs = make_pairs([1, 2, 3], [1, 2, 3], dimension="visual_composition") + make_pairs([1, 2, 3], [3, 2, 1], dimension="color_lighting")
    rows = agreement(pairs, **FAST)
    assert [a.dimension for a in rows] == ["color_lighting", "visual_composition", "overall"]
    assert rows[-1].spearman.n_items == 6 and rows[-1].spearman.n_tasks == 3
    (empty,) = agreement([], **FAST)
    assert empty.dimension == "overall" and empty.spearman == Interval(None, None, None, 0, 0)


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        Pair("t", "entry:1", "mood_atmosphere", 3.0, ())
    with pytest.raises(ValueError):
        agreement(make_pairs([1, 2, 3], [1, 2, 3], dimension="overall"))
    with pytest.raises(ValueError):
        ChecklistLabel("t", "entry:1", "a red door", 2, (1,))


# --- checklist ----------------------------------------------------------------------------------


def labels(cases, tasks=None):
    tasks = tasks or [f"t{i % 5}" for i in range(len(cases))]
    return [ChecklistLabel(t, f"entry:{i}", "a red door", j, e) for i, (t, (j, e)) in enumerate(zip(tasks, cases))]


def test_majority_needs_a_strict_majority_and_ties_are_not_met():
    assert majority((1,)) == 1 and majority((0,)) == 0
    assert majority((1, 0)) == 0 and majority((1, 1, 0, 0)) == 0
    assert majority((1, 1, 0)) == 1 and majority((0, 0, 1)) == 0


def test_checklist_undefined_cases():
    never_met = checklist_agreement(labels([(0, (1,)), (0, (0,)), (0, (1, 1))]), **FAST)
    assert_undefined(never_met.precision)  # the judge never says "met"
    assert_undefined(never_met.f1)
    assert never_met.recall.value == 0
    nothing_true = checklist_agreement(labels([(1, (0,)), (0, (0,)), (1, (1, 0))]), **FAST)
    assert_undefined(nothing_true.recall)  # no item is truly met
    assert nothing_true.precision.value == 0
    too_few = checklist_agreement(labels([(1, (1,)), (0, (0,))]), **FAST)
    assert_undefined(too_few.accuracy)
