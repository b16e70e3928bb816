"""The board's Atom feed (/board.atom?board=<pack id>:<revision>[&judge=<key>]), over HTTP: valid Atom, newly published
entries newest first, nothing unpublished, unfinished or from a study's pooled humans, and 404 for an unknown board."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.utils import timezone

from evaluation.models import BoardStats, Figure, Origin, Status, Submission
from evaluator.metrics.scopes import Scope
from tasks.models import TaskPack

pytestmark = pytest.mark.sqlite_pass(
    reason="the feed reads one board's published entries with plain filters and a coalesced date order, as the board's own queries tested on both databases"
)

ATOM = "{http://www.w3.org/2005/Atom}"


@pytest.fixture
def board(team) -> str:
    """Three published entries a day apart (the middle one scored by a second judge), and what must stay out. The feed
    reads no task, so the pack has none (a plain database test: no flush of the whole database after each)."""
    sample_pack, now = TaskPack.objects.create(name="sample", version="1"), timezone.now()
    for days, prompter, judge in ((2, "oldest", "j1"), (0, "newest", "j1"), (1, "middle", "j2")):
        made = Submission.objects.create(
            team=team, pack=sample_pack, prompter=prompter, status=Status.DONE, published=True, published_at=now - timedelta(days=days)
        )
        Figure.objects.create(submission=made, judge_id=judge, judge_version="1", scope=Scope.OVERALL, key="overall", value=50.0)
    Submission.objects.create(team=team, pack=sample_pack, prompter="unpublished", status=Status.DONE)
    Submission.objects.create(team=team, pack=sample_pack, prompter="failed", status=Status.FAILED, published=True)
    Submission.objects.create(team=team, pack=sample_pack, prompter="P-HUMANS", status=Status.DONE, published=True, origin=Origin.HUMAN)
    for judge in ("j1", "j2"):
        BoardStats.objects.create(pack=sample_pack, revision=1, judge_id=judge, judge_version="1", entry_count=2)
    return f"{sample_pack.pk}:1"


def entries(response) -> list[ET.Element]:
    assert response.status_code == 200 and response["Content-Type"].startswith("application/atom+xml")
    feed = ET.fromstring(response.content)
    assert feed.tag == f"{ATOM}feed" and feed.find(f"{ATOM}updated") is not None and feed.find(f"{ATOM}id") is not None
    return feed.findall(f"{ATOM}entry")


def test_the_feed_lists_published_entries_newest_first(board):
    found = entries(Client().get("/board.atom", {"board": board}))
    assert [e.findtext(f"{ATOM}title") for e in found] == [f"{p} (Pixel Poets) on sample v1" for p in ("newest", "middle", "oldest")]
    newest = Submission.objects.get(prompter="newest")
    assert found[0].find(f"{ATOM}link").get("href") == f"http://testserver/submissions/{newest.pk}/"
    assert found[0].findtext(f"{ATOM}published").startswith(newest.published_at.strftime("%Y-%m-%dT%H:%M:%S"))
    assert found[0].findtext(f"{ATOM}author/{ATOM}name") == "Pixel Poets"


def test_a_judge_narrows_the_feed_to_its_entries(board):
    found = entries(Client().get("/board.atom", {"board": board, "judge": "j2|1"}))
    assert [e.findtext(f"{ATOM}title") for e in found] == ["middle (Pixel Poets) on sample v1"]


def test_the_feeds_self_link_names_its_board_and_judge_and_answers(board):
    for query in ({"board": board}, {"board": board, "judge": "j2|1"}):
        feed = ET.fromstring(Client().get("/board.atom", query).content)
        link = feed.find(f"{ATOM}link[@rel='self']").get("href")
        assert link == "http://testserver/board.atom?" + urlencode(query), link  # Django's default dropped the query: a 404
        assert len(entries(Client().get(link))) == len(entries(Client().get("/board.atom", query)))


def test_an_unknown_board_or_judge_is_404(board):
    for query in ({}, {"board": "999:1"}, {"board": "x"}, {"board": board, "judge": "nobody|1"}, {"board": board, "judge": "j2"}):
        assert Client().get("/board.atom", query).status_code == 404, query


def test_the_board_page_announces_its_feed(board):
    page = Client().get("/", {"board": board}).content.decode()
    link = f'href="/board.atom?board={board.replace(":", "%3A")}"'
    assert f'<link rel="alternate" type="application/atom+xml" title="New entries on sample v1" {link}>' in page
