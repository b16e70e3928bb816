"""Steerability (expected rounds to the top score bin) on hand-made trajectories whose answers are known.

Expected values are worked out by hand in the comments, never by calling the code under test twice."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluator.metrics.steerability import (
    BINS,
    MarkovChain,
    Status,
    expected_rounds,
    fit_chain,
    running_max,
    score_bin,
    simulate_rounds,
    steerability,
    visits,
)


def within_4_se(chain: MarkovChain, exact: float, **kwargs) -> None:
    mean, se = simulate_rounds(chain, **kwargs)
    assert se > 0
    assert abs(mean - exact) <= 4 * se, (mean, se, exact)


def test_geometric_chain_gives_one_plus_one_over_p():
    # Running maxima: START→bin0 twice; bin0→bin0 0 + 6 = 6 times, bin0→bin4 1 + 1 = 2 times, so p = 2/8 = 1/4.
    # From bin 0 the wait for the target is geometric with mean 1/p = 4, plus the first round: 5.
    trajectories = [[10, 90], [10, 10, 5, 10, 10, 10, 10, 95]]
    chain = fit_chain(trajectories, epsilon=0)
    p = 1 / 4
    assert chain.counts[0].tolist() == [0, 2, 0, 0, 0, 0]
    assert chain.counts[1].tolist() == [0, 6, 0, 0, 0, 2]
    assert chain.matrix[1, 5] == pytest.approx(p)
    assert chain.matrix[1, 1] == pytest.approx(1 - p)
    assert expected_rounds(chain) == pytest.approx(1 + 1 / p)
    within_4_se(chain, 1 + 1 / p, n_trials=20_000, seed=3)


def test_deterministic_staircase_takes_five_rounds():
    chain = fit_chain([[10, 30, 50, 70, 90], [0, 21, 41, 61, 81]], epsilon=0)
    for state in range(5):
        assert chain.matrix[state, state + 1] == 1.0
    assert expected_rounds(chain) == pytest.approx(5.0)
    assert simulate_rounds(chain, n_trials=500) == (5.0, 0.0)


@pytest.mark.parametrize(("score", "expected"), [(0, 0), (20.999, 0), (21, 1), (60.5, 2), (80.99, 3), (81, 4), (100, 4)])
def test_score_bin_edges(score, expected):
    assert score_bin(score) == expected


@pytest.mark.parametrize("score", [101, -1, -0.001, 101.5, math.nan, math.inf])
def test_score_bin_rejects_scores_outside_the_bins(score):
    with pytest.raises(ValueError, match="score"):
        score_bin(score)


def test_fit_chain_rejects_bad_scores_even_when_the_running_max_would_hide_them():
    with pytest.raises(ValueError, match="nan"):
        fit_chain([[50, math.nan, 90]])
    with pytest.raises(ValueError, match="-5"):
        fit_chain([[50, -5, 90]])


def test_running_max():
    assert running_max([50, 10, 90, 70]) == [50, 50, 90, 90]
    assert running_max([]) == []


def test_running_max_makes_a_dip_irrelevant():
    dip = fit_chain([[50, 10, 90]], epsilon=0.5)
    flat = fit_chain([[50, 50, 90]], epsilon=0.5)
    assert np.array_equal(dip.counts, flat.counts)
    assert np.allclose(dip.matrix, flat.matrix)
    # Without the running maximum the dip is a real bin2→bin0 transition.
    raw = fit_chain([[50, 10, 90]], epsilon=0.5, use_running_max=False)
    assert raw.counts[3, 1] == 1
    assert not np.array_equal(raw.counts, flat.counts)


def test_smoothing_keeps_rows_stochastic_and_monotone_and_the_target_reachable():
    chain = fit_chain([[10, 30], [30, 50, 45]], epsilon=1)  # the top bin is never observed
    assert chain.states == ("start", "0-20", "21-40", "41-60", "61-80", "81-100")
    assert np.allclose(chain.matrix.sum(axis=1), 1.0)
    assert np.all(chain.matrix[:, 0] == 0)  # nothing returns to START
    bins = chain.matrix[1:, 1:]
    assert np.all(bins[np.tril_indices(5, k=-1)] == 0)  # decreasing transitions
    assert np.all(bins[np.triu_indices(5)] > 0)  # every non-decreasing one got smoothed
    assert chain.counts[1:, 5].sum() == 0
    assert math.isfinite(expected_rounds(chain))


def test_without_smoothing_an_unseen_target_takes_forever():
    chain = fit_chain([[10, 30], [30, 50, 45]], epsilon=0)
    assert expected_rounds(chain) == math.inf
    assert simulate_rounds(chain, n_trials=100, max_steps=50) == (50.0, 0.0)  # every walk hits the cap


def test_a_loop_below_the_target_takes_forever_even_when_rounding_hides_the_singularity():
    # Raw scores (no running max) bounce between bins 1 and 2 and never leave: rows 1/2, 1/2 and
    # 1/3, 2/3. In floats 1 - 2/3 != 1/3, so a bare solve returns ~3e16 instead of failing.
    chain = fit_chain([[30, 30, 50, 50, 50, 30]], epsilon=0, use_running_max=False)
    assert expected_rounds(chain) == math.inf


def test_first_round_in_target_takes_one_round():
    chain = fit_chain([[90], [85, 20]], epsilon=0)
    assert expected_rounds(chain) == 1.0
    assert simulate_rounds(chain, n_trials=100) == (1.0, 0.0)


def test_faster_trajectories_never_add_rounds():
    slow = [[10, 30, 50, 70, 90], [10, 10, 30, 50, 70, 90]]
    fast = [[10, 90], [30, 90]]
    before = expected_rounds(fit_chain(slow))
    after = expected_rounds(fit_chain(slow + fast))
    assert after < before


def test_lower_target_counts_any_bin_at_or_above_it():
    chain = fit_chain([[10, 90]], epsilon=0)  # jumps over bins 1–3
    assert expected_rounds(chain, target_bin=3) == pytest.approx(2.0)
    assert simulate_rounds(chain, target_bin=3, n_trials=100) == (2.0, 0.0)
    assert expected_rounds(chain, target_bin=0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="target_bin"):
        expected_rounds(chain, target_bin=5)


def test_empty_trajectories_are_ignored():
    chain = fit_chain([[], [10, 90], []], epsilon=0)
    assert chain.n_trajectories == 1
    with pytest.raises(ValueError, match="no trajectory has a scored round"):
        fit_chain([[], []])


def test_uniform_smoothing_matches_the_hand_solution():
    # One trajectory [90] with epsilon=1: START goes to bins 0..4 with weights 1,1,1,1,2 (/6);
    # bin i goes uniformly to bins i..4. Time to the top from bin i with m = 5 - i choices is
    # 1 + 1/2 + ... + 1/(m-1) + 1, so bins 0..3 take 37/12, 17/6, 5/2, 2; START adds one round:
    # 1 + (37/12 + 34/12 + 30/12 + 24/12) / 6 = 1 + 125/72 = 197/72.
    # (Before issue 19 this was `steerability([[90]])`, a pooled chain shown as a figure; the chain is unchanged.)
    chain = fit_chain([[90]])
    assert expected_rounds(chain) == pytest.approx(197 / 72)
    within_4_se(chain, 197 / 72, n_trials=20_000, seed=7)
    assert chain.n_trajectories == 1
    assert chain.counts[0, 1:].tolist() == [0, 0, 0, 0, 1]


def test_simulation_is_reproducible_for_a_seed():
    chain = fit_chain([[10, 30, 90], [50, 60, 70]])
    assert simulate_rounds(chain, seed=11, n_trials=2000) == simulate_rounds(chain, seed=11, n_trials=2000)
    assert simulate_rounds(chain, seed=11, n_trials=2000) != simulate_rounds(chain, seed=12, n_trials=2000)


def test_bins_constant():
    assert BINS == ((0, 21), (21, 41), (41, 61), (61, 81), (81, 101))


# --- a category's figure: one chain per target (task), averaged as in ArtWhisperer's algorithm 1 ------------------
#
# Hand values used below (epsilon = 1, running maxima; h_i = rounds to the top from bin i in a row no trajectory left,
# i.e. uniform over bins i..4: h1 = 17/6, h2 = 5/2, h3 = 2, so h1 + h2 + h3 = 22/3):
# SLOW = two trajectories [10, 90]: START row (3,1,1,1,1)/7, bin-0 row (1,1,1,1,3)/7.
#   h0 = (1 + (22/3)/7) / (6/7) = 43/18; E = 1 + (3/7)(43/18) + (22/3)/7 = 43/14.
#   Visits: START 1, bin 0 (3/7)/(6/7) = 1/2, bin 1 (1/7 + 1/14)/(3/4) = 2/7, bin 2 (1/7 + 1/14 + 1/14)/(2/3) = 3/7,
#   bin 3 (1/7 + 1/14 + 1/14 + 1/7)/(1/2) = 6/7 (they add up to 43/14). Prior share of the rows: START 5/7, bin 0 5/7,
#   bins 1–3 all prior, so prior rounds = 5/7 + (1/2)(5/7) + 11/7 = 37/14.
# FAST = two trajectories [90]: START row (1,1,1,1,3)/7, E = 1 + (37/12 + 22/3)/7 = 209/84; prior rounds
#   5/7 + 125/84 = 185/84.
# MIXED = [10, 90] and [90]: START row (2,1,1,1,2)/7, bin-0 row (1,1,1,1,2)/6: h0 = (6/5)(1 + 11/9) = 8/3,
#   E = 1 + (2/7)(8/3) + (22/3)/7 = 59/21.
SLOW, FAST, MIXED = [[10, 90], [10, 90]], [[90], [90]], [[10, 90], [90]]
EVERYTHING = {"max_prior_share": 1.0, "resamples": 2000}  # shows the figure whatever the prior share, to check it


def test_visits_add_up_to_the_expected_rounds_by_hand():
    chain = fit_chain(SLOW)
    assert visits(chain.matrix, 5) == pytest.approx([1, 1 / 2, 2 / 7, 3 / 7, 6 / 7])
    assert chain.prior[:5] == pytest.approx([5 / 7, 5 / 7, 1, 1, 1])
    assert expected_rounds(chain) == pytest.approx(43 / 14)


def test_targets_get_a_chain_each_and_the_figure_is_their_mean_not_a_pooled_chain():
    result = steerability({"a": SLOW, "b": SLOW, "c": SLOW, "d": FAST, "e": FAST}, **EVERYTHING)
    assert result.status == Status.SHOWN
    assert result.expected_rounds == pytest.approx((3 * 43 / 14 + 2 * 209 / 84) / 5)  # 298/105 ≈ 2.84
    # One chain pooling all ten trajectories would give 211/90 ≈ 2.34: START row (7,1,1,1,5)/15, bin-0 row (1,1,1,1,7)/11.
    assert result.expected_rounds != pytest.approx(211 / 90)
    assert result.prior_share == pytest.approx((3 * 37 / 14 + 2 * 185 / 84) / (3 * 43 / 14 + 2 * 209 / 84))  # 1036/1192
    assert [t.target for t in result.targets] == ["a", "b", "c", "d", "e"]
    assert (result.n_trajectories, result.n_reached, result.n_targets) == (10, 10, 5)


def test_the_interval_resamples_trajectories_within_each_target():
    # Four targets have two identical trajectories: every resample refits the same chain (no spread). The fifth has
    # two different ones: a resample draws both [10, 90] (1/4), one of each (1/2) or both [90] (1/4), so the mean
    # over targets takes three values and the 2.5 % and 97.5 % percentiles are the two extremes.
    result = steerability({"a": SLOW, "b": SLOW, "c": SLOW, "d": SLOW, "x": MIXED}, **EVERYTHING)
    assert result.expected_rounds == pytest.approx((4 * 43 / 14 + 59 / 21) / 5)
    assert result.low == pytest.approx((4 * 43 / 14 + 209 / 84) / 5)
    assert result.high == pytest.approx(43 / 14)
    same = steerability({"a": SLOW, "b": SLOW, "c": SLOW, "d": SLOW, "x": SLOW}, **EVERYTHING)
    assert same.low == same.high == pytest.approx(43 / 14)  # identical trajectories: nothing to resample


def test_the_interval_is_seeded():
    runs = {f"t{i}": [[10, 30, 60, 90], [20, 50, 85], [40, 40, 70, 75, 95], [5, 90]] for i in range(5)}
    runs["t0"] = [[10, 10, 10, 30], [50, 85], [60, 70, 90]]
    first, again, other = (steerability(runs, seed=s, max_prior_share=1.0) for s in (3, 3, 4))
    assert first == again and (first.low, first.high) != (other.low, other.high)
    assert first.low < first.expected_rounds < first.high


def test_never_reaching_the_top_bin_is_said_in_words_not_a_number():
    # The demo's OE and CO before issue 19: four trajectories of three rounds in the bottom bin, shown as "4.64 rounds"
    # by one pooled chain (START row (5,1,1,1,1)/9, bin-0 row (9,1,1,1,1)/13: the smoothing's way out only).
    result = steerability({f"oe-{i}": [[5, 10, 8]] for i in range(4)})
    assert result.status == Status.NEVER_REACHED
    assert (result.expected_rounds, result.low, result.high) == (None, None, None)
    assert (result.n_trajectories, result.n_reached) == (4, 0)
    # Enough trajectories change nothing: the data say only that the top bin was never reached.
    assert steerability({f"oe-{i}": [[5, 10, 8]] * 8 for i in range(10)}).status == Status.NEVER_REACHED


def test_too_few_trajectories_show_nothing():
    # The demo's IM before issue 19: four tasks, one trajectory each, 100 in round 1, shown as "2.16 rounds".
    one_each = steerability({f"im-{i}": [[100, 100, 100]] for i in range(4)})
    assert one_each.status == Status.TOO_FEW and one_each.expected_rounds is None
    assert (one_each.n_targets, one_each.n_targets_short, one_each.n_trajectories) == (0, 4, 4)
    four_targets = steerability({f"t{i}": SLOW for i in range(4)}, max_prior_share=1.0)
    assert four_targets.status == Status.TOO_FEW and four_targets.n_targets == 4
    one_short = steerability({**{f"t{i}": SLOW for i in range(4)}, "lone": [[10, 90]]}, max_prior_share=1.0)
    assert one_short.status == Status.TOO_FEW and (one_short.n_targets, one_short.n_targets_short) == (4, 1)
    empty = steerability({"t": [[], []]})
    assert empty.status == Status.TOO_FEW and empty.n_trajectories == 0


def test_a_figure_that_is_mostly_the_smoothing_prior_is_withheld():
    # Eight trajectories per task, all 100 in round 1: the data say one round. Per task START row (1,1,1,1,9)/13, so
    # E = 1 + (125/12)/13 = 281/156 ≈ 1.80, of which 5/13 + 125/156 = 185/156 rounds are prior steps: 185/281 ≈ 66 %.
    result = steerability({f"im-{i}": [[100]] * 8 for i in range(5)})
    assert result.status == Status.PRIOR and result.expected_rounds is None
    assert result.prior_share == pytest.approx(185 / 281)
    assert result.targets[0].expected_rounds == pytest.approx(281 / 156)


def test_a_target_no_trajectory_finished_counts_as_all_prior():
    runs = {**{f"t{i}": [[10, 90], [30, 95]] * 4 for i in range(4)}, "stuck": [[10, 10, 10]] * 8}
    result = steerability(runs, max_prior_share=1.0)
    stuck = next(t for t in result.targets if t.target == "stuck")
    assert stuck.n_reached == 0 and stuck.prior_rounds == stuck.expected_rounds
    others = [t for t in result.targets if t.target != "stuck"]
    assert all(t.prior_rounds < t.expected_rounds for t in others)


def test_enough_data_shows_a_figure_with_its_interval():
    # Eight trajectories of ten rounds on each of five tasks, climbing to the top in four rounds: data, not prior.
    climb = [[10, 30, 60, 90, 90, 90, 90, 90, 90, 90]] * 6 + [[15, 25, 45, 85] + [85] * 6] * 2
    result = steerability({f"t{i}": climb for i in range(5)})
    assert result.status == Status.SHOWN and result.prior_share < 0.5
    assert 3.5 < result.expected_rounds < 4.5 and result.low <= result.expected_rounds <= result.high


def test_steerability_needs_a_positive_epsilon():
    with pytest.raises(ValueError, match="epsilon"):
        steerability({"t": SLOW}, epsilon=0)
