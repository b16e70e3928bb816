"""Shared vocabulary of AtelierJudge: dimensions, skills, routing, inputs and results.

Kept free of any model or HTTP dependency so that the web application can import
it cheaply (and without Django ever being involved in this package).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # Pillow is only needed by the judges that look at images.
    from PIL.Image import Image

PROMPT_DIMENSIONS: tuple[str, ...] = (
    "instructional_clarity",
    "creative_elaboration",
    "terminology_proficiency",
    "intent_formalization",
)
IMAGE_DIMENSIONS: tuple[str, ...] = (
    "mood_atmosphere",
    "visual_composition",
    "color_lighting",
    "technical_flawlessness",
)
SKILLS: tuple[str, ...] = (
    "prompt_subjective",
    "prompt_objective",
    "image_subjective",
    "image_objective",
)
CATEGORIES: tuple[str, ...] = ("OE", "CO", "IM")

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_SKIPPED = "skipped"

# Imitation tasks are about reproducing a given target, so the judge does not
# grade the image's own aesthetics there: fidelity is covered by the checklist.
_ROUTES: dict[str, tuple[str, ...]] = {
    "OE": SKILLS,
    "CO": SKILLS,
    "IM": ("prompt_subjective", "prompt_objective", "image_objective"),
}


def route_for_category(category: str) -> tuple[str, ...]:
    """The skills AtelierJudge runs for a task of this category, in SKILLS order."""
    try:
        return _ROUTES[category]
    except KeyError:
        raise ValueError(f"unknown task category {category!r}; expected one of {CATEGORIES}") from None


def is_subjective(skill: str) -> bool:
    return skill.endswith("_subjective")


def is_image_skill(skill: str) -> bool:
    return skill.startswith("image_")


def dimensions_for(skill: str) -> tuple[str, ...]:
    """The rubric dimensions a subjective skill scores."""
    if skill == "prompt_subjective":
        return PROMPT_DIMENSIONS
    if skill == "image_subjective":
        return IMAGE_DIMENSIONS
    raise ValueError(f"{skill!r} is not a subjective skill")


def checklist_for(skill: str, task: TaskInput) -> tuple[str, ...]:
    """The checklist an objective skill judges, duplicates dropped.

    A JSON reply cannot hold the same key twice, so a repeated item text could
    never be answered twice; judging it once keeps the reply format satisfiable.
    """
    if skill == "prompt_objective":
        items = task.prompt_checklist
    elif skill == "image_objective":
        items = task.image_checklist
    else:
        raise ValueError(f"{skill!r} is not an objective skill")
    return tuple(dict.fromkeys(items))


def check_skill(skill: str) -> None:
    if skill not in SKILLS:
        raise ValueError(f"unknown judge skill {skill!r}; expected one of {SKILLS}")


@dataclass(frozen=True)
class TaskInput:
    """What the judge needs to know about one benchmark task."""

    task_id: str
    category: str
    title: str
    brief: str
    constraints: dict[str, str]  # CO: pairing/layout/quantity/text/constraint ("" unused); {} otherwise
    prompt_checklist: tuple[str, ...]
    image_checklist: tuple[str, ...]


@dataclass
class JudgeResult:
    """One skill's verdict on one prompt (and its image)."""

    skill: str
    status: str  # "ok" | "failed" | "skipped"
    scores: dict[str, int] = field(default_factory=dict)  # subjective: dimension -> 1..5
    checklist: dict[str, int] = field(default_factory=dict)  # objective: item text -> 0/1
    rationales: dict[str, str] = field(default_factory=dict)
    raw: str = ""  # every raw reply, kept on failure too
    reason: str = ""  # why failed/skipped; "" when ok
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def value(self) -> float | None:
        """Mean score (1..5) for subjective skills, mean of items (0..1) for objective ones."""
        if self.status != STATUS_OK:
            return None
        values = self.scores if is_subjective(self.skill) else self.checklist
        if not values:
            return None
        return sum(values.values()) / len(values)


class Judge(Protocol):
    judge_id: str  # stable id stored with every judgement
    label: str  # human description shown on every page
    version: str  # rubric/template version

    def run(self, skill: str, task: TaskInput, prompt: str, image: Image | None = None) -> JudgeResult: ...


def skipped(skill: str, reason: str) -> JudgeResult:
    return JudgeResult(skill=skill, status=STATUS_SKIPPED, reason=reason)
