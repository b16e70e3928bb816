"""The judge's batch route (ATELIER_JUDGE_BATCH=all, or ask: the team's choice) against the scripted server's files and
batches API, over real HTTP: the same request bodies and judgements as the synchronous route, failed, expired and
cancelled lines sent again (in a new batch or synchronously) with nothing judged twice, the progress on the submission
page, a cancelled submission's batch cancelled at the provider, and a send job that stops half-way recovered."""

from __future__ import annotations

import json
import logging

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation import runtime
from evaluation.batching import SENDING, batch_collect, custom_id
from evaluation.judging import judge_unit
from evaluation.models import JudgeBatch, Judgement, JudgeRoute, Status, Submission, UnitStatus
from evaluation.reconcile import reconcile
from evaluation.units import submission_cancel
from evaluator.judge import batch as provider
from evaluator.judge.budget import shared_budget
from submissions.services import EndpointRefused, JudgeRouteRefused, endpoint_create, endpoint_run_create, submission_create
from tests.openai_server import BatchPlan, Reply

PROMPTS = b'{"task_id": "oe-s01", "prompt": "Gouache bread loaves in warm morning light, no text"}\n{"task_id": "co-s02", "prompt": "A white arrow on a deep blue sign, FOSSIL HALL"}\n'
RESULT = ("status", "value", "scores", "checklist", "rationales", "raw", "reason", "details", "prompt_tokens", "completion_tokens")


@pytest.fixture
def by_batch(scripted_judge, settings):
    settings.ATELIER_JUDGE_BATCH = "all"
    runtime.reset()
    return scripted_judge


def submit(team, pack):
    submission = submission_create(team=team, pack=pack, prompter="m", filename="p.jsonl", data=PROMPTS)
    submission.refresh_from_db()
    return submission


def results(submission) -> dict[str, tuple]:
    rows = Judgement.objects.filter(submission=submission).select_related("render")
    return {custom_id(j): tuple(getattr(j, name) for name in RESULT) for j in rows}


@pytest.mark.django_db(transaction=True)
def test_batch_replies_give_the_synchronous_judgements_and_progress_shows(team, owner_client, sample_pack, by_batch, settings):
    submission = submit(team, sample_pack)
    asking = Judgement.objects.filter(submission=submission, status=UnitStatus.PENDING)
    assert submission.status == Status.JUDGING and asking.filter(by_batch=True).count() == asking.count() > 0
    assert by_batch.requests == []  # nothing was asked synchronously: the metric skills settled locally
    reconcile(after_seconds=0)  # sends the file, then polls it: in progress
    batch = JudgeBatch.objects.get(submission=submission)
    assert batch.total == len(by_batch.batch_lines) == asking.count() and set(batch.lines) == {custom_id(j) for j in asking}
    assert (
        f"Judging by batch: <strong>0 of {batch.total}</strong> replies (1 batch open"
        in owner_client.get(f"/submissions/{submission.pk}/").content.decode()
    )
    reconcile(after_seconds=0)  # polled: completed, collected
    submission.refresh_from_db()
    assert submission.status == Status.DONE, submission.error
    assert by_batch.requests == [] and not asking.all().exists()  # every reply came from the batch, none sent twice
    page = owner_client.get(f"/submissions/{submission.pk}/").content.decode()
    assert f"Judging by batch: <strong>{batch.total} of {batch.total}</strong> replies." in page
    assert set(Judgement.objects.filter(submission=submission, batch_tries=1).values_list("calls", flat=True)) == {1}

    # The synchronous route on the same units: the same bodies are sent, and the same replies give the same judgements.
    by_batch_results, lines = results(submission), sorted(json.dumps(line["body"], sort_keys=True) for line in by_batch.batch_lines)
    settings.ATELIER_JUDGE_BATCH = "off"
    carried = Judgement.objects.filter(batch=batch)
    spent = {"calls": 0, "prompt_tokens": 0, "cached_prompt_tokens": 0, "completion_tokens": 0}
    carried.update(status=UnitStatus.PENDING, value=None, scores={}, checklist={}, rationales={}, raw="", details={}, **spent)
    for pk in carried.values_list("pk", flat=True):
        judge_unit(pk)
    assert sorted(json.dumps(body, sort_keys=True) for body in by_batch.requests) == lines
    assert results(submission) == by_batch_results


