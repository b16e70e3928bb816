"""The API token lockout holds across gunicorn workers and restarts, because its counts live in Redis.

A real gunicorn with 3 workers, configured only by the environment (REDIS_URL on the suite's Redis database,
DEBUG off): the 21st bad token from one address gets 429 whichever worker answers, and a restarted gunicorn still
refuses it. The access log names the worker (gunicorn's %(p)s) so the test can see several of them answered.
Then the cache's Redis dies: the limiter fails open with a warning, never with a 500.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.once import copy_database
from tests.test_worker_shutdown import _redis_server as own_redis_server

WORKERS = 3
API = "/api/v1/submissions/1"
ACCESS = re.compile(r"^ACCESS pid=<?(\d+)>? status=(\d+) [A-Z]+ (\S+)")
PROBE = "/accounts/login/"  # a page that no limiter counts


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    drop = ("DATABASE_URL", "REDIS_URL", "ATELIER_", "OPENAI_")
    keep = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return (
        keep
        | {
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(64),
            "ALLOWED_HOSTS": "127.0.0.1",
            "ATELIER_SITE_URL": "http://127.0.0.1",
            "SECURE_SSL_REDIRECT": "false",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "MEDIA_ROOT": str(tmp_path / "media"),
            "STATIC_ROOT": str(tmp_path / "static"),
            "PYTHONUNBUFFERED": "1",
        }
        | extra
    )


def limit(env: dict[str, str]) -> int:
    """ATELIER_TOKEN_FAILURE_LIMIT as the served settings read it (the README's 20 unless the environment says otherwise)."""
    done = setting(env, "settings.ATELIER_TOKEN_FAILURE_LIMIT")
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


def setting(env: dict[str, str], expression: str) -> subprocess.CompletedProcess:
    """Print `expression` as a process started with `env` reads its settings."""
    code = f"import django; django.setup(); from django.conf import settings; print({expression})"
    env = env | {"DJANGO_SETTINGS_MODULE": "atelier.settings"}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def get(port: int, token: str, path: str = API) -> int:
    """One request on a fresh connection (so any worker may take it); the HTTP status."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {token}", "Connection": "close"})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def stop_process(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 30 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Gunicorn:
    """gunicorn with WORKERS sync workers; its log lines are collected by a thread (the pipe never fills)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.port, self.lines = free_port(), []
        access = ["--access-logfile", "-", "--access-logformat", "ACCESS pid=%(p)s status=%(s)s %(r)s"]
        command = [
            sys.executable,
            "-m",
            "gunicorn",
            "atelier.wsgi",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(WORKERS),
            *access,
            "--no-control-socket",
        ]
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_ready(self, timeout: float = 120) -> None:
        """Until every worker has answered a probe (each loads Django after it boots, some seconds on a busy machine):
        requests sent after that can land on any of them."""
        deadline = time.monotonic() + timeout
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    list(pool.map(lambda _: get(self.port, "", PROBE), range(WORKERS)))  # in flight together
                except OSError:  # not listening yet
                    time.sleep(0.2)
                if len({pid for pid, _ in self.answered(PROBE)}) >= WORKERS:
                    return
        raise AssertionError(f"not all {WORKERS} gunicorn workers answered within {timeout:.0f} s:\n" + "\n".join(self.lines))

    def answered(self, path: str = API) -> list[tuple[int, int]]:
        """(worker pid, status) of every request for `path` so far, from the access log."""
        return [(int(m[1]), int(m[2])) for line in list(self.lines) if (m := ACCESS.match(line)) and m[3] == path]

    def stop(self) -> None:
        stop_process(self.process)
        self.reader.join(timeout=5)


@contextmanager
def served(env: dict[str, str]) -> Iterator[Gunicorn]:
    server = Gunicorn(env)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def wait_logged(server: Gunicorn, count: int, timeout: float = 10) -> list[tuple[int, int]]:
    """The access log is written after the response: wait until `count` requests are in it."""
    deadline = time.monotonic() + timeout
    while len(server.answered()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return server.answered()


def scraped_4xx(port: int) -> float:
    """The 4xx answers every worker counted, as /metrics sums them (prometheus_client's multiprocess mode)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": "Bearer scrape", "Connection": "close"})
    with urllib.request.urlopen(request, timeout=20) as response:
        body = response.read().decode()
    counts = re.findall(r'^atelier_request_seconds_count\{[^}]*status="4xx"[^}]*\} (\S+)$', body, re.M)
    return sum(float(n) for n in counts)


def test_the_lockout_holds_across_gunicorn_workers_and_a_restart(redis_url, tmp_path, migrated_sqlite):
    metrics = tmp_path / "prometheus"  # the workers' shared folder, so one scrape sums what each worker measured
    env = environment(tmp_path, REDIS_URL=redis_url, PROMETHEUS_MULTIPROC_DIR=str(metrics), ATELIER_METRICS_TOKEN="scrape")
    (tmp_path / "static").mkdir()
    metrics.mkdir()
    copy_database(migrated_sqlite, tmp_path / "db.sqlite3")  # the run's migrated database (tests/once.py)
    allowed = limit(env)
    with served(env) as server:
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:  # in flight together, so every worker takes some
            statuses = list(pool.map(lambda i: get(server.port, f"atl_wrong_{i}"), range(allowed)))
        assert statuses == [401] * allowed
        assert get(server.port, "atl_wrong_last") == 429
        answered = wait_logged(server, allowed + 1)
        workers = {pid for pid, _ in answered}
        print(f"{allowed} bad tokens got 401, the next 429; {len(workers)} distinct workers answered: {sorted(workers)}")
        assert len(workers) >= 2, answered
        assert len(answered) == allowed + 1 and all(status == 401 for _, status in answered[:-1]) and answered[-1][1] == 429
        assert scraped_4xx(server.port) == allowed + 1  # whichever worker answers the scrape, it counts all of them
    with served(env) as restarted:
        assert get(restarted.port, "atl_wrong_after_restart") == 429
        print("after a restart: 429")


@contextmanager
def redis_server() -> Iterator[tuple[subprocess.Popen, int]]:
    """A redis-server of this test's own on a free port (test_worker_shutdown's), which the test may kill."""
    port = free_port()
    with own_redis_server(port) as process:
        yield process, port


def test_the_limiter_fails_open_with_a_warning_when_the_cache_is_down(client, team, settings, caplog):
    from submissions.services import token_create

    good = token_create(team=team, name="ci")[1]
    settings.ATELIER_TOKEN_FAILURE_LIMIT = 2
    with redis_server() as (process, port):
        settings.CACHES = {
            "default": {"BACKEND": "atelier.cache.RedisCache", "LOCATION": f"redis://127.0.0.1:{port}/0", "KEY_PREFIX": "atelier-cache"}
        }
        bearer = {"HTTP_AUTHORIZATION": "Bearer atl_wrong"}
        assert [client.get(API, **bearer).status_code for _ in range(3)] == [401, 401, 429]  # the cache counts
        process.kill()
        process.wait()
        with caplog.at_level(logging.WARNING, logger="teams.ratelimit"):
            assert client.get(API, **bearer).status_code == 401  # open: refused as invalid, not counted, not locked out
            assert client.get(API, HTTP_AUTHORIZATION=f"Bearer {good}").status_code == 404  # a valid token still works
    warnings = [r.getMessage() for r in caplog.records if r.name == "teams.ratelimit"]
    assert any("not counted" in w for w in warnings), warnings


def test_clearing_the_cache_keeps_the_work_queues(redis_url, settings):
    import redis
    from django.core.cache import cache

    settings.CACHES = {"default": {"BACKEND": "atelier.cache.RedisCache", "LOCATION": redis_url, "KEY_PREFIX": "atelier-cache"}}
    connection = redis.Redis.from_url(redis_url)
    connection.rpush("rq:queue:default", "a-job")
    connection.zadd("atelier:prompter-slots:1", {"a-slot": 1})  # evaluation/slots.py's keys share the database too
    cache.set("token-failures:10.0.0.1", 3)
    cache.clear()
    assert cache.get("token-failures:10.0.0.1") is None
    assert connection.lrange("rq:queue:default", 0, -1) == [b"a-job"] and connection.zcard("atelier:prompter-slots:1") == 1


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, "LocMemCache"),
        ({"REDIS_URL": "redis://127.0.0.1:6379/3"}, "atelier.cache.RedisCache redis://127.0.0.1:6379/3"),
        ({"REDIS_URL": "redis://127.0.0.1:6379/3", "ATELIER_CACHE_URL": "locmem://"}, "LocMemCache"),
        (
            {"REDIS_URL": "redis://127.0.0.1:6379/3", "ATELIER_CACHE_URL": "unix:///run/redis.sock?db=4"},
            "atelier.cache.RedisCache unix:///run/redis.sock?db=4",
        ),
        ({"ATELIER_CACHE_URL": "memcached://127.0.0.1:11211"}, "ImproperlyConfigured: ATELIER_CACHE_URL='memcached://127.0.0.1:11211'"),
    ],
)
def test_the_cache_follows_atelier_cache_url_then_redis_url(tmp_path, env, expected):
    done = setting(environment(tmp_path, **env), "settings.CACHES['default']['BACKEND'], settings.CACHES['default'].get('LOCATION', '')")
    assert expected in done.stdout + done.stderr, done.stdout + done.stderr
