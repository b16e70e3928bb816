"""Prompting throughput: one endpoint run's calls with 1 call in flight, then 8, against a local server that
answers every call after 200 ms. Prints calls per second, the ratio (target: >= 6x), and the orchestration
overhead per call (time not spent waiting on the server: claiming, building messages, writing results).

    .venv/bin/python bench/prompting.py [--samples 8] [--concurrency 1 8]

Uses a throw-away SQLite database, the sample pack (5 tasks with a target or no need of one x 8 samples = 40 calls per run) and the real
prompt path (evaluation.prompting.call_window: the openai client through the SSRF guard); rendering and
judging are not part of it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SERVER_DELAY = 0.2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=8, help="samples per task (calls per task); default 8")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    args = parser.parse_args()
    from tests.openai_server import Reply, ScriptedOpenAIServer, prompter_responder

    workdir = Path(tempfile.mkdtemp(prefix="bench-prompting-"))
    os.environ.update(
        DATABASE_URL=f"sqlite:///{workdir / 'db.sqlite3'}",
        MEDIA_ROOT=str(workdir / "media"),
        DJANGO_SETTINGS_MODULE="atelier.settings",
        ATELIER_PROMPTER_ALLOWED_HOSTS="127.0.0.1",
        ATELIER_MAX_SAMPLES=str(max(8, args.samples)),
    )
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()

    def slow(request_json):
        return Reply(content=prompter_responder(request_json).content, delay=SERVER_DELAY)

    with ScriptedOpenAIServer(default=slow) as server:
        results = [measure(server, n, args.samples) for n in args.concurrency]
    base = results[0]
    print(f"\nPrompting throughput (server answers after {SERVER_DELAY * 1000:.0f} ms; {base['calls']} calls per run; SQLite, in-process)")
    print(f"{'in flight':>9} {'wall s':>8} {'calls/s':>8} {'vs 1':>6} {'overhead ms/call':>17} {'max seen':>9}")
    for r in results:
        print(
            f"{r['limit']:>9} {r['wall']:>8.2f} {r['rate']:>8.1f} {r['rate'] / base['rate']:>5.2f}x {r['overhead_ms']:>17.1f} {r['seen']:>9}"
        )
    best = results[-1]
    verdict = "meets" if best["rate"] / base["rate"] >= 6 else "MISSES"
    print(f"\nRatio {best['limit']} vs {base['limit']} in flight: {best['rate'] / base['rate']:.2f}x ({verdict} the >= 6x target).")
    print("Overhead per call = (wall - the least time the server's delays allow) / calls, in the run's one orchestrating thread.")


def measure(server, limit: int, samples: int) -> dict:
    from django.core.management import call_command
    from django.db import transaction

    from evaluation.models import CallStatus, Origin, PromptCall, Submission
    from evaluation.prompting import call_window
    from submissions.services import team_create
    from tasks.loaders import read_own_pack
    from tasks.selectors import prompter_tasks
    from tasks.services import pack_save
    from teams.models import Endpoint

    call_command("migrate", verbosity=0)
    pack, _ = pack_save(data=read_own_pack(ROOT / "tasks" / "packs" / "sample"))
    user = __import__("django.contrib.auth", fromlist=["get_user_model"]).get_user_model().objects.create_user(f"bench-{limit}")
    team = team_create(user=user, name=f"bench {limit}")
    endpoint = Endpoint.objects.create(team=team, name="bench", base_url=server.base_url, model="bench", max_in_flight=limit)
    submission = Submission.objects.create(
        team=team,
        pack=pack,
        prompter="bench",
        origin=Origin.ENDPOINT,
        endpoint=endpoint,
        condition="plain",
        samples=samples,
        status="prompting",
        prompting={"budget": {"calls": 10**6, "tokens": 10**9}},
    )
    with transaction.atomic():
        tasks = list(prompter_tasks(pack.tasks.all()))  # as prompting_start plans them
        PromptCall.objects.bulk_create(PromptCall(submission=submission, task=t, sample_index=k) for t in tasks for k in range(samples))
    first = PromptCall.objects.filter(submission=submission).order_by("pk").first()
    server.max_in_flight_seen = 0
    started = time.perf_counter()
    call_window(submission, first.pk)
    wall = time.perf_counter() - started
    calls = PromptCall.objects.filter(submission=submission)
    assert not calls.exclude(status=CallStatus.OK).exists(), list(calls.exclude(status=CallStatus.OK).values_list("status", "error")[:3])
    n = calls.count()
    ideal = -(-n // limit) * SERVER_DELAY
    print(f"  {limit} in flight: {n} calls in {wall:.2f} s", flush=True)
    return {
        "limit": limit,
        "calls": n,
        "wall": wall,
        "rate": n / wall,
        "overhead_ms": (wall - ideal) / n * 1000,
        "seen": server.max_in_flight_seen,
    }


if __name__ == "__main__":
    main()
