"""Every worked example in tests/cases/*.json, run by one parametrised test.

Each file names the function it exercises; an adapter here turns the case's plain JSON input
into the function's arguments and its result into plain numbers to compare with `expected`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from evaluator.judge.metric_skills import clip_score, color_shift
from evaluator.judge.rubrics import RUBRIC
from evaluator.judge.skills import REGISTRY, faithfulness_scores
from evaluator.metrics.aggregate import Unit, figures
from evaluator.metrics.agreement import ChecklistLabel, Pair, agreement, checklist_agreement

CASES = Path(__file__).resolve().parent / "cases"


FRACTION = re.compile(r"-?\d+(\.\d+)?(/\d+)?")


def number(value: Any) -> Any:
    """A case's number: a float, or a fraction written as a string ("-29/165"); other strings stay."""
    return float(Fraction(value)) if isinstance(value, str) and FRACTION.fullmatch(value) else value


def unit(row: list) -> Unit:
    task, category, sample, skill, status, value, backend, image = row
    declared = REGISTRY.get(skill)
    if declared is None:  # "render": a failed render is a unit of its own
        return Unit(task, category, sample, skill, status, value, backend, image)
    scale = declared.scale.name if declared.scale else ""
    return Unit(task, category, sample, skill, status, value, backend, image, scale, declared.composite, declared.top1_rank)


def run_figures(inp: dict) -> dict:
    return {
        f"{f.scope}:{f.key}": {"value": f.value, "n": f.n, "failures": f.failures, "scale": f.scale}
        for f in figures([unit(r) for r in inp["units"]])
    }


def run_clip_score(inp: dict) -> dict:
    reference = np.asarray(inp["reference"], dtype=float) if inp.get("reference") else None
    return clip_score(np.asarray(inp["render"], dtype=float), np.asarray(inp["target"], dtype=float), reference)


def picture(spec: dict) -> Image.Image:
    image = Image.new("RGB", tuple(spec["size"]), tuple(spec["color"]))
    if "right_half" in spec:
        width, height = spec["size"]
        image.paste(Image.new("RGB", (width // 2, height), tuple(spec["right_half"])), (width // 2, 0))
    if "resize" in spec:
        image = image.resize(tuple(spec["resize"]), Image.Resampling.NEAREST)
    return image


def run_color_shift(inp: dict) -> dict:
    return color_shift(picture(inp["render"]), picture(inp["target"]))


def run_faithfulness(inp: dict) -> dict:
    dims = {d.key: inp["dimension_score"] for d in RUBRIC.faithfulness.dimensions}
    return faithfulness_scores(inp["verdicts"], dims, RUBRIC)


def run_agreement(inp: dict) -> dict:
    experts = [tuple(map(number, e)) if isinstance(e, list) else (number(e),) for e in inp["experts"]]
    pairs = [Pair(f"t{i}", f"entry:{i}", "d", float(number(j)), e) for i, (j, e) in enumerate(zip(inp["judge"], experts))]
    row = next(a for a in agreement(pairs, resamples=10) if a.dimension == "d")
    return {name: getattr(row, name).value for name in ("spearman", "kendall_tau_b", "mae", "within_1")}


def run_checklist_agreement(inp: dict) -> dict:
    labels = [ChecklistLabel(f"t{i}", f"entry:{i}", "item", judge, tuple(experts)) for i, (judge, experts) in enumerate(inp["labels"])]
    result = checklist_agreement(labels, resamples=10)
    return {name: getattr(result, name).value for name in ("accuracy", "precision", "recall", "f1")}


ADAPTERS: dict[str, Callable[[dict], dict]] = {
    "aggregate.figures": run_figures,
    "metric_skills.clip_score": run_clip_score,
    "metric_skills.color_shift": run_color_shift,
    "skills.faithfulness_scores": run_faithfulness,
    "agreement.agreement": run_agreement,
    "agreement.checklist_agreement": run_checklist_agreement,
}


def load_cases() -> list:
    params = []
    for path in sorted(CASES.glob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        for case in document["cases"]:
            params.append(pytest.param(document["function"], case, id=f"{path.stem}:{case['name']}"))
    return params


def matches(actual: Any, expected: Any, tolerance: float | None) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and matches(actual[k], v, tolerance) for k, v in expected.items())
    expected = number(expected)
    if isinstance(expected, float) or (isinstance(expected, int) and not isinstance(expected, bool) and isinstance(actual, float)):
        return actual is not None and actual == (
            pytest.approx(expected, abs=tolerance) if tolerance else pytest.approx(expected, rel=1e-6, abs=1e-9)
        )
    return actual == expected


@pytest.mark.parametrize(("function", "case"), load_cases())
def test_worked_example(function: str, case: dict) -> None:
    assert case.get("source"), "every case names where its expected numbers come from"
    run = ADAPTERS[function]
    if "raises" in case:
        with pytest.raises(ValueError, match=case["raises"]):
            run(case["input"])
        return
    actual = run(case["input"])
    assert matches(actual, case["expected"], case.get("tolerance")), {k: actual.get(k) for k in case["expected"]}
    for key in case.get("absent", []):
        assert key not in actual


def test_every_case_file_has_an_adapter_and_cases() -> None:
    files = sorted(CASES.glob("*.json"))
    assert len(files) >= 6
    for path in files:
        document = json.loads(path.read_text(encoding="utf-8"))
        assert document["function"] in ADAPTERS and document["cases"], path.name
