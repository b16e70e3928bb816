"""Shared vocabulary of AtelierJudge: dimensions, skills, routes, inputs and results.

Kept free of any model or HTTP dependency so that the web application can import
it cheaply (and without Django ever being involved in this package).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Sequence

if TYPE_CHECKING:  # Pillow is only needed by the judges that look at images.
    from PIL.Image import Image

    from .memory import Exemplar

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
# The four skills of AtelierEval's own judge (its route for OE and CO tasks, in this order).
SKILLS: tuple[str, ...] = (
    "prompt_subjective",
    "prompt_objective",
    "image_subjective",
    "image_objective",
)
LLM_SKILLS: tuple[str, ...] = SKILLS + (
    "safety_prompt",
    "safety_image",
    "text_rendering",
    "faithfulness",
)
METRIC_SKILLS: tuple[str, ...] = ("target_similarity", "color_shift")
# Every skill any judge knows by name (the registry in skills.py holds one object per name).
ALL_SKILLS: tuple[str, ...] = LLM_SKILLS + METRIC_SKILLS
CATEGORIES: tuple[str, ...] = ("OE", "CO", "IM")
ROUTES: tuple[str, ...] = ("ateliereval", "extended")

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_SKIPPED = "skipped"
STATUS_BLOCKED = "blocked"  # a safety skill (or the gate after it) stopped the sample: never a score
STATUSES: tuple[str, ...] = (STATUS_OK, STATUS_FAILED, STATUS_SKIPPED, STATUS_BLOCKED)

# Skills that look at a rendered image (and so need one); the others read the prompt text only.
IMAGE_INPUT_SKILLS: frozenset[str] = frozenset(
    {"image_subjective", "image_objective", "safety_image", "text_rendering", "faithfulness", "target_similarity", "color_shift"}
)
# Skills that need a target image (IM tasks) at run time.
TARGET_SKILLS: frozenset[str] = frozenset({"target_similarity", "color_shift"})
# The headline number (JudgeResult.value) of skills whose result is not a plain mean.
HEADLINE: dict[str, str] = {
    "text_rendering": "text_accuracy",
    "faithfulness": "weighted_score",
    "target_similarity": "clip_score",
    "color_shift": "color_shift",
}

# AtelierEval: imitation tasks are about reproducing a given target, so the image's own
# aesthetics are not graded there; fidelity is the checklist plus the CLIP score to the target.
_ATELIEREVAL: dict[str, tuple[str, ...]] = {
    "OE": SKILLS,
    "CO": SKILLS,
    "IM": ("prompt_subjective", "prompt_objective", "image_objective", "target_similarity"),
}

# Literal text asked for by a checklist item: "double", “curly double”, ‘curly single’ or
# 'straight single' quotes. A straight single quote only opens after a non-word character
# and only closes before one, so apostrophes ("the fox's tail", "foxes' den") are not quotes.
_QUOTED = re.compile(
    r'"(?P<d>[^"\n]+)"'
    r"|\u201c(?P<c>[^\u201d\n]+)\u201d"
    r"|\u2018(?P<s>[^\u2019\n]+)\u2019"
    r"|(?<![\w'])'(?P<a>[^'\n]+)'(?![\w'])"
)


def quoted_strings(text: str) -> tuple[str, ...]:
    """The quoted strings in one text, in order, stripped, without empties or duplicates."""
    found = (next(g for g in m.groups() if g is not None).strip() for m in _QUOTED.finditer(text))
    return tuple(dict.fromkeys(s for s in found if s))


def literal_texts(task: TaskInput) -> tuple[str, ...]:
    """The literal strings a task's checklists quote (image checklist first), duplicates dropped."""
    strings: list[str] = []
    for item in task.image_checklist + task.prompt_checklist:
        strings += quoted_strings(item)
    return tuple(dict.fromkeys(strings))


