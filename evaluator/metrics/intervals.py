"""The intervals the site shows for a mean of bounded scores: valid for every distribution, at the number of tasks
scored, with a proof.

The method is STaR-Bets (Voráček & Orabona, "STaR-Bets: Sequential Target-Recalculating Bets for Tighter Confidence
Intervals", NeurIPS 2025; evaluator.metrics.star, where the test, its guarantee and the proof that the fast search
equals the full grid are written out). For x_1 … x_n drawn independently from any distribution on [low, high] with
mean μ, n fixed in advance and the values in an order that does not depend on them, the interval holds μ with
probability at least `confidence`. Nothing is assumed about the shape (piles at 100, two clusters, a five-level
rating, a point mass). Of five methods with such a proof it is the narrowest at every n from 2 (bench/mean_intervals.py:
at n = 8, 50.9 points on 0–100 against 62.0 for the betting interval the site showed before, averaged over 11 shapes).

Order: every value enters in order.task_order, a fixed shuffle of the task ids (their SHA-256), chosen before any score
exists. Task-id order would do for the guarantee too, but ids carry the category, scores depend on it, and STaR-Bets
loses power on rows whose order follows their values.

The head-to-head decisions keep the betting interval of Waudby-Smith & Ramdas (evaluator.metrics.betting): its
running maximum gives anytime p-values for the step-down procedure.

Command line (one JSON array of numbers per input line, in task order; one JSON object per output line):

    python -m evaluator.metrics.intervals [--confidence 0.95] [--low 0] [--high 100] < scores.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from . import star


def mean_interval(values: Sequence[float], low: float, high: float, confidence: float = 0.95) -> tuple[float, float] | None:
    """The interval of the mean of `values` (each in [low, high], in task_order), or None for no values."""
    return star.mean_interval(values, low, high, confidence)


def mean_interval_rows(rows: np.ndarray, low: float, high: float, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """mean_interval of each row of a (rows × n) array at once (n ≥ 1)."""
    return star.mean_interval_rows(rows, low, high, confidence)


def digits_supported(half_width: float | None, most: int = 2) -> int:
    """Decimals a figure can be printed to when its uncertainty is ± half_width: its last digit at the order of the
    half-width's leading digit (± 2.4 → 0 decimals, ± 0.3 → 1), at most `most`; `most` where there is no uncertainty."""
    if half_width is None or not math.isfinite(half_width) or half_width <= 0:
        return most
    return max(0, min(most, -math.floor(math.log10(half_width))))


def macro_intervals(
    many: list[list[list[float]]], confidence: float = 0.95, low: float = 0.0, high: float = 100.0
) -> list[tuple[float | None, float | None]]:
    """The interval of each macro mean in `many` (a mean of K group means, e.g. an entry's categories): each group's
    interval at 1 - (1 - confidence) / K, averaged. With probability at least `confidence` all K cover their means at
    once (Bonferroni), and then the average covers the average. (None, None) for no groups or an empty one. Rows of equal length and level are computed together, so a
    board of 10,000 entries costs a few vectorised calls."""
    batches: dict[tuple[int, float], list[tuple[int, int, list[float]]]] = defaultdict(list)
    for i, groups in enumerate(many):
        if groups and all(groups):
            level = 1 - (1 - confidence) / len(groups)
            for k, values in enumerate(groups):
                batches[(len(values), level)].append((i, k, values))
    bounds: dict[tuple[int, int], tuple[float, float]] = {}
    for (_, level), rows in batches.items():
        lows, highs = mean_interval_rows(np.array([values for _, _, values in rows], dtype=float), low, high, level)
        for (i, k, _), a, b in zip(rows, lows, highs):
            bounds[(i, k)] = (float(a), float(b))
    out: list[tuple[float | None, float | None]] = []
    for i, groups in enumerate(many):
        if not groups or not all(groups):
            out.append((None, None))
            continue
        parts = [bounds[(i, k)] for k in range(len(groups))]
        out.append((float(np.mean([a for a, _ in parts])), float(np.mean([b for _, b in parts]))))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evaluator.metrics.intervals",
        description="Confidence intervals for the mean of bounded values (STaR-Bets, Voráček & Orabona 2025): valid for "
        "any distribution on [low, high] at the n given. Reads one JSON array of numbers per line (in an order that does not "
        'depend on the values: the site uses its tasks in task_order); writes one JSON object per line: {"n", "mean", "low", "high"} (for [], nulls and a "reason"), '
        'or {"error"} for a line that is not such an array (the exit status is then 1). With the default range this is '
        "the interval of a board's category cell.",
    )
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--low", type=float, default=0.0, help="the values' lower bound (default 0)")
    parser.add_argument("--high", type=float, default=100.0, help="the values' upper bound (default 100)")
    options = parser.parse_args(argv)
    if not (0 < options.confidence < 1 and math.isfinite(options.low) and math.isfinite(options.high) and options.high > options.low):
        parser.error("need 0 < --confidence < 1 and finite --low < --high")
    failed = False
    for number, raw in enumerate(sys.stdin.buffer, start=1):  # bytes: a line that is not UTF-8 is one bad line
        if not raw.strip():
            continue
        try:
            values = json.loads(raw.decode("utf-8"))
            if not isinstance(values, list) or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                raise ValueError("expected a JSON array of numbers")
            if not values:  # a valid question with no answer: the board shows no figure either
                print(json.dumps({"n": 0, "mean": None, "low": None, "high": None, "reason": "no scores: a mean needs one at least"}))
                continue
            low, high = mean_interval(values, options.low, options.high, options.confidence)  # type: ignore[misc]
            print(json.dumps({"n": len(values), "mean": sum(values) / len(values), "low": low, "high": high}))
        # json.JSONDecodeError and UnicodeDecodeError are ValueErrors; an integer too large for a float overflows; arrays
        # nested thousands deep exhaust the decoder's recursion
        except (ValueError, OverflowError, RecursionError) as error:
            failed = True
            print(json.dumps({"error": f"line {number}: {error}"}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
