"""State of the art over time (issue 32, item 4): the pure step series (leaderboard/sota.py), the page /sota/ and the
release's sota.json, which holds the same data as the page."""

from __future__ import annotations

import html
import json
import re
import zipfile
from datetime import UTC, datetime, timedelta

import pytest
from django.core.files.storage import default_storage

from evaluation.models import BoardStats, Figure, HumanRow, Origin, Status, Submission
from leaderboard.models import Release
from leaderboard.sota import Entry, Point, Reference, sota
from submissions.services import submissions_publish

pytestmark = pytest.mark.sqlite_pass(
    reason="the steps are worked out in Python from the stored board rows, read by the same filters the board page uses, which are tested on both databases"
)

DAY = datetime(2025, 3, 1, 12, tzinfo=UTC)
JUDGE = {"judge_id": "offline", "judge_version": "1"}


def at(days: int) -> datetime:
    return DAY + timedelta(days=days)


def made(pk: int, days: int, overall: float | None = None, origin: str = Origin.FILE, rounds: int = 1, **categories: float) -> Entry:
    figures = {"overall": Point(overall, overall - 5, overall + 5)} if overall is not None else {}
    figures |= {key: Point(value) for key, value in categories.items()}
    return Entry(pk, f"prompter-{pk}", "team", at(days), figures, origin=origin, rounds=rounds)


def series(found: dict, key: str) -> dict:
    return next(s for s in found["series"] if s["key"] == key)


def steps(found: dict, key: str) -> list[tuple[int, float]]:
    return [(s["entry"], s["value"]) for s in series(found, key)["steps"]]


# --- the pure function -------------------------------------------------------------------------------------------


def test_steps_follow_the_date_not_the_entry_id_and_only_a_decided_better_score_steps():
    decided = frozenset({(4, 2, "overall"), (1, 4, "overall"), (1, 6, "overall")})
    entries = [made(1, 5, 70.0), made(2, 0, 50.0), made(3, 2, 45.0), made(4, 3, 60.0), made(5, 9, 69.0), made(6, 4, 65.0)]
    found = sota(entries, decided=decided)
    assert steps(found, "overall") == [(2, 50.0), (4, 60.0), (1, 70.0)]
    (noise,) = series(found, "overall")["within_noise"]  # 65 > 60, but not decided ahead of entry 4: no step
    assert (noise["entry"], noise["holder"], noise["value"]) == (6, 4, 65.0)
    assert steps(sota(entries), "overall") == [(2, 50.0)]  # nothing decided: the first entry holds, whatever the scores
    first, second, third = series(found, "overall")["steps"]
    assert (first["previous"], first["gain"], second["gain"]) == (None, None, 10.0)
    assert third["date"] == "2025-03-06T12:00:00+00:00" and (third["ci_low"], third["ci_high"]) == (65.0, 75.0)
    assert series(found, "overall")["scored"] == 6 and series(found, "overall")["until"] == at(9).isoformat()


def test_on_a_tie_the_earlier_entry_keeps_the_step_and_on_the_same_date_the_lower_id():
    every = frozenset((a, b, "overall") for a in (3, 7, 8, 9) for b in (3, 7, 8, 9) if a != b)
    found = sota([made(7, 1, 60.0), made(3, 4, 60.0), made(9, 0, 55.0), made(8, 1, 60.0)], decided=every)
    assert steps(found, "overall") == [(9, 55.0), (7, 60.0)]
    assert found["shared"] == [{"date": at(1).isoformat(), "entries": 2}]  # 7 and 8: one instant, ordered by id


def test_each_category_is_its_own_series_counting_the_entries_scored_in_it():
    decided = frozenset((a, b, key) for key in ("overall", "OE", "CO", "IM") for a in range(1, 5) for b in range(1, 5) if a > b)
    found = sota(
        [
            made(1, 0, 50.0, OE=40.0, CO=70.0),
            made(2, 1, 55.0, OE=60.0),
            made(3, 2, 52.0, OE=50.0, CO=75.0, IM=30.0),
            Entry(4, "w", "t", at(3), {"IM": Point(99.0, standing="withheld"), "CO": Point(80.0, standing="partial")}),
        ],
        decided=decided,
    )
    assert [s["key"] for s in found["series"]] == ["overall", "OE", "CO", "IM"]
    assert steps(found, "OE") == [(1, 40.0), (2, 60.0)]
    assert steps(found, "CO") == [(1, 70.0), (3, 75.0), (4, 80.0)] and series(found, "CO")["steps"][-1]["standing"] == "partial"
    assert steps(found, "IM") == [(3, 30.0)]  # a withheld figure is shown without a value: no score, no step
    assert [series(found, k)["scored"] for k in ("overall", "OE", "CO", "IM")] == [3, 3, 3, 1]
    empty = {"key": "overall", "name": "Overall", "scored": 0, "until": None, "steps": [], "within_noise": [], "humans": []}
    assert sota([])["series"][0] == empty


