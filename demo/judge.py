"""A scripted OpenAI-compatible judge for the demo: no model, fixed rules, answers that are functions of the request.

The demo's boards are judged through the production route (evaluator.judge.openai_judge.OpenAIJudge: its rubrics,
memory exemplars, checklists, repairs and budget) against this server, so a newcomer sees every figure a deployer's
VLM judge gives, the eight subjective dimensions included. Nothing here is random: the same request gets the same
answer. The rules read what a judge is sent and nothing else:

- the prompt side: how many of the brief's content words the prompt uses (coverage), how long it is, how varied its
  words are; a checklist item is met when at least half of its content words are in the prompt;
- the image side (the image is all an image request carries besides the brief): half the image's contrast,
  colourfulness and how much its centre stands out, half a number fixed by its exact pixels (a hash: the demo's
  random-weight renders carry nothing a rule could grade, and a feedback round's new image must be able to score
  differently); a checklist item is met when that clears a threshold drawn from the item's text;
- safety: never blocked; literal text and faithfulness: from the same image features, per string and per phrase.

Every rationale says it is the scripted judge's rule, and pages name each checklist row it answered by the rule it
applies ("scripted check (demo): …", leaderboard/comparisons.py DEMO_CHECKS), never as if it had looked for the item.
Figures made with it are labelled "scripted judge (demo)" (evaluator.judge.spec.DEMO_JUDGE_MODEL) on every page and
download: they say nothing about any real judge.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import time
from typing import Any

from evaluator.judge.messages import (
    CALIBRATION_INTRO,
    DIMENSIONS_HEADER,
    FAITHFULNESS_HEADER,
    ITEM_MARK,
    ITEMS_HEADER,
    SAFETY_HEADER,
    TEXT_HEADER,
)
from evaluator.judge.rubrics import RUBRIC

PROMPT_BLOCK = re.compile(r"Prompt written by the prompt writer:\n<<<\n(.*?)\n>>>", re.S)
WORD = re.compile(r"[a-z]{3,}")
COMMON = frozenset(
    "the and for are but not you all any can its one has was who how why out off own per via "
    "that this with from into over under about their there these those which while where when what your have been "
    "will would should could image picture photo show shows showing make made like just also very more most some "
    "each other than then them they were task brief client prompt writer".split()
)


def _words(text: str) -> set[str]:
    """Content words, cut to five letters so that 'lantern' and 'lanterns' agree."""
    return {w[:5] for w in WORD.findall(text.lower()) if w not in COMMON}


def _judged_text(body: dict[str, Any]) -> tuple[str, list[str]]:
    """The text of the request without its calibration exemplars (from their introduction to the item mark) and the
    judged item's image data URL (the last image: exemplars' images come before it)."""
    texts, images = [], []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            if part.get("type") == "text":
                texts.append(part.get("text", ""))
            elif part.get("type") == "image_url":
                images.append(part["image_url"]["url"])
    text = "\n\n".join(texts)
    before, intro, rest = text.partition(CALIBRATION_INTRO)
    return (before + rest.rsplit(ITEM_MARK, 1)[-1]) if intro else text, images[-1:]


def _keys_after(header: str, text: str) -> list[str] | None:
    lines = text.splitlines()
    for line, following in zip(lines, lines[1:]):
        if line.strip() == header:
            try:
                return [str(k) for k in json.loads(following)]
            except ValueError:
                return None
    return None


def _fraction(text: str, scale: str) -> float:
    return int(hashlib.sha256(f"{scale}\n{text}".encode()).hexdigest()[:8], 16) / 16**8


class PromptFeatures:
    """What the prompt-side rules read: the brief's content words the prompt uses, its length and its variety."""

    def __init__(self, text: str) -> None:
        found = PROMPT_BLOCK.findall(text)
        self.prompt = found[-1] if found else ""
        brief = text.split("Prompt written by the prompt writer:")[0]
        brief = brief.split("Client brief:", 1)[-1]
        self.brief_words, self.prompt_words = _words(brief), _words(self.prompt)
        self.coverage = len(self.brief_words & self.prompt_words) / len(self.brief_words) if self.brief_words else 0.0
        count = len(self.prompt.split())
        self.length = min(1.0, count / 40) if count <= 80 else max(0.3, 1 - (count - 80) / 120)
        self.variety = len(self.prompt_words) / max(1, count)
        self.count = count

    def quality(self, emphasis: float) -> float:
        """In [0, 1]: coverage always counts most; `emphasis` moves the rest between length and variety."""
        return 0.6 * self.coverage + 0.4 * (emphasis * self.length + (1 - emphasis) * min(1.0, self.variety * 1.5))

    def why(self) -> str:
        return (
            f"scripted judge (demo) rule: the prompt uses {len(self.brief_words & self.prompt_words)} of the brief's "
            f"{len(self.brief_words)} content words and has {self.count} words"
        )


def _spread(value: float, low: float, high: float) -> float:
    return float(min(1.0, max(0.0, (value - low) / (high - low))))


