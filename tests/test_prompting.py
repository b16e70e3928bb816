"""Endpoint runs end to end: the real openai client calls a local scripted prompter server over HTTP,
the prompts travel the render → judge → score path, feedback rounds make trajectories."""

from __future__ import annotations

import base64
import logging
import time

import pytest

from evaluation.models import CallStatus, PromptCall, Status, Submission
from evaluation.trajectories import prompting_progress, round_scores, submission_steerability, trajectories
from submissions.services import endpoint_create, endpoint_run_create
from tasks.selectors import prompter_title
from teams.models import Endpoint
from tests.openai_server import Reply, image_parts, prompter_responder, request_text, scripted_prompt

SECRET = "sk-test-prompter-key-DO-NOT-LEAK-4242"


def eligible(pack):
    """The tasks an endpoint run plans: every task but an IM task without a target image."""
    return [t for t in pack.tasks.order_by("category", "task_id") if t.category != "IM" or t.target_image]


@pytest.fixture
def prompter(settings, prompter_server, scripted_judge):
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)
    settings.ATELIER_PROMPTER_MAX_RETRIES = 0
    settings.ATELIER_PROMPTER_TIMEOUT = 5.0
    return prompter_server


@pytest.fixture
def endpoint(prompter, team) -> Endpoint:
    return endpoint_create(
        team=team, name="scripted", base_url=prompter.base_url, model="scripted-prompter", api_key=SECRET, max_in_flight=4
    )


def _run(team, endpoint, pack, **options) -> Submission:
    submission = endpoint_run_create(team=team, endpoint=endpoint, pack=pack, **options)
    submission.refresh_from_db()
    return submission


def _calls_of(submission, task_id):
    return list(PromptCall.objects.filter(submission=submission, task__task_id=task_id).order_by("sample_index", "round"))


@pytest.mark.django_db(transaction=True)
def test_single_turn_run_prompts_every_task_and_sample_then_scores(endpoint, prompter, team, sample_pack, caplog):
    caplog.set_level(logging.DEBUG)
    endpoint.seed = 7
    endpoint.save()
    submission = _run(team, endpoint, sample_pack, samples=2, temperatures=[0.2, 0.9])
    assert submission.status == Status.DONE, submission.error
    tasks = eligible(sample_pack)
    assert submission.prompting["left_out"] == ["im-s02"]  # no target image: a prompter cannot see the task
    assert submission.entries.count() == len(tasks) * 2
    for entry in submission.entries.select_related("task"):
        assert entry.text == scripted_prompt(prompter_title(entry.task), 1)
    assert submission.figures.filter(scope="overall").exclude(value=None).exists()
    assert len(prompter.requests) == len(tasks) * 2
    assert sorted({r["temperature"] for r in prompter.requests}) == [0.2, 0.9]
    assert {(r["temperature"], r["seed"]) for r in prompter.requests} == {(0.2, 7), (0.9, 8)}  # sample k: its temperature, seed 7 + k
    assert set(PromptCall.objects.filter(submission=submission).values_list("sample_index", "temperature", "seed")) == {
        (0, 0.2, 7),
        (1, 0.9, 8),
    }
    assert {r["model"] for r in prompter.requests} == {"scripted-prompter"}
    for task in tasks:
        sent = [r for r in prompter.requests if f"Title: {prompter_title(task)}" in request_text(r)]
        assert len(sent) == 2
        text = request_text(sent[0])
        for value in (task.constraints or {}).values():  # CO: every constraint goes with the brief
            assert value in text
        for item in (*task.prompt_checklist, *task.image_checklist):  # checklists never leave the server
            assert item not in text
        if task.category == "IM" and task.target_image:
            with task.target_image.open("rb") as handle:
                target = handle.read()
            assert image_parts(sent[0]) == ["data:image/png;base64," + base64.b64encode(target).decode()]
        else:
            assert image_parts(sent[0]) == []
    calls = PromptCall.objects.filter(submission=submission)
    assert set(calls.values_list("status", flat=True)) == {CallStatus.OK}
    assert all(c.latency is not None and c.requests == 1 and c.prompt_tokens == 200 for c in calls)
    progress = prompting_progress(submission)
    assert progress["called"] == progress["ok"] == len(tasks) * 2 and progress["open"] == 0
    every_log = "\n".join(r.getMessage() for r in caplog.records) + str(list(calls.values_list("request", "reply", "error")))
    assert SECRET not in every_log and SECRET not in str(Endpoint.objects.values_list("key_encrypted", flat=True))


