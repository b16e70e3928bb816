"""One meaning, one definition (issue item 3): the IM target's lookup, the submission's snapshot of what scores it,
what a prompter may be shown, and which skill does what (the registry, never a skill's name); and (issue 43) the human
baseline's rows and the scores on the humans' tasks, computed by one set of functions for the site and the recompute."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from PIL import Image

from evaluation import judging, runtime
from evaluation.judging import target_for
from evaluation.models import CallStatus, Judgement, PromptCall, Render, Status
from evaluation.prompting import _feedback_config_hash
from evaluator.judge.config import DEFAULTS
from evaluator.judge.embedding_judge import EmbeddingJudge, clip_image_reader
from evaluator.judge.skills import ALL_SKILLS, feedback_skill, get_skill, skills_where
from evaluator.metrics import humans
from evaluator.metrics.aggregate import Unit
from evaluator.prompters.messages import Request
from studies.services import usable_tasks
from submissions.services import endpoint_create, endpoint_run_create, endpoint_test_call, submission_create
from tasks.models import TargetReference
from tasks.selectors import prompter_tasks, prompter_title, prompter_view
from tests.openai_server import request_text

ROOT = Path(__file__).resolve().parent.parent
IM_PROMPT = b'{"task_id": "im-s01", "prompt": "Red sun over three blue hills, flat poster"}\n'
RED, BLUE = (200, 0, 0), (0, 0, 200)


def _png(colour) -> ContentFile:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buffer, format="PNG")
    return ContentFile(buffer.getvalue())


def _reference(task, backend: str, config_hash: str, colour) -> None:
    reference = TargetReference(task=task, backend=backend, config_hash=config_hash, seed=0)
    reference.image.save(f"ref-{config_hash[:8]}.png", _png(colour))


def _backends_file(tmp_path, settings, change) -> None:
    """The test backends file, changed by `change` (a function of its list of backends), as this process's file."""
    data = json.loads((ROOT / "tests" / "backends-test.json").read_text())
    data["backends"] = change(data["backends"])
    path = tmp_path / "backends-changed.json"
    path.write_text(json.dumps(data))
    settings.ATELIER_BACKENDS_FILE = path
    runtime.reset()


# --- (a) the IM target: one lookup, by the config hash of the render being scored ----------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_render_is_scored_against_the_reference_of_the_config_that_made_it(team, sample_pack, settings, tmp_path):
    """The judge job looked the c_k reference up by the render's recorded config hash; the feedback and attempt paths
    (evaluation.units.target_for) by the hash of the config the backends file *now* gives the backend's name. Once the
    file changes (more steps for the same backend, then `render_targets --references`), a rescore of an old render
    would have been scaled by a reference rendered on a pipeline that did not make the image, and with the backend
    disabled the lookup by name raised KeyError. The render's own hash is right: c_k calibrates one pipeline."""
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=IM_PROMPT)
    submission.refresh_from_db()
    assert submission.status == Status.DONE, submission.error
    render = Render.objects.select_related("entry__task").get(entry__submission=submission, backend="smoke-sd")
    task = render.entry.task
    assert render.config_hash == runtime.backend_configs()["smoke-sd"].version_hash()  # made on the file's config
    _reference(task, "smoke-sd", render.config_hash, RED)

    _backends_file(tmp_path, settings, lambda backends: [{**b, "steps": 3} if b["name"] == "smoke-sd" else b for b in backends])
    now = runtime.backend_configs()["smoke-sd"].version_hash()
    assert now != render.config_hash  # same name, another pipeline
    _reference(task, "smoke-sd", now, BLUE)

    target = target_for(task, render.config_hash)
    assert target.reference.getpixel((0, 0)) == RED
    judgement = Judgement.objects.select_related("entry__task", "render").get(render=render, skill=feedback_skill(target=True))
    assert judging._target(judgement).reference.getpixel((0, 0)) == RED  # the judge job uses the same lookup
    # What the lookup by backend name found (the old units.target_for): the new config's reference, not the render's.
    assert target_for(task, now).reference.getpixel((0, 0)) == BLUE

    _backends_file(tmp_path, settings, lambda backends: [b for b in backends if b["name"] != "smoke-sd"])
    assert "smoke-sd" not in runtime.backend_configs()  # the backend is gone from the file: its renders still rescore
    assert target_for(task, render.config_hash).reference.getpixel((0, 0)) == RED
    non_im = sample_pack.tasks.exclude(category="IM").first()
    assert target_for(non_im, render.config_hash) is None


# --- (b) the snapshot, and (c) what a prompter is shown, on an endpoint run with feedback ----------------------------


@pytest.fixture
def endpoint(settings, prompter_server, scripted_judge, team):
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)
    settings.ATELIER_PROMPTER_MAX_RETRIES = 0
    settings.ATELIER_PROMPTER_TIMEOUT = 5.0
    return endpoint_create(
        team=team, name="scripted", base_url=prompter_server.base_url, model="scripted-prompter", api_key="sk-test", max_in_flight=4
    )


