"""Metric skills: ArtWhisperer's CLIP score (pure, on constructed embeddings, then with random-weight CLIP)
and the colour-histogram shift. No model call; the same numbers from every judge kind."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from evaluator.judge import EmbeddingJudge, OpenAIJudge, TargetInput, TaskInput, clip_score, color_shift
from evaluator.judge.metric_skills import ALPHA, BETA, color_histogram, raw_clip_score
from tests.openai_server import ScriptedOpenAIServer, openai_server  # noqa: F401 - the fixture

IM_TASK = TaskInput("im-007", "IM", "Copy", "Recreate the target.", {}, ("a red fox",), ("a fox",))
OE_TASK = TaskInput("oe-007", "OE", "Fox", "A fox.", {}, ("a fox",), ("a fox",))


def at_angle(theta: float, scale: float = 1.0) -> np.ndarray:
    """A 3-d vector at angle theta from e1 (so the unit-vector distance to e1 is 2 sin(theta / 2))."""
    return scale * np.array([math.cos(theta), math.sin(theta), 0.0])


E1 = np.array([1.0, 0.0, 0.0])


def distance_for(raw: float) -> float:
    return (raw - BETA) / ALPHA


def angle_for(distance: float) -> float:
    return 2 * math.asin(distance / 2)


def test_constants_are_artwhisperers() -> None:
    assert (ALPHA, BETA) == (-150.3, 179.1)


def test_identical_embeddings_score_100_after_clipping() -> None:
    result = clip_score(E1, 3 * E1)  # normalisation: length does not matter
    assert result["distance"] == pytest.approx(0.0) and result["raw"] == pytest.approx(179.1)
    assert result["clip_score"] == 100.0 and result["scale"] == 1.0 and "reference_raw" not in result


def test_known_distance_gives_known_score() -> None:
    render = at_angle(angle_for(distance_for(71.3)), scale=7.0)
    result = clip_score(render, E1)
    assert result["distance"] == pytest.approx(distance_for(71.3))
    assert result["clip_score"] == pytest.approx(71.3) == pytest.approx(result["raw"])
    assert raw_clip_score(render, E1)[0] == pytest.approx(71.3)


def test_far_embeddings_clip_at_zero() -> None:
    result = clip_score(-E1, E1)  # opposite: d = 2, raw = 179.1 - 300.6
    assert result["distance"] == pytest.approx(2.0) and result["raw"] == pytest.approx(-121.5)
    assert result["clip_score"] == 0.0


def test_reference_scales_by_c_k_before_clipping() -> None:
    reference = at_angle(angle_for(distance_for(80.0)))  # the seed prompt's own render scores 80 raw
    render = at_angle(-angle_for(distance_for(60.0)))  # on the other side of the target
    result = clip_score(render, E1, reference)
    assert result["reference_raw"] == pytest.approx(80.0) and result["scale"] == pytest.approx(1.25)
    assert result["raw"] == pytest.approx(60.0) and result["clip_score"] == pytest.approx(75.0)
    # a render as close as the reference scores exactly 100; closer ones are clipped to 100
    assert clip_score(reference, E1, reference)["clip_score"] == pytest.approx(100.0)
    better = clip_score(at_angle(angle_for(distance_for(90.0))), E1, reference)
    assert better["clip_score"] == 100.0 and better["scale"] * better["raw"] == pytest.approx(112.5)


def test_reference_with_non_positive_raw_is_an_error() -> None:
    with pytest.raises(ValueError, match="c_k is undefined"):
        clip_score(E1, E1, -E1)
    with pytest.raises(ValueError, match="cannot be normalised"):
        clip_score(np.zeros(3), E1)


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


def test_color_shift_identical_is_zero_and_complementary_is_one() -> None:
    image = halves((200, 30, 40), (20, 200, 90))
    assert color_shift(image, image.copy()) == {"color_shift": 0.0, "color_similarity": 1.0}
    assert color_shift(solid((250, 10, 10)), solid((5, 245, 245)))["color_shift"] == 1.0  # red vs cyan
    assert color_shift(solid((255, 255, 255)), solid((0, 0, 0)))["color_shift"] == 1.0


def test_color_shift_is_partial_and_resolution_free() -> None:
    half_changed = color_shift(halves((255, 0, 0), (0, 255, 0)), solid((255, 0, 0)))
    assert half_changed["color_shift"] == pytest.approx(0.5)
    big, small = halves((255, 0, 0), (0, 0, 255)).resize((800, 800), Image.Resampling.NEAREST), halves((255, 0, 0), (0, 0, 255))
    assert color_shift(big, small)["color_shift"] == pytest.approx(0.0, abs=0.02)
    # joint histogram: red+cyan and white+black have the same per-channel marginals but different colours
    assert color_shift(halves((255, 0, 0), (0, 255, 255)), halves((255, 255, 255), (0, 0, 0)))["color_shift"] == 1.0


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
    online = OpenAIJudge(base_url=openai_server.base_url, model="m").run("target_similarity", IM_TASK, "p", render, target=TargetInput(target))
    assert online.scores == other.scores and openai_server.requests == []


def test_metric_skills_skip_and_route(embedding_judge: EmbeddingJudge) -> None:
    target = TargetInput(solid((1, 2, 3)))
    assert embedding_judge.run("target_similarity", IM_TASK, "p", solid((1, 2, 3))).reason == "no target image was provided"
    assert embedding_judge.run("target_similarity", IM_TASK, "p", None, target=target).reason == "no image was provided"
    assert embedding_judge.run("target_similarity", OE_TASK, "p", solid((1, 2, 3)), target=target).status == "skipped"
    assert embedding_judge.run("color_shift", IM_TASK, "p", solid((1, 2, 3)), target=target).reason == "IM tasks are not judged on color_shift"
    extended = EmbeddingJudge(route="extended")
    result = extended.run("color_shift", IM_TASK, "p", solid((250, 10, 10)), target=TargetInput(solid((5, 245, 245))))
    assert result.status == "ok" and result.value == 1.0 and result.scores["color_similarity"] == 0.0