@pytest.mark.django_db(transaction=True)
def test_three_feedback_rounds_make_trajectories_and_the_last_round_is_ranked(
    endpoint, prompter, team, sample_pack, owner_client, stranger
):
    submission = _run(team, endpoint, sample_pack, rounds=3, feedback_backend="smoke-sd", condition="guided")
    assert submission.status == Status.DONE, submission.error
    tasks = {t.task_id: t for t in eligible(sample_pack)}
    assert len(prompter.requests) == 3 * len(tasks)
    for entry in submission.entries.select_related("task"):
        assert entry.text == scripted_prompt(prompter_title(entry.task), 3)  # the final round is ranked
    im = next(t for t in tasks.values() if t.category == "IM" and t.target_image)
    rounds = _calls_of(submission, im.task_id)
    assert [c.round for c in rounds] == [0, 1, 2] and all(c.feedback_status == "ok" for c in rounds)
    assert all(0 <= c.feedback_score <= 100 for c in rounds)
    third = next(
        r
        for r in prompter.requests
        if f"Title: {prompter_title(im)}" in request_text(r) and sum(m["role"] == "assistant" for m in r["messages"]) == 2
    )
    assistant = [m["content"] for m in third["messages"] if m["role"] == "assistant"]
    assert assistant == [scripted_prompt(prompter_title(im), 1), scripted_prompt(prompter_title(im), 2)]
    assert len(image_parts(third)) == 2  # the target, and only the latest feedback image
    assert f"{rounds[1].feedback_score:.0f}/100 for similarity to the target" in request_text(third)
    co = next(t for t in tasks.values() if t.category == "CO")
    co_second = next(
        r
        for r in prompter.requests
        if f"Title: {prompter_title(co)}" in request_text(r) and any(m["role"] == "assistant" for m in r["messages"])
    )
    assert "checks for this request" in request_text(co_second)
    rows = trajectories(submission)
    assert len(rows) == len(tasks) and all(row["ranked"] == 2 and row["best"] is not None for row in rows)
    by_round = round_scores(submission)
    assert {(r["category"], r["round"]) for r in by_round} == {(c, n) for c in ("OE", "CO", "IM") for n in (1, 2, 3)}
    # one or two scored tasks a category: each round's interval over tasks spans nearly the whole scale, shown, not a bare mean
    assert all(1 <= r["tasks"] <= 2 and r["low"] <= r["mean"] <= r["high"] and r["high"] - r["low"] > 85 for r in by_round), by_round
    image_url = rounds[0].feedback_image.url  # the team sees its feedback images; nobody else does (unpublished)
    assert owner_client.get(image_url).status_code == 200
    owner_client.force_login(stranger)
    assert owner_client.get(image_url).status_code == 404
    steer = {row["category"]: row for row in submission_steerability(submission)}
    assert set(steer) == {"OE", "CO", "IM"} and all(row["n_trajectories"] >= 1 for row in steer.values())
    # One sample on two tasks per category: no figure (too few trajectories, or none reached 81-100), and the reason.
    assert all(row["status"] in ("too_few", "never_reached") and row["expected_rounds"] is None for row in steer.values())


def _by_title(bad: dict[str, Reply], only_temperature: float | None = None):
    def respond(request_json):
        text = request_text(request_json)
        for title, reply in bad.items():
            if f"Title: {title}" in text and only_temperature in (None, request_json.get("temperature")):
                return reply
        return prompter_responder(request_json)

    return respond


