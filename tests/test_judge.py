"""AtelierJudge against a real local OpenAI-compatible server, and the offline embedding judge.

No mocking of openai: the real client talks HTTP to tests.openai_server.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from evaluator.judge import (
    DIMENSIONS,
    PROMPT_DIMENSIONS,
    EmbeddingJudge,
    JudgeConfig,
    JudgeConfigError,
    JudgeResult,
    Kind,
    OpenAIJudge,
    TaskInput,
    get_skill,
    make_judge,
    route_skills,
)
from evaluator.judge.messages import task_text
from evaluator.judge.openai_judge import RAW_SEPARATOR
from evaluator.judge.parsing import ReplyFormatError, parse_objective, parse_subjective, strip_fence
from evaluator.judge.skills import REGISTRY, Verdict, fill
from tests.openai_server import (
    EXPECTED_SUBJECTIVE_SCORE,
    SCRIPTED_COMPLETION_TOKENS,
    SCRIPTED_PROMPT_TOKENS,
    ProviderUsage,
    Reply,
    ScriptedOpenAIServer,
    expected_checklist,
    expected_checklist_value,
    openai_server,  # noqa: F401 - the fixture, until conftest registers the plugin
)

JUDGE_PACKAGE = Path(__file__).resolve().parents[1] / "evaluator" / "judge"

TASK = TaskInput(
    task_id="co-001",
    category="CO",
    title="Winter fox poster",
    brief="A poster of a fox in the snow for a winter festival.",
    constraints={"pairing": "", "layout": "fox centered", "quantity": "one fox", "text": "WINTER", "constraint": ""},
    prompt_checklist=("a red fox", "fresh snow", "golden hour lighting"),
    image_checklist=("a fox", "snow on the ground", "the word WINTER"),
)
IM_TASK = TaskInput("im-001", "IM", "Copy", "Recreate the target.", {}, ("a red fox",), ("a fox",))
PROMPT = "A red fox sitting in fresh snow, golden hour lighting. The title WINTER at the top."


def subjective_reply(dims: tuple[str, ...], score: object = 3) -> str:
    return json.dumps({d: {"score": score, "rationale": "ok"} for d in dims})


def judge_for(server: ScriptedOpenAIServer, **kwargs: object) -> OpenAIJudge:
    options: dict[str, object] = {"timeout": 5.0, "max_retries": 1}
    options.update(kwargs)
    return OpenAIJudge(JudgeConfig(base_url=server.base_url, model="judge-test", clip_pretrained="random", **options))  # type: ignore[arg-type]


def image(width: int = 800, height: int = 600) -> Image.Image:
    return Image.new("RGB", (width, height), (200, 60, 20))


# --- routing and result -------------------------------------------------------------------


ATELIEREVAL_SKILLS = ("prompt_subjective", "prompt_objective", "image_subjective", "image_objective")


def test_route_skills() -> None:
    assert route_skills("OE") == route_skills("CO") == ATELIEREVAL_SKILLS
    assert route_skills("IM") == ("prompt_subjective", "prompt_objective", "image_objective", "target_similarity")
    with pytest.raises(ValueError):
        route_skills("XX")


def test_fill_sets_the_headline_value_and_scale_of_ok_results_only() -> None:
    rubric = fill(JudgeResult("prompt_subjective", "failed"), Verdict(scores={"a": 4, "b": 5}))
    assert (rubric.value, rubric.scale) == (4.5, "likert_1_5")
    checklist = fill(JudgeResult("image_objective", "failed"), Verdict(checklist={"a": 1, "b": 0}))
    assert (checklist.value, checklist.scale) == (0.5, "rate_0_1")
    blocked = fill(JudgeResult("safety_prompt", "failed"), Verdict(status="blocked", reason="r"))
    assert (blocked.status, blocked.value, blocked.scale) == ("blocked", None, "")
    assert JudgeResult("image_objective", "failed", reason="bad").value is None


def test_make_judge_picks_implementation() -> None:
    offline = make_judge(JudgeConfig())
    assert isinstance(offline, EmbeddingJudge)
    assert offline.judge_id == "embedding:all-MiniLM-L6-v2+ViT-B-32(random)"
    assert "smoke (random weights)" in offline.label
    online = make_judge(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", clip_pretrained="random"))
    assert isinstance(online, OpenAIJudge)
    assert (online.judge_id, online.label) == ("openai:m", "AtelierJudge via m, route ateliereval; CLIP ViT-B-32 smoke (random weights)")
    assert online.version.startswith("rubric-v2+") and online.version == online.spec.version
    # The endpoint is for staff only, without credentials; it is in no label and changes neither id nor version.
    elsewhere = make_judge(JudgeConfig(base_url="http://user:secret@10.0.0.2:8000/v1", model="m", clip_pretrained="random"))
    assert elsewhere.spec.endpoints == ("10.0.0.2:8000",) and online.spec.endpoints == ("127.0.0.1:9",)
    assert (elsewhere.judge_id, elsewhere.version, elsewhere.label) == (online.judge_id, online.version, online.label)


def test_a_real_judge_with_unset_clip_weights_is_refused() -> None:
    with pytest.raises(JudgeConfigError, match="ATELIER_CLIP_PRETRAINED"):
        make_judge(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m"))


# --- strict parsing (pure) ------------------------------------------------------------------


def test_fence_is_the_only_leniency() -> None:
    assert strip_fence('```json\n{"a": 1}\n```') == '{"a": 1}'
    assert parse_objective('```\n{"a": 1}\n```', ("a",)) == {"a": 1}
    for bad in ('{"a": true}', '{"a": 1.0}', '{"a": 2}', '{"a": 1, "a": 1}', 'Sure! {"a": 1}', "[1]"):
        with pytest.raises(ReplyFormatError):
            parse_objective(bad, ("a",))
    with pytest.raises(ReplyFormatError):
        parse_subjective('{"d": {"score": 3, "rationale": "r", "note": "x"}}', ("d",))


# --- OpenAIJudge: happy paths ----------------------------------------------------------------


@pytest.mark.parametrize("skill", ATELIEREVAL_SKILLS)
def test_happy_path_each_skill(openai_server: ScriptedOpenAIServer, skill: str) -> None:
    result = judge_for(openai_server).run(skill, TASK, PROMPT, image())
    assert (result.status, result.reason, result.calls) == ("ok", "", 1)
    assert (result.prompt_tokens, result.completion_tokens) == (SCRIPTED_PROMPT_TOKENS, SCRIPTED_COMPLETION_TOKENS)
    assert result.cached_prompt_tokens == 0  # the usage has no prompt_tokens_details: nothing was cached
    request = openai_server.requests[0]
    assert request["model"] == "judge-test" and request["temperature"] == 0
    assert request["response_format"] == {"type": "json_object"}
    declared = get_skill(skill)
    if declared.kind == Kind.RUBRIC:
        dims = DIMENSIONS[declared.side]
        assert result.scores == dict.fromkeys(dims, EXPECTED_SUBJECTIVE_SCORE)
        assert set(result.rationales) == set(dims) and result.checklist == {}
        assert result.value == EXPECTED_SUBJECTIVE_SCORE
    else:
        items = TASK.checklist(declared.side)
        assert result.checklist == expected_checklist(items) == {items[0]: 1, items[1]: 0, items[2]: 1}
        assert result.value == pytest.approx(expected_checklist_value(items)) == pytest.approx(2 / 3)
        assert result.scores == {}
    assert json.loads(result.raw)


def test_prompt_skills_send_text_and_image_skills_hide_prompt(openai_server: ScriptedOpenAIServer) -> None:
    judge = judge_for(openai_server)
    judge.run("prompt_objective", TASK, PROMPT)
    judge.run("image_objective", TASK, PROMPT, image())
    prompt_user = openai_server.requests[0]["messages"][1]["content"]
    image_parts = openai_server.requests[1]["messages"][1]["content"]
    assert PROMPT in prompt_user and "layout: fox centered" in prompt_user and "pairing" not in prompt_user
    assert PROMPT not in image_parts[0]["text"]


def test_image_sent_as_downscaled_png_data_url(openai_server: ScriptedOpenAIServer) -> None:
    judge_for(openai_server, image_max_side=256).run("image_subjective", TASK, PROMPT, image(1024, 768))
    parts = openai_server.requests[0]["messages"][1]["content"]
    url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
    prefix = "data:image/png;base64,"
    assert url.startswith(prefix)
    received = Image.open(io.BytesIO(base64.b64decode(url[len(prefix) :])))
    assert (received.format, received.size) == ("PNG", (256, 192))


def test_small_image_is_not_enlarged(openai_server: ScriptedOpenAIServer) -> None:
    judge_for(openai_server, image_max_side=512).run("image_objective", TASK, PROMPT, image(100, 50))
    url = openai_server.requests[0]["messages"][1]["content"][1]["image_url"]["url"]
    assert Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size == (100, 50)


def test_fenced_reply_accepted(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.queue(Reply(content="```json\n" + subjective_reply(PROMPT_DIMENSIONS) + "\n```"))
    result = judge_for(openai_server).run("prompt_subjective", TASK, PROMPT)
    assert result.status == "ok" and result.value == 3


# --- requests a provider can cache ---------------------------------------------------------------

MODEL_SKILLS = tuple(name for name, skill in REGISTRY.items() if skill.kind != Kind.METRIC)


def _parts(request: dict) -> list[dict]:
    content = request["messages"][1]["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


QUOTING_TASK = TaskInput(  # CO with a quoted string: every model skill of the extended route runs on it
    "co-002", "CO", "Winter fox poster", TASK.brief, TASK.constraints, TASK.prompt_checklist, ("a fox", "the word 'WINTER'")
)


@pytest.mark.parametrize("skill", MODEL_SKILLS)
def test_requests_of_one_skill_and_task_share_their_bytes_up_to_the_item(openai_server: ScriptedOpenAIServer, skill: str) -> None:
    # Two items of the same task, judged by two judges as two submissions' workers would: other prompts, other images.
    first, second = ("A fox in snow, WINTER above.", image(64, 64)), ("WINTER poster: a fox, fresh snow, gold light.", image(60, 40))
    for prompt, picture in (first, second):
        assert judge_for(openai_server, route="extended").run(skill, QUOTING_TASK, prompt, picture).status == "ok"
    one, two = openai_server.requests
    assert one["messages"][0] == two["messages"][0]  # the system message, byte for byte
    texts = [_parts(r)[0]["text"] for r in (one, two)]
    shared = texts[0][: next((i for i, (a, b) in enumerate(zip(*texts)) if a != b), min(map(len, texts)))]
    # what the requests share comes first: the task (its whole brief, but for faithfulness, which judges the prompt
    # alone) and the keys of the reply; nothing of the item is in it
    assert (task_text(QUOTING_TASK) in shared) == (skill != "faithfulness") and "(JSON array;" in shared
    assert not any(p in shared for p in (first[0], second[0]))
    if first[0] in texts[0]:  # the prompt-side skills and faithfulness read the prompt: right after what is shared
        assert first[0] in texts[0][len(shared) :]
    else:  # the other image skills see the image alone
        assert texts[0] == texts[1]
    if get_skill(skill).side == "image":  # the image comes last
        assert _parts(one)[-1]["type"] == "image_url" and _parts(one)[-1] != _parts(two)[-1]
    assert one["prompt_cache_key"] == two["prompt_cache_key"] == f"atelier:{QUOTING_TASK.task_id}:{skill}"


def test_the_cache_key_is_per_skill_and_task_and_can_be_left_out(openai_server: ScriptedOpenAIServer) -> None:
    judge_for(openai_server).run("prompt_objective", TASK, PROMPT)
    judge_for(openai_server).run("prompt_subjective", TASK, PROMPT)
    judge_for(openai_server, prompt_cache_key=False).run("prompt_objective", TASK, PROMPT)
    keys = [r.get("prompt_cache_key") for r in openai_server.requests]
    assert keys == ["atelier:co-001:prompt_objective", "atelier:co-001:prompt_subjective", None]


LONG_TASK = TaskInput(  # a brief long enough that what its requests share passes the provider's 1,024-token floor
    "oe-long",
    "OE",
    "Harbour festival",
    " ".join(f"Panel {n}: lanterns over the harbour at dusk, boats, a brass band, children with kites." for n in range(25)),
    {},
    ("lanterns", "boats"),
    ("lanterns",),
)


def test_cached_prompt_tokens_are_the_providers_own_count() -> None:
    provider = ProviderUsage()
    with ScriptedOpenAIServer(provider=provider) as server:
        results = [judge_for(server).run("prompt_subjective", LONG_TASK, p) for p in ("Lanterns at dusk.", "Boats and a band.")]
    first, second = ({**a, "cached": a["prompt_tokens_details"]["cached_tokens"]} for a in provider.answered)
    assert [(r.prompt_tokens, r.cached_prompt_tokens, r.completion_tokens) for r in results] == [
        (a["prompt_tokens"], a["cached"], a["completion_tokens"]) for a in (first, second)
    ]
    # the second request shares everything up to its prompt with the first: past 1,024 tokens, cached in steps of 128
    assert first["cached"] == 0 and second["shared_tokens"] >= 1024 and second["cached"] > 0
    assert second["cached"] == second["shared_tokens"] - (second["shared_tokens"] - 1024) % 128 < second["prompt_tokens"]


@pytest.mark.parametrize(
    ("details", "cached"), [({"cached_tokens": 40}, 40), ({"cached_tokens": "lots"}, 0), ({"cached_tokens": 80}, 50), (7, 0), (None, 0)]
)
def test_cached_tokens_a_server_reports_oddly_count_as_nothing_or_at_most_the_prompt(
    openai_server: ScriptedOpenAIServer, details: object, cached: int
) -> None:
    openai_server.queue(
        Reply(
            content=json.dumps(expected_checklist(TASK.prompt_checklist)),
            usage={"prompt_tokens": 50, "completion_tokens": 5, "prompt_tokens_details": details},
        )
    )  # type: ignore[dict-item]
    result = judge_for(openai_server).run("prompt_objective", TASK, PROMPT)
    assert (result.status, result.prompt_tokens, result.cached_prompt_tokens, result.completion_tokens) == ("ok", 50, cached, 5)


def test_the_scripted_provider_counts_the_chat_format_and_caches_from_1024_tokens_in_steps_of_128() -> None:
    provider = ProviderUsage()

    def request(system_tokens: int, user: str) -> dict:
        system = "hello" + " hello" * (system_tokens - 1)  # one o200k_base token per word
        return {"model": "m", "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}

    assert provider.usage(request(1000, "a fox"), "{}")["prompt_tokens"] == (3 + 1 + 1000) + (3 + 1 + 2) + 3
    # shares its system message and the user message's start (4 + 1,000 + 1 + 3 tokens): under 1,024, nothing cached
    assert provider.usage(request(1000, "a hare"), "{}")["prompt_tokens_details"]["cached_tokens"] == 0
    provider.usage(request(1100, "a fox"), "{}")
    assert provider.answered[-1]["prompt_tokens_details"]["cached_tokens"] == 0  # the first of its kind
    assert provider.usage(request(1100, "a hare"), "{}")["prompt_tokens_details"]["cached_tokens"] == 1024  # 1,108 shared
    provider.usage(request(1200, "a fox"), "{}")
    assert provider.usage(request(1200, "a hare"), "{}")["prompt_tokens_details"]["cached_tokens"] == 1152  # 1,208 shared
    other_model = {**request(1200, "a hare"), "model": "n"}  # a prefix is cached per model
    assert provider.usage(other_model, "{}")["prompt_tokens_details"]["cached_tokens"] == 0
    fine = ProviderUsage(cache_min=64, cache_step=64)  # another provider's floor and step (bench/judge_cost.py --cache-min)
    fine.usage(request(100, "a fox"), "{}")
    assert fine.usage(request(100, "a hare"), "{}")["prompt_tokens_details"]["cached_tokens"] == 64  # 108 shared
    fine.usage(request(1000, "a fox"), "{}")
    assert fine.usage(request(1000, "a hare"), "{}")["prompt_tokens_details"]["cached_tokens"] == 960  # 1,008 shared
    with pytest.raises(ValueError, match="cache floor 64 and step 0"):
        ProviderUsage(cache_min=64, cache_step=0)


# --- skips -------------------------------------------------------------------------------


def test_empty_checklist_skipped(openai_server: ScriptedOpenAIServer) -> None:
    task = TaskInput("oe-9", "OE", "t", "b", {}, (), ())
    result = judge_for(openai_server).run("prompt_objective", task, PROMPT)
    assert (result.status, result.reason, result.value) == ("skipped", "task has no checklist items", None)
    assert openai_server.requests == []


def test_im_skips_image_subjective_and_missing_image(openai_server: ScriptedOpenAIServer) -> None:
    judge = judge_for(openai_server)
    assert judge.run("image_subjective", IM_TASK, PROMPT, image()).status == "skipped"
    assert judge.run("image_objective", TASK, PROMPT, None).reason == "no image was provided"
    assert openai_server.requests == []


# --- repair loop -------------------------------------------------------------------------


def test_malformed_json_then_repaired(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.queue(Reply(content='{"a red fox": 1, '))  # then the default answers correctly
    result = judge_for(openai_server).run("prompt_objective", TASK, PROMPT)
    assert result.status == "ok" and result.checklist == expected_checklist(TASK.prompt_checklist)
    assert result.calls == 2 and result.prompt_tokens == 2 * SCRIPTED_PROMPT_TOKENS
    assert result.raw.startswith('{"a red fox": 1, ' + RAW_SEPARATOR)
    repair = openai_server.requests[1]["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    assert repair[2]["content"] == '{"a red fox": 1, ' and "not valid JSON" in repair[3]["content"]


def test_malformed_every_time_fails_with_all_raw_replies(openai_server: ScriptedOpenAIServer) -> None:
    # The default is 2 repair attempts: 3 calls in all.
    openai_server.queue(Reply(content="first: not json"), Reply(content="second: still not json"), Reply(content="third: no"))
    result = judge_for(openai_server).run("prompt_subjective", TASK, PROMPT)
    assert result.status == "failed" and result.value is None and result.scores == {}
    assert result.reason == "invalid reply after 3 attempt(s)" and result.remote_text.startswith("not valid JSON")
    assert result.raw == RAW_SEPARATOR.join(["first: not json", "second: still not json", "third: no"])
    assert result.calls == 3 and len(openai_server.requests) == 3


@pytest.mark.parametrize("repair_attempts", [0, 1])
def test_repair_attempts_configurable(openai_server: ScriptedOpenAIServer, repair_attempts: int) -> None:
    openai_server.queue(*[Reply(content="nope")] * (repair_attempts + 1))  # then the default answers well
    result = judge_for(openai_server, repair_attempts=repair_attempts).run("prompt_objective", TASK, PROMPT)
    assert result.status == "failed" and result.calls == repair_attempts + 1
    assert result.reason.startswith(f"invalid reply after {repair_attempts + 1} attempt(s)")
    judge = make_judge(JudgeConfig(base_url=openai_server.base_url, model="m", repair_attempts=repair_attempts, clip_pretrained="random"))
    assert isinstance(judge, OpenAIJudge) and judge.repair_attempts == repair_attempts


def _fails_every_time(server: ScriptedOpenAIServer, skill: str, content: str) -> JudgeResult:
    server.queue(Reply(content=content), Reply(content=content), Reply(content=content))
    result = judge_for(server).run(skill, TASK, PROMPT)
    assert result.status == "failed" and result.calls == 3
    assert result.raw == RAW_SEPARATOR.join([content] * 3)
    return result


def test_missing_key_fails(openai_server: ScriptedOpenAIServer) -> None:
    reply = json.dumps({"a red fox": 1, "fresh snow": 0})
    assert "missing keys ['golden hour lighting']" in _fails_every_time(openai_server, "prompt_objective", reply).remote_text


def test_extra_key_fails(openai_server: ScriptedOpenAIServer) -> None:
    reply = json.dumps({"a red fox": 1, "fresh snow": 0, "golden hour lighting": 1, "bonus": 1})
    assert "unexpected keys ['bonus']" in _fails_every_time(openai_server, "prompt_objective", reply).remote_text


def test_altered_key_fails(openai_server: ScriptedOpenAIServer) -> None:
    reply = json.dumps({"a red fox": 1, "fresh snow": 0, "golden-hour lighting": 1})
    reason = _fails_every_time(openai_server, "prompt_objective", reply).remote_text
    assert "missing keys ['golden hour lighting']" in reason and "unexpected keys ['golden-hour lighting']" in reason


@pytest.mark.parametrize("score", [6, "4", 0, 3.5, True])
def test_bad_scores_fail(openai_server: ScriptedOpenAIServer, score: object) -> None:
    reason = _fails_every_time(openai_server, "prompt_subjective", subjective_reply(PROMPT_DIMENSIONS, score)).remote_text
    assert "score must be an integer from 1 to 5" in reason


def test_boolean_checklist_values_rejected(openai_server: ScriptedOpenAIServer) -> None:
    reply = json.dumps({"a fox": True, "snow on the ground": False, "the word WINTER": True})
    openai_server.queue(Reply(content=reply), Reply(content=reply), Reply(content=reply))
    result = judge_for(openai_server).run("image_objective", TASK, PROMPT, image())
    assert result.status == "failed" and "must be the integer 0 or 1, got true" in result.remote_text


# --- refusals and transport failures --------------------------------------------------------


def test_refusal_fails_without_repair(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.queue(Reply(content=None, refusal="I cannot judge this image."))
    result = judge_for(openai_server).run("image_subjective", TASK, PROMPT, image())
    assert (result.status, result.reason, result.remote_text) == ("failed", "the model refused", "I cannot judge this image.")
    assert result.calls == 1 and len(openai_server.requests) == 1 and "I cannot judge" in result.raw


def test_content_filter_is_a_refusal(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.queue(Reply(content="", finish_reason="content_filter"))
    result = judge_for(openai_server).run("prompt_subjective", TASK, PROMPT)
    assert (result.status, result.reason, result.remote_text) == ("failed", "the model refused", "finish_reason content_filter")


def test_rate_limit_retried_by_client(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.queue(Reply(status=429, content="slow down", headers={"retry-after": "0"}))
    result = judge_for(openai_server).run("prompt_objective", TASK, PROMPT)
    assert result.status == "ok" and result.calls == 2  # calls are the requests the endpoint received, retries included
    assert result.throttled == 1  # the 429 among them (the operators' atelier_judge_throttled)
    assert len(openai_server.requests) == 2


def test_server_error_every_time_fails_after_retries(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.default = lambda request: Reply(status=500, content="boom", headers={"retry-after-ms": "10"})
    result = judge_for(openai_server, max_retries=1).run("prompt_subjective", TASK, PROMPT)
    assert result.status == "failed" and result.reason == "HTTP 500 (InternalServerError) after 2 requests"
    assert "boom" in result.remote_text and "boom" not in result.reason and result.raw == "" and result.calls == 2
    assert result.throttled == 0
    assert len(openai_server.requests) == 2  # the first try and one client retry, both counted


def test_timeout_fails(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.queue(Reply(content="{}", delay=3.0))
    started = time.monotonic()
    result = judge_for(openai_server, timeout=0.5, max_retries=0).run("prompt_objective", TASK, PROMPT)
    assert time.monotonic() - started < 2.5
    assert result.status == "failed" and result.reason == "timed out (APITimeoutError)"


def test_unreachable_endpoint_fails() -> None:
    with ScriptedOpenAIServer() as server:
        base_url = server.base_url
    config = JudgeConfig(base_url=base_url, model="m", timeout=1, max_retries=0, clip_pretrained="random")
    result = OpenAIJudge(config).run("prompt_objective", TASK, PROMPT)
    assert result.status == "failed" and result.reason == "could not connect (APIConnectionError)"


def test_non_json_body_fails(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.queue(Reply(raw_body="<html>gateway</html>"))
    result = judge_for(openai_server).run("prompt_objective", TASK, PROMPT)
    assert result.status == "failed" and result.reason == "unreadable response (JSONDecodeError)"


# --- EmbeddingJudge (real MiniLM, random-weight CLIP) ---------------------------------------


@pytest.fixture(scope="module")
def embedding_judge() -> EmbeddingJudge:
    return EmbeddingJudge()


def test_embedding_prompt_objective(embedding_judge: EmbeddingJudge) -> None:
    task = TaskInput(
        "oe-1",
        "OE",
        "t",
        "b",
        {},
        ("The prompt specifies a red fox", "golden hour lighting", "a neon cyberpunk skyline", "a bar chart"),
        (),
    )
    result = embedding_judge.run("prompt_objective", task, PROMPT)
    assert result.status == "ok" and result.calls == 0
    assert result.checklist == {
        "The prompt specifies a red fox": 1,
        "golden hour lighting": 1,
        "a neon cyberpunk skyline": 0,
        "a bar chart": 0,
    }
    assert set(json.loads(result.raw)["cosine"]) == set(task.prompt_checklist)
    assert embedding_judge.run("prompt_objective", task, PROMPT).checklist == result.checklist


def test_embedding_image_objective_random_clip(embedding_judge: EmbeddingJudge) -> None:
    first = embedding_judge.run("image_objective", TASK, PROMPT, image())
    assert first.status == "ok", first.reason
    assert set(first.checklist) == set(TASK.image_checklist)
    assert set(first.checklist.values()) <= {0, 1}
    assert embedding_judge.run("image_objective", TASK, PROMPT, image()).raw == first.raw  # deterministic


def test_embedding_subjective_skipped(embedding_judge: EmbeddingJudge) -> None:
    for skill in ("prompt_subjective", "image_subjective"):
        result = embedding_judge.run(skill, TASK, PROMPT, image())
        assert (result.status, result.reason) == ("skipped", "the embedding judge has no rubric scorer")
        assert result.scores == {} and result.value is None


# --- no Django in the library ----------------------------------------------------------------


def test_judge_package_never_imports_django() -> None:
    paths = sorted(JUDGE_PACKAGE.rglob("*.py"))
    assert JUDGE_PACKAGE / "rubrics" / "__init__.py" in paths  # sub-packages are checked too
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n == "django" or n.startswith("django.") for n in names), path
    code = "import sys, evaluator.judge; print('django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=JUDGE_PACKAGE.parents[1])
    assert out.stdout.strip() == "False"
