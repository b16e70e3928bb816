"""The agreement bootstrap's own Spearman, Kendall tau-b and Pearson (evaluator/metrics/agreement.py) give scipy's
values, ties and all, at any size: they are there only to skip scipy's per-call checks thousands of times per report.
Tau-b takes one of three ways (the table of distinct values, all pairs, scipy itself); each is held to scipy here."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evaluator.metrics.agreement import PAIRWISE_MAX, TABLE_MAX, _kendall_tau_b, _pearson, _spearman

SCORES = st.lists(st.tuples(st.integers(1, 5), st.sampled_from([1.0, 2.5, 3.0, 4.0, 4.5, 5.0])), min_size=3, max_size=60)


def assert_as_scipy(rows: np.ndarray) -> None:
    x, y = rows[:, 0], rows[:, 1]
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert _spearman(rows) is None and _kendall_tau_b(rows) is None and _pearson(rows) is None  # no ranking
        return
    assert abs(_spearman(rows) - stats.spearmanr(x, y).statistic) <= 1e-12
    assert abs(_kendall_tau_b(rows) - stats.kendalltau(x, y, variant="b").statistic) <= 1e-12
    assert abs(_pearson(rows) - stats.pearsonr(x, y).statistic) <= 1e-12


@settings(max_examples=300, deadline=None)
@given(SCORES)
def test_spearman_and_kendall_tau_b_match_scipy_with_ties(pairs: list[tuple[int, float]]) -> None:
    assert_as_scipy(np.asarray(pairs, dtype=float))


def column(rng: np.random.Generator, n: int, distinct: int, scale: float) -> np.ndarray:
    """`distinct` > 0: that many levels (k / scale, like means of `scale` experts); 0: continuous (no ties)."""
    return rng.integers(1, distinct + 1, n) / scale if distinct else rng.normal(size=n)


@settings(max_examples=120, deadline=None)
@given(
    n=st.integers(3, 1500),
    x_levels=st.sampled_from([0, 1, 2, 5, 13, 40, 200]),
    y_levels=st.sampled_from([0, 2, 5, 13, 100]),
    scale=st.sampled_from([1.0, 3.0, 7.0]),
    correlated=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_way_matches_scipy_past_the_pairwise_size(n, x_levels, y_levels, scale, correlated, seed) -> None:
    """Up to 1500 items, few or many distinct values on either side, so each of the three ways is taken."""
    rng = np.random.default_rng(seed)
    x = column(rng, n, x_levels, scale)
    y = np.round(x * 2) / 2 + column(rng, n, y_levels, scale) if correlated else column(rng, n, y_levels, scale)
    assert_as_scipy(np.column_stack([x, y]))


def test_past_the_pairwise_size_kendall_is_scipys_own(monkeypatch) -> None:
    """Each of the three ways is taken where it should be, and gives scipy's value; only many distinct values on both
    sides past PAIRWISE_MAX items ask scipy itself."""
    rng = np.random.default_rng(3)
    few = np.column_stack([rng.integers(1, 6, 1000), rng.integers(1, 14, 1000) / 3])  # 5 x 13 values: the table
    many = rng.normal(size=(PAIRWISE_MAX + 50, 2))  # too many values for the table, past the pairwise size: scipy
    small = rng.normal(size=(PAIRWISE_MAX, 2))  # all pairs
    assert len(np.unique(many[:, 0])) * len(np.unique(many[:, 1])) > TABLE_MAX
    calls = []
    kendalltau = stats.kendalltau
    monkeypatch.setattr(stats, "kendalltau", lambda *a, **k: calls.append(len(a[0])) or kendalltau(*a, **k))
    for rows in (few, many, small):
        assert abs(_kendall_tau_b(rows) - kendalltau(rows[:, 0], rows[:, 1], variant="b").statistic) <= 1e-12
    assert calls == [len(many)]  # only the case with many distinct values past the pairwise size asks scipy
    # The table's integer counts and scipy's expression: scipy's value to the last bit.
    assert _kendall_tau_b(few) == float(kendalltau(few[:, 0], few[:, 1], variant="b").statistic)
