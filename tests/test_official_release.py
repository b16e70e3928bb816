"""The official route: the release's judge rebuilt from a checkout (here a fake one in the release's layout,
tests/fixtures/official_release, whose every word is invented), called over real HTTP (tests/openai_server.py)."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from evaluator.judge.config import JudgeConfig
from evaluator.judge.factory import make_judge
from evaluator.judge.official.composite import best_of_n_figures, first_image_figures
from evaluator.judge.official.judge import OfficialJudge
from evaluator.judge.official.layout import OfficialReleaseError, check_release
from evaluator.judge.official.release import load_release
from evaluator.judge.official.replies import parse_checks, parse_dimensions
from evaluator.judge.parsing import ReplyFormatError
from evaluator.judge.spec import JudgeConfigError
from evaluator.judge.types import TaskInput
from evaluator.metrics.aggregate import Unit, figures
from tests.openai_server import Reply, request_text

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "official_release"
CO_TASK = TaskInput(
    "co_01",
    "CO",
    "Tea room sign",
    "OUR OWN BRIEF about a tea room",
    {"pairing": "OUR PAIRING", "text": "'OUR TEXT'"},
    ("our own prompt item",),
    ("our own image item",),
)
OE_TASK = TaskInput("oe_01", "OE", "Harbour dawn", "OUR OWN BRIEF about a harbour", {}, ("our own prompt item",), ("our own image item",))
IM_TASK = TaskInput("im_01", "IM", "Imitation im_01", "Reproduce the target.", {}, ("our item",), ("our item",))
PROMPT_SCORES = {"Instructional Clarity": 4, "Creative Elaboration": 3, "Terminology Proficiency": 2, "Intent Formalization": 5}
PROMPT_KEYS = ("instructional_clarity", "creative_elaboration", "terminology_proficiency", "intent_formalization")
IMAGE_NAMES = ("Mood & Atmosphere", "Visual Composition", "Color & Lighting", "Technical Flawlessness")


class WordEmbedder:
    """A tiny deterministic Embedder for tests: words hashed into buckets; images as their mean colour."""

    identity = "test words + mean colour"

    def texts(self, texts: list[str]) -> np.ndarray:
        rows = np.zeros((len(texts), 64))
        for row, text in zip(rows, texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                row[zlib.crc32(word.encode()) % 64] += 1
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def images(self, images: list[Image.Image]) -> np.ndarray:
        rows = np.array([np.asarray(i.convert("RGB"), dtype=float).reshape(-1, 3).mean(axis=0) for i in images])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture
def release():
    return load_release(FIXTURE)


@pytest.fixture
def judge(release, openai_server):
    return OfficialJudge(official_config(openai_server.base_url, FIXTURE, max_retries=0), release=release, embedder=WordEmbedder())


def official_config(base_url: str, release: Path, **kwargs: object) -> JudgeConfig:
    return JudgeConfig(
        base_url=base_url, model="scripted-judge", clip_pretrained="random", route="official", official_release=str(release), **kwargs
    )  # type: ignore[arg-type]


def user_parts(request: dict) -> list[dict]:
    (user,) = [m for m in request["messages"] if m["role"] == "user"]
    return user["content"] if isinstance(user["content"], list) else [{"type": "text", "text": user["content"]}]


def decoded(url: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


# --- the checklists -------------------------------------------------------------------------------


def test_prompt_checklist_request_holds_the_prompt_and_the_release_checklist_only(judge, openai_server) -> None:
    items = ["The text names a copper kettle", "The text asks for the words 'TEA TIME'", "The text puts the kettle left of the cups"]
    openai_server.queue(Reply(content=json.dumps({"1. " + items[0]: 1, items[1]: 0, items[2]: 1})))
    result = judge.run("prompt_objective", CO_TASK, "A copper kettle beside two cups.")
    (request,) = openai_server.requests
    assert [m["role"] for m in request["messages"]] == ["user"]  # no system message, as the release sends it
    template = "\n".join(
        json.loads((FIXTURE / "evaluator/configs/templates/objective_check_templates.json").read_text())["prompt_check_template"]
    )
    numbered = "\n".join(f"{n}. {item}" for n, item in enumerate(items, start=1))
    assert user_parts(request) == [{"type": "text", "text": template.format(prompt="A copper kettle beside two cups.", checklist=numbered)}]
    text = request_text(request)
    assert "OUR OWN BRIEF" not in text and "OUR PAIRING" not in text and "Tea room" not in text  # neither brief nor constraints
    assert "our own prompt item" not in text  # the release's checklist, not ours
    assert (request["top_p"], request["max_tokens"], request["temperature"]) == (0.45, 777, 0.0) and "response_format" not in request
    assert result.status == "ok" and result.checklist == dict(zip(items, (1, 0, 1))) and result.value == pytest.approx(2 / 3)


def test_image_checklist_request_shows_the_checklist_and_a_compressed_image_not_the_prompt(judge, openai_server) -> None:
    items = ["A copper kettle is visible", "The words 'TEA TIME' are legible", "No plastic is visible"]
    openai_server.queue(Reply(content="not json"), Reply(content="```json\n" + json.dumps({"1": 1, "2": 1, "3": 0}) + "\n```"))
    image = Image.effect_noise((96, 64), 60).convert("RGB")
    result = judge.run("image_objective", CO_TASK, "PROMPT WORDS that must not show", image)
    first, second = openai_server.requests
    assert first == second  # an unusable reply is asked for again, unchanged: no repair turn
    text_part, image_part = user_parts(first)
    assert text_part["text"].startswith("FIXTURE CHECKER (image side).") and "PROMPT WORDS" not in text_part["text"]
    assert "1. A copper kettle is visible\n2. The words 'TEA TIME' are legible\n3. No plastic is visible" in text_part["text"]
    assert image_part["image_url"]["url"].startswith("data:image/jpeg;base64,") and decoded(image_part["image_url"]["url"]).size == (96, 64)
    assert result.status == "ok" and result.calls == 2 and result.checklist == dict(zip(items, (1, 1, 0)))


def test_a_checklist_reply_that_never_parses_fails_after_the_release_attempts(judge, openai_server) -> None:
    openai_server.queue(*[Reply(content='{"something else": 1}')] * 3)
    result = judge.run("prompt_objective", OE_TASK, "harbour at dawn")
    assert len(openai_server.requests) == 3  # retry.max_attempts of the fixture's objective runtime
    assert (
        result.status == "failed"
        and result.reason == "invalid reply after 3 attempt(s)"
        and "missing checklist items" in result.remote_text
    )


# --- the rubrics ------------------------------------------------------------------------------------


def test_prompt_rubric_request_uses_the_release_templates_labels_framing_and_memory(judge, openai_server) -> None:
    reply = {name: {"score": score, "note": f"n {name}"} for name, score in PROMPT_SCORES.items()}
    openai_server.queue(Reply(content="Here you go:\n" + json.dumps(reply)))
    result = judge.run("prompt_subjective", OE_TASK, "a harbour at dawn with boats in mist")
    (request,) = openai_server.requests
    system, user = request["messages"]
    assert system == {
        "role": "system",
        "content": "FIXTURE SYSTEM (prompt side): you grade texts written for a picture engine.\nKeep to the ladders below and answer in JSON only.",
    }
    text = user["content"]
    blocks = text.split("\n==\n")  # the fixture engine's separator
    assert (
        blocks[:2] == ["<<REFERENCE CASES (fixture)>>", "Anchor your ladder on these people-scored cases first."]
        and blocks[3] == "<<TEXT TO GRADE>>"
    )
    # three, most similar first (the task's own exemplar included); oe_02 and oe_03 share no word with the prompt: key order
    assert re.findall(r"Case task = (\S+)", blocks[2]) == ["oe_01", "oe_02", "oe_03"]
    assert (
        "Case brief = Heading = Harbour dawn\nJob = A calm harbour" in blocks[2]
        and "* Instructional Clarity => 4 because fixture note: clear harbour scene" in blocks[2]
    )
    assert (
        blocks[4].startswith("Brief under review:\nHeading = Harbour dawn\nJob = A calm harbour at first light")
        and "OUR OWN BRIEF" not in text
    )
    assert "Candidate text:\na harbour at dawn with boats in mist" in blocks[4]
    for label in ("• 4 (Crisp):", "• 5 (Luminous):", "• 4 (Grounded):", "• 5 (Exact):"):
        assert label in blocks[4]
    assert (request["top_p"], request["max_tokens"]) == (0.55, 1234) and "response_format" not in request
    assert result.scores == {"instructional_clarity": 4, "creative_elaboration": 3, "terminology_proficiency": 2, "intent_formalization": 5}
    assert result.value == 3.5 and result.rationales["intent_formalization"] == "n Intent Formalization"
    assert [r["task_id"] for r in result.details["retrieved"]] == ["oe_01", "oe_02", "oe_03"] and result.details["retrieved"][1][
        "similarity"
    ] == 0


def test_image_rubric_sees_the_prompt_and_the_full_image_and_exemplars_only_as_paths(judge, openai_server) -> None:
    openai_server.queue(Reply(content=json.dumps({n: {"score": 5, "rationale": "r"} for n in IMAGE_NAMES})))
    image = Image.new("RGB", (700, 500), (190, 40, 35))  # reddish: the red exemplar is nearest
    result = judge.run("image_subjective", OE_TASK, "THE PROMPT a red harbour", image)
    (request,) = openai_server.requests
    assert request["messages"][0]["content"] == "FIXTURE SYSTEM (image side): you grade pictures made by a picture engine. JSON only."
    parts = user_parts(request)
    assert [p["type"] for p in parts] == ["text", "image_url"]  # one image: the candidate's, exemplars are text
    assert decoded(parts[1]["image_url"]["url"]).size == (700, 500) and parts[1]["image_url"]["url"].startswith("data:image/png")
    text = parts[0]["text"]
    assert "Text the picture was made from:\nTHE PROMPT a red harbour\n\n[[PICTURE ATTACHED BELOW]]" in text
    assert re.findall(r"Case task = (\S+)", text) == ["oe_01", "oe_03", "oe_02"] and "Picture case #1" in text
    assert f"Picture file = {FIXTURE.resolve()}/evaluator/subjective/memory/images/oe/oe_01.png" in text
    assert "• 5 (Haunting):" in text and "• 5 (Radiant):" in text
    assert (
        result.status == "ok"
        and result.value == 5.0
        and set(result.scores) == {"mood_atmosphere", "visual_composition", "color_lighting", "technical_flawlessness"}
    )


def test_co_and_im_tasks_are_described_as_the_release_describes_them(judge, openai_server) -> None:
    reply = json.dumps({name: {"score": 3, "rationale": "r"} for name in PROMPT_SCORES})
    openai_server.queue(Reply(content=reply), Reply(content=reply))
    judge.run("prompt_subjective", CO_TASK, "copper kettle and cups")
    judge.run("prompt_subjective", IM_TASK, "a lighthouse")
    co, im = (request_text(r) for r in openai_server.requests)
    assert (
        "Brief under review:\nJob -> A hanging sign for a tea room on a quiet lane.\nPairs with -> copper kettle, two cups\nArrangement ->"
        in co
    )
    assert "Lettering -> 'TEA TIME'\nMust not -> no plastic\n\nCandidate text:" in co and "OUR PAIRING" not in co
    assert f"Picture to copy at {FIXTURE.resolve()}/dataset/gt_image/1.png\nWrite text that makes the engine draw this picture again." in im


def test_a_rubric_reply_that_does_not_parse_fails_without_a_second_call(judge, openai_server) -> None:
    openai_server.queue(Reply(content=json.dumps({"Instructional Clarity": {"score": 4, "rationale": "r"}})))
    result = judge.run("prompt_subjective", OE_TASK, "harbour")
    assert len(openai_server.requests) == 1 and result.status == "failed" and result.reason == "invalid reply after 1 attempt(s)"


# --- routing, spec, parsing ---------------------------------------------------------------------------


def test_route_skips_what_the_release_does_not_run(judge, openai_server) -> None:
    assert judge.skip_reason("image_subjective", IM_TASK) == "IM tasks are not judged on image_subjective on the official route"
    assert judge.skip_reason("target_similarity", IM_TASK) == "IM tasks are not judged on target_similarity on the official route"
    co_02 = TaskInput("co_02", "CO", "Bike", "b", {}, ("ours",), ("ours",))
    assert judge.run("prompt_objective", co_02, "p").reason == "the official release has no prompt checklist for task co_02"
    assert (
        judge.skip_reason("image_objective", co_02) is None
        and judge.run("image_subjective", OE_TASK, "p").reason == "no image was provided"
    )
    assert openai_server.requests == []


def test_spec_is_the_release_s_and_moves_with_any_file_of_the_checkout(judge, openai_server, tmp_path) -> None:
    assert judge.judge_id == "official:scripted-judge" and judge.version.startswith("ateliereval-release+")
    assert "route official" in judge.label and judge.spec.parameters["levels"]["Intent Formalization"] == [
        "Vague",
        "Hazy",
        "Partial",
        "Grounded",
        "Exact",
    ]
    ours = make_judge(JudgeConfig(base_url=openai_server.base_url, model="scripted-judge", clip_pretrained="random"))
    assert (ours.judge_id, ours.version) != (judge.judge_id, judge.version)
    copy = shutil.copytree(FIXTURE, tmp_path / "release")
    image = copy / "evaluator/subjective/memory/images/co/co_01.png"
    Image.new("RGB", (8, 8), (1, 2, 3)).save(image)  # one memory image changed: another judge
    moved = OfficialJudge(official_config(openai_server.base_url, copy), release=load_release(copy), embedder=WordEmbedder())
    assert moved.version != judge.version and moved.judge_id == judge.judge_id


def test_release_reply_rules() -> None:
    items = ["A kettle", "Two  cups"]
    assert parse_checks('{"1. A kettle": 1, "2) Two cups": 0}', items) == {"A kettle": 1, "Two  cups": 0}
    assert parse_checks('{"1": true, "2": 0}', items) == {"A kettle": 1, "Two  cups": 0}  # the release compares with ==
    with pytest.raises(ReplyFormatError, match="missing checklist items"):
        parse_checks('{"A kettle": 1}', items)
    with pytest.raises(ReplyFormatError, match="values must be 0 or 1"):
        parse_checks('{"A kettle": 1, "Two  cups": 2}', items)
    fenced = "```json\n" + json.dumps({n: {"score": 2, "note": "x"} for n in PROMPT_SCORES}) + "\n```"
    assert parse_dimensions(fenced, tuple(PROMPT_SCORES))[0] == dict.fromkeys(PROMPT_SCORES, 2)
    with pytest.raises(ReplyFormatError, match="'score' must be an integer from 1 to 5"):
        parse_dimensions(json.dumps({n: {"score": 4.5, "note": "x"} for n in PROMPT_SCORES}), tuple(PROMPT_SCORES))


# --- a folder that is not a checkout --------------------------------------------------------------------


def test_a_missing_file_is_named(tmp_path) -> None:
    copy = shutil.copytree(FIXTURE, tmp_path / "release")
    (copy / "evaluator/objective/checklist/im_checklist.json").unlink()
    with pytest.raises(OfficialReleaseError, match=r"im_checklist\.json: file not found"):
        check_release(copy)
    with pytest.raises(OfficialReleaseError, match=r"evaluator/objective/checklist/im_checklist\.json: file not found"):
        make_judge(
            JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", clip_pretrained="random", route="official", official_release=str(copy))
        )
    with pytest.raises(OfficialReleaseError, match="is not a folder"):
        check_release(tmp_path / "nowhere")


def test_a_changed_layout_is_named_not_guessed(tmp_path) -> None:
    copy = shutil.copytree(FIXTURE, tmp_path / "release")
    templates = copy / "evaluator/configs/templates/subjective_prompt_templates.json"
    templates.write_text(templates.read_text().replace("• 3 (Partial)", "• three (Partial)"))
    where = r"subjective_prompt_templates\.json prompt_subjective\.user_template: "
    with pytest.raises(OfficialReleaseError, match=where + "no anchored levels 1 to 5 under a heading for 'Intent Formalization'"):
        load_release(copy)
    shutil.copy(FIXTURE / "evaluator/configs/templates/subjective_prompt_templates.json", templates)
    engine = copy / "evaluator/subjective/s1_subjective_memory_skill_engine.py"
    engine.write_text(engine.read_text().replace("def _format_image_exemplar_block", "def _format_picture_block"))
    with pytest.raises(
        OfficialReleaseError, match=r"s1_subjective_memory_skill_engine\.py: _format_image_exemplar_block: function not found"
    ):
        load_release(copy)
    shutil.copy(FIXTURE / "evaluator/subjective/s1_subjective_memory_skill_engine.py", engine)
    engine.write_text(engine.read_text().replace('f"Picture file = {ex.image_path}"', 'f"Picture file = {ex.image_file}"'))
    with pytest.raises(
        OfficialReleaseError, match=r"_format_image_exemplar_block: uses 'ex.image_file', which the official route does not supply"
    ):
        load_release(copy)


def test_the_official_route_and_the_checkout_go_together(openai_server) -> None:
    with pytest.raises(JudgeConfigError, match="an official release checkout"):
        make_judge(JudgeConfig(base_url=openai_server.base_url, model="m", clip_pretrained="random", route="official"))
    with pytest.raises(JudgeConfigError, match="got route 'ateliereval'"):
        make_judge(JudgeConfig(base_url=openai_server.base_url, model="m", clip_pretrained="random", official_release=str(FIXTURE)))
    with pytest.raises(JudgeConfigError, match="exactly one model"):
        make_judge(
            JudgeConfig(
                base_url=openai_server.base_url,
                models=("a", "b"),
                clip_pretrained="random",
                route="official",
                official_release=str(FIXTURE),
            )
        )


def test_the_site_builds_the_official_judge_from_the_setting(scripted_judge, settings) -> None:
    from evaluation import runtime

    settings.ATELIER_OFFICIAL_RELEASE, settings.ATELIER_JUDGE_ROUTE = str(FIXTURE), "official"
    runtime.reset()
    current = runtime.judge()
    assert isinstance(current, OfficialJudge) and current.route == "official" and current.release.root == FIXTURE.resolve()
    assert runtime.judge_fields(current)["judge_spec"]["route"] == "official"


def official_responder(request: dict) -> Reply:
    """Answers the fixture release's requests: every rubric dimension 4, every checklist item 1."""
    system = request["messages"][0]["content"] if request["messages"][0]["role"] == "system" else ""
    names = PROMPT_SCORES if "(prompt side)" in system else IMAGE_NAMES if "(image side)" in system else None
    if names is not None:
        return Reply(content=json.dumps({name: {"score": 4, "rationale": "r"} for name in names}))
    items = re.findall(r"^\d+\. (.+)$", request_text(request), flags=re.MULTILINE)
    return Reply(content=json.dumps(dict.fromkeys(items, 1)))


