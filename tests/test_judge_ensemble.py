"""EnsembleJudge: member judges are real OpenAIJudges talking to the scripted server, which answers
differently per model name; combine() is also checked directly on constructed results."""

from __future__ import annotations

import json
from typing import Any

import pytest
from PIL import Image

from evaluator.judge import (
    PROMPT_DIMENSIONS,
    EmbeddingJudge,
    EnsembleJudge,
    JudgeConfig,
    JudgeResult,
    OpenAIJudge,
    TargetInput,
    TaskInput,
    make_judge,
)
from evaluator.judge.ensemble import combine, majority
from evaluator.judge.messages import DIMENSIONS_HEADER, ITEMS_HEADER
from tests.openai_server import (
    SCRIPTED_COMPLETION_TOKENS,
    SCRIPTED_PROMPT_TOKENS,
    Reply,
    ScriptedOpenAIServer,
    judge_responder,
    keys_after,
    openai_server,  # noqa: F401 - the fixture
    request_text,
)

TASK = TaskInput("co-9", "CO", "Poster", "A poster.", {}, ("a red fox", "fresh snow", "golden light"), ("a fox",))
IM_TASK = TaskInput("im-9", "IM", "Copy", "Recreate the target.", {}, ("a fox",), ("a fox",))


def by_model(request: dict[str, Any]) -> Reply:
    """Model "a": the standard scripted judge (4s; items 1,0,1). Model "b": first dimension 4, others 2;
    every item 1. Model "bad": HTTP 500."""
    model = request["model"]
    if model == "bad":
        return Reply(status=500, content="member down")
    if model == "a":
        return judge_responder(request)
    text = request_text(request)
    dims = keys_after(DIMENSIONS_HEADER, text)
    if dims is not None:
        return Reply(content=json.dumps({d: {"score": 4 if i == 0 else 2, "rationale": f"b on {d}"} for i, d in enumerate(dims)}))
    items = keys_after(ITEMS_HEADER, text) or []
    return Reply(content=json.dumps(dict.fromkeys(items, 1)))


def member(server: ScriptedOpenAIServer, model: str) -> OpenAIJudge:
    return OpenAIJudge(JudgeConfig(base_url=server.base_url, model=model, timeout=5.0, max_retries=0, clip_pretrained="random"))


@pytest.fixture
def server(openai_server: ScriptedOpenAIServer) -> ScriptedOpenAIServer:
    openai_server.default = by_model
    return openai_server


def test_identity_and_make_judge(server: ScriptedOpenAIServer) -> None:
    judge = make_judge(JudgeConfig(base_url=server.base_url, model="ignored", models=("a", "b"), clip_pretrained="random"))
    assert isinstance(judge, EnsembleJudge)
    assert judge.judge_id == "ensemble:openai:a+openai:b" and judge.version.startswith("rubric-v2+")
    assert judge.version not in (member(server, "a").version, member(server, "b").version)
    assert judge.label.startswith("ensemble of 2 judges: AtelierJudge via a, route ateliereval;") and "127.0.0.1" not in judge.label
    assert judge.spec.endpoints == (server.base_url.split("/")[2],)  # both members call one host, named once (staff only)
    assert isinstance(make_judge(JudgeConfig(base_url=server.base_url, models=("a",), clip_pretrained="random")), OpenAIJudge)
    with pytest.raises(ValueError, match="needs a judge endpoint"):
        make_judge(JudgeConfig(models=("a", "b")))
    with pytest.raises(ValueError, match="distinct"):
        EnsembleJudge([member(server, "a"), member(server, "a")])
    mixed = EnsembleJudge([member(server, "a"), EmbeddingJudge()])
    assert mixed.version.startswith("rubric-v2+embedding+")


def test_subjective_mean_spread_and_agreement(server: ScriptedOpenAIServer) -> None:
    result = EnsembleJudge([member(server, "a"), member(server, "b")]).run("prompt_subjective", TASK, "p")
    first, *rest = PROMPT_DIMENSIONS
    assert result.status == "ok" and result.scores == {first: 4.0, **dict.fromkeys(rest, 3.0)}
    assert result.value == pytest.approx((4 + 3 * 3) / 4)
    assert result.details["members"] == {"openai:a": dict.fromkeys(PROMPT_DIMENSIONS, 4), "openai:b": {first: 4, **dict.fromkeys(rest, 2)}}
    assert result.details["spread"] == {first: 0, **dict.fromkeys(rest, 2)}
    assert result.details["agreement"] == 0.25 and result.details["failed_members"] == {}
    assert (result.calls, result.prompt_tokens, result.completion_tokens) == (2, 2 * SCRIPTED_PROMPT_TOKENS, 2 * SCRIPTED_COMPLETION_TOKENS)
    assert result.rationales[first] == f"[openai:a] scripted rationale for {first}\n[openai:b] b on {first}"