SNAPSHOT = ("judge_id", "judge_label", "judge_version", "judge_spec", "judge_endpoint", "backends")


@pytest.mark.django_db(transaction=True)
def test_uploads_and_endpoint_runs_record_one_snapshot_and_show_prompters_one_view(
    endpoint, prompter_server, team, sample_pack, settings, tmp_path
):
    expected = runtime.snapshot_fields(runtime.judge(), runtime.backend_configs())
    assert set(expected) == set(SNAPSHOT)
    upload = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=IM_PROMPT)
    run = endpoint_run_create(team=team, endpoint=endpoint, pack=sample_pack, rounds=2, feedback_backend="smoke-sd")
    for submission in (upload, run):
        submission.refresh_from_db()
        assert submission.status == Status.DONE, submission.error
        assert {name: getattr(submission, name) for name in SNAPSHOT} == expected

    # (c) which tasks: the run, a study and the test call all take prompter_tasks
    shown = list(prompter_tasks(sample_pack.tasks.order_by("category", "task_id")))
    hidden = [t.task_id for t in sample_pack.tasks.order_by("category", "task_id") if t not in shown]
    assert hidden == ["im-s02"]  # an IM task with no target image yet
    assert run.prompting["left_out"] == hidden
    assert set(PromptCall.objects.filter(submission=run).values_list("task__task_id", flat=True)) == {t.task_id for t in shown}
    assert list(usable_tasks(sample_pack, "")) == list(prompter_tasks(sample_pack.tasks.all()))
    test_call = endpoint_test_call(endpoint=endpoint, pack=sample_pack)
    assert test_call.task_id == prompter_tasks(sample_pack.tasks.filter(split="dev")).order_by("category", "task_id").first().task_id
    # which parts: every request's task text is prompter_view's, and the view has no hidden field
    assert set(Request.__dataclass_fields__) == {"category", "title", "brief", "constraints", "target_png"}
    for task in shown:
        view = prompter_view(task)
        assert (view.title, view.brief, view.constraints) == (prompter_title(task), task.brief, task.constraints or {})
        if task.category == "IM":  # its own title describes the target: a prompter never sees it
            assert view.title == f"Imitation task {task.task_id}"
            assert not any(task.title in request_text(r) for r in prompter_server.requests)
        assert (view.target_png is not None) == (task.category == "IM")
        assert prompter_view(task, with_image=False).target_png is None
        assert any(f"Title: {view.title}\nRequest: {view.brief}" in request_text(r) for r in prompter_server.requests)

    # (a) a feedback image is scored against the reference of the config that rendered it, recorded with it
    im = (
        PromptCall.objects.select_related("submission")
        .filter(submission=run, task__task_id="im-s01", feedback_status="ok", status=CallStatus.OK)
        .first()
    )
    made_on = runtime.backend_configs()["smoke-sd"].version_hash()
    assert im.feedback_details["config_hash"] == made_on
    _backends_file(tmp_path, settings, lambda backends: [{**b, "steps": 3} if b["name"] == "smoke-sd" else b for b in backends])
    assert _feedback_config_hash(im) == made_on != runtime.backend_configs()["smoke-sd"].version_hash()


# --- (d) the registry says which skill does what -------------------------------------------------------------------


def test_the_registry_names_the_feedback_and_clip_reading_skills():
    assert (feedback_skill(target=True), feedback_skill(target=False)) == ("target_similarity", "image_objective")
    assert get_skill(feedback_skill(target=True)).needs_target and not get_skill(feedback_skill(target=False)).needs_target
    assert skills_where(reads_clip_images=True) == ("target_similarity",)
    judge = EmbeddingJudge(DEFAULTS)
    readers = {skill for skill in ALL_SKILLS if clip_image_reader(judge, skill) is not None}
    assert readers == {"target_similarity", "image_objective"}  # every judge's CLIP metric, and this judge's image checklist


SKILL_NAME_FREE = [
    "tasks",
    "teams",
    "evaluation",
    "submissions",
    "leaderboard",
    "ratings",
    "studies",
    "atelier",
    "demo",
    "evaluator/judge/embedding_judge.py",
    "evaluator/prompters",
]


def _skill_names_in(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in ALL_SKILLS and id(node) not in docstrings
    ]


def test_no_code_outside_the_registry_and_routes_names_a_skill():
    """docs/architecture-notes.md: nothing outside the skill registry (and the routes, which are data) decides what a
    skill is by reading its name. Migrations keep the names they were written with."""
    found = []
    for entry in SKILL_NAME_FREE:
        paths = [ROOT / entry] if entry.endswith(".py") else (ROOT / entry).rglob("*.py")
        found += [hit for path in paths if "migrations" not in path.parts for hit in _skill_names_in(path)]
    assert found == []