@pytest.mark.django_db(transaction=True)
def test_a_submission_is_judged_on_the_official_route_without_our_memory(team, sample_pack, scripted_judge, settings, tmp_path) -> None:
    from django.core.management import call_command

    from evaluation.models import Judgement
    from evaluation.units import task_input
    from evaluator.judge.cache import cache_key
    from submissions.services import submission_create

    row = {"side": "prompt", "category": "OE", "task_id": "oe-s02", "text": "OUR MEMORY EXEMPLAR", "scores": dict.fromkeys(PROMPT_KEYS, 5)}
    (tmp_path / "ours.jsonl").write_text(json.dumps(row))
    call_command("import_exemplars", str(tmp_path / "ours.jsonl"))
    settings.ATELIER_OFFICIAL_RELEASE, settings.ATELIER_JUDGE_ROUTE = str(FIXTURE), "official"
    scripted_judge.default = official_responder
    data = b'{"task_id": "oe-s01", "prompt": "Gouache bread in morning light"}\n'
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=data)
    submission.refresh_from_db()
    assert submission.status == "done" and submission.judge_id == "official:scripted-judge", submission.error
    judged = dict(Judgement.objects.filter(submission=submission).values_list("skill", "status").distinct())
    # oe-s01 is not a task of the release: no checklist there, so both checklists are skipped
    assert judged == {"prompt_subjective": "ok", "image_subjective": "ok", "prompt_objective": "skipped", "image_objective": "skipped"}
    bodies = [json.dumps(r) for r in scripted_judge.requests]
    assert bodies and all("FIXTURE SYSTEM" in b for b in bodies) and not any("OUR MEMORY EXEMPLAR" in b for b in bodies)
    # our memory is not even retrieved: the stored cache key is that of a run with no exemplars
    stored = Judgement.objects.select_related("entry__task").get(submission=submission, skill="prompt_subjective")
    unused = cache_key(
        "prompt_subjective", stored.judge_id, stored.judge_version, task_input(stored.entry.task), stored.entry.text, None, ()
    )
    assert stored.cache_key == unused


