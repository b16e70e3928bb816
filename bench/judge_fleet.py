"""What bench/judge_limits.py and bench/workers_scale.py share: a scripted judge provider with latency and limits,
a throw-away database, submissions whose judge jobs wait on the `judge` queue, and N real judge worker processes
(`manage.py work judge`, the command a deployment runs) let loose on them at the same moment.

Not a bench by itself. Run as a script it is a judge worker that counts its SQL statements (workers_scale.py):

    python bench/judge_fleet.py count-sql OUT.json judge      # = manage.py work judge, writing its SQL count to OUT.json

How one configuration runs (`Fleet.run_configuration`): a submission of `judgements` judge units (OE and CO tasks
of the original pack, one prompt each, on the two 64 px smoke backends of tests/backends-test.json: 2 prompt-side
and 2 x 2 image-side judgements per prompt) is uploaded with REDIS_URL set; the bench process renders it with an
rq SimpleWorker on the default and render queues, which leaves every judge job on the `judge` queue. Those job ids
are taken off the queue, N worker processes are started and, once all N are registered with rq, the ids are pushed
back in one command: the clock starts there and stops when no judgement of the submission is pending. The prompts
carry the configuration's name, so no judgement is a cache hit of another configuration's.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WINDOW = 60.0  # the provider's window, seconds
IMAGE_TOKENS = 255  # what the scripted provider counts per image (OpenAI's count for one 512 px tile, high detail)
JUDGEMENTS_PER_PROMPT = 6  # ateliereval route, OE/CO: 2 prompt-side + 2 image-side x 2 backends (one image each)


def provider_prompt_tokens(request: dict[str, Any]) -> int:
    """The scripted provider's count of a request's prompt, as OpenAI counts one: the text with the real tokenizer
    (evaluator/judge/tokens.py, o200k_base), 3 tokens per message and 3 that prime the reply, IMAGE_TOKENS per image."""
    from evaluator.judge import tokens

    return tokens.chat_tokens(request.get("messages", []), image_tokens=IMAGE_TOKENS)


class Provider:
    """An OpenAI-compatible judge provider: answers as the scripted judge (tests/openai_server.py) after a latency
    drawn from `latency`, and with rpm/tpm set enforces them like a hosted API: a request that does not fit the last
    60 s (by arrival; tokens = its prompt + the completion it is answered with) is refused at once with 429 and a
    Retry-After of the whole seconds until it would fit. Refused requests cost nothing."""

    def __init__(self) -> None:
        from tests.openai_server import ScriptedOpenAIServer

        self.server = ScriptedOpenAIServer(default=self)
        self.lock = threading.Lock()
        self.configure()

    def configure(self, *, latency: tuple[float, float] = (1.0, 1.0), rpm: int | None = None, tpm: int | None = None) -> None:
        with self.lock:
            self.latency, self.rpm, self.tpm = latency, rpm, tpm
            self.accepted: list[tuple[float, int]] = []  # (arrival, tokens)
            self.accepted_requests: list[dict[str, Any]] = []
            self.refused: list[float] = []
            self.random = random.Random(0)

    def __call__(self, request: dict[str, Any]) -> Any:
        from evaluator.judge import tokens
        from tests.openai_server import Reply, judge_responder

        reply = judge_responder(request)
        prompt, completion = provider_prompt_tokens(request), tokens.count(reply.content or "")
        now = time.time()
        with self.lock:
            wait = self._wait(now, prompt + completion)
            if wait > 0:
                self.refused.append(now)
                return Reply(status=429, headers={"Retry-After": str(max(1, math.ceil(wait)))}, content="rate limit reached")
            self.accepted.append((now, prompt + completion))
            self.accepted_requests.append(request)
            reply.delay = self.random.uniform(*self.latency)
        reply.usage = {"prompt_tokens": prompt, "completion_tokens": completion}
        return reply

    def _wait(self, now: float, tokens: int) -> float:
        """Seconds until a request of `tokens` fits both limits (0: it fits now)."""
        recent = [(t, k) for t, k in self.accepted if t > now - WINDOW]
        wait = 0.0
        if self.rpm is not None and len(recent) >= self.rpm:
            wait = recent[len(recent) - self.rpm][0] + WINDOW - now
        if self.tpm is not None:
            over = sum(k for _, k in recent) + tokens - self.tpm
            for t, k in recent:  # oldest first: the arrival whose leaving makes room
                if over <= 0:
                    break
                over -= k
                wait = max(wait, t + WINDOW - now)
        return wait


@dataclass
class Outcome:
    """One configuration's run, as the provider and the database saw it."""

    name: str
    submission_id: int
    workers: int
    judgements: int
    wall: float  # seconds from the release of the jobs to the last judgement written
    statuses: dict[str, int]
    accepted: list[tuple[float, int]]
    refused: list[float]
    started: float  # epoch seconds of the release
    sql: dict[str, Any] = field(default_factory=dict)  # statements, seconds and kinds, all workers (count-sql only)
    redis_commands: int = 0  # commands the Redis server processed from the release to the last judgement settled

    @property
    def calls(self) -> int:
        return len(self.accepted) + len(self.refused)

    @property
    def failed(self) -> int:
        return self.statuses.get("failed", 0)


