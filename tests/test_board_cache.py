"""Anonymous board pages come from the cache under the boards' version, with ETag/Last-Modified (304) and a public
Cache-Control; signed-in pages are their own, private and never shared (issue 22, leaderboard/cache.py)."""

from __future__ import annotations

import logging
import re

import pytest
from django.contrib.auth.models import AnonymousUser
from django.contrib.messages import add_message, constants
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.cache import SessionStore
from django.db import connection
from django.middleware.csrf import get_token
from django.template.response import TemplateResponse
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext

from evaluation.boards import board_stats_rebuild
from evaluation.models import Figure, Status, Submission
from leaderboard.cache import board_page_cache

JUDGE = {"judge_id": "offline", "judge_version": "1"}
BOARD_TABLES = ("leaderboard_boardrow", "evaluation_submission", "submissions_submission", "leaderboard_figure", "tasks_")


def entry(team, pack, prompter: str, overall: float, published: bool = True) -> Submission:
    """A finished entry with its overall and category figures; publishing runs the board job as the site does."""
    submission = Submission.objects.create(
        team=team, pack=pack, prompter=prompter, status=Status.DONE, published=published, judge_label="offline judge", **JUDGE
    )
    figures = [Figure(submission=submission, scope="overall", key="overall", value=overall, **JUDGE)]
    figures += [
        Figure(submission=submission, scope="category", key=c, value=overall + i, **JUDGE) for i, c in enumerate(("OE", "CO", "IM"))
    ]
    Figure.objects.bulk_create(figures)
    if published:
        board_stats_rebuild(pack_id=pack.pk, revision=submission.pack_revision)
    return submission


@pytest.fixture
def board(team, sample_pack):
    entry(team, sample_pack, "Prompter High", 80.0)
    entry(team, sample_pack, "Prompter Low", 40.0)
    return sample_pack


def board_queries(queries) -> list[str]:
    return [q["sql"] for q in queries if any(table in q["sql"] for table in BOARD_TABLES)]


def test_an_anonymous_page_is_served_from_the_cache_the_second_time(client, board):
    first = client.get("/")
    assert first.status_code == 200 and "Prompter High" in first.content.decode()
    assert first["ETag"].startswith('W/"') and first["Last-Modified"]
    assert "public" in first["Cache-Control"] and "max-age=30" in first["Cache-Control"] and "Cookie" in first["Vary"]
    with CaptureQueriesContext(connection) as second_queries:
        second = client.get("/")
    assert second.content == first.content and second["ETag"] == first["ETag"]
    assert board_queries(second_queries.captured_queries) == []
    assert len(second_queries) == 2, second_queries.captured_queries  # the boards' version and the latest release, nothing else


