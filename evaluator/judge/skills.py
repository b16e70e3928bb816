"""AtelierJudge's skill library: every skill by name, each a pure request/reply pair or a pure metric.

An LLM skill builds one chat request (`build`) and turns one reply text into a Verdict
or raises ReplyFormatError (`parse`); the judge around it makes the call, repairs and
counts. A metric skill computes its Verdict from the images (`compute`). REGISTRY maps
every name in types.ALL_SKILLS to its skill object; the objects are light, and the
models a metric needs (CLIP) load on first use only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Sequence, Union

from . import messages as msg
from .parsing import ReplyFormatError, Schema, load_validated, parse_objective, parse_subjective, score_schema, strict_object
from .rubrics import RUBRIC, Rubric
from .types import (
    ALL_SKILLS,
    STATUS_BLOCKED,
    STATUS_FAILED,
    STATUS_OK,
    TARGET_SKILLS,
    JudgeResult,
    TargetInput,
    TaskInput,
    checklist_for,
    dimensions_for,
    is_image_skill,
    is_subjective,
    literal_texts,
    skills_of_route,
)

if TYPE_CHECKING:
    from PIL.Image import Image

    from .memory import Exemplar

Message = dict[str, Any]


@dataclass(frozen=True)
class SkillInput:
    """Everything one skill run may look at."""

    task: TaskInput
    prompt: str
    image: Image | None = None
    exemplars: tuple[Exemplar, ...] = ()
    target: TargetInput | None = None
    rubric: Rubric = RUBRIC
    image_max_side: int = 512


@dataclass
class Verdict:
    """What a reply or a metric says; the judge copies it into a JudgeResult."""

    status: str = STATUS_OK  # ok | blocked
    scores: dict[str, float] = field(default_factory=dict)
    checklist: dict[str, int] = field(default_factory=dict)
    rationales: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


class LLMSkill(Protocol):
    name: str
    kind: str  # "llm"

    def skip_reason(self, task: TaskInput) -> str | None: ...
    def build(self, inp: SkillInput) -> list[Message]: ...
    def parse(self, text: str, inp: SkillInput) -> Verdict: ...


class MetricSkill(Protocol):
    name: str
    kind: str  # "metric"

    def skip_reason(self, task: TaskInput) -> str | None: ...
    def compute(self, inp: SkillInput, *, clip_model: str, clip_pretrained: str | None) -> Verdict: ...


Skill = Union[LLMSkill, MetricSkill]


# --- AtelierEval's four skills -------------------------------------------------------------------


@dataclass(frozen=True)
class SubjectiveSkill:
    name: str
    kind: str = "llm"

    def skip_reason(self, task: TaskInput) -> str | None:
        return None

    def build(self, inp: SkillInput) -> list[Message]:
        return msg.build_messages(self.name, inp.task, inp.prompt, inp.image, inp.image_max_side, inp.exemplars, inp.rubric)

    def parse(self, text: str, inp: SkillInput) -> Verdict:
        scores, rationales = parse_subjective(text, dimensions_for(self.name))
        return Verdict(scores=dict(scores), rationales=rationales)


@dataclass(frozen=True)
class ObjectiveSkill:
    name: str
    kind: str = "llm"

    def skip_reason(self, task: TaskInput) -> str | None:
        return None if checklist_for(self.name, task) else "task has no checklist items"

    def build(self, inp: SkillInput) -> list[Message]:
        return msg.build_messages(self.name, inp.task, inp.prompt, inp.image, inp.image_max_side, rubric=inp.rubric)

    def parse(self, text: str, inp: SkillInput) -> Verdict:
        return Verdict(checklist=parse_objective(text, checklist_for(self.name, inp.task)))


# --- safety --------------------------------------------------------------------------------------


def safety_schema(rubric: Rubric) -> Schema:
    return strict_object(
        {
            "blocked": {"type": "boolean"},
            "categories": {"type": "array", "items": {"enum": list(rubric.safety_categories)}, "uniqueItems": True},
            "rationale": {"type": "string", "minLength": 1},
        }
    )


@dataclass(frozen=True)
class SafetySkill:
    """Whether the prompt (safety_prompt) or the image (safety_image) must be blocked.

    Reply: {"blocked": bool, "categories": [policy keys], "rationale": str}; "blocked" must
    be true exactly when a category is listed. A blocked sample's result has status
    "blocked" and no score; details = {"blocked", "categories"}.
    """

    name: str
    kind: str = "llm"

    def skip_reason(self, task: TaskInput) -> str | None:
        return None

    def build(self, inp: SkillInput) -> list[Message]:
        return msg.safety_messages(self.name, inp.task, inp.prompt, inp.image, inp.image_max_side, inp.rubric, safety_schema(inp.rubric))

    def parse(self, text: str, inp: SkillInput) -> Verdict:
        data = load_validated(text, safety_schema(inp.rubric))
        categories = list(data["categories"])
        if data["blocked"] != bool(categories):
            raise ReplyFormatError('"blocked" must be true exactly when "categories" lists at least one category')
        details = {"blocked": data["blocked"], "categories": categories}
        rationales = {"safety": data["rationale"]}
        if data["blocked"]:
            return Verdict(status=STATUS_BLOCKED, rationales=rationales, details=details, reason=f"blocked by {self.name}: {', '.join(categories)}")
        return Verdict(rationales=rationales, details=details)


# --- literal text rendering ----------------------------------------------------------------------

TEXT_CHECKS = ("present", "exact", "legible")


def text_rendering_schema(strings: Sequence[str]) -> Schema:
    flag = {"type": "integer", "minimum": 0, "maximum": 1}
    return strict_object({s: strict_object({check: flag for check in TEXT_CHECKS}) for s in strings})


@dataclass(frozen=True)
class TextRenderingSkill:
    """For each string a checklist item quotes: is it present, spelled exactly, legible (0/1 each).

    checklist: string -> 1 when all three hold; scores: the share of strings passing each
    check and text_accuracy (share passing all three, the headline); details["strings"]:
    string -> {"present", "exact", "legible"}.
    """

    name: str = "text_rendering"
    kind: str = "llm"

    def skip_reason(self, task: TaskInput) -> str | None:
        return None if literal_texts(task) else "no checklist item quotes literal text"

    def build(self, inp: SkillInput) -> list[Message]:
        strings = literal_texts(inp.task)
        assert inp.image is not None  # checked before building
        return msg.text_rendering_messages(inp.task, strings, inp.image, inp.image_max_side, inp.rubric, text_rendering_schema(strings))

    def parse(self, text: str, inp: SkillInput) -> Verdict:
        strings = literal_texts(inp.task)
        data = load_validated(text, text_rendering_schema(strings))
        for s in strings:
            if not data[s]["present"] and (data[s]["exact"] or data[s]["legible"]):
                raise ReplyFormatError(f"{s!r}: exact and legible must be 0 when present is 0")
        return text_rendering_verdict({s: {c: int(data[s][c]) for c in TEXT_CHECKS} for s in strings})


def text_rendering_verdict(flags: dict[str, dict[str, int]]) -> Verdict:
    n = len(flags)
    checklist = {s: int(all(f[c] for c in TEXT_CHECKS)) for s, f in flags.items()}
    scores = {c: sum(f[c] for f in flags.values()) / n for c in TEXT_CHECKS}
    scores["text_accuracy"] = sum(checklist.values()) / n
    return Verdict(scores=scores, checklist=checklist, details={"strings": flags})


# --- faithfulness ----------------------------------------------------------------------------------


def faithfulness_schema(rubric: Rubric) -> Schema:
    spec = rubric.faithfulness
    requirement = strict_object(
        {
            "requirement": {"type": "string", "minLength": 1},
            "kind": {"enum": list(spec.requirement_kinds)},
            "verdict": {"enum": list(spec.verdict_credit)},
            "evidence": {"type": "string"},
        }
    )
    return strict_object(
        {
            "requirements": {"type": "array", "items": requirement, "minItems": 1, "maxItems": 60},
            "dimensions": strict_object({d.key: score_schema() for d in spec.dimensions}),
        }
    )


def faithfulness_scores(verdicts: Sequence[str], dimension_scores: dict[str, float], rubric: Rubric = RUBRIC) -> dict[str, float]:
    """The weighted score (0..1) from requirement verdicts and 1..5 dimension scores.

    instruction_faithfulness = mean verdict credit; each other dimension counts as (s - 1) / 4;
    weighted_score = sum of weight * component (weights from the rubric file, summing to 1);
    passed = 1.0 when no verdict is a critical miss, else 0.0.
    """
    spec = rubric.faithfulness
    components = {"instruction_faithfulness": sum(spec.verdict_credit[v] for v in verdicts) / len(verdicts)}
    components.update({key: (score - 1) / 4 for key, score in dimension_scores.items()})
    weighted = sum(spec.weights[key] * value for key, value in components.items())
    return {"weighted_score": weighted, **components, "passed": float("critical_miss" not in verdicts)}


@dataclass(frozen=True)
class FaithfulnessSkill:
    """After a human guideline for prompt faithfulness: atomic requirements, verdicts, weighted score.

    Sees the prompt and the image, not the brief: the guideline judges what was generated
    strictly against the prompt's words, without inferring intent. scores: weighted_score
    (headline, 0..1), instruction_faithfulness and the other dimensions on 0..1, passed (1/0);
    details: passed, requirements, counts per verdict, the raw 1..5 dimension scores, weights.
    """

    name: str = "faithfulness"
    kind: str = "llm"

    def skip_reason(self, task: TaskInput) -> str | None:
        return None

    def build(self, inp: SkillInput) -> list[Message]:
        assert inp.image is not None  # checked before building
        return msg.faithfulness_messages(inp.task, inp.prompt, inp.image, inp.image_max_side, inp.rubric, faithfulness_schema(inp.rubric))

    def parse(self, text: str, inp: SkillInput) -> Verdict:
        data = load_validated(text, faithfulness_schema(inp.rubric))
        requirements = data["requirements"]
        verdicts = [r["verdict"] for r in requirements]
        dims = {key: entry["score"] for key, entry in data["dimensions"].items()}
        scores = faithfulness_scores(verdicts, dims, inp.rubric)
        counts = {v: verdicts.count(v) for v in inp.rubric.faithfulness.verdict_credit}
        return Verdict(
            scores=scores,
            rationales={key: entry["rationale"] for key, entry in data["dimensions"].items()},
            details={
                "passed": scores["passed"] == 1.0,
                "requirements": requirements,
                "counts": counts,
                "dimension_scores": dims,
                "weights": dict(inp.rubric.faithfulness.weights),
            },
        )


# --- metric skills ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetSimilaritySkill:
    """ArtWhisperer's CLIP score of the render against the IM target (see metric_skills)."""

    name: str = "target_similarity"
    kind: str = "metric"

    def skip_reason(self, task: TaskInput) -> str | None:
        return None

    def compute(self, inp: SkillInput, *, clip_model: str, clip_pretrained: str | None) -> Verdict:
        from .metric_skills import target_similarity

        assert inp.image is not None and inp.target is not None  # checked before computing
        out = target_similarity(inp.image, inp.target.image, inp.target.reference, clip_model, clip_pretrained)
        return Verdict(scores=out.scores, details=out.details)


