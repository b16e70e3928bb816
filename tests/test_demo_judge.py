"""The demo's scripted judge (demo/judge.py) answers the production OpenAIJudge over HTTP: every skill parses,
the answers are functions of what was sent (the same request twice, the same verdict), they tell a prompt that uses
the brief from one that does not, and the judge's label names it "scripted judge (demo)"."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from demo import judge as demo_judge
from demo.prompter import DemoPrompterServer
from evaluator.judge.config import DEMO_JUDGE_MODEL, JudgeConfig
from evaluator.judge.openai_judge import OpenAIJudge
from evaluator.judge.types import TaskInput
from tests.conftest import deployed_urls

TASK = TaskInput(
    task_id="co-001",
    category="CO",
    title="Winter fox poster",
    brief="A poster of a red fox resting in deep snow beside a frozen lantern for a winter festival.",
    constraints={"pairing": "", "layout": "fox centered", "quantity": "one fox", "text": "WINTER", "constraint": ""},
    prompt_checklist=("a red fox", "deep snow", "a frozen lantern"),
    image_checklist=("a fox", "snow on the ground", "the word WINTER"),
)
GOOD = "A red fox resting in deep snow beside a frozen lantern, winter festival poster, the word WINTER centered above"
POOR = "A cat on a sofa"


def picture(seed: int) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, size=(64, 64, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


@pytest.fixture(scope="module")
def judge():
    with DemoPrompterServer(answer=demo_judge.completion) as server:
        yield OpenAIJudge(JudgeConfig(base_url=server.base_url, model=DEMO_JUDGE_MODEL, clip_pretrained="random", max_retries=0))


@pytest.mark.parametrize("skill", ["prompt_subjective", "prompt_objective", "image_subjective", "image_objective"])
def test_every_skill_parses_and_the_same_request_gets_the_same_verdict(judge, skill):
    first = judge.run(skill, TASK, GOOD, picture(1))
    again = judge.run(skill, TASK, GOOD, picture(1))
    assert first.status == "ok", (first.reason, first.raw)
    assert (first.scores, first.checklist, first.value) == (again.scores, again.checklist, again.value)
    assert all("scripted judge (demo)" in text for text in first.rationales.values())


def test_the_prompt_side_tells_a_prompt_that_uses_the_brief_from_one_that_does_not(judge):
    good, poor = judge.run("prompt_subjective", TASK, GOOD), judge.run("prompt_subjective", TASK, POOR)
    assert len(good.scores) == 4 and good.value > poor.value
    assert judge.run("prompt_objective", TASK, GOOD).checklist == dict.fromkeys(TASK.prompt_checklist, 1)
    assert judge.run("prompt_objective", TASK, POOR).checklist == dict.fromkeys(TASK.prompt_checklist, 0)


def test_the_image_side_is_a_function_of_the_pixels_alone(judge):
    values = [judge.run("image_subjective", TASK, GOOD, picture(seed)).value for seed in range(8)]
    assert len(set(values)) > 1  # other pixels, other verdicts: a feedback round's new image may score differently
    assert judge.run("image_subjective", TASK, POOR, picture(3)).value == values[3]  # the prompt is not sent with an image
    flat = demo_judge.ImageFeatures(demo_judge_url(Image.new("RGB", (64, 64), (128, 128, 128))))
    busy = demo_judge.ImageFeatures(demo_judge_url(picture(2)))
    assert (flat.contrast, flat.colour) == (0.0, 0.0) and busy.contrast > 0.5 and 0 <= busy.draw < 1


def demo_judge_url(image: Image.Image) -> str:
    from evaluator.judge.messages import image_data_url

    return image_data_url(image, 512)


def test_a_request_it_does_not_know_is_refused_and_the_label_names_it(judge):
    assert "error" in demo_judge.completion({"messages": [{"role": "user", "content": "hello"}]}, 1)
    assert judge.spec.label.startswith("scripted judge (demo): rules, no model")


def test_the_demo_site_serves_the_same_rules_and_a_deployment_has_no_such_route(client, settings):
    from evaluator.judge.messages import rubric_messages
    from evaluator.judge.types import Side

    body = {"model": DEMO_JUDGE_MODEL, "messages": rubric_messages(Side.PROMPT, TASK, GOOD, None, 512)}
    answered = client.post("/demo/judge/v1/chat/completions", body, content_type="application/json")
    assert answered.status_code == 200
    assert answered.json()["choices"][0]["message"]["content"] == demo_judge.completion(body, 1)["choices"][0]["message"]["content"]
    assert client.post("/demo/judge/v1/chat/completions", {"messages": []}, content_type="application/json").status_code == 400
    with deployed_urls(settings):
        assert client.post("/demo/judge/v1/chat/completions", body, content_type="application/json").status_code == 404
