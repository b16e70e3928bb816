"""The demo's registered endpoint can be tried (issue 21): the demo site serves its scripted prompter itself, and with
the demo (DEBUG) the allow-list lets exactly that host:port through, so the team page's Test call succeeds after
`make demo`. A deployment has no demo route at all (issue 43)."""

from __future__ import annotations

import importlib

import pytest
from django.urls import Resolver404, resolve

from demo import prompter as demo_prompter
from evaluator.prompters.ssrf import UnsafeURL, check_url
from submissions.services import endpoint_create, endpoint_test_call
from tests.conftest import deployed_urls


def test_debug_settings_allow_the_demo_site_alone_and_no_other_loopback_port(monkeypatch):
    from atelier import settings as module

    monkeypatch.setenv("DEBUG", "true")
    monkeypatch.delenv("ATELIER_PROMPTER_ALLOWED_HOSTS", raising=False)
    loaded = importlib.reload(module)
    try:
        assert loaded.ATELIER_PROMPTER_ALLOWED_HOSTS == ("127.0.0.1:8000",) == (loaded.ATELIER_DEMO_PROMPTER,)
        assert check_url("http://127.0.0.1:8000/demo/prompter/v1", allowed=loaded.ATELIER_PROMPTER_ALLOWED_HOSTS) == ["127.0.0.1"]
        with pytest.raises(UnsafeURL, match="loopback"):
            check_url("http://127.0.0.1:6379/", allowed=loaded.ATELIER_PROMPTER_ALLOWED_HOSTS)  # e.g. the Redis beside it
        monkeypatch.setenv("DEBUG", "false")
        monkeypatch.setenv("SECRET_KEY", "x" * 50)
        monkeypatch.setenv("ATELIER_SITE_URL", "https://atelier.example.org")
        assert importlib.reload(module).ATELIER_PROMPTER_ALLOWED_HOSTS == ()  # never in production
    finally:
        monkeypatch.setenv("DEBUG", "true")
        importlib.reload(module)


def test_the_demo_endpoint_served_by_the_site_passes_its_test_call(live_server, settings, team, sample_pack):
    address = live_server.url.split("//", 1)[1]
    settings.ATELIER_DEMO_PROMPTER = address
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS, settings.ATELIER_PROMPTER_MAX_RETRIES = (address,), 0
    endpoint = endpoint_create(team=team, name="scripted-demo", base_url=demo_prompter.site_base_url(), model="scripted rule (no model)")
    test = endpoint_test_call(endpoint=endpoint, pack=sample_pack)
    assert (test.outcome.status, test.outcome.requests, test.outcome.error) == ("ok", 1, "")
    assert test.outcome.text.startswith(sample_pack.tasks.get(task_id=test.task_id).title)


def test_a_deployment_has_no_demo_prompter_route(client, settings):
    with deployed_urls(settings):
        assert client.post("/demo/prompter/v1/chat/completions", "{}", content_type="application/json").status_code == 404
        with pytest.raises(Resolver404):
            resolve("/demo/prompter/v1/chat/completions")
    assert resolve("/demo/prompter/v1/chat/completions").url_name == "demo-prompter"  # routed again with the demo


def test_the_demo_endpoints_test_call_succeeds_in_the_browser(browser, client, owner, team, sample_pack, settings):
    """As a newcomer tries it after `make demo`: the team's endpoint page, the Test call button, status ok."""
    from tests.test_phone_widths import log_in

    address = browser.base_url.split("//", 1)[1]
    settings.ATELIER_DEMO_PROMPTER = address
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS, settings.ATELIER_PROMPTER_MAX_RETRIES = (address,), 0
    endpoint = endpoint_create(team=team, name="scripted-demo", base_url=demo_prompter.site_base_url(), model="scripted rule (no model)")
    log_in(browser, client, owner)
    browser.get(f"/teams/{team.slug}/endpoints/{endpoint.pk}/")
    browser.click_and_wait("#test-form button[type=submit]")
    assert browser.find("#test-status").text == "ok", browser.find("#test-result").text
    browser.shot("demo-endpoint-test-call")
