"""Things built once per test run and shared by every test process (pytest-xdist workers included): the first
process to ask builds it into the run's temporary folder behind a file lock; the others wait, then use it.

- `migrated_sqlite`: an empty SQLite database with every migration applied (deployment tests copy it instead of
  running `manage.py migrate` each);
- `collected_static`: `manage.py collectstatic` as a deployment runs it (DEBUG off: compressed, hashed names), read
  by the deployment tests' web processes, never written.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent
NOT_INHERITED = ("DATABASE_URL", "REDIS_URL", "ATELIER_", "OPENAI_", "DEBUG", "SECRET_KEY", "STATIC_ROOT", "MEDIA_ROOT")


def run_folder(tmp_path_factory) -> Path:
    """This run's temporary folder: under xdist, the one above every worker's own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_run(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder `name`, filled by `build(folder)` by the first process of this run that asks."""
    folder = run_folder(tmp_path_factory) / name
    with FileLock(str(folder) + ".lock"):
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed half-way is started again
            folder.mkdir(parents=True)
            build(folder)
            (folder / ".built").touch()
    return folder


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"manage.py {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def plain_environment(**extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(NOT_INHERITED)} | extra


def fold_wal(database: Path) -> None:
    """Write SQLite's write-ahead log into the file itself, so that copying the file copies the whole database."""
    with closing(sqlite3.connect(database)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory) -> Path:
    def build(folder: Path) -> None:
        manage(plain_environment(DATABASE_URL=f"sqlite:///{folder / 'db.sqlite3'}"), "migrate", "--noinput")
        fold_wal(folder / "db.sqlite3")

    return once_per_run(tmp_path_factory, "migrated-sqlite", build) / "db.sqlite3"


def copy_database(template: Path, database: Path) -> Path:
    """A deployment's own database, starting as `template` (the migrated one)."""
    database.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, database)
    return database


@pytest.fixture(scope="session")
def collected_static(tmp_path_factory) -> Path:
    def build(folder: Path) -> None:
        env = plain_environment(
            DEBUG="false",
            SECRET_KEY=secrets.token_urlsafe(32),
            ATELIER_SITE_URL="https://atelier.example.org",
            STATIC_ROOT=str(folder),
            DATABASE_URL=f"sqlite:///{folder / 'unused.sqlite3'}",
        )
        manage(env, "collectstatic", "--noinput")

    return once_per_run(tmp_path_factory, "collected-static", build)
