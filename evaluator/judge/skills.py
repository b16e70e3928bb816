"""AtelierJudge's skill registry: every skill by name, and what each one is.

Each skill declares its side (reads the prompt or one image), its kind (rubric, checklist,
metric, gate), the scale of its value, how an ensemble combines its members' answers
(a strategy name in ensemble.STRATEGIES), whether it enters the leaderboard composite,
and its rank for AtelierEval's top-1 of N. Code elsewhere asks the registry
(`get_skill(name).kind`, `skills_where(...)`) instead of reading a skill's name.

A model skill builds one chat request (`build`) and turns one reply text into a Verdict
or raises ReplyFormatError (`parse`); the judge around it makes the call, repairs and
counts. A metric skill computes its Verdict from the images (`compute`). The objects are
light; the models a metric needs (CLIP) load on first use only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import TYPE_CHECKING, Any

from evaluator.failures import exception_reason, remote_text

from . import messages as msg
from .parsing import ReplyFormatError, Schema, load_validated, parse_objective, parse_subjective, score_schema, strict_object
from .rubrics import RUBRIC, Rubric
from .scales import DISTANCE_0_1, LIKERT_1_5, RATE_0_1, SCORE_0_100, Scale
from .types import DIMENSIONS, Exemplar, JudgeResult, Kind, Side, Status, TargetInput, TaskInput, failed, literal_texts

if TYPE_CHECKING:
    from PIL.Image import Image

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
    image_max_side: int = field(kw_only=True)  # the judge's JudgeConfig.image_max_side


@dataclass
class Verdict:
    """What a reply or a metric says; the judge copies it into a JudgeResult."""

    status: str = Status.OK  # ok | blocked
    scores: dict[str, float] = field(default_factory=dict)
    checklist: dict[str, int] = field(default_factory=dict)
    rationales: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


class Skill:
    """The declarations every skill makes; subclasses add build/parse (model skills) or compute (metrics)."""

    name: str
    side: Side
    kind: Kind
    scale: Scale | None  # None: a gate, whose verdict is its status
    combine: str  # ensemble strategy, by name (ensemble.STRATEGIES)
    composite: bool = False  # part of the leaderboard's 0–100 composite score
    top1_rank: int | None = None  # lower ranks first when picking the best image of N (top-1)
    needs_target: bool = False  # an IM target image must be given
    uses_memory: bool = False  # calibration exemplars of its side are put before the item
    reads_clip_images: bool = False  # its answer reads CLIP image embeddings of the image (and the target), for every judge
    feedback: bool = False  # scores the image a prompter is shown in a feedback round or a study attempt

    def applies(self, task: TaskInput) -> bool:
        """Whether a route plans this skill for the task at all (text rendering needs quoted text)."""
        return True

    def skip_reason(self, task: TaskInput) -> str | None:
        return None

    def headline(self, verdict: Verdict) -> float | None:
        """The value on `scale` of an ok verdict."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<skill {self.name}: {self.side} {self.kind}>"


# --- AtelierEval's four skills -------------------------------------------------------------------


class SubjectiveSkill(Skill):
    """Four anchored 1–5 rubric dimensions of one side (rubric file), with calibration exemplars."""

    kind, scale, combine, composite, uses_memory = Kind.RUBRIC, LIKERT_1_5, "mean_scores", True, True

    def __init__(self, name: str, side: Side) -> None:
        self.name, self.side = name, side
        self.top1_rank = 0 if side == Side.IMAGE else None

    def dimensions(self) -> tuple[str, ...]:
        return DIMENSIONS[self.side]

    def build(self, inp: SkillInput) -> list[Message]:
        return msg.rubric_messages(self.side, inp.task, inp.prompt, inp.image, inp.image_max_side, inp.exemplars, inp.rubric)

    def parse(self, text: str, inp: SkillInput) -> Verdict:
        scores, rationales = parse_subjective(text, self.dimensions())
        return Verdict(scores=dict(scores), rationales=rationales)

    def headline(self, verdict: Verdict) -> float | None:
        return fmean(verdict.scores.values()) if verdict.scores else None


class ObjectiveSkill(Skill):
    """The task's checklist of one side: each item met (1) or not (0)."""

    kind, scale, combine, composite = Kind.CHECKLIST, RATE_0_1, "majority_checklist", True

    def __init__(self, name: str, side: Side) -> None:
        self.name, self.side = name, side
        self.top1_rank = 2 if side == Side.IMAGE else None
        self.feedback = side == Side.IMAGE  # without a target, a prompter's image is scored by the checks it meets

    def items(self, task: TaskInput) -> tuple[str, ...]:
        return task.checklist(self.side)

    def skip_reason(self, task: TaskInput) -> str | None:
        return None if self.items(task) else "task has no checklist items"

    def build(self, inp: SkillInput) -> list[Message]:
        return msg.checklist_messages(self.side, inp.task, inp.prompt, inp.image, inp.image_max_side, inp.rubric)

    def parse(self, text: str, inp: SkillInput) -> Verdict:
        return Verdict(checklist=parse_objective(text, self.items(inp.task)))

    def headline(self, verdict: Verdict) -> float | None:
        return fmean(verdict.checklist.values()) if verdict.checklist else None


