"""Steerability (expected rounds to the top score bin) on hand-made trajectories whose answers are known.

Expected values are worked out by hand in the comments, never by calling the code under test twice."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluator.metrics.steerability import (
    BINS,
    MarkovChain,
    Steerability,
    expected_rounds,
    fit_chain,
    running_max,
    score_bin,
    simulate_rounds,
    steerability,
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


def test_steerability_with_uniform_smoothing_matches_the_hand_solution():
    # One trajectory [90] with epsilon=1: START goes to bins 0..4 with weights 1,1,1,1,2 (/6);
    # bin i goes uniformly to bins i..4. Time to the top from bin i with m = 5 - i choices is
    # 1 + 1/2 + ... + 1/(m-1) + 1, so bins 0..3 take 37/12, 17/6, 5/2, 2; START adds one round:
    # 1 + (37/12 + 34/12 + 30/12 + 24/12) / 6 = 1 + 125/72 = 197/72.
    result = steerability([[90]], seed=7)
    assert isinstance(result, Steerability)
    assert result.expected_rounds == pytest.approx(197 / 72)
    assert abs(result.simulated_rounds - 197 / 72) <= 4 * result.simulated_se
    assert result.n_trajectories == 1
    assert result.first_round_bins == (0, 0, 0, 0, 1)


def test_simulation_is_reproducible_for_a_seed():
    chain = fit_chain([[10, 30, 90], [50, 60, 70]])
    assert simulate_rounds(chain, seed=11, n_trials=2000) == simulate_rounds(chain, seed=11, n_trials=2000)
    assert simulate_rounds(chain, seed=11, n_trials=2000) != simulate_rounds(chain, seed=12, n_trials=2000)


def test_bins_constant():
    assert BINS == ((0, 21), (21, 41), (41, 61), (61, 81), (81, 101))
