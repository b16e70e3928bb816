"""Text the database cannot store (issue 41): PostgreSQL refuses NUL in text, and UTF-8 cannot encode an unpaired
surrogate. A NUL in the address, or in any query or form parameter's name or value, is a 400 naming the parameter
(atelier/unstorable.py) before any view runs; so is either character anywhere in a JSON body. The fuzz loop sends
NUL and a few other odd values to every parameter of every public GET route and fails on any 5xx."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from evaluation.models import Submission
from leaderboard import selectors
from leaderboard.filters import FILTER_PARAMS
from leaderboard.views import BOARD_PARAMS
from submissions.services import submissions_publish, token_create
from teams.services import card_for
from tests.test_board_stats import entry

BOARD = "board={board}&judge={judge}"
# (path, the query that makes the route answer 200, every query parameter the route reads): the public GET routes,
# and the API's GET routes any team's token reaches
ROUTES = (
    ("/", BOARD, BOARD_PARAMS),
    ("/api/v1/boards", "pack=sample", ("pack", "judge", *FILTER_PARAMS)),
    ("/board.atom", BOARD, ("board", "judge")),
    ("/board.zip", BOARD, ("board", "judge")),
    ("/sota/", BOARD, ("board", "judge")),
    ("/releases/", BOARD, ("board", "judge")),
    ("/releases/latest.json", BOARD, ("board", "judge")),
    ("/submissions/{a}/", "", ("page", "judge")),
    ("/submissions/{a}/breakdown.csv", "", ("judge",)),
    ("/compare/", "a={a}&b={b}", ("a", "b", "pick", "judge", "category", "tag", "split", "sort", "page")),
    ("/prompters/{card}/", "", ()),
    ("/tasks/", "pack={pack}", ("pack", "category", "tag", "split")),
    ("/tasks/{pack}/oe-s01/", "", ()),
    ("/judge/", "", ("judge",)),
    ("/about/smoke/", "", ()),
    ("/releases/keys.json", "", ()),
    ("/accounts/login/", "", ("next",)),
    ("/accounts/signup/", "", ()),
    ("/accounts/password_reset/", "", ()),
    ("/api/v1/openapi.json", "", ()),
    ("/api/v1/submissions/{a}/calls", "", ("offset",)),
    ("/api/v1/submissions/{a}/breakdown.jsonl", "", ("judge",)),
    ("/api/v1/prompters", "", ()),
    ("/healthz", "", ()),
    ("/readyz", "", ()),
)
# Path parameters a view looks up as text (a NUL there is refused like one in the query)
PATHS = ("/tasks/{pack}/oe%00s01/", "/study/tok%00en/", "/account/notifications/unsubscribe/a%00b/", "/media/targets/a%00b.png")
NUL = ("%00", "a%00b", "%00%00x")
# Odd but storable: an overflowing number, NUL spelt as overlong UTF-8 (Django decodes it to U+FFFD), quotes and
# markup, and a long value
ODD = ("9" * 30, "%C0%80", "%27%22%3C%3E;--", "x" * 2000)


@pytest.fixture
def site(team, sample_pack) -> dict:
    tasks = sorted(sample_pack.tasks.values_list("task_id", flat=True))
    a = entry(team, sample_pack, "strong", {t: 80.0 + i for i, t in enumerate(tasks)}, words=10)
    b = entry(team, sample_pack, "weak", {t: 40.0 + i for i, t in enumerate(tasks)}, words=12)
    card = card_for(team=team, name="strong")
    Submission.objects.filter(pk=a.pk).update(card=card)  # for its prompter page
    submissions_publish(submissions=Submission.objects.filter(pk__in=[a.pk, b.pk]))
    board = selectors.leaderboard_boards()[0]
    judge = selectors.board_judges(board, humans=False)[0]
    names = {"board": board.key, "judge": judge.key, "a": a.pk, "b": b.pk, "card": card.pk, "pack": sample_pack.pk}
    return {"names": names, "token": token_create(team=team, name="fuzz")[1]}


def test_every_public_get_parameter_refuses_nul_by_name_and_never_answers_5xx(site):
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {site['token']}")
    failures, sent, server_errors = [], 0, 0

    def ask(url: str, expect_400_naming: str | None = None) -> None:
        nonlocal sent, server_errors
        sent += 1
        response = client.get(url)
        body = b"".join(response.streaming_content if response.streaming else [response.content]).decode(errors="replace")
        if response.status_code >= 500:
            server_errors += 1
            failures.append(f"{url[:120]}: HTTP {response.status_code}")
        elif expect_400_naming is not None and (response.status_code != 400 or expect_400_naming not in body):
            failures.append(f"{url[:120]}: HTTP {response.status_code}, not a 400 naming {expect_400_naming!r}: {body[:200]!r}")

    for path, base, params in ROUTES:
        path, base = path.format(**site["names"]), base.format(**site["names"])
        baseline = client.get(f"{path}?{base}")
        assert baseline.status_code == 200, (path, baseline.status_code)  # so the fuzz reaches the route's real work
        for param in (*params, "unknown"):
            others = "&".join(p for p in base.split("&") if p and not p.startswith(f"{param}="))
            for value in NUL:
                ask(f"{path}?{others}&{param}={value}", expect_400_naming=f"'{param}'")
            ask(f"{path}?{others}&{param}%00=1", expect_400_naming="\\x00")
            for value in ODD if param in params else ():
                ask(f"{path}?{others}&{param}={value}")
    for path in PATHS:
        ask(path.format(**site["names"]), expect_400_naming="address")
    print(
        f"query fuzz: {sent} requests, {server_errors} answered 5xx, {len(failures) - server_errors} others not a 400 naming the parameter"
    )
    failures.sort(key=lambda failure: ": HTTP 5" not in failure)  # server errors first
    assert not failures, f"{len(failures)} of {sent} requests failed:\n" + "\n".join(failures[:60])


@pytest.mark.parametrize(("body", "field"), [({"name": "a\x00b"}, "name"), ({"name": "ok", "family": "Qwen\ud800"}, "family")])
def test_a_json_body_with_nul_or_an_unpaired_surrogate_is_refused_naming_the_field(client, team, body, field):
    token = token_create(team=team, name="ci")[1]
    sent = json.dumps(body)  # ASCII: \u0000 and \ud800 escapes, as any JSON encoder writes them
    response = client.post("/api/v1/prompters", sent, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 400 and response.json()["field"] == field and f"'{field}'" in response.json()["error"]
    assert not team.prompters.exists()


def test_a_nul_in_a_form_field_or_a_cookie_is_refused_naming_it(db):
    client = Client()
    draft = client.post("/study/any-invitation/draft", {"position": "0", "text": "a prompt\x00"})
    assert draft.status_code == 400 and "form field 'text' contains a NUL character" in draft.content.decode()
    client.cookies["sessionid"] = "abcdefgh\x00ijklmnop"  # sent quoted, the NUL spelt \000, which Django reads back as NUL
    page = client.get("/about/smoke/")
    assert page.status_code == 400 and "cookie 'sessionid' contains a NUL character" in page.content.decode()
