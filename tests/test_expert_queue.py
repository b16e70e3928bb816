"""The expert rater queue: the role, filling the queue, /rate/ and what a rating writes (and never half-writes)."""

from __future__ import annotations

import html
import importlib
import io
import json

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.files.base import ContentFile
from django.core.management import CommandError, call_command
from PIL import Image

from evaluation.models import Exemplar, Judgement, PromptEntry, Render, Submission, UnitStatus
from evaluator.judge.types import IMAGE_DIMENSIONS, PROMPT_DIMENSIONS
from ratings.models import ExpertRating, Pool, RatingAssignment, TaskPool
from ratings.services import QueueError, rating_queue_fill
from submissions.services import submission_create

GROUP = "Expert raters"
HIDDEN_GROUP = "Hidden-item raters"
PROMPTS = {
    "oe-s01": "Hand-painted gouache of bread loaves on a counter, warm morning light, no text",
    "oe-s02": "Soft abstract shapes in indigo and teal, calm, dark, no people",
    "co-s01": "Flat vector seed packet, three orange tomatoes, words SUNSET PEAR",
    "co-s02": "Blue sign, white arrow right, FOSSIL HALL",
    "im-s01": "Red sun over three blue hills, flat poster",
    "im-s02": "Brass key on teal wood from above",
}


# --- helpers (also used by test_browser_rater.py) ------------------------------------------------


def png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def rendered_submission(team, pack, prompter: str = "secret-prompter") -> Submission:
    """A finished submission with one OK image per prompt, made directly: the queue only needs the rows
    (test_exemplar_ratings_never_reach_the_judge_agreement goes through the real render and judge path)."""
    submission = Submission.objects.create(team=team, pack=pack, prompter=prompter, status="done")
    for n, task in enumerate(pack.tasks.order_by("task_id")):
        entry = PromptEntry.objects.create(submission=submission, task=task, text=PROMPTS.get(task.task_id, f"a prompt for {task.task_id}"))
        render = Render(
            entry=entry, backend="smoke-sd", image_index=0, seed=n, config_hash="c" * 8, prompt_sha="p" * 8, status=UnitStatus.OK
        )
        render.image.save(f"{submission.pk}-{n}.png", ContentFile(png((40 * n, 90, 160))), save=True)
    return submission


def expert(django_user_model, username: str, password: str = "pw-expert-123", hidden: bool = False):
    """A user in the "Expert raters" group, and with `hidden` in "Hidden-item raters" too (made again here:
    transactional tests flush the migrations' rows)."""
    user = django_user_model.objects.create_user(username, password=password)
    for name, codename in ((GROUP, "rate_items"), *([(HIDDEN_GROUP, "rate_hidden_items")] if hidden else [])):
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(Permission.objects.get(codename=codename, content_type__app_label="ratings"))
        user.groups.add(group)
    return django_user_model.objects.get(pk=user.pk)  # fresh: permissions are cached per user object


def full_answers(assignment: RatingAssignment, score: int = 4, rationale: str = "Clear and specific; the image matches.") -> dict:
    task = assignment.entry.task
    data = {f"prompt-{d}": str(score) for d in PROMPT_DIMENSIONS} | {f"image-{d}": str(score) for d in IMAGE_DIMENSIONS}
    data |= {f"prompt-check-{n}": "1" for n in range(1, len(task.prompt_checklist) + 1)}
    data |= {f"image-check-{n}": "0" for n in range(1, len(task.image_checklist) + 1)}
    return data | {"rationale": rationale}


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def experts(transactional_db, django_user_model):
    """Experts allowed to see hidden checklists, so every item of the sample pack can be queued (test_hidden_items.py: the others)."""
    return [expert(django_user_model, name, hidden=True) for name in ("ana", "ben", "cy")]


@pytest.fixture
def rendered(team, sample_pack):
    return rendered_submission(team, sample_pack)


def queue(submission, raters, **options) -> int:
    return rating_queue_fill(submissions=Submission.objects.filter(pk=submission.pk), raters=raters, **({"items": 6} | options)).created


