"""The board page at 100 / 1,000 / 10,000 published entries: stored rows (BoardRow, read one page per request)
against rebuilding the same rows from every stored figure per request (the board view before rows were stored).

    .venv/bin/python bench/board.py [--sizes 100 1000 10000] [--requests 30] [--database-url postgres://…/atelier_bench]

Generates N published entries on the sample pack with realistic score rows (overall, 3 categories, 2 backends,
6 per-task scores, one prompt per task), runs the board job once (timed), then serves the site with gunicorn and
requests the board page, a submission page and a breakdown download over HTTP; the live rebuild is timed
in-process (no HTTP, which favours it). Prints p50/p95 and the ratio, measured in the same run. Default database:
a throw-away SQLite file; pass an empty PostgreSQL database with --database-url for the deployment figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def generate(count: int, pack, rng) -> None:
    from leaderboard.models import Figure
    from submissions.models import PromptEntry, Submission, Team

    tasks = list(pack.tasks.all())
    team = Team.objects.create(name=f"bench-{count}-{time.time_ns()}", slug=f"bench-{count}-{time.time_ns()}")
    made = Submission.objects.bulk_create(
        Submission(team=team, pack=pack, pack_revision=pack.revision, prompter=f"prompter {i}", status="done", published=True,
                   judge_id="bench-judge", judge_version="1", judge_label="bench judge (generated scores)",
                   backends=[{"name": "smoke-sd", "label": "smoke"}, {"name": "smoke-sd-fast", "label": "smoke"}])
        for i in range(count)
    )  # fmt: skip
    figures, entries = [], []
    for s in made:
        skill = rng.uniform(20, 80)
        by_task = {t.task_id: min(100.0, max(0.0, skill + rng.gauss(0, 10))) for t in tasks}
        by_category = {}
        for t in tasks:
            by_category.setdefault(t.category, []).append(by_task[t.task_id])
            entries.append(PromptEntry(submission=s, task=t, text=" ".join(["word"] * rng.randint(8, 80))))
        common = {"submission": s, "judge_id": "bench-judge", "judge_version": "1"}
        figures += [Figure(scope="task", key=k, value=v, n=1, **common) for k, v in by_task.items()]
        figures += [Figure(scope="category", key=c, value=statistics.fmean(v), n=len(v), ci_low=min(v), ci_high=max(v), **common) for c, v in by_category.items()]
        figures.append(Figure(scope="overall", key="overall", value=statistics.fmean(statistics.fmean(v) for v in by_category.values()), n=len(tasks), **common))
        figures += [Figure(scope="backend", key=b, value=skill + rng.gauss(0, 5), n=len(tasks), **common) for b in ("smoke-sd", "smoke-sd-fast")]
    Figure.objects.bulk_create(figures, batch_size=5000)
    PromptEntry.objects.bulk_create(entries, batch_size=5000)


def live_rows(pack) -> int:
    """The previous board view's work per request: every figure of every published entry, rows built and sorted in Python."""
    from leaderboard.models import Figure
    from submissions.models import Submission

    chosen = Submission.objects.filter(pack=pack, published=True, status="done").select_related("team")
    rows: dict[int, dict] = {s.pk: {"submission": s, "categories": {}, "backends": {}} for s in chosen}
    for f in Figure.objects.filter(submission__in=chosen, judge_id="bench-judge", judge_version="1", scope__in=("overall", "category", "backend")):
        row = rows[f.submission_id]
        if f.scope == "overall":
            row["overall"] = f
        else:
            row["categories" if f.scope == "category" else "backends"][f.key] = f
    ordered = sorted(rows.values(), key=lambda r: r["overall"].value if r.get("overall") else float("-inf"), reverse=True)
    return len(ordered[:50])


