"""Power of the board's head-to-head decisions (evaluator.metrics.pairs), beside the paired-difference interval the
board used before, on the same draws.

Per task, A's score minus B's is drawn from N(δ, σ²) (a gap δ in points, a per-task spread σ); the head-to-head
decision reads only who won each task, the old one the mean difference on [−100, 100]. For δ ∈ {2, 5, 10},
σ ∈ {5, 10, 20} and n ∈ {24, 100, 300} tasks: the share of runs told apart by each, at one decision alone and with
three held together (a board's three neighbours). A last line checks that 24 wins of 24 are told apart.

    .venv/bin/python bench/pairs_power.py [--runs 2000] [--seed 40]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from evaluator.metrics.betting import betting_rows  # noqa: E402
from evaluator.metrics.pairs import design_level, head_to_head, told_apart_rows  # noqa: E402

GAPS = (2, 5, 10)
SPREADS = (5, 10, 20)
SIZES = (24, 100, 300)
TESTS = (1, 3)


def told_apart(d: np.ndarray, tests: int) -> float:
    """Share of rows of per-task differences that head_to_head tells apart with `tests` decisions held together."""
    return float(told_apart_rows(d, np.zeros_like(d), tests=tests).mean())


def mean_difference_told_apart(d: np.ndarray, tests: int) -> float:
    """Share the mean-difference interval on [−100, 100] (the board's old neighbour test) tells apart."""
    low, high = betting_rows(np.clip(d, -100, 100), -100.0, 100.0, design_level(0.95, tests))
    return float(((low > 0) | (high < 0)).mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=40)
    options = parser.parse_args()
    rng = np.random.default_rng(options.seed)
    cells, started = len(GAPS) * len(SPREADS) * len(SIZES), time.perf_counter()
    print(f"{options.runs} runs a cell, {cells} cells; share told apart at 95 % (1 decision | 3 held together)")
    print("| δ | σ | n | P(A wins a task) | head to head, 1 | head to head, 3 | mean difference, 1 | mean difference, 3 |")
    print("|---|---|---|---|---|---|---|---|")
    for k, (delta, sigma, n) in enumerate((g, s, n) for g in GAPS for s in SPREADS for n in SIZES):
        d = rng.normal(delta, sigma, (options.runs, n))
        h = [told_apart(d, t) for t in TESTS]
        m = [mean_difference_told_apart(d, t) for t in TESTS]
        win = float((d > 0).mean())
        print(f"| {delta} | {sigma} | {n} | {win:.2f} | {h[0]:.3f} | {h[1]:.3f} | {m[0]:.3f} | {m[1]:.3f} |", flush=True)
        print(f"  [{k + 1}/{cells}] {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    sweep = head_to_head([1.0] * 24, [0.0] * 24)
    print(f"24 wins of 24: told apart {sweep.told_apart}, P(A beats B) in [{sweep.low:.3f}, {sweep.high:.3f}]")
    print(f"done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
