"""Predicted difficulty where teams decide: the submission page and its breakdown download as soon as the prompts
are in (before any image), an endpoint run's call log, the task browser, and the judge page's agreement with this
site's judge. Without a predictor every page works and says how to train one.

The predictor is a real one (all-MiniLM-L6-v2 and a head, evaluator.difficulty), the session's (tests/predictor.py),
trained briefly on captions written there: the tests check where its scores go, not how good they are.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from django.core.management import call_command
from scipy import stats

from evaluation.figures import submission_units
from evaluation.models import PromptCall, Status, Submission
from evaluator import difficulty as library
from evaluator.metrics.aggregate import sample_image_scores
from evaluator.recompute import differences
from ratings.models import StoredReport
from submissions.services import submission_create, submissions_publish
from tasks import difficulty
from tasks.models import PredictedDifficulty

HINT = "manage.py train_difficulty --pqpp PATH"


@pytest.fixture
def predictor(settings, trained):
    """The session's predictor (tests/predictor.py), installed for this test."""
    settings.ATELIER_DIFFICULTY_MODEL = trained[0]
    return library.load(trained[0])


def text_of(response) -> str:
    return response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_without_a_predictor_the_pages_say_how_to_train_one(client, owner_client, team, sample_pack, example_prompts, settings, tmp_path):
    settings.ATELIER_DIFFICULTY_MODEL = tmp_path / "none"
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=example_prompts)
    for url in ("/tasks/", f"/submissions/{submission.pk}/", "/judge/"):
        page = text_of(owner_client.get(url))
        assert HINT in page and 'id="predictor-note"' in page, url
    assert not PredictedDifficulty.objects.exists()
    rows = list(
        csv.DictReader(io.StringIO(b"".join(owner_client.get(f"/submissions/{submission.pk}/breakdown.csv").streaming_content).decode()))
    )
    assert rows and all(r["predicted_score"] == "" and r["difficulty_predictor"] == "" for r in rows)


