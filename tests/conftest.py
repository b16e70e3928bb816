"""Shared fixtures: fixed actors, the sample pack, the judge modes, and the real services.

Tests run jobs in-process by default (REDIS_URL is cleared for each test); tests that
need Redis ask for the `redis_url` fixture, which skips when no Redis is reachable,
or fails under ATELIER_REQUIRE_SERVICES=1 (CI).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from submissions import runtime

pytest_plugins = ["tests.openai_server"]

ROOT = Path(__file__).resolve().parent.parent
SERVICE_REDIS_URL = os.environ.get("REDIS_URL", "")
REQUIRE_SERVICES = os.environ.get("ATELIER_REQUIRE_SERVICES") == "1"
# The demo's two smoke backends, one image per prompt: fast. Tests that need the shipped file set it back.
TEST_BACKENDS = ROOT / "tests" / "backends-test.json"


def service_missing(what: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"{what} is required (ATELIER_REQUIRE_SERVICES=1) but not available")
    pytest.skip(f"{what} not available")


@pytest.fixture(autouse=True)
def _isolated(settings, tmp_path):
    settings.REDIS_URL = ""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.OPENAI_BASE_URL = ""
    settings.ATELIER_BACKENDS_FILE = TEST_BACKENDS
    runtime.reset()
    yield
    runtime.reset()


@pytest.fixture
def redis_url():
    if not SERVICE_REDIS_URL:
        service_missing("Redis (REDIS_URL)")
    import redis

    connection = redis.Redis.from_url(SERVICE_REDIS_URL)
    try:
        connection.ping()
    except redis.RedisError as exc:
        service_missing(f"Redis at {SERVICE_REDIS_URL} ({exc})")
    connection.flushdb()
    yield SERVICE_REDIS_URL
    connection.flushdb()


@pytest.fixture
def sample_pack(transactional_db):
    from tasks.loaders import read_own_pack
    from tasks.services import pack_save

    pack, _ = pack_save(data=read_own_pack(ROOT / "tasks" / "packs" / "sample"))
    return pack


@pytest.fixture
def scripted_judge(openai_server, settings):
    """AtelierJudge talking to the local scripted OpenAI-compatible server."""
    settings.OPENAI_BASE_URL = openai_server.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.ATELIER_JUDGE_MODEL = "scripted-judge"
    settings.ATELIER_JUDGE_TIMEOUT = 5.0
    settings.ATELIER_JUDGE_MAX_RETRIES = 0
    runtime.reset()
    return openai_server


@pytest.fixture
def owner(db, django_user_model):
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def stranger(db, django_user_model):
    return django_user_model.objects.create_user("stranger", password="pw-stranger-123")


@pytest.fixture
def team(owner):
    from submissions.services import team_create

    return team_create(user=owner, name="Pixel Poets")


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def example_prompts() -> bytes:
    return (ROOT / "examples" / "demo_prompts.jsonl").read_bytes()


@pytest.fixture
def shipped_backends(settings):
    """config/backends.json as shipped (two images per prompt)."""
    settings.ATELIER_BACKENDS_FILE = ROOT / "config" / "backends.json"
    runtime.reset()
