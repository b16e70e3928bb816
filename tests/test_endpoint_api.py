"""The endpoint-prompter API with a team's bearer token: register, list, test call, runs (idempotent), the call log,
cancel, and the prompting progress in the status response. Never the key; other teams' ids are 404."""

from __future__ import annotations

import json

import pytest

from evaluation.models import CallStatus, PromptCall, Status, Submission
from evaluation.workqueue import QueueUnavailable
from submissions import services
from submissions.services import team_create, token_create
from teams.models import Endpoint
from tests.openai_server import scripted_prompt

KEY = "sk-live-APIKEY-c0ffee-42"


def auth(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def post_json(client, url: str, data: dict, token: str, **headers):
    return client.post(url, json.dumps(data), content_type="application/json", **auth(token), **headers)


@pytest.fixture
def local_prompters(settings):
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)
    settings.ATELIER_PROMPTER_MAX_RETRIES = 0
    settings.ATELIER_PROMPTER_TIMEOUT = 10.0


@pytest.fixture
def token(team) -> str:
    return token_create(team=team, name="ci")[1]


@pytest.fixture
def other_token(stranger) -> str:
    return token_create(team=team_create(user=stranger, name="Other Team"), name="x")[1]


@pytest.fixture
def endpoint(team, prompter_server, local_prompters) -> Endpoint:
    return services.endpoint_create(team=team, name="local", base_url=prompter_server.base_url, model="tiny-prompter", api_key=KEY)


def assert_no_secret(response, endpoint: Endpoint) -> None:
    text = response.content.decode()
    assert KEY not in text and endpoint.key_encrypted not in text


def running_run(team, pack, endpoint) -> Submission:
    submission = Submission.objects.create(
        team=team, pack=pack, prompter="p", origin="endpoint", endpoint=endpoint, condition="plain", status=Status.PROMPTING
    )
    for task in pack.tasks.order_by("category", "task_id")[:2]:
        PromptCall.objects.create(submission=submission, task=task, status=CallStatus.PENDING)
    return submission


def test_every_endpoint_api_url_needs_a_token(client, team, endpoint, sample_pack):
    submission = running_run(team, sample_pack, endpoint)
    assert client.get("/api/v1/endpoints").status_code == 401
    assert client.post("/api/v1/endpoints", {"name": "x"}).status_code == 401
    assert client.post(f"/api/v1/endpoints/{endpoint.pk}/test", {}).status_code == 401
    assert client.post(f"/api/v1/endpoints/{endpoint.pk}/runs", {}).status_code == 401
    assert client.get(f"/api/v1/submissions/{submission.pk}/calls").status_code == 401
    response = client.post(f"/api/v1/submissions/{submission.pk}/cancel", **auth("atl_not-a-token"))
    assert response.status_code == 401 and "Bearer" in response.json()["error"]
    submission.refresh_from_db()
    assert submission.status == Status.PROMPTING and Endpoint.objects.count() == 1


def test_register_returns_201_without_the_key_and_the_list_shows_it(client, team, token, prompter_server, local_prompters):
    response = post_json(
        client,
        "/api/v1/endpoints",
        {"name": "api one", "base_url": prompter_server.base_url, "model": "tiny", "api_key": KEY, "temperature": 0.3},
        token,
    )
    assert response.status_code == 201, response.content
    endpoint = Endpoint.objects.get()
    created = response.json()
    assert created["id"] == endpoint.pk and created["name"] == "api one" and created["model"] == "tiny" and created["has_key"] is True
    assert created["host"] == prompter_server.base_url.split("/")[2] and created["parameters"]["temperature"] == 0.3
    assert endpoint.team == team
    assert_no_secret(response, endpoint)
    listed = client.get("/api/v1/endpoints", **auth(token))
    assert [e["id"] for e in listed.json()["endpoints"]] == [endpoint.pk]
    assert_no_secret(listed, endpoint)


def test_register_with_form_fields_and_no_key(client, token, prompter_server, local_prompters):
    response = client.post("/api/v1/endpoints", {"name": "form", "base_url": prompter_server.base_url, "model": "m"}, **auth(token))
    assert response.status_code == 201 and response.json()["has_key"] is False


