"""evaluator.metrics.betting (the head-to-head decisions' interval) checked against implementations it shares no code
with; and the command line of evaluator.metrics.intervals (the site's intervals: STaR-Bets, tests/test_star.py).

tests/test_interval_coverage.py measures coverage by simulation and checks the everyday properties (the mean inside,
the range, scale and mirror invariance, rows against single calls); the command line is tested here. This file checks
that the module computes the set the paper defines, neither narrower (which would void the guarantee) nor wider than
its tolerance:

- against confseq (Waudby-Smith & Ramdas's own package, `confseq.betting.betting_ci`, hedged capital, fixed-n bets,
  truncation 1/2 · 1/m): its endpoints on 20 datasets are stored below (confseq 0.0.11 under numpy 1.26, grid of
  20,000 steps; confseq cannot be installed in this project's environment: its build pins pybind11 2.6, which does
  not compile for Python 3.11, and its modules use `np.float_`, gone in numpy 2);
- against a plain scalar reimplementation of the paper's capital processes written here (products of floats, no
  logs, no bisection): every m the module leaves out is excluded, and the ends are within 1e-6 of the exact set;
- the monotonicity in m that the module's bisection relies on.
"""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.metrics.betting import betting_rows
from evaluator.metrics.intervals import main, mean_interval, mean_interval_rows
from tests.conftest import ROOT

ALPHA = 0.05
TOLERANCE = 1e-6  # on [0, 1]: how far inside the exact set an end may be found
CONFSEQ_STEP = 1 / 20_000  # the grid the stored confseq endpoints come from

