"""The agreement bootstrap's own Spearman and Kendall tau-b (evaluator/metrics/agreement.py) give scipy's values,
ties and all: they are there only to skip scipy's per-call checks thousands of times per report."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evaluator.metrics.agreement import PAIRWISE_MAX, _kendall_tau_b, _spearman

SCORES = st.lists(st.tuples(st.integers(1, 5), st.sampled_from([1.0, 2.5, 3.0, 4.0, 4.5, 5.0])), min_size=3, max_size=60)


@settings(max_examples=300, deadline=None)
@given(SCORES)
def test_spearman_and_kendall_tau_b_match_scipy_with_ties(pairs: list[tuple[int, float]]) -> None:
    rows = np.asarray(pairs, dtype=float)
    x, y = rows[:, 0], rows[:, 1]
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert _spearman(rows) is None and _kendall_tau_b(rows) is None  # a constant column has no ranking
        return
    assert np.isclose(_spearman(rows), stats.spearmanr(x, y).statistic, rtol=0, atol=1e-12)
    assert np.isclose(_kendall_tau_b(rows), stats.kendalltau(x, y, variant="b").statistic, rtol=0, atol=1e-12)


def test_past_the_pairwise_size_kendall_is_scipys_own() -> None:
    rng = np.random.default_rng(3)
    rows = np.column_stack([rng.integers(1, 6, PAIRWISE_MAX + 7), rng.integers(1, 6, PAIRWISE_MAX + 7)]).astype(float)
    assert _kendall_tau_b(rows) == float(stats.kendalltau(rows[:, 0], rows[:, 1], variant="b").statistic)
    assert np.isclose(_spearman(rows), stats.spearmanr(rows[:, 0], rows[:, 1]).statistic, rtol=0, atol=1e-12)
