"""What third-party HTTP tools expect of the API: JSON errors with their status and headers for every route under
/api/ (405 with Allow, 404, 414 for an over-long address), HEAD wherever GET is served, no CSRF page for a
token-authenticated API, strict query parameters and header lengths, one status (429 with Retry-After) for the daily
cap on every route that creates a submission, answers gzipped for clients that accept it, and /api/v1/boards
validated like the board page (ETag, Last-Modified, 304 with its Cache-Control), paged, and cached only when the
cache is on."""

from __future__ import annotations

import functools
import gzip
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
    described = strict.get("/api/v1/openapi.json").json()["paths"]
    ids = {"{submission_id}": "1", "{prompter_id}": "1", "{fmt}": "csv"}
    for path in (functools.reduce(lambda p, i: p.replace(*i), ids.items(), p) for p, o in described.items() if "get" in o):
        assert strict.head(path, **auth(token)).status_code in (200, 400, 404), path  # never 405: HEAD wherever GET is
    assert strict.head("/api/v1/endpoints", **auth(token)).status_code == 200


def test_an_over_long_address_is_a_json_414_before_any_view(db, client):
    url = "/api/v1/boards?pack="
    assert client.get(url + "x" * (4096 - len(url))).status_code == 404  # at the limit: the view answers
    refused = client.get(url + "x" * (4097 - len(url)))
    assert refused.status_code == 414 and refused.json()["error"] == "request URL too long: 4,097 bytes of path and query; at most 4,096"
    assert client.get("/?q=" + "x" * 5000).status_code == 200  # pages are not the API's: no such limit


def test_answers_are_gzipped_for_clients_that_accept_it(db, client, token):
    plain = client.get("/api/v1/openapi.json")
    packed = client.get("/api/v1/openapi.json", HTTP_ACCEPT_ENCODING="gzip, br")
    assert "Content-Encoding" not in plain and packed["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed["Vary"]
    assert json.loads(gzip.decompress(packed.content)) == plain.json() and len(packed.content) < len(plain.content) / 3
    missing = client.get("/api/v1/submissions/1", HTTP_ACCEPT_ENCODING="gzip", **auth(token))
    assert missing.json()["error"].startswith("not found") and "Content-Encoding" not in missing  # under 200 bytes: not worth it


def test_boards_is_validated_and_strict(db, client, team, sample_pack, example_prompts):
    made = submission_create(team=team, pack=sample_pack, prompter="first", filename="p.jsonl", data=example_prompts)
    submissions_publish(submissions=Submission.objects.filter(pk=made.pk))
    url = f"/api/v1/boards?pack={sample_pack.name}"
    first = client.get(url)
    assert first.status_code == 200 and first["ETag"] and first["Last-Modified"] and "public" in first["Cache-Control"]
    unchanged = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert unchanged.status_code == 304 and unchanged["Cache-Control"] == first["Cache-Control"] == "public, max-age=30"
    assert unchanged["Vary"] == "Accept-Encoding"  # as the 200 it stands for (gzip adds it to bodies only)
    packed = client.get(url, HTTP_ACCEPT_ENCODING="gzip")  # gzipped once per cached answer: the same JSON, a weak ETag
    assert packed["Content-Encoding"] == "gzip" and json.loads(gzip.decompress(packed.content)) == first.json()
    assert packed["ETag"] == "W/" + first["ETag"] and client.get(url, HTTP_IF_NONE_MATCH=packed["ETag"]).status_code == 304
    assert client.get(url, HTTP_IF_MODIFIED_SINCE=first["Last-Modified"]).status_code == 304
    again = submission_create(team=team, pack=sample_pack, prompter="second", filename="p.jsonl", data=example_prompts)
    submissions_publish(submissions=Submission.objects.filter(pk=again.pk))
    changed = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"] and len(changed.json()["rows"]) == 2
    bad = client.get(url + "&sort=overall")
    assert bad.status_code == 400 and "unknown query parameter(s) sort" in bad.json()["error"]

    # pages: `next` and the Link header name the following one, until the last; past it, 404
    one = client.get(url + "&per_page=1")
    next_url = f"http://testserver/api/v1/boards?pack={sample_pack.name}&per_page=1&page=2"
    assert (one.json()["count"], one.json()["pages"], one.json()["next"]) == (2, 2, next_url) and one["Link"] == f'<{next_url}>; rel="next"'
    two = client.get(next_url)
    assert two.json()["next"] is None and "Link" not in two and two.json()["page"] == 2
    assert {r["prompter"] for r in one.json()["rows"] + two.json()["rows"]} == {"first", "second"}
    assert client.get(url + "&per_page=1&page=3").json() == {"error": "no page 3: the board has 2 page(s) of 1 rows"}
    for query in ("per_page=501", "per_page=0", "page=x"):
        assert client.get(f"{url}&{query}").status_code == 400, query


def test_a_board_cache_of_0_seconds_is_no_cache(db, client, team, sample_pack, example_prompts, settings):
    made = submission_create(team=team, pack=sample_pack, prompter="first", filename="p.jsonl", data=example_prompts)
    submissions_publish(submissions=Submission.objects.filter(pk=made.pk))
    url = f"/api/v1/boards?pack={sample_pack.name}"
    assert client.get(url).json()["rows"][0]["team"] == "Pixel Poets"  # kept in the cache (300 s by default)
    team.__class__.objects.filter(pk=team.pk).update(name="Renamed")  # what the boards' version does not cover
    assert client.get(url).json()["rows"][0]["team"] == "Pixel Poets"
    settings.ATELIER_BOARD_CACHE_SECONDS = 0
    assert client.get(url).json()["rows"][0]["team"] == "Renamed"


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
