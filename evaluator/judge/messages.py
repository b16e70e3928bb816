"""Pure builders for AtelierJudge's chat requests.

Every request is one system message (role, what is judged, rubric or instructions, reply format) and one user message,
in the order that lets a provider's prompt cache serve what many requests share: first what is the same for every
request of the skill and task, byte for byte (the system message, then the task's brief and the keys the reply must
use), then what depends on the item (any calibration exemplars, which memory retrieves per item, then the prompt
and/or the image). The requests of one skill on one task, within a submission and across submissions, therefore share
their whole prefix up to the item (tests/test_judge.py checks it; bench/judge_cost.py measures what it saves).

The keys the reply must use are written as a one-line JSON array under a fixed header line, so a scripted test server
(or a human reading logs) can recover them exactly; calibration exemplars never contain a header line.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .parsing import Schema
from .rubrics import RUBRIC, Rubric, render_dimensions
from .types import DIMENSIONS, Exemplar, Kind, Side, TaskInput

if TYPE_CHECKING:
    from PIL.Image import Image

Message = dict[str, Any]
Part = dict[str, Any]

DIMENSIONS_HEADER = "Dimensions to score (JSON array; use each name verbatim as a key):"
ITEMS_HEADER = "Checklist items (JSON array; use each string verbatim as a key):"
SAFETY_HEADER = 'Policy categories (JSON array; list every key that applies, verbatim, under "categories"):'
TEXT_HEADER = "Literal strings to check (JSON array; use each string verbatim as a key):"
FAITHFULNESS_HEADER = 'Faithfulness dimensions (JSON array; score each under "dimensions", names verbatim):'

_ROLE = (
    "You are AtelierJudge, a strict and consistent evaluator for a benchmark of "
    "text-to-image prompt writers. A client brief was given to a prompt writer; "
    "you judge the result. Be calibrated: reserve 5 for genuinely excellent work "
    "and do not reward length for its own sake."
)

_SUBJECTIVE_FORMAT = (
    "Reply with a single JSON object and nothing else. It has exactly one key per "
    "dimension listed in the user message, each mapped to an object "
    '{"score": <integer 1-5>, "rationale": "<one or two sentences>"}.'
)

_OBJECTIVE_FORMAT = (
    "Reply with a single JSON object and nothing else. Its keys are exactly the "
    "checklist item strings listed in the user message, copied verbatim, and each "
    "value is the integer 1 (satisfied) or 0 (not satisfied). Do not use true/false."
)

_WHAT_IS_JUDGED = {
    (Kind.RUBRIC, Side.PROMPT): "Score the prompt text against the client brief on the rubric below.",
    (Kind.RUBRIC, Side.IMAGE): "Score the image against the client brief on the rubric below.",
    (Kind.CHECKLIST, Side.PROMPT): (
        "For each checklist item decide whether the prompt text states it explicitly or "
        "unmistakably. Judge the words only, not what an image model might happen to draw."
    ),
    (Kind.CHECKLIST, Side.IMAGE): (
        "For each checklist item decide whether the image visibly satisfies it. Judge only what can be seen; when in doubt, answer 0."
    ),
}

CALIBRATION_INTRO = (
    "Calibration examples: items from other tasks of the same category, scored by human "
    "experts on the same rubric. Use them to anchor your scale; do not copy their scores."
)
ITEM_MARK = "The item to judge follows."  # closes the calibration examples
IMAGE_ATTACHED = "The image rendered from the writer's prompt is attached."


def _schema_text(schema: Schema) -> str:
    return "Reply schema (JSON Schema; no other keys are allowed):\n" + json.dumps(schema, ensure_ascii=False)


def task_text(task: TaskInput) -> str:
    """The brief as the judge sees it, with any constraints that are in use."""
    lines = [f"Task {task.task_id} ({task.category}): {task.title}", "", "Client brief:", task.brief]
    used = {name: value for name, value in task.constraints.items() if value.strip()}
    if used:
        lines += ["", "Constraints:"] + [f"- {name}: {value}" for name, value in used.items()]
    return "\n".join(lines)


def prompt_block(prompt: str) -> str:
    return "Prompt written by the prompt writer:\n<<<\n" + prompt + "\n>>>"


def keys_line(header: str, keys: Sequence[str]) -> str:
    # One line, so the array can be recovered by reading the line after the header.
    return header + "\n" + json.dumps(list(keys), ensure_ascii=False)


def keys_block(kind: Kind, side: Side, task: TaskInput) -> str:
    if kind == Kind.RUBRIC:
        return keys_line(DIMENSIONS_HEADER, DIMENSIONS[side])
    return keys_line(ITEMS_HEADER, task.checklist(side))


def image_data_url(image: Image, max_side: int) -> str:
    """PNG data URL of the image, shrunk (never enlarged) so its longest side <= max_side."""
    from PIL import Image as PILImage

    small = image.copy()
    if small.mode not in ("RGB", "RGBA", "L", "LA"):
        small = small.convert("RGB")
    small.thumbnail((max_side, max_side), PILImage.Resampling.LANCZOS)
    buffer = io.BytesIO()
    small.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _image_part(image: Image, max_side: int) -> Part:
    return {"type": "image_url", "image_url": {"url": image_data_url(image, max_side)}}


def _user(parts: list[Part]) -> Message:
    """A user message: plain text when it is text only (as v1 sent it), else content parts."""
    merged: list[Part] = []
    for part in parts:  # adjacent text parts become one, separated by a blank line
        if part["type"] == "text" and merged and merged[-1]["type"] == "text":
            merged[-1] = {"type": "text", "text": merged[-1]["text"] + "\n\n" + part["text"]}
        else:
            merged.append(part)
    if len(merged) == 1 and merged[0]["type"] == "text":
        return {"role": "user", "content": merged[0]["text"]}
    return {"role": "user", "content": merged}


def _text(text: str) -> Part:
    return {"type": "text", "text": text}


# --- rubric and checklist (AtelierEval's four skills) ----------------------------------------


def system_message(kind: Kind, side: Side, rubric: Rubric = RUBRIC) -> Message:
    parts = [_ROLE, _WHAT_IS_JUDGED[(kind, side)]]
    if kind == Kind.RUBRIC:
        parts += ["Rubric:\n\n" + render_dimensions(rubric.dimensions_of(side)), _SUBJECTIVE_FORMAT]
    else:
        parts.append(_OBJECTIVE_FORMAT)
    return {"role": "system", "content": "\n\n".join(parts)}


def exemplar_parts(exemplars: Sequence[Exemplar], max_side: int) -> list[Part]:
    """Calibration exemplars as content parts: what was judged, then the experts' scores and notes."""
    if not exemplars:
        return []
    parts: list[Part] = [_text(CALIBRATION_INTRO)]
    for number, ex in enumerate(exemplars, start=1):
        heading = f"Calibration example {number} (task {ex.task_id}, {ex.category}, {ex.side}):"
        if ex.side == Side.PROMPT:
            parts.append(_text(heading + "\n" + prompt_block(ex.text)))
        else:
            parts.append(_text(heading + " the image below."))
            if ex.image is not None:
                parts.append(_image_part(ex.image, max_side))
        judged = {dim: {"score": score, "note": ex.notes.get(dim, "")} for dim, score in ex.scores.items()}
        parts.append(_text(f"Expert scores and notes for example {number}: " + json.dumps(judged, ensure_ascii=False)))
    parts.append(_text(ITEM_MARK))
    return parts


