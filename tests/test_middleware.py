"""Backend middleware: a rewriter model between the submitted prompt and the renderer."""

from __future__ import annotations

import copy
import csv
import dataclasses
import hashlib
import io
import json

import pytest

from evaluation import runtime
from evaluation.models import Render, Submission, UnitStatus
from evaluator.backends.config import SMOKE_REVISION, BackendConfig, BackendError, load_backend_configs
from submissions.services import submission_create
from tests.conftest import TEST_BACKENDS
from tests.openai_server import Reply, ScriptedOpenAIServer, request_text

SMOKE = json.loads(TEST_BACKENDS.read_text())["backends"]
REWRITER = {"base_url": "http://127.0.0.1:9/v1", "model": "rewriter", "instruction": "Rewrite the prompt."}
PROMPT = b'{"task_id": "oe-s01", "prompt": "bread at dawn"}'


def smoke(**changes) -> dict:
    return copy.deepcopy(SMOKE[0]) | changes


# --- config -------------------------------------------------------------------------------------------------


def test_a_valid_rewriter_is_accepted_with_its_optional_fields():
    full = REWRITER | {"api_key_env": "REWRITER_KEY", "temperature": 0.3, "timeout": 10}
    config = BackendConfig.from_dict(smoke(rewriter=full))
    assert dict(config.rewriter) == full
    assert config.to_dict()["rewriter"] == full
    assert BackendConfig.from_dict(smoke(rewriter=REWRITER | {"temperature": 1})).rewriter["temperature"] == 1  # an int is a number


@pytest.mark.parametrize(
    "rewriter",
    [
        pytest.param("http://127.0.0.1:9/v1", id="not-an-object"),
        pytest.param(["http://127.0.0.1:9/v1"], id="a-list"),
        pytest.param({k: v for k, v in REWRITER.items() if k != "instruction"}, id="missing-instruction"),
        pytest.param(REWRITER | {"instruction": "  "}, id="blank-instruction"),
        pytest.param(REWRITER | {"model": 7}, id="model-not-text"),
        pytest.param(REWRITER | {"prompt_prefix": "x"}, id="unknown-field"),
        pytest.param(REWRITER | {"base_url": "ftp://127.0.0.1/v1"}, id="non-http-base-url"),
        pytest.param(REWRITER | {"base_url": "127.0.0.1:9/v1"}, id="schemeless-base-url"),
        pytest.param(REWRITER | {"temperature": "0.5"}, id="temperature-text"),
        pytest.param(REWRITER | {"temperature": True}, id="temperature-bool"),
        pytest.param(REWRITER | {"timeout": None}, id="timeout-null"),
        pytest.param(REWRITER | {"api_key_env": 3}, id="api-key-env-not-text"),
    ],
)
def test_a_bad_rewriter_is_refused_naming_the_field(rewriter):
    with pytest.raises(BackendError, match="'rewriter'"):
        BackendConfig.from_dict(smoke(rewriter=rewriter))


def test_a_bad_rewriter_in_a_backends_file_names_the_file_and_the_backend(tmp_path):
    path = tmp_path / "backends.json"
    path.write_text(json.dumps({"backends": [smoke(rewriter=REWRITER | {"base_url": "file:///etc/passwd"})]}))
    with pytest.raises(BackendError) as caught:
        load_backend_configs(path)
    message = str(caught.value)
    assert str(path) in message and "'smoke-sd'" in message and "'rewriter'" in message


def _legacy_hash(config: BackendConfig) -> str:
    """version_hash() as it was computed before backends could have a rewriter."""
    fields = {k: v for k, v in dataclasses.asdict(config).items() if k not in ("enabled", "label", "rewriter", "batch_size")}
    fields["_schema"] = 1
    if config.is_smoke:
        fields["_smoke_revision"] = SMOKE_REVISION  # the smoke model's own revision, not the rewriter's concern
    return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


@pytest.mark.parametrize("entry", SMOKE, ids=[b["name"] for b in SMOKE])
def test_the_version_hash_is_unchanged_without_a_rewriter_and_changes_with_one(entry):
    plain = BackendConfig.from_dict(entry)
    assert plain.version_hash() == _legacy_hash(plain)
    assert BackendConfig.from_dict(entry | {"rewriter": None}).version_hash() == plain.version_hash()
    with_rewriter = BackendConfig.from_dict(entry | {"rewriter": REWRITER})
    assert with_rewriter.version_hash() != plain.version_hash()
    other_instruction = BackendConfig.from_dict(entry | {"rewriter": REWRITER | {"instruction": "Make it epic."}})
    assert other_instruction.version_hash() not in (plain.version_hash(), with_rewriter.version_hash())
    # Key order in the file does not matter.
    reordered = BackendConfig.from_dict(entry | {"rewriter": dict(reversed(list(REWRITER.items())))})
    assert reordered.version_hash() == with_rewriter.version_hash()


