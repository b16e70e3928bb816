"""Comparing board.json with what its data recompute to, leaf by leaf: numbers within a tolerance, anything else
equal, and what one side has and the other has not, one line per difference."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

ABOUT = (
    "prompter",
    "team",
    "condition",
    "origin",
    "published",
    "card",
)  # who an entry is (its card as published, when): named, not computed
HUMAN_ABOUT = ("label", "judge_id", "judge_version", "judge_label")  # what a human row is called (its judge is checked apart)
DESCRIBED = ("pack", "judge", "code_version", "backends", "coverage_settings")  # checked against the units, not recomputed
TOLERANCE = 1e-12  # relative: numbers are written as json writes floats (they round-trip), so only summation order may differ
# The field, or fields, that name a list's elements where they do (else elements are compared by position).
LABELS = (("entry",), ("scripted", "tier"), ("category",), ("upper",), ("target",), ("scope", "key"), ("name",), ("group",))
MISSING = object()


def plain(data: Any) -> Any:
    """As board.json would hold it (tuples as lists, keys as strings, enums as their values)."""
    return json.loads(json.dumps(data))


def published(board: dict) -> dict:
    """board.json less what is described rather than computed (checked apart) and the names of entries and human rows."""
    shown = {k: v for k, v in board.items() if k not in DESCRIBED}
    shown["entries"] = _unnamed(shown.get("entries", MISSING), ABOUT)
    if isinstance(shown.get("humans"), dict):
        shown["humans"] = {**shown["humans"], "rows": _unnamed(shown["humans"].get("rows", MISSING), HUMAN_ABOUT)}
    return {k: v for k, v in shown.items() if v is not MISSING}


def _unnamed(items: Any, names: tuple[str, ...]) -> Any:
    if not isinstance(items, list):
        return items
    return [{k: v for k, v in item.items() if k not in names} if isinstance(item, dict) else item for item in items]


def compare(published: Any, recomputed: Any, path: str, tolerance: float, found: list[str]) -> None:
    """Append one line per leaf that differs and per key or list element on one side only."""
    if published is MISSING:
        found.append(f"{path}: deleted from board.json (recomputed {short(recomputed)})")
    elif recomputed is MISSING:
        found.append(f"{path}: added in board.json ({short(published)}), not recomputed")
    elif isinstance(published, dict) and isinstance(recomputed, dict):
        for key in [*published, *(k for k in recomputed if k not in published)]:
            compare(published.get(key, MISSING), recomputed.get(key, MISSING), f"{path}.{key}" if path else str(key), tolerance, found)
    elif isinstance(published, list) and isinstance(recomputed, list):
        for label, mine, theirs in _pairs(published, recomputed):
            compare(mine, theirs, f"{path}[{label}]", tolerance, found)
    elif not same(published, recomputed, tolerance):
        found.append(f"{path}: published {short(published)}, recomputed {short(recomputed)}")


def _pairs(published: list, recomputed: list) -> Iterator[tuple[str, Any, Any]]:
    """Elements side by side: by the field that names them where one does on both sides (so a deleted row is one
    deletion, not a shift of every row after it), else by position."""
    key = next((k for k in LABELS if _names(published, k) is not None and _names(recomputed, k) is not None), None)
    if key is None:
        for i in range(max(len(published), len(recomputed))):
            yield str(i), published[i] if i < len(published) else MISSING, recomputed[i] if i < len(recomputed) else MISSING
        return
    mine, theirs = dict(zip(_names(published, key), published)), dict(zip(_names(recomputed, key), recomputed))  # type: ignore[arg-type]
    for name in [*mine, *(n for n in theirs if n not in mine)]:
        yield name, mine.get(name, MISSING), theirs.get(name, MISSING)


def _names(items: list, key: tuple[str, ...]) -> list[str] | None:
    """Each element's name by these fields ("scope=task,key=co-s01"), or None unless every element has one of its own."""
    names = [",".join(f"{k}={x[k]}" for k in key) for x in items if isinstance(x, dict) and all(k in x for k in key)]
    return names if len(names) == len(items) and len(set(names)) == len(names) else None


def same(a: Any, b: Any, tolerance: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=tolerance, abs_tol=0.0)
    return type(a) is type(b) and a == b


def short(value: Any, limit: int = 90) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
