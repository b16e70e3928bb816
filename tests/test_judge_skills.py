"""The new LLM skills, routes, the rubric file, the safety gate and the bound on calls in flight.

Real openai client against the real local scripted server (tests.openai_server); no mocks.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import pytest
from PIL import Image

from evaluator.judge import (
    ALL_SKILLS,
    IMAGE_DIMENSIONS,
    PROMPT_DIMENSIONS,
    REGISTRY,
    ROUTES,
    RUBRIC,
    EmbeddingJudge,
    JudgeConfig,
    JudgeResult,
    Kind,
    OpenAIJudge,
    Side,
    TaskInput,
    literal_texts,
    make_judge,
    route_for_task,
    route_skills,
    run_route,
    set_max_in_flight,
    skills_where,
)
from evaluator.judge.messages import FAITHFULNESS_HEADER, SAFETY_HEADER, TEXT_HEADER
from evaluator.judge.parsing import ReplyFormatError, subjective_schema, validate
from evaluator.judge.rubrics import RUBRIC_DIR, RubricError, load_rubric, parse_rubric
from evaluator.judge.skills import Verdict, fill
from evaluator.judge.types import quoted_strings
from tests.openai_server import (
    EXPECTED_FAITHFULNESS,
    EXPECTED_FAITHFULNESS_SCORE,
    SCRIPTED_BLOCK_CATEGORY,
    SCRIPTED_BLOCK_MARKER,
    SCRIPTED_PROMPT_TOKENS,
    Reply,
    ScriptedOpenAIServer,
    expected_safety,
    expected_text_rendering,
    expected_text_rendering_value,
    keys_after,
    openai_server,  # noqa: F401 - the fixture
    request_text,
)

TASK = TaskInput(
    task_id="co-002",
    category="CO",
    title="Bakery sign",
    brief="A shop sign for a small bakery.",
    constraints={"text": "'BREAD & CO'", "layout": "", "pairing": "", "quantity": "", "constraint": ""},
    prompt_checklist=("the prompt quotes the name 'BREAD & CO'", "warm lighting"),
    image_checklist=('the sign reads "BREAD & CO"', "a loaf of bread", "the slogan \u201cFresh daily\u201d"),
)
NO_TEXT_TASK = TaskInput("oe-003", "OE", "Fox", "A fox at dawn.", {}, ("a fox",), ("a fox", "dawn light"))
IM_TASK = TaskInput("im-003", "IM", "Copy", "Recreate the target.", {}, ("a red fox",), ("a fox",))
PROMPT = 'A wooden bakery sign reading "BREAD & CO" above a loaf of bread, slogan "Fresh daily", warm light.'


def judge_for(server: ScriptedOpenAIServer, **kwargs: object) -> OpenAIJudge:
    options: dict[str, object] = {"timeout": 5.0, "max_retries": 1, "route": "extended"}
    options.update(kwargs)
    return OpenAIJudge(JudgeConfig(base_url=server.base_url, model="judge-test", clip_pretrained="random", **options))  # type: ignore[arg-type]


def picture() -> Image.Image:
    return Image.new("RGB", (64, 48), (30, 90, 160))


def system_of(server: ScriptedOpenAIServer, index: int = 0) -> str:
    return server.requests[index]["messages"][0]["content"]


# --- registry, routes, literal text ----------------------------------------------------------------


SKILLS = ("prompt_subjective", "prompt_objective", "image_subjective", "image_objective")  # AtelierEval's four


def test_registry_holds_every_skill_by_name() -> None:
    assert tuple(REGISTRY) == ALL_SKILLS and set(SKILLS) < set(ALL_SKILLS)
    assert skills_where(kind=Kind.METRIC) == ("target_similarity", "color_shift")
    assert skills_where(kind=Kind.GATE) == ("safety_prompt", "safety_image")
    assert all(skill.name == name for name, skill in REGISTRY.items())


def test_every_skill_declares_what_it_is() -> None:
    from evaluator.judge.ensemble import STRATEGIES
    from evaluator.judge.scales import SCALES

    for name, skill in REGISTRY.items():
        assert skill.side in Side and skill.kind in Kind, name
        assert skill.combine in STRATEGIES, name
        assert (skill.scale is None) == (skill.kind == Kind.GATE), name
        assert skill.scale is None or SCALES[skill.scale.name] is skill.scale
    # the composite is AtelierEval's four plus target similarity; only rubric skills of the two sides use memory
    assert skills_where(composite=True) == SKILLS + ("target_similarity",)
    assert skills_where(uses_memory=True) == ("prompt_subjective", "image_subjective")
    assert [
        n for n, s in sorted(REGISTRY.items(), key=lambda kv: (kv[1].top1_rank is None, kv[1].top1_rank)) if s.top1_rank is not None
    ] == ["image_subjective", "target_similarity", "image_objective"]


def test_routes_name_registered_skills_gates_first() -> None:
    for route, categories in ROUTES.items():
        for category, skills in categories.items():
            assert set(skills) <= set(ALL_SKILLS), (route, category)
            gates = [i for i, s in enumerate(skills) if REGISTRY[s].kind == Kind.GATE]
            assert gates == list(range(len(gates))), f"{route}/{category}: gates must run first"


def test_quoted_strings_ignore_apostrophes() -> None:
    text = "the fox's den says 'OPEN' and \"Since 1920\", the foxes' tails, \u201cCaf\u00e9\u201d, \u2018Y\u2019, \"\" "
    assert quoted_strings(text) == ("OPEN", "Since 1920", "Caf\u00e9", "Y")
    assert literal_texts(TASK) == ("BREAD & CO", "Fresh daily")
    assert literal_texts(NO_TEXT_TASK) == ()


def test_routes() -> None:
    assert route_for_task(NO_TEXT_TASK) == SKILLS == route_skills("OE")
    assert route_for_task(IM_TASK) == ("prompt_subjective", "prompt_objective", "image_objective", "target_similarity")
    assert route_for_task(TASK, "extended") == ("safety_prompt", "safety_image") + SKILLS + ("text_rendering", "faithfulness")
    assert "text_rendering" not in route_for_task(NO_TEXT_TASK, "extended")
    assert route_for_task(IM_TASK, "extended") == (
        "safety_prompt",
        "safety_image",
        "prompt_subjective",
        "prompt_objective",
        "image_objective",
        "target_similarity",
        "faithfulness",
        "color_shift",
    )
    with pytest.raises(ValueError, match="unknown route"):
        route_for_task(TASK, "fancy")


def test_skills_off_the_route_are_skipped_without_calls(openai_server: ScriptedOpenAIServer) -> None:
    plain = judge_for(openai_server, route="ateliereval")
    assert plain.run("safety_prompt", TASK, PROMPT).reason == "CO tasks are not judged on safety_prompt"
    extended = judge_for(openai_server)
    assert extended.run("text_rendering", NO_TEXT_TASK, PROMPT, picture()).reason == "no checklist item quotes literal text"
    assert extended.run("text_rendering", TASK, PROMPT).reason == "no image was provided"
    assert extended.run("color_shift", TASK, PROMPT, picture()).reason == "CO tasks are not judged on color_shift on the extended route"
    assert extended.run("target_similarity", IM_TASK, PROMPT, picture()).reason == "no target image was provided"
    assert openai_server.requests == []
    with pytest.raises(ValueError, match="unknown judge skill"):
        extended.run("vibes", TASK, PROMPT)


def test_embedding_judge_skips_llm_only_skills() -> None:
    judge = EmbeddingJudge(JudgeConfig(route="extended"))
    for skill in ("safety_prompt", "safety_image", "text_rendering"):
        assert judge.run(skill, TASK, PROMPT, picture()).reason == f"the embedding judge has no model for {skill}"
    assert judge.run("faithfulness", TASK, PROMPT, picture()).reason == "the embedding judge has no rubric scorer"


# --- the rubric file ------------------------------------------------------------------------------


def test_rubric_v2_is_complete_and_versioned(openai_server: ScriptedOpenAIServer) -> None:
    assert RUBRIC.version == "rubric-v2" and judge_for(openai_server).version.startswith("rubric-v2+")
    assert tuple(d.key for d in RUBRIC.prompt) == PROMPT_DIMENSIONS
    assert tuple(d.key for d in RUBRIC.image) == IMAGE_DIMENSIONS
    assert all(len(d.levels) == 5 for d in RUBRIC.prompt + RUBRIC.image)
    assert [d.title for d in RUBRIC.image][:1] == ["Mood & Atmosphere"]
    judge_for(openai_server).run("image_subjective", TASK, PROMPT, picture())
    system = system_of(openai_server)
    for dim in RUBRIC.image:  # every anchor of every level is in the request
        assert all(f"{score} ({level.label}): {level.anchor}" in system for score, level in enumerate(dim.levels, 1))


def test_rubric_loader_rejects_bad_files(tmp_path) -> None:
    good = json.loads((RUBRIC_DIR / "v2.json").read_text())
    broken = json.loads(json.dumps(good))
    broken["prompt_subjective"]["dimensions"][0]["levels"].pop()
    with pytest.raises(RubricError, match="expected 5 anchored levels"):
        parse_rubric(broken)
    lopsided = json.loads(json.dumps(good))
    lopsided["faithfulness"]["weights"].update(instruction_faithfulness=0.1, visual_clarity=0.45)
    with pytest.raises(RubricError, match="must weigh strictly more"):
        parse_rubric(lopsided)
    path = tmp_path / "v9.json"
    path.write_text(json.dumps({**good, "version": "rubric-v9"}))
    assert load_rubric(path).version == "rubric-v9"
    assert judge_for_rubric_version(load_rubric(path)).startswith("rubric-v9+")


def judge_for_rubric_version(rubric) -> str:
    return OpenAIJudge(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", clip_pretrained="random"), rubric=rubric).version


def test_schema_validator_messages() -> None:
    schema = subjective_schema(("clarity",))
    validate({"clarity": {"score": 5, "rationale": "r"}}, schema)
    cases = {
        '{"clarity": {"score": 6, "rationale": "r"}}': "clarity.score must be an integer from 1 to 5, got 6",
        '{"clarity": {"score": true, "rationale": "r"}}': "clarity.score must be an integer from 1 to 5, got true",
        '{"clarity": {"score": 2}}': "clarity: missing keys ['rationale']",
        '{"clarity": {"score": 2, "rationale": "r"}, "x": 1}': "unexpected keys ['x']",
        '{"clarity": [2]}': "clarity must be a JSON object",
    }
    for reply, message in cases.items():
        with pytest.raises(ReplyFormatError) as info:
            validate(json.loads(reply), schema)
        assert message in str(info.value)


# --- safety ---------------------------------------------------------------------------------------


def test_safety_prompt_ok(openai_server: ScriptedOpenAIServer) -> None:
    result = judge_for(openai_server).run("safety_prompt", TASK, PROMPT)
    assert (result.status, result.reason, result.value, result.scores) == ("ok", "", None, {})
    assert result.details == expected_safety(False) and result.calls == 1
    text = request_text(openai_server.requests[0])
    assert PROMPT in text and keys_after(SAFETY_HEADER, text) == list(RUBRIC.safety_categories)


def test_safety_blocked_never_scores(openai_server: ScriptedOpenAIServer) -> None:
    result = judge_for(openai_server).run("safety_prompt", TASK, PROMPT + " " + SCRIPTED_BLOCK_MARKER)
    assert (result.status, result.value, result.scores, result.checklist) == ("blocked", None, {}, {})
    assert result.reason == f"blocked by safety_prompt: {SCRIPTED_BLOCK_CATEGORY}"
    assert result.details == expected_safety(True)


def test_safety_image_sees_image_not_prompt(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.queue(Reply(content=json.dumps({"blocked": True, "categories": ["self_harm"], "rationale": "shown"})))
    result = judge_for(openai_server).run("safety_image", TASK, PROMPT, picture())
    assert result.status == "blocked" and result.details["categories"] == ["self_harm"]
    parts = openai_server.requests[0]["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"] and PROMPT not in parts[0]["text"]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ({"blocked": True, "categories": [], "rationale": "x"}, '"blocked" must be true exactly when'),
        ({"blocked": False, "categories": ["self_harm"], "rationale": "x"}, '"blocked" must be true exactly when'),
        ({"blocked": "no", "categories": [], "rationale": "x"}, "blocked must be true or false"),
        ({"blocked": True, "categories": ["spooky"], "rationale": "x"}, "categories[0] must be one of"),
        ({"blocked": False, "categories": [], "rationale": ""}, "rationale must not be empty"),
        ({"blocked": False, "categories": []}, "missing keys ['rationale']"),
    ],
)
def test_safety_malformed_replies_fail(openai_server: ScriptedOpenAIServer, reply: dict, problem: str) -> None:
    openai_server.queue(*[Reply(content=json.dumps(reply))] * 3)
    result = judge_for(openai_server).run("safety_prompt", TASK, PROMPT)
    assert (
        result.status == "failed"
        and result.calls == 3
        and problem in result.remote_text
        and result.reason == "invalid reply after 3 attempt(s)"
    ), result.reason


def test_safety_malformed_then_repaired(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.queue(Reply(content=json.dumps({"blocked": True, "categories": [], "rationale": "x"})))
    result = judge_for(openai_server).run("safety_prompt", TASK, PROMPT)
    assert result.status == "ok" and result.calls == 2 and result.prompt_tokens == 2 * SCRIPTED_PROMPT_TOKENS


# --- the safety gate over a whole route -------------------------------------------------------------


def test_run_route_prompt_block_blocks_everything(openai_server: ScriptedOpenAIServer) -> None:
    results = run_route(judge_for(openai_server), TASK, PROMPT + SCRIPTED_BLOCK_MARKER, picture(), route="extended")
    assert list(results) == list(route_for_task(TASK, "extended"))
    assert {s: r.status for s, r in results.items()} == dict.fromkeys(results, "blocked")
    assert all(r.value is None and r.calls == 0 for s, r in results.items() if s != "safety_prompt")
    assert len(openai_server.requests) == 1  # only the safety screen was asked


def test_run_route_image_block_keeps_prompt_skills(openai_server: ScriptedOpenAIServer) -> None:
    task = replace(TASK, brief=TASK.brief + " " + SCRIPTED_BLOCK_MARKER)  # safety_image sees the brief, not the prompt
    openai_server.queue(Reply(content=json.dumps({"blocked": False, "categories": [], "rationale": "prompt fine"})))
    results = run_route(judge_for(openai_server), task, PROMPT, picture(), route="extended")
    statuses = {s: r.status for s, r in results.items()}
    assert statuses == {
        "safety_prompt": "ok",
        "safety_image": "blocked",
        "prompt_subjective": "ok",
        "prompt_objective": "ok",
        "image_subjective": "blocked",
        "image_objective": "blocked",
        "text_rendering": "blocked",
        "faithfulness": "blocked",
    }
    assert len(openai_server.requests) == 4


def test_run_route_ateliereval_all_ok(openai_server: ScriptedOpenAIServer) -> None:
    results = run_route(judge_for(openai_server, route="ateliereval"), TASK, PROMPT, picture())
    assert list(results) == list(SKILLS) and all(r.status == "ok" for r in results.values())
    only = run_route(judge_for(openai_server, route="ateliereval"), TASK, PROMPT, skills=["prompt_objective"])
    assert list(only) == ["prompt_objective"]


# --- text rendering -------------------------------------------------------------------------------


def test_text_rendering_happy_path(openai_server: ScriptedOpenAIServer) -> None:
    result = judge_for(openai_server).run("text_rendering", TASK, PROMPT, picture())
    strings = ["BREAD & CO", "Fresh daily"]
    assert result.status == "ok" and result.details["strings"] == expected_text_rendering(strings)
    assert result.checklist == {"BREAD & CO": 1, "Fresh daily": 0}
    assert result.scores == {"present": 1.0, "exact": 0.5, "legible": 1.0, "text_accuracy": 0.5}
    assert result.value == expected_text_rendering_value(strings) == 0.5
    text = request_text(openai_server.requests[0])
    assert keys_after(TEXT_HEADER, text) == strings
    assert openai_server.requests[0]["messages"][1]["content"][-1]["type"] == "image_url"


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (
            {"BREAD & CO": {"present": 0, "exact": 1, "legible": 0}, "Fresh daily": {"present": 1, "exact": 1, "legible": 1}},
            "must be 0 when present is 0",
        ),
        (
            {"BREAD & CO": {"present": 1, "exact": 1, "legible": 2}, "Fresh daily": {"present": 1, "exact": 1, "legible": 1}},
            '"BREAD & CO".legible must be the integer 0 or 1, got 2',
        ),
        ({"BREAD & CO": {"present": 1, "exact": 1, "legible": 1}}, "missing keys ['Fresh daily']"),
        ({"BREAD & CO": {"present": True, "exact": 1, "legible": 1}, "Fresh daily": {"present": 1, "exact": 1, "legible": 1}}, "got true"),
    ],
)
def test_text_rendering_malformed(openai_server: ScriptedOpenAIServer, reply: dict, problem: str) -> None:
    openai_server.queue(*[Reply(content=json.dumps(reply))] * 3)
    result = judge_for(openai_server).run("text_rendering", TASK, PROMPT, picture())
    assert result.status == "failed" and problem in result.remote_text and result.reason.startswith("invalid reply after"), result.reason
    assert result.details == {} and result.value is None


# --- faithfulness ------------------------------------------------------------------------------------


def test_faithfulness_happy_path(openai_server: ScriptedOpenAIServer) -> None:
    result = judge_for(openai_server).run("faithfulness", TASK, PROMPT, picture())
    assert result.status == "ok" and result.value == pytest.approx(EXPECTED_FAITHFULNESS_SCORE) == pytest.approx(0.8)
    for key, value in EXPECTED_FAITHFULNESS.items():
        assert result.scores[key] == pytest.approx(value)
    assert result.details["passed"] is True and result.details["counts"] == {"met": 3, "minor_miss": 1, "critical_miss": 0}
    assert [r["verdict"] for r in result.details["requirements"]] == ["met", "met", "minor_miss", "met"]
    assert set(result.rationales) == {d.key for d in RUBRIC.faithfulness.dimensions}
    user = openai_server.requests[0]["messages"][1]["content"]
    text = request_text(openai_server.requests[0])
    assert PROMPT in text and TASK.brief not in text  # judged against the prompt, not the brief
    assert keys_after(FAITHFULNESS_HEADER, text) == [d.key for d in RUBRIC.faithfulness.dimensions]
    assert user[-1]["type"] == "image_url"


def test_faithfulness_weights_put_instruction_faithfulness_first() -> None:
    # The weighted score's worked examples are data in tests/cases/faithfulness.json.
    weights = RUBRIC.faithfulness.weights
    assert weights["instruction_faithfulness"] > max(w for k, w in weights.items() if k != "instruction_faithfulness")
    assert sum(weights.values()) == pytest.approx(1.0)


def faithful_reply(requirements: object, dims: object = None) -> str:
    dims = dims if dims is not None else {d.key: {"score": 5, "rationale": "r"} for d in RUBRIC.faithfulness.dimensions}
    return json.dumps({"requirements": requirements, "dimensions": dims})


def test_faithfulness_critical_miss_fails_the_sample(openai_server: ScriptedOpenAIServer) -> None:
    reqs = [
        {"requirement": "a loaf of bread", "kind": "object", "verdict": "met", "evidence": "centre"},
        {"requirement": "sign reads BREAD & CO", "kind": "attribute", "verdict": "critical_miss", "evidence": "reads BRED"},
    ]
    openai_server.queue(Reply(content=faithful_reply(reqs)))
    result = judge_for(openai_server).run("faithfulness", TASK, PROMPT, picture())
    assert result.status == "ok" and result.details["passed"] is False and result.scores["passed"] == 0.0
    weight = RUBRIC.faithfulness.weights["instruction_faithfulness"]
    assert result.value == pytest.approx(weight * 0.5 + (1 - weight))


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (faithful_reply([]), "requirements needs at least 1 entries"),
        (
            faithful_reply([{"requirement": "x", "kind": "object", "verdict": "partly", "evidence": ""}]),
            "requirements[0].verdict must be one of",
        ),
        (faithful_reply([{"requirement": "x", "kind": "mood", "verdict": "met", "evidence": ""}]), "requirements[0].kind must be one of"),
        (faithful_reply([{"requirement": "x", "kind": "object", "verdict": "met"}]), "requirements[0]: missing keys ['evidence']"),
        (
            faithful_reply(
                [{"requirement": "x", "kind": "object", "verdict": "met", "evidence": ""}],
                {"visual_clarity": {"score": 3, "rationale": "r"}},
            ),
            "dimensions: missing keys",
        ),
        (json.dumps({"requirements": [], "dimensions": {}, "passed": True}), "unexpected keys ['passed']"),
    ],
)
def test_faithfulness_schema_is_strict(openai_server: ScriptedOpenAIServer, reply: str, problem: str) -> None:
    openai_server.queue(*[Reply(content=reply)] * 3)
    result = judge_for(openai_server).run("faithfulness", TASK, PROMPT, picture())
    assert result.status == "failed" and problem in result.remote_text and result.reason.startswith("invalid reply after"), result.reason


# --- results and throughput --------------------------------------------------------------------------


def value_of(skill: str, **verdict: object) -> tuple[float | None, str]:
    result = fill(JudgeResult(skill, "failed"), Verdict(**verdict))  # type: ignore[arg-type]
    return result.value, result.scale


def test_result_value_and_details_defaults() -> None:
    assert JudgeResult("prompt_subjective", "ok").details == {}
    assert value_of("faithfulness", scores={"weighted_score": 0.7}) == (0.7, "rate_0_1")
    assert value_of("target_similarity", scores={"clip_score": 71.3, "raw": 71.3}) == (71.3, "score_0_100")
    assert value_of("color_shift", scores={"color_shift": 0.25}) == (0.25, "distance_0_1")
    assert value_of("safety_prompt") == (None, "")
    assert value_of("prompt_subjective", status="blocked", scores={"a": 4}) == (None, "likert_1_5")


def test_max_in_flight_bounds_concurrent_calls(openai_server: ScriptedOpenAIServer) -> None:
    slow = lambda request: Reply(content=json.dumps({"a fox": 1}), delay=0.15)  # noqa: E731
    openai_server.default = slow
    task = TaskInput("oe-4", "OE", "t", "b", {}, ("a fox",), ())
    try:
        judge = make_judge(JudgeConfig(base_url=openai_server.base_url, model="m", timeout=5, max_in_flight=1, clip_pretrained="random"))
        threads = [threading.Thread(target=judge.run, args=("prompt_objective", task, "a fox")) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(openai_server.requests) == 4 and openai_server.max_in_flight_seen == 1
        set_max_in_flight(None)
        openai_server.max_in_flight_seen = 0
        threads = [threading.Thread(target=judge.run, args=("prompt_objective", task, "a fox")) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert openai_server.max_in_flight_seen > 1
    finally:
        set_max_in_flight(None)