@pytest.mark.django_db(transaction=True)
def test_every_prompt_is_scored_on_upload_and_shown_on_the_page_and_in_the_download(
    predictor, owner_client, team, sample_pack, example_prompts
):
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=example_prompts)
    entries = list(Submission.objects.get(pk=submission.pk).entries.all())
    expected = dict(zip([e.text for e in entries], predictor.predict([e.text for e in entries])))
    assert difficulty.scores(expected) == pytest.approx(expected)  # the job scored every prompt, stored by text
    page = text_of(owner_client.get(f"/submissions/{submission.pk}/"))
    assert predictor.version in page and all(f"{score:.2f}" in page for score in expected.values())
    download = owner_client.get(f"/submissions/{submission.pk}/breakdown.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode())))
    assert rows and all(float(r["predicted_score"]) == pytest.approx(expected[r["prompt"]]) for r in rows)
    assert {r["difficulty_predictor"] for r in rows} == {predictor.version}


@pytest.mark.django_db(transaction=True)
def test_the_call_log_shows_each_calls_prediction(predictor, owner_client, team, sample_pack):
    submission = Submission.objects.create(
        team=team, pack=sample_pack, prompter="p", origin="endpoint", condition="plain", status=Status.PROMPTING
    )
    texts = ["A teapot on a windowsill, morning light", "A comet over a castle, oil painting"]
    for task, text in zip(sample_pack.tasks.order_by("task_id")[:2], texts):
        PromptCall.objects.create(submission=submission, task=task, status="ok", text=text)
    from evaluation.difficulty import predict_submission

    assert predict_submission(submission.pk) == 2 and predict_submission(submission.pk) == 0  # idempotent
    page = text_of(owner_client.get(f"/submissions/{submission.pk}/calls/"))
    assert all(f"{score:.2f}" in page for score in predictor.predict(texts))
    log = list(
        csv.DictReader(io.StringIO(b"".join(owner_client.get(f"/submissions/{submission.pk}/calls.csv").streaming_content).decode()))
    )
    assert [float(r["predicted_score"]) for r in log] == pytest.approx(predictor.predict([r["text"] for r in log]))


@pytest.mark.django_db(transaction=True)
def test_the_task_browser_shows_each_briefs_prediction_after_predict_difficulty(predictor, client, sample_pack):
    assert "predicted score of the brief" in text_of(client.get("/tasks/"))
    out = io.StringIO()
    call_command("predict_difficulty", stdout=out, stderr=io.StringIO())
    tasks = list(sample_pack.tasks.all())
    briefs = {difficulty.task_text(t) for t in tasks} - {""}
    assert f"{len(briefs)} prompt(s) scored now, 0 already scored" in out.getvalue()
    page = text_of(client.get("/tasks/"))
    scores = predictor.predict([difficulty.task_text(t) for t in tasks if difficulty.task_text(t)])
    assert all(f"{s:.2f}" in page for s in scores)
    # whether the spread tells the tasks apart, against the predictor's own error on its test split
    from tasks.selectors import prediction_spread

    spread = prediction_spread(list(scores), difficulty.installed())
    assert spread["error"] is not None and spread["error"] > 0
    said = page.split('id="prediction-spread"')[1].split("</p>")[0]
    assert f"span {min(scores):.2f} to {max(scores):.2f}" in said
    assert ("are told apart" in said) == (max(scores) - min(scores) > 2 * spread["error"]) != ("do not tell" in said)


@pytest.mark.django_db(transaction=True)
def test_the_judge_page_reports_agreement_with_the_judge_on_published_entries(
    predictor, client, team, sample_pack, example_prompts, tmp_path
):
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=example_prompts)
    assert "No published submission" in text_of(client.get("/judge/"))
    submissions_publish(submissions=Submission.objects.filter(pk=submission.pk))
    stored = StoredReport.objects.get(kind="difficulty")  # the board's rebuild sent its report's job (in-process: run already)
    assert stored.data["submissions"] == 1 and stored.computed_at is not None
    submission.refresh_from_db()
    observed = sample_image_scores(submission_units(submission, submission.judge_id, submission.judge_version))
    entries = {(e.task.task_id, e.sample_index): e.text for e in submission.entries.select_related("task")}
    pairs = [(predictor.predict([entries[k]])[0], v) for k, v in observed.items()]
    page = text_of(client.get("/judge/"))
    assert 'id="difficulty-agreement"' in page and predictor.version in page
    overall = page[page.index("<td>overall</td>", page.index('id="difficulty-agreement"')) :]
    assert f"{stats.pearsonr(*zip(*pairs)).statistic:.3f}" in overall[:600]
    assert f'<td class="num">{len(pairs)}</td>' in overall[:900]
    assert "smoke (random weights)" in page[page.index('id="difficulty"') : page.index('id="difficulty-agreement"')]  # the judged side
    assert f"Computed at {stored.computed_at:%Y-%m-%d %H:%M} UTC." in page.split('id="difficulty-computed-1"')[1].split("</p>")[0]
    # the board's release carries the same figures, and the recompute rebuilds them from the release's own files
    board = client.get("/").content.decode()
    link = board.split('id="board-download"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    path = tmp_path / "board.zip"
    path.write_bytes(b"".join(client.get(link).streaming_content))
    carried = json.loads(zipfile.ZipFile(path).read("board.json"))["difficulty"]
    assert carried["predictor"] == predictor.version and carried["submissions"] == 1
    row = next(r for r in carried["rows"] if r["group"] == "overall")
    assert f"{row['pearson']['value']:.3f}" in overall[:600] and row["pearson"]["n_items"] == len(pairs)
    assert differences(path) == []
    forged = json.loads(zipfile.ZipFile(path).read("board.json"))
    forged["difficulty"]["rows"][-1]["kendall"]["value"] = 0.99
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(tmp_path / "forged.zip", "w") as target:
        for name in source.namelist():
            target.writestr(name, json.dumps(forged) if name == "board.json" else source.read(name))
    assert [d.split(": published")[0] for d in differences(tmp_path / "forged.zip")] == ["difficulty.rows[group=overall].kendall.value"]


def test_a_sealed_imitation_tasks_seed_prompt_is_never_scored_for_the_public():
    from tasks.models import Task

    assert difficulty.task_text(Task(category="IM", split="dev", brief="Reproduce it", seed_prompt="a red sun")) == "a red sun"
    assert difficulty.task_text(Task(category="IM", split="test", brief="Reproduce it", seed_prompt="a red sun")) == ""
    assert difficulty.task_text(Task(category="OE", split="test", brief="A poster for a fair")) == "A poster for a fair"
