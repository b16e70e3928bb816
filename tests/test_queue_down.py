"""Every state change that enqueues work either commits with its jobs on the queue, or, with Redis stopped, answers
503 with Retry-After (the admin: an error message) and changes nothing, as uploads do. Each action runs twice:
Redis down (nothing listens on the port the queues name) and Redis up (the suite's database, jobs read back)."""

from __future__ import annotations

import socket

import django_rq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from evaluation import runtime
from evaluation.models import Judgement, PromptEntry, Status, Submission
from evaluation.queues import render_queue
from evaluation.workqueue import BOARD_JOB, ERASE_JOB, JUDGE_JOB, START_JOB, job_id
from studies.models import Assignment, Attempt, Participant
from studies.services import study_create
from tests.test_expert_queue import rendered_submission
from tests.test_studies import NOVICE, link, start


@pytest.fixture(params=["down", "up"])
def redis_up(request, settings, monkeypatch) -> bool:
    if request.param == "up":
        settings.REDIS_URL = request.getfixturevalue("redis_url")
        return True
    with socket.socket() as probe:  # a port nothing listens on: a stopped Redis refuses the connection at once
        probe.bind(("127.0.0.1", 0))
        url = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    settings.REDIS_URL = url
    for queue in django_rq.settings.QUEUES.values():
        monkeypatch.setitem(queue, "URL", f"{url}?socket_connect_timeout=2&socket_timeout=2")
    return False


def queued(queue: str = "default") -> list[str]:
    return django_rq.get_queue(queue).job_ids


def board_job(submission: Submission) -> str:
    return job_id(BOARD_JOB, (submission.pack_id, submission.pack_revision))


def row(submission: Submission) -> dict:
    return Submission.objects.filter(pk=submission.pk).values().get()


def assert_503(response) -> None:
    assert response.status_code == 503 and response["Retry-After"] == "30", response.status_code
    assert "nothing was changed" in response.content.decode()


@pytest.fixture
def done(team, sample_pack) -> Submission:
    return rendered_submission(team, sample_pack)


def test_show_on_the_board(redis_up, owner_client, done):
    before = row(done)
    response = owner_client.post(f"/submissions/{done.pk}/board/", {"action": "show"})
    if not redis_up:
        assert_503(response)
        assert row(done) == before
        return
    assert response.status_code == 302 and row(done)["published"] and queued() == [board_job(done)]


def test_withdraw_from_the_board(redis_up, owner_client, done):
    Submission.objects.filter(pk=done.pk).update(published=True)
    before = row(done)
    response = owner_client.post(f"/submissions/{done.pk}/board/", {"action": "withdraw"})
    if not redis_up:
        assert_503(response)
        assert row(done) == before
        return
    erase = job_id(ERASE_JOB, (done.pk,))  # the withdrawn entry's media, deleted by its own job
    assert response.status_code == 302 and not row(done)["published"] and row(done)["withdrawn"] and queued() == [board_job(done), erase]


@pytest.mark.parametrize("action, published", [("publish", False), ("unpublish", True)])
def test_admin_publish_and_unpublish(redis_up, admin_client, done, action, published):
    Submission.objects.filter(pk=done.pk).update(published=published)
    before = row(done)
    page = admin_client.post("/admin/evaluation/submission/", {"action": action, "_selected_action": [done.pk]}, follow=True)
    shown = page.content.decode()
    if not redis_up:
        assert "The work queue is unavailable right now, so nothing was changed." in shown and "ublished 1 submission" not in shown
        assert row(done) == before
        return
    assert f"{action.capitalize()}ed 1 submission(s)" in shown and row(done)["published"] != published and queued() == [board_job(done)]


def test_staff_retry_of_failed_judgements(redis_up, admin_client, done):
    Submission.objects.filter(pk=done.pk).update(status=Status.INCOMPLETE)
    before, judgements = row(done), list(Judgement.objects.values())
    response = admin_client.post(f"/submissions/{done.pk}/retry/")
    if not redis_up:
        assert_503(response)
        assert row(done) == before and list(Judgement.objects.values()) == judgements
        return
    pending = Judgement.objects.filter(submission=done, status="pending")
    assert response.status_code == 302 and row(done)["status"] == Status.JUDGING and pending.exists()
    assert sorted(queued("judge")) == sorted(job_id(JUDGE_JOB, (pk,)) for pk in pending.values_list("pk", flat=True))


