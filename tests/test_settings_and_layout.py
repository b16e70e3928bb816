"""Start-up refuses bad settings with the variable named; evaluator/ never imports Django."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def start(env: dict[str, str], then: str = "") -> subprocess.CompletedProcess:
    code = "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'atelier.settings'); django.setup()\n" + then
    full = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")} | env
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "env, named",
    [
        ({"DEBUG": "maybe"}, "DEBUG='maybe'"),
        ({"DATABASE_URL": "mysql-ish"}, "DATABASE_URL='mysql-ish'"),
        ({"REDIS_URL": "localhost:6379"}, "REDIS_URL='localhost:6379'"),
        ({"OPENAI_BASE_URL": "not a url"}, "OPENAI_BASE_URL='not a url'"),
        ({"ATELIER_JUDGE_MAX_RETRIES": "two"}, "ATELIER_JUDGE_MAX_RETRIES='two'"),
        ({"ATELIER_BACKENDS_FILE": "/nonexistent/backends.json"}, "ATELIER_BACKENDS_FILE='/nonexistent/backends.json'"),
        ({"DEBUG": "false"}, "SECRET_KEY must be set"),
        ({"DEBUG": "false", "SECRET_KEY": "x" * 50}, "ATELIER_SITE_URL must be set when DEBUG is off"),
        ({"DEBUG": "false", "SECRET_KEY": "x" * 50, "ATELIER_DEMO": "true"}, "ATELIER_DEMO=true needs DEBUG=true"),
        ({"ATELIER_SITE_URL": "https://atelier.example.org/board"}, "ATELIER_SITE_URL='https://atelier.example.org/board'"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, "ATELIER_CLIP_PRETRAINED is unset but OPENAI_BASE_URL configures a real judge"),
        ({"ATELIER_JUDGE_ROUTE": "fancy"}, "ATELIER_JUDGE_ROUTE='fancy': expected one of ateliereval, extended"),
        ({"ATELIER_JUDGE_BATCH": "all"}, "ATELIER_JUDGE_BATCH=all needs a judge of one model on an endpoint"),
        ({"ATELIER_JUDGE_BATCH": "ask"}, "ATELIER_JUDGE_BATCH=ask needs a judge of one model on an endpoint"),
        ({"ATELIER_JUDGE_BATCH": "later"}, "ATELIER_JUDGE_BATCH='later': expected off, all or ask"),
        ({"ATELIER_JUDGE_BATCH_RETRY": "later"}, "ATELIER_JUDGE_BATCH_RETRY='later': expected batch or sync"),
    ],
)
def test_bad_setting_stops_startup_naming_the_variable(env, named):
    result = start(env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and named in result.stderr


def demo_state() -> dict:
    """Whether this process has the demo: its app, its command, and settings.ATELIER_DEMO, which atelier/urls.py routes
    /demo/ by (tests/test_demo_endpoint.py and others check the routes go with it)."""
    from django.apps import apps
    from django.conf import settings
    from django.core.management import get_commands

    return {"installed": apps.is_installed("demo"), "command": "demo" in get_commands(), "routed": settings.ATELIER_DEMO}


SAY_DEMO = "import json; from tests.test_settings_and_layout import demo_state; print('DEMO ' + json.dumps(demo_state()))"
NO_DEMO = {"installed": False, "command": False, "routed": False}


def started_demo(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(next(line for line in result.stdout.splitlines() if line.startswith("DEMO ")).removeprefix("DEMO "))


def test_good_settings_start():
    """A deployment (DEBUG off) starts without the demo (issue 43): not installed, no command, no route to its views."""
    production = {"DEBUG": "false", "SECRET_KEY": "x" * 50, "ATELIER_SITE_URL": "https://atelier.example.org:8443"}
    assert started_demo(start(production | {"REDIS_URL": "redis://127.0.0.1:6379/1"}, then=SAY_DEMO)) == NO_DEMO
    # a real judge with random CLIP weights said out loud starts (its label says smoke); with DEBUG and ATELIER_DEMO=false,
    # the site as deployed
    real = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ATELIER_CLIP_PRETRAINED": "random", "ATELIER_DEMO": "false"}
    assert started_demo(start(real, then=SAY_DEMO)) == NO_DEMO
    assert demo_state() == {"installed": True, "command": True, "routed": True}  # this process, with DEBUG: the demo's


def test_every_job_the_work_queue_names_resolves_to_a_function():
    from django.utils.module_loading import import_string

    from evaluation.workqueue import JOBS

    names = {job.rsplit(".", 1)[1] for job in JOBS}
    assert names == {
        "board_job",
        "start_submission_job",
        "render_job",
        "judge_job",
        "judge_batch_send_job",
        "judge_batch_collect_job",
        "finish_submission_job",
        "prompt_job",
        "feedback_render_job",
        "feedback_judge_job",
        "attempt_render_job",
        "attempt_judge_job",
        "release_job",
        "difficulty_job",
        "erase_job",
        "report_job",
        "notice_send_job",
    }
    assert all(callable(import_string(job)) for job in JOBS)


def test_evaluator_has_no_django_import():
    offenders = []
    for path in (ROOT / "evaluator").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] == "django"]
    assert offenders == []
    assert len(list((ROOT / "evaluator").rglob("*.py"))) > 5
