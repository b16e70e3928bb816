"""The difficulty predictor's pipeline (evaluator/difficulty): reading PQPP-layout splits, training the real
all-MiniLM-L6-v2 with its head, the artefact and its hashes, and `manage.py train_difficulty`.

The splits and the one predictor trained per test session come from tests/predictor.py (fixtures `splits_dir`, `trained`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluator import difficulty
from evaluator.difficulty.artefact import version_of
from tests.predictor import PLACES, QUICK, THINGS

ROOT = Path(__file__).resolve().parent.parent


def test_training_learns_the_planted_words(trained):
    out, manifest, seen = trained
    assert seen and seen[-1][0] == seen[-1][1] and [d for d, _ in seen] == sorted(d for d, _ in seen)  # the progress calls
    assert manifest["metrics"]["test"]["pearson"] > 0.8 and manifest["metrics"]["test"]["kendall"] > 0.5
    easy, hard = difficulty.load(out).predict(["A vorplex kite on a hill.", "A quandrel kite on a hill."])
    assert easy - hard > 1.0


def test_manifest_records_what_made_the_model_and_load_checks_it(trained, splits_dir):
    out, manifest, _ = trained
    on_disk = json.loads((out / "manifest.json").read_text())
    assert on_disk == manifest
    data = b"".join((splits_dir / f"{n}.csv").read_bytes() for n in ("train", "validation", "test"))
    assert manifest["training_data"]["sha256"] == hashlib.sha256(data).hexdigest()
    (weights,) = manifest["weights"]
    assert weights["sha256"] == hashlib.sha256((out / weights["file"]).read_bytes()).hexdigest()
    assert manifest["seed"] == 0 and manifest["hyperparameters"]["frozen_layers"] == 5
    assert manifest["training_seconds"] > 0 and manifest["libraries"]["torch"] and manifest["libraries"]["transformers"]
    assert set(manifest["metrics"]) == {"validation", "test"} and set(manifest["metrics"]["test"]) == {"pearson", "kendall"}
    predictor = difficulty.load(out)
    assert predictor.version == manifest["version"] and predictor.version in predictor.label
    assert predictor.manifest == manifest


def test_predictions_are_deterministic_batched_and_on_pqpps_scale(trained):
    predictor = difficulty.load(trained[0])
    texts = [f"A {'vorplex' if k % 3 else 'quandrel'} {THINGS[k % len(THINGS)]} {PLACES[k % len(PLACES)]}" for k in range(60)]
    first = predictor.predict(texts)
    assert predictor.predict(texts) == first
    assert predictor.predict(texts[::-1]) == first[::-1]  # a text's score does not depend on its neighbours
    assert all(-1.0 <= s <= 2.0 for s in first) and predictor.predict([]) == []
    with pytest.raises(TypeError, match="sequence of texts"):
        predictor.predict("one string")


def test_changed_weights_are_refused(trained, tmp_path):
    copy = shutil.copytree(trained[0], tmp_path / "copy")
    weights = copy / trained[1]["weights"][0]["file"]
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(difficulty.PredictorInvalid, match="does not match manifest.json"):
        difficulty.load(copy)


def test_a_missing_predictor_says_how_to_train_one(tmp_path):
    for folder in (tmp_path / "absent", tmp_path):
        with pytest.raises(difficulty.PredictorMissing, match=r"manage\.py train_difficulty --pqpp PATH"):
            difficulty.load(folder)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(difficulty.PredictorInvalid, match="unreadable manifest"):
        difficulty.load(tmp_path)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda rows: [r[:2] + r[3:] for r in rows], "test.csv, line 1: missing column(s) best_caption"),
        (
            lambda rows: rows[:3] + [rows[3][:3] + ["high"] + rows[3][4:]] + rows[4:],
            "test.csv, line 4, column 'glide_score': 'high' is not a number",
        ),
        (lambda rows: rows[:2] + [rows[2][:4] + [3.5] + rows[2][5:]] + rows[3:], "test.csv, line 3, column 'sdxl_score': 3.5 is outside"),
        (lambda rows: rows[:5] + [rows[5][:2] + ["  "] + rows[5][3:]] + rows[6:], "test.csv, line 6, column 'best_caption': empty caption"),
        (lambda rows: rows[:2] + [rows[2][:5] + [""]], "test.csv, line 3, column 'avg_generative_score': empty"),
    ],
    ids=["missing-column", "not-a-number", "out-of-range", "empty-caption", "empty-score"],
)
def test_bad_csv_is_refused_naming_file_line_and_column(splits_dir, tmp_path, change, message):
    folder = shutil.copytree(splits_dir, tmp_path / "bad")
    with (folder / "test.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    with (folder / "test.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows(change(rows))
    with pytest.raises(difficulty.SplitsError) as raised:
        difficulty.read_splits(folder)
    assert message in str(raised.value)


def test_missing_split_file_and_unknown_hyperparameter_are_named(splits_dir, tmp_path):
    folder = shutil.copytree(splits_dir, tmp_path / "two")
    (folder / "validation.csv").unlink()
    with pytest.raises(difficulty.SplitsError, match=r"validation\.csv: no such file"):
        difficulty.read_splits(folder)
    with pytest.raises(ValueError, match="unknown hyperparameter.*learning_rate"):
        difficulty.train(splits_dir, tmp_path / "out", learning_rate=1e-3)
    assert not (tmp_path / "out").exists()


def test_importing_the_package_does_not_import_torch():
    code = "import sys, evaluator.difficulty; print(sorted(m for m in ('torch', 'transformers', 'django') if m in sys.modules))"
    found = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


@pytest.mark.sqlite_pass(
    reason="training reads and writes files; installing into the site's folder only enqueues the boards' release (test_release_follows.py runs that on both databases)"
)
def test_command_trains_seeds_and_prints_the_table(splits_dir, trained, tmp_path, settings, capsys, db):
    settings.ATELIER_DIFFICULTY_MODEL = tmp_path / "models" / "difficulty"
    shutil.copytree(trained[0], settings.ATELIER_DIFFICULTY_MODEL)  # an installed predictor, which the new one replaces
    options = [f"--set={k}={v}" for k, v in QUICK.items() if k != "epochs"]
    call_command("train_difficulty", "--pqpp", str(splits_dir), "--seeds", "0", "1", "--epochs", "1", "--combine", "ensemble", *options)
    out, err = capsys.readouterr()
    for expected in (
        "seed 0",
        "seed 1",
        "mean ± std over 2 seeds",
        "seeds 0, 1 averaged",
        "fine-tuned BERT",
        "0.568",
        "fine-tuned CLIP",
        "0.600",
    ):
        assert expected in out, expected
    assert "100%" in err  # the progress bar
    manifest = difficulty.load(settings.ATELIER_DIFFICULTY_MODEL).manifest
    assert f"{manifest['version']} written to {settings.ATELIER_DIFFICULTY_MODEL}" in out
    assert len(manifest["weights"]) == 2 and [s["seed"] for s in manifest["seeds"]] == [0, 1]
    assert manifest["version"] != trained[1]["version"]
    assert sorted(p.name for p in settings.ATELIER_DIFFICULTY_MODEL.parent.iterdir()) == ["difficulty"]  # nothing left beside it

    # two predictors of different runs averaged: every member of both, and kept only if validation says so
    from evaluator.difficulty.combine import _build

    runs = [Path(trained[0]), settings.ATELIER_DIFFICULTY_MODEL]
    manifests = [difficulty.load(r).manifest for r in runs]
    staging = tmp_path / "averaged"
    staging.mkdir()
    (staging / "manifest.json").write_text(json.dumps(_build(runs, staging, manifests)))
    texts = ["A vorplex dog in a park with a kite.", "A quandrel bus at night with a clock.", "a cat", "a chair near a window", "a boat"]
    one, two, both = (difficulty.load(f).predict(texts) for f in (*runs, staging))
    inside = [i for i in range(len(texts)) if -1 < one[i] < 2 and -1 < two[i] < 2]  # not clipped to the scale by either
    assert inside and [both[i] for i in inside] == pytest.approx([(one[i] + 2 * two[i]) / 3 for i in inside], abs=1e-5)  # 1 + 2 members
    call_command("combine_difficulty", *map(str, runs), "--pqpp", str(splits_dir), "--out", str(tmp_path / "kept"))
    out = capsys.readouterr().out
    assert out.count("(validation ") == 3 and "combined (validation" in out and out.count("kept: ") == 1
    kept = difficulty.load(tmp_path / "kept").manifest
    chosen = out.split("kept: ")[1].split(" (validation")[0]
    assert kept["version"] == (difficulty.load(chosen).manifest["version"] if chosen != "combined" else version_of(kept["weights"]))
    copy = shutil.copytree(trained[0], tmp_path / "other-normalisation")
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, "normalisation": {"mean": [0.0], "std": [1.0]}}))
    with pytest.raises(CommandError, match="normalisation differs"):
        call_command("combine_difficulty", str(trained[0]), str(copy), "--pqpp", str(splits_dir), "--out", str(tmp_path / "no"))
    assert not (tmp_path / "no").exists()


def test_command_refuses_a_bad_folder_with_the_reason(tmp_path):
    with pytest.raises(CommandError, match="not a folder"):
        call_command("train_difficulty", "--pqpp", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out"))
    with pytest.raises(CommandError, match="expected NAME=VALUE"):
        call_command("train_difficulty", "--pqpp", str(tmp_path), "--set", "lr")