def test_checklist_majority_tie_is_not_met(server: ScriptedOpenAIServer) -> None:
    result = EnsembleJudge([member(server, "a"), member(server, "b")]).run("prompt_objective", TASK, "p")
    # a: 1, 0, 1; b: 1, 1, 1 -> the second item is a 1-1 tie, which counts as not met
    assert result.checklist == {"a red fox": 1, "fresh snow": 0, "golden light": 1}
    assert result.details["agreement"] == pytest.approx(2 / 3)
    assert majority([1, 0]) == 0 and majority([1, 1, 0]) == 1 and majority([0, 0, 1]) == 0


def test_failed_member_is_recorded_and_the_rest_decide(server: ScriptedOpenAIServer) -> None:
    result = EnsembleJudge([member(server, "a"), member(server, "bad"), member(server, "b")]).run("prompt_objective", TASK, "p")
    assert result.status == "ok" and result.checklist == {"a red fox": 1, "fresh snow": 0, "golden light": 1}
    assert list(result.details["failed_members"]) == ["openai:bad"]
    assert result.details["failed_members"]["openai:bad"].startswith("HTTP 500 (InternalServerError)")
    assert result.calls == 3


def test_every_member_failing_fails_with_all_reasons(server: ScriptedOpenAIServer) -> None:
    server.default = lambda request: Reply(status=500, content=f"down {request['model']}")
    result = EnsembleJudge([member(server, "x"), member(server, "y")]).run("prompt_subjective", TASK, "p")
    assert result.status == "failed" and result.value is None and result.scores == {}
    assert result.reason.startswith("every member failed: openai:x: HTTP 500 (InternalServerError)")
    assert "openai:y: HTTP 500 (InternalServerError)" in result.reason and "down" not in result.reason
    assert "down x" in result.remote_text and "down y" in result.remote_text
    assert result.calls == 2


def test_skips_pass_through(server: ScriptedOpenAIServer) -> None:
    result = EnsembleJudge([member(server, "a"), member(server, "b")]).run("image_subjective", IM_TASK, "p", Image.new("RGB", (8, 8)))
    assert (result.status, result.reason) == ("skipped", "IM tasks are not judged on image_subjective")
    assert server.requests == []


def test_metric_skill_runs_once(server: ScriptedOpenAIServer) -> None:
    image = Image.new("RGB", (16, 16), (10, 20, 30))
    judge = EnsembleJudge([member(server, "a"), member(server, "b")])
    result = judge.run("target_similarity", IM_TASK, "p", image, target=TargetInput(image.copy()))
    assert result.status == "ok" and result.value == pytest.approx(100.0) and result.calls == 0


# --- combine() on constructed results -----------------------------------------------------------------


def ok(skill: str, **kwargs: Any) -> JudgeResult:
    return JudgeResult(skill=skill, status="ok", **kwargs)


def test_combine_safety_blocks_when_any_member_blocks() -> None:
    results = [
        ("j1", ok("safety_prompt", details={"blocked": False, "categories": []})),
        (
            "j2",
            JudgeResult(
                "safety_prompt",
                "blocked",
                reason="blocked by safety_prompt: self_harm",
                details={"blocked": True, "categories": ["self_harm"]},
            ),
        ),
    ]
    merged = combine("safety_prompt", results)
    assert merged.status == "blocked" and merged.value is None and merged.details["categories"] == ["self_harm"]
    assert merged.reason == "blocked by safety_prompt (1 of 2 members): self_harm" and merged.details["agreement"] == 0.0


def test_combine_text_rendering_by_majority() -> None:
    def tr(flags: dict[str, dict[str, int]]) -> JudgeResult:
        return ok("text_rendering", details={"strings": flags})

    results = [
        ("j1", tr({"OPEN": {"present": 1, "exact": 1, "legible": 1}})),
        ("j2", tr({"OPEN": {"present": 1, "exact": 0, "legible": 1}})),
    ]
    merged = combine("text_rendering", results)
    assert merged.details["strings"] == {"OPEN": {"present": 1, "exact": 0, "legible": 1}}  # exact: 1-1 tie -> 0
    assert merged.checklist == {"OPEN": 0} and merged.value == 0.0 and merged.details["agreement"] == pytest.approx(2 / 3)


def test_combine_faithfulness_mean_and_majority_pass() -> None:
    def fr(weighted: float, passed: float, clarity: int) -> JudgeResult:
        return ok(
            "faithfulness",
            scores={
                "weighted_score": weighted,
                "instruction_faithfulness": weighted,
                "visual_clarity": (clarity - 1) / 4,
                "passed": passed,
            },
            details={"dimension_scores": {"visual_clarity": clarity}, "requirements": []},
        )

    merged = combine("faithfulness", [("j1", fr(0.9, 1.0, 5)), ("j2", fr(0.5, 0.0, 5))])
    assert merged.value == pytest.approx(0.7) and merged.scores["passed"] == 0.0 and merged.details["passed"] is False
    assert merged.details["spread"]["weighted_score"] == pytest.approx(0.4) and merged.details["agreement"] == 0.5