@pytest.mark.django_db(transaction=True)
def test_failed_and_expired_lines_go_in_a_new_batch_and_nothing_is_judged_twice(team, sample_pack, by_batch, settings):
    settings.ATELIER_JUDGE_RPM = 1000  # the shared synchronous budget: batch requests take nothing from it
    runtime.reset()
    by_batch.batch_plans.append(BatchPlan(status="expired", answered=4, failing=frozenset({1})))
    submission = submit(team, sample_pack)
    for _ in range(2):  # send and poll (in progress); poll (expired) and collect
        reconcile(after_seconds=0)
    first = JudgeBatch.objects.get(submission=submission)
    assert first.status == "expired" and first.collected and "line(s) sent again" in first.error and "scripted failure" in first.error
    judged_first = set(Judgement.objects.filter(batch=first, status=UnitStatus.OK).values_list("pk", flat=True))
    assert len(judged_first) == 3  # four lines answered, one of them an error line
    kept = {j.pk: j.updated for j in Judgement.objects.filter(pk__in=judged_first)}
    for _ in range(2):
        reconcile(after_seconds=0)
    second = JudgeBatch.objects.exclude(pk=first.pk).get(submission=submission)
    assert second.total == first.total - 3 and set(second.lines).isdisjoint(
        custom_id(j) for j in Judgement.objects.filter(pk__in=judged_first)
    )
    submission.refresh_from_db()
    assert submission.status == Status.DONE and by_batch.requests == []
    assert shared_budget(runtime.judge_config()).usage()["requests_used"] == 0  # files, batches, polls and reads included
    JudgeBatch.objects.filter(pk=first.pk).update(collected=False)
    batch_collect(first.pk)  # its replies read again: the judgements they answered are settled and stay as they are
    assert {j.pk: j.updated for j in Judgement.objects.filter(pk__in=judged_first)} == kept
    asked = Judgement.objects.filter(submission=submission, batch_tries__gt=0)
    assert len(by_batch.batch_lines) == first.total + second.total
    assert set(asked.values_list("calls", flat=True)) == {1}  # each judged by one reply; a failed or unanswered line is no call


@pytest.mark.django_db(transaction=True)
def test_a_cancelled_batch_is_judged_synchronously_when_the_deployer_says_so(team, sample_pack, by_batch, settings):
    settings.ATELIER_JUDGE_BATCH_RETRY = "sync"
    by_batch.batch_plans.append(BatchPlan(status="cancelled", answered=0, polls=0))
    submission = submit(team, sample_pack)
    reconcile(after_seconds=0)
    reconcile(after_seconds=0)  # cancelled: every line is sent synchronously
    submission.refresh_from_db()
    assert submission.status == Status.DONE, submission.error
    assert len(by_batch.requests) == len(by_batch.batch_lines) == JudgeBatch.objects.get().total
    assert not Judgement.objects.filter(submission=submission, by_batch=True).exists()


def test_batch_files_keep_within_the_providers_request_and_byte_limits():
    lines = [(f"unit-{n}", provider.line(f"unit-{n}", {"n": n})) for n in range(7)]
    assert [len(f) for f in provider.files(lines, max_requests=3)] == [3, 3, 1]
    size = len(lines[0][1])
    assert [len(f) for f in provider.files(lines, max_bytes=2 * size)] == [2, 2, 2, 1]
    assert [cid for f in provider.files(lines, max_requests=2, max_bytes=size) for cid, _ in f] == [cid for cid, _ in lines]
    assert json.loads(lines[0][1]) == {"custom_id": "unit-0", "method": "POST", "url": "/v1/chat/completions", "body": {"n": 0}}


