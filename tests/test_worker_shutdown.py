"""`manage.py work` stops when its supervisor asks (SIGTERM), instead of taking the request for a lost Redis.

rq marks a stop request on the worker only when a job is running; an idle worker leaves its loop with just the
request's date set. Read wrongly, systemd's stop restarted the worker and waited for its kill timeout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT


def _wait_until_idle(process: subprocess.Popen, url: str, timeout: float) -> None:
    """Until the worker waits for jobs (its state in Redis is idle: signal handlers in, maintenance done)."""
    import redis
    from rq.worker import Worker

    connection = redis.Redis.from_url(url)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if any(w.get_state() == "idle" for w in Worker.all(connection=connection)):
            return
        time.sleep(0.1)
    raise AssertionError(f"the worker was not idle within {timeout:.0f} s (exit code {process.poll()})")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_idle_worker_exits_at_once_when_asked_to_stop(redis_url, tmp_path, signum):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL"))}
    env |= {"REDIS_URL": redis_url, "DATABASE_URL": f"sqlite:///{tmp_path / 'worker.sqlite3'}", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "manage.py", "work", "default"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        _wait_until_idle(process, redis_url, timeout=60)
        asked = time.monotonic()
        process.send_signal(signum)
        rest, _ = process.communicate(timeout=20)
        took = time.monotonic() - asked
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, rest
    assert "left its loop" not in rest and "starting again" not in rest, rest
    assert took < 5, f"the worker took {took:.1f} s to stop"
