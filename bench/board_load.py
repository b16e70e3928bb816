"""The board page under a crowd: 50 concurrent clients for 30 s against gunicorn with 4 workers, board at 1,000 entries,
with the anonymous page cache off (today's page, rendered per request) and on, in the same run (issue 22).

    .venv/bin/python bench/board_load.py [--target page|api] [--entries 1000] [--users 50] [--seconds 30] [--workers 4]
                                         [--cache-url redis://127.0.0.1:6379/N] [--database-url postgres://…/atelier_bench]

Builds the board as bench/board.py does (published entries with realistic stored judgements and figures, then the
board job), serves it with gunicorn (DEBUG off) and runs locust headless, as a library in a child process (gevent
patches everything it imports), against 127.0.0.1 only: every simulated visitor asks for the front page and now and
then a sorted view or page 2 (--target api: GET /api/v1/boards?pack=sample, pages 1 and 2 of 500 rows, gzipped as
locust accepts it), back to back (no think time). Scenarios, each on a fresh gunicorn (deploy/gunicorn.conf.py):

  before   ATELIER_BOARD_CACHE_SECONDS=0: no cache, no ETag (the page as it was)
  after    the cache on (ATELIER_BOARD_CACHE_SECONDS=300, ATELIER_BOARD_MAX_AGE=30)
  repeat   the cache on, and every visitor revalidates what it has seen with If-None-Match, as a reloading browser
           does: the share answered 304

Reports requests/s, p50/p99 (locust's, ms), errors and the ratio to `before`. Locust shares the machine's cores
with gunicorn, so on a small machine the figure is bounded by the CPU both need; the summary says how many cores
there were. The cache is each worker's memory unless --cache-url names a Redis (use a database of your own).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PORT = 8798
WARMUP_S = 3.0
SCENARIOS = ("before", "after", "repeat")


PATHS = {  # what a visitor asks for, with weights: the board page (front page, a sorted view, page 2) or the API's board
    "page": {"/": 8, "/?sort=OE&dir=desc": 1, "/?page=2": 1},
    "api": {"/api/v1/boards?pack=sample": 1, "/api/v1/boards?pack=sample&page=2": 1},  # a client reading 1,000 rows
}


def swarm(host: str, users: int, seconds: float, revalidate: bool, paths: dict[str, int]) -> dict:
    """Run locust headless against `host` (127.0.0.1 only) and return its figures. Runs in a child process."""
    from gevent import monkey

    monkey.patch_all()
    import random

    import gevent
    from locust import FastHttpUser, constant, task
    from locust.env import Environment

    assert host.startswith("http://127.0.0.1:"), host
    statuses: dict[int, int] = {}

    class Visitor(FastHttpUser):
        wait_time = constant(0)

        def on_start(self) -> None:
            self.seen: dict[str, str] = {}  # path -> the ETag last answered, which a reloading browser sends back

        def visit(self, path: str) -> None:
            headers = {"If-None-Match": self.seen[path]} if revalidate and path in self.seen else {}
            with self.client.get(path, headers=headers, name=path, catch_response=True) as response:
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                if response.status_code not in (200, 304):
                    response.failure(f"HTTP {response.status_code}")
                elif response.headers.get("ETag"):
                    self.seen[path] = response.headers["ETag"]

        @task
        def one(self) -> None:
            self.visit(random.choices(list(paths), weights=list(paths.values()))[0])

    Visitor.host = host
    env = Environment(user_classes=[Visitor])
    runner = env.create_local_runner()
    runner.start(users, spawn_rate=users)
    gevent.sleep(WARMUP_S)  # every visitor started and every worker's cache primed before counting
    env.stats.reset_all()
    statuses.clear()
    started = time.monotonic()
    gevent.sleep(seconds)
    elapsed = time.monotonic() - started
    total = env.stats.total
    figures = {
        "requests": total.num_requests,
        "errors": total.num_failures,
        "rps": total.num_requests / elapsed,
        "p50": total.get_response_time_percentile(0.5),
        "p99": total.get_response_time_percentile(0.99),
        "statuses": statuses,
        "errors_by_kind": {str(k): v.occurrences for k, v in env.stats.errors.items()},
    }
    runner.quit()
    return figures


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes have used so far (/proc/<pid>/stat)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / ticks


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, every process's, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / os.sysconf("SC_CLK_TCK"), sum(values) / os.sysconf("SC_CLK_TCK")


def workers_of(server: subprocess.Popen) -> list[int]:
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children")
    return [int(p) for p in children.read_text().split()]


def serve(env: dict, workers: int) -> subprocess.Popen:
    command = [sys.executable, "-m", "gunicorn", "atelier.wsgi", "-c", "deploy/gunicorn.conf.py", "--log-level", "warning"]
    command += ["-b", f"127.0.0.1:{PORT}", "-w", str(workers)]
    server = subprocess.Popen(command, cwd=ROOT, env=env)
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/", timeout=60) as response:
                response.read()
            return server
        except OSError:
            time.sleep(0.2)
    server.terminate()
    raise SystemExit(f"gunicorn did not answer on 127.0.0.1:{PORT} within 60 s")


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def scenario(name: str, env: dict, args: argparse.Namespace) -> dict:
    cache = {"before": "0"}.get(name, "300")
    server = serve({**env, "ATELIER_BOARD_CACHE_SECONDS": cache, "ATELIER_BOARD_MAX_AGE": "30"}, args.workers)
    try:
        paths = PATHS[args.target]
        sample = urllib.request.urlopen(f"http://127.0.0.1:{PORT}{next(iter(paths))}", timeout=60)
        size, etag = len(sample.read()), sample.headers.get("ETag")
        print(
            f"[{name}] {args.target} {size / 1024:.0f} KiB, ETag {etag or 'none'}; {args.users} visitors for {args.seconds:.0f} s…",
            flush=True,
        )
        swarmed = [f"http://127.0.0.1:{PORT}", args.users, args.seconds, name == "repeat", paths]
        call = [sys.executable, __file__, "--swarm", json.dumps(swarmed)]
        pids = [server.pid, *workers_of(server)]
        served, machine, locust = cpu_seconds(pids), machine_busy(), resource.getrusage(resource.RUSAGE_CHILDREN)
        child = subprocess.run(call, cwd=ROOT, capture_output=True, text=True, timeout=args.seconds + 120)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        served, machine = cpu_seconds(pids) - served, [b - a for a, b in zip(machine, machine_busy(), strict=True)]
    finally:
        stop(server)
    # Over the whole locust run (warm-up included): the CPU gunicorn and locust used, and what everything else on the machine did.
    locust = after.ru_utime + after.ru_stime - locust.ru_utime - locust.ru_stime
    cpu = {"gunicorn": served, "locust": locust, "others": max(0.0, machine[0] - served - locust), "available": machine[1]}
    if child.returncode != 0:
        raise SystemExit(f"locust run failed ({child.returncode}):\n{child.stderr[-4000:]}")
    figures = json.loads(child.stdout.strip().splitlines()[-1])
    answered = sum(figures["statuses"].values()) or 1
    figures["share_304"] = figures["statuses"].get("304", 0) / answered
    figures["cpu"] = cpu
    print(
        f"[{name}] {figures['rps']:.0f} requests/s · p50 {figures['p50']:.0f} ms · p99 {figures['p99']:.0f} ms · "
        f"{figures['errors']} errors {figures['errors_by_kind'] or ''}· 304s {100 * figures['share_304']:.0f} % · CPU s of "
        f"{cpu['available']:.0f} available: gunicorn {cpu['gunicorn']:.0f}, locust {cpu['locust']:.0f}, other processes {cpu['others']:.0f}",
        flush=True,
    )
    return figures


def build_board(entries: int) -> None:
    import random

    import django

    django.setup()
    from django.core.management import call_command

    from bench.board import generate
    from evaluation.boards import board_stats_rebuild
    from tasks.loaders import read_own_pack
    from tasks.services import pack_save

    call_command("migrate", verbosity=0)
    call_command("collectstatic", verbosity=0, interactive=False)
    pack, _ = pack_save(data=read_own_pack(ROOT / "tasks" / "packs" / "sample"))
    print(f"[board] generating {entries} published entries…", flush=True)
    generate(entries, pack, random.Random(0))
    start = time.perf_counter()
    board_stats_rebuild(pack_id=pack.pk, revision=pack.revision)
    print(f"[board] board job {time.perf_counter() - start:.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--users", type=int, default=50, help="concurrent simulated visitors (at most 200)")
    parser.add_argument("--seconds", type=float, default=30.0, help="measured seconds per scenario (at most 300)")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument("--target", choices=PATHS, default="page", help="the board page, or the API's /api/v1/boards")
    parser.add_argument("--cache-url", default="", help="ATELIER_CACHE_URL for the served site (default: each worker's memory)")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--swarm", help=argparse.SUPPRESS)  # the child process: locust's run, as JSON arguments
    args = parser.parse_args()
    if args.swarm:
        print(json.dumps(swarm(*json.loads(args.swarm))))
        return
    if not (1 <= args.users <= 200 and 1 <= args.seconds <= 300 and args.entries >= 1):
        parser.error("--users must be 1-200, --seconds 1-300 and --entries at least 1")
    workdir = Path(tempfile.mkdtemp(prefix="bench-board-load-"))
    from bench.board import site_env

    env = site_env(workdir, args.database_url) | {"ATELIER_CACHE_URL": args.cache_url or "locmem://"}
    os.environ.update(env)
    os.environ.pop("REDIS_URL", None)
    build_board(args.entries)
    load = os.getloadavg()[0]  # the machine's 1-minute load average before the runs: other work shares the cores
    results = {name: scenario(name, {**os.environ}, args) for name in args.scenarios}
    base = results.get("before")
    database = "PostgreSQL" if env["DATABASE_URL"].startswith("postgres") else "SQLite"
    cache = "Redis" if args.cache_url else "each worker's memory"
    print(
        f"\nSummary: {args.target} of a board of {args.entries} entries, gunicorn {args.workers} workers (DEBUG off, {database}), cache in {cache}; "
        f"locust {args.users} visitors x {args.seconds:.0f} s, no think time, on the same {os.cpu_count()} cores "
        f"(1-minute load average {load:.1f} before the runs, {os.getloadavg()[0]:.1f} after)"
    )
    print(
        f"{'scenario':>9} {'req/s':>8} {'p50':>8} {'p99':>8} {'errors':>7} {'304s':>6} {'vs before':>10}"
        f"   CPU s: {'gunicorn':>8} {'locust':>7} {'others':>7} {'of':>5}"
    )
    for name, r in results.items():
        ratio = f"{r['rps'] / base['rps']:.1f}x" if base and base["rps"] else "—"
        print(
            f"{name:>9} {r['rps']:>8.0f} {r['p50']:>6.0f}ms {r['p99']:>6.0f}ms {r['errors']:>7} {100 * r['share_304']:>5.0f}% {ratio:>10}"
            f"          {r['cpu']['gunicorn']:>8.0f} {r['cpu']['locust']:>7.0f} {r['cpu']['others']:>7.0f} {r['cpu']['available']:>5.0f}"
        )


if __name__ == "__main__":
    main()