@pytest.mark.django_db(transaction=True)
def test_with_ask_the_team_chooses_the_route_on_the_upload_form_and_the_page_says_which(
    team, owner_client, sample_pack, scripted_judge, settings
):
    settings.ATELIER_JUDGE_BATCH = "ask"
    form = owner_client.get(f"/teams/{team.slug}/submit/").content.decode()
    assert 'name="judge_by_batch"' in form and "Judge by batch: cheaper for the site, results within 24 h" in form
    made = {}
    for choice in (True, False):
        upload = SimpleUploadedFile(
            "p.jsonl", PROMPTS if choice else PROMPTS.replace(b'"prompt": "', b'"prompt": "Cool tones. ')
        )  # none reused
        sent = {"pack": sample_pack.pk, "prompter": f"m-{choice}", "condition": "", "file": upload} | (
            {"judge_by_batch": "on"} if choice else {}
        )
        response = owner_client.post(f"/teams/{team.slug}/submit/", sent)
        assert response.status_code == 302, response.content.decode()[:2000]
        made[choice] = Submission.objects.get(prompter=f"m-{choice}")
    batched, synchronous = made[True], made[False]
    assert (batched.judge_route, synchronous.judge_route) == (JudgeRoute.BATCH, JudgeRoute.SYNC)
    assert Judgement.objects.filter(submission=batched, status=UnitStatus.PENDING, by_batch=True).exists()
    assert not Judgement.objects.filter(submission=synchronous, by_batch=True).exists()
    synchronous.refresh_from_db()
    assert synchronous.status == Status.DONE and len(scripted_judge.requests) > 0 and scripted_judge.batch_lines == []
    reconcile(after_seconds=0)
    assert {line["custom_id"] for line in scripted_judge.batch_lines} == {
        custom_id(j) for j in Judgement.objects.filter(submission=batched, by_batch=True)
    }  # only the submission that chose the batch route went out by batch
    page = owner_client.get(f"/submissions/{batched.pk}/").content.decode()
    assert "Judge route: <strong>by batch (the provider&#x27;s batch API: cheaper, replies within 24 h)</strong>" in page
    assert "Judge route: <strong>synchronous" in owner_client.get(f"/submissions/{synchronous.pk}/").content.decode()
    settings.ATELIER_JUDGE_BATCH = "off"
    assert 'name="judge_by_batch"' not in owner_client.get(f"/teams/{team.slug}/submit/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_service_takes_the_route_from_the_site_or_the_team_and_refuses_one_the_site_does_not_offer(
    team, sample_pack, scripted_judge, prompter_server, owner_client, settings
):
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)
    endpoint = endpoint_create(team=team, name="scripted", base_url=prompter_server.base_url, model="scripted-prompter")
    settings.ATELIER_JUDGE_BATCH = "ask"
    assert 'name="judge_by_batch"' in owner_client.get(f"/teams/{team.slug}/endpoints/{endpoint.pk}/").content.decode()
    run = endpoint_run_create(team=team, endpoint=endpoint, pack=sample_pack, judge_by_batch=True)
    assert Submission.objects.get(pk=run.pk).judge_route == JudgeRoute.BATCH
    settings.ATELIER_JUDGE_BATCH = "off"
    with pytest.raises(EndpointRefused, match="^judge by batch: this site does not offer the batch route"):
        endpoint_run_create(team=team, endpoint=endpoint, pack=sample_pack, judge_by_batch=True)
    with pytest.raises(JudgeRouteRefused, match="^judge by batch: this site does not offer the batch route .ATELIER_JUDGE_BATCH=off."):
        submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=PROMPTS, judge_by_batch=True)
    assert submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=PROMPTS).judge_route == JudgeRoute.SYNC
    settings.ATELIER_JUDGE_BATCH = "all"
    with pytest.raises(JudgeRouteRefused, match="^judge by batch: this site judges every submission by batch"):
        submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=PROMPTS, judge_by_batch=False)
    assert submission_create(team=team, pack=sample_pack, prompter="n", filename="p.jsonl", data=PROMPTS).judge_route == JudgeRoute.BATCH


