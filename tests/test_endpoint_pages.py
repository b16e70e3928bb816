"""Endpoint prompters on the site, through HTTP: register, test call, run, the submission page's Prompting section,
the team-only call log and its downloads, cancel, and the leaderboard's condition column and filter.

The endpoint is the real local OpenAI-compatible server of tests/openai_server.py (`prompter_server`); jobs run in-process."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation.crypto import decrypt
from evaluation.models import CallStatus, Figure, PromptCall, PromptEntry, Render, Status, Submission, UnitStatus
from evaluation.trajectories import CALL_LOG_FIELDS
from evaluation.workqueue import QueueUnavailable
from submissions import services
from teams.models import Endpoint
from tests.openai_server import Reply, scripted_prompt

KEY = "sk-live-TOPSECRET-7f3a9c1e5b"
FIRST_DEV_TASK = ("co-s01", "Seed packet front")  # the sample pack's first public task by category, task id


@pytest.fixture
def local_prompters(settings):
    """The local scripted server may be called (it is on 127.0.0.1, which the address guard refuses otherwise)."""
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)
    settings.ATELIER_PROMPTER_MAX_RETRIES = 0
    settings.ATELIER_PROMPTER_TIMEOUT = 10.0


@pytest.fixture
def endpoint(team, prompter_server, local_prompters):
    return services.endpoint_create(team=team, name="local", base_url=prompter_server.base_url, model="tiny-prompter", api_key=KEY, seed=7)


@pytest.fixture
def other_client(client, stranger):
    services.team_create(user=stranger, name="Other Team")
    client.force_login(stranger)
    return client


def body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def assert_no_secret(text: str, endpoint: Endpoint) -> None:
    assert KEY not in text
    assert endpoint.key_encrypted and endpoint.key_encrypted not in text


def running_run(team, pack, endpoint) -> Submission:
    """An endpoint run stopped mid-prompting: one call made, two still to make (no job is sent)."""
    submission = Submission.objects.create(
        team=team,
        pack=pack,
        prompter="tiny-prompter (local)",
        origin="endpoint",
        endpoint=endpoint,
        condition="plain",
        condition_version="1+abcdef12",
        status=Status.PROMPTING,
        prompting={"condition": "plain v1+abcdef12", "endpoint": {"name": "local"}},
    )
    tasks = list(pack.tasks.order_by("category", "task_id")[:3])
    PromptCall.objects.create(
        submission=submission, task=tasks[0], status=CallStatus.OK, text="a prompt", reply="a prompt", requests=1, latency=0.2
    )
    for task in tasks[1:]:
        PromptCall.objects.create(submission=submission, task=task, status=CallStatus.PENDING)
    return submission


def start_run(client, team, endpoint, pack, **fields):
    data = {"pack": pack.pk, "condition": "plain", "samples": 1, "rounds": 1, **fields}
    return client.post(f"/teams/{team.slug}/endpoints/{endpoint.pk}/run/", data)


# --- register ----------------------------------------------------------------------------------------


def test_register_endpoint_on_the_page_stores_the_key_encrypted_and_never_shows_it(owner_client, team, prompter_server, local_prompters):
    response = owner_client.post(
        f"/teams/{team.slug}/endpoints/new/",
        {
            "name": "my prompter",
            "base_url": prompter_server.base_url,
            "model": "tiny-prompter",
            "api_key": KEY,
            "temperature": "0.4",
            "max_in_flight": "2",
        },
    )
    assert response.status_code == 302, body(response)
    endpoint = Endpoint.objects.get()
    assert response["Location"] == f"/teams/{team.slug}/endpoints/{endpoint.pk}/"
    assert endpoint.key_encrypted != KEY and decrypt(endpoint.key_encrypted) == KEY
    assert (endpoint.temperature, endpoint.max_in_flight) == (0.4, 2)
    team_page = body(owner_client.get(f"/teams/{team.slug}/"))
    assert "my prompter" in team_page and "tiny-prompter" in team_page and "key set" in team_page
    assert prompter_server.base_url.split("/")[2] in team_page  # the host
    assert_no_secret(team_page, endpoint)
    page = body(owner_client.get(response["Location"]))
    assert "key set" in page and "0.4" in page and 'id="test-form"' in page and 'id="run-form"' in page
    assert_no_secret(page, endpoint)


def test_register_page_never_renders_the_key_back_after_an_error(owner_client, team, local_prompters):
    response = owner_client.post(
        f"/teams/{team.slug}/endpoints/new/", {"name": "x", "base_url": "http://127.0.0.1:9/v1", "model": "", "api_key": KEY}
    )
    assert response.status_code == 400
    assert "This field is required" in body(response) and KEY not in body(response)
    assert not Endpoint.objects.exists()


def test_register_refuses_a_private_address_naming_the_rule_on_the_url_field(owner_client, team, settings):
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ()
    response = owner_client.post(
        f"/teams/{team.slug}/endpoints/new/", {"name": "lan", "base_url": "http://10.0.0.5/v1", "model": "m", "api_key": KEY}
    )
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors) == ["base_url"]
    assert errors["base_url"][0].startswith("base URL: ") and "10.0.0.5" in errors["base_url"][0] and "private" in errors["base_url"][0]
    assert "private" in body(response) and KEY not in body(response)
    assert not Endpoint.objects.exists()


def test_register_page_says_what_the_address_guard_allows_in_production_and_in_the_demo(owner_client, team, settings):
    """Production refuses loopback, and the page says so plainly; the demo (ATELIER_DEMO, DEBUG only) allow-lists its own
    host:port, so its scripted prompter can be registered, and the page names that one exception instead of claiming
    loopback is refused."""
    page, demo_url = f"/teams/{team.slug}/endpoints/new/", "http://127.0.0.1:8000/demo/prompter/v1"
    settings.ATELIER_DEMO, settings.ATELIER_PROMPTER_ALLOWED_HOSTS = False, ()
    rule = re.search(r'<li id="address-rule">(.*?)</li>\s*<li>The API key', body(owner_client.get(page)), re.S).group(1)
    assert "loopback" in rule and "refused" in rule and "except" not in rule
    refused = owner_client.post(page, {"name": "demo", "base_url": demo_url, "model": "m"})
    assert refused.status_code == 400 and "loopback" in refused.context["form"].errors["base_url"][0]

    settings.ATELIER_DEMO, settings.ATELIER_DEMO_PROMPTER = True, "127.0.0.1:8000"
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1:8000",)
    shown = body(owner_client.get(page))
    assert 'id="address-demo"' in shown and "loopback at <code>127.0.0.1:8000</code> only" in shown and f"<code>{demo_url}</code>" in shown
    assert "allow-listed" not in shown  # no deployer entries beyond the demo's
    assert owner_client.post(page, {"name": "demo", "base_url": demo_url, "model": "m"}).status_code == 302
    other_port = owner_client.post(page, {"name": "redis", "base_url": "http://127.0.0.1:6379/v1", "model": "m"})
    assert other_port.status_code == 400 and "loopback" in other_port.context["form"].errors["base_url"][0]
    assert list(Endpoint.objects.values_list("name", flat=True)) == ["demo"]

    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1:8000", "10.1.2.0/24")  # a deployer's entry is counted, never named
    shown = body(owner_client.get(page))
    assert "1 host this site's deployer allow-listed" in shown and "10.1.2.0" not in shown


def test_register_refuses_a_second_endpoint_with_the_same_name_on_the_name_field(owner_client, team, endpoint, prompter_server):
    response = owner_client.post(
        f"/teams/{team.slug}/endpoints/new/", {"name": "local", "base_url": prompter_server.base_url, "model": "m"}
    )
    assert response.status_code == 400
    assert list(response.context["form"].errors) == ["name"]
    assert Endpoint.objects.count() == 1


# --- test call ---------------------------------------------------------------------------------------


def test_test_call_shows_the_scripted_reply_the_request_and_the_latency(owner_client, team, endpoint, sample_pack, prompter_server):
    response = owner_client.post(f"/teams/{team.slug}/endpoints/{endpoint.pk}/test/", {"pack": sample_pack.pk, "condition": "plain"})
    assert response.status_code == 200
    page = body(response)
    task_id, title = FIRST_DEV_TASK
    assert scripted_prompt(title, 1) in page
    assert task_id in page and 'id="test-status">ok<' in page
    test = response.context["test"]
    assert test["latency_ms"] >= 0 and f'id="test-latency">{test["latency_ms"]} ms<' in page
    assert test["tokens"] == {"prompt": 200, "completion": 25} and test["requests"] == 1
    assert f"Title: {title}" in page  # the request messages, as sent
    assert len(prompter_server.requests) == 1 and prompter_server.requests[0]["model"] == "tiny-prompter"
    assert_no_secret(page, endpoint)


def test_test_call_against_a_refusing_endpoint_shows_refused(owner_client, team, endpoint, sample_pack, prompter_server):
    prompter_server.queue(Reply(refusal="I can't help with that"))
    response = owner_client.post(f"/teams/{team.slug}/endpoints/{endpoint.pk}/test/", {"pack": sample_pack.pk, "condition": "plain"})
    page = body(response)
    assert response.status_code == 200
    assert 'id="test-status">refused<' in page
    assert "help with that" in page and "the model refused" in page


# --- runs --------------------------------------------------------------------------------------------


def promptable(pack) -> int:
    """Tasks an endpoint can be asked about: an IM task needs its target image (the sample pack's im-s02 has none here)."""
    return sum(1 for t in pack.tasks.all() if t.category != "IM" or t.target_image)


def test_run_redirects_to_the_submission_page_which_shows_the_prompting_section(owner_client, team, endpoint, sample_pack, prompter_server):
    response = start_run(owner_client, team, endpoint, sample_pack)
    assert response.status_code == 302, body(response)
    submission = Submission.objects.get()
    assert response["Location"] == f"/submissions/{submission.pk}/"
    assert (submission.origin, submission.endpoint_id, submission.condition) == ("endpoint", endpoint.pk, "plain")
    tasks, answered = sample_pack.tasks.count(), promptable(sample_pack)
    assert len(prompter_server.requests) == answered  # in-process queue: every call was made before the redirect
    page = body(owner_client.get(response["Location"]))
    assert 'id="prompting"' in page and "<h2>Prompting</h2>" in page
    assert submission.prompting["condition"] in page and "tiny-prompter" in page and prompter_server.base_url.split("/")[2] in page
    progress = page.split('id="prompting-progress"')[1].split("</table>")[0]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", progress)
    calls = PromptCall.objects.filter(submission=submission)
    total, failed = calls.count(), calls.filter(status=CallStatus.FAILED).count()
    assert calls.filter(status=CallStatus.OK).count() == answered and total in (
        answered,
        tasks,
    )  # (a task that cannot be asked may get no call)
    # called, ok, failed, refused, open, cancelled, total, requests
    assert cells[:8] == [str(n) for n in (answered + failed, answered, failed, 0, 0, 0, total, answered)]
    assert "the last round that answered" in page
    assert scripted_prompt(FIRST_DEV_TASK[1], 1) in page
    assert page.count('class="badge ranked"') == answered  # one ranked round per trajectory that answered
    assert 'id="call-log-link"' in page and 'id="cancel-run"' not in page
    submission.refresh_from_db()
    assert submission.status in (Status.DONE, Status.INCOMPLETE) and submission.entries.count() == answered, submission.error
    assert_no_secret(page, endpoint)


def test_a_run_says_nothing_of_task_coverage_until_prompting_has_given_prompts(owner_client, team, endpoint, sample_pack):
    """A queued or prompting run has no (or not all) prompts yet: "cover 0 of the pack's 6 tasks … listed unranked"
    would be a false alarm. Once prompting is over, a run that missed tasks is told, as an upload is."""
    submission = Submission.objects.create(
        team=team, pack=sample_pack, prompter="tiny-prompter (local)", origin="endpoint", endpoint=endpoint, status=Status.QUEUED
    )
    page = body(owner_client.get(f"/submissions/{submission.pk}/"))
    assert 'id="pack-coverage"' not in page and "These prompts cover" not in page and "No call planned yet." in page
    _, token = services.token_create(team=team, name="api")
    assert owner_client.get(f"/api/v1/submissions/{submission.pk}", HTTP_AUTHORIZATION=f"Bearer {token}").json()["warnings"] == []

    task = sample_pack.tasks.order_by("task_id").first()
    PromptEntry.objects.create(submission=submission, task=task, text="a prompt")  # one trajectory ended, the others go on
    Submission.objects.filter(pk=submission.pk).update(status=Status.PROMPTING)
    assert "These prompts cover" not in body(owner_client.get(f"/submissions/{submission.pk}/"))

    Submission.objects.filter(pk=submission.pk).update(status=Status.RENDERING)  # prompting is over: one task of six got a prompt
    page = body(owner_client.get(f"/submissions/{submission.pk}/"))
    assert 'id="pack-coverage"' in page and f"These prompts cover 1 of the pack&#x27;s {sample_pack.tasks.count()} tasks" in page


def test_a_run_page_names_the_registered_endpoint_and_where_its_calls_went_when_that_moved(client, team, endpoint, sample_pack):
    """The demo runs its endpoint against an in-process server, then points it at the demo site: the run's page names
    the registered address and says where the calls went, and why where the platform knows."""
    submission = running_run(team, sample_pack, endpoint)
    registered = endpoint.base_url.split("/")[2]
    called = {"name": "local", "host": registered}
    Submission.objects.filter(pk=submission.pk).update(published=True, prompting={"endpoint": called})
    page = body(client.get(f"/submissions/{submission.pk}/"))
    assert f'<code id="endpoint-host">{registered}</code>' in page and 'id="endpoint-called"' not in page  # the same address
    Endpoint.objects.filter(pk=endpoint.pk).update(base_url="http://127.0.0.1:8000/demo/prompter/v1")
    note = "the demo command ran it against its own in-process copy"
    Submission.objects.filter(pk=submission.pk).update(prompting={"endpoint": {**called, "called_note": note}})
    page = body(client.get(f"/submissions/{submission.pk}/"))
    assert '<code id="endpoint-host">127.0.0.1:8000</code>' in page
    moved = re.sub(r"<[^>]+>", "", page.split('id="endpoint-called"')[1].split("</p>")[0])
    assert f"calls went to {registered}, the address the endpoint had when the run started" in moved and note in moved


def test_run_with_feedback_rounds_shows_score_by_round_and_steerability(owner_client, team, endpoint, sample_pack, prompter_server):
    response = start_run(owner_client, team, endpoint, sample_pack, rounds=2, feedback_backend="smoke-sd")
    assert response.status_code == 302, body(response)
    submission = Submission.objects.get()
    calls = PromptCall.objects.filter(submission=submission)
    assert calls.count() == 2 * promptable(sample_pack)
    assert calls.filter(round=1, status=CallStatus.OK).exists(), list(
        calls.values_list("status", "error", "feedback_status", "feedback_error")
    )
    page = body(owner_client.get(response["Location"]))
    assert "<h3>Score by round</h3>" in page and 'id="round-chart"' in page
    data = json.loads(page.split('<script id="round-chart-data" type="application/json">')[1].split("</script>")[0])
    table = page.split('id="round-scores"')[1].split("</table>")[0]
    for series in data:  # the chart's numbers are the table's
        for x, y in zip(series["x"], series["y"]):
            assert f'<td>{series["category"]}</td><td class="num">{x}</td><td class="num">{y:.1f}</td>' in table
    assert "vendor/plotly/plotly.min.js" in page and "js/round_chart.js" in page
    assert "Running-best chain" in page and "ArtWhisperer's Algorithm 1" in page and 'id="steerability"' in page
    steer = page.split('id="steerability"')[1].split("</table>")[0]
    assert "smoke-sd" in steer
    assert 'class="badge best"' in page and 'class="badge ranked"' in page
    assert "feedback image of round 1" in page


def test_run_form_requires_a_feedback_backend_for_more_than_one_round(owner_client, team, endpoint, sample_pack):
    response = start_run(owner_client, team, endpoint, sample_pack, rounds=3)
    assert response.status_code == 400
    assert list(response.context["run_form"].errors) == ["feedback_backend"]
    assert not Submission.objects.exists()


def test_run_refused_by_the_service_names_the_field(owner_client, team, endpoint, sample_pack, settings):
    settings.ATELIER_MAX_SAMPLES = 2
    response = start_run(owner_client, team, endpoint, sample_pack, samples=3)
    assert response.status_code == 400
    assert response.context["run_form"].errors["samples"] == ["samples: between 1 and 2"]
    assert not Submission.objects.exists()


def test_run_when_the_queue_is_down_is_503_and_stores_nothing(owner_client, team, endpoint, sample_pack, monkeypatch):
    def down(*args):
        raise QueueUnavailable("redis is down")

    monkeypatch.setattr(services, "enqueue", down)
    response = start_run(owner_client, team, endpoint, sample_pack)
    assert response.status_code == 503 and "work queue is unavailable" in body(response)
    assert not Submission.objects.exists()


def test_archived_endpoint_cannot_be_run(owner_client, team, endpoint, sample_pack):
    assert owner_client.post(f"/teams/{team.slug}/endpoints/{endpoint.pk}/archive/").status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.archived
    assert 'id="run-form"' not in body(owner_client.get(f"/teams/{team.slug}/endpoints/{endpoint.pk}/"))
    response = start_run(owner_client, team, endpoint, sample_pack)
    assert response.status_code == 400 and "active endpoints" in body(response)
    assert not Submission.objects.exists()


# --- call log ----------------------------------------------------------------------------------------


def test_call_log_page_and_downloads_list_every_call_and_never_the_key(owner_client, team, endpoint, sample_pack, prompter_server):
    start_run(owner_client, team, endpoint, sample_pack)
    submission = Submission.objects.get()
    calls = submission.calls.count()
    page = body(owner_client.get(f"/submissions/{submission.pk}/calls/"))
    assert calls >= promptable(sample_pack) and page.count("<tr>") == calls + 1
    assert page.count("<details>") == promptable(sample_pack) and "Title: Seed packet front" in page
    assert_no_secret(page, endpoint)
    response = owner_client.get(f"/submissions/{submission.pk}/calls.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    text = body(response)
    assert_no_secret(text, endpoint)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == CALL_LOG_FIELDS and len(rows) == calls
    request = json.loads(rows[0]["request"])
    assert request[0]["role"] == "system" and rows[0]["status"] == "ok" and rows[0]["round"] == "1"
    jsonl = body(owner_client.get(f"/submissions/{submission.pk}/calls.jsonl"))
    assert_no_secret(jsonl, endpoint)
    records = [json.loads(line) for line in jsonl.splitlines()]
    assert len(records) == calls and {r["text"] for r in records} >= {scripted_prompt(FIRST_DEV_TASK[1], 1)}
    assert owner_client.get(f"/submissions/{submission.pk}/calls.xml").status_code == 404


def test_call_log_csv_neutralises_spreadsheet_formulas(owner_client, team, endpoint, sample_pack):
    submission = running_run(team, sample_pack, endpoint)
    PromptCall.objects.filter(submission=submission, status=CallStatus.OK).update(reply='=HYPERLINK("http://x")', text="=1+1")
    rows = list(csv.DictReader(io.StringIO(body(owner_client.get(f"/submissions/{submission.pk}/calls.csv")))))
    ok = next(r for r in rows if r["status"] == "ok")
    assert ok["reply"] == '\'=HYPERLINK("http://x")' and ok["text"] == "'=1+1"


def test_other_team_gets_404_on_endpoint_pages_call_log_downloads_and_cancel(other_client, team, endpoint, sample_pack):
    submission = running_run(team, sample_pack, endpoint)
    Submission.objects.filter(pk=submission.pk).update(published=True)  # even a published run's log stays the team's
    base = f"/teams/{team.slug}/endpoints/{endpoint.pk}"
    assert other_client.get(f"{base}/").status_code == 404
    assert other_client.get(f"/teams/{team.slug}/endpoints/new/").status_code == 404
    assert other_client.post(f"{base}/test/", {"pack": sample_pack.pk, "condition": "plain"}).status_code == 404
    assert other_client.post(f"{base}/run/", {"pack": sample_pack.pk, "condition": "plain", "samples": 1, "rounds": 1}).status_code == 404
    assert other_client.post(f"{base}/archive/").status_code == 404
    for url in (
        f"/submissions/{submission.pk}/calls/",
        f"/submissions/{submission.pk}/calls.csv",
        f"/submissions/{submission.pk}/calls.jsonl",
    ):
        assert other_client.get(url).status_code == 404, url
    assert other_client.post(f"/submissions/{submission.pk}/cancel/").status_code == 404
    page = body(other_client.get(f"/submissions/{submission.pk}/"))  # the published page itself is public
    assert 'id="prompting"' in page and 'id="call-log-link"' not in page and 'id="cancel-run"' not in page
    endpoint.refresh_from_db()
    submission.refresh_from_db()
    assert not endpoint.archived and submission.status == Status.PROMPTING and not Submission.objects.exclude(pk=submission.pk).exists()


def test_anonymous_visitor_gets_404_on_the_call_log(client, team, endpoint, sample_pack):
    submission = running_run(team, sample_pack, endpoint)
    Submission.objects.filter(pk=submission.pk).update(published=True)
    assert client.get(f"/submissions/{submission.pk}/calls/").status_code == 404
    assert client.get(f"/submissions/{submission.pk}/calls.csv").status_code == 404


def test_staff_sees_the_call_log(client, admin_user, team, endpoint, sample_pack):
    submission = running_run(team, sample_pack, endpoint)
    client.force_login(admin_user)
    assert client.get(f"/submissions/{submission.pk}/calls/").status_code == 200
    assert 'id="call-log-link"' in body(client.get(f"/submissions/{submission.pk}/"))


# --- cancel ------------------------------------------------------------------------------------------


def test_cancel_button_stops_a_running_run(owner_client, team, endpoint, sample_pack):
    submission = running_run(team, sample_pack, endpoint)
    page = body(owner_client.get(f"/submissions/{submission.pk}/"))
    assert 'id="cancel-run"' in page and '<meta http-equiv="refresh"' in page
    response = owner_client.post(f"/submissions/{submission.pk}/cancel/")
    assert response.status_code == 302 and response["Location"] == f"/submissions/{submission.pk}/"
    submission.refresh_from_db()
    assert submission.status == Status.CANCELLED and submission.error == "cancelled by owner"
    statuses = list(PromptCall.objects.filter(submission=submission).order_by("task__task_id").values_list("status", flat=True))
    assert sorted(statuses) == ["cancelled", "cancelled", "ok"]
    page = body(owner_client.get(f"/submissions/{submission.pk}/"))
    assert 'id="cancel-run"' not in page and '<meta http-equiv="refresh"' not in page


def test_a_running_runs_page_says_jobs_run_in_process_without_redis_and_counts_workers_with_it(
    client, admin_user, team, endpoint, sample_pack, settings, redis_url
):
    """Without Redis the embedded runner does the work: the page says so instead of "0 workers", and the staff link to
    django-rq (which would count a Redis this site does not use) says in-process; with Redis both count workers."""
    submission = running_run(team, sample_pack, endpoint)
    client.force_login(admin_user)
    page = body(client.get(f"/submissions/{submission.pk}/"))
    queues = page.split('id="queues"')[1].split("</p>")[0]
    assert "in-process worker (no Redis)" in queues and "worker listening" not in queues
    assert "Queues: in-process (no Redis)" in page and 'href="/django-rq/"' not in page
    settings.REDIS_URL = redis_url
    page = body(client.get(f"/submissions/{submission.pk}/"))
    queues = page.split('id="queues"')[1].split("</p>")[0]
    assert "no worker listening" in queues and "in-process" not in queues and 'href="/django-rq/"' in page


# --- submission page details -------------------------------------------------------------------------


def test_submission_page_shows_a_middleware_rewrite_under_the_images(owner_client, team, sample_pack):
    submission = Submission.objects.create(team=team, pack=sample_pack, prompter="m", status=Status.DONE, judge_id="j", judge_version="1")
    entry = PromptEntry.objects.create(submission=submission, task=sample_pack.tasks.first(), text="a cat")
    Render.objects.create(
        entry=entry,
        backend="smoke-sd",
        image_index=0,
        seed=1,
        config_hash="h",
        prompt_sha="p",
        status=UnitStatus.OK,
        rewritten="a majestic cat, 8k, trending",
    )
    Render.objects.create(
        entry=entry, backend="smoke-sd-fast", image_index=0, seed=1, config_hash="h", prompt_sha="p", status=UnitStatus.OK
    )
    page = body(owner_client.get(f"/submissions/{submission.pk}/"))
    assert page.count("middleware rewrote the prompt:") == 1 and "a majestic cat, 8k, trending" in page


# --- leaderboard -------------------------------------------------------------------------------------


def board_row(team, pack, prompter, overall, **fields) -> Submission:
    from evaluation.boards import board_stats_rebuild

    submission = Submission.objects.create(
        team=team, pack=pack, prompter=prompter, status=Status.DONE, published=True, judge_id="offline", judge_version="1", **fields
    )
    Figure.objects.create(submission=submission, judge_id="offline", judge_version="1", scope="overall", key="overall", value=overall)
    board_stats_rebuild(pack_id=pack.pk, revision=submission.pack_revision)  # what the board job does when an entry is published
    return submission


def test_leaderboard_shows_condition_origin_and_middleware_and_filters_by_condition(client, team, sample_pack):
    board_row(team, sample_pack, "Endpoint Plain", 70.0, origin="endpoint", condition="plain", condition_version="1+ab12cd34")
    board_row(
        team,
        sample_pack,
        "Endpoint Guided",
        60.0,
        origin="endpoint",
        condition="guided",
        condition_version="1+ee99ff00",
        backends=[{"name": "smoke-sd", "rewriter": "expand-v1"}],
    )
    board_row(team, sample_pack, "Upload Novice", 50.0, condition="novice", backends=[{"name": "smoke-sd", "rewriter": ""}])
    page = body(client.get("/"))
    assert "plain v1+ab12cd34" in page and "guided v1+ee99ff00" in page and "novice" in page
    assert page.count('class="badge origin-endpoint"') == 2 and page.count('class="badge origin-file"') == 1
    assert page.count('class="badge middleware"') == 1
    assert page.index("Endpoint Guided") < page.index('class="badge middleware"') < page.index("Upload Novice")
    select = page.split('id="condition-filter"')[1].split("</select>")[0]
    assert [o.split(">")[1].split("<")[0] for o in select.split("<option")[1:]] == [
        "all runs",
        "single-turn runs",
        "runs with feedback rounds",
        "condition guided",
        "condition novice",
        "condition plain",
    ]
    filtered = body(client.get("/?condition=plain"))
    assert "Endpoint Plain" in filtered and "Endpoint Guided" not in filtered and "Upload Novice" not in filtered
    assert 'value="plain" selected' in filtered and "&condition=plain&sort=OE" in filtered
    unknown = body(client.get("/?condition=nope"))  # an unknown condition shows everything
    assert all(name in unknown for name in ("Endpoint Plain", "Endpoint Guided", "Upload Novice"))
    client.get("/")  # each count is of a request whose cached statistics section is current, as most requests are
    with CaptureQueriesContext(connection) as three_rows:
        client.get("/")
    for k in range(5):
        board_row(team, sample_pack, f"Extra {k}", 40.0 + k, origin="endpoint", condition="plain", condition_version="1+ab12cd34")
    client.get("/")
    with CaptureQueriesContext(connection) as eight_rows:
        assert body(client.get("/")).count('class="badge origin-endpoint"') == 7
    assert len(eight_rows) == len(three_rows)  # no query per row


# --- the key, everywhere -----------------------------------------------------------------------------


def test_a_published_endpoint_run_keeps_the_key_out_of_every_page_and_download(owner_client, team, endpoint, sample_pack, prompter_server):
    import zipfile

    assert start_run(owner_client, team, endpoint, sample_pack).status_code == 302
    submission = Submission.objects.get()
    assert submission.status == Status.DONE, submission.error
    assert services.submissions_publish(submissions=Submission.objects.filter(pk=submission.pk)) == 1
    urls = [
        "/",
        f"/submissions/{submission.pk}/",
        f"/submissions/{submission.pk}/breakdown.csv",
        f"/submissions/{submission.pk}/breakdown.jsonl",
        f"/submissions/{submission.pk}/calls/",
        f"/submissions/{submission.pk}/calls.csv",
        f"/submissions/{submission.pk}/calls.jsonl",
        f"/teams/{team.slug}/",
        f"/teams/{team.slug}/endpoints/{endpoint.pk}/",
    ]
    texts = {}
    for url in urls:
        response = owner_client.get(url)
        assert response.status_code == 200, url
        texts[url] = body(response)
    assert scripted_prompt(FIRST_DEV_TASK[1], 1) in texts[f"/submissions/{submission.pk}/breakdown.csv"]  # the run's prompts are in it
    link = texts["/"].split('id="board-download"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    response = owner_client.get(link)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as archive:
        for name in archive.namelist():
            texts[f"board.zip:{name}"] = archive.read(name).decode()
    assert scripted_prompt(FIRST_DEV_TASK[1], 1) in texts["board.zip:prompts.jsonl"]
    for where, text in texts.items():
        assert KEY not in text and endpoint.key_encrypted not in text, where


def test_a_test_call_to_an_endpoint_that_echoes_its_key_shows_it_redacted(owner_client, team, endpoint, sample_pack, prompter_server):
    prompter_server.queue(Reply(status=401, content=f"Incorrect API key provided: {KEY}"))
    response = owner_client.post(f"/teams/{team.slug}/endpoints/{endpoint.pk}/test/", {"pack": sample_pack.pk, "condition": "plain"})
    page = body(response)
    assert response.status_code == 200 and 'id="test-status">failed<' in page
    assert "HTTP 401" in page and "Incorrect API key provided: [API key]" in page
    assert_no_secret(page, endpoint)
