"""Metric skills as skills: with random-weight CLIP, through both judge kinds, and the histogram they use.
The pure functions' worked examples (CLIP score, colour shift) are data in tests/cases/."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from evaluator.judge import EmbeddingJudge, JudgeConfig, OpenAIJudge, TargetInput, TaskInput
from evaluator.judge.metric_skills import ALPHA, BETA, color_histogram
from tests.openai_server import ScriptedOpenAIServer, openai_server  # noqa: F401 - the fixture

IM_TASK = TaskInput("im-007", "IM", "Copy", "Recreate the target.", {}, ("a red fox",), ("a fox",))
OE_TASK = TaskInput("oe-007", "OE", "Fox", "A fox.", {}, ("a fox",), ("a fox",))


# --- colour shift ------------------------------------------------------------------------------------


def solid(color: tuple[int, int, int], size: tuple[int, int] = (40, 30)) -> Image.Image:
    return Image.new("RGB", size, color)


def halves(left: tuple[int, int, int], right: tuple[int, int, int]) -> Image.Image:
    image = solid(left, (40, 40))
    image.paste(solid(right, (20, 40)), (20, 0))
    return image


def test_color_histogram_is_normalised_512_bins() -> None:
    hist = color_histogram(halves((255, 0, 0), (0, 0, 255)))
    assert hist.shape == (512,) and hist.sum() == pytest.approx(1.0) and np.count_nonzero(hist) == 2


# --- as skills, through both judge kinds (CLIP with random weights) ---------------------------------


@pytest.fixture(scope="module")
def embedding_judge() -> EmbeddingJudge:
    return EmbeddingJudge()


def test_target_similarity_skill(embedding_judge: EmbeddingJudge, openai_server: ScriptedOpenAIServer) -> None:
    target = halves((200, 60, 20), (20, 60, 200))
    render = solid((90, 160, 40))
    same = embedding_judge.run("target_similarity", IM_TASK, "p", target.copy(), target=TargetInput(target))
    assert same.status == "ok", same.reason
    assert same.scores["distance"] == pytest.approx(0.0, abs=1e-5) and same.value == pytest.approx(100.0)
    assert same.details["clip_model"] == "ViT-B-32(random)"
    other = embedding_judge.run("target_similarity", IM_TASK, "p", render, target=TargetInput(target))
    assert other.status == "ok" and other.scores["distance"] > 0
    expected = min(100.0, max(0.0, ALPHA * other.scores["distance"] + BETA))
    assert other.value == pytest.approx(expected) and other.calls == 0
    scaled = embedding_judge.run("target_similarity", IM_TASK, "p", render, target=TargetInput(target, reference=render))
    assert scaled.scores["reference_raw"] == pytest.approx(other.scores["raw"])
    assert scaled.scores["scale"] == pytest.approx(100.0 / other.scores["raw"]) and scaled.value == pytest.approx(100.0)
    # the OpenAI judge computes the same numbers locally, without a request
    config = JudgeConfig(base_url=openai_server.base_url, model="m", clip_pretrained="random")
    online = OpenAIJudge(config).run("target_similarity", IM_TASK, "p", render, target=TargetInput(target))
    assert online.scores == other.scores and openai_server.requests == []


def test_metric_skills_skip_and_route(embedding_judge: EmbeddingJudge) -> None:
    target = TargetInput(solid((1, 2, 3)))
    assert embedding_judge.run("target_similarity", IM_TASK, "p", solid((1, 2, 3))).reason == "no target image was provided"
    assert embedding_judge.run("target_similarity", IM_TASK, "p", None, target=target).reason == "no image was provided"
    assert embedding_judge.run("target_similarity", OE_TASK, "p", solid((1, 2, 3)), target=target).status == "skipped"
    assert (
        embedding_judge.run("color_shift", IM_TASK, "p", solid((1, 2, 3)), target=target).reason == "IM tasks are not judged on color_shift"
    )
    extended = EmbeddingJudge(JudgeConfig(route="extended"))
    result = extended.run("color_shift", IM_TASK, "p", solid((250, 10, 10)), target=TargetInput(solid((5, 245, 245))))
    assert result.status == "ok" and result.value == 1.0 and result.scores["color_similarity"] == 0.0
