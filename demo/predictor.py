"""The demo's prompt difficulty predictor: trained on what the demo judged, so its pages show predicted scores.

A deployer trains the predictor from their own copy of PQPP's splits (`manage.py train_difficulty --pqpp PATH`) and
applies it (`manage.py predict_difficulty`). The demo has no such data, so after its boards are judged it writes
splits of its own in PQPP's layout, one row per task: the task's brief as predicted (tasks.difficulty.task_text),
and as its score the mean judged task score (0–100) over the published entries, mapped onto PQPP's −1..2 scale (the
demo has no per-generator scores, so the two auxiliary columns repeat it). Rows go to train, validation and test by
the hash of their text. The training code is the deployer's (evaluator.difficulty.train_seeds), with small
hyperparameters; the artefact goes to ATELIER_DIFFICULTY_MODEL, installed whole as the command installs it, and the
deployer's `predict_difficulty` applies it.

Its manifest carries a `label` and a `demo` record, and its version starts with "demo-", so every page, download
and /readyz that names the predictor says it is the demo's, not a real difficulty model. A predictor already
installed that is not the demo's (a deployer's) is left as it is. Run again on the same judged scores it trains
nothing and scores only texts not yet scored.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from tqdm import tqdm

from evaluation.models import Figure, Status, Submission
from evaluator import difficulty as library
from evaluator.difficulty.artefact import MANIFEST, install, staging_beside
from evaluator.difficulty.data import SCORE_RANGE
from evaluator.judge.config import DEMO_JUDGE_MODEL
from evaluator.metrics.scopes import Scope
from tasks import difficulty
from tasks.models import Task

VERSION_PREFIX = "demo-"
LABEL = "demo predictor: trained on the demo's own {judge} scores ({tasks} tasks), not a real difficulty model"
MIN_TASKS = 8  # two rows at least in validation and test (they report correlations), four to train on
HEADER = ["best_caption", "sdxl_score", "glide_score", "avg_generative_score"]
# Small and quick on two cores: the top transformer layer and the head (the rest as pre-trained), and a brief's first
# 32 tokens (the demo's briefs run to about 130; scoring its ~450 texts takes about half the time of the default 64).
HYPERPARAMETERS = {
    "frozen_layers": 5,
    "epochs": 6,
    "batch_size": 8,
    "lr": 3e-4,
    "head_lr": 3e-3,
    "hidden": 64,
    "warmup": 0.0,
    "max_length": 32,
}


def judged_tasks() -> tuple[dict[str, float], set[str]]:
    """(text -> mean judged task score 0–100 over the published entries, the judges that scored them). A text shared
    by several packs' tasks (the showcase reuses the original pack's) is one row, its scores pooled."""
    published = Submission.objects.filter(published=True, status=Status.DONE)
    judges = {s.pk: (s.judge_id, s.judge_version) for s in published.only("pk", "judge_id", "judge_version")}
    figures = Figure.objects.filter(submission_id__in=judges, scope=Scope.TASK, value__isnull=False)
    rows = figures.values_list("submission_id", "submission__pack_id", "key", "judge_id", "judge_version", "value")
    found = [(sub, pack, key, value) for sub, pack, key, *judge, value in rows if tuple(judge) == judges[sub]]  # each entry's own judge
    tasks = {(t.pack_id, t.task_id): t for t in Task.objects.filter(pack_id__in={p for _, p, _, _ in found})}
    scores: dict[str, list[float]] = defaultdict(list)
    used = set()
    for sub, pack, key, value in found:
        text = difficulty.task_text(tasks[(pack, key)]) if (pack, key) in tasks else ""
        if text.strip():
            scores[text].append(value)
            used.add(judges[sub][0])
    return {text: sum(v) / len(v) for text, v in scores.items()}, used


def on_pqpp_scale(score: float) -> float:
    low, high = SCORE_RANGE
    return round(low + (high - low) * min(max(score, 0.0), 100.0) / 100.0, 4)


def write_splits(folder: Path, scores: dict[str, float]) -> None:
    """train/validation/test.csv in PQPP's layout, the texts in the order of their hash: a fifth (two at least) to
    validation, as many to test, the rest to train."""
    by_hash = sorted(scores, key=difficulty.text_sha)
    held = max(2, len(by_hash) // 5)
    splits = {"validation": by_hash[:held], "test": by_hash[held : 2 * held], "train": by_hash[2 * held :]}
    for name, texts in splits.items():
        with (folder / f"{name}.csv").open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(HEADER)
            writer.writerows([t, *[on_pqpp_scale(scores[t])] * 3] for t in texts)


def _train(splits: Path, count: int, judge: str) -> dict:
    """Train with the deployer's code into a folder beside ATELIER_DIFFICULTY_MODEL, label it, install it whole."""
    target, staging = staging_beside(settings.ATELIER_DIFFICULTY_MODEL)
    try:
        with tqdm(total=1, unit="step", desc="demo predictor", dynamic_ncols=True) as bar:

            def progress(done: int, total: int, what: str) -> None:
                bar.total = total
                bar.set_description(f"demo predictor: {what}", refresh=False)
                bar.update(done - bar.n)

            quiet = logging.getLogger(library.train_seeds.__module__)  # its per-epoch log lines: the bar says as much
            level = quiet.level
            quiet.setLevel(logging.WARNING)
            try:
                manifest = library.train_seeds(splits, staging, seeds=(0,), progress=progress, **HYPERPARAMETERS)
            finally:
                quiet.setLevel(level)
        label = LABEL.format(judge=judge, tasks=count)
        manifest |= {
            "version": VERSION_PREFIX + manifest["version"],
            "label": label,
            "demo": {"tasks": count, "judge": judge, "labels": "mean judged task score (0-100) over published entries, on -1..2"},
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        install(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def demo_predictor(write: Callable[[str], None]) -> dict | None:
    """Train the demo's predictor when the judged scores changed since the installed one (or none is installed),
    then score every task brief and prompt not yet scored. Returns the installed manifest (None when none)."""
    installed = difficulty.installed()
    if installed and not installed.get("demo"):
        write(f"Difficulty predictor: {installed['version']} (installed by the deployer) is kept; the demo trains none.")
        return _apply(installed, write)
    scores, judges = judged_tasks()
    if len(scores) < MIN_TASKS:
        write(f"Difficulty predictor: {len(scores)} judged task(s), fewer than {MIN_TASKS}: no demo predictor trained.")
        return _apply(installed, write) if installed else None
    judge = "scripted-judge" if all(j.endswith(DEMO_JUDGE_MODEL) for j in judges) else "judged"
    with tempfile.TemporaryDirectory(prefix="atelier-demo-difficulty-") as folder:
        write_splits(Path(folder), scores)
        data_sha = library.read_splits(folder).sha256
        if (
            installed
            and installed["training_data"]["sha256"] == data_sha
            and HYPERPARAMETERS.items() <= installed["hyperparameters"].items()
        ):
            write(f"Difficulty predictor: {installed['version']} is up to date with the {len(scores)} judged tasks.")
        else:
            write(f"Training the demo's difficulty predictor on {len(scores)} judged task(s) (mean judged score per task)…")
            installed = _train(Path(folder), len(scores), judge)
            test = installed["metrics"]["test"]
            write(
                f"  {installed['version']} in {installed['training_seconds']:.0f} s; held-out tasks: Pearson {test['pearson']:.2f}, "
                f"Kendall {test['kendall']:.2f} ({installed['label']})"
            )
    return _apply(installed, write)


def _apply(manifest: dict, write: Callable[[str], None]) -> dict:
    """The deployer's `predict_difficulty`: every task brief, entry and call not yet scored by this predictor."""
    printed = io.StringIO()
    call_command("predict_difficulty", stdout=printed)
    write(f"  {printed.getvalue().strip()}; see /tasks/.")
    return manifest
