"""The demo command: sample pack, example submission and baseline evaluated in-process and published."""

from __future__ import annotations

import html
import io
import re

import pytest
from django.core.management import call_command

from evaluation.models import Submission


@pytest.mark.sqlite_pass(
    reason="make demo runs on SQLite; the pipeline it drives (uploads, endpoint runs, studies, boards) is tested on PostgreSQL by its own tests"
)
@pytest.mark.django_db(transaction=True)
def test_demo_builds_a_published_judged_leaderboard_and_is_idempotent(settings, shipped_backends, client):
    settings.DEBUG = True
    allowed, printed = settings.ATELIER_PROMPTER_ALLOWED_HOSTS, io.StringIO()
    call_command("demo", stdout=printed)
    call_command("demo")  # running it again adds nothing
    assert settings.ATELIER_PROMPTER_ALLOWED_HOSTS == allowed  # its local prompter was allowed for the command only
    submissions = Submission.objects.exclude(origin="human")
    assert (
        submissions.count() == 6
    )  # the example upload, the baseline, the scripted endpoint single-turn and 3 rounds, 2 rules on the original pack
    humans = Submission.objects.filter(origin="human")
    assert humans.count() == 4 and all(h.status == "done" and not h.published for h in humans)  # the scripted participants, once
    assert all(s.status == "done" and s.published for s in submissions), [(s.status, s.error) for s in submissions]
    runs = {s.rounds: s for s in submissions.filter(origin="endpoint")}
    assert set(runs) == {1, 3} and runs[3].calls.count() == 3 * runs[1].calls.count() > 0
    assert set(runs[3].calls.values_list("feedback_status", flat=True)) == {"ok"}
    page = client.get("/").content.decode()
    assert "Example prompter (hand-written)" in page and "brief-verbatim" in page and "baseline" in page
    assert "embedding judge" in page and "smoke (random weights)" in page and "guided v1+" in page
    assert "Scripted (demo) — novice" in page and "Scripted (demo) — skilled" in page and "Scripted (demo) — all" in page
    assert "Humans — all" not in page  # the demo's participants are scripted rules: never labelled as people
    original = submissions.filter(pack__name="atelier-original")
    assert original.count() == 2 and {e.task.split for s in original for e in s.entries.select_related("task")} == {"dev", "test"}
    board = f"{original[0].pack_id}:{original[0].pack_revision}"
    shown = client.get(f"/?board={board}").content.decode()
    # 12 of the pack's 360 tasks were evaluated: nobody covers its 300 hidden test tasks, so nobody is ranked, and the
    # board claims no rank range or controlled score it cannot support.
    assert "No entry is ranked" in shown and "covers 6 of 300 tasks" in shown and "Rule: brief verbatim" in shown and "Gap" in shown
    assert 'id="no-style-control"' in shown and "Length-controlled" not in shown
    sample = client.get("/").content.decode()  # the sample pack: 2 tasks a category, wide intervals, no pair told apart, said so
    assert 'id="not-separable"' in sample and "Length-controlled" not in sample and "[0.0, 100.0]" in sample  # wide intervals
    demo = submissions.get(is_baseline=False, origin="file", pack__name="sample")
    link = re.search(r"Take part yourself .*: http://127\.0\.0\.1:8000(/study/[^/\s]+/)", printed.getvalue())
    assert link and "Before you start" in client.get(link.group(1), follow=True).content.decode()  # the printed link opens the study
    assert f"{demo.figures.get(scope='overall').value:.1f}" in page
    judge_page = html.unescape(client.get("/judge/").content.decode())  # the demo's hand ratings are one developer's
    assert "the one rater's labels (one rater, not a majority of experts)" in judge_page and "experts' majority" not in judge_page


def test_demo_refuses_without_debug(settings, db):
    settings.DEBUG = False
    with pytest.raises(Exception, match="DEBUG=true"):
        call_command("demo")