# --- safety --------------------------------------------------------------------------------------


def safety_schema(rubric: Rubric) -> Schema:
    return strict_object(
        {
            "blocked": {"type": "boolean"},
            "categories": {"type": "array", "items": {"enum": list(rubric.safety_categories)}, "uniqueItems": True},
            "rationale": {"type": "string", "pattern": r"\S"},
        }
    )


class SafetySkill(Skill):
    """A gate: whether the prompt (prompt side) or the image (image side) must be blocked.

    Reply: {"blocked": bool, "categories": [policy keys], "rationale": str}; "blocked" must
    be true exactly when a category is listed. A blocked sample's result has status
    "blocked" and no value; details = {"blocked", "categories"}. What a block stops is
    decided in gate.py: a blocked prompt stops the whole sample, a blocked image that image.
    """

    kind, scale, combine = Kind.GATE, None, "any_blocks"

    def __init__(self, name: str, side: Side) -> None:
        self.name, self.side = name, side

    def build(self, inp: SkillInput) -> list[Message]:
        return msg.safety_messages(self.side, inp.task, inp.prompt, inp.image, inp.image_max_side, inp.rubric, safety_schema(inp.rubric))

    def parse(self, text: str, inp: SkillInput) -> Verdict:
        data = load_validated(text, safety_schema(inp.rubric))
        categories = list(data["categories"])
        if data["blocked"] != bool(categories):
            raise ReplyFormatError('"blocked" must be true exactly when "categories" lists at least one category')
        details = {"blocked": data["blocked"], "categories": categories}
        rationales = {"safety": data["rationale"]}
        if data["blocked"]:
            return Verdict(
                status=Status.BLOCKED, rationales=rationales, details=details, reason=f"blocked by {self.name}: {', '.join(categories)}"
            )
        return Verdict(rationales=rationales, details=details)

    def headline(self, verdict: Verdict) -> float | None:
        return None


# --- literal text rendering ----------------------------------------------------------------------

TEXT_CHECKS = ("present", "exact", "legible")


def text_rendering_schema(strings: Sequence[str]) -> Schema:
    flag = {"type": "integer", "minimum": 0, "maximum": 1}
    return strict_object({s: strict_object(dict.fromkeys(TEXT_CHECKS, flag)) for s in strings})


class TextRenderingSkill(Skill):
    """For each string a checklist item quotes: is it present, spelled exactly, legible (0/1 each).

    checklist: string -> 1 when all three hold; scores: the share of strings passing each
    check and text_accuracy (share passing all three, the headline); details["strings"]:
    string -> {"present", "exact", "legible"}.
    """

    name, side, kind, scale, combine = "text_rendering", Side.IMAGE, Kind.CHECKLIST, RATE_0_1, "majority_text_flags"

    def applies(self, task: TaskInput) -> bool:
        return bool(literal_texts(task))

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

    def headline(self, verdict: Verdict) -> float | None:
        return verdict.scores.get("text_accuracy")


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
            "requirement": {"type": "string", "pattern": r"\S"},
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


class FaithfulnessSkill(Skill):
    """After a human guideline for prompt faithfulness: atomic requirements, verdicts, weighted score.

    Sees the prompt and the image, not the brief: the guideline judges what was generated
    strictly against the prompt's words, without inferring intent. scores: weighted_score
    (headline, 0..1), instruction_faithfulness and the other dimensions on 0..1, passed (1/0);
    details: passed, requirements, counts per verdict, the raw 1..5 dimension scores, weights.
    """

    name, side, kind, scale, combine = "faithfulness", Side.IMAGE, Kind.RUBRIC, RATE_0_1, "mean_faithfulness"

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
        details = {
            "passed": scores["passed"] == 1.0,
            "requirements": requirements,
            "counts": counts,
            "dimension_scores": dims,
            "weights": dict(inp.rubric.faithfulness.weights),
        }
        return Verdict(scores=scores, rationales={key: entry["rationale"] for key, entry in data["dimensions"].items()}, details=details)

    def headline(self, verdict: Verdict) -> float | None:
        return verdict.scores.get("weighted_score")


# --- metric skills ---------------------------------------------------------------------------------


