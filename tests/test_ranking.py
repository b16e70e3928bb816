"""Board statistics (evaluator/metrics/ranking.py) on worked examples whose answers are known by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluator.metrics.decisions import decide
from evaluator.metrics.ranking import board_score, length_effect, list_formatted, rank_ranges, win_intervals, win_rates

CATS = {f"t{i}": ("OE", "CO", "IM")[i % 3] for i in range(30)}
WIDE = {f"t{i}": ("OE", "CO", "IM")[i % 3] for i in range(60)}  # 20 tasks a category: style control is identified
MANY = {f"t{i:03d}": ("OE", "CO", "IM")[i % 3] for i in range(150)}  # 50 tasks a category: intervals about ±10 points


def test_board_score_is_the_macro_mean_over_categories():
    scores = {"t0": 10.0, "t3": 30.0, "t1": 50.0}  # OE: 10, 30 → 20; CO: 50
    assert board_score(scores, CATS) == pytest.approx(35.0)


def _ranges(scores: dict, categories: dict) -> dict:
    rates = {e: r.rate for e, r in win_rates(scores)[0].items()}
    return {r.entry: r for r in rank_ranges(scores, categories, decide(scores, categories, rates), rates)}


def test_a_rank_is_one_plus_the_entries_decided_ahead_and_lies_in_its_range():
    rng = np.random.default_rng(5)
    base = {t: 50 + rng.normal(0, 3) for t in MANY}
    scores = {"a": {t: v + 30 for t, v in base.items()}, "b": {t: v + rng.normal(0, 3) for t, v in base.items()}, "c": dict(base)}
    ranges = _ranges(scores, MANY)
    assert (ranges["a"].rank, ranges["a"].rank_high) == (1, 1)  # a beats both on all 150 tasks
    assert ranges["b"].rank == ranges["c"].rank == 2 and ranges["b"].rank_high == ranges["c"].rank_high == 3  # a coin toss each task


def test_ranks_lie_inside_their_ranges_on_any_board():
    rng = np.random.default_rng(8)
    for _ in range(50):
        entries = {
            f"e{i}": {t: float(np.clip(rng.normal(rng.uniform(20, 80), rng.uniform(1, 30)), 0, 100)) for t in CATS}
            for i in range(int(rng.integers(2, 9)))
        }
        for r in _ranges(entries, CATS).values():
            assert r.low <= r.score <= r.high and r.rank <= r.rank_high  # the shown rank lies inside its own range


def test_few_tasks_give_wide_intervals_and_ranks_that_claim_nothing():
    few = dict(list(CATS.items())[:6])  # two tasks per category: 95 % rules out only a few points at each end
    scores = {"a": {t: 60.0 + i for i, t in enumerate(few)}, "b": dict.fromkeys(few, 40.0)}
    ranges = _ranges(scores, few)
    assert ranges["a"].low < 5 and ranges["a"].high > 95
    assert [(ranges[e].rank, ranges[e].rank_high) for e in "ab"] == [(1, 2), (1, 2)]  # 6 wins of 6 decide nothing


def test_an_entry_without_scores_is_not_ranked():
    ranges = _ranges({"a": {"t0": 50.0}, "b": {}}, CATS)
    assert set(ranges) == {"a"} and (ranges["a"].rank, ranges["a"].rank_high) == (1, 1)


def test_win_rates_count_ties_half():
    scores = {"a": {"t0": 50, "t1": 40, "t2": 30}, "b": {"t0": 40, "t1": 40, "t2": 60}, "c": {"t0": 10}}
    field, pairs = win_rates(scores)
    assert (pairs[("a", "b")].wins, pairs[("a", "b")].ties, pairs[("a", "b")].losses) == (1, 1, 1)
    assert pairs[("a", "c")].rate == 1.0 and pairs[("c", "a")].rate == 0.0
    assert field["a"].rate == pytest.approx((1 + 0.5 + 1) / 4)  # 2 wins, 1 tie, 1 loss over 4 comparisons
    assert field["c"].rate == 0.0
    # the field rate with its interval: per task the share of the others beaten (ties half), on 0-1
    full = {e: {t: v for t, v in by_task.items() if t in ("t0", "t1", "t2")} for e, by_task in scores.items() if e != "c"}
    low, high = win_intervals(full)["a"]
    rate = win_rates(full)[0]["a"].rate
    assert rate == pytest.approx((1 + 0.5 + 0) / 3) and 0 <= low <= rate <= high <= 1


def test_length_effect_recovers_a_known_slope_and_controls_for_it():
    rng = np.random.default_rng(11)
    effect = {"long": 40.0, "short": 50.0}
    lengths = {"long": {t: float(rng.integers(20, 120)) for t in WIDE}, "short": {t: float(rng.integers(5, 40)) for t in WIDE}}
    scores = {e: {t: effect[e] + 8.0 * math.log(lengths[e][t]) for t in WIDE} for e in effect}
    results = length_effect(scores, lengths, WIDE)
    assert len(results) == 3
    for r in results:
        assert r.coefficient == pytest.approx(8.0) and r.low <= 8.0 <= r.high
        assert r.controlled["short"] - r.controlled["long"] == pytest.approx(10.0)  # the length-free gap
    raw = {e: board_score(s, WIDE) for e, s in scores.items()}
    assert raw["long"] > raw["short"]  # raw, the long prompter wins; controlled, the short one does


def test_no_controlled_score_is_extrapolated_outside_an_entrys_own_lengths():
    rng = np.random.default_rng(11)
    lengths = {"long": {t: float(rng.integers(60, 120)) for t in WIDE}, "short": {t: float(rng.integers(5, 15)) for t in WIDE}}
    scores = {e: {t: 45 + 8.0 * math.log(lengths[e][t]) + rng.normal(0, 1) for t in WIDE} for e in lengths}
    results = length_effect(scores, lengths, WIDE)
    assert len(results) == 3 and all(r.controlled == {} for r in results)  # the mean length lies between the two: neither wrote it


def test_style_control_is_not_fitted_where_it_is_not_identified():
    rng = np.random.default_rng(2)
    lengths = {e: {t: float(rng.integers(5, 60)) for t in CATS} for e in "ab"}
    scores = {e: {t: 40 + 5 * math.log(lengths[e][t]) + rng.normal(0, 2) for t in CATS} for e in "ab"}
    assert length_effect(scores, lengths, CATS) == []  # 10 tasks a category, 2 entries: 17 residual degrees of freedom
    few = dict(list(WIDE.items())[:15])  # 5 tasks a category, however many entries
    many = {f"e{i}": {t: 40 + 5 * math.log(lengths["a"].get(t, 9.0)) + rng.normal(0, 2) for t in few} for i in range(12)}
    assert length_effect(many, {e: {t: float(rng.integers(5, 60)) for t in few} for e in many}, few) == []
    steady = {e: {t: 30.0 + rng.normal(0, 0.5) for t in WIDE} for e in "ab"}  # lengths vary by about 1 %
    assert length_effect(scores | {e: dict.fromkeys(WIDE, 40.0) for e in "ab"}, steady, WIDE) == []


def test_length_effect_leaves_out_a_category_where_length_is_constant_per_entry():
    scores = {"a": dict.fromkeys(CATS, 50.0), "b": dict.fromkeys(CATS, 40.0)}
    lengths = {"a": dict.fromkeys(CATS, 30.0), "b": dict.fromkeys(CATS, 10.0)}
    assert length_effect(scores, lengths, CATS) == []


def test_the_within_entry_fit_equals_statsmodels_dummy_regression():
    """Frisch-Waugh-Lovell: demeaning per entry gives the dummy regression's coefficients, intervals and entry effects."""
    import statsmodels.api as sm

    rng = np.random.default_rng(5)
    tasks = {f"t{i}": "OE" for i in range(9)}
    entries = [f"e{i}" for i in range(6)]
    lengths = {e: {t: float(rng.integers(4, 90)) for t in tasks} for e in entries}
    lists = {e: {t: float(rng.random() < 0.4) for t in tasks} for e in entries}
    scores = {
        e: {t: 30 + 3 * i + 6 * math.log(lengths[e][t]) - 4 * lists[e][t] + rng.normal(0, 3) for t in tasks} for i, e in enumerate(entries)
    }
    (mine,) = length_effect(scores, lengths, tasks, lists)
    rows = [(e, t) for e in entries for t in tasks]
    design = np.array([[1.0 if r[0] == e else 0.0 for e in entries] + [math.log(lengths[r[0]][r[1]]), lists[r[0]][r[1]]] for r in rows])
    fit = sm.OLS(np.array([scores[e][t] for e, t in rows]), design).fit()
    (low, high), (list_low, list_high) = fit.conf_int(0.05)[-2:]
    assert (mine.coefficient, mine.low, mine.high) == pytest.approx((fit.params[-2], low, high), rel=1e-9)
    assert (mine.list_coefficient, mine.list_low, mine.list_high) == pytest.approx((fit.params[-1], list_low, list_high), rel=1e-9)
    means = design[:, -2:].mean(axis=0)
    for i, e in enumerate(entries):
        assert mine.controlled[e] == pytest.approx(fit.params[i] + fit.params[-2:] @ means, rel=1e-9)