@contextlib.contextmanager
def bench_database(kind: str, postgres_url: str, workdir: Path) -> Iterator[str]:
    """A database URL for the run: a PostgreSQL database created for it and dropped after, or a SQLite file."""
    if kind == "sqlite":
        yield f"sqlite:///{workdir / 'db.sqlite3'}"
        return
    import psycopg

    name = f"atelier_bench_{os.getpid()}"
    server = postgres_url.rstrip("/")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server}/{name}"
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Fleet:
    """The platform around the provider: Django in this process (uploads, rendering, reading results), Redis, and
    the judge worker processes of each configuration."""

    def __init__(self, *, database_url: str, redis_url: str, workdir: Path, provider: Provider) -> None:
        self.workdir, self.provider, self.redis_url = workdir, provider, redis_url
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "MEDIA_ROOT": str(workdir / "media"),
            "ATELIER_BACKENDS_FILE": str(ROOT / "tests" / "backends-test.json"),
            "OPENAI_BASE_URL": provider.server.base_url,
            "OPENAI_API_KEY": "bench-key",
            "ATELIER_JUDGE_MODEL": "scripted-judge",
            "ATELIER_CLIP_PRETRAINED": "random",
            "ATELIER_DAILY_SUBMISSIONS": "0",
            "DJANGO_SETTINGS_MODULE": "atelier.settings",
            "PYTHONWARNINGS": "ignore",
        }
        for name in ("ATELIER_JUDGE_RPM", "ATELIER_JUDGE_TPM", "ATELIER_JUDGE_IMAGE_TOKENS", "ATELIER_JUDGE_REPLY_TOKENS"):
            self.env.pop(name, None)  # this process judges nothing; each configuration sets its workers' own
        os.environ.update(self.env)
        import django
        import redis

        django.setup()
        self.connection = redis.Redis.from_url(redis_url)
        if self.connection.dbsize():
            raise SystemExit(f"{redis_url} holds {self.connection.dbsize()} key(s): give the bench an empty Redis database (--redis-url)")

    def prepare(self) -> None:
        """Tables, the original pack, a team (once per run)."""
        import logging

        from django.contrib.auth import get_user_model
        from django.core.management import call_command

        from submissions.services import team_create
        from tasks.loaders import read_own_pack
        from tasks.services import pack_save

        for name in ("rq.worker", "evaluation", "evaluator"):
            logging.getLogger(name).setLevel(logging.ERROR)
        call_command("migrate", verbosity=0)
        self.pack, _ = pack_save(data=read_own_pack(ROOT / "tasks" / "packs" / "atelier-original"))
        self.team = team_create(user=get_user_model().objects.create_user("bench"), name="bench")

    def run_configuration(
        self, name: str, *, judgements: int, workers: int, env: dict[str, str], provider: dict[str, Any], count_sql: bool = False
    ) -> Outcome:
        """Render a submission, then judge it with `workers` processes run with `env` against the provider set with
        `provider` (latency, rpm, tpm)."""
        submission_id, job_ids = self._rendered_submission(name, judgements)
        self.provider.configure(**provider)
        logs = self.workdir / name.replace(" ", "-")
        logs.mkdir(parents=True, exist_ok=True)
        processes = [self._start_worker(env, logs, k, count_sql) for k in range(workers)]
        try:
            self._wait_registered(workers, processes, logs)
            queue_key = self._judge_queue().key
            commands = self.connection.info("stats")["total_commands_processed"]
            started_wall = time.time()
            self.connection.rpush(queue_key, *job_ids)  # one command: every worker sees work at the same moment
            self._wait_settled(submission_id, len(job_ids), processes, logs)
            commands = self.connection.info("stats")["total_commands_processed"] - commands
            wall = self._last_settled(submission_id) - started_wall  # the workers' own clock, not this loop's polling
        finally:
            self._stop(processes)
        with self.provider.lock:
            accepted, refused = list(self.provider.accepted), list(self.provider.refused)
        outcome = Outcome(name, submission_id, workers, len(job_ids), wall, self._statuses(submission_id), accepted, refused, started_wall)
        outcome.redis_commands = commands
        if count_sql:
            counts = [json.loads((logs / f"sql-{k}.json").read_text()) for k in range(workers)]
            kinds = sum((Counter(c["kinds"]) for c in counts), Counter())
            outcome.sql = {"statements": sum(c["statements"] for c in counts), "seconds": sum(c["seconds"] for c in counts), "kinds": kinds}
        self._finish()
        return outcome

    # --- the steps -----------------------------------------------------------------------------------------------

    def _judge_queue(self) -> Any:
        import django_rq

        return django_rq.get_queue("judge")

    def _rendered_submission(self, name: str, judgements: int) -> tuple[int, list[str]]:
        """Upload and render a submission of at least `judgements` judge units; take its judge jobs off the queue."""
        import django_rq
        from django.conf import settings
        from rq import SimpleWorker

        from evaluation.models import Judgement
        from submissions.services import submission_create

        tasks = self._tasks(math.ceil(judgements / JUDGEMENTS_PER_PROMPT))
        lines = [json.dumps({"task_id": t.task_id, "prompt": f"{name}, prompt {n}: {t.brief}"[:3000]}) for n, t in enumerate(tasks)]
        started = time.perf_counter()
        submission = submission_create(
            team=self.team, pack=self.pack, prompter=name, filename=f"{name}.jsonl", data="\n".join(lines).encode()
        )
        queues = [django_rq.get_queue(q) for q in settings.ATELIER_QUEUES if q in ("default", *settings.ATELIER_RENDER_QUEUES)]
        SimpleWorker(queues, connection=self.connection).work(burst=True)
        queue = self._judge_queue()
        queued = queue.get_job_ids()
        job_ids = [i for i in queued if i.startswith("judge_job-")]  # the units; other jobs of the queue run here, untimed
        self.connection.delete(queue.key)
        if others := [i for i in queued if i not in set(job_ids)]:
            self.connection.rpush(queue.key, *others)
            SimpleWorker([queue], connection=self.connection).work(burst=True)
        pending = Judgement.objects.filter(submission_id=submission.pk, status="pending").count()
        if pending != len(job_ids):
            raise SystemExit(f"{name}: {pending} pending judgements but {len(job_ids)} judge jobs queued")
        print(
            f"  {name}: {len(tasks)} prompts rendered, {len(job_ids)} judge jobs waiting ({time.perf_counter() - started:.1f} s)",
            flush=True,
        )
        return submission.pk, job_ids

    def _tasks(self, count: int) -> list[Any]:
        """The first `count` OE and CO tasks of the pack, alternating."""
        oe = list(self.pack.tasks.filter(category="OE").order_by("task_id"))
        co = list(self.pack.tasks.filter(category="CO").order_by("task_id"))
        mixed = [t for pair in zip(oe, co) for t in pair]
        if count > len(mixed):
            raise SystemExit(f"the pack has {len(mixed)} OE/CO tasks; asked for {count} prompts")
        return mixed[:count]

    def _start_worker(self, env: dict[str, str], logs: Path, k: int, count_sql: bool) -> subprocess.Popen:
        command = [sys.executable, str(ROOT / "manage.py"), "work", "judge"]
        if count_sql:
            command = [sys.executable, str(Path(__file__).resolve()), "count-sql", str(logs / f"sql-{k}.json"), "judge"]
        log = (logs / f"worker-{k}.log").open("w")
        return subprocess.Popen(command, cwd=ROOT, env={**self.env, **env}, stdout=log, stderr=subprocess.STDOUT)

    def _wait_registered(self, workers: int, processes: list[subprocess.Popen], logs: Path) -> None:
        from rq import Worker

        deadline = time.monotonic() + 180
        while len(Worker.all(connection=self.connection, queue=self._judge_queue())) < workers:
            self._check_alive(processes, logs)
            if time.monotonic() > deadline:
                raise SystemExit(f"{workers} judge workers did not register within 180 s (logs in {logs})")
            time.sleep(0.2)

    def _wait_settled(self, submission_id: int, total: int, processes: list[subprocess.Popen], logs: Path) -> None:
        """Until no judgement of the submission is pending, with a progress line at every tenth."""
        from evaluation.models import Judgement

        began, shown = time.perf_counter(), 0
        while True:
            pending = Judgement.objects.filter(submission_id=submission_id, status="pending").count()
            done = total - pending
            if done >= shown + max(1, total // 10) or pending == 0:
                shown = done
                with self.provider.lock:
                    calls, refused = len(self.provider.accepted) + len(self.provider.refused), len(self.provider.refused)
                wall = time.perf_counter() - began
                print(f"    {done:4d}/{total} judged, {wall:6.1f} s, {calls} calls, {refused} answered 429", flush=True)
            if pending == 0:
                return
            self._check_alive(processes, logs)
            time.sleep(0.5)

    @staticmethod
    def _check_alive(processes: list[subprocess.Popen], logs: Path) -> None:
        for k, process in enumerate(processes):
            if process.poll() is not None:
                tail = (logs / f"worker-{k}.log").read_text(errors="replace")[-2000:]
                raise SystemExit(f"judge worker {k} exited with {process.returncode}:\n{tail}")

    @staticmethod
    def _stop(processes: list[subprocess.Popen]) -> None:
        """SIGTERM (rq's warm shutdown: a busy worker finishes its job), then SIGKILL after 30 s."""
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    @staticmethod
    def _last_settled(submission_id: int) -> float:
        """When the last judgement of the submission was written (epoch seconds)."""
        from django.db.models import Max

        from evaluation.models import Judgement

        return Judgement.objects.filter(submission_id=submission_id).aggregate(last=Max("updated"))["last"].timestamp()

    def _statuses(self, submission_id: int) -> dict[str, int]:
        from django.db.models import Count

        from evaluation.models import Judgement

        rows = Judgement.objects.filter(submission_id=submission_id).values("status").annotate(n=Count("pk"))
        return {row["status"]: row["n"] for row in rows}

    def _finish(self) -> None:
        """Run the finish job (figures) this submission enqueued, then empty the bench's Redis database for the next
        configuration: rq's keys and the judge budget's windows."""
        import django_rq
        from rq import SimpleWorker

        SimpleWorker([django_rq.get_queue("default")], connection=self.connection).work(burst=True)
        self.connection.flushdb()


def budget_use(outcome: Outcome, rpm: int | None, tpm: int | None) -> dict[str, float]:
    """Share of each limit used once warm: over the whole windows from one window after the release (the first
    starts empty, so a run may burst through it) to the last accepted request; {"windows": 0} when the run ended
    before a whole window after the first."""
    times = [t for t, _ in outcome.accepted]
    start = outcome.started + WINDOW
    windows = int((max(times, default=start) - start) // WINDOW)
    if windows < 1:
        return {"windows": 0}
    inside = [(t, k) for t, k in outcome.accepted if start <= t < start + windows * WINDOW]
    used: dict[str, float] = {"windows": windows}
    if rpm:
        used["requests"] = len(inside) / (rpm * windows)
    if tpm:
        used["tokens"] = sum(k for _, k in inside) / (tpm * windows)
    return used


_TABLE_AFTER = {
    "SELECT": r"\bFROM\s+\"(\w+)\"",
    "UPDATE": r"^\s*UPDATE\s+\"(\w+)\"",
    "INSERT": r"\bINTO\s+\"(\w+)\"",
    "DELETE": r"\bFROM\s+\"(\w+)\"",
}


def statement_kind(sql: str) -> str:
    """'SELECT evaluation_judgement', 'UPDATE evaluation_render', 'SAVEPOINT'...: what a statement does, and to which
    table (the first its verb names)."""
    verb = sql.split(None, 1)[0].upper() if sql.strip() else "?"
    table = re.search(_TABLE_AFTER[verb], sql, re.IGNORECASE) if verb in _TABLE_AFTER else None
    return f"{verb} {table.group(1)}" if table else verb


def count_sql_worker(out: str, queues: list[str]) -> None:
    """`manage.py work <queues>` with every SQL statement of the process counted (by kind) and timed, written to `out`
    as JSON when the worker stops."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atelier.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db.backends.signals import connection_created

    counts: dict[str, Any] = {"statements": 0, "seconds": 0.0, "kinds": Counter()}

    def count(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            counts["statements"] += 1
            counts["seconds"] += time.perf_counter() - started
            counts["kinds"][statement_kind(sql)] += 1

    def install(sender, connection, **kwargs) -> None:
        if count not in connection.execute_wrappers:
            connection.execute_wrappers.append(count)

    connection_created.connect(install, weak=False)
    try:
        call_command("work", *queues)
    finally:
        Path(out).write_text(json.dumps(counts))


def workdir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] != "count-sql":
        raise SystemExit("usage: python bench/judge_fleet.py count-sql OUT.json QUEUE [QUEUE ...]")
    count_sql_worker(sys.argv[2], sys.argv[3:])


def add_fleet_arguments(parser: Any) -> None:
    """The options every fleet bench takes: where Redis and the bench's database are."""
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/9", help="an empty Redis database (emptied after)")
    parser.add_argument("--database", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument(
        "--postgres-url", default="postgres://postgres@127.0.0.1:5432", help="the server; the bench creates and drops its database"
    )


@contextlib.contextmanager
def fleet_for(args: Any, prefix: str) -> Iterator[Fleet]:
    """A prepared Fleet with its provider serving and its database created (dropped and Redis emptied after)."""
    folder = workdir(prefix)
    provider = Provider()
    with provider.server, bench_database(args.database, args.postgres_url, folder) as database_url:
        fleet = Fleet(database_url=database_url, redis_url=args.redis_url, workdir=folder, provider=provider)
        try:
            fleet.prepare()
            print(f"{args.database} database, Redis {args.redis_url}, worker logs under {folder}", flush=True)
            yield fleet
        finally:
            fleet.connection.flushdb()