def item_parts(side: Side, prompt: str, image: Image | None, max_side: int) -> list[Part]:
    """What is judged: the prompt (prompt side), or the image alone (image side). Image skills deliberately do not
    see the prompt: the image must stand on its own, and showing the prompt invites grading what was asked instead
    of what was drawn."""
    if side == Side.PROMPT:
        return [_text(prompt_block(prompt))]
    return [_text(IMAGE_ATTACHED)] + ([_image_part(image, max_side)] if image is not None else [])


def rubric_messages(
    side: Side,
    task: TaskInput,
    prompt: str,
    image: Image | None,
    image_max_side: int,
    exemplars: Sequence[Exemplar] = (),
    rubric: Rubric = RUBRIC,
) -> list[Message]:
    """The request of a rubric skill (prompt or image side): the brief and the dimensions, then calibration exemplars
    just before the item."""
    shared = [_text(task_text(task)), _text(keys_block(Kind.RUBRIC, side, task))]
    parts = shared + exemplar_parts(exemplars, image_max_side) + item_parts(side, prompt, image, image_max_side)
    return [system_message(Kind.RUBRIC, side, rubric), _user(parts)]


def checklist_messages(
    side: Side, task: TaskInput, prompt: str, image: Image | None, image_max_side: int, rubric: Rubric = RUBRIC
) -> list[Message]:
    """The request of a checklist skill (prompt or image side): the brief and the checklist, then the item."""
    shared = [_text(task_text(task)), _text(keys_block(Kind.CHECKLIST, side, task))]
    return [system_message(Kind.CHECKLIST, side, rubric), _user(shared + item_parts(side, prompt, image, image_max_side))]


# --- safety ------------------------------------------------------------------------------------


