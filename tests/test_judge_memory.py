"""Memory: exemplars, retrieval (never the judged task), the official memory-file parser, and
calibration exemplars in subjective requests. Real MiniLM; CLIP with random weights."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from evaluator.judge import (
    Exemplar,
    JudgeConfig,
    MemoryFormatError,
    OpenAIJudge,
    TaskInput,
    embed_exemplars,
    parse_memory_records,
    read_memory_dir,
    read_memory_file,
    retrieve,
    text_embeddings,
)
from evaluator.judge.messages import DIMENSIONS_HEADER
from tests.openai_server import EXPECTED_SUBJECTIVE_SCORE, ScriptedOpenAIServer, keys_after, openai_server, request_text  # noqa: F401

MEMORY = Path(__file__).resolve().parent / "fixtures" / "memory"
UNKNOWN = Path(__file__).resolve().parent / "fixtures" / "memory-unknown-task"
TASK = TaskInput("oe_03", "OE", "Lighthouse", "A lighthouse in a storm for a travel poster.", {}, ("a lighthouse",), ("a lighthouse",))


def ex(exemplar_id: str, task_id: str, category: str = "OE", side: str = "prompt", **kwargs: object) -> Exemplar:
    return Exemplar(exemplar_id=exemplar_id, task_id=task_id, category=category, side=side, **kwargs)  # type: ignore[arg-type]


# --- exemplars and retrieval (pure) ------------------------------------------------------------------


def test_exemplar_validation() -> None:
    ex("a", "oe_1", scores={"instructional_clarity": 4}, notes={"instructional_clarity": "fine"})
    with pytest.raises(ValueError, match="side must be one of"):
        ex("a", "oe_1", side="audio")
    with pytest.raises(ValueError, match="not prompt dimensions"):
        ex("a", "oe_1", scores={"mood_atmosphere": 3})
    with pytest.raises(ValueError, match="integers 1..5"):
        ex("a", "oe_1", scores={"instructional_clarity": 6})
    with pytest.raises(ValueError, match="unknown category"):
        ex("a", "oe_1", category="XX")


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=float)
    return v / np.linalg.norm(v)


POOL = [
    (ex("own", "oe_03"), unit(1, 0, 0)),  # the judged task's own exemplar: the closest, never returned
    (ex("near", "oe_04"), unit(0.9, 0.1, 0)),
    (ex("mid", "oe_05"), unit(0.6, 0.8, 0)),
    (ex("far", "oe_06"), unit(0, 0, 1)),
    (ex("other-cat", "co_01", category="CO"), unit(1, 0, 0)),
    (ex("other-side", "oe_07", side="image"), unit(1, 0, 0)),
    (ex("near-twin", "oe_08"), 5 * unit(0.9, 0.1, 0)),  # same direction, other length: a cosine tie with "near"
]


def test_retrieve_ranks_by_cosine_and_excludes_own_task() -> None:
    ids = [e.exemplar_id for e in retrieve(unit(1, 0, 0), POOL, category="OE", side="prompt", exclude_task_id="oe_03", k=3)]
    assert ids == ["near", "near-twin", "mid"]  # ties broken by id; "own" never appears
    everything = retrieve(unit(1, 0, 0), POOL, category="OE", side="prompt", exclude_task_id="oe_03", k=10)
    assert [e.exemplar_id for e in everything] == ["near", "near-twin", "mid", "far"]


def test_retrieve_respects_category_side_and_k() -> None:
    assert [e.exemplar_id for e in retrieve(unit(1, 0, 0), POOL, category="CO", side="prompt", exclude_task_id="x")] == ["other-cat"]
    assert [e.exemplar_id for e in retrieve(unit(1, 0, 0), POOL, category="OE", side="image", exclude_task_id="x")] == ["other-side"]
    assert retrieve(unit(1, 0, 0), POOL, category="OE", side="image", exclude_task_id="oe_07") == []
    assert len(retrieve(unit(1, 0, 0), POOL, category="OE", side="prompt", exclude_task_id="x", k=1)) == 1
    assert retrieve(unit(1, 0, 0), POOL, category="OE", side="prompt", exclude_task_id="x", k=0) == []
    assert retrieve(unit(1, 0, 0), list(reversed(POOL)), category="OE", side="prompt", exclude_task_id="oe_03", k=2) == retrieve(
        unit(1, 0, 0), POOL, category="OE", side="prompt", exclude_task_id="oe_03", k=2
    )  # order of the pool does not matter
    with pytest.raises(ValueError, match="dimensions"):
        retrieve(np.ones(4), POOL, category="OE", side="prompt", exclude_task_id="x")


def test_retrieve_with_real_minilm_finds_the_similar_prompt() -> None:
    exemplars = read_memory_file(MEMORY / "prompt_from_prompt_memory_oe.json") + read_memory_file(
        UNKNOWN / "prompt_from_prompt_memory_oe.json"
    )
    pool = embed_exemplars(exemplars)
    query = text_embeddings(["A lighthouse on rocks in a storm, crashing waves, evening light"])[0]
    got = retrieve(query, pool, category="OE", side="prompt", exclude_task_id="oe_99", k=2)
    assert [e.task_id for e in got] == ["oe_01", "oe_02"]  # the lighthouse prompt first; oe_99 is the judged task
    assert "oe_99" in [e.task_id for e, _ in pool]


def test_embed_image_exemplars_with_clip() -> None:
    pool = embed_exemplars(read_memory_file(MEMORY / "image_from_image_memory_oe.json"))
    assert [e.task_id for e, _ in pool] == ["oe_01", "oe_02"]
    assert all(np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-5) for _, vec in pool)
    query = pool[0][1]
    assert [e.task_id for e in retrieve(query, pool, category="OE", side="image", exclude_task_id="oe_01")] == ["oe_02"]


# --- the official memory files --------------------------------------------------------------------------


def test_parse_official_prompt_memory() -> None:
    exemplars = read_memory_dir(MEMORY)
    assert [(e.category, e.side, e.task_id) for e in exemplars] == [
        ("OE", "image", "oe_01"),
        ("OE", "image", "oe_02"),
        ("CO", "prompt", "co_01"),
        ("IM", "prompt", "im_01"),
        ("OE", "prompt", "oe_01"),
        ("OE", "prompt", "oe_02"),
    ]
    first = read_memory_file(MEMORY / "prompt_from_prompt_memory_oe.json")[0]
    assert first.scores == {"instructional_clarity": 4, "creative_elaboration": 4, "terminology_proficiency": 5, "intent_formalization": 3}
    assert first.notes["terminology_proficiency"] == "Long exposure and focal length are used correctly."
    assert first.text.startswith("A lighthouse on a basalt cliff") and first.image is None
    assert read_memory_file(MEMORY / "prompt_from_prompt_memory_im.json")[0].scores["intent_formalization"] == 4


def test_parse_official_image_memory() -> None:
    exemplars = read_memory_file(MEMORY / "image_from_image_memory_oe.json")
    assert exemplars[0].scores == {"mood_atmosphere": 4, "visual_composition": 3, "color_lighting": 4, "technical_flawlessness": 5}
    assert exemplars[0].image is not None and exemplars[0].image.size == (24, 16) and exemplars[0].image_path == "images/oe_01.png"
    assert exemplars[1].scores == {"mood_atmosphere": 2, "visual_composition": 2, "color_lighting": 3, "technical_flawlessness": 3}
    lazy = read_memory_file(MEMORY / "image_from_image_memory_oe.json", load_images=False)
    assert lazy[0].image is None


def test_unknown_dimension_names_file_record_and_field() -> None:
    with pytest.raises(MemoryFormatError) as info:
        read_memory_file(MEMORY / "bad" / "prompt_from_prompt_memory_co.json")
    message = str(info.value)
    assert "prompt_from_prompt_memory_co.json record 0 (co_09)" in message
    assert "field 'prompt_dimensions'" in message and "'Vibe Check'" in message and "Instructional Clarity" in message


FOUR_PROMPT_DIMS = {name: {"score": 3, "note": "n"} for name in ("Clarity", "Elaboration", "Terminology", "Intent Formalization")}
FOUR_IMAGE_DIMS = {name: {"score": 3, "note": "n"} for name in ("Mood", "Visual Composition", "Color & Lighting", "Technical Flawlessness")}


def test_a_repeated_record_with_the_same_content_is_kept_once() -> None:
    record = {"task_id": "oe_1", "prompt": "p", "prompt_dimensions": FOUR_PROMPT_DIMS}
    exemplars = parse_memory_records([record, dict(record)], filename="prompt_from_prompt_memory_oe.json")
    assert [e.task_id for e in exemplars] == ["oe_1"] and exemplars[0].exemplar_id == "prompt_from_prompt_memory_oe.json record 0 (oe_1)"


@pytest.mark.parametrize(
    ("filename", "records", "problem"),
    [
        ("notes.json", [], "not an official memory file name"),
        ("prompt_from_prompt_memory_oe.json", {"a": 1}, "expected a JSON list of records"),
        ("prompt_from_prompt_memory_oe.json", [{"prompt": "p", "prompt_dimensions": {}}], "record 0: field 'task_id'"),
        ("prompt_from_prompt_memory_oe.json", [{"task_id": "oe_1", "prompt_dimensions": {"Clarity": {"score": 3}}}], "field 'prompt'"),
        (
            "prompt_from_prompt_memory_oe.json",
            [{"task_id": "oe_1", "prompt": "p", "prompt_dimensions": {"Clarity": {"score": 7}}}],
            "score must be an integer 1..5",
        ),
        (
            "prompt_from_prompt_memory_oe.json",
            [{"task_id": "oe_1", "prompt": "p", "prompt_dimensions": {"Mood & Atmosphere": {"score": 3}}}],
            "unknown prompt dimension 'Mood & Atmosphere'",
        ),
        (
            "image_from_image_memory_co.json",
            [{"task_id": "co_1", "image_path": "missing.png", "image_dimensions": FOUR_IMAGE_DIMS}],
            "field 'image_path': cannot open image",
        ),
        (
            "prompt_from_prompt_memory_oe.json",
            [{"task_id": "oe_1", "prompt": "p", "prompt_dimensions": {k: v for k, v in FOUR_PROMPT_DIMS.items() if k != "Terminology"}}],
            "record 0 (oe_1): field 'prompt_dimensions': missing dimension(s) ['Terminology Proficiency']",
        ),
        (
            "prompt_from_prompt_memory_oe.json",
            [
                {"task_id": "oe_1", "prompt": "p", "prompt_dimensions": FOUR_PROMPT_DIMS},
                {"task_id": "oe_1", "prompt": "q", "prompt_dimensions": FOUR_PROMPT_DIMS},
            ],
            "record 1 (oe_1): field 'task_id': repeats record 0 with different content",
        ),
    ],
)
def test_memory_parser_errors(filename: str, records: object, problem: str, tmp_path: Path) -> None:
    with pytest.raises(MemoryFormatError, match=None) as info:
        parse_memory_records(records, filename=filename, image_root=tmp_path)
    assert problem in str(info.value) and filename in str(info.value)


# --- exemplars in subjective requests ------------------------------------------------------------------


def judge_for(server: ScriptedOpenAIServer, **kwargs: object) -> OpenAIJudge:
    config = JudgeConfig(base_url=server.base_url, model="judge-test", timeout=5.0, max_retries=0, clip_pretrained="random", **kwargs)  # type: ignore[arg-type]
    return OpenAIJudge(config)


def test_prompt_exemplars_come_before_the_item(openai_server: ScriptedOpenAIServer) -> None:
    exemplars = read_memory_file(MEMORY / "prompt_from_prompt_memory_oe.json")[:2]
    prompt = "A lighthouse in a storm, dramatic sky."
    result = judge_for(openai_server).run("prompt_subjective", TASK, prompt, exemplars=exemplars)
    assert result.status == "ok" and result.value == EXPECTED_SUBJECTIVE_SCORE
    content = openai_server.requests[0]["messages"][1]["content"]
    assert isinstance(content, str)  # text only
    first, second, item = content.index(exemplars[0].text), content.index(exemplars[1].text), content.index(prompt)
    # the brief and the dimensions first (what every request of the skill and task shares), then exemplars, then the item
    assert content.index(TASK.brief) < content.index(DIMENSIONS_HEADER) < first < second < item
    assert content.count(DIMENSIONS_HEADER) == 1
    assert '"instructional_clarity": {"score": 4, "note": "Subject, setting and lens are unambiguous' in content
    assert keys_after(DIMENSIONS_HEADER, request_text(openai_server.requests[0])) == list(result.scores)


def test_image_exemplars_are_data_urls_before_the_item(openai_server: ScriptedOpenAIServer) -> None:
    exemplars = read_memory_file(MEMORY / "image_from_image_memory_oe.json")
    item = Image.new("RGB", (32, 32), (250, 250, 250))
    result = judge_for(openai_server).run("image_subjective", TASK, "p", item, exemplars=exemplars)
    assert result.status == "ok"
    parts = openai_server.requests[0]["messages"][1]["content"]
    images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert len(images) == 3 and parts[-1]["type"] == "image_url"
    decoded = [Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB") for url in images]
    assert [im.getpixel((0, 0)) for im in decoded] == [(20, 120, 140), (230, 200, 60), (250, 250, 250)]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert "Calibration example 1 (task oe_01, OE, image)" in texts[0]
    assert json.dumps({"score": 4, "note": "Calm and cold, as asked."}) in texts[1]


def test_exemplars_of_the_wrong_side_are_rejected_and_ignored_elsewhere(openai_server: ScriptedOpenAIServer) -> None:
    prompt_exemplars = read_memory_file(MEMORY / "prompt_from_prompt_memory_oe.json")
    with pytest.raises(ValueError, match="takes image exemplars only"):
        judge_for(openai_server).run("image_subjective", TASK, "p", Image.new("RGB", (8, 8)), exemplars=prompt_exemplars)
    judge_for(openai_server).run("prompt_objective", TASK, "a lighthouse", exemplars=prompt_exemplars)
    assert prompt_exemplars[0].text not in request_text(openai_server.requests[0])
