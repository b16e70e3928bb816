"""One trained difficulty predictor for the whole test session (evaluator/difficulty: the real all-MiniLM-L6-v2 with
its head), shared by the library's tests and the pages' tests.

The splits are written here (never PQPP's own files): captions built from everyday words, where two invented words
carry the signal, "vorplex" making a prompt easy (high scores) and "quandrel" hard. Training is small (the top
transformer layer and the head, a few epochs) but the code path is the one a full run takes. Under pytest-xdist the
first worker to ask trains it into the session's shared temporary folder, behind a file lock; the others load it.
"""

from __future__ import annotations

import csv
import json
import os
import random
from pathlib import Path

import pytest
from filelock import FileLock

HEADER = ["id", "image_id", "best_caption", "glide_score", "sdxl_score", "avg_generative_score"]
THINGS = ["dog", "kitchen", "bus", "tree", "boat", "clock", "pizza", "horse", "bench", "kite", "train", "chair"]
PLACES = ["by the river", "in a park", "on a street", "at night", "near a window", "on a hill"]
MARKERS = {"vorplex": (2.0, 1.5), "quandrel": (0.5, -1.0)}  # word -> (sdxl, glide)
QUICK = {"frozen_layers": 5, "epochs": 4, "batch_size": 8, "lr": 3e-4, "head_lr": 3e-3, "hidden": 64, "warmup": 0.0}


def fixture_rows(count: int, seed: int) -> list[list[object]]:
    """Rows in PQPP's layout: each caption holds one marker; its scores are the marker's plus a little noise."""
    rng = random.Random(seed)
    rows = []
    for k in range(count):
        marker = list(MARKERS)[k % 2]
        sdxl, glide = (min(2.0, max(-1.0, base + rng.uniform(-0.3, 0.3))) for base in MARKERS[marker])
        caption = f"A {marker} {rng.choice(THINGS)} {rng.choice(PLACES)} with a {rng.choice(THINGS)}."
        rows.append([1000 * seed + k, 500 + k, caption, glide, sdxl, (sdxl + glide) / 2])
    return rows


def write_splits(folder: Path, sizes=(64, 24, 24)) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for seed, (name, size) in enumerate(zip(("train", "validation", "test"), sizes, strict=True)):
        with (folder / f"{name}.csv").open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(HEADER)
            writer.writerows(fixture_rows(size, seed))
    return folder


@pytest.fixture(scope="session")
def splits_dir(tmp_path_factory) -> Path:
    return write_splits(tmp_path_factory.mktemp("pqpp-fixture"))


@pytest.fixture(scope="session")
def trained(splits_dir, tmp_path_factory) -> tuple[Path, dict, list[tuple[int, int]]]:
    """(artefact folder, manifest, the progress calls the training made), trained once per session."""
    from evaluator import difficulty

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, the same for every xdist worker of this run
    out, progress = shared / "difficulty-predictor", shared / "difficulty-progress.json"
    with FileLock(shared / "difficulty-predictor.lock"):
        if not (out / "manifest.json").exists():
            seen: list[tuple[int, int]] = []
            difficulty.train(write_splits(shared / "difficulty-splits"), out, seed=0, progress=lambda d, t, _: seen.append((d, t)), **QUICK)
            progress.write_text(json.dumps(seen))
    return out, json.loads((out / "manifest.json").read_text()), [tuple(p) for p in json.loads(progress.read_text())]
