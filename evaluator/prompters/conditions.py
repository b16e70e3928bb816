"""Conditions: the named, versioned instructions an endpoint prompter receives.

A condition is data (conditions.json here, plus any file a deployer names): a system
message, the instruction for a brief (OE, CO), the instruction for a target image (IM)
and the instruction that comes with feedback in later rounds. Its version is the
number written in the file plus a hash of its text, so editing the wording without
bumping the number still gives a new version, and two submissions compare only when
they read the same words.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

BUILT_IN = Path(__file__).with_name("conditions.json")
FIELDS = ("system", "brief", "imitation", "feedback")
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")


class ConditionError(ValueError):
    """A conditions file that cannot be used, with the file and field named."""


@dataclass(frozen=True)
class Condition:
    name: str
    number: int
    description: str
    system: str
    brief: str
    imitation: str
    feedback: str  # may hold {score}: the similarity or checklist line of the feedback round

    @property
    def version(self) -> str:
        text = json.dumps([getattr(self, f) for f in FIELDS])
        return f"{self.number}+{hashlib.sha256(text.encode()).hexdigest()[:8]}"

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


def _parse(source: str, name: str, raw: object) -> Condition:
    where = f"{source}: condition {name!r}"
    if not isinstance(raw, dict):
        raise ConditionError(f"{where} must be an object")
    if not name or set(name) - _NAME_CHARS or len(name) > 30:
        raise ConditionError(f"{where}: a name is 1-30 characters of a-z, 0-9, '-' and '_'")
    number = raw.get("version")
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ConditionError(f"{where}: field 'version' must be a positive integer, got {number!r}")
    texts = {}
    for field in (*FIELDS, "description"):
        value = raw.get(field, "" if field == "description" else None)
        if not isinstance(value, str) or (field != "description" and not value.strip()):
            raise ConditionError(f"{where}: field {field!r} must be non-empty text")
        texts[field] = value
    try:
        texts["feedback"].format(score="")
    except (KeyError, IndexError, ValueError) as exc:
        raise ConditionError(f"{where}: field 'feedback' may use only the placeholder {{score}} ({exc!r})") from None
    return Condition(name=name, number=number, **texts)


def load_conditions(extra: Path | None = None) -> dict[str, Condition]:
    """The built-in conditions, then the deployer's file (a condition there replaces a built-in of the same name)."""
    found: dict[str, Condition] = {}
    for path in (BUILT_IN, extra):
        if path is None:
            continue
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConditionError(f"{path}: cannot read conditions ({exc})") from None
        if not isinstance(data, dict):
            raise ConditionError(f"{path}: expected an object of conditions keyed by name")
        found |= {name: _parse(str(path), name, raw) for name, raw in data.items()}
    return found
