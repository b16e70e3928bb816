"""A submission through real Redis and a real RQ worker, the smoke diffusers backends and the
real openai client talking to the scripted local judge server; then the leaderboard and CSV."""

from __future__ import annotations

import csv
import io
from statistics import fmean

import pytest
from django_rq import get_connection
from rq import Queue

from evaluation.models import Judgement, Render, Submission
from evaluation.workers import AtelierWorker
from submissions.services import submission_create, submissions_publish
from tests.openai_server import EXPECTED_SUBJECTIVE_SCORE, expected_checklist_value

SUBJECTIVE_0_100 = (EXPECTED_SUBJECTIVE_SCORE - 1) / 4 * 100


def expected_task_score(task, clip_by_backend: dict[str, float]) -> float:
    """The documented formula, worked out by hand for the scripted judge's fixed answers.
    clip_by_backend: the task's mean target-similarity score per backend (IM with a target only)."""
    prompt_part = fmean([SUBJECTIVE_0_100, expected_checklist_value(task.prompt_checklist) * 100])
    checklist = expected_checklist_value(task.image_checklist) * 100
    if task.category != "IM":  # AtelierEval's route: OE and CO add image-subjective
        image_part = fmean([checklist, SUBJECTIVE_0_100])
    elif clip_by_backend:  # IM adds target similarity (0–100) where the task has a target
        image_part = fmean(fmean([checklist, clip]) for clip in clip_by_backend.values())
    else:
        image_part = checklist
    return fmean([prompt_part, image_part])


@pytest.mark.django_db(transaction=True)
def test_rq_worker_evaluates_submission_and_leaderboard_shows_it(
    redis_url, settings, shipped_backends, scripted_judge, team, sample_pack, example_prompts, client
):
    settings.REDIS_URL = redis_url
    submission = submission_create(team=team, pack=sample_pack, prompter="Model RQ", filename="p.jsonl", data=example_prompts)
    connection = get_connection("default")
    assert Queue("default", connection=connection).count == 1
    assert Submission.objects.get(pk=submission.pk).status == "queued"

    worker = AtelierWorker([Queue(name, connection=connection) for name in settings.ATELIER_QUEUES], connection=connection)
    assert worker.work(burst=True)

    submission.refresh_from_db()
    assert submission.status == "done", submission.error
    assert submission.judge_id == "openai:scripted-judge"
    assert not Render.objects.exclude(status="ok").exists()
    # im-s02 ships no target image (only a seed prompt), so its target similarity is skipped, not failed.
    not_ok = set(Judgement.objects.exclude(status="ok").values_list("entry__task__task_id", "skill", "status"))
    assert not_ok == {("im-s02", "target_similarity", "skipped")}
    metric = Judgement.objects.filter(skill="target_similarity")
    assert len(scripted_judge.requests) == Judgement.objects.count() - metric.count()  # CLIP scores need no model call

    clip: dict[str, dict[str, list[float]]] = {}
    for task_id, backend, value in metric.filter(status="ok").values_list("entry__task__task_id", "render__backend", "value"):
        assert 0 <= value <= 100
        clip.setdefault(task_id, {}).setdefault(backend, []).append(value)
    tasks = {e.task.task_id: e.task for e in submission.entries.select_related("task")}
    per_category = {}
    for task in tasks.values():
        clip_by_backend = {b: fmean(v) for b, v in clip.get(task.task_id, {}).items()}
        per_category.setdefault(task.category, []).append(expected_task_score(task, clip_by_backend))
    expected = {cat: fmean(v) for cat, v in per_category.items()}
    scores = {(s.scope, s.key): s.value for s in submission.figures.all()}
    for cat, value in expected.items():
        assert scores[("category", cat)] == pytest.approx(value)
    assert scores[("overall", "overall")] == pytest.approx(fmean(expected.values()))
    assert scores[("skill", "prompt_subjective")] == pytest.approx(EXPECTED_SUBJECTIVE_SCORE)

    submissions_publish(submissions=Submission.objects.filter(pk=submission.pk))
    assert "Model RQ" not in client.get("/").content.decode()  # the board's rows are built by its job, on a worker
    assert worker.work(burst=True)
    page = client.get("/").content.decode()
    assert "Model RQ" in page and f"{scores[('overall', 'overall')]:.1f}" in page
    rows = list(csv.DictReader(io.StringIO(b"".join(client.get(f"/submissions/{submission.pk}/breakdown.csv").streaming_content).decode())))
    assert {float(r["prompt_subjective"]) for r in rows} == {float(EXPECTED_SUBJECTIVE_SCORE)}
    co = next(r for r in rows if r["task_id"] == "co-s01")
    assert float(co["image_accuracy"]) == pytest.approx(expected_checklist_value(tasks["co-s01"].image_checklist))


@pytest.mark.django_db(transaction=True)
def test_judge_server_errors_are_recorded_failures_not_scores(settings, scripted_judge, team, sample_pack, owner_client):
    from tests.openai_server import Reply

    scripted_judge.default = lambda request: Reply(status=500, content="boom")
    data = b'{"task_id": "oe-s01", "prompt": "bread at dawn"}'
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=data)
    submission.refresh_from_db()
    assert submission.status == "incomplete" and "prompt_subjective 100% missing" in submission.error  # never ranked
    failed = Judgement.objects.filter(submission=submission)
    assert failed.count() > 0 and not failed.exclude(status="failed").exists()
    assert all("500" in j.reason or "InternalServerError" in j.reason for j in failed)
    overall = submission.figures.get(scope="overall")
    assert overall.value is None and overall.failures == failed.count()
    page = owner_client.get(f"/submissions/{submission.pk}/").content.decode()
    missing = page.split("<h2>Judgements per skill</h2>")[1].split("</table>")[0]
    assert "<td>prompt_subjective</td>" in missing and "100 %" in missing


@pytest.mark.django_db(transaction=True)
def test_missing_weights_fail_the_submission_with_the_model_named(settings, tmp_path, team, sample_pack):
    from evaluation import runtime

    backends = tmp_path / "backends.json"
    backends.write_text(
        '{"backends": [{"name": "local-sd", "model": "%s", "pipeline": "StableDiffusionPipeline", "steps": 1, "guidance": 0.0,'
        ' "width": 64, "height": 64, "scheduler": null, "dtype": "float32", "images_per_prompt": 1, "seed_policy": "derived"}]}'
        % (tmp_path / "no-such-weights")
    )
    settings.ATELIER_BACKENDS_FILE = backends
    settings.ATELIER_QUEUES = ("default", "judge", "render-local-sd")
    runtime.reset()
    submission = submission_create(
        team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=b'{"task_id": "oe-s01", "prompt": "x"}'
    )
    submission.refresh_from_db()
    assert submission.status == "failed"
    assert "no image could be rendered" in submission.error and "no-such-weights" in submission.error