def test_human_rows_are_references_never_steps_and_feedback_runs_set_none():
    people = Reference("Humans — all", "all", False, 12, {"overall": Point(90.0, 85.0, 95.0), "OE": Point(None)})
    entries = [made(1, 0, 50.0), made(2, 1, 99.0, origin=Origin.HUMAN), made(3, 2, 98.0, rounds=3), made(4, 3, 60.0)]
    found = sota(entries, [people], frozenset({(4, 1, "overall"), (2, 1, "overall"), (3, 1, "overall")}))
    assert steps(found, "overall") == [(1, 50.0), (4, 60.0)]
    assert found["left_out"] == {"human": 1, "feedback": 1} and series(found, "overall")["scored"] == 2
    (reference,) = series(found, "overall")["humans"]
    assert reference == {
        "label": "Humans — all",
        "tier": "all",
        "scripted": False,
        "participants": 12,
        "value": 90.0,
        "ci_low": 85.0,
        "ci_high": 95.0,
        "standing": "full",
    }
    assert series(found, "OE")["humans"] == []  # no value: no reference line


# --- through the site --------------------------------------------------------------------------------------------


def entry(team, pack, prompter: str, days: int, overall: float, submitted: int | None = None, **categories: float) -> Submission:
    """A finished entry first published `days` after DAY (as if it had been withdrawn since), with overall and category
    figures and their intervals; not on the board until it is published."""
    submission = Submission.objects.create(
        team=team, pack=pack, pack_revision=pack.revision, prompter=prompter, status=Status.DONE, judge_label="offline judge", **JUDGE
    )
    submitted_at = at(days if submitted is None else submitted) - timedelta(hours=1)
    Submission.objects.filter(pk=submission.pk).update(created=submitted_at, published_at=at(days))  # publishing keeps it
    named = {"judge_label": "offline judge", **JUDGE}
    figures = [
        Figure(submission=submission, scope="overall", key="overall", value=overall, ci_low=overall - 8, ci_high=overall + 8, **named)
    ]
    figures += [
        Figure(submission=submission, scope="category", key=c, value=v, ci_low=v - 10, ci_high=v + 10, n=2, **named)
        for c, v in categories.items()
    ]
    Figure.objects.bulk_create(figures)
    return submission


@pytest.fixture
def board(team, sample_pack):
    """Four entries first published on four days (one submitted long before), published on the board together; a human
    baseline row for the same judge."""
    made = [
        entry(team, sample_pack, "Lantern <early>", 0, 50.0, OE=45.0, CO=60.0, IM=40.0),
        entry(team, sample_pack, "Beacon & co", 3, 62.0, OE=70.0, CO=55.0, IM=61.0),
        entry(team, sample_pack, "Candle", 6, 58.0, OE=71.0, CO=50.0, IM=52.0),
        entry(team, sample_pack, "Slow burner", 8, 65.0, submitted=1, OE=40.0, CO=50.0, IM=50.0),  # submitted early, published last
    ]
    HumanRow.objects.create(
        pack=sample_pack,
        revision=sample_pack.revision,
        tier="all",
        judge_label="offline judge",
        figures=[
            {"scope": s, "key": k, "value": v, "n": 6, "failures": 0, "ci_low": v - 6, "ci_high": v + 6, "scale": "score_0_100"}
            for s, k, v in (("overall", "overall", 80.0), ("category", "OE", 82.0), ("category", "CO", 78.0), ("category", "IM", 81.0))
        ],
        tasks=list(sample_pack.tasks.values_list("task_id", flat=True)),
        participants=4,
        **JUDGE,
    )
    submissions_publish(submissions=Submission.objects.filter(pk__in=[s.pk for s in made]))
    # Six tasks decide nothing head to head; the page reads the board's stored decisions, so store some as a board
    # with more tasks would have them: Beacon and then Slow burner ahead overall, Beacon and Candle on OE.
    lantern, beacon, candle, slow = (str(s.pk) for s in made)
    claims = [[beacon, lantern, "overall"], [slow, beacon, "overall"], [beacon, lantern, "OE"], [candle, beacon, "OE"]]
    decisions = {"tests": 24, "confidence": 0.95, "scopes": ["overall", "OE"], "rest": 0.99, "ahead": [[*c, 0.99] for c in claims]}
    BoardStats.objects.filter(pack=sample_pack, **JUDGE).update(decisions=decisions)
    return sample_pack, made


def address(pack) -> str:
    return f"/sota/?board={pack.pk}:{pack.revision}&judge=offline%7C1"


def page_data(content: str) -> dict:
    return json.loads(html.unescape(re.search(r'<script id="sota-data" type="application/json">(.*?)</script>', content, re.S).group(1)))


