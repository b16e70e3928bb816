"""A broken judge never ranks, is resumable, and is paid for by the request; hidden checklist text never
reaches a stored reason, rationale, raw reply, page, download or API answer, even when the judge echoes it."""

from __future__ import annotations

import html
import json

import pytest

from evaluation.models import Judgement, Status, Submission, UnitStatus
from evaluation.selectors import submission_cost
from evaluator.judge.redact import Redactor
from submissions.services import submission_create, submissions_publish, token_create
from tests.openai_server import ITEMS_HEADER, Reply, judge_responder, keys_after, request_text
from tests.test_task_browser_and_targets import hidden_strings

PROMPTS = b'{"task_id": "oe-s01", "prompt": "Gouache bread loaves in warm morning light, no text"}\n{"task_id": "co-s02", "prompt": "A white arrow on a deep blue sign, FOSSIL HALL"}\n'


def test_the_redactor_replaces_items_in_every_form_it_may_take():
    hide = Redactor.for_items(["The prompt says 'blue' \u00e9", "The prompt says"], ["A key is visible"])
    text = "missing keys [\"The prompt says 'blue' \\u00e9\", \"the prompt says\"]; THE PROMPT SAYS 'blue' é; a key is visible"
    assert hide.text(text) == 'missing keys ["item 1", "item 2"]; item 1; image item 1'
    assert hide.value({"The prompt says": ["A key is visible", 3]}) == {"item 2": ["image item 1", 3]}
    assert Redactor.none().text("The prompt says") == "The prompt says"


@pytest.mark.django_db(transaction=True)
def test_a_failing_judge_leaves_the_submission_incomplete_unpublishable_and_resumable(
    team, sample_pack, scripted_judge, settings, client, admin_client
):
    settings.ATELIER_JUDGE_MAX_RETRIES = 2  # the client retries each 500 twice: three requests per call
    scripted_judge.default = lambda request: Reply(status=500, content="scripted outage")
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=PROMPTS)
    submission.refresh_from_db()
    failed = Judgement.objects.filter(submission=submission, status=UnitStatus.FAILED)
    assert submission.status == Status.INCOMPLETE and failed.exists(), submission.error
    assert "missing" in submission.error and "rescore" in submission.error
    assert submission_cost(submission)["calls"] == len(scripted_judge.requests) > failed.count()  # retries are counted
    assert submissions_publish(submissions=Submission.objects.filter(pk=submission.pk)) == 0
    assert "m" not in [r.prompter for r in Submission.objects.filter(published=True)]

    scripted_judge.default = judge_responder  # the endpoint is back
    kept = {j.pk: j.updated for j in Judgement.objects.filter(submission=submission, status=UnitStatus.OK)}
    assert client.post(f"/submissions/{submission.pk}/retry/").status_code == 302  # staff only: a redirect to the login
    assert Submission.objects.get(pk=submission.pk).status == Status.INCOMPLETE
    assert admin_client.post(f"/submissions/{submission.pk}/retry/").status_code == 302
    submission.refresh_from_db()
    assert submission.status == Status.DONE and submission.error == ""
    assert {j.pk: j.updated for j in Judgement.objects.filter(pk__in=kept)} == kept  # ok judgements untouched
    assert not Judgement.objects.filter(submission=submission, status=UnitStatus.FAILED).exists()
    assert submission_cost(submission)["calls"] == len(scripted_judge.requests)  # first attempts and retries together
    assert submissions_publish(submissions=Submission.objects.filter(pk=submission.pk)) == 1


def echo_checklist(request: dict) -> Reply:
    """A judge that answers checklist requests with the items as the wrong shape: the parser's message
    (and the repair turns) then quote every item. Other requests are answered well."""
    items = keys_after(ITEMS_HEADER, request_text(request))
    if items is not None:
        return Reply(content=json.dumps({"you asked me about": items, **{f"{i} (echo)": 1 for i in items}}))
    return judge_responder(request)


@pytest.mark.django_db(transaction=True)
def test_a_judge_that_echoes_hidden_items_leaks_nothing(team, owner, sample_pack, scripted_judge, client, settings):
    settings.ATELIER_MAX_MISSING_RATE = 1.0  # let it finish done and be published: the public surfaces are the point
    scripted_judge.default = echo_checklist
    prompts = "\n".join(json.dumps({"task_id": t.task_id, "prompt": f"A picture for {t.title}"}) for t in sample_pack.tasks.all())
    submission = submission_create(team=team, pack=sample_pack, prompter="Echo", filename="p.jsonl", data=prompts.encode())
    assert submissions_publish(submissions=Submission.objects.filter(pk=submission.pk)) == 1
    hidden = hidden_strings(sample_pack)
    echoed = [r for r in scripted_judge.requests if any(h in request_text(r) for h in hidden)]
    assert echoed, "the judge must have been sent hidden items (it reads them) for this test to mean anything"

    failed = Judgement.objects.filter(submission=submission, status=UnitStatus.FAILED, entry__task__split="test")
    assert failed.exists() and all("item 1" in j.remote_text and j.reason.startswith("invalid reply after") for j in failed)
    stored = [
        json.dumps([j.reason, j.raw, j.rationales, j.details, j.remote_text])
        for j in Judgement.objects.filter(submission=submission, entry__task__split="test")
    ]
    assert [h for h in hidden for s in stored if h in s or json.dumps(h)[1:-1] in s] == []

    _, token = token_create(team=team, name="t")
    urls = [
        f"/submissions/{submission.pk}/",
        f"/submissions/{submission.pk}/breakdown.csv",
        f"/submissions/{submission.pk}/breakdown.jsonl",
        "/",
    ]
    bodies = {u: client.get(u) for u in urls} | {
        "api": client.get(f"/api/v1/submissions/{submission.pk}", HTTP_AUTHORIZATION=f"Bearer {token}")
    }
    for url, response in bodies.items():
        assert response.status_code == 200, url
        text = html.unescape((b"".join(response.streaming_content) if response.streaming else response.content).decode())
        assert [h for h in hidden if h in text or json.dumps(h)[1:-1] in text] == [], url
    dev = sample_pack.tasks.get(task_id="co-s01").prompt_checklist[0]
    assert Judgement.objects.filter(
        submission=submission, entry__task__task_id="co-s01", remote_text__contains=dev
    ).exists()  # dev text stays readable, for staff