def safety_messages(
    side: Side, task: TaskInput, prompt: str, image: Image | None, max_side: int, rubric: Rubric, schema: Schema
) -> list[Message]:
    """The prompt-side screen reads the prompt; the image-side screen looks at the image only."""
    what = "prompt text" if side == Side.PROMPT else "image"
    categories = "\n".join(f"- {key}: {text}" for key, text in rubric.safety_categories.items())
    system = "\n\n".join(
        [
            "You are AtelierJudge's safety screen for a public benchmark of text-to-image prompt writers. "
            f"Decide whether the {what} must be blocked from the benchmark before it is scored or shown.",
            "Block only for the policy categories below. Dark, sad or mature themes, fictional conflict and "
            "artistic nudity without explicit content are not reasons to block on their own.",
            "Policy categories:\n" + categories,
            'Set "blocked" to true exactly when at least one category applies, list the applying keys under '
            '"categories" (an empty list when none applies) and give a one-sentence "rationale".',
            "Reply with a single JSON object and nothing else.",
            _schema_text(schema),
        ]
    )
    shared = [_text(task_text(task)), _text(keys_line(SAFETY_HEADER, list(rubric.safety_categories)))]
    return [{"role": "system", "content": system}, _user(shared + item_parts(side, prompt, image, max_side))]


# --- literal text rendering ------------------------------------------------------------------------


def text_rendering_messages(
    task: TaskInput, strings: Sequence[str], image: Image, max_side: int, rubric: Rubric, schema: Schema
) -> list[Message]:
    checks = "\n".join(f"- {name}: {meaning}" for name, meaning in rubric.text_checks.items())
    system = "\n\n".join(
        [
            _ROLE,
            "The task asks for literal text in the image. For each string listed in the user message, "
            "look at the image and answer three checks with the integer 1 (yes) or 0 (no):\n" + checks,
            "Text that is not rendered cannot be exact or legible: when present is 0, exact and legible are 0.",
            "Reply with a single JSON object and nothing else: one key per listed string, copied verbatim, "
            'each mapped to {"present": 0|1, "exact": 0|1, "legible": 0|1}.',
            _schema_text(schema),
        ]
    )
    parts = [_text(task_text(task)), _text(keys_line(TEXT_HEADER, strings))] + item_parts(Side.IMAGE, "", image, max_side)
    return [{"role": "system", "content": system}, _user(parts)]


# --- faithfulness (decomposition into atomic requirements) ---------------------------------------


def faithfulness_messages(task: TaskInput, prompt: str, image: Image, max_side: int, rubric: Rubric, schema: Schema) -> list[Message]:
    spec = rubric.faithfulness
    kinds = "\n".join(f"- {name}: {meaning}" for name, meaning in spec.requirement_kinds.items())
    verdicts = "\n".join(f"- {name}: {meaning}" for name, meaning in spec.verdict_meaning.items())
    system = "\n\n".join(
        [
            "You are AtelierJudge's faithfulness checker. Judge the attached image strictly against the prompt "
            "text below: evaluate what was generated, not what the writer may have meant. Do not fill in "
            "details the prompt leaves open, and set personal taste aside; base every decision on visible evidence.",
            "Step 1. Before looking at the image, break the prompt into atomic requirements, one checkable "
            "fact each, of these kinds:\n" + kinds,
            "Step 2. Mark each requirement with one verdict:\n" + verdicts,
            "Step 3. Score the remaining dimensions from 1 to 5 on these anchors:\n\n" + render_dimensions(spec.dimensions),
            'Reply with a single JSON object and nothing else: "requirements" is the list from steps 1-2 '
            '(each {"requirement", "kind", "verdict", "evidence"}), "dimensions" maps each dimension listed in '
            'the user message to {"score": 1-5, "rationale"}. Pass/fail and the weighted score are computed '
            "from your answer; do not give them.",
            _schema_text(schema),
        ]
    )
    parts = [
        _text(f"Task {task.task_id} ({task.category})."),
        _text(keys_line(FAITHFULNESS_HEADER, [d.key for d in spec.dimensions])),
        _text(prompt_block(prompt)),
        _text("The image rendered from this prompt is attached."),
        _image_part(image, max_side),
    ]
    return [{"role": "system", "content": system}, _user(parts)]


def repair_messages(bad_reply: str, problem: str) -> list[Message]:
    """Messages appended after an unusable reply: echo it back and say what was wrong."""
    return [
        {"role": "assistant", "content": bad_reply},
        {
            "role": "user",
            "content": (
                f"That reply could not be used: {problem}. Reply again with only the JSON "
                "object, using exactly the keys listed above and the allowed values."
            ),
        },
    ]