def skills_of_route(category: str, route: str = "ateliereval") -> tuple[str, ...]:
    """Every skill a route may run for a category (text_rendering included even if the task quotes no text)."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown task category {category!r}; expected one of {CATEGORIES}")
    if route not in ROUTES:
        raise ValueError(f"unknown route {route!r}; expected one of {ROUTES}")
    base = _ATELIEREVAL[category]
    if route == "ateliereval":
        return base
    extra = ("text_rendering", "faithfulness") + (("color_shift",) if category == "IM" else ())
    return ("safety_prompt", "safety_image") + base + extra


def route_for_task(task: TaskInput, route: str = "ateliereval") -> tuple[str, ...]:
    """The skills to run for this task, in order (safety first on the extended route).

    "ateliereval": OE/CO run the four subjective/objective skills; IM skips
    image_subjective and adds target_similarity (skipped at run time without a target).
    "extended": adds safety_prompt and safety_image (first), text_rendering (only when a
    checklist item quotes literal text), faithfulness, and color_shift for IM.
    """
    skills = skills_of_route(task.category, route)
    if not literal_texts(task):
        skills = tuple(s for s in skills if s != "text_rendering")
    return skills


def route_for_category(category: str) -> tuple[str, ...]:
    """The "ateliereval" route for a category (it does not depend on the task's content)."""
    return skills_of_route(category, "ateliereval")


def is_subjective(skill: str) -> bool:
    return skill.endswith("_subjective")


def is_objective(skill: str) -> bool:
    return skill.endswith("_objective")


def is_image_skill(skill: str) -> bool:
    """Whether the skill needs the rendered image."""
    return skill in IMAGE_INPUT_SKILLS or skill.startswith("image_")


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
    if skill not in ALL_SKILLS:
        raise ValueError(f"unknown judge skill {skill!r}; expected one of {ALL_SKILLS}")


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


@dataclass(frozen=True)
class TargetInput:
    """An IM task's target image and, optionally, a render of its hidden seed prompt.

    `reference` must come from the same backend as the render being judged: it sets
    ArtWhisperer's per-target scale c_k = 100 / raw(reference vs target).
    """

    image: Image
    reference: Image | None = None


@dataclass
class JudgeResult:
    """One skill's verdict on one prompt (and its image)."""

    skill: str
    status: str  # "ok" | "failed" | "skipped" | "blocked"
    # subjective: dimension -> 1..5 (an ensemble's mean may be fractional); metric and
    # composite skills: named numbers, the headline under HEADLINE[skill]
    scores: dict[str, float] = field(default_factory=dict)
    checklist: dict[str, int] = field(default_factory=dict)  # objective: item text -> 0/1
    rationales: dict[str, str] = field(default_factory=dict)
    raw: str = ""  # every raw reply, kept on failure too
    reason: str = ""  # why failed/skipped/blocked; "" when ok
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    details: dict[str, Any] = field(default_factory=dict)  # per-skill extras (see each skill)

    @property
    def value(self) -> float | None:
        """The headline number of an ok result, else None.

        subjective: mean score (1..5); objective: share of items met (0..1);
        text_rendering: share of strings present, exact and legible (0..1);
        faithfulness: weighted score (0..1); target_similarity: CLIP score (0..100);
        color_shift: histogram distance (0..1, lower is closer); safety: None.
        """
        if self.status != STATUS_OK:
            return None
        if self.skill in HEADLINE:
            headline = self.scores.get(HEADLINE[self.skill])
            return None if headline is None else float(headline)
        if self.skill.startswith("safety_"):
            return None
        values = self.scores if is_subjective(self.skill) else self.checklist
        if not values:
            return None
        return sum(values.values()) / len(values)


class Judge(Protocol):
    judge_id: str  # stable id stored with every judgement
    label: str  # human description shown on every page
    version: str  # rubric/template version

    def run(
        self,
        skill: str,
        task: TaskInput,
        prompt: str,
        image: Image | None = None,
        *,
        exemplars: Sequence[Exemplar] = (),
        target: TargetInput | None = None,
    ) -> JudgeResult: ...


def skipped(skill: str, reason: str) -> JudgeResult:
    return JudgeResult(skill=skill, status=STATUS_SKIPPED, reason=reason)


def blocked(skill: str, reason: str, **kwargs: Any) -> JudgeResult:
    return JudgeResult(skill=skill, status=STATUS_BLOCKED, reason=reason, **kwargs)