def test_register_refused_private_address_is_400_naming_the_field(client, token, settings):
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ()
    response = post_json(
        client, "/api/v1/endpoints", {"name": "lan", "base_url": "http://192.168.1.20/v1", "model": "m", "api_key": KEY}, token
    )
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "base_url" and body["error"].startswith("base URL: ") and "private" in body["error"]
    assert KEY not in response.content.decode() and not Endpoint.objects.exists()


def test_register_bad_fields_and_bad_json_are_400(client, token, prompter_server, local_prompters):
    response = post_json(client, "/api/v1/endpoints", {"name": "x", "base_url": prompter_server.base_url}, token)
    assert response.status_code == 400 and response.json()["field"] == "model"
    response = post_json(client, "/api/v1/endpoints", {"name": "x", "base_url": prompter_server.base_url, "model": "m", "top_p": 3}, token)
    assert response.status_code == 400 and response.json()["field"] == "top_p"
    response = client.post("/api/v1/endpoints", "{not json", content_type="application/json", **auth(token))
    assert response.status_code == 400 and response.json()["field"] is None
    assert not Endpoint.objects.exists()


def test_test_call_returns_the_reply_the_request_and_the_numbers(client, token, endpoint, sample_pack, prompter_server):
    response = post_json(client, f"/api/v1/endpoints/{endpoint.pk}/test", {"pack": "sample", "condition": "plain"}, token)
    assert response.status_code == 200, response.content
    result = response.json()
    assert result["task_id"] == "co-s01" and result["status"] == "ok" and result["error"] == ""
    assert result["reply"] == scripted_prompt("Seed packet front", 1)
    assert result["request"][0]["role"] == "system" and "Title: Seed packet front" in result["request"][1]["content"]
    assert result["requests"] == 1 and result["latency_ms"] >= 0 and result["tokens"] == {"prompt": 200, "completion": 25}
    assert len(prompter_server.requests) == 1
    assert_no_secret(response, endpoint)
    unknown = post_json(client, f"/api/v1/endpoints/{endpoint.pk}/test", {"condition": "nope"}, token)
    assert unknown.status_code == 400 and unknown.json()["field"] == "condition"
    assert len(prompter_server.requests) == 1


def test_run_is_202_idempotent_and_status_then_calls_show_the_prompting(client, token, endpoint, sample_pack, prompter_server):
    url = f"/api/v1/endpoints/{endpoint.pk}/runs"
    response = post_json(client, url, {"pack": "sample", "condition": "plain", "samples": 1}, token, HTTP_IDEMPOTENCY_KEY="run-1")
    assert response.status_code == 202, response.content
    first = response.json()
    submission = Submission.objects.get()
    assert first["id"] == submission.pk and first["status_url"].endswith(f"/api/v1/submissions/{submission.pk}")
    made = len(prompter_server.requests)
    again = post_json(client, url, {"pack": "sample", "condition": "plain", "samples": 1}, token, HTTP_IDEMPOTENCY_KEY="run-1")
    assert again.status_code == 202 and again.json()["id"] == submission.pk
    assert Submission.objects.count() == 1 and len(prompter_server.requests) == made
    other = post_json(client, url, {"pack": "sample", "condition": "guided"}, token, HTTP_IDEMPOTENCY_KEY="run-1")
    assert other.status_code == 422 and Submission.objects.count() == 1
    status = client.get(first["status_url"], **auth(token)).json()
    calls = PromptCall.objects.filter(submission=submission)
    assert status["origin"] == "endpoint" and status["condition"] == "plain"
    prompting = status["prompting"]
    assert prompting["total"] == calls.count() and prompting["ok"] == calls.filter(status=CallStatus.OK).count() == made
    assert isinstance(prompting["as_of"], str)
    log = client.get(f"/api/v1/submissions/{submission.pk}/calls", **auth(token))
    assert log.status_code == 200
    rows = log.json()["calls"]
    assert len(rows) == calls.count() and {r["text"] for r in rows} >= {scripted_prompt("Seed packet front", 1)}
    assert all(isinstance(r["request"], list) for r in rows if r["status"] == "ok")
    assert_no_secret(log, endpoint)