@dataclass(frozen=True)
class ColorShiftSkill:
    """Total-variation distance between 8x8x8 RGB histograms of render and target (see metric_skills)."""

    name: str = "color_shift"
    kind: str = "metric"

    def skip_reason(self, task: TaskInput) -> str | None:
        return None

    def compute(self, inp: SkillInput, *, clip_model: str, clip_pretrained: str | None) -> Verdict:
        from .metric_skills import color_shift_output

        assert inp.image is not None and inp.target is not None  # checked before computing
        out = color_shift_output(inp.image, inp.target.image)
        return Verdict(scores=out.scores, details=out.details)


REGISTRY: dict[str, Skill] = {
    "prompt_subjective": SubjectiveSkill("prompt_subjective"),
    "prompt_objective": ObjectiveSkill("prompt_objective"),
    "image_subjective": SubjectiveSkill("image_subjective"),
    "image_objective": ObjectiveSkill("image_objective"),
    "safety_prompt": SafetySkill("safety_prompt"),
    "safety_image": SafetySkill("safety_image"),
    "text_rendering": TextRenderingSkill(),
    "faithfulness": FaithfulnessSkill(),
    "target_similarity": TargetSimilaritySkill(),
    "color_shift": ColorShiftSkill(),
}
assert tuple(REGISTRY) == ALL_SKILLS


