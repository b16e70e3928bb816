"""The installed `atelier` command (client/) as a team runs it: a subprocess against a live test server, with its
config in a temporary directory. Jobs run in-process (REDIS_URL cleared), so an upload is evaluated within its request."""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import django_rq
import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from openapi_spec_validator import validate

from atelier_client.api import Client
from evaluation.models import Submission
from submissions.services import submissions_publish, token_create
from tests.conftest import ROOT

ATELIER = Path(sys.executable).parent / "atelier"
DEMO = ROOT / "examples" / "demo_prompts.jsonl"


def atelier(config_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "ATELIER_CONFIG_DIR": str(config_dir), **env}
    return subprocess.run([str(ATELIER), *args], capture_output=True, text=True, env=environment, timeout=300)


@pytest.fixture
def logged_in(transactional_db, sample_pack, team, live_server, tmp_path) -> Path:
    _, token = token_create(team=team, name="cli")
    config_dir = tmp_path / "config"
    result = atelier(config_dir, "login", live_server.url, "--token", token)
    assert result.returncode == 0, result.stderr
    return config_dir


def submit(config_dir: Path, *extra: str, **env: str) -> subprocess.CompletedProcess:
    return atelier(config_dir, "submit", str(DEMO), "--pack", "sample", "--prompter", "cli-model", *extra, **env)


def test_login_stores_url_and_token_readable_by_the_user_only(logged_in, live_server):
    path = logged_in / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["url"] == live_server.url


def test_login_with_a_wrong_token_exits_1_with_the_servers_message_and_saves_nothing(transactional_db, live_server, tmp_path):
    result = atelier(tmp_path, "login", live_server.url, "--token", "atl_wrong")
    assert result.returncode == 1
    assert "HTTP 401: missing or invalid token" in result.stderr
    assert not (tmp_path / "config.json").exists()


def test_submit_wait_draws_progress_and_prints_the_figures_then_status_agrees(logged_in):
    result = submit(logged_in, "--wait")
    assert result.returncode == 0, result.stderr
    print(result.stderr + result.stdout)  # the transcript, shown with -s
    submission = Submission.objects.get()
    assert submission.status == "done" and submission.prompter == "cli-model"
    assert "units  done" in result.stderr and "[" + "#" * 30 + "]" in result.stderr
    assert "\r" not in result.stderr and "0/0 units" not in result.stderr  # stderr is a pipe here: plain lines, as in a log
    figures = submission_figures(logged_in, submission.pk)
    overall = figures["overall:overall"]  # each figure with its 95 % interval and its scale's range
    assert f"submission {submission.pk}: done" in result.stdout
    assert f"  {'overall:overall':<24} {overall['value']:.1f} [{overall['low']:.1f}, {overall['high']:.1f}] (0-100)" in result.stdout
    rate = figures["skill:prompt_objective"]  # a share, shown as the site shows it: three decimals, its range 0-1
    assert f"skill:prompt_objective   {rate['value']:.3f} [{rate['low']:.3f}, {rate['high']:.3f}] (0-1)" in result.stdout
    assert "no interval" not in result.stdout
    shown = atelier(logged_in, "status", str(submission.pk))
    assert shown.returncode == 0 and shown.stdout == result.stdout


