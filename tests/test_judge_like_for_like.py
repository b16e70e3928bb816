"""The judge beside the experts, like with like (issue 19, item 8): the judge against each expert, averaged over the
experts, beside expert against expert, averaged over the pairs; both on the same units and the same bootstrap draws.

Expected values are worked out by hand in the comments, never by calling scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluator.metrics.agreement import TOO_FEW_FOR_INTERVAL, Pair, Rating, agreement, judge_against_experts

N = math.nan


def ratings_of(table: dict[str, list[float]], tasks: list[str] | None = None) -> list[Rating]:
    """{rater: scores per unit (NaN = not rated)} -> ratings; unit u is item "i<u>" on dimension "d" of task tasks[u]."""
    count = len(next(iter(table.values())))
    tasks = tasks or [f"t{u}" for u in range(count)]
    return [Rating(tasks[u], f"i{u}", "d", rater, s) for rater, scores in table.items() for u, s in enumerate(scores) if not math.isnan(s)]


def judge_of(scores: list[float]) -> dict[tuple[str, str], float]:
    return {(f"i{u}", "d"): s for u, s in enumerate(scores)}


def test_two_experts_the_judge_against_each_and_against_their_mean():
    # judge 1 2 3 4, ana 1 2 3 4, ben 2 1 3 4. rho(judge, ana) = 1; rho(judge, ben): rank differences 1 1 0 0,
    # 1 - 6*2/(4*15) = 0.8, so judge-expert = 0.9; expert-expert = rho(ana, ben) = 0.8.
    # Against the experts' mean (1.5 1.5 3 4, ranks 1.5 1.5 3 4) the judge would show
    # rho = 4.5 / sqrt(5 * 4.5) = 0.949 beside the 0.8 of one expert against the other: the comparison issue 19 removes.
    judge = [1, 2, 3, 4]
    like = judge_against_experts(ratings_of({"ana": [1, 2, 3, 4], "ben": [2, 1, 3, 4]}), judge_of(judge), resamples=100)
    assert like.judge_expert.value == pytest.approx(0.9)
    assert like.expert_expert.value == pytest.approx(0.8)
    assert (like.judge_expert.n_items, like.n_experts) == (4, 2)
    pairs = [Pair(f"t{u}", f"i{u}", "d", float(j), (a, b)) for u, (j, a, b) in enumerate(zip(judge, [1, 2, 3, 4], [2, 1, 3, 4]))]
    against_mean = agreement(pairs, resamples=100)[0].spearman.value
    assert against_mean == pytest.approx(4.5 / math.sqrt(5 * 4.5))


def test_three_experts_average_over_the_experts_and_over_the_three_pairs():
    # Units 1-5. judge 1 2 3 4 5; ana 1 2 3 4 5; ben 1 2 3 5 4; cy 5 4 3 2 1.
    # rho(judge, ana) = 1, rho(judge, ben) = 1 - 6*2/(5*24) = 0.9, rho(judge, cy) = -1: judge-expert (1 + 0.9 - 1) / 3 = 0.3.
    # rho(ana, ben) = 0.9, rho(ana, cy) = -1, rho(ben, cy): differences 4 2 0 3 3 -> 1 - 6*38/120 = -0.9:
    # expert-expert (0.9 - 1 - 0.9) / 3 = -1/3.
    table = {"ana": [1, 2, 3, 4, 5], "ben": [1, 2, 3, 5, 4], "cy": [5, 4, 3, 2, 1]}
    like = judge_against_experts(ratings_of(table), judge_of([1, 2, 3, 4, 5]), resamples=100)
    assert like.judge_expert.value == pytest.approx(0.3)
    assert like.expert_expert.value == pytest.approx(-1 / 3)
    assert like.n_experts == 3


def test_only_units_rated_twice_and_judged_count_for_both():
    # Unit 5 is rated by ana alone, unit 6 is not judged: neither enters either figure, so both stay on units 1-4.
    # On units 1-4: judge 1 2 3 4, ana 1 2 3 4, ben 1 2 4 3 -> rho(judge, ben) = rho(ana, ben) = 1 - 6*2/60 = 0.8.
    table = {"ana": [1, 2, 3, 4, 1, 5], "ben": [1, 2, 4, 3, N, 1]}
    like = judge_against_experts(ratings_of(table), judge_of([1, 2, 3, 4, 5]), resamples=100)
    assert like.judge_expert.value == pytest.approx(0.9) and like.expert_expert.value == pytest.approx(0.8)
    assert like.judge_expert.n_items == like.expert_expert.n_items == 4


def test_a_pair_with_too_few_shared_units_is_left_out_of_the_average():
    # ana and ben share units 1-4 (rho 0.8 as above); cy rated units 4 and 5 only, with ana: that pair has two units and
    # is undefined, and cy against the judge has two units too. Units 1-5 are all rated twice; the judge 1 2 3 4 5.
    # judge-ana on 1-5 (ana 1 2 4 3 5): 1 - 6*2/120 = 0.9; judge-ben on 1-4 (1 2 3 4): 1; judge-cy undefined -> 0.95.
    table = {"ana": [1, 2, 4, 3, 5], "ben": [1, 2, 3, 4, N], "cy": [N, N, N, 2, 1]}
    like = judge_against_experts(ratings_of(table), judge_of([1, 2, 3, 4, 5]), resamples=100)
    assert like.judge_expert.value == pytest.approx(0.95)
    assert like.expert_expert.value == pytest.approx(0.8)


def noisy(n_tasks: int, per_task: int = 2, raters: tuple[str, ...] = ("ana", "ben", "cy"), seed: int = 2):
    """(ratings, judge scores) of n_tasks × per_task units: a true score 1-5 plus -1, 0 or +1 for each rater and the judge."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=per_task * n_tasks)
    noise = lambda: np.clip(truth + rng.integers(-1, 2, size=truth.size), 1, 5).astype(float)  # noqa: E731
    table = {name: list(noise()) for name in raters}
    return ratings_of(table, tasks=[f"task-{u // per_task}" for u in range(truth.size)]), judge_of(list(noise()))


