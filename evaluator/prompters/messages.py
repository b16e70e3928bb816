"""What an endpoint prompter is sent: a condition's words, the request, and feedback in later rounds.

The request holds only what a human participant sees: the title, the brief and every
constraint as the client wrote it (OE, CO), or the target image (IM). Checklists, the
IM seed prompt and anything else hidden never go to an endpoint. Later rounds carry the
conversation so far; only the latest feedback image is attached (earlier ones are named
in text), so a request stays bounded however many rounds there are.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from evaluator.categories import IMITATION

from .baselines import CONSTRAINT_ORDER
from .conditions import Condition

Message = dict[str, Any]
_DATA_URL = re.compile(r"data:image/([a-z]+);base64,([A-Za-z0-9+/=]+)")


@dataclass(frozen=True)
class Request:
    """One task as a participant would see it."""

    category: str
    title: str
    brief: str
    constraints: dict[str, str] = field(default_factory=dict)
    target_png: bytes | None = None  # IM only


@dataclass(frozen=True)
class Feedback:
    """What came of one earlier round: its prompt, the image it produced and the score line."""

    prompt: str
    image_png: bytes | None
    score_line: str  # e.g. "It scores 63/100 for similarity to the target." ('' when no score is shared)


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def request_text(request: Request) -> str:
    lines = [f"Title: {request.title.strip()}", f"Request: {request.brief.strip()}"]
    named = [name for name in (*CONSTRAINT_ORDER, *sorted(request.constraints)) if str(request.constraints.get(name, "")).strip()]
    if named:
        lines.append("Requirements:")
        lines += [f"- {name}: {str(request.constraints[name]).strip()}" for name in dict.fromkeys(named)]
    return "\n".join(lines)


def first_message(condition: Condition, request: Request) -> Message:
    if request.category == IMITATION:
        if request.target_png is None:
            raise ValueError("an imitation task needs its target image")
        text = f"{condition.imitation}\n\n{request_text(request)}"
        return {
            "role": "user",
            "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": data_url(request.target_png)}}],
        }
    return {"role": "user", "content": f"{condition.brief}\n\n{request_text(request)}"}


def round_messages(condition: Condition, request: Request, history: list[Feedback]) -> list[Message]:
    """The chat for the next round: system, the request, then one (prompt, feedback) exchange per earlier round."""
    messages: list[Message] = [{"role": "system", "content": condition.system}, first_message(condition, request)]
    for number, past in enumerate(history, start=1):
        messages.append({"role": "assistant", "content": past.prompt})
        score = f" {past.score_line}" if past.score_line else ""
        text = condition.feedback.format(score=score)
        latest = number == len(history)
        if past.image_png is None:
            messages.append({"role": "user", "content": f"(Round {number}: the image could not be made.) {text}"})
        elif latest:
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": data_url(past.image_png)}}],
                }
            )
        else:
            messages.append({"role": "user", "content": f"(Round {number}'s image was shown then.) {text}"})
    return messages


def elided(messages: list[Message]) -> list[Message]:
    """The messages as the call log keeps them: every image replaced by its size and hash."""

    def shrink(match: re.Match[str]) -> str:
        data = base64.b64decode(match.group(2))
        return f"[{match.group(1)} image, {len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()[:12]}]"

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return _DATA_URL.sub(shrink, value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return walk(messages)
