"""The demo's difficulty predictor (demo/predictor.py): trained by the deployer's code on the demo's own judged
task scores, installed where the deployer's command installs one, applied by `predict_difficulty`, and labelled as
the demo's on every page and on /readyz. Run again it trains nothing; a deployer's predictor is never replaced.

The judged scores are written as the board job leaves them (Figure rows of scope "task" on published entries), on
the showcase pack's 24 tasks: no rendering or judging here, so the test takes seconds, not the demo's minutes.
"""

from __future__ import annotations

import csv
import html
import json
import shutil

import pytest

from demo import predictor as module
from demo.predictor import demo_predictor, judged_tasks, on_pqpp_scale, write_splits
from demo.showcase import showcase_data
from evaluation.models import Figure, Status, Submission
from evaluator import difficulty as library
from evaluator.judge.config import DEMO_JUDGE_MODEL
from evaluator.metrics.scopes import Scope
from tasks import difficulty
from tasks.models import PredictedDifficulty
from tasks.services import pack_save

pytestmark = pytest.mark.sqlite_pass(
    reason="training and scoring run in Python; what it reads and writes are plain filters and the predictions table, tested on both databases in tests/test_difficulty.py"
)

JUDGE = f"openai:{DEMO_JUDGE_MODEL}"


@pytest.fixture
def judged(team):
    """The showcase pack with two published entries' task scores, and one unpublished entry's (never learnt)."""
    pack, _ = pack_save(data=showcase_data())
    tasks = list(pack.tasks.order_by("category", "task_id"))
    for n, (published, offset) in enumerate([(True, 0.0), (True, 10.0), (False, 90.0)]):
        submission = Submission.objects.create(
            team=team, pack=pack, prompter=f"p{n}", status=Status.DONE, published=published, judge_id=JUDGE, judge_version="v1"
        )
        Figure.objects.bulk_create(
            Figure(submission=submission, judge_id=JUDGE, judge_version="v1", scope=Scope.TASK, key=t.task_id, value=20 + 2 * i + offset)
            for i, t in enumerate(tasks)
        )
    return pack, tasks


def test_judged_scores_become_pqpp_layout_splits(db, judged, tmp_path):
    pack, tasks = judged
    scores, judges = judged_tasks()
    assert judges == {JUDGE} and len(scores) == 24  # one row per task text, the unpublished entry left out
    assert scores[difficulty.task_text(tasks[0])] == pytest.approx(25.0)  # the mean of 20 and 30
    assert (on_pqpp_scale(0), on_pqpp_scale(50), on_pqpp_scale(100)) == (-1.0, 0.5, 2.0)
    write_splits(tmp_path, scores)
    splits = library.read_splits(tmp_path)  # what `train_difficulty --pqpp` reads, checked as it checks it
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (16, 4, 4)
    assert {*splits.train.texts, *splits.validation.texts, *splits.test.texts} == set(scores)
    with (tmp_path / "train.csv").open(newline="") as handle:
        row = next(csv.DictReader(handle))
    assert float(row["avg_generative_score"]) == pytest.approx(on_pqpp_scale(scores[row["best_caption"]]))


@pytest.mark.django_db
def test_the_demo_trains_labels_and_applies_its_predictor_once(judged, client, settings):
    pack, tasks = judged
    lines: list[str] = []
    manifest = demo_predictor(lines.append)
    label = "demo predictor: trained on the demo's own scripted-judge scores (24 tasks), not a real difficulty model"
    assert manifest["label"] == label and manifest["version"].startswith("demo-pqpp-minilm-finetuned.1+")
    assert manifest["demo"]["tasks"] == 24 and manifest["hyperparameters"]["frozen_layers"] == module.HYPERPARAMETERS["frozen_layers"]
    installed = library.load(settings.ATELIER_DIFFICULTY_MODEL)  # where the deployer's command installs one, hashes checked
    assert installed.manifest == manifest == difficulty.installed()
    assert sorted(p.name for p in settings.ATELIER_DIFFICULTY_MODEL.parent.iterdir()) == ["difficulty"]  # nothing left beside it
    texts = [difficulty.task_text(t) for t in tasks]
    predicted = difficulty.scores(texts)
    assert set(predicted) == set(texts) and all(-1.0 <= s <= 2.0 for s in predicted.values())
    assert predicted == pytest.approx(dict(zip(texts, installed.predict(texts))))
    assert any("Training the demo's difficulty predictor on 24 judged task(s)" in line for line in lines)
    assert any(label in line and "Pearson" in line for line in lines) and "24 prompt(s) scored now" in lines[-1]

    written = settings.ATELIER_DIFFICULTY_MODEL / "manifest.json"
    rows, created = PredictedDifficulty.objects.count(), written.stat().st_mtime_ns
    again: list[str] = []
    assert demo_predictor(again.append) == manifest  # the same judged scores: nothing retrained, nothing added
    assert PredictedDifficulty.objects.count() == rows and written.stat().st_mtime_ns == created
    assert "is up to date with the 24 judged tasks" in again[0] and "0 prompt(s) scored now" in again[-1]

    listed = html.unescape(client.get(f"/tasks/?pack={pack.pk}").content.decode())
    assert f"{predicted[texts[0]]:.2f}" in listed and 'id="predictor-label"' in listed and "Demo predictor: trained on" in listed
    page = html.unescape(client.get(f"/tasks/{pack.pk}/{tasks[0].task_id}/").content.decode())
    shown = page[page.index('id="predicted-score"') :]
    assert f"<strong>{predicted[texts[0]]:.2f}</strong> on −1..2" in shown and "Demo predictor: trained on" in shown
    assert "not a real difficulty model" in shown and manifest["version"] in shown
    ready = client.get("/readyz").json()["checks"]["predictor"]
    assert ready["ok"] and ready["detail"] == f"{manifest['version']} ({label})"


@pytest.mark.django_db
def test_too_few_judged_tasks_train_nothing(team, settings):
    lines: list[str] = []
    assert demo_predictor(lines.append) is None
    assert "0 judged task(s), fewer than 8: no demo predictor trained" in lines[0]
    assert not settings.ATELIER_DIFFICULTY_MODEL.exists() and not PredictedDifficulty.objects.exists()


@pytest.mark.django_db
def test_a_deployers_predictor_is_kept_and_applied(judged, settings, trained, client):
    shutil.copytree(trained[0], settings.ATELIER_DIFFICULTY_MODEL)
    before = json.loads((settings.ATELIER_DIFFICULTY_MODEL / "manifest.json").read_text())
    lines: list[str] = []
    assert demo_predictor(lines.append) == before
    assert "(installed by the deployer) is kept; the demo trains none" in lines[0]
    assert json.loads((settings.ATELIER_DIFFICULTY_MODEL / "manifest.json").read_text()) == before
    assert set(PredictedDifficulty.objects.values_list("predictor", flat=True)) == {before["version"]}
    listed = client.get("/tasks/").content.decode()
    assert 'id="predictor-label"' not in listed and "trained on PQPP's captions" in listed