# --- end to end ---------------------------------------------------------------------------------------------


def rewrite(request: dict) -> Reply:
    return Reply(content="REWRITTEN: " + request_text(request))


@pytest.fixture
def rewriter_server():
    with ScriptedOpenAIServer(default=rewrite) as server:
        yield server


@pytest.fixture
def rewriting_backends(rewriter_server, settings, tmp_path):
    """The two smoke test backends; the first rewrites every prompt through rewriter_server."""
    first, second = copy.deepcopy(SMOKE)
    first["rewriter"] = {"base_url": rewriter_server.base_url, "model": "rewriter", "instruction": "Rewrite the prompt.", "timeout": 5}
    path = tmp_path / "backends-rewriter.json"
    path.write_text(json.dumps({"backends": [first, second]}))
    settings.ATELIER_BACKENDS_FILE = path
    runtime.reset()
    return first["name"], second["name"]


@pytest.mark.django_db(transaction=True)
def test_a_rewriting_backend_renders_the_rewrite_and_records_it(
    team, owner, sample_pack, scripted_judge, rewriter_server, rewriting_backends, client
):
    rewriting, plain = rewriting_backends
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=PROMPT)
    submission.refresh_from_db()

    renders = {r.backend: r for r in Render.objects.filter(entry__submission=submission)}
    assert set(renders) == {rewriting, plain}
    assert renders[rewriting].status == UnitStatus.OK, renders[rewriting].error
    assert renders[plain].status == UnitStatus.OK, renders[plain].error
    assert renders[rewriting].rewritten == "REWRITTEN: bread at dawn"
    assert renders[plain].rewritten == ""

    assert len(rewriter_server.requests) == 1
    sent = rewriter_server.requests[0]
    assert sent["model"] == "rewriter" and sent["temperature"] == 0
    assert sent["messages"][0] == {"role": "system", "content": "Rewrite the prompt."}
    assert request_text(sent) == "bread at dawn"
    assert not any(r.get("model") == "rewriter" for r in scripted_judge.requests)  # the judge has its own server

    recorded = {b["name"]: b for b in Submission.objects.get(pk=submission.pk).backends}
    assert recorded[rewriting]["rewriter"]["instruction"] == "Rewrite the prompt."
    assert recorded[rewriting]["rewriter"]["base_url"] == rewriter_server.base_url
    assert recorded[plain].get("rewriter") is None
    assert recorded[rewriting]["version_hash"] == renders[rewriting].config_hash != renders[plain].config_hash
    assert recorded[plain]["version_hash"] == BackendConfig.from_dict(SMOKE[1]).version_hash()  # no rewriter: the old hash

    client.force_login(owner)
    response = client.get(f"/submissions/{submission.pk}/breakdown.csv")
    assert response.status_code == 200
    rows = {row["backend"]: row for row in csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))}
    assert set(rows) == {rewriting, plain} and rows[rewriting]["prompt"] == "bread at dawn"
    assert rows[rewriting]["rewritten_prompt"] == "REWRITTEN: bread at dawn"
    assert rows[plain]["rewritten_prompt"] == ""


@pytest.mark.django_db(transaction=True)
def test_a_failing_rewriter_fails_only_its_backends_renders_naming_the_middleware(
    team, sample_pack, scripted_judge, rewriter_server, rewriting_backends
):
    rewriting, plain = rewriting_backends
    rewriter_server.default = lambda request: Reply(status=500, content="rewriter down", headers={"retry-after-ms": "10"})
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=PROMPT)

    renders = {r.backend: r for r in Render.objects.filter(entry__submission=submission)}
    assert renders[rewriting].status == UnitStatus.FAILED
    assert "middleware" in renders[rewriting].error and "'rewriter'" in renders[rewriting].error
    assert renders[rewriting].rewritten == "" and not renders[rewriting].image
    assert renders[plain].status == UnitStatus.OK, renders[plain].error
    assert renders[plain].image and renders[plain].rewritten == ""
    assert len(rewriter_server.requests) >= 1
