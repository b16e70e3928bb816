"""Shared fixtures: fixed actors, the sample pack, the judge modes, and the real services.

Tests run jobs in-process by default (REDIS_URL is cleared for each test); tests that
need Redis ask for the `redis_url` fixture, which skips when no Redis is reachable,
or fails under ATELIER_REQUIRE_SERVICES=1 (CI). It uses its own database number on the
server REDIS_URL names (ATELIER_TEST_REDIS_DB, default 15) and refuses to flush one that
holds keys this suite did not write.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlparse, urlunparse

import pytest

from evaluation import runtime
from tests.mails import link_problems

pytest_plugins = ["tests.openai_server", "tests.browser", "tests.predictor", "tests.once"]

ROOT = Path(__file__).resolve().parent.parent
SERVICE_REDIS_URL = os.environ.get("REDIS_URL", "")
REQUIRE_SERVICES = os.environ.get("ATELIER_REQUIRE_SERVICES") == "1"
# Under pytest-xdist each worker (gw0, gw1, …) gets its own Redis database below that number, so workers never
# flush each other's queues.
XDIST_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)
TEST_REDIS_DB = int(os.environ.get("ATELIER_TEST_REDIS_DB", "15")) - XDIST_WORKER
SUITE_MARKER = "atelier:test-suite-owns-this-db"
# The demo's two smoke backends, one image per prompt: fast. Tests that need the shipped file set it back.
TEST_BACKENDS = ROOT / "tests" / "backends-test.json"


# Fixtures that give a test the test database. A test that asks for none of them cannot reach the database (pytest-django
# blocks it), so it cannot behave differently on PostgreSQL: the PostgreSQL pass runs only the tests marked `database`.
DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback", "live_server"})


# The longest files (minutes each on this 2-core machine), collected first: with --dist loadfile xdist hands out files in
# collection order, so the two workers begin with the long ones and end together on the short ones. The sort is here,
# before pytest's own -m selection reads the `database` marks set below (a trylast hook would mark after it).
LONGEST_FIRST = ("test_demo.py", "test_faults.py", "test_object_storage.py", "test_nginx.py")


def pytest_collection_modifyitems(config, items):
    """Mark every test that touches the test database `database`, from the fixtures it uses (never by hand). A test
    marked `sqlite_pass` or `sqlite_too` by hand must say why it runs on SQLite (reason="...")."""
    for item in items:
        if item.get_closest_marker("django_db") or DATABASE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.database)
        for name in ("sqlite_pass", "sqlite_too"):
            mark = item.get_closest_marker(name)
            if mark is not None and not mark.kwargs.get("reason", "").strip():
                raise pytest.UsageError(f"{item.nodeid}: {name} needs reason='why it runs on SQLite'")
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


def service_missing(what: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"{what} is required (ATELIER_REQUIRE_SERVICES=1) but not available")
    pytest.skip(f"{what} not available")


@pytest.fixture(autouse=True)
def _isolated(settings, tmp_path):
    from django.core.cache import cache

    # Each test process its own cache, even with REDIS_URL set (xdist workers would share and clear each other's lockout
    # counters): tests that need the shared cache across processes set it themselves (test_lockout_workers).
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    cache.clear()  # rate-limit counters (API tokens) live in the cache: no test inherits another's
    settings.REDIS_URL = ""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.OPENAI_BASE_URL = ""
    settings.ATELIER_BACKENDS_FILE = TEST_BACKENDS
    settings.ATELIER_RELEASE_KEY = tmp_path / "release-ed25519.pem"  # none: no release is made unless a test makes the key
    settings.ATELIER_DIFFICULTY_MODEL = tmp_path / "difficulty"  # none unless a test installs one (the demo trains one)
    # A fast hasher, as Django's own test advice has it: PBKDF2's million rounds cost about 0.3 s a user or login here,
    # and no test is about the hash. Deployments keep Django's default.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    runtime.reset()
    yield
    runtime.reset()


@pytest.fixture(autouse=True)
def _mail_links_absolute():
    """Every e-mail any test sends carries only absolute links (tests/mails.py): a mail is read outside the site."""
    from django.core import mail

    yield
    problems = [problem for message in getattr(mail, "outbox", []) for problem in link_problems(message)]
    assert not problems, f"e-mail links a mail reader cannot open: {problems}"


def suite_redis_url(url: str, db: int = TEST_REDIS_DB) -> str:
    """The same Redis server as `url`, on the suite's own database number."""
    parsed = urlparse(url)
    if parsed.scheme == "unix":  # unix:///path/to/socket?db=N (urlunparse would drop the empty host's slashes)
        return f"unix://{parsed.path}?" + urlencode({**dict(parse_qsl(parsed.query)), "db": str(db)})
    return urlunparse(parsed._replace(path=f"/{db}"))


def claim_test_database(connection) -> None:
    """Flush the suite's database only if it is empty or was written by this suite; then mark it as ours."""
    size = connection.dbsize()
    if size and not connection.exists(SUITE_MARKER):
        db = connection.connection_pool.connection_kwargs.get("db")
        raise RuntimeError(
            f"refusing to flush Redis database {db}: it holds {size} key(s) this test suite did not write (set ATELIER_TEST_REDIS_DB to a free one)"
        )
    connection.flushdb()
    connection.set(SUITE_MARKER, "1")


@pytest.fixture
def redis_url(monkeypatch):
    if not SERVICE_REDIS_URL:
        service_missing("Redis (REDIS_URL)")
    import django_rq.settings
    import redis

    url = suite_redis_url(SERVICE_REDIS_URL)
    connection = redis.Redis.from_url(url)
    try:
        connection.ping()
    except redis.RedisError as exc:
        service_missing(f"Redis at {url} ({exc})")
    try:
        claim_test_database(connection)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    for queue in django_rq.settings.QUEUES.values():  # the queues and workers of the test talk to that database too
        monkeypatch.setitem(queue, "URL", url)
    yield url
    claim_test_database(connection)


@pytest.fixture
def no_backends(settings, tmp_path):
    """Uploads are accepted and stored, but the start job finds no backend and fails at once: no rendering."""
    path = tmp_path / "none.json"
    path.write_text(json.dumps({"backends": []}))
    settings.ATELIER_BACKENDS_FILE = path
    runtime.reset()


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
    settings.ATELIER_CLIP_PRETRAINED = "random"  # accepted explicitly: no CLIP weights can be had here (labelled smoke)
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


@contextmanager
def deployed_urls(settings) -> Iterator[None]:
    """The site's URL conf as a deployment builds it: no demo (settings.ATELIER_DEMO is off without DEBUG). atelier/urls.py
    decides once, at import, so it is imported again without the demo, and again as it was afterwards."""
    from django.urls import clear_url_caches

    import atelier.urls

    demo = settings.ATELIER_DEMO
    try:
        settings.ATELIER_DEMO = False
        importlib.reload(atelier.urls)
        clear_url_caches()
        yield
    finally:
        settings.ATELIER_DEMO = demo
        importlib.reload(atelier.urls)
        clear_url_caches()