def start(env: dict[str, str]) -> subprocess.CompletedProcess:
    code = "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'atelier.settings'); django.setup()"
    full = {
        k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "ATELIER_JUDGE_ROUTE", "ATELIER_OFFICIAL_RELEASE")
    } | env
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "env, named",
    [
        (
            {"ATELIER_OFFICIAL_RELEASE": "/nonexistent/ateliereval"},
            "ATELIER_OFFICIAL_RELEASE='/nonexistent/ateliereval' is not a checkout of the release: /nonexistent/ateliereval is not a folder",
        ),
        (
            {"ATELIER_OFFICIAL_RELEASE": str(FIXTURE / "dataset")},
            "dataset/evaluator/configs/templates/subjective_prompt_templates.json: file not found",
        ),
        (
            {"ATELIER_JUDGE_ROUTE": "official"},
            "ATELIER_JUDGE_ROUTE='official': the route 'official' is the judge of ATELIER_OFFICIAL_RELEASE",
        ),
    ],
)
def test_start_up_refuses_a_bad_official_setting(env, named) -> None:
    result = start(env)
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr and named in result.stderr


def test_start_up_takes_a_checkout() -> None:
    assert (
        start(
            {"ATELIER_OFFICIAL_RELEASE": str(FIXTURE), "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ATELIER_CLIP_PRETRAINED": "random"}
        ).returncode
        == 0
    )


