"""The board's interval (STaR-Bets since issue 40, evaluator/metrics/intervals.py) against the Student t interval of
before issue 29.

    .venv/bin/python bench/intervals.py [--runs 10000] [--seed 20261129]

On the same random draws for each score shape (those of tests/test_interval_coverage.py: checklist rows piled at 100
or at 0, five-level ratings, two clusters, skewed, …) and n = 2 … 50 tasks: the share of runs whose interval covers
the true mean, and the mean width on 0-100, for both methods; then the time per interval, one at a time and in
batches of 10,000 rows (what a board of 10,000 entries asks for). Progress goes to stderr, the tables to stdout.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluator.metrics.betting import betting_rows  # noqa: E402
from evaluator.metrics.intervals import mean_interval, mean_interval_rows  # noqa: E402
from tests.test_interval_coverage import SHAPES, true_mean  # noqa: E402

SIZES = (2, 3, 5, 8, 10, 20, 50)


def student_t(rows: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The interval the board showed before (from 8 tasks on): mean ± t(n − 1) · s / √n."""
    from scipy import stats

    mean, sem = rows.mean(axis=1), stats.sem(rows, axis=1)
    half = stats.t.ppf(0.5 + confidence / 2, rows.shape[1] - 1) * sem
    return mean - half, mean + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=20261129)
    options = parser.parse_args()
    rng = np.random.default_rng(options.seed)
    coverage: dict[str, dict[int, tuple[float, float]]] = {}
    width: dict[str, dict[int, tuple[float, float]]] = {}
    started = time.perf_counter()
    for name, (draw, _) in SHAPES.items():
        truth = true_mean(name, rng)
        coverage[name], width[name] = {}, {}
        for n in SIZES:
            rows = draw(rng, (options.runs, n))
            old, new = student_t(rows), mean_interval_rows(rows, 0, 100)
            coverage[name][n] = tuple(float(np.mean((lo <= truth) & (truth <= hi))) for lo, hi in (old, new))  # type: ignore[assignment]
            width[name][n] = tuple(float(np.mean(hi - lo)) for lo, hi in (old, new))  # type: ignore[assignment]
        print(f"  {name}: done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)

    print(f"Coverage of the true mean, {options.runs:,} runs per cell: Student t / STaR-Bets (the board showed t from n = 8)")
    print("shape".ljust(24) + "".join(f"n={n}".rjust(14) for n in SIZES))
    for name, row in coverage.items():
        print(name.ljust(24) + "".join(f"{old:.3f} / {new:.3f}".rjust(14) for old, new in row.values()))
    print("\nMean width on 0-100: Student t / STaR-Bets")
    print("shape".ljust(24) + "".join(f"n={n}".rjust(14) for n in SIZES))
    for name, row in width.items():
        print(name.ljust(24) + "".join(f"{old:.1f} / {new:.1f}".rjust(14) for old, new in row.values()))

    print("\nTime per interval (STaR-Bets; the betting interval of before issue 40 on the same rows as the baseline)")
    for n in (8, 50, 100):
        values = list(rng.uniform(0, 100, n))
        start = time.perf_counter()
        for _ in range(200):
            mean_interval(values, 0, 100)
        single = (time.perf_counter() - start) / 200
        rows = rng.uniform(0, 100, (30_000, n))  # a board of 10,000 entries: three category rows each
        start = time.perf_counter()
        mean_interval_rows(rows, 0, 100)
        batch = time.perf_counter() - start
        start = time.perf_counter()
        betting_rows(rows, 0, 100)
        baseline = time.perf_counter() - start
        print(
            f"  n={n}: one at a time {single * 1000:.2f} ms; 30,000 rows at once {batch:.2f} s "
            f"(betting {baseline:.2f} s: {batch / baseline:.1f}x)"
        )
    worst_old = min(c[0] for row in coverage.values() for n, c in row.items() if n >= 8)
    worst_new = min(c[1] for row in coverage.values() for c in row.values())
    print(
        f"\nSummary: lowest coverage, Student t from n = 8: {worst_old:.3f}; STaR-Bets at any n: {worst_new:.3f} ({time.perf_counter() - started:.0f} s)"
    )


if __name__ == "__main__":
    main()
