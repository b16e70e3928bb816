"""Operators' endpoints: /healthz, /readyz with one check failing at a time (the queues' Redis gone: unready; a predictor
whose weights do not match their hashes: degraded), and /metrics behind its token or address list, with what it reads."""

from __future__ import annotations

import json

import pytest

from evaluation.models import Judgement, PromptEntry, Render, Submission

DEAD_REDIS = "redis://127.0.0.1:1/0"


def test_healthz_asks_nothing(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_names_each_check_and_fails_with_the_one_that_fails(db, client, settings, tmp_path):
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready["Cache-Control"] == "no-store"
    checks = ready.json()["checks"]
    assert set(checks) == {"database", "queues", "media_storage", "judge", "predictor", "release_key", "cache"}
    assert all(c["ok"] for c in checks.values()) and checks["predictor"]["detail"] == "none installed"

    settings.REDIS_URL = DEAD_REDIS  # the work queues' Redis is gone
    settings.RQ_QUEUES = {name: {**queue, "URL": DEAD_REDIS} for name, queue in settings.RQ_QUEUES.items()}
    down = client.get("/readyz")
    assert down.status_code == 503 and down.json()["status"] == "unready"
    assert down.json()["checks"]["queues"] == {"ok": False, "detail": "failed (ConnectionError)", "seconds": pytest.approx(0, abs=5)}
    assert all(c["ok"] for name, c in down.json()["checks"].items() if name != "queues")

    settings.CACHES = {"default": {"BACKEND": "atelier.cache.RedisCache", "LOCATION": DEAD_REDIS, "OPTIONS": {"socket_connect_timeout": 1}}}
    cache = client.get("/readyz").json()["checks"]["cache"]  # reported, not failing: the pages fail open
    assert cache["ok"] and cache["detail"] == "unreachable (ConnectionError): pages are served uncached"


def test_a_release_key_that_cannot_sign_is_unready_and_a_missing_one_is_reported(db, client, settings, tmp_path):
    from leaderboard.releases import key_create

    settings.ATELIER_RELEASE_KEY = tmp_path / "release.pem"
    none = client.get("/readyz").json()["checks"]["release_key"]
    assert none["ok"] and none["detail"].startswith("none: board downloads are unsigned")
    listed = key_create()
    assert client.get("/readyz").json()["checks"]["release_key"]["detail"] == f"Ed25519 {listed.fingerprint[:16]}…"
    key_create(tmp_path / "next.pem", rotate=True)  # another key listed: the configured one is retired
    retired = client.get("/readyz")
    assert retired.status_code == 503 and "was retired on" in retired.json()["checks"]["release_key"]["detail"]
    (tmp_path / "release.pem").write_text("-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n")
    broken = client.get("/readyz")
    detail = broken.json()["checks"]["release_key"]["detail"]
    assert broken.status_code == 503 and detail == "the release key is not an Ed25519 private key in PEM" and str(tmp_path) not in detail


def corrupted_predictor(folder):
    """A predictor folder whose weights file does not match the hash its manifest names."""
    folder.mkdir()
    (folder / "model-seed0.safetensors").write_bytes(b"not the trained weights")
    weights = [{"file": "model-seed0.safetensors", "sha256": "0" * 64, "member": "seed0"}]
    (folder / "manifest.json").write_text(json.dumps({"format": 1, "kind": "minilm-finetuned", "version": "v-x", "weights": weights}))
    return folder


def test_a_corrupted_predictor_degrades_readiness_without_failing_it_and_staff_see_why(
    db, client, admin_client, settings, tmp_path, sample_pack
):
    settings.ATELIER_DIFFICULTY_MODEL = corrupted_predictor(tmp_path / "difficulty")
    response = client.get("/readyz")  # optional: a load balancer keeps the node, operators read why
    assert response.status_code == 200 and response.json()["status"] == "degraded"
    problem = response.json()["checks"]["predictor"]
    assert not problem["ok"] and problem["degraded"] and "does not match manifest.json" in problem["detail"]
    assert str(tmp_path) not in problem["detail"]
    staff = admin_client.get("/tasks/").content.decode()
    assert 'id="predictor-problem"' in staff and "does not match manifest.json" in staff and "No prompt difficulty predictor" in staff
    public = client.get("/tasks/").content.decode()
    assert 'id="predictor-problem"' not in public and "No prompt difficulty predictor" in public


def test_metrics_answer_only_the_token_or_the_address_list(db, client, settings, team, sample_pack):
    submission = Submission.objects.create(team=team, pack=sample_pack, prompter="m", status="running")
    entry = PromptEntry.objects.create(submission=submission, task=sample_pack.tasks.first(), text="a red sun")
    Render.objects.create(entry=entry, backend="smoke-sd", image_index=0, seed=1, config_hash="h", prompt_sha="s", status="ok")
    Render.objects.create(
        entry=entry,
        backend="smoke-sd",
        image_index=1,
        seed=2,
        config_hash="h",
        prompt_sha="s",
        status="failed",
        error="job error (Timeout)",
    )
    judgement = Judgement.objects.create(
        submission=submission,
        entry=entry,
        skill="prompt_subjective",
        judge_id="openai:m",
        judge_version="1",
        status="ok",
        calls=7,
        throttled=2,
        prompt_tokens=900,
        cached_prompt_tokens=512,
    )
    settings.ATELIER_JUDGE_RPM = 30  # a shared budget, in this process's memory here (no REDIS_URL)
    assert client.get("/metrics").status_code == 404  # neither set: off
    settings.ATELIER_METRICS_TOKEN = "scrape-secret"
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 404
    client.get("/tasks/")  # one timed request before the scrape
    response = client.get("/metrics", headers={"Authorization": "Bearer scrape-secret"})
    body = response.content.decode()
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain; version=")
    assert 'atelier_request_seconds_count{method="GET",route="tasks",status="2xx"}' in body
    assert 'atelier_units{kind="render",status="ok"} 1.0' in body and 'atelier_units{kind="render",status="failed"} 1.0' in body
    assert 'atelier_unit_failures{kind="render",reason="job error (Timeout)"} 1.0' in body
    assert "atelier_queues_up 1.0" in body  # in-process: no Redis to lose
    assert (
        f'atelier_judge_requests{{judge="{judgement.judge_id}"}} 7.0' in body
        and f'atelier_judge_throttled{{judge="{judgement.judge_id}"}} 2.0' in body
    )
    assert f'atelier_judge_prompt_tokens{{judge="{judgement.judge_id}"}} 900.0' in body
    assert f'atelier_judge_cached_prompt_tokens{{judge="{judgement.judge_id}"}} 512.0' in body
    assert "atelier_judge_cost_usd" not in body  # no prices configured: tokens only
    assert 'atelier_judge_budget{what="requests_used"} 0.0' in body and 'atelier_judge_budget{what="requests_limit"} 30.0' in body
    settings.ATELIER_METRICS_TOKEN = ""
    settings.ATELIER_METRICS_ALLOW = (__import__("ipaddress").ip_network("10.0.0.0/8"),)
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.0.2.9").status_code == 404


def test_wrong_metrics_tokens_are_counted_and_locked_out_but_not_the_right_one_or_anonymous(db, client, settings):
    settings.ATELIER_METRICS_TOKEN, limit = "scrape-secret", settings.ATELIER_TOKEN_FAILURE_LIMIT
    wrong = [client.get("/metrics", headers={"Authorization": f"Bearer guess-{n}"}) for n in range(limit + 5)]
    assert [r.status_code for r in wrong] == [404] * limit + [429] * 5, [r.status_code for r in wrong]
    assert int(wrong[-1]["Retry-After"]) > 0
    assert client.get("/metrics").status_code == 404  # no token: not refused for the guesser's failures
    assert client.get("/metrics", headers={"Authorization": "Bearer scrape-secret"}).status_code == 200
    assert client.get("/api/v1/submissions/1", headers={"Authorization": "Bearer atl_wrong"}).status_code == 401  # own count