def test_the_page_shows_each_series_steps_and_the_human_reference(client, board):
    pack, (lantern, beacon, candle, slow) = board
    response = client.get(address(pack))
    assert response.status_code == 200
    content = response.content.decode()
    data = page_data(content)
    overall = [(s["entry"], s["value"]) for s in series(data, "overall")["steps"]]
    assert overall == [(lantern.pk, 50.0), (beacon.pk, 62.0), (slow.pk, 65.0)]  # dated by publication, not submission
    assert [s["entry"] for s in series(data, "OE")["steps"]] == [lantern.pk, beacon.pk, candle.pk]
    assert [s["entry"] for s in series(data, "CO")["steps"]] == [lantern.pk]
    assert series(data, "overall")["steps"][1]["ci_low"] == 54.0  # the board row's own interval
    assert [h["value"] for h in series(data, "IM")["humans"]] == [81.0]
    noise = [(n["entry"], n["holder"]) for n in series(data, "IM")["within_noise"]]
    assert noise == [(beacon.pk, lantern.pk), (candle.pk, lantern.pk), (slow.pk, lantern.pk)]  # above 40, none decided
    assert "within noise of Lantern &lt;early&gt;" in content.split('id="sota-IM"')[1].split("</tbody>")[0]
    assert data["board"] == {"pack": pack.name, "pack_version": pack.version, "revision": pack.revision}
    table = content.split('id="sota-table"')[1]
    shown = table.split('id="sota-overall"')[1].split("</tbody>")[0]
    assert "Lantern &lt;early&gt;" in shown and "Beacon &amp; co" in shown and "Candle" not in shown
    assert "[54.0, 70.0]" in shown and "+12.0" in shown and "Humans — all" in shown and "2025-03-04" in shown and "2025-03-09" in shown
    assert 'src="/static/vendor/plotly/plotly.min.js"' in content and 'src="/static/js/sota_chart.js"' in content
    board_page = client.get(f"/?board={pack.pk}:{pack.revision}").content.decode()
    link = board_page.split('id="sota-link"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    assert link == address(pack)


def test_an_unknown_board_is_a_404_that_says_so_and_an_unknown_judge_gets_the_boards_own(client, board):
    pack, _ = board
    for asked in ("/sota/", "/sota/?board=999:1", "/sota/?board=nonsense&judge=offline%7C1"):
        response = client.get(asked)
        content = response.content.decode()
        assert response.status_code == 404 and "No such board" in content, asked
        assert f"/sota/?board={pack.pk}:{pack.revision}" in content  # the boards there are, to pick from
    response = client.get(f"/sota/?board={pack.pk}:{pack.revision}&judge=nobody%7C0")  # as the board page answers it
    assert response.status_code == 200 and "offline judge (1)" in response.content.decode()


def test_the_release_carries_sota_json_with_the_page_data(client, board):
    from leaderboard.releases import key_create, releases_make

    pack, _ = board
    key_create()
    assert releases_make(pack.pk, pack.revision) == 1
    release = Release.objects.get()
    assert "sota.json" in [m["name"] for m in release.members]
    with default_storage.open(release.file, "rb") as handle, zipfile.ZipFile(handle) as archive:
        carried = json.loads(archive.read("sota.json"))
    assert carried == page_data(client.get(address(pack)).content.decode())
    assert [s["value"] for s in series(carried, "overall")["steps"]] == [50.0, 62.0, 65.0]


PAGE_CHECK = """
const charts = [...document.querySelectorAll('.sota-chart')];
const scroller = document.querySelector('.table-scroll');
return {drawn: charts.filter((c) => c.querySelector('svg.main-svg')).length, charts: charts.length,
        page: document.documentElement.scrollWidth, table: scroller.scrollWidth, box: scroller.clientWidth,
        widest: Math.max(...charts.map((c) => c.getBoundingClientRect().right))};
"""


def test_the_page_fits_a_phone_and_a_desktop_and_draws_its_charts(browser, board):
    from tests.test_phone_widths import DESKTOP, PHONE, set_width

    pack, _ = board
    for width in (DESKTOP, PHONE):
        set_width(browser, width)
        browser.get(address(pack))
        browser.wait_loaded()
        browser.wait(lambda d: d.execute_script(PAGE_CHECK)["drawn"] == 4)
        shown = browser.driver.execute_script(PAGE_CHECK)
        assert shown["page"] <= width and shown["widest"] <= width, (width, shown)  # the table scrolls in its own box
        if width == PHONE:
            assert shown["table"] > shown["box"], shown
        errors = [e for e in browser.driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors  # a CSP violation among them
        height = browser.driver.execute_script("return document.documentElement.scrollHeight")
        browser.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 800}
        )
        browser.shot(f"sota-{width}")
