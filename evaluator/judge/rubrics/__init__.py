"""AtelierJudge's rubric: versioned data files (rubrics/v2.json, ...) and their loader.

A rubric file holds everything the judge is told about what to score: the four
prompt and four image dimensions with five anchored levels each, the faithfulness
requirement kinds, verdict credits and weights, the safety categories and the text
rendering checks. Judgements are stored with the rubric's version string and are
only comparable within one version, so a changed text is a new file and version.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..types import IMAGE_DIMENSIONS, PROMPT_DIMENSIONS, Side

RUBRIC_DIR = Path(__file__).resolve().parent
DEFAULT_RUBRIC_FILE = "v2.json"


class RubricError(ValueError):
    """A rubric file does not have the expected content."""


@dataclass(frozen=True)
class Level:
    label: str
    anchor: str


@dataclass(frozen=True)
class Dimension:
    key: str
    title: str  # the display name used by the official release ("Mood & Atmosphere")
    question: str
    levels: tuple[Level, Level, Level, Level, Level]  # anchors for scores 1..5
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Faithfulness:
    requirement_kinds: dict[str, str]
    verdict_credit: dict[str, float]  # verdict -> credit in [0, 1]
    verdict_meaning: dict[str, str]
    weights: dict[str, float]  # instruction_faithfulness + every model-scored dimension; sums to 1
    dimensions: tuple[Dimension, ...]  # the ones the model scores 1..5
    pass_rule: str


@dataclass(frozen=True)
class Rubric:
    version: str
    prompt: tuple[Dimension, ...]
    image: tuple[Dimension, ...]
    faithfulness: Faithfulness
    safety_categories: dict[str, str]  # key -> description
    text_checks: dict[str, str]  # present/exact/legible -> meaning

    def dimensions_of(self, side: Side) -> tuple[Dimension, ...]:
        """The four anchored dimensions a rubric skill of this side scores."""
        return self.prompt if side == Side.PROMPT else self.image


def _need(data: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(data, dict) or key not in data:
        raise RubricError(f"{where}: missing {key!r}")
    value = data[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise RubricError(f"{where}.{key}: expected {names}")
    return value


def _text(data: Any, key: str, where: str) -> str:
    value = _need(data, key, str, where)
    if not value.strip():
        raise RubricError(f"{where}.{key}: must not be empty")
    return value


def _dimension(data: Any, where: str) -> Dimension:
    key = _text(data, "key", where)
    where = f"{where}[{key}]"
    levels = _need(data, "levels", list, where)
    if len(levels) != 5:
        raise RubricError(f"{where}.levels: expected 5 anchored levels, got {len(levels)}")
    aliases = tuple(data.get("aliases", ()))
    if not all(isinstance(a, str) and a.strip() for a in aliases):
        raise RubricError(f"{where}.aliases: expected a list of names")
    return Dimension(
        key=key,
        title=_text(data, "title", where),
        question=_text(data, "question", where),
        levels=tuple(Level(_text(lv, "label", f"{where}.levels"), _text(lv, "anchor", f"{where}.levels")) for lv in levels),  # type: ignore[arg-type]
        aliases=aliases,
    )


def _dimensions(data: dict[str, Any], skill: str, expected: tuple[str, ...]) -> tuple[Dimension, ...]:
    dims = tuple(_dimension(d, f"{skill}.dimensions") for d in _need(_need(data, skill, dict, "rubric"), "dimensions", list, skill))
    if tuple(d.key for d in dims) != expected:
        raise RubricError(f"{skill}: dimensions must be {list(expected)} in this order, got {[d.key for d in dims]}")
    return dims


def _faithfulness(data: dict[str, Any]) -> Faithfulness:
    spec = _need(data, "faithfulness", dict, "rubric")
    kinds = _need(spec, "requirement_kinds", dict, "faithfulness")
    verdicts = _need(spec, "verdicts", dict, "faithfulness")
    credit = {name: float(_need(v, "credit", (int, float), f"faithfulness.verdicts.{name}")) for name, v in verdicts.items()}
    if set(credit) != {"met", "minor_miss", "critical_miss"}:
        raise RubricError("faithfulness.verdicts: expected exactly met, minor_miss, critical_miss")
    if not credit["met"] == 1.0 > credit["minor_miss"] > credit["critical_miss"] == 0.0:
        raise RubricError("faithfulness.verdicts: credits must satisfy met = 1 > minor_miss > critical_miss = 0")
    dims = tuple(_dimension(d, "faithfulness.dimensions") for d in _need(spec, "dimensions", list, "faithfulness"))
    weights = {k: float(v) for k, v in _need(spec, "weights", dict, "faithfulness").items()}
    expected = {"instruction_faithfulness"} | {d.key for d in dims}
    if set(weights) != expected:
        raise RubricError(f"faithfulness.weights: expected keys {sorted(expected)}, got {sorted(weights)}")
    if not math.isclose(sum(weights.values()), 1.0, abs_tol=1e-9) or min(weights.values()) < 0:
        raise RubricError("faithfulness.weights: must be non-negative and sum to 1")
    top = weights["instruction_faithfulness"]
    if any(w >= top for k, w in weights.items() if k != "instruction_faithfulness"):
        raise RubricError("faithfulness.weights: instruction_faithfulness must weigh strictly more than any other dimension")
    return Faithfulness(
        requirement_kinds={str(k): str(v) for k, v in kinds.items()},
        verdict_credit=credit,
        verdict_meaning={name: _text(v, "meaning", f"faithfulness.verdicts.{name}") for name, v in verdicts.items()},
        weights=weights,
        dimensions=dims,
        pass_rule=_text(spec, "pass_rule", "faithfulness"),
    )


def parse_rubric(data: dict[str, Any]) -> Rubric:
    """A Rubric from a rubric file's JSON object, checked for completeness."""
    safety = _need(_need(data, "safety", dict, "rubric"), "categories", list, "safety")
    categories = {_text(c, "key", "safety.categories"): _text(c, "description", "safety.categories") for c in safety}
    if len(categories) != len(safety) or not categories:
        raise RubricError("safety.categories: keys must be unique and at least one is needed")
    checks = _need(_need(data, "text_rendering", dict, "rubric"), "checks", dict, "text_rendering")
    if list(checks) != ["present", "exact", "legible"]:
        raise RubricError("text_rendering.checks: expected present, exact, legible")
    return Rubric(
        version=_text(data, "version", "rubric"),
        prompt=_dimensions(data, "prompt_subjective", PROMPT_DIMENSIONS),
        image=_dimensions(data, "image_subjective", IMAGE_DIMENSIONS),
        faithfulness=_faithfulness(data),
        safety_categories=categories,
        text_checks={k: str(v) for k, v in checks.items()},
    )


@lru_cache(maxsize=8)
def load_rubric(path: str | Path | None = None) -> Rubric:
    """The rubric in `path` (default: the current one, rubrics/v2.json)."""
    file = Path(path) if path is not None else RUBRIC_DIR / DEFAULT_RUBRIC_FILE
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RubricError(f"{file}: cannot read rubric ({exc})") from exc
    if not isinstance(data, dict):
        raise RubricError(f"{file}: expected a JSON object")
    try:
        return parse_rubric(data)
    except RubricError as exc:
        raise RubricError(f"{file}: {exc}") from exc


RUBRIC = load_rubric()
RUBRIC_VERSION = RUBRIC.version


def render_dimensions(dimensions: tuple[Dimension, ...]) -> str:
    """Dimensions with their anchored levels as plain text for a system message."""
    blocks = []
    for dim in dimensions:
        anchors = "\n".join(f"  {score} ({lv.label}): {lv.anchor}" for score, lv in enumerate(dim.levels, start=1))
        blocks.append(f"{dim.key} ({dim.title}): {dim.question}\n{anchors}")
    return "\n\n".join(blocks)
