"""The parts an endpoint prompter run is built from: conditions, messages, reply cleaning, secrets at rest and the client."""

from __future__ import annotations

import base64
import copy
import hashlib
import io
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from PIL import Image

from evaluation import crypto
from evaluator.prompters.client import FAILED, OK, REDACTED, REFUSED, EndpointSpec, PrompterClient, clean_prompt, redact
from evaluator.prompters.conditions import BUILT_IN, ConditionError, load_conditions
from evaluator.prompters.messages import Feedback, Request, elided, request_text, round_messages
from tests.openai_server import Reply, completion_body

VERSION = re.compile(r"^1\+[0-9a-f]{8}$")


def png(color: tuple[int, int, int], size: int = 4) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (size, size), color).save(buffer, format="PNG")
    return buffer.getvalue()


def built_in() -> dict:
    return json.loads(BUILT_IN.read_text(encoding="utf-8"))


def write(tmp_path, data, name="conditions.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


# --- conditions ---------------------------------------------------------------------------------------------


def test_built_in_conditions_load_with_versioned_names():
    conditions = load_conditions()
    assert {"plain", "guided"} <= set(conditions)
    for name in ("plain", "guided"):
        condition = conditions[name]
        assert condition.name == name and condition.number == 1
        assert VERSION.match(condition.version), condition.version
        assert condition.label == f"{name} v{condition.version}"
        assert "{score}" in condition.feedback
    assert conditions["plain"].version != conditions["guided"].version


def test_editing_the_wording_without_bumping_the_number_gives_a_new_version(tmp_path):
    before = load_conditions()["plain"]
    edited = built_in()["plain"] | {"system": built_in()["plain"]["system"] + " Be brief."}
    after = load_conditions(write(tmp_path, {"plain": edited}))["plain"]
    assert after.number == before.number == 1
    assert VERSION.match(after.version)
    assert after.version != before.version
    assert after.system.endswith("Be brief.")
    # The same words read from a deployer file give the same version as the built-in.
    same = load_conditions(write(tmp_path, {"plain": built_in()["plain"]}, "same.json"))["plain"]
    assert same.version == before.version


def test_a_deployer_condition_is_loaded_alongside_the_built_in_ones(tmp_path):
    extra = {
        "terse": {
            "version": 3,
            "system": "Be terse.",
            "brief": "Write a prompt.",
            "imitation": "Copy the image.",
            "feedback": "Again.{score}",
        }
    }
    conditions = load_conditions(write(tmp_path, extra))
    assert {"plain", "guided", "terse"} <= set(conditions)
    assert conditions["terse"].number == 3 and re.match(r"^3\+[0-9a-f]{8}$", conditions["terse"].version)
    assert conditions["terse"].description == ""
    assert conditions["plain"].version == load_conditions()["plain"].version


def _good() -> dict:
    return {"version": 1, "system": "S.", "brief": "B.", "imitation": "I.", "feedback": "F.{score}"}


@pytest.mark.parametrize(
    ("name", "change", "field"),
    [
        ("missing-system", {"system": None}, "'system'"),
        ("version-zero", {"version": 0}, "'version'"),
        ("version-text", {"version": "1"}, "'version'"),
        ("version-bool", {"version": True}, "'version'"),
        ("other-placeholder", {"feedback": "This is the image.{other} Try again."}, "'feedback'"),
        ("empty-brief", {"brief": "   "}, "'brief'"),
    ],
)
def test_a_bad_condition_field_is_refused_naming_the_file_and_the_field(tmp_path, name, change, field):
    raw = {k: v for k, v in (_good() | change).items() if v is not None}
    path = write(tmp_path, {name: raw})
    with pytest.raises(ConditionError) as caught:
        load_conditions(path)
    message = str(caught.value)
    assert str(path) in message and field in message and name in message


def test_a_bad_condition_name_is_refused_naming_the_file_and_the_name(tmp_path):
    path = write(tmp_path, {"Bad Name": _good()})
    with pytest.raises(ConditionError) as caught:
        load_conditions(path)
    message = str(caught.value)
    assert str(path) in message and "'Bad Name'" in message and "name" in message


@pytest.mark.parametrize(
    "data", [b'{"plain": ', b"[1, 2]", b"\xff\xfe not utf-8 \xff"], ids=["truncated-json", "not-an-object", "not-utf8"]
)
def test_an_unreadable_conditions_file_is_refused_naming_the_file(tmp_path, data):
    path = tmp_path / "broken.json"
    path.write_bytes(data)
    with pytest.raises(ConditionError) as caught:
        load_conditions(path)
    assert str(path) in str(caught.value)


def test_a_missing_conditions_file_is_refused_naming_it(tmp_path):
    path = tmp_path / "nowhere.json"
    with pytest.raises(ConditionError, match=re.escape(str(path))):
        load_conditions(path)


# --- messages -----------------------------------------------------------------------------------------------

CONSTRAINTS = {"text": 'The sign reads "OPEN"', "layout": "the loaf in the left third", "mood": "quiet", "quantity": "  "}


@pytest.mark.parametrize("category", ["OE", "CO"])
def test_a_brief_request_carries_title_brief_and_every_constraint_as_bullets(category):
    condition = load_conditions()["plain"]
    request = Request(category=category, title="Bakery at dawn", brief="A small bakery just opening.", constraints=CONSTRAINTS)
    messages = round_messages(condition, request, [])
    assert messages[0] == {"role": "system", "content": condition.system}
    assert len(messages) == 2 and messages[1]["role"] == "user"
    text = messages[1]["content"]
    assert isinstance(text, str) and text.startswith(condition.brief)
    assert "Bakery at dawn" in text and "A small bakery just opening." in text
    for name in ("text", "layout", "mood"):
        assert f"- {name}: {CONSTRAINTS[name]}" in text.splitlines()
    assert "- quantity" not in text  # blank constraints are left out
    assert text.endswith(request_text(request))
    assert "image_url" not in json.dumps(messages)


def test_an_imitation_request_without_its_target_raises():
    request = Request(category="IM", title="Copy this", brief="Match the target.")
    with pytest.raises(ValueError):
        round_messages(load_conditions()["plain"], request, [])


def test_an_imitation_request_attaches_exactly_one_png_data_url():
    target = png((200, 10, 10))
    condition = load_conditions()["plain"]
    messages = round_messages(condition, Request(category="IM", title="Copy this", brief="Match it.", target_png=target), [])
    content = messages[1]["content"]
    assert isinstance(content, list)
    images = [part for part in content if part["type"] == "image_url"]
    texts = [part for part in content if part["type"] == "text"]
    assert len(images) == 1 and len(texts) == 1
    url = images[0]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == target
    assert texts[0]["text"].startswith(condition.imitation) and "Copy this" in texts[0]["text"]


def _image_urls(message) -> list[str]:
    content = message["content"]
    return [p["image_url"]["url"] for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


def test_later_rounds_replay_prompts_in_order_and_attach_only_the_last_feedback_image():
    condition = load_conditions()["plain"]
    first, second, third = png((1, 2, 3)), png((4, 5, 6)), png((7, 8, 9))
    history = [
        Feedback(prompt="prompt one", image_png=first, score_line="It scores 20/100 for similarity to the target."),
        Feedback(prompt="prompt two", image_png=None, score_line=""),
        Feedback(prompt="prompt three", image_png=second, score_line="It scores 41/100 for similarity to the target."),
        Feedback(prompt="prompt four", image_png=third, score_line="It scores 63/100 for similarity to the target."),
    ]
    request = Request(category="OE", title="Bakery", brief="Bread.")
    messages = round_messages(condition, request, history)
    assert [m["role"] for m in messages] == ["system", "user"] + ["assistant", "user"] * 4
    assert [m["content"] for m in messages if m["role"] == "assistant"] == ["prompt one", "prompt two", "prompt three", "prompt four"]
    feedback = messages[3::2]
    assert [len(_image_urls(m)) for m in feedback] == [0, 0, 0, 1]
    assert base64.b64decode(_image_urls(feedback[-1])[0].split(",", 1)[1]) == third
    last_text = next(p["text"] for p in feedback[-1]["content"] if p["type"] == "text")
    assert last_text == condition.feedback.format(score=" It scores 63/100 for similarity to the target.")
    assert "produced. It scores 63/100 for similarity to the target. Write" in last_text
    assert "It scores 20/100" in feedback[0]["content"] and "Round 1" in feedback[0]["content"]
    assert "could not be made" in feedback[1]["content"]
    assert "{score}" not in json.dumps(messages)


def test_later_rounds_of_an_imitation_task_keep_the_target_and_only_the_last_feedback_image():
    target, last = png((10, 10, 10)), png((20, 20, 20))
    history = [Feedback("p1", png((30, 30, 30)), ""), Feedback("p2", last, "")]
    messages = round_messages(load_conditions()["guided"], Request(category="IM", title="T", brief="B", target_png=target), history)
    urls = [url for m in messages for url in _image_urls(m)]
    assert len(urls) == 2
    assert base64.b64decode(urls[0].split(",", 1)[1]) == target and base64.b64decode(urls[1].split(",", 1)[1]) == last
    assert _image_urls(messages[-1]) and not _image_urls(messages[3])


def test_elided_replaces_every_data_url_and_leaves_the_input_alone():
    target, feedback = png((200, 100, 0), 6), png((0, 100, 200), 5)
    messages = round_messages(load_conditions()["plain"], Request("IM", "T", "B", target_png=target), [Feedback("p1", feedback, "")])
    messages.append({"role": "user", "content": "inline " + "data:image/png;base64," + base64.b64encode(target).decode()})
    before = copy.deepcopy(messages)
    shown = elided(messages)
    assert messages == before
    dumped = json.dumps(shown)
    assert "base64" not in dumped and "data:image" not in dumped
    for data in (target, feedback):
        assert len(data) < 1000  # so the byte count has no thousands separator
        assert f"[png image, {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:12]}]" in dumped
    assert dumped.count("[png image, ") == 3
    assert shown[-1]["content"].startswith("inline [png image, ")
    assert shown[0] == messages[0] and shown[2] == messages[2]


# --- clean_prompt -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "prompt"),
    [
        ("  a red fox in snow \n\n", "a red fox in snow"),
        ("```\na red fox in snow\n```", "a red fox in snow"),
        ("```text\na red fox in snow\n```", "a red fox in snow"),
        ("  ```markdown\n  a red fox in snow  \n```  ", "a red fox in snow"),
        ('"a red fox in snow"', "a red fox in snow"),
        ("'a red fox in snow'", "a red fox in snow"),
        ("\u201ca red fox in snow\u201d", "a red fox in snow"),
        ('```\n"a red fox in snow"\n```', "a red fox in snow"),
        ('a sign saying "OPEN" on a door', 'a sign saying "OPEN" on a door'),
        ('"a sign saying "OPEN" on a door"', 'a sign saying "OPEN" on a door'),
        ('""a red fox""', '"a red fox"'),
        ("a fox's den", "a fox's den"),
        ("```\n```python\nx\n```\n```", "```python\nx\n```"),
    ],
)
def test_clean_prompt_takes_off_whitespace_one_fence_and_one_pair_of_quotes(reply, prompt):
    assert clean_prompt(reply) == prompt


# --- secrets at rest ----------------------------------------------------------------------------------------


def test_encrypt_decrypt_round_trip_hides_the_plaintext(settings):
    settings.ATELIER_SECRET_KEYS = ()
    token = crypto.encrypt("sk-very-secret-123")
    assert token and "sk-very-secret-123" not in token
    assert crypto.decrypt(token) == "sk-very-secret-123"
    assert crypto.encrypt("sk-very-secret-123") != token  # Fernet tokens are salted
    assert crypto.encrypt("") == "" and crypto.decrypt("") == "" and crypto.rotate("") == ""


def test_rotation_keeps_old_tokens_readable_and_moves_them_to_the_new_key(settings):
    settings.ATELIER_SECRET_KEYS = ()
    old = crypto.encrypt("sk-old")
    new_key = Fernet.generate_key().decode()
    settings.ATELIER_SECRET_KEYS = (new_key, crypto.DERIVED)
    assert crypto.decrypt(old) == "sk-old"
    fresh = crypto.encrypt("sk-fresh")
    rotated = crypto.rotate(old)
    assert rotated != old
    settings.ATELIER_SECRET_KEYS = (new_key,)
    assert crypto.decrypt(rotated) == "sk-old" and crypto.decrypt(fresh) == "sk-fresh"
    assert Fernet(new_key.encode()).decrypt(rotated.encode()) == b"sk-old"
    with pytest.raises(crypto.SecretUnreadable, match="ATELIER_SECRET_KEYS"):
        crypto.decrypt(old)


def test_a_token_whose_key_was_dropped_is_unreadable_naming_the_setting(settings):
    settings.ATELIER_SECRET_KEYS = (Fernet.generate_key().decode(),)
    token = crypto.encrypt("sk-1")
    settings.ATELIER_SECRET_KEYS = (Fernet.generate_key().decode(),)
    with pytest.raises(crypto.SecretUnreadable) as caught:
        crypto.decrypt(token)
    assert "ATELIER_SECRET_KEYS" in str(caught.value) and "sk-1" not in str(caught.value)


@pytest.mark.parametrize("keys", [("not-a-fernet-key",), (Fernet.generate_key().decode(), "short")])
def test_a_malformed_key_is_a_configuration_error_naming_the_setting(settings, keys):
    settings.ATELIER_SECRET_KEYS = keys
    with pytest.raises(ImproperlyConfigured, match="ATELIER_SECRET_KEYS"):
        crypto.encrypt("sk-1")


def test_rotate_secrets_re_encrypts_stored_endpoint_keys(db, team, settings):
    from submissions.services import endpoint_create
    from teams.models import Endpoint

    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)
    settings.ATELIER_SECRET_KEYS = ()
    keyed = endpoint_create(team=team, name="keyed", base_url="http://127.0.0.1:9/v1", model="m", api_key="sk-stored")
    keyless = endpoint_create(team=team, name="keyless", base_url="http://127.0.0.1:9/v1", model="m")
    assert keyed.key_encrypted and "sk-stored" not in keyed.key_encrypted and keyless.key_encrypted == ""
    before = keyed.key_encrypted

    new_key = Fernet.generate_key().decode()
    settings.ATELIER_SECRET_KEYS = (new_key,)
    with pytest.raises(crypto.SecretUnreadable):  # the old key is not there yet: nothing can read it
        crypto.decrypt(before)

    settings.ATELIER_SECRET_KEYS = (new_key, "secret-key")
    out = io.StringIO()
    call_command("rotate_secrets", stdout=out)
    assert "re-encrypted 1 endpoint key(s)" in out.getvalue()

    settings.ATELIER_SECRET_KEYS = (new_key,)  # the derived key dropped
    keyed.refresh_from_db()
    keyless.refresh_from_db()
    assert keyed.key_encrypted != before and keyless.key_encrypted == ""
    assert crypto.decrypt(keyed.key_encrypted) == "sk-stored"
    assert Endpoint.objects.get(pk=keyed.pk).has_key


