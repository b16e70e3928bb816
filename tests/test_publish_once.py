"""Publishing at once from several places (four staff pressing Publish together): each call reports what it did,
so exactly one says it published the submission. Run on both databases: PostgreSQL's row locks are what decide."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from evaluation.models import Status, Submission
from submissions import services


@pytest.mark.django_db(transaction=True)
def test_concurrent_publishes_count_the_submission_once(team, sample_pack, monkeypatch):
    made = Submission.objects.create(team=team, pack=sample_pack, prompter="once", status=Status.DONE)
    rebuilt: list[set] = []
    monkeypatch.setattr(services, "boards_changed", rebuilt.append)  # the board job is not what this is about
    start, counts, failures = threading.Barrier(4), [], []

    def press() -> None:
        try:
            start.wait()
            counts.append(services.submissions_publish(submissions=Submission.objects.filter(pk=made.pk)))
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
