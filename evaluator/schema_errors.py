"""JSON Schema (Draft 2020-12) checks whose messages name the field: shared by the backends file and task packs.

A schema states the shape of a document; `problems` turns each way a document breaks it into a Problem whose path
is the field at fault (a missing or an unknown key is a problem of its own, named by its own path) and whose text
says what is wrong, so that the caller only says where the document came from ("config/backends.json: backend #2",
"co.jsonl:7"). A subschema's "description" is what its value must be; it reads after "must be".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.validators import extend

_KINDS = {
    "object": "a JSON object",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def _is_integer(_checker: object, instance: object) -> bool:
    # JSON Schema counts 64.0 as an integer; a config that says 64.0 pixels or 2.0 steps has a typo.
    return isinstance(instance, int) and not isinstance(instance, bool)


Validator = extend(Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))


def validator(schema: Mapping[str, Any]) -> Draft202012Validator:
    """A validator for `schema`, which is checked against the Draft 2020-12 metaschema first."""
    Validator.check_schema(schema)
    return Validator(schema)


@dataclass(frozen=True)
class Problem:
    path: tuple[str | int, ...]
    says: str  # after the field's name: "is required", "must be ..."; for an unknown key, what is allowed instead
    unknown: bool = False

    def message(self, at: str) -> str:
        """The sentence, with `at` naming the field ("field 'steps'"); an empty `at` is the document itself."""
        if self.unknown:
            return f"unknown {at} ({self.says})"
        return f"{at} {self.says}" if at else self.says


def field_name(path: Iterable[str | int]) -> str:
    """'rewriter'['base_url'], 'tags'[0]: the first key quoted, then a subscript for each step below it."""
    first, *rest = path
    return repr(first) + "".join(f"[{step!r}]" for step in rest)


def problems(checker: Draft202012Validator, instance: object) -> list[Problem]:
    """Every problem of `instance`, in document order (by path), each once."""
    found = dict.fromkeys(p for error in checker.iter_errors(instance) for p in _explain(error))
    return sorted(found, key=lambda p: [(0, step, "") if isinstance(step, int) else (1, 0, step) for step in p.path])


def _explain(error: ValidationError) -> list[Problem]:
    path, schema, value = tuple(error.absolute_path), error.schema, error.instance
    if error.validator == "required":
        return [Problem((*path, key), "is required") for key in error.validator_value if key not in value]
    if error.validator == "additionalProperties":
        return [Problem((*path, key), _allowed(schema), unknown=True) for key in _unknown_keys(schema, value)]
    if error.validator == "type":
        kinds = [error.validator_value] if isinstance(error.validator_value, str) else error.validator_value
        return [Problem(path, f"must be {' or '.join(_KINDS[k] for k in kinds)}, got {value!r}")]
    if "description" in schema:
        return [Problem(path, f"must be {schema['description']}, got {value!r}")]
    return [Problem(path, error.message)]


def _unknown_keys(schema: Mapping[str, Any], value: Mapping[str, Any]) -> list[str]:
    patterns = schema.get("patternProperties", {})
    return [key for key in value if key not in schema.get("properties", {}) and not any(re.search(p, key) for p in patterns)]


def _allowed(schema: Mapping[str, Any]) -> str:
    allowed = ", ".join(schema.get("properties", {}))
    patterns = " or ".join(schema.get("patternProperties", {}))
    return f"allowed: {allowed}" + (f", and keys matching {patterns}" if patterns else "")