@pytest.mark.django_db(transaction=True)
def test_refusals_errors_and_bad_replies_are_recorded_as_missing_never_as_zero(
    endpoint, prompter, team, sample_pack, settings, owner_client
):
    tasks = eligible(sample_pack)
    prompter.default = _by_title(
        {
            prompter_title(tasks[0]): Reply(refusal="I can't help with that request."),
            prompter_title(tasks[1]): Reply(status=500, content="scripted outage"),
            prompter_title(tasks[2]): Reply(raw_body="{not json at all"),
            prompter_title(tasks[3]): Reply(content="   "),
            prompter_title(tasks[4]): Reply(content="x" * (settings.ATELIER_MAX_PROMPT_CHARS + 1)),
        },
        only_temperature=0.1,
    )
    submission = _run(team, endpoint, sample_pack, samples=2, temperatures=[0.1, 0.7])
    assert submission.status == Status.INCOMPLETE and "prompting 50% missing (5 of 10 task samples" in submission.error
    assert sorted(submission.entries.values_list("sample_index", flat=True)) == [1] * 5
    errors = {
        c.task.task_id: (c.status, c.error) for c in PromptCall.objects.filter(submission=submission, sample_index=0).select_related("task")
    }
    assert errors[tasks[0].task_id] == ("refused", "the model refused")
    assert errors[tasks[1].task_id][0] == "failed" and errors[tasks[1].task_id][1].startswith("HTTP 500")
    assert errors[tasks[2].task_id][0] == "failed" and errors[tasks[2].task_id][1] == "unreadable response (JSONDecodeError)"
    assert errors[tasks[3].task_id] == ("failed", "empty reply")
    assert errors[tasks[4].task_id][0] == "failed" and "prompts are limited to" in errors[tasks[4].task_id][1]
    assert set(PromptCall.objects.filter(submission=submission, sample_index=1).values_list("status", flat=True)) == {"ok"}
    overall = submission.figures.get(scope="overall")
    assert overall.n == 5  # five task samples are scored; the five missing ones are not in the mean as zeros
    assert (prompting_progress(submission)["missing"], prompting_progress(submission)["planned"]) == (5, 10)
    page = owner_client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "Missing: 5 of 10 task samples got no usable prompt" in page


@pytest.mark.django_db(transaction=True)
def test_a_run_where_no_call_answers_fails_with_the_first_reason(endpoint, prompter, team, sample_pack):
    prompter.default = lambda request_json: Reply(refusal="no")
    submission = _run(team, endpoint, sample_pack)
    assert submission.status == Status.FAILED and submission.error == "the endpoint gave no usable prompt: the model refused"


@pytest.mark.django_db(transaction=True)
def test_429_is_retried_after_the_time_the_server_asks_for(endpoint, prompter, team, sample_pack, settings):
    settings.ATELIER_PROMPTER_MAX_RETRIES = 2
    task = eligible(sample_pack)[0]
    times: list[float] = []

    def respond(request_json):
        if f"Title: {prompter_title(task)}" in request_text(request_json):
            times.append(time.monotonic())
            if len(times) == 1:
                return Reply(status=429, content="slow down", headers={"Retry-After": "1"})
        return prompter_responder(request_json)

    prompter.default = respond
    submission = _run(team, endpoint, sample_pack)
    assert submission.status == Status.DONE, submission.error
    call = _calls_of(submission, task.task_id)[0]
    assert call.status == "ok" and call.requests == 2 and len(times) == 2
    assert times[1] - times[0] >= 0.95


@pytest.mark.django_db(transaction=True)
def test_a_call_past_the_timeout_fails_with_the_reason(endpoint, prompter, team, sample_pack, settings):
    settings.ATELIER_PROMPTER_TIMEOUT = 0.5
    task = eligible(sample_pack)[0]
    prompter.default = _by_title({prompter_title(task): Reply(content="too late", delay=2.0)})
    submission = _run(team, endpoint, sample_pack)
    call = _calls_of(submission, task.task_id)[0]
    assert call.status == "failed" and call.error == "timed out after 0.5 s"
    assert submission.status == Status.INCOMPLETE and submission.entries.count() == 4


