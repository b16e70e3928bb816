"""The demo's scripted expert raters: two fixed rules, not people, that rate the showcase board's prompts and images, so
that /judge/ can show judge–rater agreement with intervals (24 tasks; an interval needs 10) without anyone rating.

Each rater scores what an expert is shown on /rate/: the task (brief, constraints, checklists), the prompt, and the first
image rendered from it. Every score is a function of those alone, 1–5 on the judge's rubric dimensions:

- the prompt side reads words: how many of the task's content words the prompt uses (of the brief; of the brief, the
  constraints and the prompt checklist), its length against the length the rater likes, its structure (phrases between
  commas), how much it adds beyond the task (content words the task does not use) and its craft words (a fixed list of
  lighting, lens, medium and composition terms); a prompt checklist item is met when the prompt uses the rater's share of
  the item's content words;
- the image side reads pixels: contrast (grey spread), colourfulness, how much the centre stands out, and how far the
  mean brightness is from mid-grey. The demo renders with random weights, whose statistics sit in a narrow band (see
  demo/judge.py): each rater maps a band of its own onto 1–5, so real images saturate them. No image checklist
  item is answered: noise shows none of them.

The two raters weigh these differently, cut words at different lengths and are differently strict, so they agree
often but not always. Their ratings are stored with ExpertRating.scripted (ratings.services.scripted_ratings_save) and
shown on /judge/ only in their own section, "Scripted raters (demo) — rules, not people"; never pooled with people's.
Idempotent: running the demo again rates the same items with the same scores and adds nothing.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from django.db.models import QuerySet
from PIL import Image

from evaluation.models import PromptEntry, Render, Status, Submission, UnitStatus
from evaluator.judge.types import IMAGE_DIMENSIONS, PROMPT_DIMENSIONS
from ratings.models import Pool
from ratings.services import ScriptedRating, scripted_ratings_save, task_pool
from tasks.models import Task, TaskPack

SOURCE = "demo/experts.py (scripted raters, demo)"
WORD = re.compile(r"[a-z]{3,}")
COMMON = frozenset(
    "the and for are but not you all any can its one has was who how why out off own per via that this with from into over "
    "under about their there these those which while where when what your have been will would should could image picture "
    "photo show shows showing make made like just also very more most some each other than then them they were prompt".split()
)
CRAFT = frozenset(
    "lighting light lit backlit rim soft hard diffuse diffused golden hour shadow shadows contrast palette muted pastel "
    "saturated desaturated warm cool tones hue gradient lens mm macro wide telephoto bokeh depth field focus shallow "
    "aperture exposure angle eye level overhead isometric perspective composition centred centered symmetrical "
    "symmetry thirds negative space foreground background framing texture matte glossy grain film cinematic "
    "watercolour watercolor gouache ink linocut vector flat illustration render photorealistic studio editorial "
    "minimalist painterly brushwork line art poster".split()
)


@dataclass(frozen=True)
class Rater:
    """One scripted rater: how it reads words, which prompt length it likes, how it weighs each feature per dimension,
    its pixel bands, how strict it is, and the share of a checklist item's words it needs to call the item met."""

    name: str
    stem: int  # letters a word is cut to, so that 'lantern' and 'lanterns' agree
    length: tuple[int, int]  # word counts it finds neither too short nor too long
    prompt_weights: dict[str, dict[str, float]]
    image_weights: dict[str, dict[str, float]]
    contrast_band: tuple[float, float]
    colour_band: tuple[float, float]
    centre_band: tuple[float, float]
    strict: float  # taken off every quality before it becomes a score
    met_at: float