class TargetSimilaritySkill(Skill):
    """ArtWhisperer's CLIP score of the render against the IM target (see metric_skills)."""

    name, side, kind, scale, combine = "target_similarity", Side.IMAGE, Kind.METRIC, SCORE_0_100, "first_member"
    composite, top1_rank, needs_target, reads_clip_images, feedback = True, 1, True, True, True

    def compute(self, inp: SkillInput, *, clip_model: str, clip_pretrained: str | None) -> Verdict:
        from .metric_skills import target_similarity

        assert inp.image is not None and inp.target is not None  # checked before computing
        out = target_similarity(inp.image, inp.target.image, inp.target.reference, clip_model, clip_pretrained)
        return Verdict(scores=out.scores, details=out.details)

    def headline(self, verdict: Verdict) -> float | None:
        return verdict.scores.get("clip_score")


class ColorShiftSkill(Skill):
    """Total-variation distance between 8x8x8 RGB histograms of render and target (see metric_skills)."""

    name, side, kind, scale, combine, needs_target = "color_shift", Side.IMAGE, Kind.METRIC, DISTANCE_0_1, "first_member", True

    def compute(self, inp: SkillInput, *, clip_model: str, clip_pretrained: str | None) -> Verdict:
        from .metric_skills import color_shift_output

        assert inp.image is not None and inp.target is not None  # checked before computing
        out = color_shift_output(inp.image, inp.target.image)
        return Verdict(scores=out.scores, details=out.details)

    def headline(self, verdict: Verdict) -> float | None:
        return verdict.scores.get("color_shift")


REGISTRY: dict[str, Skill] = {
    skill.name: skill
    for skill in (
        SubjectiveSkill("prompt_subjective", Side.PROMPT),
        ObjectiveSkill("prompt_objective", Side.PROMPT),
        SubjectiveSkill("image_subjective", Side.IMAGE),
        ObjectiveSkill("image_objective", Side.IMAGE),
        SafetySkill("safety_prompt", Side.PROMPT),
        SafetySkill("safety_image", Side.IMAGE),
        TextRenderingSkill(),
        FaithfulnessSkill(),
        TargetSimilaritySkill(),
        ColorShiftSkill(),
    )
}
ALL_SKILLS: tuple[str, ...] = tuple(REGISTRY)


def get_skill(name: str) -> Skill:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown judge skill {name!r}; expected one of {ALL_SKILLS}") from None


def skills_where(**declared: Any) -> tuple[str, ...]:
    """Names of the skills whose declarations match, in registry order: skills_where(side=Side.IMAGE, composite=True)."""
    return tuple(name for name, skill in REGISTRY.items() if all(getattr(skill, k) == v for k, v in declared.items()))


def memory_skill(side: Side) -> str:
    """The skill whose requests carry calibration exemplars of this side."""
    (name,) = skills_where(side=side, uses_memory=True)
    return name


def feedback_skill(*, target: bool) -> str:
    """The skill that scores a prompter's image in a feedback round or a study attempt: with a target (IM) the one
    that compares the image with it, without one (OE, CO) the image checklist."""
    (name,) = skills_where(feedback=True, needs_target=target)
    return name


def input_skip_reason(skill: str, task: TaskInput, image: Image | None, target: TargetInput | None) -> str | None:
    """Why this skill cannot run on this input (None: it can). Same for every judge kind."""
    spec = get_skill(skill)
    own = spec.skip_reason(task)
    if own:
        return own
    if spec.side == Side.IMAGE and image is None:
        return "no image was provided"
    if spec.needs_target and target is None:
        return "no target image was provided"
    return None


def check_exemplars(skill: str, exemplars: Sequence[Exemplar]) -> tuple[Exemplar, ...]:
    """The exemplars a skill uses: skills with memory take exemplars of their own side; others none."""
    spec = get_skill(skill)
    if not spec.uses_memory:
        return ()
    wrong = [ex.exemplar_id for ex in exemplars if ex.side != spec.side]
    if wrong:
        raise ValueError(f"{skill} takes {spec.side} exemplars only; got other sides: {wrong}")
    return tuple(exemplars)


def fill(result: JudgeResult, verdict: Verdict) -> JudgeResult:
    """Copy a verdict into a result (status ok or blocked), with the skill's headline value and scale."""
    spec = get_skill(result.skill)
    result.status, result.reason = verdict.status, verdict.reason
    result.scores, result.checklist = dict(verdict.scores), dict(verdict.checklist)
    result.rationales, result.details = dict(verdict.rationales), dict(verdict.details)
    result.value = spec.headline(verdict) if verdict.status == Status.OK else None
    result.scale = spec.scale.name if spec.scale else ""
    return result


def run_metric(skill: str, inp: SkillInput, clip_model: str, clip_pretrained: str | None) -> JudgeResult:
    """A metric skill's result; model or image problems become a recorded failure."""
    spec = get_skill(skill)
    try:
        verdict = spec.compute(inp, clip_model=clip_model, clip_pretrained=clip_pretrained)  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - loading/inference problems are recorded on the result, not raised
        return failed(skill, exception_reason(exc), remote_text=remote_text(exc))
    return fill(JudgeResult(skill=skill, status=Status.OK), verdict)
