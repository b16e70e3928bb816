"""Planning a submission's judgement units in bulk, and the indexed questions asked after every unit."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection, transaction

from evaluation.models import Judgement, Render, UnitStatus
from evaluation.units import plan_judgements, task_input
from evaluator.judge.routes import route_for_task
from evaluator.judge.skills import get_skill
from evaluator.judge.types import Side
from submissions.services import submission_create


@pytest.fixture
def entry(team, sample_pack, no_backends, example_prompts):
    submission = submission_create(team=team, pack=sample_pack, prompter="p", filename="p.jsonl", data=example_prompts)
    return submission.entries.select_related("task").order_by("pk").first()


def _render(entry, index: int, status: str = UnitStatus.OK) -> Render:
    return Render.objects.create(entry=entry, backend="b", image_index=index, seed=index, config_hash="c", prompt_sha="s", status=status)


def test_planning_twice_adds_no_row_keeps_settled_ones_and_returns_the_pending_in_order(entry):
    renders = [_render(entry, 0), _render(entry, 1)]
    skills = route_for_task(task_input(entry.task), settings.ATELIER_JUDGE_ROUTE)
    expected = [(None, s) for s in skills if get_skill(s).side == Side.PROMPT]
    expected += [(r.pk, s) for r in renders for s in skills if get_skill(s).side == Side.IMAGE]
    assert len(expected) > 2

    first = plan_judgements(entry, "judge", "v1", [None, *renders])
    assert [(j.render_id, j.skill) for j in first] == expected
    assert all(j.status == UnitStatus.PENDING and j.submission_id == entry.submission_id for j in first)
    settled = first[1]
    Judgement.objects.filter(pk=settled.pk).update(status=UnitStatus.OK, value=4.0)

    again = plan_judgements(entry, "judge", "v1", [None, *renders])
    assert [j.pk for j in again] == [j.pk for j in first if j.pk != settled.pk]
    assert Judgement.objects.filter(entry=entry).count() == len(expected)
    assert Judgement.objects.get(pk=settled.pk).value == 4.0  # planning again left the settled result alone

    only_images = plan_judgements(entry, "judge", "v1", renders[1:])
    assert [(j.render_id, j.skill) for j in only_images] == [e for e in expected if e[0] == renders[1].pk]
    assert plan_judgements(entry, "other judge", "v1", [None])[0].pk not in {j.pk for j in first}  # another judge: its own rows


@pytest.mark.parametrize(
    "question, index",
    [
        (lambda s: Render.objects.filter(entry__submission_id=s, status=UnitStatus.PENDING), "render_status_entry"),
        (lambda s: Judgement.objects.filter(submission_id=s, status=UnitStatus.PENDING), "judgement_submission_status"),
    ],
)
def test_is_anything_pending_is_answered_from_an_index(entry, question, index):
    """Asked after every unit: scanning the submission's rows instead made a submission's checks grow with the
    square of its size (16 s of SQL in a 360-task run). PostgreSQL prefers a scan on a table this small, so
    sequential scans are turned off there to see which index it would use."""
    sql, params = question(entry.submission_id).query.exists().sql_with_params()  # the query .exists() sends
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("EXPLAIN " + sql, params)
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        plan = " ".join(str(part) for row in cursor.fetchall() for part in row)
    assert index in plan, plan


def test_a_route_without_gates_asks_no_question_about_blocks(entry, settings, django_assert_num_queries):
    from evaluation.judging import _standing_block

    assert settings.ATELIER_JUDGE_ROUTE == "ateliereval"  # no gate skill on it, for any category
    judgement = plan_judgements(entry, "judge", "v1", [None, _render(entry, 0)])[-1]
    judgement = Judgement.objects.select_related("entry__task").get(pk=judgement.pk)
    with django_assert_num_queries(0):
        assert _standing_block(judgement) is None
    settings.ATELIER_JUDGE_ROUTE = "extended"  # gates may have blocked the sample: the question is asked
    with django_assert_num_queries(1):
        assert _standing_block(judgement) is None


def test_a_skill_the_judge_cannot_run_is_recorded_as_run_would_without_loading_any_input(entry, monkeypatch):
    from evaluation import judging, runtime
    from evaluator.judge.types import Kind

    judge = runtime.judge()
    assert hasattr(judge, "skip_reason")  # the offline judge: it has no rubric scorer
    planned = plan_judgements(entry, judge.judge_id, judge.version, [None, _render(entry, 0)])
    rubric = [j for j in planned if get_skill(j.skill).kind == Kind.RUBRIC]
    scored = [j for j in planned if get_skill(j.skill).kind != Kind.RUBRIC]
    assert rubric and scored

    def must_not_load(*args, **kwargs):
        raise AssertionError("a unit the judge skips whatever its input loaded an input")

    for name in ("_image", "_target", "_exemplars", "cache_key", "_embed_ahead"):
        monkeypatch.setattr(judging, name, must_not_load)
    for judgement in rubric:
        judging.judge_unit(judgement.pk)
        stored = Judgement.objects.get(pk=judgement.pk)
        expected = judge.run(judgement.skill, task_input(entry.task), entry.text)
        assert (stored.status, stored.reason, stored.value, stored.cache_key) == (UnitStatus.SKIPPED, expected.reason, None, "")
    with pytest.raises(AssertionError, match="loaded an input"):  # the others still read their inputs
        judging.judge_unit(scored[0].pk)