# --- top-1 of N -------------------------------------------------------------------------------------------


def unit(task: str, category: str, skill: str, value: float, scale: str, image: int = -1, rank: int | None = None) -> Unit:
    """A unit; image `i` (a render id) is the prompt's image i - 1 on backend b (render ids here follow image order
    reversed for images 1 and 2, so the first image is never simply the lowest id)."""
    index = {1: 1, 2: 0}.get(image, image - 1) if image >= 0 else -1
    return Unit(task, category, 0, skill, "ok", value, "b" if image >= 0 else "", image, scale, True, rank, index)


IMAGES = [
    ("image_subjective", 2.0, "likert_1_5", 1, 0),  # render 1: the prompt's second image
    ("image_objective", 1.0, "rate_0_1", 1, 2),
    ("image_subjective", 4.5, "likert_1_5", 2, 0),  # render 2: its first image
    ("image_objective", 0.0, "rate_0_1", 2, 2),
]


def test_the_paper_best_of_n_keeps_the_best_image_of_each_prompt() -> None:
    prompt = [unit("oe_01", "OE", "prompt_subjective", 3.0, "likert_1_5"), unit("oe_01", "OE", "prompt_objective", 0.5, "rate_0_1")]
    images = [unit("oe_01", "OE", skill, v, scale, image=i, rank=r) for skill, v, scale, i, r in IMAGES]
    overall = {f.key: f.value for f in best_of_n_figures(prompt + images) if f.scope == "overall"}["overall"]
    assert overall == pytest.approx((50 + (87.5 + 0) / 2) / 2)  # image 2 (rubric 4.5) alone, its checklist 0 included
    mean_of_images = {f.key: f.value for f in figures(prompt + images) if f.scope == "overall"}["overall"]
    assert mean_of_images == pytest.approx((50 + ((25 + 87.5) / 2 + (100 + 0) / 2) / 2) / 2) != overall
    im = [unit("im_01", "IM", "image_objective", v, "rate_0_1", image=i, rank=2) for i, v in ((1, 0.25), (2, 0.75), (3, 0.5))]
    assert {f.key: f.value for f in best_of_n_figures(im) if f.scope == "skill"}["image_objective"] == 0.75  # IM: by its checklist


