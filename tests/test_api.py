"""The JSON API: bearer tokens (stored hashed), submit, status with progress counts, each figure with its 95 % interval
or the reason it has none."""

from __future__ import annotations

import json

from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.models import Figure, Status, Submission
from evaluation.selectors import DETAIL_SCOPES, submission_figures
from submissions.api import _figure
from submissions.services import submission_create, team_create, token_create
from teams.models import ApiToken
from tests.openai_server import Reply


def auth(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_token_is_stored_only_as_digest(team):
    row, token = token_create(team=team, name="ci")
    assert token.startswith("atl_") and len(token) > 40
    assert row.digest == ApiToken.digest_of(token) and token not in (row.digest, row.prefix)


def test_submit_without_or_with_bad_token_is_401_with_a_bearer_challenge(client, sample_pack):
    missing = client.post("/api/v1/submissions", {})
    assert missing.status_code == 401 and missing["WWW-Authenticate"] == 'Bearer realm="AtelierEval API"'  # no error code (RFC 6750 3.1)
    response = client.post("/api/v1/submissions", {}, **auth("atl_not-a-token"))
    assert response.status_code == 401 and "Bearer" in response.json()["error"]
    assert response["WWW-Authenticate"].startswith('Bearer realm="AtelierEval API", error="invalid_token", error_description="')


def test_requests_without_a_token_are_never_counted_or_locked_out(client, team):
    """A shared address (a NAT, a CI provider) sends anonymous requests: none counts, none is refused with 429."""
    good = token_create(team=team, name="ci")[1]
    statuses = [client.get("/api/v1/submissions/1", **headers).status_code for headers in [{}] * 20 + [auth("")] * 5]
    assert statuses == [401] * 25, statuses
    assert client.get("/api/v1/submissions/1", **auth(good)).status_code == 404  # the team's token: not locked out
    assert client.get("/api/v1/submissions/1", **auth("atl_wrong")).status_code == 401  # nothing was counted


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
    assert 0 <= overall["low"] <= overall["high"] <= 100 and overall["interval_note"] is None


def test_every_figure_carries_its_stored_interval_on_its_own_scale(client, team, sample_pack, example_prompts):
    _, token = token_create(team=team, name="ci")
    file = SimpleUploadedFile("prompts.jsonl", example_prompts)
    body = client.post("/api/v1/submissions", {"file": file, "prompter": "m", "pack": "sample"}, **auth(token)).json()
    figures = body["figures"]
    stored = Figure.objects.filter(submission_id=body["id"]).exclude(scope__in=DETAIL_SCOPES)
    assert len(figures) == stored.count() >= 5 and {f.scale for f in stored} > {"score_0_100"}  # checklist rates on 0-1 too
    for figure in stored:
        shown = figures[f"{figure.scope}:{figure.key}"]
        assert figure.ci_low is not None and (shown["low"], shown["high"]) == (figure.ci_low, figure.ci_high), figure.key
        assert shown["interval_note"] is None and shown["scale"] == figure.scale
    rate = figures["skill:prompt_objective"]  # a share: its interval is on 0-1, as its value is
    assert rate["scale"] == "rate_0_1" and 0 <= rate["low"] <= rate["high"] <= 1 and rate["high"] - rate["low"] > 0.01

    # a figure stored without an interval (as an older scoring left some): the answer says so, and rescoring is the cure
    stored.filter(scope="overall").update(ci_low=None, ci_high=None)
    overall = client.get(f"/api/v1/submissions/{body['id']}", **auth(token)).json()["figures"]["overall:overall"]
    assert overall["value"] is not None and overall["low"] is None and overall["high"] is None
    assert overall["interval_note"] == "no interval: computed by an older version of the scoring, which gave none here (a rescore adds one)"

    # the detail figures (parts, category x backend, tasks) never get one; the API leaves them out, _figure still says why
    task = submission_figures(Submission.objects.get(pk=body["id"]), every=True)["task"][0]
    shown = _figure(task).answer()
    assert shown["interval_note"] == "no interval: none is computed for this kind of figure" and shown["low"] is None


# One IM and one OE prompt; every model call fails, so only IM's target similarity (a metric, no call) is scored.
ONE_IM_ONE_OE = b'{"task_id": "im-s01", "prompt": "A red sun over three blue hills"}\n{"task_id": "oe-s01", "prompt": "Gouache bread loaves in warm light"}\n'


def test_a_figure_without_an_interval_says_why(client, team, sample_pack, scripted_judge, settings):
    settings.ATELIER_MAX_MISSING_RATE = 1.0  # the run finishes done: nothing is withheld, the figures stand as computed
    scripted_judge.default = lambda request: Reply(status=500, content="scripted outage")
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=ONE_IM_ONE_OE)
    submission.refresh_from_db()
    assert submission.status == Status.DONE, submission.error
    _, token = token_create(team=team, name="ci")
    figures = client.get(f"/api/v1/submissions/{submission.pk}", **auth(token)).json()["figures"]
    oe = figures["category:OE"]  # every OE unit failed: no task has a score, so there is no value and no interval
    assert (oe["value"], oe["low"], oe["high"]) == (None, None, None) and submission.figures.get(scope="category", key="OE").n == 0
    assert oe["interval_note"] == "no interval: none of its tasks has a score"
    im, overall = figures["category:IM"], figures["overall:overall"]  # one IM task scored: an interval, wide
    stored = submission.figures.get(scope="category", key="IM")
    assert (im["low"], im["high"], im["interval_note"]) == (stored.ci_low, stored.ci_high, None) and stored.n == 1
    assert overall["value"] is not None and overall["low"] is not None and overall["interval_note"] is None

    settings.ATELIER_MAX_MISSING_RATE = 0.05  # as deployed: too much is missing, so the figures are withheld, intervals too
    figures = client.get(f"/api/v1/submissions/{submission.pk}", **auth(token)).json()["figures"]
    overall = figures["overall:overall"]
    assert overall["withheld"] and (overall["value"], overall["low"], overall["high"]) == (None, None, None)
    assert overall["interval_note"] == "no interval: withheld, as its value is (too many of its planned units are missing)"
    assert submission.figures.get(scope="overall").ci_low is not None  # stored, not shown: it would give the value away