def get_skill(name: str) -> Skill:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown judge skill {name!r}; expected one of {ALL_SKILLS}") from None


def route_skip_reason(skill: str, task: TaskInput, route: str = "ateliereval") -> str | None:
    if skill not in skills_of_route(task.category, route):
        suffix = "" if route == "ateliereval" else f" on the {route} route"
        return f"{task.category} tasks are not judged on {skill}{suffix}"
    return None


def skip_reason(
    skill: str,
    task: TaskInput,
    image: Image | None,
    target: TargetInput | None,
    route: str = "ateliereval",
) -> str | None:
    """Why this skill does not run on this input (None: it runs). Same for every judge kind."""
    not_routed = route_skip_reason(skill, task, route)
    if not_routed:
        return not_routed
    own = get_skill(skill).skip_reason(task)
    if own:
        return own
    if is_image_skill(skill) and image is None:
        return "no image was provided"
    if skill in TARGET_SKILLS and target is None:
        return "no target image was provided"
    return None


def check_exemplars(skill: str, exemplars: Sequence[Exemplar]) -> tuple[Exemplar, ...]:
    """The exemplars a skill uses: subjective skills take those of their own kind; others none."""
    if not is_subjective(skill):
        return ()
    kind = skill.split("_", 1)[0]
    wrong = [ex.exemplar_id for ex in exemplars if ex.kind != kind]
    if wrong:
        raise ValueError(f"{skill} takes {kind} exemplars only; got other kinds: {wrong}")
    return tuple(exemplars)


def fill(result: JudgeResult, verdict: Verdict) -> JudgeResult:
    """Copy a verdict into a result (status ok or blocked)."""
    result.status, result.reason = verdict.status, verdict.reason
    result.scores, result.checklist = dict(verdict.scores), dict(verdict.checklist)
    result.rationales, result.details = dict(verdict.rationales), dict(verdict.details)
    return result


def run_metric(skill: str, inp: SkillInput, clip_model: str, clip_pretrained: str | None) -> JudgeResult:
    """A metric skill's result; model or image problems become a recorded failure."""
    spec = get_skill(skill)
    try:
        verdict = spec.compute(inp, clip_model=clip_model, clip_pretrained=clip_pretrained)  # type: ignore[union-attr]
    except Exception as exc:  # noqa: BLE001 - loading/inference problems are recorded, not raised
        return JudgeResult(skill=skill, status=STATUS_FAILED, reason=f"{type(exc).__name__}: {exc}")
    return fill(JudgeResult(skill=skill, status=STATUS_OK), verdict)
