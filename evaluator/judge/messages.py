"""Pure builders for AtelierJudge's chat requests.

Every request is one system message (role, rubric or checklist instructions,
reply format) and one user message (the task, the prompt and/or the image).
The keys the reply must use are also written as a one-line JSON array under a
fixed header, so a scripted test server (or a human reading logs) can recover
them exactly.
"""

from __future__ import annotations

import base64
import io
import json
from typing import TYPE_CHECKING, Any

from .rubrics import RUBRICS, render_rubric
from .types import TaskInput, checklist_for, dimensions_for, is_image_skill, is_subjective

if TYPE_CHECKING:
    from PIL.Image import Image

Message = dict[str, Any]

DIMENSIONS_HEADER = "Dimensions to score (JSON array; use each name verbatim as a key):"
ITEMS_HEADER = "Checklist items (JSON array; use each string verbatim as a key):"

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
    "prompt_subjective": "Score the prompt text against the client brief on the rubric below.",
    "image_subjective": "Score the image against the client brief on the rubric below.",
    "prompt_objective": (
        "For each checklist item decide whether the prompt text states it explicitly or "
        "unmistakably. Judge the words only, not what an image model might happen to draw."
    ),
    "image_objective": (
        "For each checklist item decide whether the image visibly satisfies it. "
        "Judge only what can be seen; when in doubt, answer 0."
    ),
}


def system_message(skill: str) -> Message:
    parts = [_ROLE, _WHAT_IS_JUDGED[skill]]
    if is_subjective(skill):
        parts += ["Rubric:\n\n" + render_rubric(RUBRICS[skill]), _SUBJECTIVE_FORMAT]
    else:
        parts.append(_OBJECTIVE_FORMAT)
    return {"role": "system", "content": "\n\n".join(parts)}


def task_text(task: TaskInput) -> str:
    """The brief as the judge sees it, with any constraints that are in use."""
    lines = [f"Task {task.task_id} ({task.category}): {task.title}", "", "Client brief:", task.brief]
    used = {name: value for name, value in task.constraints.items() if value.strip()}
    if used:
        lines += ["", "Constraints:"] + [f"- {name}: {value}" for name, value in used.items()]
    return "\n".join(lines)


def keys_block(skill: str, task: TaskInput) -> str:
    if is_subjective(skill):
        header, keys = DIMENSIONS_HEADER, dimensions_for(skill)
    else:
        header, keys = ITEMS_HEADER, checklist_for(skill, task)
    # One line, so the array can be recovered by reading the line after the header.
    return header + "\n" + json.dumps(list(keys), ensure_ascii=False)


def user_text(skill: str, task: TaskInput, prompt: str) -> str:
    sections = [task_text(task)]
    # Image skills deliberately do not see the prompt: the image must stand on its
    # own, and showing the prompt invites grading what was asked instead of what was drawn.
    if not is_image_skill(skill):
        sections.append("Prompt written by the prompt writer:\n<<<\n" + prompt + "\n>>>")
    else:
        sections.append("The image rendered from the writer's prompt is attached.")
    sections.append(keys_block(skill, task))
    return "\n\n".join(sections)


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


def user_message(skill: str, task: TaskInput, prompt: str, image: Image | None, max_side: int) -> Message:
    text = user_text(skill, task, prompt)
    if not is_image_skill(skill) or image is None:
        return {"role": "user", "content": text}
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": image_data_url(image, max_side)}},
        ],
    }


def build_messages(
    skill: str, task: TaskInput, prompt: str, image: Image | None = None, image_max_side: int = 512
) -> list[Message]:
    return [system_message(skill), user_message(skill, task, prompt, image, image_max_side)]


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
