"""A small deployment in subprocesses, for fault injection (tests/test_faults.py, bench/faults.py).

It runs what the README's "Deploying" section runs: a redis-server of its own (on a free port, no
persistence, so a restart loses every queued job: the worst case), `manage.py work` per queue group,
`manage.py scheduler` (reconcile every few seconds), a scripted OpenAI-compatible judge, the smoke
diffusers backends, and a throw-away SQLite database that the harness reads directly to watch units.
Faults: SIGKILL a worker while it holds a job, restart Redis, misbehave at the judge.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evaluation.queues import render_queue
from tests.openai_server import Reply, ScriptedOpenAIServer, judge_responder

ROOT = Path(__file__).resolve().parent.parent
REDIS_SERVER = shutil.which("redis-server")
TASKS = ("oe-s01", "co-s01", "im-s01")
STEPS = 30  # every scenario renders alike (long enough for a fault to land mid-render), so times compare
FAST = {  # seconds: reconcile often, notice a dead worker quickly
    "ATELIER_RECONCILE_INTERVAL": "2",
    "ATELIER_RECONCILE_AFTER": "3",
    "ATELIER_WORKER_HEARTBEAT": "1",
    "ATELIER_WORKER_STALE_AFTER": "4",
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Outcome:
    scenario: str
    status: str = ""
    seconds: float = 0.0  # submission created -> finished
    fault_at: float | None = None  # seconds after creation
    recovery: float | None = None  # fault -> finished
    renders: int = 0
    judgements: int = 0
    lost: int = 0  # units still pending at the end
    duplicated: int = 0  # rows beyond one per natural key
    failed_with_reason: int = 0
    failed_without_reason: int = 0
    expected_renders: int = 0
    judge_requests: int = 0
    notes: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        return asdict(self)


_template: Path | None = None  # this process's migrated database with the sample pack loaded (and its media)


class Deployment:
    """Start with `with Deployment(tmp_path) as d:`; every process is stopped on exit."""

    def __init__(
        self, tmp: Path, *, steps: int = STEPS, images: int = 1, judge: Callable[[dict], Reply] = judge_responder, judge_retries: int = 0
    ) -> None:
        self.tmp, self.steps, self.images = tmp, steps, images
        self.judge = ScriptedOpenAIServer(default=judge)
        self.redis_port = free_port()
        self.redis: subprocess.Popen | None = None
        self.processes: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, Path] = {}
        self.db = tmp / "faults.sqlite3"
        self.judge_retries = judge_retries

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> Deployment:
        if REDIS_SERVER is None:
            raise RuntimeError("redis-server is not installed: the fault suite starts its own")
        self.judge.start()
        self.start_redis()
        self._write_backends()
        self._prepare_database()
        return self

    def _prepare_database(self) -> None:
        """Migrate and load the sample pack once per process; later deployments start from a copy of that database
        and its media (the same rows, made by the same commands), which saves two Django start-ups each."""
        global _template
        if _template is None:
            self.manage("migrate", "--noinput")
            self.manage("load_tasks", "tasks/packs/sample")
            template = Path(tempfile.mkdtemp(prefix="atelier-faults-template-"))
            atexit.register(shutil.rmtree, template, True)
            with closing(sqlite3.connect(self.db)) as connection:  # write-ahead log: fold it into the file before copying
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            shutil.copyfile(self.db, template / self.db.name)
            shutil.copytree(self.tmp / "media", template / "media")
            _template = template
            return
        shutil.copyfile(_template / self.db.name, self.db)
        shutil.copytree(_template / "media", self.tmp / "media", dirs_exist_ok=True)

    def __exit__(self, *exc: object) -> None:
        for name in list(self.processes):
            self.stop(name)
        self.stop_redis()
        self.judge.stop()

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("ATELIER_", "DATABASE_URL", "REDIS_URL", "OPENAI_"))}
        return (
            keep
            | FAST
            | {
                "DATABASE_URL": f"sqlite:///{self.db}",
                "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
                "MEDIA_ROOT": str(self.tmp / "media"),
                "ATELIER_BACKENDS_FILE": str(self.tmp / "backends.json"),
                "OPENAI_BASE_URL": self.judge.base_url,
                "OPENAI_API_KEY": "fault-suite",
                "ATELIER_JUDGE_MODEL": "scripted-judge",
                "ATELIER_CLIP_PRETRAINED": "random",
                "ATELIER_JUDGE_TIMEOUT": "3",
                "ATELIER_JUDGE_MAX_RETRIES": str(self.judge_retries),
                "ATELIER_MAX_MISSING_RATE": "0.05",
                "PYTHONUNBUFFERED": "1",
            }
        )

    def _write_backends(self) -> None:
        shipped = json.loads((ROOT / "tests" / "backends-test.json").read_text())
        for backend in shipped["backends"]:
            backend["steps"], backend["images_per_prompt"] = self.steps, self.images
        (self.tmp / "backends.json").write_text(json.dumps(shipped))
        self.backends = [b["name"] for b in shipped["backends"] if b.get("enabled", True)]

    def manage(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env(), capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def start_redis(self) -> None:
        self.redis = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.redis_port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop_redis(self) -> None:
        if self.redis is not None:
            self.redis.kill()
            self.redis.wait(timeout=10)
            self.redis = None

    def spawn(self, name: str, *args: str) -> subprocess.Popen:
        log = self.tmp / f"{name}.log"
        self.logs[name] = log
        handle = open(log, "a")  # noqa: SIM115 - the process owns it until it exits
        self.processes[name] = subprocess.Popen(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env(), stdout=handle, stderr=subprocess.STDOUT
        )
        return self.processes[name]

    def workers(self) -> None:
        self.spawn("scheduler", "scheduler")
        self.spawn("work-default", "work", "default", "judge")
        self.spawn("work-render", "work", *[render_queue(b) for b in self.backends])

    def kill(self, name: str) -> None:
        self.processes.pop(name).send_signal(signal.SIGKILL)

    def stop(self, name: str) -> None:
        process = self.processes.pop(name)
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()

    # -- work and observation ----------------------------------------------------------------
    def submit(self, tasks: tuple[str, ...] = TASKS) -> int:
        lines = "\\n".join(json.dumps({"task_id": t, "prompt": f"A careful picture for {t}, soft light, no text"}) for t in tasks)
        script = (
            "from teams.models import Team; from submissions.services import submission_create; from tasks.models import TaskPack\n"
            "team, _ = Team.objects.get_or_create(name='faults', slug='faults')\n"
            f"s = submission_create(team=team, pack=TaskPack.objects.get(name='sample'), prompter='faults', filename='p.jsonl', data=b'{lines}')\n"
            "print('SUBMISSION', s.pk)"
        )
        out = self.manage("shell", "-c", script)
        self.created = time.monotonic()
        self.expected = len(tasks)
        return int(out.split("SUBMISSION")[1].split()[0])

    def query(self, sql: str, *params: Any) -> list[tuple]:
        with closing(sqlite3.connect(self.db, timeout=30)) as connection:
            return connection.execute(sql, params).fetchall()

    def wait_for(self, sql: str, *params: Any, timeout: float = 120.0) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.query(sql, *params)[0][0]:
                return time.monotonic()
            time.sleep(0.05)
        raise TimeoutError(f"waited {timeout:.0f} s for: {sql} {params}\n{self.tail()}")

    def tail(self, lines: int = 15) -> str:
        return "\n".join(
            f"--- {n}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-lines:]) for n, p in self.logs.items() if p.exists()
        )

    def finish(self, submission_id: int, scenario: str, fault_at: float | None, timeout: float = 180.0) -> Outcome:
        done = self.wait_for(
            "SELECT status NOT IN ('queued','rendering','judging') FROM submissions_submission WHERE id=?", submission_id, timeout=timeout
        )
        (status,) = self.query("SELECT status FROM submissions_submission WHERE id=?", submission_id)[0]
        rows = "FROM submissions_render r JOIN submissions_promptentry e ON r.entry_id=e.id WHERE e.submission_id=?"
        key = "COALESCE(render_id, 'p' || entry_id) || '/' || skill || '/' || judge_id || '/' || judge_version"
        count = lambda sql: self.query(sql, submission_id)[0][0]  # noqa: E731
        return Outcome(
            scenario=scenario,
            status=status,
            seconds=round(done - self.created, 2),
            fault_at=None if fault_at is None else round(fault_at - self.created, 2),
            recovery=None if fault_at is None else round(done - fault_at, 2),
            renders=count(f"SELECT COUNT(*) {rows}"),
            judgements=count("SELECT COUNT(*) FROM submissions_judgement WHERE submission_id=?"),
            lost=count(f"SELECT COUNT(*) {rows} AND r.status='pending'")
            + count("SELECT COUNT(*) FROM submissions_judgement WHERE submission_id=? AND status='pending'"),
            duplicated=count(f"SELECT COUNT(*) - COUNT(DISTINCT r.entry_id || '/' || r.backend || '/' || r.image_index) {rows}")
            + count(f"SELECT COUNT(*) - COUNT(DISTINCT {key}) FROM submissions_judgement WHERE submission_id=?"),
            failed_with_reason=count(
                "SELECT COUNT(*) FROM submissions_judgement WHERE submission_id=? AND status='failed' AND reason != ''"
            ),
            failed_without_reason=count(
                "SELECT COUNT(*) FROM submissions_judgement WHERE submission_id=? AND status='failed' AND reason = ''"
            ),
            expected_renders=self.expected * len(self.backends) * self.images,
            judge_requests=len(self.judge.requests),
        )


# -- scenarios: each returns what happened; tests assert on it, bench/faults.py prints it ----------------
RUNNING_RENDER = "SELECT COUNT(*) FROM submissions_render WHERE status='pending' AND started_at IS NOT NULL"
RUNNING_JUDGEMENT = "SELECT COUNT(*) FROM submissions_judgement WHERE status='pending' AND started_at IS NOT NULL"


def slow_judge(delay: float) -> Callable[[dict], Reply]:
    def respond(request: dict) -> Reply:
        reply = judge_responder(request)
        reply.delay = delay
        return reply

    return respond


def flaky_judge(request_number: Callable[[], int]) -> Callable[[dict], Reply]:
    """A deterministic pattern of endpoint faults: 429, 500, a 200 whose body is not JSON, and a timeout."""

    def respond(request: dict) -> Reply:
        n = request_number()
        if n % 11 == 3:
            return Reply(status=429, content="scripted rate limit", headers={"retry-after": "0"})
        if n % 11 == 5:
            return Reply(status=500, content="scripted outage")
        if n % 11 == 7:
            return Reply(raw_body=b"{this is not json")
        if n % 11 == 9:
            return Reply(content="{}", delay=4.0)  # past ATELIER_JUDGE_TIMEOUT (3 s)
        return judge_responder(request)

    return respond


def baseline(tmp: Path) -> Outcome:
    with Deployment(tmp) as d:
        d.workers()
        return d.finish(d.submit(), "no fault (baseline)", None)


def kill_render_worker(tmp: Path) -> Outcome:
    with Deployment(tmp) as d:
        d.workers()
        submission = d.submit()
        fault = d.wait_for(RUNNING_RENDER)
        d.kill("work-render")  # SIGKILL while it holds a render job
        d.spawn("work-render", "work", *[render_queue(b) for b in d.backends])  # what a process supervisor does
        return d.finish(submission, "SIGKILL render worker mid-job", fault)


def kill_judge_worker(tmp: Path) -> Outcome:
    with Deployment(tmp, judge=slow_judge(0.6)) as d:
        d.workers()
        submission = d.submit()
        fault = d.wait_for(RUNNING_JUDGEMENT)
        d.kill("work-default")
        d.spawn("work-default", "work", "default", "judge")
        return d.finish(submission, "SIGKILL judge worker mid-job", fault)


def restart_redis(tmp: Path) -> Outcome:
    with Deployment(tmp) as d:
        d.workers()
        submission = d.submit()
        fault = d.wait_for("SELECT COUNT(*) FROM submissions_render WHERE status='ok'")
        d.stop_redis()  # every queued job is lost (no persistence): the worst case
        time.sleep(1.0)
        d.start_redis()
        outcome = d.finish(submission, "Redis restarted mid-run (all queued jobs lost)", fault)
        outcome.notes.append(
            f"workers restarted after the outage: {sum('lost Redis' in p.read_text() for p in d.logs.values())} process(es)"
        )
        return outcome


def judge_faults(tmp: Path) -> Outcome:
    counter = iter(range(1, 10**9))
    with Deployment(tmp, judge=flaky_judge(lambda: next(counter)), judge_retries=2) as d:
        d.workers()
        submission = d.submit()
        first = d.finish(submission, "judge 429 / 500 / malformed / timeout", time.monotonic())
        first.notes.append(f"first pass: {first.status}, {first.failed_with_reason} judgement(s) failed with a reason")
        if first.status == "incomplete":
            d.manage("rescore", "--submission", str(submission))
            retried = d.finish(submission, first.scenario, None)
            retried.notes = [*first.notes, f"after rescore: {retried.status}"]
            retried.fault_at, retried.recovery = first.fault_at, round(retried.seconds - (first.fault_at or 0), 2)
            return retried
        return first


SCENARIOS = {
    "baseline": baseline,
    "kill-render": kill_render_worker,
    "kill-judge": kill_judge_worker,
    "redis-restart": restart_redis,
    "judge-faults": judge_faults,
}