def test_run_with_bad_fields_is_400(client, token, endpoint, sample_pack):
    url = f"/api/v1/endpoints/{endpoint.pk}/runs"
    assert post_json(client, url, {"rounds": 2}, token).json()["field"] == "feedback_backend"
    assert post_json(client, url, {"temperatures": [0.2, "hot"]}, token).json()["field"] == "temperatures"
    response = post_json(client, url, {"pack": "no-such-pack"}, token)
    assert response.status_code == 400 and response.json()["field"] == "pack"
    assert not Submission.objects.exists()


def test_run_when_the_queue_is_down_is_503_with_retry_after(client, token, endpoint, sample_pack, monkeypatch):
    def down(*args):
        raise QueueUnavailable("redis is down")

    monkeypatch.setattr(services, "enqueue", down)
    response = post_json(client, f"/api/v1/endpoints/{endpoint.pk}/runs", {"pack": "sample"}, token, HTTP_IDEMPOTENCY_KEY="k")
    assert response.status_code == 503 and response["Retry-After"] and not Submission.objects.exists()


def test_upload_status_has_no_prompting(client, token, team, sample_pack):
    submission = Submission.objects.create(team=team, pack=sample_pack, prompter="p", status=Status.QUEUED)
    assert "prompting" not in client.get(f"/api/v1/submissions/{submission.pk}", **auth(token)).json()


def test_cancel_stops_a_run_then_answers_409(client, token, team, endpoint, sample_pack):
    submission = running_run(team, sample_pack, endpoint)
    response = client.post(f"/api/v1/submissions/{submission.pk}/cancel", **auth(token))
    assert response.status_code == 200 and response.json() == {"id": submission.pk, "cancelled": True, "status": "cancelled"}
    assert set(PromptCall.objects.filter(submission=submission).values_list("status", flat=True)) == {CallStatus.CANCELLED}
    assert client.post(f"/api/v1/submissions/{submission.pk}/cancel", **auth(token)).status_code == 409


def test_other_teams_endpoint_and_submission_ids_are_404(client, other_token, team, endpoint, sample_pack, prompter_server):
    submission = running_run(team, sample_pack, endpoint)
    assert post_json(client, f"/api/v1/endpoints/{endpoint.pk}/test", {}, other_token).status_code == 404
    assert post_json(client, f"/api/v1/endpoints/{endpoint.pk}/runs", {"pack": "sample"}, other_token).status_code == 404
    assert client.get(f"/api/v1/submissions/{submission.pk}/calls", **auth(other_token)).status_code == 404
    assert client.post(f"/api/v1/submissions/{submission.pk}/cancel", **auth(other_token)).status_code == 404
    assert client.get(f"/api/v1/submissions/{submission.pk}", **auth(other_token)).status_code == 404
    assert client.get("/api/v1/endpoints", **auth(other_token)).json() == {"endpoints": []}
    submission.refresh_from_db()
    assert submission.status == Status.PROMPTING and Submission.objects.count() == 1 and prompter_server.requests == []


def test_a_run_takes_the_judge_route_where_the_site_asks_and_refuses_one_it_does_not_offer(client, token, endpoint, sample_pack, settings):
    url = f"/api/v1/endpoints/{endpoint.pk}/runs"
    settings.ATELIER_JUDGE_BATCH = "off"
    refused = post_json(client, url, {"pack": "sample", "judge_by_batch": True}, token)
    assert refused.status_code == 400 and refused.json()["field"] == "judge_by_batch", refused.content
    assert post_json(client, url, {"pack": "sample", "judge_by_batch": "perhaps"}, token).json()["field"] == "judge_by_batch"
    assert not Submission.objects.exists()
    settings.ATELIER_JUDGE_BATCH = "ask"
    started = post_json(client, url, {"pack": "sample", "judge_by_batch": True}, token)
    assert started.status_code == 202, started.content
    assert started.json()["judge_route"] == "batch" == Submission.objects.get().judge_route