@pytest.mark.django_db(transaction=True)
def test_a_render_planned_on_another_config_is_not_made_on_the_new_one(team, sample_pack):
    from evaluation.models import PromptEntry, Submission
    from evaluation.rendering import render_entry

    submission = Submission.objects.create(team=team, pack=sample_pack, prompter="p", status=Status.RENDERING)
    entry = PromptEntry.objects.create(submission=submission, task=sample_pack.tasks.get(task_id="oe-s01"), text="a red door")
    backend, config = next(iter(runtime.backend_configs().items()))
    stale = Render.objects.create(entry=entry, backend=backend, image_index=0, seed=1, config_hash="0" * 16, prompt_sha="s")
    render_entry(entry.pk, backend)
    stale.refresh_from_db()
    assert stale.status == "failed" and "no longer configured as it was" in stale.error and not stale.image
    current = Render.objects.create(entry=entry, backend=backend, image_index=1, seed=2, config_hash=config.version_hash(), prompt_sha="s")
    render_entry(entry.pk, backend)
    current.refresh_from_db()
    assert current.status == "ok" and current.image


# --- (e) the human baseline's numbers: one definition for the site and the recompute (issue 43) --------------------


def _person(tier: str, scores: dict[str, float], entries: int, completed: str | None, scripted: bool = False) -> humans.Participant:
    units = [Unit(t, t[:2].upper(), 0, "prompt_rubric", "ok", v, scale="score_0_100", composite=True) for t, v in scores.items()]
    return humans.Participant(tier, scripted, units, entries, "Pilot", "p1", completed)


def test_human_rows_pool_each_tier_with_each_participant_a_sample_and_people_apart_from_scripts():
    rows = humans.human_rows(
        [
            _person("novice", {"oe-1": 40.0, "co-1": 80.0}, 2, "2024-05-02T10:00:00"),
            _person("skilled", {"oe-1": 60.0}, 1, "2024-05-01T09:00:00"),
            _person("skilled", {"oe-1": 10.0}, 1, None, scripted=True),
        ]
    )
    assert [(r["scripted"], r["tier"]) for r in rows] == [
        (False, "novice"),
        (False, "skilled"),
        (False, "all"),
        (True, "skilled"),
        (True, "all"),
    ]
    people = rows[2]
    assert {k: people[k] for k in ("participants", "tasks_per_participant", "tasks", "protocols", "studies", "first", "last")} == {
        "participants": 2,
        "tasks_per_participant": 1.5,
        "tasks": ["co-1", "oe-1"],
        "protocols": ["p1"],
        "studies": ["Pilot"],
        "first": "2024-05-01T09:00:00",
        "last": "2024-05-02T10:00:00",
    }

    def value(row: dict, scope: str, key: str) -> tuple[float, int]:
        return next((f["value"], f["n"]) for f in row["figures"] if (f["scope"], f["key"]) == (scope, key))

    assert value(people, "task", "oe-1") == (50.0, 2)  # the mean over the two people who did it, each a sample
    assert value(people, "task", "co-1") == (80.0, 1)
    assert value(people, "overall", "overall") == (65.0, 2)  # mean of the OE (50) and CO (80) categories
    assert value(rows[0], "overall", "overall") == (60.0, 2)  # the novice alone: (40 + 80) / 2
    assert value(rows[4], "overall", "overall") == (10.0, 1) and rows[4]["first"] is None  # the script, never pooled with people


def test_the_humans_tasks_and_every_entrys_score_on_them():
    people, scripts = ("all", False, ["co-1", "oe-1"]), ("all", True, ["oe-1"])
    assert humans.common_tasks([("novice", False, ["oe-1"]), scripts, people], 3) == (["co-1", "oe-1"], True)
    assert humans.common_tasks([people], 2) == (["co-1", "oe-1"], False)  # every task of the board: no common scores
    assert humans.common_tasks([scripts], 3) == (["oe-1"], True) and humans.common_tasks([], 3) == ([], False)
    scores = {1: {"oe-1": 50.0, "oe-2": 70.0, "co-1": 20.0, "im-1": 90.0}, 2: {"im-1": 10.0}, 3: {"oe-1": None}}
    categories = {"oe-1": "OE", "oe-2": "OE", "co-1": "CO", "im-1": "IM"}
    # entry 1: OE (50 + 70) / 2 = 60 and CO 20, so 40; entries 2 and 3 have no score on these tasks and are left out
    assert humans.common_task_scores(scores, ["co-1", "oe-1", "oe-2"], categories) == {1: 40.0}


def test_the_site_and_the_recompute_compute_the_human_numbers_with_those_functions():
    """The rows the site stores, the common-task scores its page and download show and those the recompute rebuilds
    come from evaluator.metrics.humans (tests/test_scripted_participants.py checks the stored rows against its output)."""
    callers = {
        "studies/humans.py": {"human_rows"},
        "leaderboard/selectors.py": {"common_tasks", "common_task_scores"},
        "evaluator/recompute/humans.py": {"human_rows", "common_tasks", "common_task_scores"},
    }
    for path, names in callers.items():
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        called = {
            n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
        }
        assert names <= called, path
        if path != "leaderboard/selectors.py":  # (its other sections take means of their own)
            assert not {"figures", "task_figures", "fmean"} & called, f"{path} pools or averages by itself"
