"""The start-up budget (issue 28): django.setup() in a fresh web process imports none of the heavy libraries (the judge's
and renderers' models, the openai client, the statistics), and registers every app's jobs by name, without importing
the modules that run them. Not timed: the libraries' absence is what keeps start-up under two seconds, and a count of
seconds would fail on a busy machine; `python -X importtime` says where the time goes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = (
    "scipy",
    "torch",
    "diffusers",
    "open_clip",
    "openai",
    "transformers",
    "sentence_transformers",
    "statsmodels",
    "sklearn",
    "bpe_openai",  # the judge's tokenizer reads its tables as it is imported (evaluator/judge/tokens.py)
)

# Run in a fresh interpreter: records, for each heavy library, the frames of our code that first imported it, then
# reports what django.setup() left in sys.modules, the work queue's jobs, and whether each resolves by its name.
PROBE = r"""
import json, sys, traceback
from importlib.abc import MetaPathFinder

heavy, root = set(sys.argv[1].split(",")), sys.argv[2] + "/"
importers = {}


class Watch(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in heavy and name not in importers:
            stack = traceback.extract_stack()[:-1]
            importers[name] = [
                f"{f.filename[len(root):]}:{f.lineno}" for f in stack if f.filename.startswith(root) and "/.venv/" not in f.filename
            ]
        return None


sys.meta_path.insert(0, Watch())
import django

django.setup()
from django.conf import settings
from django.utils.module_loading import import_string

from evaluation.workqueue import JOBS, RENDER

found = sorted(m for m in heavy if m in sys.modules)
jobs = dict(JOBS)
loaded = sorted(job for job in jobs if job.rpartition(".")[0] in sys.modules)
unresolved = []
for job in jobs:
    try:
        if not callable(import_string(job)):
            unresolved.append(f"{job}: not callable")
    except ImportError as exc:
        unresolved.append(f"{job}: {exc}")
report = {
    "heavy": found,
    "importers": {m: importers.get(m, []) for m in found},
    "jobs": jobs,
    "job_modules_loaded_by_setup": loaded,
    "unresolved": unresolved,
    "unknown_queues": sorted({q for q in jobs.values() if q != RENDER} - set(settings.ATELIER_QUEUES)),
}
print("PROBE " + json.dumps(report))
"""


@pytest.fixture(scope="module")
def started(tmp_path_factory) -> dict:
    """django.setup() in a fresh process, as a web process starts: a sqlite database of its own, no Redis."""
    database = tmp_path_factory.mktemp("startup") / "db.sqlite3"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env |= {"DJANGO_SETTINGS_MODULE": "atelier.settings", "DATABASE_URL": f"sqlite:///{database}", "REDIS_URL": ""}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(HEAVY), str(ROOT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-4000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("PROBE "))
    return json.loads(line.removeprefix("PROBE "))


def test_django_setup_imports_no_heavy_library(started) -> None:
    found = started["heavy"]
    if found:
        first = found[0]
        path = " -> ".join(started["importers"][first]) or "(no module of ours on the stack)"
        pytest.fail(f"django.setup() imported {', '.join(found)}; {first} was first imported by: {path}")


def test_every_job_is_registered_at_setup_by_name_and_resolves(started) -> None:
    """The jobs apps add from their AppConfig.ready() (the studies' attempt jobs) are in the table after setup, setup
    imported none of the job modules (registration is by dotted path), and every name resolves to a callable on a queue
    the settings configure. tests/test_settings_and_layout.py checks the same table in the test process."""
    jobs = started["jobs"]
    assert {"studies.jobs.attempt_render_job", "studies.jobs.attempt_judge_job"} <= set(jobs)
    assert started["job_modules_loaded_by_setup"] == []
    assert started["unresolved"] == []
    assert started["unknown_queues"] == []