def test_submit_bad_file_is_400_with_line_errors_and_nothing_stored(client, team, sample_pack):
    _, token = token_create(team=team, name="ci")
    file = SimpleUploadedFile("p.jsonl", b'{"task_id": "oe-s01", "prompt": "ok"}\n{"task_id": "nope", "prompt": "x"}\n')
    response = client.post("/api/v1/submissions", {"file": file, "prompter": "m"}, **auth(token))
    assert response.status_code == 400
    assert response.json()["errors"] == ["line 2: unknown task_id 'nope' (not in this pack)"]
    assert Submission.objects.count() == 0


def test_an_oversize_file_is_413_naming_the_limit(client, team, sample_pack, settings):
    settings.ATELIER_MAX_UPLOAD_BYTES = 100
    _, token = token_create(team=team, name="ci")
    file = SimpleUploadedFile("p.jsonl", b'{"task_id": "oe-s01", "prompt": "' + b"x" * 65 + b'"}\n')  # 101 bytes
    response = client.post("/api/v1/submissions", {"file": file, "prompter": "m"}, **auth(token))
    assert response.status_code == 413 and response.json() == {"error": "the file is 101 bytes; the limit is 100", "field": "file"}
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


def test_the_upload_takes_the_judge_route_where_the_site_asks_and_refuses_one_it_does_not_offer(
    client, team, sample_pack, example_prompts, settings
):
    _, token = token_create(team=team, name="ci")

    def upload(prompter: str, choice: str | None):
        sent = {"file": SimpleUploadedFile("p.jsonl", example_prompts), "prompter": prompter, "pack": "sample"}
        return client.post("/api/v1/submissions", sent | ({"judge_by_batch": choice} if choice is not None else {}), **auth(token))

    settings.ATELIER_JUDGE_BATCH = "off"
    refused = upload("m-off", "true")
    assert refused.status_code == 400 and refused.json()["field"] == "judge_by_batch", refused.content
    assert refused.json()["error"].startswith("judge by batch: this site does not offer the batch route")
    assert not Submission.objects.exists()
    assert upload("m-off-false", "false").json()["judge_route"] == "sync"  # agrees with the site: taken
    for unclear in ("maybe", "1", "True"):  # the words as JSON spells them, nothing else: never a guess
        refused = upload("m-unclear", unclear)
        assert refused.status_code == 400 and list(refused.json()["fields"]) == ["judge_by_batch"], unclear
    settings.ATELIER_JUDGE_BATCH = "ask"
    batched = upload("m-ask", "true")
    assert batched.status_code == 201, batched.content
    assert batched.json()["judge_route"] == "batch" == Submission.objects.get(prompter="m-ask").judge_route
    assert upload("m-ask-none", None).json()["judge_route"] == "sync"
    settings.ATELIER_JUDGE_BATCH = "all"
    assert upload("m-all", "false").json()["field"] == "judge_by_batch"
    assert not Submission.objects.filter(prompter__in=["m-off", "m-unclear", "m-all"]).exists()