# --- the role ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_migration_creates_the_expert_raters_group_with_the_permission():
    # The group is a data migration's row, which a transactional test run earlier on this xdist worker may have
    # flushed: the migration's own (idempotent) function makes it again, then the row is checked.
    from django.apps import apps

    importlib.import_module("ratings.migrations.0004_expert_raters_group").create_group(apps, None)
    group = Group.objects.get(name=GROUP)
    assert list(group.permissions.values_list("content_type__app_label", "codename")) == [("ratings", "rate_items")]


def test_rate_page_is_for_experts_only(client, rendered, experts, stranger, django_user_model):
    assert client.get("/rate/").url.startswith("/accounts/login/")
    client.force_login(stranger)
    assert client.get("/rate/").status_code == 403
    assert client.post("/rate/1/", {}).status_code == 403
    client.force_login(experts[0])
    assert client.get("/rate/").status_code == 200
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    assert client.get("/rate/").status_code == 200


# --- filling the queue ------------------------------------------------------------------------


def test_fill_spreads_over_categories_and_is_idempotent(rendered, experts):
    assert queue(rendered, experts, items=3) == 6
    items = RatingAssignment.objects.order_by().values_list("entry__task__category", "entry_id").distinct()
    assert sorted(c for c, _ in items) == ["CO", "IM", "OE"]  # one of each before any category gets a second
    assert queue(rendered, experts, items=3) == 0
    assert RatingAssignment.objects.count() == 6
    assert queue(rendered, experts, items=5) == 4  # more items: only the new ones are added
    per_item = RatingAssignment.objects.order_by().values("entry").distinct().count()
    assert per_item == 5 and RatingAssignment.objects.count() == 10
    load = [RatingAssignment.objects.filter(rater=u).count() for u in experts]
    assert max(load) - min(load) <= 1  # new work goes to whoever has least


def test_a_task_is_in_one_pool_for_good(team, sample_pack, experts):
    first, second = rendered_submission(team, sample_pack), rendered_submission(team, sample_pack, prompter="another")
    queue(first, experts, exemplar_share=0.5)
    pools = dict(TaskPool.objects.values_list("task__task_id", "pool"))
    assert len(pools) == 6 and sorted(pools.values()) == ["evaluation"] * 3 + ["exemplar"] * 3  # one of each per category
    queue(second, experts, exemplar_share=1.0)  # a later fill asking for exemplars only does not move a task
    assert dict(TaskPool.objects.values_list("task__task_id", "pool")) == pools
    for task_id, pool in pools.items():
        assert set(RatingAssignment.objects.filter(entry__task__task_id=task_id).values_list("pool", flat=True)) == {pool}


def test_fill_rejects_bad_options_with_clear_messages(rendered, experts, stranger):
    with pytest.raises(QueueError, match="per_item must be at least 2"):
        queue(rendered, experts, per_item=1)
    with pytest.raises(QueueError, match="per_item is 4 but only 3 distinct rater"):
        queue(rendered, experts, per_item=4)
    with pytest.raises(QueueError, match="not expert raters.*stranger"):
        queue(rendered, [experts[0], stranger])
    with pytest.raises(QueueError, match="exemplar_share"):
        queue(rendered, experts, exemplar_share=1.5)
    assert not RatingAssignment.objects.exists() and not TaskPool.objects.exists()


def test_rating_assign_command(rendered, experts, capsys):
    call_command("rating_assign", str(rendered.pk), "--raters", "ana,ben", "--items", "4")
    out = capsys.readouterr().out
    assert "8 new assignment(s); 4 item(s) in the queue of 1 submission(s)" in out
    call_command("rating_assign", "--pack", "sample", "--raters", "ana,ben", "--items", "4")
    assert "0 new assignment(s)" in capsys.readouterr().out
    bad = {
        ("--raters", "ana,nobody"): "--raters: no user nobody",
        ("--raters", "ana"): "only 1 distinct rater",
        ("--raters", "ana,ben", "--per-item", "1"): "per_item must be at least 2",
    }
    for args, message in bad.items():
        with pytest.raises(CommandError, match=message):
            call_command("rating_assign", str(rendered.pk), *args, "--items", "2")
    with pytest.raises(CommandError, match="no submission #999"):
        call_command("rating_assign", "999", "--raters", "ana,ben", "--items", "2")
    with pytest.raises(CommandError, match="give submission ids or --pack"):
        call_command("rating_assign", "--raters", "ana,ben", "--items", "2")


