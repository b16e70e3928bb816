"""Head-to-head decisions (evaluator/metrics/pairs.py, decisions.py): the guarantee on exchangeable pairs, the
command line, and a board's decisions held together."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from evaluator.metrics.decisions import board_pair, decide, rank_bounds, row_order, task_order
from evaluator.metrics.pairs import head_to_head, holm, power, told_apart_rows

RUNS = 10_000
SIZES = (1, 2, 3, 5, 8, 12, 20, 30, 50, 100, 200, 300)
FIVE = np.array([0.0, 25.0, 50.0, 75.0, 100.0])


def _clip(x):
    return np.clip(x, 0.0, 100.0)


# Each shape draws (runs × n) scores for ONE entry; A and B are two independent draws of the same shape on the same
# tasks (a task-level effect shared by both where the shape has one), so P(A beats B) + ½ P(tie) is exactly ½.
def _shared(draw):
    """A shape with a per-task effect both entries share: returns (a, b)."""

    def pair(rng, size):
        task = draw(rng, size)
        return _clip(task + rng.normal(0, 4, size)), _clip(task + rng.normal(0, 4, size))

    return pair


def _independent(draw):
    return lambda rng, size: (draw(rng, size), draw(rng, size))


SHAPES = {
    "uniform": _independent(lambda rng, s: rng.uniform(0, 100, s)),
    "ceiling (80 % at 100)": _independent(lambda rng, s: np.where(rng.random(s) < 0.8, 100.0, rng.uniform(0, 100, s))),
    "floor (80 % at 0)": _independent(lambda rng, s: np.where(rng.random(s) < 0.8, 0.0, rng.uniform(0, 100, s))),
    "point mass at 50": _independent(lambda rng, s: np.full(s, 50.0)),
    "five-level rating": _independent(lambda rng, s: rng.choice(FIVE, s)),
    "rating piled at 100": _independent(lambda rng, s: rng.choice(FIVE, s, p=[0.02, 0.03, 0.05, 0.2, 0.7])),
    "0 or 100": _independent(lambda rng, s: 100.0 * (rng.random(s) < 0.5)),
    "spike (5 % at 100)": _independent(lambda rng, s: 100.0 * (rng.random(s) < 0.05)),
    "two samples per task": _independent(lambda rng, s: (rng.choice(FIVE, s) + rng.choice(FIVE, s)) / 2),
    "bimodal": _independent(lambda rng, s: 100 * rng.beta(0.3, 0.3, s)),
    "shared task difficulty": _shared(lambda rng, s: rng.uniform(0, 100, s)),
    "shared difficulty at the ceiling": _shared(lambda rng, s: rng.uniform(90, 110, s)),
    "equal on half the tasks": lambda rng, s: (lambda a, b, same: (a, np.where(same, a, b)))(
        rng.choice(FIVE, s), rng.choice(FIVE, s), rng.random(s) < 0.5
    ),
}


def test_exchangeable_pairs_are_told_apart_at_most_five_percent_of_the_time():
    """The guarantee (issue 40, item 3): 13 shapes × 12 sizes from 1 to 300 tasks, 10,000 runs a cell."""
    rng = np.random.default_rng(40)
    worst = {}
    for name, draw in SHAPES.items():
        for n in SIZES:
            a, b = draw(rng, (RUNS, n))
            worst[(name, n)] = float(told_apart_rows(a, b).mean())
    assert max(worst.values()) <= 0.05, sorted(worst.items(), key=lambda kv: -kv[1])[:5]
    assert max(worst.values()) > 0.005  # not vacuous: some cells come near the level


def test_the_fast_decision_is_head_to_heads_interval():
    rng = np.random.default_rng(1)
    for tests in (1, 3, 28):
        for n in (1, 5, 24, 100):
            a, b = rng.choice(FIVE, (60, n)), _clip(rng.choice(FIVE, (60, n)) + 10)
            fast = told_apart_rows(a, b, tests=tests)
            slow = [head_to_head(x, y, tests=tests).told_apart for x, y in zip(a, b)]
            assert list(fast) == slow


def test_power_at_the_packs_size_meets_the_goal():
    assert power(100, 5, 10) >= 0.9 and power(24, 5, 10) < 0.5 and power(300, 2, 5) > 0.99  # bench/pairs_power.py's cells


def test_a_clean_sweep_of_24_tasks_is_told_apart_and_a_coin_toss_is_not():
    sweep = head_to_head([80.0] * 24, [60.0] * 24)
    assert (sweep.a_wins, sweep.b_wins, sweep.ties, sweep.told_apart, sweep.ahead) == (24, 0, 0, True, "a") and sweep.low > 0.5
    flipped = head_to_head([60.0] * 24, [80.0] * 24, tests=15)  # with a board's 15 pair decisions held together
    assert flipped.ahead == "b" and flipped.high < 0.5
    toss = head_to_head([60.0, 40.0] * 12, [50.0] * 24)
    assert (toss.a_wins, toss.b_wins, toss.rate, toss.told_apart, toss.ahead) == (12, 12, 0.5, False, None)
    assert head_to_head([50.0] * 24, [50.0] * 24).ties == 24  # equal scores: ties, each worth ½


def _pairs(lines: list[str], *args: str) -> tuple[int, list[dict], str]:
    done = subprocess.run(
        [sys.executable, "-m", "evaluator.metrics.pairs", *args], input="\n".join(lines).encode(), capture_output=True, timeout=60
    )
    return done.returncode, [json.loads(x) for x in done.stdout.decode().splitlines()], done.stderr.decode()


def test_the_command_prints_the_boards_function_and_names_bad_lines():
    a, b = [70.0 + i % 5 for i in range(30)], [60.0 + i % 7 for i in range(30)]
    code, out, errors = _pairs([json.dumps({"a": a, "b": b, "tests": 3}), json.dumps({"a": [1, 2], "b": [2, 1]})])
    assert code == 0 and errors == ""
    assert out[0] == head_to_head(a, b, tests=3).public() and set(out[0]) == {
        "n",
        "a_wins",
        "b_wins",
        "ties",
        "low",
        "high",
        "told_apart",
        "ahead",
    }
    assert out[1]["n"] == 2 and out[1]["told_apart"] is False and out[1]["ahead"] is None
    bad = [
        '{"a": [1], "b": [1, 2]}',
        "[1, 2]",
        '{"a": [101], "b": [1]}',
        '{"a": [1], "b": [1], "tests": 0}',
        "{nope",
        '{"a": [1], "b": [1], "x": 1}',
    ]
    code, out, errors = _pairs(["", *bad, json.dumps({"a": [1.0], "b": [2.0]})], "--confidence", "0.9")
    assert code == 1 and "Traceback" not in errors
    assert [o.get("error", "").split(":")[0] for o in out[:-1]] == [f"line {k}" for k in range(2, 8)]
    assert "pair by position" in out[0]["error"] and "a[0] is 101" in out[2]["error"] and "tests must be" in out[3]["error"]
    assert out[-1]["n"] == 1  # a bad line does not stop the lines after it


def test_holm_decides_exactly_where_the_interval_at_its_level_excludes_a_half():
    p = np.array([0.001, 0.02, 0.012, 0.3, 0.018])
    decided, levels, rest = holm(p, 0.05)
    assert list(decided) == [True, False, True, False, False]  # 0.001 ≤ .05/5, 0.012 ≤ .05/4, then 0.018 > .05/3 stops
    assert (
        levels[0] == pytest.approx(1 - 2 * 0.01) and levels[2] == pytest.approx(1 - 2 * 0.0125) and rest == pytest.approx(1 - 2 * 0.05 / 3)
    )


def _board(rng, gaps: list[float], n: int) -> tuple[dict, dict]:
    tasks = {f"{c.lower()}-{i:03d}": c for i in range(n) for c in ("OE", "CO", "IM")}
    base = {t: rng.uniform(20, 70) for t in tasks}
    scores = {f"e{k}": {t: float(_clip(base[t] + g + rng.normal(0, 10))) for t in tasks} for k, g in enumerate(gaps)}
    return scores, tasks


def _rates(scores: dict) -> dict:
    return {e: float(np.mean([np.mean([scores[e][t] > scores[o][t] for t in scores[e]]) for o in scores if o != e])) for e in scores}


def test_a_boards_decisions_agree_with_its_shown_intervals_and_order():
    rng = np.random.default_rng(3)
    scores, tasks = _board(rng, [0, 1, 8, 9, 20, 40], 40)
    rates = _rates(scores)
    decisions = decide(scores, tasks, rates)
    assert decisions["tests"] == 15 * 4 and decisions["scopes"] == ["overall", "CO", "IM", "OE"]  # 40 tasks a category can decide
    order = task_order(tasks)
    for a in scores:
        for b in scores:
            if a < b:
                shown = board_pair(decisions, scores[a], scores[b], (a, b), order)
                excluded = shown.low > 0.5 or shown.high < 0.5
                assert shown.told_apart == excluded, (a, b, shown)
    rows, broken = row_order(list(scores), decisions, rates, {})
    ahead = {(x, y) for x, y, s, _ in decisions["ahead"] if s == "overall"}
    assert broken == 0 and all(rows.index(x) < rows.index(y) for x, y in ahead) and ("e5", "e4") in ahead
    bounds = rank_bounds(rows, decisions)
    assert bounds["e5"] == (1, 1) and all(best <= worst for best, worst in bounds.values())


def test_no_false_claim_on_boards_of_exchangeable_entries_in_95_percent_of_them():
    """Family-wise: 400 boards of 6 exchangeable entries on 30 tasks a category; any decided claim is false."""
    rng = np.random.default_rng(11)
    boards_with_a_claim = 0
    for _ in range(400):
        scores, tasks = _board(rng, [0] * 6, 30)
        boards_with_a_claim += bool(decide(scores, tasks, _rates(scores))["ahead"])
    assert boards_with_a_claim / 400 <= 0.05
