"""Each ranked entry's score interval on a database's boards, two ways on the same stored task scores: the betting
interval over task-id order (the site's until issue 40) and STaR-Bets over the fixed shuffle of task ids (the site's
now, evaluator.metrics.ranking.score_intervals). Reads, never writes.

    DATABASE_URL=sqlite:///…/db.sqlite3 .venv/bin/python bench/board_intervals.py [--board PACK_ID:REVISION]

Run it on the database `make demo` builds to see the showcase board's intervals before and after. Progress goes to
stderr; a table per board and a summary (mean width each way and their ratio) to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def betting_in_id_order(by_task: dict[str, float], categories: dict[str, str], confidence: float = 0.95) -> tuple[float, float]:
    """The site's score interval before issue 40: each category's betting interval over its tasks in id order, at
    1 − (1 − confidence)/K, averaged."""
    from evaluator.metrics.betting import betting_rows

    groups: dict[str, list[float]] = {}
    for task in sorted(by_task):
        groups.setdefault(categories[task], []).append(by_task[task])
    level = 1 - (1 - confidence) / len(groups)
    ends = [betting_rows(np.asarray([values]), 0.0, 100.0, level) for values in groups.values()]
    return float(np.mean([low[0] for low, _ in ends])), float(np.mean([high[0] for _, high in ends]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", help="PACK_ID:REVISION (default: every board)")
    options = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atelier.settings")
    import django

    django.setup()
    from evaluation.boards import board_inputs
    from evaluation.models import BoardStats
    from evaluator.metrics.board import ranked_tasks
    from evaluator.metrics.ranking import score_intervals

    boards = BoardStats.objects.select_related("pack").order_by("pack_id", "revision", "judge_id")
    if options.board:
        pack, revision = options.board.split(":")
        boards = boards.filter(pack_id=int(pack), revision=int(revision))
    widths: list[tuple[float, float]] = []
    for stats in boards:
        print(f"board {stats.pack_id}:{stats.revision} ({stats.pack.name}) …", file=sys.stderr)
        inputs = board_inputs(stats.pack, stats.revision, stats.judge_id, stats.judge_version)
        _, ranked = ranked_tasks(inputs["categories"], inputs["splits"], 2)
        scores = {e: {t: v for t, v in s.items() if t in ranked} for e, s in inputs["every"].items()}
        scores = {e: s for e, s in scores.items() if set(s) == set(ranked) and e not in inputs["feedback"]}
        if not scores:
            continue
        categories = {t: inputs["categories"][t] for t in ranked}
        now = score_intervals(scores, categories)  # entry -> (score, low, high)
        print(f"\nboard {stats.pack_id}:{stats.revision} ({stats.pack.name}), {len(ranked)} ranked tasks, judge {stats.judge_id}")
        print("entry".ljust(8) + "score".rjust(8) + "betting, id order".rjust(22) + "STaR-Bets, shuffle".rjust(22))
        for entry in sorted(scores, key=lambda e: -now[e][0]):
            old = betting_in_id_order(scores[entry], categories)
            score, low, high = now[entry]
            widths.append((old[1] - old[0], high - low))
            print(f"{entry:<8}{score:8.1f}{f'[{old[0]:.1f}, {old[1]:.1f}]':>22}{f'[{low:.1f}, {high:.1f}]':>22}")
    if widths:
        old_mean, new_mean = (float(np.mean(w)) for w in zip(*widths))
        print(
            f"\nSummary: {len(widths)} ranked entries; mean width {old_mean:.1f} (betting, id order) -> {new_mean:.1f} "
            f"(STaR-Bets, shuffle): {new_mean / old_mean:.2f}x"
        )
    else:
        print("\nSummary: no board with ranked entries in this database")


if __name__ == "__main__":
    main()
