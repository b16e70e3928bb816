"""Start-up refuses bad settings with the variable named; evaluator/ never imports Django."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def start(env: dict[str, str]) -> subprocess.CompletedProcess:
    code = "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'atelier.settings'); django.setup()"
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
        ({"ATELIER_SITE_URL": "https://atelier.example.org/board"}, "ATELIER_SITE_URL='https://atelier.example.org/board'"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, "ATELIER_CLIP_PRETRAINED is unset but OPENAI_BASE_URL configures a real judge"),
        ({"ATELIER_JUDGE_ROUTE": "fancy"}, "ATELIER_JUDGE_ROUTE='fancy': expected one of ateliereval, extended"),
    ],
)
def test_bad_setting_stops_startup_naming_the_variable(env, named):
    result = start(env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and named in result.stderr


def test_good_settings_start():
    production = {"DEBUG": "false", "SECRET_KEY": "x" * 50, "ATELIER_SITE_URL": "https://atelier.example.org:8443"}
    assert start(production | {"REDIS_URL": "redis://127.0.0.1:6379/1"}).returncode == 0
    # a real judge with random CLIP weights said out loud starts (its label says smoke)
    assert start({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ATELIER_CLIP_PRETRAINED": "random"}).returncode == 0


def test_every_job_the_work_queue_names_resolves_to_a_function():
    from django.utils.module_loading import import_string

    from evaluation.workqueue import JOBS

    names = {job.rsplit(".", 1)[1] for job in JOBS}
    assert names == {
        "board_job",
        "start_submission_job",
        "render_job",
        "judge_job",
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