@pytest.mark.django_db(transaction=True)
def test_the_call_budget_stops_calls_and_says_so(endpoint, prompter, team, sample_pack):
    endpoint.max_in_flight = 1
    endpoint.save()
    submission = _run(team, endpoint, sample_pack, call_budget=2)
    statuses = list(PromptCall.objects.filter(submission=submission).values_list("status", "error"))
    assert len(prompter.requests) == 2
    assert sum(s == "ok" for s, _ in statuses) == 2
    assert {e for s, e in statuses if s == "failed"} == {"the run's call budget (2 requests) is spent"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("limit", [1, 3])
def test_calls_in_flight_never_exceed_the_endpoint_limit(endpoint, prompter, team, sample_pack, limit):
    endpoint.max_in_flight = limit
    endpoint.save()
    prompter.default = lambda request_json: Reply(content=prompter_responder(request_json).content, delay=0.3)
    _run(team, endpoint, sample_pack)
    assert prompter.max_in_flight_seen == limit


@pytest.mark.django_db(transaction=True)
def test_an_address_refused_at_call_time_is_a_failed_call_naming_the_guard(endpoint, prompter, team, sample_pack, settings):
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ()  # the deployer withdrew the allow-list after registration
    submission = _run(team, endpoint, sample_pack)
    assert submission.status == Status.FAILED and prompter.requests == []
    assert "refused by the address guard" in submission.error and "loopback" in submission.error


@pytest.mark.django_db(transaction=True)
def test_the_token_budget_stops_calls_and_says_so(endpoint, prompter, team, sample_pack):
    endpoint.max_in_flight = 1
    endpoint.save()
    submission = _run(team, endpoint, sample_pack, token_budget=450)  # the scripted prompter reports 200 + 25 tokens a call
    calls = PromptCall.objects.filter(submission=submission)
    assert len(prompter.requests) == 2 and calls.filter(status="ok").count() == 2
    assert set(calls.exclude(status="ok").values_list("status", "error")) == {("failed", "the run's token budget (450 tokens) is spent")}
    assert submission.prompting["budget"]["tokens"] == 450


@pytest.mark.django_db(transaction=True)
def test_cancelling_while_calls_are_in_flight_stops_the_rest_and_drops_the_late_reply(endpoint, prompter, team, sample_pack, monkeypatch):
    """The owner cancels while the run's window has a call in flight: no further call is made, the call in flight
    finishes but its reply is dropped (what it spent is still counted), and the run ends cancelled."""
    from evaluation import prompting
    from evaluation.units import submission_cancel

    endpoint.max_in_flight = 2
    endpoint.save()
    answered = []

    def respond(request_json):  # the first request answers at once, the second one late: it is in flight at the cancel
        answered.append(request_json)
        reply = prompter_responder(request_json)
        return reply if len(answered) == 1 else Reply(content=reply.content, usage=reply.usage, delay=0.5)

    prompter.default = respond
    finish = prompting._finish

    def finish_then_cancel(call, request, outcome):
        finish(call, request, outcome)
        submission_cancel(call.submission_id, "cancelled by owner")  # as the page's Cancel button does, mid-window

    monkeypatch.setattr(prompting, "_finish", finish_then_cancel)
    submission = _run(team, endpoint, sample_pack)
    assert submission.status == Status.CANCELLED and submission.error == "cancelled by owner"
    calls = PromptCall.objects.filter(submission=submission)
    assert len(prompter.requests) == 2  # the two calls claimed before the cancel; none after it
    assert list(calls.filter(status=CallStatus.OK).values_list("requests", flat=True)) == [1]
    late = calls.get(requests=1, status=CallStatus.CANCELLED)  # the call in flight: made, counted, its reply dropped
    assert late.text == "" and late.reply == "" and late.error == "cancelled by owner"
    assert calls.filter(status=CallStatus.CANCELLED, requests=0).count() == calls.count() - 2
    assert not calls.filter(status__in=[CallStatus.PENDING, CallStatus.RUNNING]).exists()
    assert submission.entries.count() == 1  # the answered call's trajectory ended before the cancel; nothing is rendered