# --- PrompterClient -----------------------------------------------------------------------------------------

MESSAGES = [{"role": "system", "content": "You write prompts."}, {"role": "user", "content": "Title: Fox\nRequest: a fox"}]


def spec_for(server, **changes) -> EndpointSpec:
    return EndpointSpec(
        **(
            {
                "base_url": server.base_url,
                "model": "team-model",
                "api_key": "sk-team",
                "timeout": 5.0,
                "max_retries": 0,
                "allowed_hosts": ("127.0.0.1",),
            }
            | changes
        )
    )


@pytest.fixture
def allowed(settings):
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)


def test_the_client_sends_the_endpoint_parameters_and_per_call_overrides(prompter_server, allowed):
    client = PrompterClient(spec_for(prompter_server, temperature=0.7, top_p=0.9, max_tokens=300, seed=11))
    outcome = client.call(MESSAGES, max_chars=2000)
    assert outcome.status == OK, outcome.error
    assert outcome.text.startswith("A detailed image for Fox, round 1") and outcome.requests == 1 and outcome.http_status == 200
    assert (outcome.prompt_tokens, outcome.completion_tokens) == (200, 25)
    sent = prompter_server.requests[-1]
    assert sent["model"] == "team-model" and sent["messages"] == MESSAGES
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"], sent["seed"]) == (0.7, 0.9, 300, 11)

    client.call(MESSAGES, max_chars=2000, temperature=0.2, seed=5)
    sent = prompter_server.requests[-1]
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"], sent["seed"]) == (0.2, 0.9, 300, 5)

    client.call(MESSAGES, max_chars=2000, temperature=0.0, seed=0)  # zero is a value, not "unset"
    sent = prompter_server.requests[-1]
    assert (sent["temperature"], sent["seed"]) == (0.0, 0)