def submission_figures(config_dir: Path, submission_id: int) -> dict:
    from django.test import Client

    token = json.loads((config_dir / "config.json").read_text())["token"]
    body = Client().get(f"/api/v1/submissions/{submission_id}", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    return body["figures"]


# One IM and one OE prompt; with every model call failing only IM's target similarity (a metric, no call) is scored.
ONE_IM_ONE_OE = '{"task_id": "im-s01", "prompt": "A red sun over three blue hills"}\n{"task_id": "oe-s01", "prompt": "Gouache bread loaves in warm light"}\n'


def test_status_says_why_a_figure_has_no_interval(logged_in, scripted_judge, settings, tmp_path):
    from tests.openai_server import Reply

    settings.ATELIER_MAX_MISSING_RATE = 1.0  # the run finishes done, its figures as computed: OE rests on no scored task
    scripted_judge.default = lambda request: Reply(status=500, content="scripted outage")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(ONE_IM_ONE_OE)
    assert atelier(logged_in, "submit", str(prompts), "--pack", "sample", "--prompter", "m").returncode == 0
    submission = Submission.objects.get()
    figures = submission_figures(logged_in, submission.pk)
    shown = atelier(logged_in, "status", str(submission.pk))
    assert shown.returncode == 0, shown.stderr
    print(shown.stdout)  # the figures, shown with -s
    lines = {line.split()[0]: line for line in shown.stdout.splitlines() if line.startswith("  ")}
    oe = figures["category:OE"]["coverage"]
    assert lines["category:OE"].endswith(f"—  (partial: {oe['scored']}/{oe['planned']} scored)  no interval: none of its tasks has a score")
    im = figures["category:IM"]
    assert f"{im['value']:.1f} [{im['low']:.1f}, {im['high']:.1f}] (0-100)" in lines["category:IM"]

    settings.ATELIER_MAX_MISSING_RATE = 0.05  # as deployed: too much is missing, the figures are withheld with their intervals
    lines = {
        line.split()[0]: line for line in atelier(logged_in, "status", str(submission.pk)).stdout.splitlines() if line.startswith("  ")
    }
    assert lines["overall:overall"].split(None, 1)[1].startswith("withheld  (partial: ")
    assert lines["overall:overall"].endswith("no interval: withheld, as its value is (too many of its planned units are missing)")


def test_download_writes_the_breakdown_as_csv_and_jsonl(logged_in, tmp_path):
    assert submit(logged_in).returncode == 0
    submission = Submission.objects.get()
    for fmt in ("csv", "jsonl"):
        out = tmp_path / f"b.{fmt}"
        result = atelier(logged_in, "download", str(submission.pk), "--format", fmt, "-o", str(out))
        assert result.returncode == 0, result.stderr
        text = out.read_text()
        rows = list(csv.DictReader(io.StringIO(text))) if fmt == "csv" else [json.loads(line) for line in text.splitlines()]
        assert rows and {r["task_id"] for r in rows} >= {"oe-s01"}, rows[:1]


def test_download_of_another_teams_submission_is_refused(logged_in, stranger):
    from submissions.services import team_create

    other = team_create(user=stranger, name="Others")
    _, token = token_create(team=other, name="x")
    assert submit(logged_in).returncode == 0
    config = logged_in.parent / "other"
    assert atelier(config, "login", json.loads((logged_in / "config.json").read_text())["url"], "--token", token).returncode == 0
    result = atelier(config, "download", str(Submission.objects.get().pk), "-o", str(config / "x.csv"))
    assert result.returncode == 1 and "HTTP 404" in result.stderr and not (config / "x.csv").exists()


def test_a_bad_file_exits_1_with_line_numbered_errors(logged_in, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "oe-s01", "prompt": "ok"}\n{"task_id": "nope", "prompt": "x"}\n')
    result = atelier(logged_in, "submit", str(bad), "--pack", "sample", "--prompter", "m")
    assert result.returncode == 1
    assert "the prompt file was rejected" in result.stderr and "line 2: unknown task_id 'nope'" in result.stderr
    assert not Submission.objects.exists()


def test_usage_errors_exit_2(tmp_path):
    assert atelier(tmp_path, "submit", "x.jsonl").returncode == 2


def test_the_same_idempotency_key_twice_gives_one_submission(logged_in):
    first = submit(logged_in, "--idempotency-key", "k-1")
    again = submit(logged_in, "--idempotency-key", "k-1")
    assert first.returncode == again.returncode == 0
    submission = Submission.objects.get()  # one row, and both answers name it
    assert f"submitted: id {submission.pk} " in first.stderr and f"submitted: id {submission.pk} " in again.stderr


@pytest.fixture
def redis_down(settings, monkeypatch) -> None:
    """The queues name a port nothing listens on (as tests/test_queue_down.py): uploads answer 503 + Retry-After."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    settings.REDIS_URL = url
    for queue in django_rq.settings.QUEUES.values():
        monkeypatch.setitem(queue, "URL", f"{url}?socket_connect_timeout=2&socket_timeout=2")


def test_redis_down_is_retried_after_retry_after_then_exits_1(logged_in, redis_down):
    result = submit(logged_in, ATELIER_TRIES="3", ATELIER_MAX_WAIT="0.2")
    assert result.returncode == 1
    assert result.stderr.count("HTTP 503") == 3 and "retrying in 0.2 s (try 3 of 3)" in result.stderr
    assert "the work queue is unavailable" in result.stderr.splitlines()[-1]
    assert not Submission.objects.exists()


def test_the_daily_cap_exits_1_at_once_instead_of_waiting_hours(logged_in, settings):
    settings.ATELIER_DAILY_SUBMISSIONS = 1
    assert submit(logged_in).returncode == 0
    capped = submit(logged_in, ATELIER_TRIES="3", ATELIER_MAX_WAIT="0.2")
    assert capped.returncode == 1 and "HTTP 429" in capped.stderr and "the cap" in capped.stderr
    assert "retrying" not in capped.stderr and Submission.objects.count() == 1  # Retry-After is hours away: no retry


def test_board_lists_the_published_entries_of_every_page(logged_in, live_server):
    assert submit(logged_in).returncode == 0 and submit(logged_in, "--prompter", "cli-model-2").returncode == 0
    assert submissions_publish(submissions=Submission.objects.all()) == 2
    result = atelier(logged_in, "board", "sample", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert {(r["prompter"], r["team"]) for r in rows} == {("cli-model", "Pixel Poets"), ("cli-model-2", "Pixel Poets")}
    assert rows[0]["overall"]["value"] is not None
    paged = Client(live_server.url, json.loads((logged_in / "config.json").read_text())["token"]).board("sample", per_page=1)
    assert paged["rows"] == rows and paged["pages"] == 2 and paged["next"] is None  # both pages, following `next`
    table = atelier(logged_in, "board", "sample")
    assert "cli-model" in table.stdout and "Pixel Poets" in table.stdout
    missing = atelier(logged_in, "board", "no-such-pack")
    assert missing.returncode == 1 and "no board for pack 'no-such-pack'" in missing.stderr
    # a reader that left (`atelier board sample | head`): no "Broken pipe" message, the status a shell gives a Unix tool
    left = subprocess.Popen(
        [str(ATELIER), "board", "sample"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "ATELIER_CONFIG_DIR": str(logged_in)},
    )
    left.stdout.close()  # before the command has its answer to print
    assert left.wait(timeout=60) == 141 and left.stderr.read() == b""


def test_board_table_has_the_sites_category_order_and_a_long_name_whole(logged_in):
    long = "cli-model-with-a-long-name-and-its-version-2025-06-01"
    assert atelier(logged_in, "submit", str(DEMO), "--pack", "sample", "--prompter", long).returncode == 0
    assert submissions_publish(submissions=Submission.objects.all()) == 1
    table = atelier(logged_in, "board", "sample")  # stdout is a pipe: no terminal width to fit, nothing shortened
    assert table.returncode == 0, table.stderr
    print(table.stdout)  # the table, shown with -s
    title, header, row = table.stdout.splitlines()
    assert header.split()[-3:] == ["OE", "CO", "IM"] and long in row.split()
    assert ("(* partial)" in title) == ("*" in row)  # the legend only with a marked figure
    # no terminal to fit: every cell with its 95 % interval beside it, on the row's one line, and the title says so
    cells = json.loads(atelier(logged_in, "board", "sample", "--json").stdout)["rows"][0]
    for shown in (cells["overall"], *cells["categories"].values()):
        mark = "*" if shown["standing"] == "partial" else ""
        assert f"{shown['value']:.1f}{mark} [{shown['ci_low']:.1f}, {shown['ci_high']:.1f}]" in row
    assert "([low, high]: 95 % interval)" in title


def api_routes(patterns, prefix: str = "") -> set[str]:
    found = set()
    for p in patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            found |= api_routes(p.url_patterns, route)
        elif isinstance(p, URLPattern) and route.startswith("api/v1/"):
            found.add("/" + route.replace("<int:", "{").replace("<str:", "{").replace(">", "}"))
    return found


def test_openapi_description_is_valid_and_describes_every_api_route(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    description = response.json()
    validate(description)
    routes = api_routes(get_resolver().url_patterns)
    assert len(routes) >= 10 and routes == set(description["paths"])


def test_endpoint_add_test_and_run_until_done(logged_in, prompter_server, settings):
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)  # the scripted prompter listens on this machine
    added = atelier(
        logged_in, "endpoint", "add", "--name", "scripted", "--base-url", prompter_server.base_url, "--model", "scripted-prompter"
    )
    assert added.returncode == 0, added.stderr
    endpoint = json.loads(added.stdout)
    assert endpoint["name"] == "scripted" and endpoint["host"] == prompter_server.base_url.split("/")[2]
    tested = atelier(logged_in, "endpoint", "test", str(endpoint["id"]), "--pack", "sample")
    assert tested.returncode == 0, tested.stderr
    call = json.loads(tested.stdout)
    assert call["status"] == "ok" and call["text"].startswith("A detailed image for")
    assert not Submission.objects.exists()  # a test call stores nothing
    run = atelier(logged_in, "endpoint", "run", str(endpoint["id"]), "--pack", "sample", "--wait")
    assert run.returncode == 0, run.stderr
    submission = Submission.objects.get()
    assert submission.origin == "endpoint" and submission.status == "done"
    assert f"submission {submission.pk}: done" in run.stdout and "overall:overall" in run.stdout
    missing = atelier(logged_in, "endpoint", "test", "999999", "--pack", "sample")
    assert missing.returncode == 1 and missing.stderr.strip()


def test_prompter_add_list_and_edit_send_only_the_options_given(logged_in):
    from teams.models import Prompter

    added = atelier(
        logged_in, "prompter", "add", "cli-model", "--kind", "mllm", "--parameters", "7B", "--weights", "open", "--contact", "a@b.org"
    )
    assert added.returncode == 0, added.stderr
    card = Prompter.objects.get(name="cli-model")
    assert f"prompter card {card.pk} (cli-model): version 1" in added.stderr and "parameters   7B" in added.stdout.splitlines()
    edited = atelier(logged_in, "prompter", "edit", str(card.pk), "--family", "Qwen2.5-VL", "--parameters", "72B")
    assert edited.returncode == 0, edited.stderr
    card.refresh_from_db()
    assert (card.family, card.parameters, card.kind, card.contact) == ("Qwen2.5-VL", 72_000_000_000, "mllm", "a@b.org")
    assert list(card.versions.order_by("number").values_list("changed", flat=True))[1] == ["family", "parameters"]
    header, row = atelier(logged_in, "prompter", "list").stdout.splitlines()
    assert header.split() == ["id", "name", "kind", "family", "weights", "params", "version", "updated"]
    assert row.split()[:7] == [str(card.pk), "cli-model", "mllm", "Qwen2.5-VL", "open", "72B", "2"]
    bad = atelier(logged_in, "prompter", "edit", str(card.pk), "--paper-url", "javascript:alert(1)")
    assert bad.returncode == 1 and "HTTP 400: paper_url: Enter a valid URL." in bad.stderr
    taken = atelier(logged_in, "prompter", "add", "cli-model")
    assert taken.returncode == 1 and f"HTTP 409: name: the team already has a prompter called 'cli-model' (id {card.pk}" in taken.stderr
    nothing = atelier(logged_in, "prompter", "edit", str(card.pk))
    assert nothing.returncode == 2 and "nothing to change" in nothing.stderr and card.versions.count() == 2
    history = atelier(logged_in, "prompter", "history", str(card.pk)).stdout.splitlines()
    assert history[0] == f"prompter card {card.pk} (cli-model): 2 version(s)" and history[1].split() == ["version", "when", "by", "changed"]
    assert [line.split("  ")[0] for line in history[2:]] == ["1", "2"] and "API token 'cli'" in history[3]
    assert history[3].endswith("family, parameters") and history[2].endswith("name, kind, weights, parameters, contact")
