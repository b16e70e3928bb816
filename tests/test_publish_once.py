"""Publishing at once from several places (four staff pressing Publish together): each call reports what it did,
so exactly one says it published the submission. Run on both databases: PostgreSQL's row locks are what decide."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import OperationalError, connection

from evaluation.models import Status, Submission
from submissions import services


@pytest.mark.django_db(transaction=True)
def test_concurrent_publishes_count_the_submission_once(team, sample_pack, monkeypatch):
    made = Submission.objects.create(team=team, pack=sample_pack, prompter="once", status=Status.DONE)
    rebuilt: list[set] = []
    monkeypatch.setattr(services, "boards_changed", rebuilt.append)  # the board job is not what this is about
    start, counts, failures = threading.Barrier(4), [], []

    def press() -> None:
        """One staff member's Publish. SQLite's test database is a shared in-memory cache whose table locks answer
        "locked" at once instead of waiting (a file database waits, settings' timeout): such a call changed nothing
        and is pressed again, as a person would."""
        try:
            start.wait()
            for _ in range(200):
                try:
                    counts.append(services.submissions_publish(submissions=Submission.objects.filter(pk=made.pk)))
                    return
                except OperationalError as exc:
                    if "locked" not in str(exc):
                        raise
                    time.sleep(0.01)
            failures.append("still locked after 200 tries")
        except Exception as exc:  # noqa: BLE001 - recorded and asserted below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=press) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and sorted(counts) == [0, 0, 0, 1]
    assert services.submissions_publish(submissions=Submission.objects.filter(pk=made.pk)) == 0  # already published
    assert services.submissions_unpublish(submissions=Submission.objects.filter(pk=made.pk)) == 1
    assert services.submissions_unpublish(submissions=Submission.objects.filter(pk=made.pk)) == 0
