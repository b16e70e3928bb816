"""Per-job overhead of rq's forking Worker against SimpleWorker (what `manage.py work` runs) on judge-like jobs.

    .venv/bin/python bench/workers.py [--jobs 8] [--redis-url redis://127.0.0.1:6379/9]

Each job judges one prompt and one image with the offline judge (`evaluation.runtime.judge()`: MiniLM and a
random-weight CLIP, "smoke (random weights)"), as a judge job does. The forking worker runs every job in a fresh
child process, so the models the child loads die with it; SimpleWorker runs jobs in its own process and loads them
once. Both work the same jobs in burst mode against a real Redis; the queue is emptied before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atelier.settings")

TASK = (
    "bench-1",
    "CO",
    "Poster",
    "A poster of a fox in the snow for a winter festival.",
    {"text": "'WINTER FAIR'"},
    ("the prompt names a fox", "the prompt quotes 'WINTER FAIR'"),
    ("a fox is visible", "the words 'WINTER FAIR' are legible"),
)


def judge_once(k: int) -> float:
    """One prompt-side and one image-side checklist judgement of the k-th entry (each job judges a different prompt
    and image, as judge jobs do; the task's checklist is the same); returns the seconds this job spent."""
    import django

    django.setup()
    from PIL import Image

    from evaluation import runtime
    from evaluator.judge.types import TaskInput

    start = time.perf_counter()
    judge, task = runtime.judge(), TaskInput(*TASK)
    judge.run("prompt_objective", task, f"a red fox number {k} in deep snow under a banner reading 'WINTER FAIR'")
    judge.run("image_objective", task, f"a red fox number {k}", Image.new("RGB", (64, 64), (200, (37 * k) % 256, 40)))
    return time.perf_counter() - start


def run(worker_class, jobs: int, connection) -> tuple[float, list[float]]:
    from rq import Queue

    queue = Queue("bench-workers", connection=connection)
    queue.empty()
    enqueued = [queue.enqueue("bench.workers.judge_once", k) for k in range(jobs)]  # by path: __main__ cannot be imported by a worker
    start = time.perf_counter()
    worker_class([queue], connection=connection).work(burst=True)
    wall = time.perf_counter() - start
    results = [job.latest_result() for job in enqueued]
    failed = [r for r in results if r is None or not r.type == r.Type.SUCCESSFUL]
    if failed:
        raise SystemExit(
            f"{len(failed)} of {jobs} jobs failed under {worker_class.__name__}: {failed[0].exc_string if failed[0] else 'no result'}"
        )
    queue.empty()
    return wall, [r.return_value for r in results]


def measure(worker_class, jobs: int, connection) -> tuple[str, float, list[float]]:
    print(f"{worker_class.__name__}: {jobs} judge jobs…", flush=True)
    wall, inside = run(worker_class, jobs, connection)
    rest = sorted(inside[1:]) or inside
    print(
        f"  {wall:.1f} s wall, {wall / jobs:.2f} s per job (inside the job: first {inside[0]:.2f} s, median of the rest {rest[len(rest) // 2]:.3f} s)",
        flush=True,
    )
    return worker_class.__name__, wall, inside


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument(
        "--redis-url",
        default="redis://127.0.0.1:6379/9",
        help="an empty Redis database: the bench refuses one holding keys and empties it after",
    )
    args = parser.parse_args()
    import logging

    import redis
    from rq import SimpleWorker, Worker

    logging.getLogger("rq.worker").setLevel(logging.WARNING)
    import django

    django.setup()  # as `manage.py` does before any worker starts: the code is imported, no model is loaded yet
    import evaluation.runtime  # noqa: F401

    connection = redis.Redis.from_url(args.redis_url)
    if connection.dbsize():
        raise SystemExit(f"{args.redis_url} holds {connection.dbsize()} key(s): give the bench an empty Redis database (--redis-url)")
    try:
        rows = [measure(worker_class, args.jobs, connection) for worker_class in (Worker, SimpleWorker)]
    finally:
        connection.flushdb()  # the queue, results and worker registrations it wrote
    (fork, fork_wall, _), (simple, simple_wall, _) = rows
    print(f"\nSummary ({args.jobs} jobs, offline judge, smoke (random weights) CLIP, this machine)")
    print(f"{'worker':>14} {'wall':>8} {'per job':>9}")
    for name, wall, _ in rows:
        print(f"{name:>14} {wall:>7.1f}s {wall / args.jobs:>8.2f}s")
    print(f"{fork} / {simple} per-job time: {fork_wall / simple_wall:.1f}x  (manage.py work runs {simple}: models load once per process)")


if __name__ == "__main__":
    main()
