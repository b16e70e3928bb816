"""Averaging trained predictors: every member of several artefacts (say the default run and an end-to-end one) in
one artefact, kept only when it does better on PQPP's validation split than each input alone.

The inputs must predict alike: the same base model, head size, token limit, score scale and target normalisation
(they are, when trained on the same splits). The combination averages all members' outputs, as one artefact of
several seeds does. Choosing reads validation only; test is read once per model, for the report.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from .artefact import MANIFEST, file_sha256, install, load, staging_beside, version_of
from .data import read_splits
from .training import correlations

ALIKE = ("base_model", "scale", "normalisation")  # manifest fields a prediction reads besides the weights
ALIKE_HYPERPARAMETERS = ("hidden", "max_length")


def _problems(manifests: list[dict[str, Any]], folders: list[Path]) -> list[str]:
    first = manifests[0]
    found = [
        f"{folder}: {field} differs from {folders[0]}'s"
        for folder, manifest in zip(folders[1:], manifests[1:])
        for field in ALIKE
        if manifest.get(field) != first.get(field)
    ]
    found += [
        f"{folder}: hyperparameter {name} is {manifest['hyperparameters'].get(name)!r}, {folders[0]}'s {first['hyperparameters'].get(name)!r}"
        for folder, manifest in zip(folders[1:], manifests[1:])
        for name in ALIKE_HYPERPARAMETERS
        if manifest["hyperparameters"].get(name) != first["hyperparameters"].get(name)
    ]
    return found


def _build(folders: list[Path], staging: Path, manifests: list[dict[str, Any]]) -> dict[str, Any]:
    """The combined artefact in `staging`: the first input's tokenizer and config, every input's weights."""
    for item in folders[0].iterdir():
        if item.is_file() and item.name != MANIFEST and not item.name.endswith(".safetensors"):
            shutil.copy2(item, staging / item.name)
    weights = []
    for run, (folder, manifest) in enumerate(zip(folders, manifests)):
        for member in manifest["weights"]:
            file = f"model-run{run}-{member['member']}.safetensors"
            shutil.copy2(folder / member["file"], staging / file)
            (staging / file).chmod(0o644)
            weights.append({"file": file, "sha256": file_sha256(staging / file), "member": f"run{run}-{member['member']}"})
    return {
        **{k: v for k, v in manifests[0].items() if k not in ("version", "weights", "metrics", "seed", "seeds", "training_seconds")},
        "version": version_of(weights),
        "weights": weights,
        "seed": "combined",
        "seeds": [],
        "combined_from": [
            {"version": m["version"], "seed": m.get("seed"), "hyperparameters": m["hyperparameters"], "metrics": m.get("metrics")}
            for m in manifests
        ],
        "training_seconds": sum(m.get("training_seconds", 0) for m in manifests),
    }


def _scores(folder: Path, splits) -> dict[str, dict[str, float]]:
    predictor = load(folder)
    return {
        split.name: correlations(predictor.predict(list(split.texts)), list(split.target)) for split in (splits.validation, splits.test)
    }


def combine(folders: list[str | Path], out: str | Path, pqpp: str | Path) -> tuple[list[dict[str, Any]], str]:
    """Evaluate each input and their combination; install in `out` whichever does best on validation (Pearson plus
    Kendall, ties to the fewest members). Returns one row per candidate ({name, version, validation, test}) and
    the name of the one kept."""
    folders = [Path(f) for f in folders]
    manifests = [load(f).manifest for f in folders]
    if problems := _problems(manifests, folders):
        raise ValueError("these predictors cannot be averaged: " + "; ".join(problems))
    splits = read_splits(pqpp)
    rows = [{"name": str(folder), "version": m["version"], **_scores(folder, splits)} for folder, m in zip(folders, manifests)]
    target, staging = staging_beside(out)
    try:
        manifest = _build(folders, staging, manifests)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        combined = {"name": "combined", "version": manifest["version"], **_scores(staging, splits)}
        rows.append(combined)
        best = max(rows, key=lambda r: (r["validation"]["pearson"] + r["validation"]["kendall"], r is not combined))
        if best is combined:
            manifest["metrics"] = {"validation": combined["validation"], "test": combined["test"]}
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        else:
            shutil.rmtree(staging)
            shutil.copytree(best["name"], staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    install(staging, target)
    return rows, best["name"]