def test_both_figures_get_intervals_and_the_same_seed_gives_the_same_numbers():
    ratings, judge = noisy(12)
    first, again = (judge_against_experts(ratings, judge, resamples=300, seed=5) for _ in range(2))
    assert first == again
    for interval in (first.judge_expert, first.expert_expert):
        assert interval.low <= interval.value <= interval.high and (interval.n_items, interval.n_tasks) == (24, 12)


def test_both_figures_are_computed_on_the_same_draws():
    # A judge who copies ana, with two experts: on every draw judge-ana is 1 and judge-ben equals ana-ben, so
    # judge-expert = (1 + expert-expert) / 2 draw by draw. Percentiles commute with that increasing affine map, so
    # the bounds must match exactly; on different draws they would not.
    ratings, _ = noisy(12, per_task=5, raters=("ana", "ben"))
    copy = {(r.item_id, r.dimension): r.score for r in ratings if r.rater == "ana"}
    like = judge_against_experts(ratings, copy, resamples=500, seed=9)
    assert like.judge_expert.value == pytest.approx((1 + like.expert_expert.value) / 2)
    assert like.judge_expert.low == pytest.approx((1 + like.expert_expert.low) / 2)
    assert like.judge_expert.high == pytest.approx((1 + like.expert_expert.high) / 2)
    assert like.expert_expert.low < like.expert_expert.high


def test_fewer_than_ten_tasks_give_no_interval_and_say_so():
    ratings, judge = noisy(9)
    like = judge_against_experts(ratings, judge, resamples=100)
    for interval in (like.judge_expert, like.expert_expert):
        assert interval.value is not None and interval.low is None and interval.note == TOO_FEW_FOR_INTERVAL
    assert judge_against_experts(*noisy(10), resamples=100).judge_expert.low is not None


def test_nothing_rated_twice_is_undefined():
    like = judge_against_experts(ratings_of({"ana": [1, 2, 3, 4]}), judge_of([1, 2, 3, 4]), resamples=100)
    assert (like.judge_expert.value, like.expert_expert.value, like.judge_expert.n_items, like.n_experts) == (None, None, 0, 0)
