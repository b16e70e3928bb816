"""Judge workers that scale: 1, 2 and 4 judge worker processes on a judge of 1 s latency and no quota.

    .venv/bin/python bench/workers_scale.py [--judgements 120] [--workers 1 2 4] [--redis-url redis://127.0.0.1:6379/9]
        [--database postgres|sqlite] [--postgres-url postgres://postgres@127.0.0.1:5432]

The judge is the scripted OpenAI-compatible provider of bench/judge_fleet.py answering every request in 1.0 s,
with no limit. The workers are real judge worker processes (`manage.py work judge`, through judge_fleet.py's
count-sql entry, which runs the same command and counts every SQL statement the process sends) on a PostgreSQL
database created for the run (four writer processes: SQLite is offered with --database sqlite), released together
on a rendered submission of --judgements judge units, a new submission per configuration. Printed per
configuration: the wall from release to the last judgement settled, calls per second and the ratio to 1 worker
(the first configuration), each job's time beside the 1 s the judge takes (the rest is the platform's), and the
SQL statements and SQL time per judge unit: the next bottleneck, as the number of workers grows. --judgements 200
is the issue's size (about 6 minutes in all); the default keeps the run near 4.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.judge_fleet import Outcome, add_fleet_arguments, fleet_for  # noqa: E402

LATENCY = 1.0


def report(rows: list[Outcome], database: str) -> None:
    print(f"\nSummary: judge latency {LATENCY:.1f} s, no quota, {database}; the judge's own workers, one judge job per unit")
    print(
        f"{'workers':>8}{'judged':>8}{'failed':>8}{'wall s':>8}{'calls/s':>9}{'vs 1':>7}{'s/job':>7}{'platform':>10}"
        f"{'SQL/unit':>10}{'SQL ms/unit':>12}{'Redis/unit':>11}"
    )
    base = rows[0]
    for outcome in rows:
        rate, per_job = len(outcome.accepted) / outcome.wall, outcome.wall * outcome.workers / outcome.judgements
        statements, seconds = outcome.sql.get("statements", 0), outcome.sql.get("seconds", 0.0)
        print(
            f"{outcome.workers:>8}{outcome.judgements:>8}{outcome.failed:>8}{outcome.wall:>8.1f}{rate:>9.2f}"
            f"{rate / (len(base.accepted) / base.wall):>6.2f}x{per_job:>7.2f}{per_job - LATENCY:>9.2f}s"
            f"{statements / outcome.judgements:>10.1f}{1000 * seconds / outcome.judgements:>12.1f}{outcome.redis_commands / outcome.judgements:>11.1f}"
        )
    last = rows[-1]
    kinds = ", ".join(f"{n / last.judgements:.1f} {kind}" for kind, n in last.sql.get("kinds", {}).most_common())
    print(f"\nSQL statements per judge unit at {last.workers} workers, by kind: {kinds}")
    print(
        "s/job: wall x workers / judgements; platform: what each job took beyond the judge's 1 s (queue, database, images, "
        "request building); SQL: every statement the worker processes sent, per judge unit; Redis: the commands the Redis "
        "server processed from the jobs' release to the last judgement (its total_commands_processed: dequeueing, heartbeats, results; the "
        "pollers of this bench included), per judge unit."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgements", type=int, default=120, help="judge units per configuration (rounded up to whole prompts of 6)")
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1, 2, 4], help="worker processes per configuration; the first is the baseline"
    )
    add_fleet_arguments(parser)
    args = parser.parse_args()
    with fleet_for(args, "workers-scale-") as fleet:
        rows = []
        for workers in args.workers:
            print(f"{workers} judge worker(s)", flush=True)
            provider = {"latency": (LATENCY, LATENCY)}
            rows.append(
                fleet.run_configuration(
                    f"workers {workers}", judgements=args.judgements, workers=workers, env={}, provider=provider, count_sql=True
                )
            )
    report(rows, args.database)


if __name__ == "__main__":
    main()
