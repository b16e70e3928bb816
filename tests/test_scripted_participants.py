"""Scripted demo participants (issue 19, item 11): marked scripted, their rows labelled "Scripted (demo)" and never pooled
with real people's; the human rows as plain data for board.json (evaluation.humans.human_rows_export)."""

from __future__ import annotations

import pytest
from django.test import Client
from limits import RateLimitItemPerHour

from demo import views as demo_views
from demo.study import NAME, SCRIPTED, demo_study
from evaluation.humans import HUMAN_ROW_FIELDS, human_rows_export
from evaluation.models import HumanRow, Status
from evaluator.metrics.humans import human_rows
from studies.humans import pooled_participant
from studies.models import Participant
from studies.selectors import export_rows
from studies.services import study_create
from tests.conftest import deployed_urls
from tests.test_studies import NOVICE, SKILLED, do_all_tasks, start


def visit(client: Client) -> str:
    """Follow the demo's public "Take part yourself" link: where it sends this browser."""
    reply = client.get("/demo/study/")
    assert reply.status_code == 302, reply.content.decode()
    return reply["Location"]


@pytest.fixture
def demo(sample_pack, shipped_backends, client, settings):
    study = demo_study(sample_pack, lambda line: None, per_category=1)  # the sample pack has one IM target
    return study, visit(client)


def test_each_visitor_of_the_demo_link_gets_a_participant_and_a_withdrawal_ends_only_theirs(sample_pack, settings, monkeypatch):
    monkeypatch.setattr(demo_views, "VISITORS_PER_HOUR", RateLimitItemPerHour(5, namespace="demo-study-visitor"))
    study = study_create(name=NAME, pack=sample_pack, per_category=1, rounds=1)  # the demo's study, without its scripts
    first, second = Client(), Client()
    a, b = visit(first), visit(second)
    assert a != b and visit(first) == a and a.startswith("/study/")  # a reload returns to the same participant
    one, two = start(first, a, NOVICE), start(second, b, SKILLED)
    assert one.pk != two.pk and Participant.objects.filter(study=study).count() == 2
    first.post(a + "withdraw", {"confirm": "yes"})
    assert first.get(a).status_code == 410 and second.get(b).status_code == 200  # the other goes on
    third = Client()
    assert "Before you start" in third.get("/demo/study/", follow=True).content.decode()  # a newcomer still gets in
    again = visit(first)
    assert again not in (a, b) and Participant.objects.filter(study=study).count() == 4  # who withdrew may start anew
    assert visit(Client()).startswith("/study/")  # the fifth new participant from this address within the hour
    refused = Client().get("/demo/study/")
    assert refused.status_code == 429 and "Try again in an hour" in refused.content.decode()
    assert Participant.objects.filter(study=study).count() == 5
    with deployed_urls(settings):
        assert Client().get("/demo/study/").status_code == 404  # a deployment has no such route


def rows() -> dict[tuple[bool, str], HumanRow]:
    return {(r.scripted, r.tier): r for r in HumanRow.objects.all()}


@pytest.mark.django_db(transaction=True)
def test_scripted_participants_get_rows_of_their_own_and_a_person_is_never_pooled_with_them(client, demo):
    study, newcomer = demo
    assert Participant.objects.filter(study=study, scripted=True, completed__isnull=False).count() == len(SCRIPTED)
    before = rows()
    assert set(before) == {(True, "novice"), (True, "skilled"), (True, "all")}
    assert before[(True, "all")].participants == 4 and before[(True, "all")].label == "Scripted (demo) — all"
    board = client.get("/").content.decode()
    assert "Scripted (demo) — novice" in board and "Humans — all" not in board  # no person has taken part yet

    person = start(client, newcomer, SKILLED)  # the demo's link for a real person
    do_all_tasks(client, newcomer, person)
    assert not Participant.objects.get(pk=person.pk).scripted
    after = rows()
    assert set(after) == set(before) | {(False, "skilled"), (False, "all")}
    assert after[(False, "all")].participants == after[(False, "skilled")].participants == 1  # the person alone
    assert after[(True, "all")].participants == 4 and after[(True, "skilled")].participants == 2  # the scripts alone
    assert after[(False, "all")].label == "Humans — all" and after[(True, "skilled")].label == "Scripted (demo) — skilled"
    # The stored rows are evaluator.metrics.humans.human_rows of the finished participants in id order, the function
    # the board download's recompute rebuilds them with: every computed field, figures included.
    judge = (after[(False, "all")].judge_id, after[(False, "all")].judge_version)
    finished = Participant.objects.filter(study=study, submission__status=Status.DONE, withdrawn__isnull=True).order_by("pk")
    pooled = human_rows([pooled_participant(p, *judge) for p in finished])
    assert {(r["scripted"], r["tier"]): r for r in pooled} == {
        key: {name: getattr(row, name) for name in pooled[0]} for key, row in after.items()
    }
    board = client.get("/").content.decode()
    assert 'id="humans-all"' in board and 'id="scripted-all"' in board and "scripted (demo)</span>" in board  # both rows, apart

    # The rows as board.json would carry them: people's first, then the scripted ones, each saying which it is.
    judge_id, judge_version = after[(False, "all")].judge_id, after[(False, "all")].judge_version
    exported = human_rows_export(pack=study.pack, revision=after[(False, "all")].revision, judge_id=judge_id, judge_version=judge_version)
    assert [(r["scripted"], r["tier"]) for r in exported] == [
        (False, "skilled"),
        (False, "all"),
        (True, "novice"),
        (True, "skilled"),
        (True, "all"),
    ]
    assert all(tuple(r) == HUMAN_ROW_FIELDS for r in exported)
    assert exported[0]["label"] == "Humans — skilled" and exported[-1]["label"] == "Scripted (demo) — all"
    assert isinstance(exported[0]["first"], str) and any(f["scope"] == "overall" for f in exported[0]["figures"])
    participants = [r["scripted"] for r in export_rows(study, "participants")]  # the study's own export says it too
    assert sorted(participants) == [False] + [True] * len(SCRIPTED)
