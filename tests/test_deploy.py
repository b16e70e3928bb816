"""Served as deployed: DEBUG off, collectstatic, gunicorn behind a TLS proxy, `check --deploy` clean.

These run the real commands in subprocesses on a throw-away SQLite database, and talk HTTP to gunicorn.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.once import copy_database

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = {
    "DEBUG": "false",
    "ALLOWED_HOSTS": "atelier.example.org",
    "ATELIER_SITE_URL": "https://atelier.example.org",
    "ATELIER_BEHIND_TLS_PROXY": "true",
}

SEED = """
import io
from PIL import Image
from django.core.files.base import ContentFile
from django.contrib.auth import get_user_model
from evaluation.models import PromptEntry, Render, Submission
from teams.models import Team
from tasks.loaders import read_own_pack
from tasks.services import pack_save

pack, _ = pack_save(data=read_own_pack("tasks/packs/sample"))
team = Team.objects.create(name="t", slug="t")
task = pack.tasks.get(task_id="oe-s01")
for published in (True, False):
    submission = Submission.objects.create(team=team, pack=pack, prompter=f"p{published}", status="done", published=published)
    entry = PromptEntry.objects.create(submission=submission, task=task, text="bread")
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 20, 30 + published)).save(buffer, format="PNG")
    render = Render(entry=entry, backend="smoke-sd", image_index=0, seed=1, config_hash="h", prompt_sha="s", status="ok")
    render.image.save(f"{'public' if published else 'private'}.png", ContentFile(buffer.getvalue()))
"""


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "OPENAI_BASE_URL")}
    return (
        keep
        | PRODUCTION
        | {
            "SECRET_KEY": secrets.token_urlsafe(64),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "STATIC_ROOT": str(tmp_path / "static"),
            "MEDIA_ROOT": str(tmp_path / "media"),
        }
        | extra
    )


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_check_deploy_is_clean_in_the_production_profile(tmp_path):
    result = manage(environment(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
    insecure = manage(
        environment(tmp_path, SECURE_SSL_REDIRECT="false", SECURE_HSTS_SECONDS="0"), "check", "--deploy", "--fail-level", "WARNING"
    )
    assert (
        insecure.returncode != 0
        and "security.W004" in insecure.stderr + insecure.stdout
        and "security.W008" in insecure.stderr + insecure.stdout
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def fetch(port: int, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Host": "atelier.example.org", **headers})
    try:
        with urllib.request.build_opener(NoRedirects).open(request, timeout=20) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.fixture
def gunicorn(tmp_path, migrated_sqlite, collected_static):
    """A deployment on a copy of the run's migrated database and its collected static files (tests/once.py)."""
    env = environment(tmp_path, STATIC_ROOT=str(collected_static))
    copy_database(migrated_sqlite, tmp_path / "db.sqlite3")
    result = manage(env, "shell", "-c", SEED)
    assert result.returncode == 0, f"seed: {result.stdout}{result.stderr}"
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "atelier.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "2"]
    with serving(command, env, port, "/", **{"X-Forwarded-Proto": "https"}) as server:
        yield port, server


@contextmanager
def serving(command: list[str], env: dict, port: int, path: str, **headers: str) -> Iterator[subprocess.Popen]:
    """A server process run from the project's folder, yielded once `path` on `port` answers (or it died, or 60 s
    passed: the test's first request then says why); stopped afterwards."""
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:
        try:
            fetch(port, path, **headers)
            break
        except (ConnectionError, urllib.error.URLError, OSError):
            time.sleep(0.3)
    try:
        yield server
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_gunicorn_serves_styled_pages_charts_and_media_with_permissions(gunicorn):
    port, server = gunicorn
    assert server.poll() is None, server.stdout.read()
    https = {"X-Forwarded-Proto": "https"}
    status, headers, _ = fetch(port, "/")
    assert status == 301 and headers["Location"].startswith("https://atelier.example.org/")  # plain HTTP is redirected
    status, headers, page = fetch(port, "/tasks/", **https)
    assert status == 200 and "max-age=31536000" in headers["Strict-Transport-Security"]
    css = re.search(rb'href="(/static/css/site\.[0-9a-f]{12}\.css)"', page)
    plotly = re.search(rb'src="(/static/vendor/plotly/plotly\.min\.[0-9a-f]{12}\.js)"', page)
    assert css and plotly, page[:2000]
    status, headers, body = fetch(port, css.group(1).decode(), **https, **{"Accept-Encoding": "gzip"})
    assert status == 200 and headers["Content-Type"].startswith("text/css") and headers.get("Content-Encoding") == "gzip"
    assert "immutable" in headers["Cache-Control"] or "max-age=315360000" in headers["Cache-Control"]
    status, headers, body = fetch(port, plotly.group(1).decode(), **https)
    assert status == 200 and len(body) > 1_000_000  # plotly.js itself, from the installed package: no CDN
    assert fetch(port, "/media/renders/public.png", **https)[0] == 200
    assert fetch(port, "/media/renders/private.png", **https)[0] == 404
