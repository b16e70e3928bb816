"""Endpoint runs on real Redis with real RQ workers: the `prompter` queue, cancellation, and recovery of lost calls."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone
from django_rq import get_connection
from rq import Queue

from evaluation.models import CallStatus, PromptCall, Status
from evaluation.reconcile import reconcile
from evaluation.units import submission_cancel
from evaluation.workers import AtelierWorker
from submissions.services import endpoint_create, endpoint_run_create
from tasks.selectors import prompter_title
from tests.openai_server import scripted_prompt

KEY = "sk-rq-worker-key-NEVER-LOGGED-9f1e"


@pytest.fixture
def rq_run(redis_url, settings, prompter_server, scripted_judge, team):
    settings.REDIS_URL = redis_url
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)
    endpoint = endpoint_create(
        team=team, name="rq", base_url=prompter_server.base_url, model="scripted-prompter", api_key=KEY, max_in_flight=3
    )

    def work(*queues: str) -> None:
        connection = get_connection("default")
        names = queues or settings.ATELIER_QUEUES
        AtelierWorker([Queue(name, connection=connection) for name in names], connection=connection).work(burst=True)

    return endpoint, work


@pytest.mark.django_db(transaction=True)
def test_an_endpoint_run_with_feedback_rounds_finishes_through_rq_workers(rq_run, prompter_server, team, sample_pack, caplog):
    caplog.set_level(logging.DEBUG)  # the workers', rq's, openai's and httpx's log lines, all of them
    endpoint, work = rq_run
    submission = endpoint_run_create(team=team, endpoint=endpoint, pack=sample_pack, rounds=2, feedback_backend="smoke-sd")
    assert Queue("default", connection=get_connection("default")).count == 1 and submission.status == Status.QUEUED
    work("default")
    submission.refresh_from_db()
    assert submission.status == Status.PROMPTING
    assert (
        Queue("prompter", connection=get_connection("default")).count == PromptCall.objects.filter(submission=submission, round=0).count()
    )
    work()
    submission.refresh_from_db()
    assert submission.status == Status.DONE, submission.error
    for entry in submission.entries.select_related("task"):
        assert entry.text == scripted_prompt(prompter_title(entry.task), 2)
    assert set(PromptCall.objects.filter(submission=submission).values_list("status", "feedback_status")) == {(CallStatus.OK, "ok")}
    assert prompter_server.max_in_flight_seen <= 3
    assert get_connection("prompter").zcard(f"atelier:prompter-slots:{endpoint.pk}") == 0  # every slot was given back
    assert any(r.name.startswith("rq.") for r in caplog.records) and any(r.name.startswith(("openai", "httpx")) for r in caplog.records)
    assert KEY not in caplog.text and endpoint.key_encrypted not in caplog.text


@pytest.mark.django_db(transaction=True)
def test_cancelling_a_run_stops_its_pending_calls(rq_run, prompter_server, team, sample_pack):
    endpoint, work = rq_run
    submission = endpoint_run_create(team=team, endpoint=endpoint, pack=sample_pack)
    work("default")
    assert PromptCall.objects.filter(submission=submission, status=CallStatus.PENDING).exists()
    assert submission_cancel(submission.pk, "cancelled by owner")
    work()
    submission.refresh_from_db()
    assert submission.status == Status.CANCELLED and submission.error == "cancelled by owner"
    assert prompter_server.requests == []
    assert set(PromptCall.objects.filter(submission=submission).values_list("status", flat=True)) == {CallStatus.CANCELLED}
    assert not submission.entries.exists()
    assert not submission_cancel(submission.pk, "again")  # a finished run stays as it is


@pytest.mark.django_db(transaction=True)
def test_reconcile_resends_lost_calls_and_calls_held_by_a_dead_worker(rq_run, prompter_server, team, sample_pack):
    endpoint, work = rq_run
    submission = endpoint_run_create(team=team, endpoint=endpoint, pack=sample_pack)
    work("default")
    Queue("prompter", connection=get_connection("default")).empty()  # Redis lost the prompt jobs (queue and job hashes)
    dead = PromptCall.objects.filter(submission=submission).first()
    long_ago = timezone.now() - timedelta(hours=1)
    PromptCall.objects.filter(pk=dead.pk).update(status=CallStatus.RUNNING, started_at=long_ago)  # claimed by a worker that died
    PromptCall.objects.filter(submission=submission).update(queued_at=long_ago)
    work()  # nothing to do: the jobs are gone
    assert (
        PromptCall.objects.filter(submission=submission, status__in=[CallStatus.PENDING, CallStatus.RUNNING]).count()
        == PromptCall.objects.filter(submission=submission).count()
    )
    resent = reconcile(after_seconds=0)
    assert len(resent.calls) == PromptCall.objects.filter(submission=submission).count()
    work()
    submission.refresh_from_db()
    assert submission.status == Status.DONE, submission.error
    assert len(prompter_server.requests) == PromptCall.objects.filter(submission=submission).count()  # each call made once