def timed_get(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        response.read()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-board-"))
    env = {"DATABASE_URL": args.database_url or f"sqlite:///{workdir / 'db.sqlite3'}", "MEDIA_ROOT": str(workdir / "media"), "DJANGO_SETTINGS_MODULE": "atelier.settings",
           "DEBUG": "false", "SECRET_KEY": "bench-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz", "ALLOWED_HOSTS": "127.0.0.1",
           "SECURE_SSL_REDIRECT": "false", "SESSION_COOKIE_SECURE": "false", "CSRF_COOKIE_SECURE": "false", "SECURE_HSTS_SECONDS": "0",
           "STATIC_ROOT": str(workdir / "static")}  # fmt: skip
    os.environ.update(env)
    os.environ.pop("REDIS_URL", None)
    import random

    import django

    django.setup()
    from django.core.management import call_command

    from evaluation.boards import board_stats_rebuild
    from tasks.loaders import read_own_pack
    from tasks.services import pack_save

    call_command("migrate", verbosity=0)
    call_command("collectstatic", verbosity=0, interactive=False)
    pack, _ = pack_save(data=read_own_pack(ROOT / "tasks" / "packs" / "sample"))
    rng, total, results = random.Random(0), 0, []
    for size in args.sizes:
        print(f"[{size:>6} entries] generating {size - total} more…", flush=True)
        generate(size - total, pack, rng)
        total = size
        start = time.perf_counter()
        board_stats_rebuild(pack_id=pack.pk, revision=pack.revision)
        job = time.perf_counter() - start
        live = []
        for _ in range(max(3, args.requests // 5)):
            start = time.perf_counter()
            live_rows(pack)
            live.append(time.perf_counter() - start)
        server = subprocess.Popen([sys.executable, "-m", "gunicorn", "atelier.wsgi", "-b", "127.0.0.1:8799", "-w", "2", "--log-level", "warning"], cwd=ROOT, env={**os.environ})
        try:
            base = "http://127.0.0.1:8799"
            for _ in range(100):
                try:
                    timed_get(base + "/")
                    break
                except OSError:
                    time.sleep(0.2)
            board = [timed_get(base + "/") for _ in range(args.requests)]
            from submissions.models import Submission

            one = Submission.objects.filter(pack=pack, published=True).order_by("pk").first().pk
            page = [timed_get(f"{base}/submissions/{one}/") for _ in range(max(5, args.requests // 3))]
            download = [timed_get(f"{base}/submissions/{one}/breakdown.csv") for _ in range(max(5, args.requests // 3))]
        finally:
            server.terminate()
            server.wait(timeout=30)
        row = {"entries": size, "job_s": job, "board_p50": percentile(board, 0.5), "board_p95": percentile(board, 0.95), "live_p50": percentile(live, 0.5),
               "submission_p50": percentile(page, 0.5), "download_p50": percentile(download, 0.5)}  # fmt: skip
        results.append(row)
        print(f"[{size:>6} entries] board job {job:.1f} s · board page p50 {row['board_p50'] * 1000:.0f} ms p95 {row['board_p95'] * 1000:.0f} ms · live rebuild p50 "
              f"{row['live_p50'] * 1000:.0f} ms ({row['live_p50'] / row['board_p50']:.1f}x) · submission page p50 {row['submission_p50'] * 1000:.0f} ms · breakdown p50 {row['download_p50'] * 1000:.0f} ms", flush=True)  # fmt: skip
    print("\nSummary (database: " + ("PostgreSQL" if env["DATABASE_URL"].startswith("postgres") else "SQLite") + ", gunicorn 2 workers, this machine)")
    print(f"{'entries':>8} {'board p50':>10} {'board p95':>10} {'live p50':>10} {'ratio':>7} {'job':>8}")
    for r in results:
        print(f"{r['entries']:>8} {r['board_p50'] * 1000:>8.0f}ms {r['board_p95'] * 1000:>8.0f}ms {r['live_p50'] * 1000:>8.0f}ms {r['live_p50'] / r['board_p50']:>6.1f}x {r['job_s']:>7.1f}s")


if __name__ == "__main__":
    main()