RATERS = (
    Rater(
        name="scripted-expert-a (demo)",
        stem=5,
        length=(25, 90),
        prompt_weights={
            "instructional_clarity": {"structure": 0.5, "length": 0.3, "brief": 0.2},
            "creative_elaboration": {"added": 0.6, "craft": 0.4},
            "terminology_proficiency": {"craft": 0.8, "length": 0.2},
            "intent_formalization": {"task": 0.7, "brief": 0.3},
        },
        image_weights={
            "mood_atmosphere": {"colour": 0.6, "balance": 0.4},
            "visual_composition": {"centre": 0.7, "contrast": 0.3},
            "color_lighting": {"colour": 0.5, "contrast": 0.5},
            "technical_flawlessness": {"balance": 0.5, "contrast": 0.5},
        },
        contrast_band=(0.070, 0.095),
        colour_band=(0.310, 0.350),
        centre_band=(0.0, 0.025),
        strict=0.0,
        met_at=0.4,
    ),
    Rater(
        name="scripted-expert-b (demo)",
        stem=4,
        length=(15, 60),
        prompt_weights={
            "instructional_clarity": {"brief": 0.4, "length": 0.3, "structure": 0.3},
            "creative_elaboration": {"added": 0.5, "length": 0.3, "craft": 0.2},
            "terminology_proficiency": {"craft": 0.6, "structure": 0.4},
            "intent_formalization": {"task": 0.5, "brief": 0.3, "structure": 0.2},
        },
        image_weights={
            "mood_atmosphere": {"colour": 0.4, "centre": 0.3, "balance": 0.3},
            "visual_composition": {"centre": 0.5, "balance": 0.5},
            "color_lighting": {"colour": 0.7, "contrast": 0.3},
            "technical_flawlessness": {"contrast": 0.7, "centre": 0.3},
        },
        contrast_band=(0.075, 0.090),
        colour_band=(0.315, 0.345),
        centre_band=(0.0, 0.020),
        strict=0.08,
        met_at=0.6,
    ),
)


def _words(text: str, stem: int) -> set[str]:
    return {w[:stem] for w in WORD.findall(text.lower()) if w not in COMMON}


def _band(value: float, low: float, high: float) -> float:
    return float(min(1.0, max(0.0, (value - low) / (high - low))))


def _score(quality: float, strict: float) -> int:
    return 1 + min(4, max(0, round(4 * (quality - strict))))


def _weighed(features: dict[str, float], weights: dict[str, float]) -> float:
    return sum(w * features[name] for name, w in weights.items()) / sum(weights.values())


def prompt_features(rater: Rater, task: Task, prompt: str) -> dict[str, float]:
    """What the rater reads in the prompt, each in [0, 1]."""
    said = _words(prompt, rater.stem)
    brief = _words(task.brief, rater.stem)
    whole = brief | _words(" ".join(map(str, (task.constraints or {}).values())), rater.stem)
    whole |= _words(" ".join(task.prompt_checklist), rater.stem)
    count, (short, long) = len(prompt.split()), rater.length
    length = min(1.0, count / short) if count <= long else max(0.0, 1 - (count - long) / long)
    phrases = [p for p in re.split(r"[,;.\n]", prompt) if p.strip()]
    craft = {w for w in WORD.findall(prompt.lower()) if w in CRAFT}
    return {
        "brief": len(said & brief) / len(brief) if brief else 0.0,
        "task": len(said & whole) / len(whole) if whole else 0.0,
        "length": length,
        "structure": min(1.0, len(phrases) / 8),
        "added": min(1.0, len(said - whole) / 12),
        "craft": min(1.0, len(craft) / 4),
    }


