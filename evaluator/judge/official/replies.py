"""The release's reply parsing, so that the official route accepts and refuses what the release does.

Rubric replies: a Markdown fence is removed, the text from the first "{" to the last "}" is read as JSON;
its keys must be exactly the release's four dimension names; each value an object with an integer "score"
from 1 to 5 and a string "rationale" (or "note"). Checklist replies: a fence is removed, the whole text is
read as JSON; keys that are not the items verbatim are matched the release's way (numbering such as "3. "
and runs of spaces ignored, or a bare item number); every item must be answered, and every value must
equal 0 or 1. Anything else raises ReplyFormatError with what was wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..parsing import ReplyFormatError

_NUMBERING = re.compile(r"^\s*\d+\s*[\.\):\-]\s*")
_INDEX = re.compile(r"^(\d+)\s*[\.\):\-]?\s*.*$")


def _without_fence(text: str) -> str:
    value = text.strip()
    value = value[7:] if value.startswith("```json") else value[3:] if value.startswith("```") else value
    value = value[:-3] if value.endswith("```") else value
    return value.strip()


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplyFormatError(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc


def parse_dimensions(text: str, names: Sequence[str]) -> tuple[dict[str, int], dict[str, str]]:
    """(name -> score, name -> rationale) from a rubric reply, by the release's rules."""
    cleaned = _without_fence(text)
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start == -1 or end <= start:
        raise ReplyFormatError("the reply holds no JSON object")
    data = _load(cleaned[start : end + 1])
    if not isinstance(data, dict):
        raise ReplyFormatError(f"expected a JSON object, got {type(data).__name__}")
    if set(data) != set(names):
        raise ReplyFormatError(
            f"dimension keys must be {list(names)}: missing {sorted(set(names) - set(data))}, extra {sorted(set(data) - set(names))}"
        )
    scores, rationales = {}, {}
    for name in names:
        scores[name], rationales[name] = _dimension(data[name], name)
    return scores, rationales


def _dimension(payload: Any, name: str) -> tuple[int, str]:
    score = payload.get("score") if isinstance(payload, dict) else None
    if not isinstance(score, int) or not 1 <= score <= 5:  # as the release: an int, so true counts as 1
        raise ReplyFormatError(f"{name}: 'score' must be an integer from 1 to 5, got {json.dumps(score)}")
    rationale, note = payload.get("rationale"), payload.get("note")
    text = rationale if isinstance(rationale, str) else note
    if not isinstance(text, str):
        raise ReplyFormatError(f"{name}: needs a string 'rationale'")
    return int(score), text


def _match_text(text: str) -> str:
    return re.sub(r"\s+", " ", _NUMBERING.sub("", text.strip())).strip()


def _by_text(data: dict[str, Any], items: Sequence[str]) -> dict[str, Any]:
    expected = {_match_text(item): item for item in items}
    found: dict[str, Any] = {}
    for key, value in data.items():
        item = expected.get(_match_text(str(key)))
        if item is not None and item not in found:
            found[item] = value
    return found


def _by_number(data: dict[str, Any], items: Sequence[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in data.items():
        match = _INDEX.match(str(key).strip())
        if match and 0 <= int(match.group(1)) - 1 < len(items):
            found[items[int(match.group(1)) - 1]] = value
    return found


def matched_keys(data: dict[str, Any], items: Sequence[str]) -> dict[str, Any]:
    """The reply's answers keyed by item: verbatim, else by text without numbering, else by number (the release's order)."""
    wanted = set(items)
    if set(data) == wanted:
        return data
    for strategy in (_by_text, _by_number):
        found = strategy(data, items)
        if set(found) == wanted:
            return found
    return data


def parse_checks(text: str, items: Sequence[str]) -> dict[str, int]:
    """item -> 0/1 from a checklist reply, by the release's rules."""
    data = _load(_without_fence(text))
    if not isinstance(data, dict):
        raise ReplyFormatError(f"expected a JSON object, got {type(data).__name__}")
    answers = matched_keys(data, items)
    missing = [item for item in dict.fromkeys(items) if item not in answers]
    if missing:
        raise ReplyFormatError(f"missing checklist items {missing}")
    bad = {str(key): value for key, value in answers.items() if value not in (0, 1)}
    if bad:
        raise ReplyFormatError(f"values must be 0 or 1, got {json.dumps(bad, ensure_ascii=False)[:200]}")
    return {item: int(answers[item]) for item in items}