# --- the rating page --------------------------------------------------------------------------


def test_page_shows_the_item_blind_with_anchors_and_progress(client, rendered, experts):
    queue(rendered, experts, items=6)
    client.force_login(experts[0])
    page = html.unescape(client.get("/rate/").content.decode())
    assignment = RatingAssignment.objects.filter(rater=experts[0], done_at=None).first()
    assert "0 done of" in page and assignment.entry.text in page and assignment.entry.task.brief in page
    assert "Exemplary" in page and "Each element, attribute and spatial relation is stated once" in page  # anchored levels
    assert assignment.entry.task.image_checklist[0] in page
    for secret in ("Pixel Poets", "secret-prompter", f"/submissions/{rendered.pk}"):
        assert secret not in page
    image = client.get(f"/rate/{assignment.pk}/image")
    assert image.status_code == 200 and image["Cache-Control"] == "private, no-store"


def test_rating_saves_both_sides_and_moves_on(client, rendered, experts):
    queue(rendered, experts, items=2)
    client.force_login(experts[0])
    assignment = RatingAssignment.objects.filter(rater=experts[0]).first()
    response = client.post(f"/rate/{assignment.pk}/", full_answers(assignment), follow=True)
    assert "Rating saved." in response.content.decode() and "1 done of 2" in response.content.decode()
    prompt, image = ExpertRating.objects.get(render=None), ExpertRating.objects.exclude(render=None).get()
    assert prompt.rater == image.rater == "ana" and prompt.pool == image.pool == assignment.pool
    assert prompt.scores == dict.fromkeys(PROMPT_DIMENSIONS, 4) and image.render == assignment.render
    assert set(prompt.checklist.values()) == {1} and set(image.checklist.values()) == {0}
    assert len(image.checklist) == len(assignment.entry.task.image_checklist) and image.note.startswith("Clear")
    assert RatingAssignment.objects.get(pk=assignment.pk).done_at is not None


def test_rating_the_same_item_twice_says_so_and_writes_nothing(client, rendered, experts):
    queue(rendered, experts, items=2)
    client.force_login(experts[0])
    assignment = RatingAssignment.objects.filter(rater=experts[0]).first()
    client.post(f"/rate/{assignment.pk}/", full_answers(assignment))
    before = list(ExpertRating.objects.values_list("pk", "scores", "updated"))
    again = client.post(f"/rate/{assignment.pk}/", full_answers(assignment, score=1), follow=True)
    assert "you already rated this item; nothing was changed." in again.content.decode()
    assert list(ExpertRating.objects.values_list("pk", "scores", "updated")) == before