def image_features(rater: Rater, image: Image.Image) -> dict[str, float]:
    """What the rater reads in the pixels, each in [0, 1]."""
    pixels = np.asarray(image.convert("RGB"), dtype=np.float64) / 255
    grey = pixels.mean(axis=2)
    h, w = grey.shape
    middle = grey[h // 4 : h - h // 4, w // 4 : w - w // 4]
    return {
        "contrast": _band(grey.std(), *rater.contrast_band),
        "colour": _band((pixels.max(axis=2) - pixels.min(axis=2)).mean(), *rater.colour_band),
        "centre": _band(abs(middle.mean() - grey.mean()), *rater.centre_band),
        "balance": 1 - min(1.0, abs(grey.mean() - 0.5) * 2),
    }


def rate_prompt(rater: Rater, entry: PromptEntry) -> ScriptedRating:
    task, prompt = entry.task, entry.text
    features = prompt_features(rater, task, prompt)
    said = _words(prompt, rater.stem)
    checklist = {}
    for item in task.prompt_checklist:
        wanted = _words(item, rater.stem)
        checklist[item] = int(bool(wanted) and len(wanted & said) >= rater.met_at * len(wanted))
    scores, note = _scored(rater, features, rater.prompt_weights, PROMPT_DIMENSIONS)
    return ScriptedRating(rater.name, entry, None, scores, checklist, note)


def rate_image(rater: Rater, render: Render, image: Image.Image) -> ScriptedRating:
    scores, note = _scored(rater, image_features(rater, image), rater.image_weights, IMAGE_DIMENSIONS)
    return ScriptedRating(rater.name, render.entry, render, scores, {}, f"{note} (from the pixels)")


def _scored(rater: Rater, features: dict[str, float], weights: dict[str, dict[str, float]], dimensions) -> tuple[dict, str]:
    """The rater's 1-5 score per dimension from its features, and the note that records the features."""
    scores = {d: _score(_weighed(features, weights[d]), rater.strict) for d in dimensions}
    return scores, "scripted (demo) rule: " + ", ".join(f"{k} {v:.2f}" for k, v in features.items())


def _first_renders(entries: list[PromptEntry]) -> dict[int, Render]:
    """Each item's image, as the expert queue picks it: the first successful render by backend name, then image index."""
    first: dict[int, Render] = {}
    renders = Render.objects.filter(entry__in=entries, status=UnitStatus.OK).exclude(image="").select_related("entry")
    for render in renders.order_by("entry_id", "backend", "image_index"):
        first.setdefault(render.entry_id, render)
    return first


def _image(render: Render) -> Image.Image | None:
    try:
        with render.image.open("rb") as handle:
            return Image.open(io.BytesIO(handle.read())).convert("RGB")
    except (OSError, ValueError):
        return None


def rateable_entries(pack: TaskPack, submissions: QuerySet[Submission]) -> list[PromptEntry]:
    """Entries of finished submissions on `pack`, of public tasks outside the exemplar pool (those calibrate the judge)."""
    done = submissions.filter(pack=pack, status=Status.DONE)
    entries = (
        PromptEntry.objects.filter(submission__in=done).select_related("task").order_by("submission_id", "task__task_id", "sample_index")
    )
    pools = {t.pk: task_pool(t.task_id, t.category) for t in pack.tasks.all()}
    return [e for e in entries if e.task.is_public and pools.get(e.task_id) != Pool.EXEMPLAR]


def demo_experts(pack: TaskPack, submissions: QuerySet[Submission], say: Callable[[str], None]) -> int:
    """Both raters rate every rateable entry's prompt and first image; returns how many ratings are new."""
    ratings: list[ScriptedRating] = []
    entries, images = rateable_entries(pack, submissions), 0
    renders = _first_renders(entries)
    for entry in entries:
        ratings += [rate_prompt(rater, entry) for rater in RATERS]
        render = renders.get(entry.pk)
        image = _image(render) if render is not None else None
        if image is not None:
            ratings += [rate_image(rater, render, image) for rater in RATERS]
            images += 1
    new = scripted_ratings_save(ratings=ratings, source=SOURCE) if ratings else 0
    tasks = len({e.task_id for e in entries})
    say(
        f"Scripted raters (demo): {len(RATERS)} rules, not people, rated {len(entries)} prompt(s) and {images} image(s) of {tasks} "
        f"{pack.name} task(s) ({new} new rating(s)); /judge/ shows them in their own section, never pooled with people's."
    )
    return new