def test_the_release_first_image_is_the_one_with_image_index_0_whatever_its_score() -> None:
    prompt = [unit("oe_01", "OE", "prompt_subjective", 3.0, "likert_1_5")]
    worse_first = [unit("oe_01", "OE", "image_subjective", v, "likert_1_5", image=i, rank=0) for i, v in ((3, 5.0), (2, 1.0))]
    overall = {f.key: f.value for f in first_image_figures(prompt + worse_first) if f.scope == "overall"}["overall"]
    assert overall == pytest.approx((50 + 0) / 2)  # render 2 is image index 0 (score 1 -> 0), render 3 is index 2
    im = [unit("im_01", "IM", "image_objective", v, "rate_0_1", image=i, rank=2) for i, v in ((1, 0.25), (2, 0.75), (3, 0.5))]
    assert {f.key: f.value for f in first_image_figures(im) if f.scope == "skill"}["image_objective"] == 0.75  # render 2: index 0


def test_the_site_stores_the_first_image_composite_for_the_official_judge_only() -> None:
    from evaluation.figures import all_figures, first_image_composite

    prompt = [unit("oe_01", "OE", "prompt_subjective", 3.0, "likert_1_5")]
    images = [unit("oe_01", "OE", "image_subjective", v, "likert_1_5", image=i, rank=0) for i, v in ((1, 4.5), (2, 2.0))]
    official = all_figures(prompt + images, first_image=first_image_composite({"engine": "official"}))
    stored = {f.key: f.value for f in official if f.scope in ("overall", "task")}
    assert stored == {"overall": pytest.approx((50 + 25) / 2), "oe_01": pytest.approx((50 + 25) / 2)}  # render 2, the first image
    best = {f.key: f.value for f in official if f.scope == "top1"}  # the paper's best of N stays its own figure
    assert best == {"image_subjective": 4.5}  # over both images, whichever the composite kept
    ours = {
        f.key: f.value
        for f in all_figures(prompt + images, first_image=first_image_composite({"engine": "openai"}))
        if f.scope == "overall"
    }
    assert ours == {"overall": pytest.approx((50 + (87.5 + 25) / 2) / 2)}
