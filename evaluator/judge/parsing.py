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
    data = load_validated(text, subjective_schema(dimensions))
    return {d: data[d]["score"] for d in dimensions}, {d: data[d]["rationale"] for d in dimensions}


def parse_objective(text: str, items: tuple[str, ...]) -> dict[str, int]:
    """item -> 0/1 from {"<item text>": 0 | 1, ...}; true/false are rejected."""
    data = load_object(text)
    check_keys(data, items)
    for item in items:
        value = data[item]
        if not _is_int(value) or value not in (0, 1):
            raise ReplyFormatError(f"value for {item!r} must be the integer 0 or 1, got {json.dumps(value)}")
    return {item: data[item] for item in items}


# --- a small validator for the JSON Schema subset the reply schemas use -----------------------
#
# jsonschema is not a dependency of this project, and the replies need only: type, properties,
# required, additionalProperties (false), enum, minimum/maximum, minLength, items, minItems,
# maxItems and uniqueItems. Messages name the path, so the repair turn can say what to fix.

Schema = dict[str, Any]
_IDENT = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")


def _child(path: str, key: str) -> str:
    name = key if _IDENT.match(key) else json.dumps(key, ensure_ascii=False)
    return f"{path}.{name}" if path else name


def validate(value: Any, schema: Schema, path: str = "") -> None:
    """Raise ReplyFormatError naming the first place where `value` does not follow `schema`."""
    where = path or "the reply"
    kind = schema.get("type")
    if "enum" in schema and value not in schema["enum"]:
        raise ReplyFormatError(f"{where} must be one of {json.dumps(schema['enum'])}, got {json.dumps(value)}")
    if kind == "object":
        if not isinstance(value, dict):
            raise ReplyFormatError(f"{where} must be a JSON object, got {json.dumps(value)[:80]}")
        properties: dict[str, Schema] = schema.get("properties", {})
        required = list(schema.get("required", ()))
        missing = [key for key in required if key not in value]
        extra = [key for key in value if key not in properties] if schema.get("additionalProperties") is False else []
        problems = ([f"missing keys {missing}"] if missing else []) + ([f"unexpected keys {extra}"] if extra else [])
        if problems:
            raise ReplyFormatError(f"{path + ': ' if path else ''}{'; '.join(problems)}")
        for key, sub in properties.items():
            if key in value:
                validate(value[key], sub, _child(path, key))
    elif kind == "array":
        if not isinstance(value, list):
            raise ReplyFormatError(f"{where} must be a JSON array, got {json.dumps(value)[:80]}")
        if len(value) < schema.get("minItems", 0):
            raise ReplyFormatError(f"{where} needs at least {schema['minItems']} entries, got {len(value)}")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise ReplyFormatError(f"{where} may have at most {schema['maxItems']} entries, got {len(value)}")
        if schema.get("uniqueItems"):
            seen = [json.dumps(v, sort_keys=True) for v in value]
            repeated = sorted({s for s in seen if seen.count(s) > 1})
            if repeated:
                raise ReplyFormatError(f"{where} repeats {', '.join(repeated)}")
        if "items" in schema:
            for index, item in enumerate(value):
                validate(item, schema["items"], f"{where if path else ''}[{index}]")
    elif kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        ok = _is_int(value) and (low is None or value >= low) and (high is None or value <= high)
        if not ok:
            if (low, high) == (0, 1):
                raise ReplyFormatError(f"{where} must be the integer 0 or 1, got {json.dumps(value)}")
            raise ReplyFormatError(f"{where} must be an integer from {low} to {high}, got {json.dumps(value)}")
    elif kind == "string":
        if not isinstance(value, str):
            raise ReplyFormatError(f"{where} must be a string, got {json.dumps(value)[:80]}")
        if len(value.strip()) < schema.get("minLength", 0):
            raise ReplyFormatError(f"{where} must not be empty")
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise ReplyFormatError(f"{where} must be true or false, got {json.dumps(value)}")
    elif kind is not None:
        raise ValueError(f"schema type {kind!r} is not supported by this validator")


def strict_object(properties: dict[str, Schema]) -> Schema:
    """An object schema whose keys are exactly `properties`."""
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def score_schema(low: int = 1, high: int = 5) -> Schema:
    return strict_object({"score": {"type": "integer", "minimum": low, "maximum": high}, "rationale": {"type": "string"}})


def subjective_schema(dimensions: tuple[str, ...]) -> Schema:
    """{"<dimension>": {"score": 1..5, "rationale": str}} for exactly these dimensions."""
    return strict_object({dim: score_schema() for dim in dimensions})


def load_validated(text: str, schema: Schema) -> dict[str, Any]:
    """The reply's JSON object, checked against the schema."""
    data = load_object(text)
    validate(data, schema)
    return data