def test_upload_on_the_site(redis_up, owner_client, team, sample_pack):
    upload = SimpleUploadedFile("p.jsonl", b'{"task_id": "oe-s01", "prompt": "bread in warm light"}\n')
    response = owner_client.post(f"/teams/{team.slug}/submit/", {"pack": sample_pack.pk, "prompter": "m", "file": upload})
    if not redis_up:
        assert response.status_code == 503 and response["Retry-After"] == "30" and "nothing was stored" in response.content.decode()
        assert not Submission.objects.exists() and not PromptEntry.objects.exists()
        return
    submission = Submission.objects.get()
    assert response.status_code == 302 and queued() == [job_id(START_JOB, (submission.pk,))]


def test_a_participants_last_task(redis_up, sample_pack):
    study = study_create(name="Last task", pack=sample_pack, per_category=1, rounds=1)
    client, url = Client(), link(study)
    participant = start(client, url, NOVICE)
    *earlier, last = participant.assignments.order_by("position")
    for assignment in earlier:  # these enqueue nothing, so they need no queue
        assert client.post(url + "submit", {"position": assignment.position, "text": "a prompt"}).status_code == 302
    response = client.post(url + "submit", {"position": last.position, "text": "the last prompt"})
    participant = Participant.objects.get(pk=participant.pk)
    if not redis_up:
        assert response.status_code == 503 and response["Retry-After"] == "30" and "nothing was changed" in response.content.decode()
        assert participant.completed is None and participant.submission is None and not Submission.objects.exists()
        assert Assignment.objects.get(pk=last.pk).submitted is None
        return
    assert response.status_code == 302 and participant.completed and queued() == [job_id(START_JOB, (participant.submission_id,))]


def test_a_participants_im_attempt(redis_up, sample_pack):
    backend = next(iter(runtime.backend_configs()))
    study = study_create(name="Attempts", pack=sample_pack, per_category=1, rounds=1, retry_attempts=2, retry_backend=backend)
    client, url = Client(), link(study)
    participant = start(client, url, NOVICE)
    order = list(participant.assignments.order_by("position"))
    im = next(a for a in order if a.task.category == "IM")
    for assignment in order[: order.index(im)]:
        client.post(url + "submit", {"position": assignment.position, "text": "a prompt"})
    response = client.post(url + "attempt", {"position": im.position, "text": "red sun, blue hills"})
    if not redis_up:
        assert response.status_code == 503 and response["Retry-After"] == "30" and "nothing was changed" in response.json()["error"]
        assert not Attempt.objects.exists() and Assignment.objects.get(pk=im.pk).draft == ""
        return
    attempt = Attempt.objects.get()
    assert response.status_code == 200 and response.json()["status"] == "pending"
    assert queued(render_queue(backend)) == [job_id("studies.jobs.attempt_render_job", (attempt.pk,))]


def test_the_rescore_command(redis_up, done):
    from django.core.management import CommandError, call_command

    Submission.objects.filter(pk=done.pk).update(status=Status.INCOMPLETE)
    Judgement.objects.filter(submission=done, skill="prompt_subjective").update(status="failed", reason="timed out (APITimeoutError)")
    before, judgements = row(done), list(Judgement.objects.values())
    if not redis_up:
        with pytest.raises(CommandError, match="nothing was changed"):
            call_command("rescore", "--submission", str(done.pk))
        assert row(done) == before and list(Judgement.objects.values()) == judgements
        return
    call_command("rescore", "--submission", str(done.pk))
    pending = Judgement.objects.filter(submission=done, status="pending")
    assert row(done)["status"] == Status.JUDGING and pending.exists() and not pending.exclude(reason="").exists()
    assert sorted(queued("judge")) == sorted(job_id(JUDGE_JOB, (pk,)) for pk in pending.values_list("pk", flat=True))
