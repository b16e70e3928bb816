"""Scripted demo participants (issue 19, item 11): marked scripted, their rows labelled "Scripted (demo)" and never pooled
with real people's; the human rows as plain data for board.json (evaluation.humans.human_rows_export)."""

from __future__ import annotations

import pytest

from atelier.demo_study import SCRIPTED, demo_study
from evaluation.humans import HUMAN_ROW_FIELDS, human_rows_export
from evaluation.models import HumanRow
from studies.models import Participant
from studies.selectors import export_rows
from tests.test_studies import SKILLED, do_all_tasks, start


@pytest.fixture
def demo(sample_pack, shipped_backends):
    study, token = demo_study(sample_pack, lambda line: None, per_category=1)  # the sample pack has one IM target
    return study, f"/study/{token}/"


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