def test_list_covariate_is_left_out_where_it_does_not_vary_within_entries():
    rng = np.random.default_rng(3)
    lengths = {e: {t: float(rng.integers(5, 60)) for t in WIDE} for e in "ab"}
    scores = {e: {t: 40 + 5 * math.log(lengths[e][t]) + rng.normal(0, 1) for t in WIDE} for e in "ab"}
    constant = {"a": dict.fromkeys(WIDE, 1.0), "b": dict.fromkeys(WIDE, 0.0)}  # a always lists, b never: the entry explains it
    with_lists = length_effect(scores, lengths, WIDE, constant)
    assert len(with_lists) == 3
    assert [r.coefficient for r in with_lists] == pytest.approx([r.coefficient for r in length_effect(scores, lengths, WIDE)])
    assert all(r.list_coefficient is None for r in with_lists)


@pytest.mark.parametrize(
    ("prompt", "listed"),
    [
        ("masterpiece, best quality, 8k, fox, snow, dramatic lighting", True),
        ("- a fox\n- deep snow\n- dusk light", True),
        ("1. a red kite\n2) a grey sky", True),
        ("A red fox crosses deep snow at dusk, its breath visible, while the village lights glow far behind it.", False),
        ("A poster, bold type", False),
    ],
)
def test_list_formatted_tells_lists_from_prose(prompt, listed):
    assert list_formatted(prompt) is listed


def test_field_win_rates_by_sorted_search_equal_the_pairwise_count():
    rng = np.random.default_rng(13)
    scores = {f"e{i}": {t: float(rng.integers(0, 6)) for t in CATS if rng.random() < 0.8} for i in range(12)}  # many ties
    field, pairs = win_rates(scores, tie_margin=1.0)
    for entry in scores:
        mine = [pairs[(entry, other)] for other in scores if other != entry]
        assert (field[entry].wins, field[entry].ties, field[entry].losses) == tuple(
            sum(getattr(r, k) for r in mine) for k in ("wins", "ties", "losses")
        )
    _, some = win_rates(scores, pairs_for=["e0", "e1"])
    assert set(some) == {("e0", "e1"), ("e1", "e0")}