def test_unset_parameters_are_not_sent(prompter_server, allowed):
    outcome = PrompterClient(spec_for(prompter_server)).call(MESSAGES, max_chars=2000)
    assert outcome.status == OK
    assert not {"temperature", "top_p", "max_tokens", "seed"} & set(prompter_server.requests[-1])


class _HeaderRecorder:
    """A minimal chat-completions server that records request headers (ScriptedOpenAIServer does not)."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                recorder.headers.append({k.lower(): v for k, v in self.headers.items()})
                data = json.dumps(completion_body(Reply(content="a fox"), "m", 1)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def test_the_api_key_is_sent_as_a_bearer_token(prompter_server, allowed):
    if not hasattr(prompter_server, "headers"):  # ScriptedOpenAIServer keeps bodies only: use a recorder of our own
        server = _HeaderRecorder()
        try:
            assert PrompterClient(spec_for(server)).call(MESSAGES, max_chars=2000).status == OK
            assert PrompterClient(spec_for(server, api_key="")).call(MESSAGES, max_chars=2000).status == OK
        finally:
            server.stop()
        received = server.headers
    else:  # pragma: no cover - should the scripted server ever record headers
        PrompterClient(spec_for(prompter_server)).call(MESSAGES, max_chars=2000)
        PrompterClient(spec_for(prompter_server, api_key="")).call(MESSAGES, max_chars=2000)
        received = [{k.lower(): v for k, v in h.items()} for h in prompter_server.headers[-2:]]
    assert received[0]["authorization"] == "Bearer sk-team"
    assert "sk-team" not in received[1].get("authorization", "")


def test_a_reply_without_text_fails(prompter_server, allowed):
    prompter_server.queue(Reply(content=None))
    outcome = PrompterClient(spec_for(prompter_server)).call(MESSAGES, max_chars=2000)
    assert outcome.status == FAILED and outcome.text == ""
    assert outcome.error.startswith("the reply has no text") and outcome.http_status == 200


def test_a_content_filter_finish_is_a_refusal(prompter_server, allowed):
    prompter_server.queue(Reply(content="", finish_reason="content_filter"), Reply(content=None, refusal="I cannot help with that."))
    client = PrompterClient(spec_for(prompter_server))
    filtered = client.call(MESSAGES, max_chars=2000)
    assert (
        filtered.status == REFUSED
        and filtered.text == ""
        and filtered.error == "the model refused"
        and filtered.reply == "finish_reason content_filter"
    )
    refused = client.call(MESSAGES, max_chars=2000)
    assert refused.status == REFUSED and refused.error == "the model refused" and refused.reply == "I cannot help with that."


def test_an_http_error_fails_naming_the_status(prompter_server, allowed):
    prompter_server.queue(Reply(status=400, content="bad parameter: seed"))
    outcome = PrompterClient(spec_for(prompter_server, max_retries=2)).call(MESSAGES, max_chars=2000)
    assert outcome.status == FAILED and outcome.http_status == 400
    assert "HTTP 400" in outcome.error and "bad parameter: seed" in outcome.reply
    assert outcome.requests == 1  # a 400 is not retried


def test_retries_are_counted_in_requests(prompter_server, allowed):
    fast = {"retry-after-ms": "10"}
    prompter_server.queue(Reply(status=500, content="busy", headers=fast), Reply(status=500, content="busy", headers=fast))
    outcome = PrompterClient(spec_for(prompter_server, max_retries=2)).call(MESSAGES, max_chars=2000)
    assert outcome.status == OK, outcome.error
    assert outcome.requests == 3 == len(prompter_server.requests)


def test_retries_that_run_out_fail_naming_the_tries(prompter_server, allowed):
    fast = {"retry-after-ms": "10"}
    prompter_server.queue(*[Reply(status=503, content="down", headers=fast)] * 3)
    outcome = PrompterClient(spec_for(prompter_server, max_retries=2)).call(MESSAGES, max_chars=2000)
    assert outcome.status == FAILED and outcome.requests == 3
    assert outcome.error == "HTTP 503 (InternalServerError) after 3 requests"


def test_a_prompt_over_the_limit_fails(prompter_server, allowed):
    prompter_server.queue(Reply(content="x" * 50))
    outcome = PrompterClient(spec_for(prompter_server)).call(MESSAGES, max_chars=20)
    assert outcome.status == FAILED and "50 characters" in outcome.error and outcome.text == ""


def test_an_endpoint_that_echoes_its_key_never_gets_it_recorded(prompter_server, allowed):
    """A 401 body, a refusal or a prompt that repeats the key: what the call records (stored, logged, shown) has it
    taken out; the spec's repr never shows it."""
    key = "sk-echoed-SECRET-0123456789"
    prompter_server.queue(
        Reply(status=401, content=f"Incorrect API key provided: {key}"),
        Reply(content=None, refusal=f"I will not, {key}"),
        Reply(content=f"a fox at dawn, {key}"),
    )
    spec = spec_for(prompter_server, api_key=key)
    client = PrompterClient(spec)
    unauthorised, refused, answered = (client.call(MESSAGES, max_chars=2000) for _ in range(3))
    assert (unauthorised.status, refused.status, answered.status) == (FAILED, REFUSED, OK)
    for outcome in (unauthorised, refused, answered):
        assert key not in repr(outcome)
    assert unauthorised.http_status == 401 and unauthorised.error.startswith("HTTP 401")
    assert unauthorised.error == "HTTP 401 (AuthenticationError)" and f"Incorrect API key provided: {REDACTED}" in unauthorised.reply
    assert refused.error == "the model refused" and refused.reply == f"I will not, {REDACTED}"
    assert answered.text == f"a fox at dawn, {REDACTED}" and answered.reply == answered.text
    assert key not in repr(spec) and key not in repr(client.spec)
    assert redact("none of these", "none") == "none of these"  # a short key is an ordinary word: left alone
