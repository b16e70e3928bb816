"""What third-party HTTP tools expect of the API: JSON errors with their status and headers for every route under
/api/ (405 with Allow, 404), HEAD wherever GET is served, no CSRF page for a token-authenticated API, strict query
parameters and header lengths, one status (429 with Retry-After) for the daily cap on every route that creates a
submission, and /api/v1/boards validated like the board page (ETag, Last-Modified, 304)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from evaluation.models import Submission
from submissions import services
from submissions.services import submission_create, submissions_publish, token_create

UPLOAD = b'{"task_id": "oe-s01", "prompt": "a red sun over a market"}\n'


@pytest.fixture
def token(team) -> str:
    return token_create(team=team, name="conformance")[1]


def auth(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def upload(client, token: str, **headers):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post("/api/v1/submissions", {"file": SimpleUploadedFile("p.jsonl", UPLOAD), "prompter": "p"}, **auth(token), **headers)


def test_wrong_methods_unknown_routes_and_head(db, team, token):
    strict = Client(enforce_csrf_checks=True)  # as a third-party client: no CSRF cookie, no token in a form
    wrong = strict.post("/api/v1/boards")
    assert wrong.status_code == 405 and wrong["Allow"] == "GET, HEAD"
    assert wrong.json() == {"error": "method not allowed on this route", "allowed": ["GET", "HEAD"]}
    assert strict.delete("/api/v1/openapi.json", **auth(token)).status_code == 405
    assert strict.put("/api/v1/submissions/1", **auth(token)).json()["allowed"] == ["GET", "HEAD"]
    missing = strict.get("/api/v1/no-such-route")
    assert missing.status_code == 404 and missing.json()["error"].startswith("not found")
    assert strict.head("/api/v1/openapi.json").status_code == 200 and strict.head("/").status_code == 200
    assert strict.head("/tasks/").status_code == 200


def test_boards_is_validated_and_strict(db, client, team, sample_pack, example_prompts):
    made = submission_create(team=team, pack=sample_pack, prompter="first", filename="p.jsonl", data=example_prompts)
    submissions_publish(submissions=Submission.objects.filter(pk=made.pk))
    url = f"/api/v1/boards?pack={sample_pack.name}"
    first = client.get(url)
    assert first.status_code == 200 and first["ETag"] and first["Last-Modified"] and "public" in first["Cache-Control"]
    assert client.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    assert client.get(url, HTTP_IF_MODIFIED_SINCE=first["Last-Modified"]).status_code == 304
    again = submission_create(team=team, pack=sample_pack, prompter="second", filename="p.jsonl", data=example_prompts)
    submissions_publish(submissions=Submission.objects.filter(pk=again.pk))
    changed = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"] and len(changed.json()["rows"]) == 2
    bad = client.get(url + "&sort=overall")
    assert bad.status_code == 400 and "unknown query parameter(s) sort" in bad.json()["error"]


def test_headers_and_parameters_are_checked_not_cut(db, client, team, token, sample_pack):
    long = upload(client, token, HTTP_IDEMPOTENCY_KEY="k" * 201)
    assert long.status_code == 422 and long.json()["field"] == "Idempotency-Key" and "201 characters" in long.json()["error"]
    assert not Submission.objects.exists()
    accepted = upload(client, token, HTTP_IDEMPOTENCY_KEY="k" * 200)
    assert accepted.status_code == 201
    calls = client.get(f"/api/v1/submissions/{accepted.json()['id']}/calls?offset=null", **auth(token))
    assert calls.status_code == 400 and calls.json()["field"] == "offset"


def test_the_daily_cap_is_429_with_retry_after_on_uploads_and_runs(db, client, team, token, sample_pack, settings, prompter_server):
    settings.ATELIER_DAILY_SUBMISSIONS = 1
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)
    assert upload(client, token).status_code == 201
    capped = upload(client, token)
    assert capped.status_code == 429 and 0 < int(capped["Retry-After"]) <= 24 * 3600 and "the cap" in capped.json()["error"]
    endpoint = services.endpoint_create(team=team, name="local", base_url=prompter_server.base_url, model="m", api_key="sk-x")
    run = client.post(
        f"/api/v1/endpoints/{endpoint.pk}/runs", json.dumps({"pack": sample_pack.name}), content_type="application/json", **auth(token)
    )
    assert run.status_code == 429 and int(run["Retry-After"]) > 0 and Submission.objects.count() == 1