@pytest.mark.django_db(transaction=True)
def test_cancelling_a_submission_cancels_its_open_batch_at_the_provider_and_a_refusal_is_kept(team, sample_pack, by_batch, caplog):
    by_batch.batch_plans.append(BatchPlan(polls=5))
    submission = submit(team, sample_pack)
    reconcile(after_seconds=0)  # sent and polled: in progress
    batch = JudgeBatch.objects.get(submission=submission)
    assert batch.status == "in_progress"
    by_batch.cancel_refusals.append(Reply(status=400, content="scripted: this batch cannot be cancelled now"))
    assert submission_cancel(submission.pk, "cancelled by the team")
    caplog.set_level(logging.ERROR, logger="evaluation.batching")
    said = reconcile(after_seconds=0).checks
    batch.refresh_from_db()
    assert batch.cancel_requested is None and "scripted: this batch cannot be cancelled now" in batch.cancel_error
    assert any("could not be cancelled" in r.getMessage() and r.levelno == logging.ERROR for r in caplog.records)
    assert "1 could not be (asked again next time)" in "; ".join(said) and by_batch.cancelled == []
    reconcile(after_seconds=0)  # asked again: taken
    batch.refresh_from_db()
    assert by_batch.cancelled == [batch.provider_id] and batch.cancel_requested is not None and batch.cancel_error == ""
    reconcile(after_seconds=0)  # polled: cancelled; collected with nothing to send again (its judgements were skipped)
    batch.refresh_from_db()
    assert batch.status == "cancelled" and batch.collected and JudgeBatch.objects.count() == 1
    assert not Judgement.objects.filter(submission=submission, status=UnitStatus.PENDING).exists()
    assert by_batch.requests == [] and len(by_batch.batch_lines) == batch.total


def _crash_after(monkeypatch, name: str) -> None:
    """The send job dies right after provider.<name> answered (as a killed worker would), before the row records it."""
    real = getattr(provider, name)

    def then_crash(*args, **kwargs):
        real(*args, **kwargs)
        monkeypatch.setattr(provider, name, real)  # one crash; a later send goes through
        raise RuntimeError("worker killed")

    monkeypatch.setattr(provider, name, then_crash)


@pytest.mark.django_db(transaction=True)
def test_a_batch_started_by_a_send_job_that_died_before_recording_it_is_found_by_its_key_and_judged_once(
    team, sample_pack, by_batch, monkeypatch
):
    _crash_after(monkeypatch, "start")
    submission = submit(team, sample_pack)
    reconcile(after_seconds=0)  # the send job dies once the provider has started the batch
    row = JudgeBatch.objects.get(submission=submission)
    assert row.status == SENDING and row.provider_id == "" and len(by_batch.batches) == 1
    reconcile(after_seconds=3600)  # within the grace: the row is left alone, nothing is sent again
    assert JudgeBatch.objects.get().status == SENDING and len(by_batch.batches) == 1
    for _ in range(3):  # past the grace: found by its key and polled; ended; collected
        reconcile(after_seconds=0)
    row.refresh_from_db()
    (started,) = by_batch.batches
    assert row.provider_id == started and "found at the provider by its key" in row.error and row.collected
    assert by_batch.batches[started]["metadata"] == {"submission": str(submission.pk), provider.KEY: row.send_key}
    submission.refresh_from_db()
    assert submission.status == Status.DONE, submission.error
    asked = Judgement.objects.filter(submission=submission, batch_tries__gt=0)
    assert len(by_batch.batch_lines) == asked.count() == row.total and by_batch.requests == []  # each line sent once
    assert set(asked.values_list("calls", flat=True)) == {1} and set(asked.values_list("batch_tries", flat=True)) == {1}


