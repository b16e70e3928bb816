"""The board job's statistics alone (evaluator.metrics.board.board_stats_compute) at 10,000 entries, no database.

    .venv/bin/python bench/board_stats.py [--entries 10000] [--tasks-per-category 2 10] [--seed 0]

Random task scores (uniform on 0-100) and prompt lengths for N entries that all cover every task, half the tasks
in each category on the test split: every entry is ranked, so rank ranges, neighbour intervals, win rates, the
length fit and the dev/test gaps are all computed. bench/board.py times the whole job (database reads and writes
included) on generated judgements; this one isolates the statistics, the part issue 29 changed, so that a checkout
of any commit times its own code on the same inputs.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atelier.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--tasks-per-category", type=int, nargs="+", default=[2, 10])
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    from evaluator.metrics.board import SETTINGS, board_stats_compute

    results = []
    for per_category in options.tasks_per_category:
        rng = random.Random(options.seed)
        categories = {f"t{i:03d}": ("OE", "CO", "IM")[i % 3] for i in range(3 * per_category)}
        splits = {t: "dev" if i < 3 * per_category // 2 else "test" for i, t in enumerate(sorted(categories))}
        every = {str(e): {t: rng.uniform(0, 100) for t in categories} for e in range(options.entries)}
        lengths = {e: {t: rng.uniform(8, 80) for t in categories} for e in every}
        print(f"  {options.entries:,} entries x {len(categories)} tasks: computing …", file=sys.stderr, flush=True)
        start = time.perf_counter()
        board_stats_compute(every, lengths, categories, splits, settings=SETTINGS)
        results.append((len(categories), time.perf_counter() - start))
    for tasks, seconds in results:
        print(f"{options.entries:,} entries x {tasks} tasks: board_stats_compute {seconds:.2f} s")


if __name__ == "__main__":
    main()
