"""The JSON API: bearer tokens (stored hashed), submit, status with progress counts."""

from __future__ import annotations

import json

from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.models import Submission
from submissions.services import team_create, token_create
from teams.models import ApiToken


def auth(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_token_is_stored_only_as_digest(team):
    row, token = token_create(team=team, name="ci")
    assert token.startswith("atl_") and len(token) > 40
    assert row.digest == ApiToken.digest_of(token) and token not in (row.digest, row.prefix)


def test_submit_without_or_with_bad_token_is_401(client, sample_pack):
    assert client.post("/api/v1/submissions", {}).status_code == 401
    response = client.post("/api/v1/submissions", {}, **auth("atl_not-a-token"))
    assert response.status_code == 401 and "Bearer" in response.json()["error"]


def test_revoked_token_is_refused(client, team, sample_pack):
    row, token = token_create(team=team, name="old")
    ApiToken.objects.filter(pk=row.pk).update(revoked=True)
    assert client.get("/api/v1/submissions/1", **auth(token)).status_code == 401


def test_submit_returns_id_and_status_url_then_progress(client, team, sample_pack, example_prompts):
    _, token = token_create(team=team, name="ci")
    file = SimpleUploadedFile("prompts.jsonl", example_prompts)
    response = client.post("/api/v1/submissions", {"file": file, "prompter": "my-model", "pack": "sample"}, **auth(token))
    assert response.status_code == 201, response.content
    body = response.json()
    submission = Submission.objects.get(pk=body["id"])
    assert body["status"] == "done"  # the answer says the state as it is, not the state before the jobs ran
    assert body["status_url"].endswith(f"/api/v1/submissions/{submission.pk}")
    status = client.get(body["status_url"], **auth(token)).json()
    # In-process queue: the whole evaluation ran before the upload returned.
    assert status["status"] == "done", status
    renders = status["progress"]["renders"]
    assert renders["total"] == renders["done"] == renders["ok"] > 0
    assert status["progress"]["judgements"]["pending"] == 0
    overall = status["figures"]["overall:overall"]
    assert overall["scale"] == "score_0_100" and 0 <= overall["value"] <= 100


def test_submit_bad_file_is_400_with_line_errors_and_nothing_stored(client, team, sample_pack):
    _, token = token_create(team=team, name="ci")
    file = SimpleUploadedFile("p.jsonl", b'{"task_id": "oe-s01", "prompt": "ok"}\n{"task_id": "nope", "prompt": "x"}\n')
    response = client.post("/api/v1/submissions", {"file": file, "prompter": "m"}, **auth(token))
    assert response.status_code == 400
    assert response.json()["errors"] == ["line 2: unknown task_id 'nope' (not in this pack)"]
    assert Submission.objects.count() == 0


def test_submit_missing_fields_is_400(client, team, sample_pack):
    _, token = token_create(team=team, name="ci")
    response = client.post("/api/v1/submissions", {"prompter": "m"}, **auth(token))
    assert response.status_code == 400 and "file" in response.json()["error"]


def test_status_of_another_teams_submission_is_404(client, team, stranger, sample_pack, example_prompts):
    _, token = token_create(team=team, name="ci")
    file = SimpleUploadedFile("prompts.jsonl", example_prompts)
    submission_id = client.post("/api/v1/submissions", {"file": file, "prompter": "m"}, **auth(token)).json()["id"]
    _, other_token = token_create(team=team_create(user=stranger, name="Other"), name="x")
    assert client.get(f"/api/v1/submissions/{submission_id}", **auth(other_token)).status_code == 404
    assert json.loads(client.get(f"/api/v1/submissions/{submission_id}", **auth(token)).content)["id"] == submission_id
