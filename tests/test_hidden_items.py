"""Items of hidden (test-split) tasks reach only the expert raters the staff allowed to see hidden checklists
(ratings.rate_hidden_items, off by default): rating_assign, /rate/ and import_expert_ratings all respect it."""

from __future__ import annotations

import html
import importlib
import json

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from evaluation.models import Submission
from ratings.models import ExpertRating, Pool, RatingAssignment
from ratings.services import rating_queue_fill
from tests.test_expert_queue import HIDDEN_GROUP, expert, full_answers, rendered_submission

HIDDEN_TASKS = ["co-s02", "im-s02", "oe-s02"]  # the sample pack's test split


@pytest.fixture
def rendered(team, sample_pack):
    return rendered_submission(team, sample_pack)


@pytest.fixture
def people(transactional_db, django_user_model):
    """Four expert raters; only ana and ben may see hidden checklists."""
    return {name: expert(django_user_model, name, hidden=name in ("ana", "ben")) for name in ("ana", "ben", "cy", "dee")}


def secret_items(submission: Submission) -> list[str]:
    tasks = [e.task for e in submission.entries.select_related("task") if not e.task.is_public]
    assert sorted(t.task_id for t in tasks) == HIDDEN_TASKS
    return [item for t in tasks for item in t.prompt_checklist + t.image_checklist]


@pytest.mark.django_db
def test_the_permission_is_off_by_default_and_its_group_holds_it(django_user_model):
    # The group is a data migration's row, which a transactional test run earlier on this worker may have flushed:
    # the migration's own function makes it again (it is idempotent), then the row is checked.
    from django.apps import apps

    importlib.import_module("ratings.migrations.0005_hidden_item_raters").create_group(apps, None)
    group = Group.objects.get(name=HIDDEN_GROUP)
    assert list(group.permissions.values_list("content_type__app_label", "codename")) == [("ratings", "rate_hidden_items")]
    plain = expert(django_user_model, "eve")
    assert plain.has_perm("ratings.rate_items") and not plain.has_perm("ratings.rate_hidden_items")


def test_rating_assign_gives_hidden_items_only_to_permitted_raters_and_says_how_many_it_withheld(rendered, people, capsys):
    call_command("rating_assign", str(rendered.pk), "--raters", "ana,cy,dee", "--items", "6")
    out = capsys.readouterr().out
    assert "6 new assignment(s); 3 item(s) in the queue of 1 submission(s)" in out  # the 3 public items, 2 raters each
    assert "3 item(s) of hidden (test-split) tasks withheld: 1 of these raters may see hidden checklists, 2 needed per item" in out
    assert "only 3 of 6 item(s): no more prompts with a rendered image that these raters may rate" in out
    assert set(RatingAssignment.objects.values_list("entry__task__split", flat=True)) == {"dev"}

    call_command("rating_assign", str(rendered.pk), "--raters", "ana,ben,cy,dee", "--items", "6")
    out = capsys.readouterr().out
    assert "6 new assignment(s); 6 item(s) in the queue" in out and "withheld" not in out
    hidden = RatingAssignment.objects.filter(entry__task__split="test")
    assert sorted(set(hidden.values_list("entry__task__task_id", flat=True))) == HIDDEN_TASKS
    assert set(hidden.values_list("rater__username", flat=True)) == {"ana", "ben"}  # never cy or dee, however light their load


def test_the_rate_page_never_shows_a_hidden_item_to_a_rater_without_the_permission(client, rendered, people):
    cy, secrets = people["cy"], secret_items(rendered)
    entry = rendered.entries.get(task__task_id="co-s02")
    # An assignment made before the permission was required (what the reported queue did): the oldest in cy's queue.
    legacy = RatingAssignment.objects.create(rater=cy, entry=entry, render=entry.renders.get(), pool=Pool.EVALUATION)
    rating_queue_fill(submissions=Submission.objects.filter(pk=rendered.pk), raters=[cy, people["dee"]], items=6)
    client.force_login(cy)
    page = client.get("/rate/")
    shown = html.unescape(page.content.decode())
    assert page.status_code == 200 and "0 done of 3" in shown and entry.text not in shown
    answers = full_answers(legacy)
    responses = [
        client.post(f"/rate/{legacy.pk}/", answers),
        client.post(f"/rate/{legacy.pk}/", {**answers, "rationale": ""}),
        client.get(f"/rate/{legacy.pk}/image"),
    ]
    assert [r.status_code for r in responses] == [404, 404, 404]
    for response in [page, *responses]:
        text = html.unescape(response.content.decode())
        assert not [item for item in secrets if item in text]
    assert not ExpertRating.objects.exists() and RatingAssignment.objects.get(pk=legacy.pk).done_at is None

    cy.groups.add(Group.objects.get(name=HIDDEN_GROUP))  # the staff allow cy: the same item is now cy's next
    shown = html.unescape(client.get("/rate/").content.decode())
    assert "0 done of 4" in shown and entry.text in shown and entry.task.image_checklist[0] in shown


def test_import_refuses_hidden_rows_by_raters_without_the_permission_and_writes_nothing(rendered, people, tmp_path, django_user_model):
    django_user_model.objects.filter(username="ben").update(is_active=False)  # allowed once, but no longer a user who may log in
    scores = {"instructional_clarity": 3}
    rows = [
        {"rater": "cy", "task_id": "oe-s01", "scores": scores},  # a public task: any rater
        {"rater": "cy", "task_id": "oe-s02", "scores": scores},
        {"rater": "nobody", "task_id": "co-s02", "scores": scores},
        {"rater": "ben", "task_id": "co-s02", "scores": scores},
        {"rater": "ana", "task_id": "im-s02", "scores": scores},  # allowed
    ]
    path = tmp_path / "ratings.jsonl"
    path.write_text("\n".join(map(json.dumps, rows)))
    with pytest.raises(CommandError) as info:
        call_command("import_expert_ratings", str(path), "--submission", str(rendered.pk))
    message = str(info.value)
    assert "3 problem(s), nothing imported" in message
    for line, task_id, rater in ((2, "oe-s02", "cy"), (3, "co-s02", "nobody"), (4, "co-s02", "ben")):
        assert (
            f"ratings.jsonl:{line}: task {task_id} is hidden (test split) and rater {rater!r} may not see its checklists "
            "(no active user of that name with the permission ratings.rate_hidden_items)"
        ) in message
    assert not ExpertRating.objects.exists()

    path.write_text("\n".join(map(json.dumps, [rows[0], rows[4]])))
    call_command("import_expert_ratings", str(path), "--submission", str(rendered.pk))
    assert sorted(ExpertRating.objects.values_list("rater", "entry__task__task_id")) == [("ana", "im-s02"), ("cy", "oe-s01")]