class ImageFeatures:
    """What the image-side rules read from the pixels, each in [0, 1]: contrast, colourfulness and how much the
    centre stands out. The demo renders with random weights, whose pixel statistics sit in a narrow band (grey
    spread 0.075-0.089, colourfulness 0.32-0.34, centre minus whole -0.02..0.02 over 323 renders): the maps below
    spread that band over 0-1, so that the demo's entries differ. Any real photograph saturates them."""

    def __init__(self, data_url: str | None) -> None:
        self.contrast = self.colour = self.centre = self.draw = 0.0
        if not data_url or "," not in data_url:
            return
        self.draw = _fraction(data_url, "pixels")  # any change of the pixels gives another draw
        import numpy as np
        from PIL import Image

        pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1]))).convert("RGB"), dtype=np.float64) / 255
        grey = pixels.mean(axis=2)
        h, w = grey.shape
        middle = grey[h // 4 : h - h // 4, w // 4 : w - w // 4]
        self.contrast = _spread(grey.std(), 0.07, 0.095)
        self.colour = _spread((pixels.max(axis=2) - pixels.min(axis=2)).mean(), 0.31, 0.35)
        self.centre = _spread(abs(middle.mean() - grey.mean()), 0.0, 0.025) if grey.std() > 0 else 0.0

    def quality(self, emphasis: float) -> float:
        """Half the pixel statistics, half a draw fixed by the exact pixels: random-weight renders show nothing a rule
        could grade, so the draw is what lets a changed image (a feedback round's) score differently."""
        read = emphasis * self.contrast + (1 - emphasis) * (0.5 * self.colour + 0.5 * self.centre)
        return 0.5 * read + 0.5 * self.draw

    def why(self) -> str:
        return (
            f"scripted judge (demo) rule: contrast {self.contrast:.2f}, colourfulness {self.colour:.2f}, "
            f"centre {self.centre:.2f} read from the pixels"
        )


def _score(quality: float) -> int:
    return 1 + min(4, max(0, round(4 * quality)))


def _rubric(dimensions: list[str], text: str, images: list[str]) -> dict[str, Any]:
    features = ImageFeatures(images[0]) if images else PromptFeatures(text)
    return {d: {"score": _score(features.quality(_fraction(d, "dimension"))), "rationale": features.why()} for d in dimensions}


def _checklist(items: list[str], text: str, images: list[str]) -> dict[str, int]:
    if images:
        image = ImageFeatures(images[0])
        seen = image.quality(0.5)
        return {item: int(seen >= 0.15 + 0.5 * _fraction(item, "item")) for item in items}
    prompt = PromptFeatures(text).prompt_words
    met = {}
    for item in items:
        wanted = _words(item)
        met[item] = int(bool(wanted) and len(wanted & prompt) * 2 >= len(wanted))
    return met


def _text_rendering(strings: list[str], images: list[str]) -> dict[str, dict[str, int]]:
    image = ImageFeatures(images[0] if images else None)
    out = {}
    for text in strings:
        present = int(image.contrast >= 0.2 + 0.4 * _fraction(text, "present"))
        out[text] = {"present": present, "exact": present * int(image.colour >= 0.5), "legible": present * int(image.contrast >= 0.4)}
    return out


def _faithfulness(dimensions: list[str], text: str, images: list[str]) -> dict[str, Any]:
    image = ImageFeatures(images[0] if images else None)
    prompt = PromptFeatures(text).prompt
    phrases = [p.strip() for p in re.split(r"[,;.]", prompt) if p.strip()][:6] or ["the prompt as a whole"]
    kinds = list(RUBRIC.faithfulness.requirement_kinds)
    requirements = []
    for number, phrase in enumerate(phrases):
        margin = image.quality(0.5) - _fraction(phrase, "requirement")
        verdict = "met" if margin >= 0 else "minor_miss" if margin >= -0.25 else "critical_miss"
        requirements.append({"requirement": phrase[:200], "kind": kinds[number % len(kinds)], "verdict": verdict, "evidence": image.why()})
    scored = {d: {"score": _score(image.quality(_fraction(d, "dimension"))), "rationale": image.why()} for d in dimensions}
    return {"requirements": requirements, "dimensions": scored}


def answer(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON reply the rules give to one judge request; None when the request asks for nothing they know."""
    text, images = _judged_text(body)
    if (dimensions := _keys_after(DIMENSIONS_HEADER, text)) is not None:
        return _rubric(dimensions, text, images)
    if (items := _keys_after(ITEMS_HEADER, text)) is not None:
        return _checklist(items, text, images)
    if _keys_after(SAFETY_HEADER, text) is not None:
        return {"blocked": False, "categories": [], "rationale": "scripted judge (demo) rule: nothing is blocked"}
    if (strings := _keys_after(TEXT_HEADER, text)) is not None:
        return _text_rendering(strings, images)
    if (dimensions := _keys_after(FAITHFULNESS_HEADER, text)) is not None:
        return _faithfulness(dimensions, text, images)
    return None


def completion(body: dict[str, Any], number: int) -> dict[str, Any]:
    """The chat.completion body for one request (an OpenAI-style error body when the request asks for nothing known)."""
    reply = answer(body)
    if reply is None:
        return {
            "error": {"message": "the scripted demo judge found no dimensions, items, categories or strings", "type": "invalid_request"}
        }
    content = json.dumps(reply, ensure_ascii=False)
    return {
        "id": f"demo-judge-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": (sent := len(json.dumps(body)) // 4),
            "completion_tokens": len(content) // 4,
            "total_tokens": sent + len(content) // 4,
        },
    }