@pytest.mark.parametrize(
    "change, message",
    [
        ({"prompt-creative_elaboration": None}, "creative_elaboration: choose a score from 1 to 5"),
        ({"image-color_lighting": "7"}, "color_lighting: 7 is not a score from 1 to 5"),
        ({"image-mood_atmosphere": "x"}, "mood_atmosphere: x is not a score from 1 to 5"),
        ({"rationale": "   "}, "rationale: write a short rationale"),
        ({"rationale": "x" * 1001}, "rationale: at most 1000 characters"),
        ({"image-check-2": None}, "image checklist item 2"),
        ({"prompt-check-1": "maybe"}, "prompt checklist item 1"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(client, rendered, experts, change, message):
    queue(rendered, experts, items=2)
    client.force_login(experts[0])
    assignment = RatingAssignment.objects.filter(rater=experts[0]).first()
    data = {k: v for k, v in (full_answers(assignment) | change).items() if v is not None}
    response = client.post(f"/rate/{assignment.pk}/", data)
    assert response.status_code == 400 and message in html.unescape(response.content.decode())
    assert 'value="4" required checked' in response.content.decode()  # what was given is kept
    assert not ExpertRating.objects.exists() and RatingAssignment.objects.get(pk=assignment.pk).done_at is None


def test_an_item_not_assigned_to_you_is_404(client, rendered, experts):
    queue(rendered, experts[:2], items=1)
    theirs = RatingAssignment.objects.filter(rater=experts[0]).first()
    client.force_login(experts[2])
    assert client.post(f"/rate/{theirs.pk}/", full_answers(theirs)).status_code == 404
    assert client.get(f"/rate/{theirs.pk}/image").status_code == 404
    assert client.post("/rate/99999/", full_answers(theirs)).status_code == 404
    assert not ExpertRating.objects.exists()


def test_exemplar_pool_ratings_build_the_items_exemplars_from_the_median(client, rendered, experts):
    task = rendered.entries.get(task__task_id="oe-s01").task
    TaskPool.objects.create(task=task, pool=Pool.EXEMPLAR)
    queue(rendered, experts, items=6, exemplar_share=0.0)
    item = RatingAssignment.objects.filter(entry__task=task)
    assert set(item.values_list("pool", flat=True)) == {"exemplar"}
    for user, score in zip(experts, (3, 4)):
        client.force_login(user)
        mine = item.get(rater=user)
        client.post(f"/rate/{mine.pk}/", full_answers(mine, score=score))
        prompt = Exemplar.objects.get(side="prompt", task_id="oe-s01")
        image = Exemplar.objects.get(side="image", task_id="oe-s01")
    # median of 3 and 4 is 3.5, a half rounds up; one row per side, updated in place
    assert prompt.scores == dict.fromkeys(PROMPT_DIMENSIONS, 4) and image.scores == dict.fromkeys(IMAGE_DIMENSIONS, 4)
    assert prompt.text == PROMPTS["oe-s01"] and image.image and "median of 2 expert(s)" in image.source
    assert set(ExpertRating.objects.values_list("pool", flat=True)) == {"exemplar"}
    assert Exemplar.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_exemplar_ratings_never_reach_the_judge_agreement(client, team, sample_pack, scripted_judge, experts):
    data = "\n".join(json.dumps({"task_id": t, "prompt": p}) for t, p in PROMPTS.items()).encode()
    submission = submission_create(team=team, pack=sample_pack, prompter="rated", filename="p.jsonl", data=data)
    assert Judgement.objects.filter(submission=submission, status=UnitStatus.OK).exists()
    queue(submission, experts[:2], items=6, exemplar_share=0.5)
    for user in experts[:2]:
        client.force_login(user)
        for assignment in RatingAssignment.objects.filter(rater=user):
            assert client.post(f"/rate/{assignment.pk}/", full_answers(assignment, score=2 + assignment.pk % 3)).status_code == 302
    evaluation = ExpertRating.objects.filter(pool=Pool.EVALUATION)
    assert evaluation.count() == 12 and ExpertRating.objects.filter(pool=Pool.EXEMPLAR).count() == 12
    page = html.unescape(client.get("/judge/").content.decode())
    assert "12 ratings by 2 raters" in page  # the exemplar pool's 12 are not counted
    from ratings.agreement import build_inputs, judges_with_ratings

    pairs, _, _ = build_inputs(judges_with_ratings()[0])
    exemplar_tasks = set(TaskPool.objects.filter(pool=Pool.EXEMPLAR).values_list("task__task_id", flat=True))
    assert pairs and not {p.task_id for p in pairs} & exemplar_tasks
    assert Render.objects.filter(entry__submission=submission, rating_assignments__isnull=False).exists()


def test_co_items_show_their_constraints_and_im_items_their_target(client, rendered, experts):
    queue(rendered, experts[:2], items=6)
    client.force_login(experts[0])
    mine = RatingAssignment.objects.filter(rater=experts[0])
    for task_id, expected in (("co-s01", "SUNSET PEAR"), ("im-s01", None)):
        mine.exclude(entry__task__task_id=task_id).update(done_at="2020-01-01T00:00Z")
        mine.filter(entry__task__task_id=task_id).update(done_at=None)
        task = mine.get(entry__task__task_id=task_id).entry.task
        page = html.unescape(client.get("/rate/").content.decode())
        assert (expected or task.target_image.url) in page
        if expected is None:
            assert task.target_image and client.get(task.target_image.url).status_code == 200


def test_staff_see_the_queue_in_the_admin(client, rendered, experts, django_user_model):
    queue(rendered, experts, items=2)
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    for url in (
        "/admin/ratings/ratingassignment/",
        "/admin/ratings/ratingassignment/?pool__exact=evaluation&done_at__isempty=1",
        "/admin/ratings/taskpool/?pool__exact=exemplar",
        f"/admin/ratings/ratingassignment/?rater__id__exact={experts[0].pk}",
    ):
        assert client.get(url).status_code == 200, url
    page = client.get("/admin/ratings/ratingassignment/").content.decode()
    assert "ana" in page and "-s0" in page  # rater and task id columns


# --- imports keep the pools apart -------------------------------------------------------------


def test_imports_never_put_a_task_in_both_pools(rendered, experts, tmp_path):
    """A rating file cannot add evaluation ratings to an exemplar-pool task, nor an exemplar file exemplars to an
    evaluation-pool task: the judge is never tested on what calibrated it, whichever way the ratings come in."""
    from ratings.services import RatingFileError, expert_ratings_import

    queue(rendered, experts, exemplar_share=0.5)
    pools = dict(TaskPool.objects.values_list("task__task_id", "pool"))
    exemplar_task = sorted(t for t, p in pools.items() if p == Pool.EXEMPLAR)[0]
    evaluation_task = sorted(t for t, p in pools.items() if p == Pool.EVALUATION)[0]
    lines = [{"rater": "ana", "task_id": task_id, "scores": {"instructional_clarity": 3}} for task_id in (evaluation_task, exemplar_task)]
    with pytest.raises(RatingFileError) as info:
        expert_ratings_import(submission=rendered, filename="r.jsonl", data="\n".join(map(json.dumps, lines)).encode())
    assert info.value.problems == [
        f"r.jsonl:2: task {exemplar_task} is in the exemplar pool (its ratings calibrate the judge); "
        "an evaluation rating of it would test the judge on what calibrated it"
    ]
    assert not ExpertRating.objects.exists()  # nothing half-written
    assert expert_ratings_import(submission=rendered, filename="r.jsonl", data=json.dumps(lines[0]).encode()) == 1

    category = rendered.entries.get(task__task_id=evaluation_task).task.category
    exemplar = {
        "side": "prompt",
        "category": category,
        "task_id": evaluation_task,
        "text": "a prompt",
        "scores": dict.fromkeys(PROMPT_DIMENSIONS, 4),
    }
    path = tmp_path / "exemplars.jsonl"
    path.write_text(json.dumps(exemplar) + "\n")
    with pytest.raises(CommandError, match=f"exemplars.jsonl:1: task {evaluation_task} \\({category}\\) is in the evaluation pool"):
        call_command("import_exemplars", str(path), "--allow-unknown-tasks")
    assert not Exemplar.objects.exists()


def test_a_tasks_pool_holds_across_versions_of_its_pack(team, sample_pack, experts):
    """Exemplars know a task by its task id, so a new version of the pack (new task rows) keeps each task's pool."""
    from tasks.models import Task, TaskPack

    first = rendered_submission(team, sample_pack)
    queue(first, experts, exemplar_share=0.5)
    pools = dict(TaskPool.objects.values_list("task__task_id", "pool"))
    v2 = TaskPack.objects.create(name=sample_pack.name, version="v2-test")
    for task in sample_pack.tasks.all():
        task.pk, task.pack = None, v2
        task.save()
    assert Task.objects.filter(pack=v2).count() == len(pools)
    queue(rendered_submission(team, v2, prompter="on v2"), experts, exemplar_share=1.0)  # asks for exemplars only
    again = TaskPool.objects.filter(task__pack=v2).values_list("task__task_id", "pool")
    assert dict(again) == pools
