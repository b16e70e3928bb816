"""Strict parsing of AtelierJudge's JSON replies.

The only leniency is removing a Markdown code fence around the whole reply
(```json ... ``` or ``` ... ```), which chat models add out of habit. Anything
else that deviates from the requested shape raises ReplyFormatError, whose
message is sent back to the model in the repair turn.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"\A\s*```(?:json)?[ \t]*\n(?P<body>.*?)\n?[ \t]*```\s*\Z", re.DOTALL | re.IGNORECASE)


class ReplyFormatError(ValueError):
    """The reply is not the JSON object that was asked for."""


def strip_fence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group("body") if match else text


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads would silently keep the last duplicate; a reply that answers an
    # item twice is ambiguous, so it is an error.
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ReplyFormatError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def load_object(text: str) -> dict[str, Any]:
    """The reply's JSON object (after removing an optional code fence)."""
    try:
        data = json.loads(strip_fence(text), object_pairs_hook=_reject_duplicates)
    except json.JSONDecodeError as exc:
        raise ReplyFormatError(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
    if not isinstance(data, dict):
        raise ReplyFormatError(f"expected a JSON object, got {type(data).__name__}")
    return data


def check_keys(data: dict[str, Any], expected: tuple[str, ...]) -> None:
    missing = [key for key in expected if key not in data]
    extra = [key for key in data if key not in expected]
    problems = []
    if missing:
        problems.append(f"missing keys {missing}")
    if extra:
        problems.append(f"unexpected keys {extra}")
    if problems:
        raise ReplyFormatError("; ".join(problems))


def _is_int(value: Any) -> bool:
    # bool is a subclass of int in Python, but true/false are not the integers asked for.
    return isinstance(value, int) and not isinstance(value, bool)


def parse_subjective(text: str, dimensions: tuple[str, ...]) -> tuple[dict[str, int], dict[str, str]]:
    """(scores, rationales) from {"<dimension>": {"score": 1..5, "rationale": str}, ...}."""
    data = load_object(text)
    check_keys(data, dimensions)
    scores: dict[str, int] = {}
    rationales: dict[str, str] = {}
    for dim in dimensions:
        entry = data[dim]
        if not isinstance(entry, dict) or set(entry) != {"score", "rationale"}:
            raise ReplyFormatError(f'{dim!r} must be an object with exactly "score" and "rationale"')
        score, rationale = entry["score"], entry["rationale"]
        if not _is_int(score) or not 1 <= score <= 5:
            raise ReplyFormatError(f"{dim!r} score must be an integer from 1 to 5, got {score!r}")
        if not isinstance(rationale, str):
            raise ReplyFormatError(f"{dim!r} rationale must be a string")
        scores[dim], rationales[dim] = score, rationale
    return scores, rationales


def parse_objective(text: str, items: tuple[str, ...]) -> dict[str, int]:
    """item -> 0/1 from {"<item text>": 0 | 1, ...}; true/false are rejected."""
    data = load_object(text)
    check_keys(data, items)
    for item in items:
        value = data[item]
        if not _is_int(value) or value not in (0, 1):
            raise ReplyFormatError(f"value for {item!r} must be the integer 0 or 1, got {json.dumps(value)}")
    return {item: data[item] for item in items}
