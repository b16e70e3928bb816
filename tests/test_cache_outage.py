"""A cache outage never costs a page: with the cache's Redis (a redis-server of the test's own) stopped, or a server
that accepts connections and never answers, every public page and API route still answers 200, rendered uncached.

One small board is built (one upload, published, in-process) and fetched through the whole Django stack with the
cache on Redis: first with Redis up (the caches fill), then stopped, then hanging."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from contextlib import closing

import pytest
import redis

from evaluation.models import Submission
from submissions.services import submission_create, submissions_publish
from tests.faults import free_port

REDIS_SERVER = shutil.which("redis-server")


def cache_on(settings, port: int) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "atelier.cache.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "KEY_PREFIX": "atelier-cache",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        },
        "template_fragments": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "outage-fragments"},
    }


def public_urls(client, submission: Submission) -> list[str]:
    page = client.get("/").content.decode()
    board = page.split('id="board-download"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    query = board.split("?", 1)[1]
    task = submission.entries.select_related("task").first().task
    return [
        "/",
        f"/?{query}&sort=overall&dir=asc",
        "/tasks/",
        f"/tasks/{task.pack_id}/{task.task_id}/",
        "/judge/",
        "/about/smoke/",
        f"/submissions/{submission.pk}/",
        f"/submissions/{submission.pk}/breakdown.csv",
        board,
        f"/releases/?{query}",
        "/releases/keys.json",
        f"/api/v1/boards?pack={submission.pack.name}",
        "/api/v1/openapi.json",
        "/accounts/login/",
        "/accounts/signup/",
    ]


def fetch_all(client, urls: list[str]) -> dict[str, int]:
    return {url: client.get(url).status_code for url in urls}


@pytest.fixture
def redis_process():
    if REDIS_SERVER is None:
        pytest.fail("redis-server is not installed (Debian's redis-server package)")
    port = free_port()
    process = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"], stdout=subprocess.DEVNULL
    )
    for _ in range(100):
        with closing(socket.socket()) as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    yield port, process
    process.kill()
    process.wait()


@pytest.fixture
def silent_port():
    """A server that accepts every connection and never says a word (a hung Redis)."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


def test_every_public_page_answers_with_the_cache_down_or_hanging(
    client, team, sample_pack, example_prompts, settings, redis_process, silent_port
):
    port, process = redis_process
    cache_on(settings, port)
    made = submission_create(team=team, pack=sample_pack, prompter="outage", filename="p.jsonl", data=example_prompts)
    submissions_publish(submissions=Submission.objects.filter(pk=made.pk))
    urls = public_urls(client, made)
    expected = dict.fromkeys(urls, 200)  # the board.zip link streams the files: no release key in this test
    assert fetch_all(client, urls) == expected  # Redis up: the caches fill
    assert redis.Redis(port=port).keys("atelier-cache:*")

    process.kill()
    process.wait()
    started = time.monotonic()
    assert fetch_all(client, urls) == expected  # Redis stopped: every page rendered uncached
    down = time.monotonic() - started

    cache_on(settings, silent_port)
    started = time.monotonic()
    some = ["/", "/judge/", urls[11]]
    assert fetch_all(client, some) == dict.fromkeys(some, 200)
    hanging = time.monotonic() - started
    # a refused connection costs nothing; a silent server at most the one-second timeout per cache call
    assert down < 30 and hanging < 30, (down, hanging)
