"""Kendall's tau-b and Pearson's r in the agreement bootstrap (evaluator/metrics/agreement.py): what they do now against
what they did before (tau-b over all pairs with numpy up to 400 items and scipy.stats.kendalltau above; Pearson by
scipy.stats.pearsonr), in the same run.

    .venv/bin/python bench/agreement.py [--sizes 100 400 1000 4000] [--resamples 1000] [--repeats 20] [--report-repeats 3]

Rubric-like scores (the judge's 1-5 against the mean of three experts, so 5 x 13 distinct values, correlated), as the
/judge/ report computes them: first the time per call of each way at each size (the fastest of --repeats batches), then one whole
`agreement()` report (one dimension plus "overall", 24 tasks) with the old tau-b patched in and with the new one, then
one `prediction_agreement()` (continuous predictions against observed means: Pearson and tau-b, the difficulty report)
with both old functions patched in and without (the fastest of --report-repeats runs each); each time whether every
figure of the two is equal (to 1e-12).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from functools import partial
from pathlib import Path
from unittest import mock

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluator.metrics import agreement as agreement_module  # noqa: E402
from evaluator.metrics.agreement import Pair, Prediction, _columns, _correlatable, _kendall_tau_b, agreement, prediction_agreement  # noqa: E402

OLD_PAIRWISE_MAX = 400


def tau_b_before(rows: np.ndarray) -> float | None:
    """The tau-b of before (commit bc5126d): all pairs with numpy up to 400 items, scipy above."""
    x, y = _columns(rows)
    if not _correlatable(x, y):
        return None
    if len(x) > OLD_PAIRWISE_MAX:
        return float(stats.kendalltau(x, y, variant="b").statistic)
    upper = np.triu_indices(len(x), 1)
    dx, dy = np.sign(np.subtract.outer(x, x)[upper]), np.sign(np.subtract.outer(y, y)[upper])
    return float(np.dot(dx, dy) / math.sqrt(np.count_nonzero(dx) * np.count_nonzero(dy)))


def pearson_before(rows: np.ndarray) -> float | None:
    x, y = _columns(rows)
    return float(stats.pearsonr(x, y).statistic) if _correlatable(x, y) else None


def rubric_rows(n: int, rng: np.random.Generator) -> np.ndarray:
    """(judge, mean of three experts): the experts a noisy copy of a latent 1-5 score, the judge another."""
    latent = rng.integers(1, 6, n)
    experts = np.clip(latent[:, None] + rng.integers(-1, 2, (n, 3)), 1, 5).mean(axis=1)
    judge = np.clip(latent + rng.integers(-1, 2, n), 1, 5).astype(float)
    return np.column_stack([judge, experts])


def per_call(statistic, rows: np.ndarray, repeats: int) -> float:
    """Seconds per call: the fastest of `repeats` batches of calls lasting about 20 ms each."""
    calls = max(1, int(0.02 / max(_once(statistic, rows), 1e-6)))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            statistic(rows)
        times.append((time.perf_counter() - start) / calls)
    return min(times)


def _once(statistic, rows: np.ndarray) -> float:
    start = time.perf_counter()
    statistic(rows)
    return time.perf_counter() - start


def report_pairs(n: int, rng: np.random.Generator, tasks: int = 24) -> list[Pair]:
    rows = rubric_rows(n, rng)
    return [Pair(f"t{i % tasks:02d}", f"item:{i}", "aesthetics", float(j), (float(e),)) for i, (j, e) in enumerate(rows)]


def predictions(n: int, rng: np.random.Generator, tasks: int = 24) -> list[Prediction]:
    observed = rng.normal(size=n)
    return [Prediction(f"t{i % tasks:02d}", "all", float(o + rng.normal()), float(o)) for i, o in enumerate(observed)]


def figures(result: list) -> list[float | None]:
    """Every value and bound of an agreement() or prediction_agreement() result, in order."""
    rows = [(r.spearman, r.kendall_tau_b, r.mae, r.within_1) if hasattr(r, "spearman") else r[1:] for r in result]
    return [v for row in rows for interval in row for v in (interval.value, interval.low, interval.high)]


def same(a: list, b: list) -> bool:
    """Every figure of two results equal to 1e-12 (None where None)."""
    pairs = list(zip(figures(a), figures(b), strict=True))
    return all((u is None and v is None) or (u is not None and v is not None and abs(u - v) <= 1e-12) for u, v in pairs)


def timed(run, repeats: int) -> tuple[float, list]:
    """The fastest of `repeats` runs (a shared machine's load only ever adds time), and the result."""
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 400, 1000, 4000])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--report-repeats", type=int, default=3, help="runs of each whole report, the fastest kept")
    parser.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)

    print("Kendall tau-b per call (rubric-like scores, 5 x 13 distinct values), fastest of", args.repeats, "batches")
    print(f"{'items':>6} {'before':>10} {'scipy':>10} {'now':>10} {'speed-up':>9} {'|now - scipy|':>14}")
    for n in args.sizes:
        rows = rubric_rows(n, rng)
        before, scipy_time, now = (per_call(f, rows, args.repeats) for f in (tau_b_before, _scipy, _kendall_tau_b))
        gap = abs(_kendall_tau_b(rows) - _scipy(rows))
        print(f"{n:>6} {before * 1e6:>8.0f}us {scipy_time * 1e6:>8.0f}us {now * 1e6:>8.0f}us {before / now:>8.1f}x {gap:>14.1e}")

    print(f"\nOne agreement() report (one dimension and overall, {args.resamples} resamples, 24 tasks)")
    print(f"{'items':>6} {'before':>9} {'now':>9} {'speed-up':>9}  equal")
    for n in args.sizes:
        pairs = report_pairs(n, rng)
        with mock.patch.object(agreement_module, "_kendall_tau_b", tau_b_before):
            before, old = timed(partial(agreement, pairs, resamples=args.resamples), args.report_repeats)
        now, new = timed(partial(agreement, pairs, resamples=args.resamples), args.report_repeats)
        print(f"{n:>6} {before:>8.2f}s {now:>8.2f}s {before / now:>8.1f}x  {same(old, new)}")

    print(f"\nOne prediction_agreement() (continuous, one category and overall, {args.resamples} resamples, 24 tasks)")
    print(f"{'items':>6} {'before':>9} {'now':>9} {'speed-up':>9}  equal")
    for n in args.sizes:
        items = predictions(n, rng)
        with mock.patch.multiple(agreement_module, _kendall_tau_b=tau_b_before, _pearson=pearson_before):
            before, old = timed(partial(prediction_agreement, items, resamples=args.resamples), args.report_repeats)
        now, new = timed(partial(prediction_agreement, items, resamples=args.resamples), args.report_repeats)
        print(f"{n:>6} {before:>8.2f}s {now:>8.2f}s {before / now:>8.1f}x  {same(old, new)}")


def _scipy(rows: np.ndarray) -> float:
    return float(stats.kendalltau(rows[:, 0], rows[:, 1], variant="b").statistic)


if __name__ == "__main__":
    main()
