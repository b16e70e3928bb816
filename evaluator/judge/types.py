"""Shared vocabulary of AtelierJudge: sides, kinds, statuses, dimensions, inputs (tasks, targets, exemplars) and results.

Kept free of any model or HTTP dependency so that the web application (and settings)
can import it cheaply, and without Django ever being involved in this package. What
each skill *is* (side, kind, scale, how an ensemble combines it) lives in the registry
in skills.py; nothing else looks at a skill's name to decide what it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ..categories import CATEGORIES

if TYPE_CHECKING:  # Pillow is only needed by the judges that look at images.
    from PIL.Image import Image


class Side(StrEnum):
    """What a skill reads: the prompt text, or one rendered image (and maybe the target)."""

    PROMPT = "prompt"
    IMAGE = "image"


SIDES: tuple[str, ...] = tuple(Side)


class Kind(StrEnum):
    """What a skill answers: 1–5 rubric dimensions, 0/1 checklist items, a computed number, or block/pass."""

    RUBRIC = "rubric"
    CHECKLIST = "checklist"
    METRIC = "metric"
    GATE = "gate"


class Status(StrEnum):
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"
    BLOCKED = "blocked"  # a gate (safety) stopped the sample: never a score


PROMPT_DIMENSIONS: tuple[str, ...] = ("instructional_clarity", "creative_elaboration", "terminology_proficiency", "intent_formalization")
IMAGE_DIMENSIONS: tuple[str, ...] = ("mood_atmosphere", "visual_composition", "color_lighting", "technical_flawlessness")
DIMENSIONS: dict[Side, tuple[str, ...]] = {Side.PROMPT: PROMPT_DIMENSIONS, Side.IMAGE: IMAGE_DIMENSIONS}

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

    def checklist(self, side: Side) -> tuple[str, ...]:
        """The checklist of one side, duplicates dropped: a JSON reply cannot answer a key twice."""
        items = self.prompt_checklist if side == Side.PROMPT else self.image_checklist
        return tuple(dict.fromkeys(items))


@dataclass(frozen=True)
class TargetInput:
    """An IM task's target image and, optionally, a render of its hidden seed prompt.

    `reference` must come from the same backend as the render being judged: it sets
    ArtWhisperer's per-target scale c_k = 100 / raw(reference vs target).
    """

    image: Image
    reference: Image | None = None


@dataclass
class Exemplar:
    """One human-scored item: a prompt (side "prompt") or a rendered image (side "image")."""

    exemplar_id: str
    task_id: str
    category: str
    side: str  # a Side value
    text: str = ""  # the prompt (side "prompt")
    image: Image | None = None  # the image (side "image")
    scores: dict[str, int] = field(default_factory=dict)  # dimension key -> 1..5
    notes: dict[str, str] = field(default_factory=dict)  # dimension key -> the expert's note
    image_path: str = ""  # where the image came from (official files), for provenance

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ValueError(f"exemplar {self.exemplar_id!r}: side must be one of {SIDES}, got {self.side!r}")
        if self.category not in CATEGORIES:
            raise ValueError(f"exemplar {self.exemplar_id!r}: unknown category {self.category!r}")
        allowed = DIMENSIONS[Side(self.side)]
        unknown = [d for d in list(self.scores) + list(self.notes) if d not in allowed]
        if unknown:
            raise ValueError(f"exemplar {self.exemplar_id!r}: {sorted(set(unknown))} are not {self.side} dimensions {allowed}")
        bad = {d: s for d, s in self.scores.items() if isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= 5}
        if bad:
            raise ValueError(f"exemplar {self.exemplar_id!r}: scores must be integers 1..5, got {bad}")


@dataclass
class JudgeResult:
    """One skill's verdict on one prompt (and its image).

    `value` is the skill's headline number on `scale` (a name in scales.SCALES; "" for a
    gate, whose verdict is the status): None unless the status is ok.
    """

    skill: str
    status: str  # a Status value
    # rubric: dimension -> 1..5 (an ensemble's mean may be fractional); metric and
    # composite skills: named numbers, the headline among them
    scores: dict[str, float] = field(default_factory=dict)
    checklist: dict[str, int] = field(default_factory=dict)  # checklist: item text -> 0/1
    rationales: dict[str, str] = field(default_factory=dict)
    raw: str = ""  # every raw reply, kept on failure too
    reason: str = ""  # why failed/skipped/blocked, in our own words only (evaluator.failures); "" when ok
    remote_text: str = ""  # what the remote or the exception said about a failure: staff only, redacted before it is stored
    calls: int = 0
    throttled: int = 0  # of those calls, how many the endpoint answered 429
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0  # of the prompt tokens, how many the provider's prompt cache served (billed less)
    completion_tokens: int = 0
    details: dict[str, Any] = field(default_factory=dict)  # per-skill extras (see each skill)
    value: float | None = None
    scale: str = ""


def skipped(skill: str, reason: str) -> JudgeResult:
    return JudgeResult(skill=skill, status=Status.SKIPPED, reason=reason)


def blocked(skill: str, reason: str, **kwargs: Any) -> JudgeResult:
    return JudgeResult(skill=skill, status=Status.BLOCKED, reason=reason, **kwargs)


def failed(skill: str, reason: str, **kwargs: Any) -> JudgeResult:
    return JudgeResult(skill=skill, status=Status.FAILED, reason=reason, **kwargs)
