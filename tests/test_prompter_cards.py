"""Prompter cards (issue 32): existing submissions migrate to a card per (team, prompter name); a team describes and
edits its cards on its page, each change a version; the board shows each entry's card as it was when published,
filters by it in the URL and the API, and carries it in the release; each prompter has a page."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import F

from evaluation.models import Submission
from leaderboard.filters import BoardFilter
from submissions.services import submissions_publish
from teams.models import Prompter
from teams.services import card_for, card_save, parameters_label, parameters_parse
from tests.test_board_stats import entry

BEFORE = [("evaluation", "0004_judgement_throttled"), ("teams", "0001_initial")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_attaches_every_existing_submission_to_a_card_per_team_and_name() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    Team, Submission_, Pack = (apps.get_model(*m.split(".")) for m in ("teams.Team", "evaluation.Submission", "tasks.TaskPack"))
    pack = Pack.objects.create(name="p", version="1")
    lab, study = Team.objects.create(name="lab", slug="lab"), Team.objects.create(name="study", slug="study")
    made = [
        Submission_.objects.create(team=lab, pack=pack, prompter="gpt-x", status="done", published=True),
        Submission_.objects.create(team=lab, pack=pack, prompter="gpt-x", status="failed"),
        Submission_.objects.create(team=lab, pack=pack, prompter="rule", is_baseline=True, status="done", published=True),
        Submission_.objects.create(team=study, pack=pack, prompter="gpt-x", origin="human", status="done"),
    ]
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    rows = {s.pk: s for s in Submission.objects.select_related("card", "card_version")}
    assert set(rows) == {s.pk for s in made} and all(s.card_id for s in rows.values())  # every submission has a card
    cards = {(c.team.slug, c.name): c.kind for c in Prompter.objects.select_related("team")}
    assert cards == {("lab", "gpt-x"): "", ("lab", "rule"): "rule", ("study", "gpt-x"): "human"}  # one per team and name
    assert rows[made[0].pk].card_id == rows[made[1].pk].card_id != rows[made[3].pk].card_id
    published = [s for s in rows.values() if s.published]
    assert len(published) == 2 and all(s.card_version and s.card_version.number == 1 and s.published_at for s in published)
    assert all(s.card_version_id is None for s in rows.values() if not s.published)
    assert all(c.versions.count() == 1 for c in Prompter.objects.all())


@pytest.mark.parametrize(
    ("text", "count", "label"), [("7B", 7 * 10**9, "7B"), ("350m", 350 * 10**6, "350M"), ("1.5T", 15 * 10**11, "1.5T")]
)
def test_parameter_counts_read_and_print_with_their_unit(text: str, count: int, label: str) -> None:
    assert parameters_parse(text) == count and parameters_label(count) == label
    for bad in ("abc", "-1B", "7 billion", "0"):
        with pytest.raises(ValueError, match="parameters"):
            parameters_parse(bad)


def test_a_member_describes_a_prompter_and_every_change_is_a_version(owner_client, team, client, stranger) -> None:
    new = f"/teams/{team.slug}/prompters/new/"
    good = {"name": "Qwen-prompter", "kind": "mllm", "family": "Qwen2.5-VL", "weights": "open", "parameters": "7B"}
    refused = owner_client.post(new, {**good, "paper_url": "javascript:alert(1)", "parameters": "lots"})
    assert refused.status_code == 400 and not Prompter.objects.exists()
    errors = refused.context["form"].errors
    assert set(errors) == {"paper_url", "parameters"} and "7B" in errors["parameters"][0]
    saved = owner_client.post(new, {**good, "description": "<b>bold</b> claims", "contact": "lab@example.org"})
    card = Prompter.objects.get(team=team)
    assert saved.status_code == 302 and card.parameters == 7 * 10**9 and card.described
    owner_client.post(f"/teams/{team.slug}/prompters/{card.pk}/", {**good, "description": "<b>bold</b> claims", "family": "Qwen3-VL"})
    versions = list(card.versions.order_by("number").values_list("number", "changed", "user__username"))
    assert versions == [
        (1, ["name", "kind", "family", "weights", "parameters", "description", "contact"], "owner"),
        (2, ["family", "contact"], "owner"),  # the contact left blank this time: a change too
    ]
    page = owner_client.get(f"/teams/{team.slug}/prompters/{card.pk}/").content.decode()
    assert 'id="card-versions"' in page and "family, contact" in page
    client.force_login(stranger)
    assert client.get(f"/teams/{team.slug}/prompters/{card.pk}/").status_code == 404  # another team's card


@pytest.fixture
def carded_board(team, sample_pack):
    """Three published entries: an open 7B MLLM, a closed agent of unstated size, and one nobody described."""
    tasks = sorted(sample_pack.tasks.values_list("task_id", flat=True))
    cards = {
        "Lantern": {"kind": "mllm", "family": "Qwen2.5-VL", "weights": "open", "parameters": 7 * 10**9, "contact": "secret@lab.org"},
        "Atlas agent": {"kind": "agent", "family": "GPT-5", "weights": "closed", "paper_url": "https://example.org/paper"},
    }
    made = {}
    for i, name in enumerate(("Lantern", "Atlas agent", "Bare")):
        submission = entry(team, sample_pack, name, {t: 70.0 - 10 * i + j % 3 for j, t in enumerate(tasks)}, words=10 + 5 * i)
        submission.figures.exclude(scope="task").update(ci_low=F("value") - 10, ci_high=F("value") + 10)
        card = card_for(team=team, name=name)
        if name in cards:
            card_save(team=team, user=None, values=cards[name], card=card)
        Submission.objects.filter(pk=submission.pk).update(card=card)
        made[name] = submission
    submissions_publish(submissions=Submission.objects.filter(pk__in=[s.pk for s in made.values()]))
    return sample_pack, made


def _names(client, url: str) -> list[str]:
    page = client.get(url).content.decode()
    table = page[page.index('id="board-table"') :]
    return re.findall(r'<a href="/submissions/\d+/">([^<]+)</a>', table)


def test_the_board_filters_by_what_each_card_said_when_published(client, carded_board) -> None:
    pack, made = carded_board
    board = f"/?board={pack.pk}:{pack.revision}"
    assert _names(client, board) == ["Lantern", "Atlas agent", "Bare"]
    # the team changes its card after publication: the board keeps what the entry was published with
    card = Prompter.objects.get(name="Lantern")
    card_save(team=card.team, user=None, values={"kind": "agent", "parameters": 70 * 10**9}, card=card)
    assert _names(client, board + "&kind=mllm") == ["Lantern"] and _names(client, board + "&kind=agent") == ["Atlas agent"]
    assert _names(client, board + "&params_min=1B&params_max=10B") == ["Lantern"]  # the 7B it was published with
    assert _names(client, board + "&weights=closed") == ["Atlas agent"]
    assert _names(client, board + "&q=qwen") == ["Lantern"] and _names(client, board + "&q=atlas+agent") == ["Atlas agent"]
    assert _names(client, board + "&described=1") == ["Lantern", "Atlas agent"]
    assert _names(client, board + "&origin=endpoint") == []
    page = client.get(board + "&kind=robot&params_min=lots").content.decode()
    assert "Not applied: kind: one of" in page and "params_min: a count" in page
    shown = client.get(board + "&kind=mllm").content.decode()
    assert "Qwen2.5-VL · 7B · open weights" in shown and "secret@lab.org" not in shown
    assert "1 entry of the board's 3 matches" in re.sub(r"<[^>]+>", "", shown)
    assert "kind=mllm" in re.search(r'href="\?board=[^"]*sort=OE[^"]*"', shown).group(0)  # sorting keeps the filter

    api = client.get(f"/api/v1/boards?pack={pack.name}&kind=mllm&params_max=10B").json()
    assert [r["prompter"] for r in api["rows"]] == ["Lantern"] and api["filters"] == {"kind": "mllm", "params_max": "10B"}
    assert api["rows"][0]["card"]["parameters"] == "7B" and "contact" not in api["rows"][0]["card"]
    assert client.get(f"/api/v1/boards?pack={pack.name}&weights=heavy").status_code == 400

    files = {}
    import io
    import zipfile

    download = client.get(f"/board.zip?board={pack.pk}:{pack.revision}")
    with zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    cards = {e["prompter"]: e["card"] for e in json.loads(files["board.json"])["entries"]}
    assert cards["Lantern"]["kind"] == "mllm" and cards["Lantern"]["parameters"] == 7 * 10**9 and "contact" not in cards["Lantern"]
    assert cards["Bare"]["kind"] == ""


def test_each_prompter_has_a_page_with_its_entries_scores_and_chart(client, admin_client, carded_board) -> None:
    pack, made = carded_board
    card = Prompter.objects.get(name="Lantern")
    page = client.get(f"/prompters/{card.pk}/").content.decode()
    assert "Qwen2.5-VL" in page and "7B" in page and "secret@lab.org" not in page
    assert f'href="/submissions/{made["Lantern"].pk}/"' in page and 'id="prompter-chart-0"' in page
    chart = json.loads(re.search(r'id="prompter-chart-data"[^>]*>(.*?)</script>', page, re.S).group(1))
    (group,) = chart["groups"]
    assert group["board"] == f"{pack.name} v{pack.version}" and f'<h3 class="chart-board">{group["board"]}</h3>' in page
    assert [s["name"] for s in group["series"]][0] == "overall" and all(len(s["x"]) == 1 for s in group["series"])
    assert all(low <= y <= high for s in group["series"] for y, low, high in zip(s["y"], s["low"], s["high"], strict=True))
    assert "secret@lab.org" in admin_client.get(f"/prompters/{card.pk}/").content.decode()  # the contact: staff only
    atlas = client.get(f"/prompters/{Prompter.objects.get(name='Atlas agent').pk}/").content.decode()
    assert '<a href="https://example.org/paper" rel="nofollow noopener"' in atlas
    board = client.get(f"/?board={pack.pk}:{pack.revision}").content.decode()
    assert f'href="/prompters/{card.pk}/"' in board  # board rows link their prompter's page
    unpublished = card_for(team=card.team, name="draft")
    assert client.get(f"/prompters/{unpublished.pk}/").status_code == 404  # no published entry: not public


def test_the_prompter_chart_draws_each_board_apart_and_one_judge_only() -> None:
    """Entries on different packs (other tasks) never share an axis: one group of series per board, named."""
    from datetime import UTC, datetime

    from evaluation.judges import JudgeKey
    from leaderboard.selectors import Board, Cell, PrompterEntry, prompter_chart
    from tasks.models import TaskPack

    packs = [TaskPack(pk=1, name="sample", version="1"), TaskPack(pk=2, name="original", version="3")]
    judge, other = JudgeKey("j", "1", "judge J"), JudgeKey("k", "1")

    def made(pk: int, pack: TaskPack, revision: int, value: float, by: JudgeKey = judge) -> PrompterEntry:
        shown = Submission(pk=pk, published_at=datetime(2025, 1, pk, tzinfo=UTC))
        cell = Cell("overall", "overall", value, ci_low=value - 5, ci_high=value + 5)
        return PrompterEntry(shown, Board(pack, revision), by, None, cell, {"OE": Cell("category", "OE", value)}, None)

    entries = [made(1, packs[0], 1, 40.0), made(2, packs[1], 1, 70.0), made(3, packs[0], 1, 45.0), made(4, packs[0], 2, 50.0)]
    chart = prompter_chart([*entries, made(5, packs[1], 1, 90.0, other)])
    assert chart["judge"] == "judge J" and [g["board"] for g in chart["groups"]] == ["sample v1", "original v3", "sample v1 rev 2"]
    overall = [next(s for s in g["series"] if s["name"] == "overall") for g in chart["groups"]]
    assert [o["y"] for o in overall] == [[40.0, 45.0], [70.0], [50.0]]  # the other judge's 90 is in the table only
    assert overall[0]["x"] == ["#1 (2025-01-01)", "#3 (2025-01-03)"]


def test_a_filter_is_one_spelling_for_links_and_the_cache() -> None:
    shown, problems = BoardFilter.parse({"kind": "mllm", "params_min": "7000000000", "q": "  qwen   vl ", "described": "on"})
    assert problems == [] and shown.answered() == {"kind": "mllm", "params_min": "7B", "q": "qwen vl", "described": "1"}
    assert BoardFilter.parse(shown.answered())[0] == shown and not BoardFilter().active