def test_a_repeat_visitor_gets_304_by_etag_or_date(client, board):
    first = client.get("/")
    by_etag = client.get("/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert by_etag.status_code == 304 and by_etag.content == b""
    assert by_etag["ETag"] == first["ETag"] and "public" in by_etag["Cache-Control"] and "Cookie" in by_etag["Vary"]
    assert client.get("/", HTTP_IF_MODIFIED_SINCE=first["Last-Modified"]).status_code == 304
    assert client.get("/", HTTP_IF_NONE_MATCH='W/"another-version"').status_code == 200


def test_a_new_board_version_gives_new_content_and_a_new_etag(client, board, team):
    first = client.get("/")
    assert "Prompter Newcomer" not in first.content.decode()
    entry(team, board, "Prompter Newcomer", 60.0)  # published: the board job writes a new version
    after = client.get("/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert after.status_code == 200 and "Prompter Newcomer" in after.content.decode()
    assert after["ETag"] != first["ETag"]


def test_a_member_sees_their_unpublished_row_privately_and_visitors_never_do(client, board, team, owner, admin_user):
    visitor = Client()
    assert "Prompter Draft" not in visitor.get("/").content.decode()  # the anonymous page is cached now
    draft = entry(team, board, "Prompter Draft", 99.0, published=False)
    client.force_login(owner)
    mine = client.get("/")
    page = mine.content.decode()
    assert f'id="team-row-{draft.pk}"' in page and "Prompter Draft" in page and "Log out owner" in page
    assert "private" in mine["Cache-Control"] and "no-store" in mine["Cache-Control"] and "Cookie" in mine["Vary"]
    assert not mine.has_header("ETag") and "public" not in mine["Cache-Control"]
    assert client.get("/", HTTP_IF_NONE_MATCH=visitor.get("/")["ETag"]).status_code == 200  # a member never gets a 304 for it
    anonymous = visitor.get("/")
    shown = anonymous.content.decode()
    assert "Prompter Draft" not in shown and "Log out" not in shown and "public" in anonymous["Cache-Control"]
    assert Client().get("/").content.decode().count("Prompter Draft") == 0  # a fresh visitor right after the member
    staff = Client()
    staff.force_login(admin_user)
    assert "no-store" in staff.get("/")["Cache-Control"] and "/django-rq/" not in visitor.get("/").content.decode()
    assert "Prompter Draft" in client.get("/").content.decode()  # and the member still sees theirs


def test_query_parameters_give_distinct_pages(client, board):
    descending, ascending = client.get("/?sort=overall&dir=desc"), client.get("/?sort=overall&dir=asc")
    assert descending["ETag"] != ascending["ETag"]
    high_first = descending.content.decode()
    low_first = ascending.content.decode()
    assert high_first.index("Prompter High") < high_first.index("Prompter Low")
    assert low_first.index("Prompter Low") < low_first.index("Prompter High")
    assert client.get("/?sort=overall&dir=asc").content == ascending.content  # from the cache, still ascending
    with CaptureQueriesContext(connection) as tracked:
        tagged = client.get("/?sort=overall&dir=asc&utm_source=launch")  # a parameter the page never reads
    assert tagged["ETag"] == ascending["ETag"] and board_queries(tracked.captured_queries) == []
    client.get("/?sort=no-such-column")
    with CaptureQueriesContext(connection) as again:
        assert client.get("/?sort=no-such-column").status_code == 200
    assert board_queries(again.captured_queries), "a sort the page does not know is served but never stored"


def test_the_cached_page_carries_no_nonce_or_token_and_its_scripts_are_allowed(client, board):
    client.get("/")
    cached = client.get("/")
    page = cached.content.decode()
    policy = dict(d.strip().split(" ", 1) for d in cached["Content-Security-Policy"].split(";") if d.strip())
    assert policy["script-src"] == "'self'"  # no nonce and no inline script allowed: only the site's own files
    scripts = re.findall(r"<script\b([^>]*)>", page)
    assert len(scripts) >= 3
    for attributes in scripts:
        assert 'type="application/json"' in attributes or re.search(r'src="/static/[^"]+"', attributes), attributes
    assert "nonce" not in page and "csrfmiddlewaretoken" not in page and not cached.cookies


def test_the_cached_board_draws_its_charts_in_chromium_with_no_csp_violation(browser, team, sample_pack, monkeypatch):
    """The page a visitor gets from the cache (no nonce, no token) runs its static scripts under the response's policy."""
    from selenium.webdriver.common.by import By

    from leaderboard import selectors
    from submissions.services import submissions_publish
    from tests.test_board_stats import entry as scored_entry
    from tests.test_nginx import csp_violations

    tasks = sorted(sample_pack.tasks.values_list("task_id", flat=True))
    made = [
        scored_entry(team, sample_pack, f"Charted {i}", {t: 40.0 + 20 * i + j for j, t in enumerate(tasks)}, words=8 + 30 * i)
        for i in range(2)
    ]
    submissions_publish(submissions=Submission.objects.filter(pk__in=[s.pk for s in made]))
    renders, boards = [], selectors.leaderboard_boards
    monkeypatch.setattr(selectors, "leaderboard_boards", lambda: renders.append(1) or boards())
    for path in ("/", "/?utm_source=launch"):  # a new address for the browser, the same cached page for the site
        browser.get(path)
        browser.wait_loaded()
        browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#length-scatter .main-svg"), timeout=30)
    assert len(renders) == 1, "the second page came from the cache"
    assert csp_violations(browser.driver.get_log("browser")) == []


def view_using(what: str):
    """A board-like view whose rendering uses something per visitor; counts its renders."""
    renders = []

    @board_page_cache(("page",), lambda context: {"page": "1"})
    def view(request):
        renders.append(1)
        if what == "csrf":
            get_token(request)
        return TemplateResponse(request, "leaderboard/about_smoke.html", {})

    return view, renders


def anonymous_request(what: str):
    request = RequestFactory().get("/")
    request.user, request.session = AnonymousUser(), SessionStore()
    request._messages = FallbackStorage(request)
    if what == "message":
        add_message(request, constants.INFO, "Logged out.")
    return request


@pytest.mark.parametrize("what", ["csrf", "message"])
def test_a_page_with_a_token_or_a_message_is_private_and_never_stored(db, what, caplog):
    view, renders = view_using(what)
    with caplog.at_level(logging.WARNING, logger="atelier.cache"):
        responses = [view(anonymous_request(what)) for _ in range(2)]
    assert len(renders) == 2  # rendered each time: nothing was stored
    for response in responses:
        assert "private" in response["Cache-Control"] and "no-store" in response["Cache-Control"] and not response.has_header("ETag")
    assert ("not shared: its rendering used a CSRF token" in caplog.text) == (what == "csrf")
    plain, plain_renders = view_using("nothing")
    assert [plain(anonymous_request("nothing")).status_code for _ in range(2)] == [200, 200] and len(plain_renders) == 1


def test_a_visitor_whose_csrf_cookie_is_replaced_gets_a_private_page(client, board):
    client.get("/")  # stored
    client.cookies["csrftoken"] = "not-a-token"
    response = client.get("/")
    assert response.status_code == 200 and "csrftoken" in response.cookies  # the middleware sets a fresh one
    assert "no-store" in response["Cache-Control"] and "public" not in response["Cache-Control"] and not response.has_header("ETag")


def test_with_the_cache_off_the_page_is_as_before(client, board, settings):
    settings.ATELIER_BOARD_CACHE_SECONDS = 0
    response = client.get("/")
    assert response.status_code == 200 and not response.has_header("ETag") and "public" not in response.get("Cache-Control", "")
    with CaptureQueriesContext(connection) as again:
        client.get("/")
    assert board_queries(again.captured_queries)


def test_a_dead_cache_serves_the_page_uncached_with_a_warning(db, settings, caplog, monkeypatch):
    import atelier.cache

    monkeypatch.setitem(atelier.cache._warned, "at", float("-inf"))  # no warning of an earlier test's outage holds this one back
    settings.CACHES = {
        "default": {"BACKEND": "atelier.cache.RedisCache", "LOCATION": "redis://127.0.0.1:1/0", "OPTIONS": {"socket_connect_timeout": 1}}
    }
    view, renders = view_using("nothing")
    with caplog.at_level(logging.WARNING, logger="atelier.cache"):
        responses = [view(anonymous_request("nothing")) for _ in range(2)]
    assert [r.status_code for r in responses] == [200, 200] and len(renders) == 2
    assert "cache unreachable" in caplog.text and "serving uncached" in caplog.text
