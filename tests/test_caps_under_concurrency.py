"""Caps that hold when requests arrive at once (issue 41: 12 concurrent uploads with 5 already counted stored 11 against
a cap of 10). Each thread has its own database connection, as concurrent requests do.

PostgreSQL only: SQLite's test database lives in memory with a shared cache, where a second writer gets "database table
is locked" at once instead of waiting for the first (a file database, as deployed, waits: its writers take turns)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest
from django.db import connection, connections

from evaluation.models import Submission
from ratings.models import RatingAssignment
from ratings.services import rating_queue_fill
from submissions.services import CapReached, submission_create
from teams.models import Team
from tests.test_expert_queue import expert, rendered_submission

CAP, EARLIER, AT_ONCE = 10, 5, 12


@pytest.fixture
def concurrent(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's in-memory test database refuses a second writer instead of making it wait")


def at_once(count: int, work: Callable[[int], object]) -> list[object]:
    """Run work(0) … work(count - 1) on as many threads, released together; what each returned or raised."""
    start, outcomes = threading.Barrier(count), []

    def run(n: int) -> None:
        try:
            start.wait()
            outcomes.append(work(n))
        except Exception as exc:  # noqa: BLE001 - the test asserts on it
            outcomes.append(f"{type(exc).__name__}: {exc}")
        finally:
            connections.close_all()  # this thread's connection, so the test database can be flushed

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


def test_concurrent_uploads_stop_exactly_at_the_daily_cap(concurrent, redis_url, settings, team, sample_pack, example_prompts):
    settings.ATELIER_DAILY_SUBMISSIONS, settings.REDIS_URL = CAP, redis_url  # jobs wait in Redis: every upload stays counted
    Submission.objects.bulk_create(Submission(team=team, pack=sample_pack, prompter=f"earlier-{i}") for i in range(EARLIER))

    def upload(n: int) -> str:
        try:
            submission_create(
                team=Team.objects.get(pk=team.pk), pack=sample_pack, prompter=f"p{n}", filename="p.jsonl", data=example_prompts
            )
        except CapReached as exc:
            return str(exc)
        return "stored"

    outcomes = at_once(AT_ONCE, upload)
    stored = Submission.objects.filter(team=team).count()
    assert stored == CAP, f"{stored} stored against a cap of {CAP}"
    refused = [o for o in outcomes if o != "stored"]
    assert len(refused) == AT_ONCE - (CAP - EARLIER) and all(f"made {CAP} submissions in the last 24 hours" in o for o in refused)


def test_concurrent_queue_fills_give_each_item_exactly_per_item_experts(concurrent, django_user_model, team, sample_pack):
    raters = [expert(django_user_model, name, hidden=True) for name in ("ana", "ben", "cy")]
    chosen = Submission.objects.filter(pk=rendered_submission(team, sample_pack).pk)
    created = at_once(4, lambda n: rating_queue_fill(submissions=chosen, raters=raters, items=6, per_item=2, seed=n).created)
    assert sorted(created, key=str) == [0, 0, 0, 12], created  # one fill queues the six items, the others find them queued
    per_item = Counter(RatingAssignment.objects.values_list("entry_id", flat=True))
    assert sorted(per_item.values()) == [2] * 6, per_item