# (scores on 0-100 in their order, confseq's lower and upper end on [0, 1]): betting_ci(x / 100, alpha=0.05,
# trunc_scale=0.5, m_trunc=True, breaks=20000); its other defaults are the paper's hedged CI (theta 1/2, running
# intersection, lambda_predmix_eb with fixed_n = n). confseq reports the grid point next to the first and last in the
# set, so the exact ends lie within one step inside its ends.
CONFSEQ = [
    ([50], 0.0, 1.0),
    ([100], 0.0, 1.0),
    ([0, 100], 0.0, 1.0),
    ([40, 60, 55], 0.0, 1.0),
    ([100, 100, 100, 100, 100], 0.3142, 1.0),
    ([0, 0, 0, 0, 0, 0, 0, 0], 0.0, 0.53955),
    ([60, 60, 60, 60, 60, 60, 60, 60], 0.27625, 0.82035),
    ([0, 100, 0, 100, 0, 100, 0, 100, 0, 100], 0.12655, 0.8726),
    ([0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96], 0.2548, 0.67355),
    ([75, 75, 100, 100, 100, 100, 100, 100, 100, 25, 100, 100, 75, 100, 75, 100, 50, 100, 100, 100], 0.61975, 1.0),
    (
        [
            100,
            100,
            100,
            100,
            100,
            38,
            100,
            100,
            82,
            100,
            100,
            100,
            83,
            36,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            18,
            40,
            100,
            100,
            100,
            100,
        ],
        0.6957,
        0.98855,
    ),
    ([64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 92, 0, 0, 0], 0.0, 0.30675),
    ([3, 77, 1, 96, 12, 1, 20, 0, 100, 4, 99, 13, 100, 100, 88], 0.20085, 0.7037),
    (
        [
            33,
            86,
            79,
            56,
            72,
            96,
            98,
            56,
            98,
            88,
            97,
            53,
            50,
            87,
            78,
            92,
            84,
            96,
            93,
            67,
            90,
            96,
            85,
            85,
            99,
            82,
            77,
            61,
            90,
            83,
            67,
            94,
            96,
            75,
            71,
            81,
            88,
            100,
            98,
            95,
        ],
        0.6778,
        0.88395,
    ),
    (
        [
            13,
            11,
            2,
            16,
            13,
            35,
            4,
            1,
            1,
            63,
            59,
            3,
            29,
            21,
            1,
            25,
            2,
            11,
            12,
            10,
            28,
            8,
            14,
            17,
            36,
            17,
            22,
            22,
            9,
            18,
            21,
            6,
            24,
            9,
            31,
            26,
            6,
            2,
            51,
            16,
        ],
        0.1182,
        0.3173,
    ),
    ([73, 69, 41, 40, 73, 64, 38, 64, 56, 74], 0.30685, 0.79355),
    ([20, 20, 26, 79, 17, 84, 86, 76, 20, 82, 86, 22, 17, 86, 29, 25], 0.28275, 0.7056),
    (
        [
            0,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            0,
            100,
            100,
            100,
            100,
            0,
            0,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
            100,
        ],
        0.63925,
        1.0,
    ),
    (
        [
            73,
            86,
            37,
            46,
            24,
            91,
            96,
            85,
            79,
            18,
            68,
            35,
            80,
            87,
            49,
            45,
            64,
            16,
            72,
            100,
            5,
            24,
            55,
            93,
            29,
            2,
            80,
            19,
            93,
            62,
            85,
            0,
            52,
            18,
            11,
            64,
            59,
            61,
            81,
            5,
            70,
            55,
            60,
            34,
            40,
            92,
            41,
            67,
            1,
            88,
        ],
        0.4242,
        0.64185,
    ),
    ([100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 0.52845, 0.83845),
]


def reference_capitals(x: list[float], m: float, alpha: float = ALPHA, c: float = 0.5, theta: float = 0.5) -> tuple[float, float]:
    """max over t of θ·K⁺_t(m) and of (1 − θ)·K⁻_t(m), from the paper's definitions, one observation at a time."""
    n = len(x)
    sigma2_before, total, squares = 0.25, 0.0, 0.0
    positive = negative = 1.0
    best_positive = best_negative = 0.0
    for t, value in enumerate(x, start=1):
        bet = math.sqrt(2 * math.log(2 / alpha) / (n * sigma2_before))
        positive *= 1 + min(bet, c / m) * (value - m)
        negative *= 1 - min(bet, c / (1 - m)) * (value - m)
        best_positive, best_negative = max(best_positive, theta * positive), max(best_negative, (1 - theta) * negative)
        total += value
        squares += (value - (0.5 + total) / (t + 1)) ** 2
        sigma2_before = (0.25 + squares) / (t + 1)
    return best_positive, best_negative


def excluded_from_below(x, m):
    return reference_capitals(x, m)[0] >= 1 / ALPHA


def excluded_from_above(x, m):
    return reference_capitals(x, m)[1] >= 1 / ALPHA


def betting(values, low, high, confidence=0.95):
    """The betting interval of one row (betting_rows on a single row)."""
    lows, highs = betting_rows(np.asarray([values], dtype=float), low, high, confidence)
    return float(lows[0]), float(highs[0])


def check_against_reference(x: list[float]) -> None:
    """The module's interval of x (on [0, 1]) holds every m the reference keeps and is within TOLERANCE of its ends."""
    low, high = betting(x, 0, 1)
    mean = float(np.mean(x))
    assert 0 <= low <= mean <= high <= 1, (x, low, high)
    # Conservative: each end inside (0, 1) is itself a point the reference excludes (and so is everything further out,
    # by monotonicity): the bisection reports the excluded side of its last bracket.
    if low > 0:
        assert excluded_from_below(x, low), (x, low)
    if high < 1:
        assert excluded_from_above(x, high), (x, high)
    # Tight: an end that is the bisection's (not the sample mean it was widened to) is within TOLERANCE of the exact one.
    if low < mean - TOLERANCE:
        assert not excluded_from_below(x, low + TOLERANCE), (x, low)
    if high > mean + TOLERANCE:
        assert not excluded_from_above(x, high - TOLERANCE), (x, high)


@pytest.mark.parametrize("scores, confseq_low, confseq_high", CONFSEQ, ids=[f"n{len(s)}-{i}" for i, (s, _, _) in enumerate(CONFSEQ)])
def test_the_ends_match_confseq_within_its_grid_step(scores, confseq_low, confseq_high):
    low, high = (end / 100 for end in betting(scores, 0, 100))
    mean = sum(scores) / len(scores) / 100
    slack = CONFSEQ_STEP + 2e-6  # confseq's step, the stored rounding and ours
    assert confseq_high - slack <= high <= confseq_high + 1e-9 or high == pytest.approx(mean), (high, confseq_high)
    assert confseq_low - 1e-9 <= low <= confseq_low + slack or low == pytest.approx(mean), (low, confseq_low)


def test_where_the_running_intersection_leaves_out_the_sample_mean_the_interval_is_widened_to_hold_it():
    """Ten tasks at 100 then ten at 0: the capital betting on a high mean peaks after the tenth task and excludes 0.5
    (confseq returns [0.528, 0.838]). Any superset keeps the guarantee, so the module widens to the mean."""
    scores = [100] * 10 + [0] * 10
    assert CONFSEQ[-1][0] == scores and CONFSEQ[-1][1] > 0.5
    low, high = betting(scores, 0, 100)
    assert low == pytest.approx(50.0) and high == pytest.approx(100 * CONFSEQ[-1][2], abs=100 * CONFSEQ_STEP)
    # the order matters (callers pass order.task_order): interleaved, the same scores give a wider, centred interval
    interleaved = betting([100, 0] * 10, 0, 100)
    assert interleaved != (low, high) and interleaved[0] < 50 < interleaved[1]


@pytest.mark.parametrize("scores, _low, _high", CONFSEQ, ids=[f"n{len(s)}-{i}" for i, (s, _, _) in enumerate(CONFSEQ)])
def test_the_ends_match_the_papers_definition_computed_plainly(scores, _low, _high):
    check_against_reference([v / 100 for v in scores])


unit_values = st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]))


@settings(max_examples=150, deadline=None)
@given(st.lists(unit_values, min_size=1, max_size=40))
def test_random_data_match_the_papers_definition(x):
    check_against_reference(x)


