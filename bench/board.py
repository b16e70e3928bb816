"""The board page at 100 / 1,000 / 10,000 published entries: stored rows (BoardRow, one page read per request)
against aggregating the same board live from its judgements per request (what a board without stored rows does).

    .venv/bin/python bench/board.py [--sizes 100 1000 10000] [--requests 30] [--database-url postgres://…/atelier_bench]

Generates N published entries on the sample pack with realistic stored units: per task one prompt (8-80 words, some
written as tag lists), one image per backend (2 backends), and per prompt and per image a rubric (1-5) and a
checklist (0-1) judgement, i.e. 36 judgements per entry; each entry's figures come from the real aggregation of
those units. Then it runs the board job once (timed), serves the site with gunicorn (2 workers, DEBUG off) and
requests the board page (first page and a deep page), a submission page and a breakdown download over HTTP. The live
aggregate is timed in-process (no HTTP, which favours it). One extra submission with many samples per task measures
the breakdown download's memory: the serving worker's peak RSS before and after streaming it. Every figure and the
ratio are measured in the same run. Default database: a throw-away SQLite file; pass an empty PostgreSQL database
with --database-url for the deployment figures.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

JUDGE = {"judge_id": "bench-judge", "judge_version": "1"}
BACKENDS = ("smoke-sd", "smoke-sd-fast")
TAGS = ("masterpiece", "best quality", "soft light", "8k", "bokeh", "film grain", "wide shot", "pastel palette")
CHUNK = 500


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def prompt(rng) -> str:
    if rng.random() < 0.3:
        return ", ".join(rng.sample(TAGS, rng.randint(4, len(TAGS))))
    return " ".join(["word"] * rng.randint(8, 80))


def generate(count: int, pack, rng, samples: int = 1, label: str = "") -> list[int]:
    """`count` published submissions, each with `samples` prompts per task, their renders, judgements and figures."""
    from evaluation.figures import all_figures
    from evaluation.models import Figure, Judgement, PromptEntry, Render, Submission
    from evaluator.judge.skills import get_skill
    from evaluator.metrics.aggregate import Unit
    from teams.models import Team

    tasks = list(pack.tasks.all())
    stamp = time.time_ns()
    team = Team.objects.create(name=f"bench-{count}-{stamp}", slug=f"bench-{count}-{stamp}")
    made: list[int] = []
    for start in range(0, count, CHUNK):
        chunk = Submission.objects.bulk_create(
            Submission(
                team=team,
                pack=pack,
                pack_revision=pack.revision,
                prompter=label or f"prompter {start + i}",
                status="done",
                published=True,
                judge_label="bench judge (generated judgements)",
                backends=[{"name": b, "label": "smoke"} for b in BACKENDS],
                **JUDGE,
            )
            for i in range(min(CHUNK, count - start))
        )
        skill = {s.pk: rng.uniform(0.2, 0.8) for s in chunk}
        entries = PromptEntry.objects.bulk_create(
            [PromptEntry(submission=s, task=t, sample_index=k, text=prompt(rng)) for s in chunk for t in tasks for k in range(samples)],
            batch_size=5000,
        )
        renders = Render.objects.bulk_create(
            [
                Render(entry=e, backend=b, image_index=0, seed=i, config_hash="bench", prompt_sha="bench", status="ok")
                for i, e in enumerate(entries)
                for b in BACKENDS
            ],
            batch_size=5000,
        )
        judgements, units = [], defaultdict(list)
        for entry, render in [(e, None) for e in entries] + [(r.entry, r) for r in renders]:
            quality = min(1.0, max(0.0, skill[entry.submission_id] + rng.gauss(0, 0.15)))
            side = "image" if render else "prompt"
            for name, value, scale in (
                (f"{side}_subjective", 1 + 4 * quality, "likert_1_5"),
                (f"{side}_objective", round(quality * 8) / 8, "rate_0_1"),
            ):
                judgements.append(
                    Judgement(
                        submission_id=entry.submission_id,
                        entry=entry,
                        render=render,
                        skill=name,
                        status="ok",
                        value=value,
                        scale=scale,
                        **JUDGE,
                    )
                )
                declared = get_skill(name)
                units[entry.submission_id].append(
                    Unit(
                        entry.task.task_id,
                        entry.task.category,
                        entry.sample_index,
                        name,
                        "ok",
                        value,
                        render.backend if render else "",
                        render.pk if render else -1,
                        scale,
                        declared.composite,
                        declared.top1_rank,
                    )
                )
        Judgement.objects.bulk_create(judgements, batch_size=5000)
        Figure.objects.bulk_create(
            [
                Figure(
                    submission_id=pk,
                    judge_label="bench judge",
                    scope=f.scope,
                    key=f.key,
                    value=f.value,
                    scale=f.scale,
                    n=f.n,
                    failures=f.failures,
                    ci_low=f.ci_low,
                    ci_high=f.ci_high,
                    **JUDGE,
                )
                for pk, u in units.items()
                for f in all_figures(u)
            ],
            batch_size=5000,
        )
        made += [s.pk for s in chunk]
        print(f"    {len(made)}/{count} entries written", flush=True)
    return made


def live_aggregate(pack) -> int:
    """Per request, without stored rows: read every judgement of every published entry and aggregate each entry's
    figures (the real aggregation, bootstrap intervals included), then sort and cut the first page."""
    from evaluation.figures import _UNIT_FIELDS
    from evaluation.models import Judgement
    from evaluator.judge.skills import get_skill
    from evaluator.metrics.aggregate import Unit, figures
    from evaluator.metrics.scopes import Scope

    units = defaultdict(list)
    rows = Judgement.objects.filter(submission__pack=pack, submission__published=True, submission__status="done", **JUDGE).values_list(
        "submission_id", *_UNIT_FIELDS
    )
    for submission_id, task_id, category, sample, skill, status, value, backend, render, scale in rows.iterator(chunk_size=10000):
        declared = get_skill(skill)
        units[submission_id].append(
            Unit(
                task_id, category, sample, skill, status, value, backend or "", render or -1, scale, declared.composite, declared.top1_rank
            )
        )
    overall = {pk: next((f.value for f in figures(u) if f.scope == Scope.OVERALL), None) for pk, u in units.items()}
    return len(sorted(overall, key=lambda pk: overall[pk] if overall[pk] is not None else float("-inf"), reverse=True)[:50])


def timed_get(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as response:
        while response.read(1 << 16):
            pass
    return time.perf_counter() - start


def peak_rss_mb(pids: list[int]) -> dict[int, float]:
    found = {}
    for pid in pids:
        match = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
        found[pid] = int(match.group(1)) / 1024 if match else 0.0
    return found


def serve(env: dict) -> subprocess.Popen:
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "atelier.wsgi", "-b", "127.0.0.1:8799", "-w", "2", "--log-level", "warning"], cwd=ROOT, env=env
    )
    for _ in range(150):
        try:
            timed_get("http://127.0.0.1:8799/")
            return server
        except OSError:
            time.sleep(0.2)
    server.terminate()
    raise SystemExit("gunicorn did not answer on 127.0.0.1:8799 within 30 s")


def workers(server: subprocess.Popen) -> list[int]:
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children")
    return [int(p) for p in children.read_text().split()] if children.exists() else []


def site_env(workdir: Path, database_url: str = "") -> dict[str, str]:
    """The served site's environment in a bench: DEBUG off over plain HTTP, a throw-away database (SQLite in
    workdir unless database_url names one) and folders."""
    return {
        "DATABASE_URL": database_url or f"sqlite:///{workdir / 'db.sqlite3'}",
        "MEDIA_ROOT": str(workdir / "media"),
        "DJANGO_SETTINGS_MODULE": "atelier.settings",
        "DEBUG": "false",
        "SECRET_KEY": "bench-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
        "ALLOWED_HOSTS": "127.0.0.1",
        "ATELIER_SITE_URL": "http://127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "SECURE_HSTS_SECONDS": "0",
        "STATIC_ROOT": str(workdir / "static"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--live-requests", type=int, default=3, help="live aggregates timed per size (each reads every judgement)")
    parser.add_argument(
        "--large-samples", type=int, default=200, help="samples per task of the submission whose breakdown download is measured"
    )
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-board-"))
    env = site_env(workdir, args.database_url)
    os.environ.update(env)
    os.environ.pop("REDIS_URL", None)
    import random

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from evaluation.boards import board_stats_rebuild
    from tasks.loaders import read_own_pack
    from tasks.services import pack_save

    call_command("migrate", verbosity=0)
    call_command("collectstatic", verbosity=0, interactive=False)
    pack, _ = pack_save(data=read_own_pack(ROOT / "tasks" / "packs" / "sample"))
    rng, results = random.Random(0), []
    print(f"[large] one submission with {args.large_samples} samples per task, for the breakdown download…", flush=True)
    (large,) = generate(1, pack, rng, samples=args.large_samples, label="large submission")
    total = 1
    for size in args.sizes:
        print(f"[{size:>6} entries] generating {size - total} more…", flush=True)
        generate(size - total, pack, rng)
        total = size
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")  # what autovacuum does after a bulk load; plans otherwise assume empty tables
        start = time.perf_counter()
        board_stats_rebuild(pack_id=pack.pk, revision=pack.revision)
        job = time.perf_counter() - start
        print(f"[{size:>6} entries] board job {job:.1f} s; timing the live aggregate ({args.live_requests}×)…", flush=True)
        live = []
        for _ in range(args.live_requests):
            start = time.perf_counter()
            live_aggregate(pack)
            live.append(time.perf_counter() - start)
        server = serve({**os.environ})
        try:
            base = "http://127.0.0.1:8799"
            board = [timed_get(base + "/") for _ in range(args.requests)]
            last = max(1, size // 50)
            deep = [timed_get(f"{base}/?page={last}") for _ in range(max(5, args.requests // 3))]
            page = [timed_get(f"{base}/submissions/{large}/") for _ in range(max(5, args.requests // 3))]
            before = peak_rss_mb(workers(server))
            download = [timed_get(f"{base}/submissions/{large}/breakdown.csv") for _ in range(3)]
            after = peak_rss_mb(workers(server))
        finally:
            server.terminate()
            server.wait(timeout=30)
        grown = max((after[p] - before.get(p, after[p]) for p in after), default=0.0)
        row = {
            "entries": size,
            "job_s": job,
            "board_p50": percentile(board, 0.5),
            "board_p95": percentile(board, 0.95),
            "deep_p50": percentile(deep, 0.5),
            "live_p50": percentile(live, 0.5),
            "submission_p50": percentile(page, 0.5),
            "download_p50": percentile(download, 0.5),
            "rss_peak": max(after.values(), default=0.0),
            "rss_grown": grown,
        }
        results.append(row)
        print(
            f"[{size:>6} entries] board page p50 {row['board_p50'] * 1000:.0f} ms p95 {row['board_p95'] * 1000:.0f} ms (page {last}: {row['deep_p50'] * 1000:.0f} ms) · "
            f"live aggregate p50 {row['live_p50'] * 1000:.0f} ms ({row['live_p50'] / row['board_p50']:.0f}x) · large submission page {row['submission_p50'] * 1000:.0f} ms · "
            f"its breakdown {row['download_p50'] * 1000:.0f} ms, worker peak RSS {row['rss_peak']:.0f} MB (+{row['rss_grown']:.1f} MB while streaming)",
            flush=True,
        )
    database = "PostgreSQL" if env["DATABASE_URL"].startswith("postgres") else "SQLite"
    print(
        f"\nSummary ({database}, gunicorn 2 workers, DEBUG off, this machine; large submission: {args.large_samples} samples x 6 tasks x 2 backends)"
    )
    print(
        f"{'entries':>8} {'board p50':>10} {'board p95':>10} {'deep p50':>9} {'live p50':>10} {'ratio':>7} {'job':>7} {'breakdown':>10} {'RSS +':>7}"
    )
    for r in results:
        print(
            f"{r['entries']:>8} {r['board_p50'] * 1000:>8.0f}ms {r['board_p95'] * 1000:>8.0f}ms {r['deep_p50'] * 1000:>7.0f}ms {r['live_p50'] * 1000:>8.0f}ms "
            f"{r['live_p50'] / r['board_p50']:>6.0f}x {r['job_s']:>6.1f}s {r['download_p50'] * 1000:>8.0f}ms {r['rss_grown']:>5.1f}MB"
        )


if __name__ == "__main__":
    main()
