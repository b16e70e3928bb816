"""The judge's batch route (ATELIER_JUDGE_BATCH=all) against the scripted server's files and batches API, over real HTTP:
the same request bodies and judgements as the synchronous route, failed, expired and cancelled lines sent again (in a
new batch or synchronously) with nothing judged twice, and the progress on the submission page."""

from __future__ import annotations

import json

import pytest

from evaluation import runtime
from evaluation.batching import batch_collect, custom_id
from evaluation.judging import judge_unit
from evaluation.models import JudgeBatch, Judgement, Status, UnitStatus
from evaluation.reconcile import reconcile
from evaluator.judge import batch as provider
from evaluator.judge.budget import shared_budget
from submissions.services import submission_create
from tests.openai_server import BatchPlan

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
