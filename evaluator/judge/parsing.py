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

from jsonschema import Draft202012Validator, ValidationError, validators

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


# --- reply schemas, checked with jsonschema ---------------------------------------------------------
#
# The jsonschema package validates; this module only words its errors for the repair turn, naming
# the path in the reply ("requirements[0].verdict") and quoting values as JSON. "integer" is strict:
# 5.0 and true are not the integers a rubric asks for.

Schema = dict[str, Any]
_IDENT = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_STRICT_TYPES = Draft202012Validator.TYPE_CHECKER.redefine("integer", lambda _checker, value: _is_int(value))
_Validator = validators.extend(Draft202012Validator, type_checker=_STRICT_TYPES)
_TYPE_WORDS = {"object": "a JSON object", "array": "a JSON array", "string": "a string", "boolean": "true or false"}
_MAX_PROBLEMS = 3


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = part if _IDENT.match(part) else json.dumps(part, ensure_ascii=False)
            out += f".{name}" if out else name
    return out


def _literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)[:80]


def _integer_problem(where: str, value: Any, schema: Schema) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if (low, high) == (0, 1):
        return f"{where} must be the integer 0 or 1, got {_literal(value)}"
    return f"{where} must be an integer from {low} to {high}, got {_literal(value)}"


def _describe(error: ValidationError) -> str:
    path = _path(error.absolute_path)
    where, prefix = path or "the reply", f"{path}: " if path else ""
    keyword, value, expected = error.validator, error.instance, error.validator_value
    if keyword == "required":
        return f"{prefix}missing keys {[k for k in expected if k not in value]}"
    if keyword == "additionalProperties":
        return f"{prefix}unexpected keys {[k for k in value if k not in error.schema.get('properties', {})]}"
    if keyword in ("minimum", "maximum") or (keyword == "type" and expected == "integer"):
        return _integer_problem(where, value, error.schema)
    if keyword == "type":
        return f"{where} must be {_TYPE_WORDS.get(expected, expected)}, got {_literal(value)}"
    if keyword == "enum":
        return f"{where} must be one of {json.dumps(expected, ensure_ascii=False)}, got {_literal(value)}"
    if keyword == "minItems":
        return f"{where} needs at least {expected} entries, got {len(value)}"
    if keyword == "maxItems":
        return f"{where} may have at most {expected} entries, got {len(value)}"
    if keyword == "uniqueItems":
        return f"{where} repeats an entry"
    if keyword == "pattern":  # the only pattern the reply schemas use is "not blank"
        return f"{where} must not be empty"
    return f"{where}: {error.message}"


def validate(value: Any, schema: Schema) -> None:
    """Raise ReplyFormatError naming the first few places (outermost first) where `value` breaks `schema`."""
    errors = sorted(_Validator(schema).iter_errors(value), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        problems = list(dict.fromkeys(_describe(e) for e in errors))
        raise ReplyFormatError("; ".join(problems[:_MAX_PROBLEMS]))


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