@pytest.mark.django_db(transaction=True)
def test_a_file_whose_batch_never_started_is_deleted_and_its_lines_sent_again_once(team, sample_pack, by_batch, monkeypatch):
    _crash_after(monkeypatch, "upload")
    submission = submit(team, sample_pack)
    reconcile(after_seconds=0)  # the send job dies after the upload: the row has no file id, the provider no batch
    lost = JudgeBatch.objects.get(submission=submission)
    assert lost.status == SENDING and by_batch.batches == {} and len(by_batch.files) == 1
    for _ in range(3):  # not found: failed, its lines sent in a new file; polled; collected
        reconcile(after_seconds=0)
    lost.refresh_from_db()
    assert lost.status == "failed" and lost.collected and "never started at the provider" in lost.error
    sent = JudgeBatch.objects.exclude(pk=lost.pk).get(submission=submission)
    assert sent.total == lost.total and sent.collected and len(by_batch.batches) == 1
    submission.refresh_from_db()
    assert submission.status == Status.DONE, submission.error
    assert len(by_batch.batch_lines) == sent.total  # the lost file's lines never ran: each judgement was judged once
    assert set(Judgement.objects.filter(batch=sent).values_list("calls", flat=True)) == {1}


@pytest.mark.django_db(transaction=True)
def test_a_recorded_file_whose_batch_never_started_is_deleted_at_the_provider(team, sample_pack, by_batch, monkeypatch):
    real = provider.start
    monkeypatch.setattr(provider, "start", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("worker killed")))
    submission = submit(team, sample_pack)
    reconcile(after_seconds=0)
    row = JudgeBatch.objects.get(submission=submission)
    assert row.status == SENDING and row.file_id in by_batch.files and by_batch.batches == {}
    monkeypatch.setattr(provider, "start", real)
    reconcile(after_seconds=0)
    row.refresh_from_db()
    assert row.status == "failed" and by_batch.deleted_files == [row.file_id]


@pytest.mark.parametrize("status", [400, 500])
@pytest.mark.django_db(transaction=True)
def test_a_refused_start_fails_at_once_and_an_unanswered_one_is_looked_up_then_sent_again(team, sample_pack, by_batch, status):
    by_batch.start_refusals.append(Reply(status=status, content=f"scripted: batch not started ({status})"))
    submission = submit(team, sample_pack)
    reconcile(after_seconds=0)
    first = JudgeBatch.objects.get(submission=submission)
    if status == 400:  # a refusal: nothing started, so the row fails and its lines wait for the next file at once
        assert first.status == "failed" and first.collected and "could not be sent: HTTP 400" in first.error
    else:  # the provider's own error: it may have started; the row waits for the check to look its key up
        assert first.status == SENDING and "not known to have started (HTTP 500" in first.error
    for _ in range(3):
        reconcile(after_seconds=0)
    first.refresh_from_db()
    assert (
        first.status == "failed"
        and by_batch.deleted_files == [first.file_id]
        and by_batch.batches.keys() == {JudgeBatch.objects.exclude(pk=first.pk).get(submission=submission).provider_id}
    )
    submission.refresh_from_db()
    assert submission.status == Status.DONE, submission.error
    assert len(by_batch.batch_lines) == first.total and by_batch.requests == []  # only the started batch's lines ran
    assert set(Judgement.objects.filter(submission=submission, batch_tries__gt=0).values_list("batch_tries", flat=True)) == {2}


def test_unreadable_result_lines_are_skipped_with_a_warning_and_their_units_left_missing(caplog):
    text = "\n".join(['{"custom_id": "a", "response": {"status_code": 200, "body": {"x": 1}}}', "not json", '["no id"]', ""])
    files = type("Files", (), {"content": staticmethod(lambda file_id: type("Content", (), {"text": text})())})
    client = type("Client", (), {"files": files})()  # the one call results() makes: files.content(id).text
    with caplog.at_level(logging.WARNING, logger="evaluator.judge.batch"):
        found = provider.results(client, "file-1")
    assert found == {"a": provider.LineResult({"x": 1}, "")}
    assert "judge batch file file-1: 2 line(s) not JSON or without a custom_id" in caplog.text