@settings(max_examples=150, deadline=None)
@given(st.lists(unit_values, min_size=1, max_size=30), st.floats(1e-4, 1 - 1e-4), st.floats(1e-4, 1 - 1e-4))
def test_each_sides_capital_is_monotone_in_m_so_bisection_finds_its_end(x, m1, m2):
    """Each factor 1 + min(λ, c/m)(x − m) falls as m grows (where c/m binds it is 1 − c + c·x/m), and all factors are
    positive, so the running maximum of θK⁺ falls with m and that of (1 − θ)K⁻ rises: each side excludes one end of
    [0, 1] and the interval is what is left between them."""
    m1, m2 = sorted((m1, m2))
    (positive1, negative1), (positive2, negative2) = reference_capitals(x, m1), reference_capitals(x, m2)
    assert positive1 >= positive2 * (1 - 1e-12) and negative1 <= negative2 * (1 + 1e-12)


def test_a_row_batch_agrees_with_the_stored_ends():
    rows = np.asarray([scores for scores, _, _ in CONFSEQ if len(scores) == 40] * 5_000, dtype=float)  # 10,000 x 40
    low, high = betting_rows(rows, 0, 100)
    assert np.all(low[::2] == low[0]) and np.all(high[1::2] == high[1])
    assert (low[0], high[0]) == betting(list(rows[0]), 0, 100)


def _cli(lines: str, *args: str) -> SimpleNamespace:
    """The command line's main() in this process (so coverage sees it), on `lines` as standard input."""
    stdin, stdout = sys.stdin, sys.stdout
    sys.stdin, sys.stdout = io.TextIOWrapper(io.BytesIO(lines.encode())), io.StringIO()
    try:
        code = main(list(args))
        return SimpleNamespace(returncode=code, stdout=sys.stdout.getvalue(), stderr="")
    finally:
        sys.stdin, sys.stdout = stdin, stdout


def test_python_dash_m_runs_the_command_line():
    shown = subprocess.run(
        [sys.executable, "-m", "evaluator.metrics.intervals", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0 and "--confidence" in shown.stdout and "JSON" in shown.stdout
    done = subprocess.run(
        [sys.executable, "-m", "evaluator.metrics.intervals"], cwd=ROOT, input="[20, 40]\n[x]\n", capture_output=True, text=True, timeout=60
    )
    assert (
        done.returncode == 1
        and done.stderr == ""
        and [sorted(json.loads(line)) for line in done.stdout.splitlines()] == [["high", "low", "mean", "n"], ["error"]]
    )


def test_the_command_line_documents_itself_and_applies_its_options():
    with pytest.raises(SystemExit):  # argparse's own error for a bad option
        _cli("", "--confidence", "1.5")
    values = [10, 80, 55, 35, 90, 60, 20, 75]
    narrow, wide = (json.loads(_cli(json.dumps(values) + "\n", "--confidence", level).stdout) for level in ("0.8", "0.99"))
    assert wide["low"] < narrow["low"] < narrow["high"] < wide["high"]
    assert (narrow["low"], narrow["high"]) == pytest.approx(mean_interval(values, 0, 100, 0.8))
    on_unit = json.loads(_cli("[0.1, 0.8, 0.55]\n", "--low", "0", "--high", "1").stdout)
    assert on_unit["n"] == 3 and (on_unit["low"], on_unit["high"]) == pytest.approx(mean_interval([0.1, 0.8, 0.55], 0, 1))


def test_the_command_line_names_each_bad_line_and_goes_on():
    lines = '[true]\n{"a": 1}\n[1, "x"]\n[20, 40\n[-5, 50]\n[20, 40]\n'
    done = _cli(lines)
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 1 and done.stderr == "" and len(out) == 6
    for number, result in enumerate(out[:5], start=1):
        assert result["error"].startswith(f"line {number}: "), result
    assert "-5" in out[4]["error"]
    assert out[5]["n"] == 2 and out[5]["mean"] == 30.0
    assert _cli("[20, 40]\n").returncode == 0
    bad = _cli("[1e400]\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    assert bad.returncode == 1 and [json.loads(line)["error"][:7] for line in bad.stdout.splitlines()] == ["line 1:", "line 2:"]
    empty = _cli("[]\n")
    assert empty.returncode == 0 and json.loads(empty.stdout) == {
        "n": 0,
        "mean": None,
        "low": None,
        "high": None,
        "reason": "no scores: a mean needs one at least",
    }


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: mean_interval([5.0], 10, 10), "must be finite and not empty"),
        (lambda: mean_interval([5.0], 0, math.inf), "must be finite and not empty"),
        (lambda: mean_interval([5.0], 0, 10, confidence=1.0), "confidence must lie strictly between 0 and 1"),
        (lambda: mean_interval_rows(np.zeros((2, 0)), 0, 10), "at least one value per row"),
        (lambda: mean_interval_rows(np.zeros(3), 0, 10), "2-d array"),
    ],
)
def test_a_question_without_an_answer_is_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_figure_is_printed_to_the_digits_its_noise_supports():
    from evaluator.metrics.intervals import digits_supported

    assert [digits_supported(w) for w in (2.4, 0.3, 0.04, 0.004, 12.0)] == [0, 1, 2, 2, 0]
    assert digits_supported(None) == digits_supported(0.0) == 2  # no uncertainty given: the scale's own digits
