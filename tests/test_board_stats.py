"""Board statistics on the site: computed by a job when the board changes, stored, shown beside the table."""

from __future__ import annotations

import json
import re

import pytest

from evaluation.boards import board_inputs
from evaluation.models import BoardStats, Figure, PromptEntry, Submission
from evaluator.metrics.board import board_stats_compute
from evaluator.metrics.ranking import board_score
from submissions.services import submissions_publish

JUDGE = {"judge_id": "test-judge", "judge_version": "v1"}


def entry(team, pack, name: str, scores: dict[str, float], words: int) -> Submission:
    """(Prompt lengths vary by task around `words`, so length and entry can be told apart.)"""
    """A finished submission whose stored figures follow from `scores` (per task), as figures_rebuild would store them."""
    submission = Submission.objects.create(
        team=team, pack=pack, pack_revision=pack.revision, prompter=name, status="done", judge_label="test judge", **JUDGE
    )
    tasks = {t.task_id: t for t in pack.tasks.all()}
    categories = {t: task.category for t, task in tasks.items()}
    for i, task_id in enumerate(scores):
        PromptEntry.objects.create(submission=submission, task=tasks[task_id], text=" ".join(["word"] * (words + 3 * i)))
    rows = [Figure(submission=submission, scope="task", key=t, value=v, n=1, **JUDGE) for t, v in scores.items()]
    for category in sorted({categories[t] for t in scores}):
        values = [v for t, v in scores.items() if categories[t] == category]
        rows.append(Figure(submission=submission, scope="category", key=category, value=sum(values) / len(values), n=len(values), **JUDGE))
    rows.append(
        Figure(submission=submission, scope="overall", key="overall", value=board_score(scores, categories), n=len(scores), **JUDGE)
    )
    Figure.objects.bulk_create(rows)
    return submission


@pytest.fixture
def board(team, sample_pack):
    tasks = sorted(sample_pack.tasks.values_list("task_id", flat=True))
    strong = entry(team, sample_pack, "strong", {t: 80.0 + i for i, t in enumerate(tasks)}, words=40)
    twin_a = entry(team, sample_pack, "twin-a", {t: 50.0 + (i % 2) for i, t in enumerate(tasks)}, words=10)
    twin_b = entry(team, sample_pack, "twin-b", {t: 50.0 + ((i + 1) % 2) for i, t in enumerate(tasks)}, words=12)
    submissions_publish(submissions=Submission.objects.filter(pk__in=[strong.pk, twin_a.pk, twin_b.pk]))
    return sample_pack, strong, twin_a, twin_b


def test_publishing_computes_and_stores_the_board_statistics(board):
    pack, strong, twin_a, twin_b = board
    stats = BoardStats.objects.get(pack=pack, **JUDGE)
    assert set(stats.entries) == {str(strong.pk), str(twin_a.pk), str(twin_b.pk)}
    # Two tasks a category: intervals are given, and at 95 % they rule out only a few points at each end, so every rank
    # is 1 with a range to the last place (nothing is claimed the data do not support); the win rate has its interval.
    assert stats.intervals == {"shown": True, "confidence": 0.95, "method": "star-bets"} and not stats.style["identified"]
    shown = stats.entries[str(strong.pk)]
    assert (shown["rank"], shown["rank_high"]) == (1, 3) and shown["low"] < 5 and shown["high"] > 95
    assert shown["win_rate"] == 1.0 and 0 < shown["win_low"] < 1 == shown["win_high"]  # it beats both on every task
    assert stats.entries[str(twin_a.pk)]["rank"] == stats.entries[str(twin_b.pk)]["rank"] == 1
    # Rerunning the computation on the same stored inputs gives the same numbers (seeded): the download's promise.
    again = board_stats_compute(**board_inputs(pack, pack.revision, **JUDGE))
    assert json.loads(json.dumps(again["entries"])) == stats.entries


def test_a_small_board_says_what_its_data_cannot_support(client, board):
    pack, strong, twin_a, twin_b = board
    page = client.get("/").content.decode()
    assert 'id="not-separable"' in page and 'id="no-style-control"' in page and "Length-controlled" not in page
    assert "tied" in page and "Rank</th>" in page and "95 % range" not in page and "<th>#</th>" not in page  # one rank column
    assert "[-100.0, 100.0]" in page and "n=2 · no interval" not in page  # the neighbours' interval: wide, not withheld
    assert "Test split" in page and "Gap" in page  # the sample pack has a hidden test split
    stats = BoardStats.objects.get(pack=pack, **JUDGE).entries[str(strong.pk)]
    assert stats["gap"] == pytest.approx(stats["dev"] - stats["test"])
    assert stats["gap_low"] <= stats["gap"] <= stats["gap_high"] and stats["gap_high"] - stats["gap_low"] > 100  # one task a split


@pytest.fixture
def wide_board(transactional_db, team):
    """The original pack (360 tasks, 300 of them hidden): enough tasks for intervals, rank ranges and style control."""
    from django.conf import settings

    from tasks.loaders import read_own_pack
    from tasks.services import pack_save

    pack, _ = pack_save(data=read_own_pack(settings.BASE_DIR / "tasks" / "packs" / "atelier-original"))
    tasks = sorted(pack.tasks.values_list("task_id", flat=True))
    noise = [((i * 7919) % 23 - 11) / 2 for i in range(len(tasks))]  # fixed, task by task
    made = [
        entry(team, pack, name, {t: base + noise[(i + shift) % len(tasks)] for i, t in enumerate(tasks)}, words=words)
        for name, base, shift, words in (("strong", 80.0, 0, 30), ("twin-a", 50.0, 1, 10), ("twin-b", 50.2, 2, 20))
    ]
    for submission in made:  # lengths vary within each entry, and each entry's range holds the board's typical length
        for i, prompt in enumerate(submission.entries.order_by("task__task_id")):
            prompt.text = " ".join(["word"] * (5 + (i * 37) % 60))
            prompt.save(update_fields=["text"])
    submissions_publish(submissions=Submission.objects.filter(pk__in=[s.pk for s in made]))
    return pack, *made


def test_a_board_with_enough_tasks_shows_intervals_rank_ranges_and_style_control(client, wide_board):
    pack, strong, twin_a, twin_b = wide_board
    stats = BoardStats.objects.get(pack=pack, **JUDGE)
    assert stats.intervals["shown"] and stats.style["identified"] and stats.ranked_on == {"split": "test", "tasks": 300, "entries": 3}
    rows = {s.prompter: stats.entries[str(s.pk)] for s in (strong, twin_a, twin_b)}
    assert (rows["strong"]["rank"], rows["strong"]["rank_high"]) == (1, 1) and rows["strong"]["win_rate"] > 0.9
    # The twins' means are 0.2 apart, but twin-b beats twin-a on 16 of every 23 tasks (the fixed noise's pattern): 300
    # tasks decide that, so each has one rank, twin-b's above.
    assert [(rows[n]["rank"], rows[n]["rank_high"], rows[n]["position"]) for n in ("twin-b", "twin-a")] == [(2, 2, 1), (3, 3, 2)]
    assert all(r["low"] <= r["score"] <= r["high"] and 0 <= r["lc"] <= 100 for r in rows.values())
    page = client.get(f"/?board={pack.pk}:{pack.revision}").content.decode()
    assert "(2–3)</span>" not in page and "badge tied" not in page and "Length-controlled" in page and 'id="not-separable"' not in page
    assert page.index(">twin-b</a>") < page.index(">twin-a</a>") and page.count("ahead of next") == 2
    Submission.objects.filter(pk=twin_b.pk).update(origin="endpoint")  # a filter hides strong's neighbour, twin-b
    hints = re.findall(
        r'<span class="ci gap-[^"]*" title="([^"]*)">([^<]*)</span>',
        client.get(f"/?board={pack.pk}:{pack.revision}&origin=file").content.decode(),
    )
    assert hints == [
        (
            "its neighbour on the whole board is hidden here: against the next row shown (1 row between hidden), decided ahead of it head to head (all decisions held together at 95 %)",
            "ahead of next shown",
        )
    ]
    assert "300 tasks scored for each of the 3 ranked entries" in page
    by_lc = client.get(f"/?board={pack.pk}:{pack.revision}&sort=lc&dir=desc").content.decode()
    first = max(rows, key=lambda name: rows[name]["lc"])
    assert min(("strong", "twin-a", "twin-b"), key=lambda n: by_lc.index(f">{n}</a>")) == first


def test_the_compare_view_states_the_boards_own_decision(client, wide_board):
    pack, strong, twin_a, twin_b = wide_board
    stats = BoardStats.objects.get(pack=pack, **JUDGE)
    assert stats.decisions["tests"] == 3 * 4 and stats.decisions["scopes"] == ["overall", "CO", "IM", "OE"]  # 100 test tasks a category
    a, b = (dict(Figure.objects.filter(submission=s, scope="task").values_list("key", "value")) for s in (twin_a, twin_b))
    test = set(pack.tasks.filter(split="test").values_list("task_id", flat=True))
    b_wins = sum(b[t] > a[t] for t in test)
    page = client.get(f"/compare/?a={twin_a.pk}&b={twin_b.pk}").content.decode()
    verdict = page.split('id="compare-verdict"')[1].split("</p>")[0]
    assert f"B beats A on {b_wins} of 300 ranked tasks" in verdict and "B ahead" in verdict and "one of the board's 12" in verdict
    assert page.count("(ranked tasks)") == 4  # overall and each category: the board's decisions
    low, high = stats.wins[f"{twin_b.pk}:{twin_a.pk}"][3:]  # the win table's cell, with the board's interval
    assert 0.5 < low <= b_wins / 300 <= high and stats.wins[f"{twin_a.pk}:{twin_b.pk}"][3:] == [1 - high, 1 - low]
    board = client.get(f"/?board={pack.pk}:{pack.revision}").content.decode()
    assert f'<br><span class="ci">[{round(100 * low)}, {round(100 * high)}]</span>' in board.split('id="win-table"')[1]
    api = {r["prompter"]: r for r in client.get(f"/api/v1/boards?pack={pack.name}").json()["rows"]}  # the API says the same
    assert [(api[n]["rank"], api[n]["rank_high"]) for n in ("strong", "twin-b", "twin-a")] == [(1, 1), (2, 2), (3, 3)]
    assert api["twin-b"]["win_low"] <= api["twin-b"]["win_rate"] <= api["twin-b"]["win_high"]


def test_unpublishing_rebuilds_the_board_without_the_entry(admin_client, board):
    pack, strong, twin_a, twin_b = board
    admin_client.post("/admin/evaluation/submission/", {"action": "unpublish", "_selected_action": [strong.pk]})
    stats = BoardStats.objects.get(pack=pack, **JUDGE)
    assert str(strong.pk) not in stats.entries and len(stats.entries) == 2


def test_eta_comes_from_this_runs_own_pace(team, sample_pack):
    from datetime import timedelta

    from django.utils import timezone

    from evaluation.selectors import submission_eta

    submission = Submission.objects.create(
        team=team, pack=sample_pack, prompter="p", status="judging", started=timezone.now() - timedelta(seconds=100)
    )
    progress = {"renders": {"done": 10, "pending": 0}, "judgements": {"done": 10, "pending": 30}}
    eta = submission_eta(submission, progress)
    assert eta["per_second"] == pytest.approx(0.2, rel=0.01) and eta["seconds_left"] == pytest.approx(150, rel=0.02)
    assert submission_eta(submission, {"renders": {"done": 2, "pending": 5}})["seconds_left"] is None  # too few to trust
    submission.status = "done"
    assert submission_eta(submission, progress) is None


def test_daily_cap_selection_limit_and_withdrawal(client, settings, owner, team, sample_pack, example_prompts):
    from submissions.services import CapReached, daily_cap_check, entry_select

    settings.ATELIER_DAILY_SUBMISSIONS, settings.ATELIER_BOARD_SELECTION = 3, 2
    tasks = sorted(sample_pack.tasks.values_list("task_id", flat=True))
    made = [entry(team, sample_pack, f"try-{i}", dict.fromkeys(tasks, 40.0 + i), words=10) for i in range(3)]
    Submission.objects.create(team=team, pack=sample_pack, prompter="broken", status="failed")  # does not count
    with pytest.raises(CapReached, match="3 submissions in the last 24 hours"):
        daily_cap_check(team)
    client.force_login(owner)
    refused = client.post(f"/teams/{team.slug}/submit/", {"pack": sample_pack.pk, "prompter": "one more", "file": _file(example_prompts)})
    assert refused.status_code == 429 and "the cap" in refused.content.decode()
    entry_select(submission=made[0])
    entry_select(submission=made[1])
    with pytest.raises(CapReached, match="already shows 2 entries"):
        entry_select(submission=made[2])
    page = client.get("/").content.decode().split('id="team-rows"')[0]  # the public rows (the team's own unpublished ones follow)
    assert "try-0" in page and "try-1" in page and "try-2" not in page and "3 submissions" in page
    client.post(f"/submissions/{made[0].pk}/board/", {"action": "withdraw"})
    made[0].refresh_from_db()
    assert not made[0].published and made[0].withdrawn is not None
    assert "try-0" not in client.get("/").content.decode().split('id="team-rows"')[0]
    assert str(made[0].pk) not in BoardStats.objects.get(pack=sample_pack, **JUDGE).entries
    client.post(f"/submissions/{made[2].pk}/board/")
    assert Submission.objects.get(pk=made[2].pk).published


def _file(data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("prompts.jsonl", data)


def test_board_download_recomputes_to_the_published_numbers(client, team, sample_pack, example_prompts, tmp_path):
    """Two real evaluated entries (in-process): their board zip recomputes, offline, to the same figures and statistics."""
    import zipfile

    from evaluator.recompute import differences, recompute
    from submissions.services import submission_create

    made = [submission_create(team=team, pack=sample_pack, prompter=f"p{i}", filename="p.jsonl", data=example_prompts) for i in range(2)]
    submissions_publish(submissions=Submission.objects.filter(pk__in=[s.pk for s in made]))
    page = client.get("/").content.decode()
    link = page.split('id="board-download"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    response = client.get(link)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    path = tmp_path / "board.zip"
    path.write_bytes(b"".join(response.streaming_content))
    names = set(zipfile.ZipFile(path).namelist())
    assert {"README.md", "board.json", "tasks.csv", "units.jsonl", "prompts.jsonl", "breakdown.csv", "rationales.jsonl"} <= names
    assert differences(path) == []
    published = json.loads(zipfile.ZipFile(path).read("board.json"))
    spec = published["judge"]["spec"]
    assert (
        spec["engine"] == "embedding" and spec["route"] and spec["base_version"] and published["statistics"]["ranked_on"]["split"] == "all"
    )
    tampered = tmp_path / "tampered.zip"
    published["entries"][0]["figures"]["overall:overall"]["value"] += 1  # every kind of tamper: tests/test_recompute_tamper.py
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(tampered, "w") as target:
        for name in source.namelist():
            target.writestr(name, json.dumps(published) if name == "board.json" else source.read(name))
    assert [d.split(": published")[0] for d in differences(tampered)] == [f"entries[entry={made[0].pk}].figures.overall:overall.value"]
    again = recompute(path)
    overall = {str(e["entry"]): e["figures"]["overall:overall"]["value"] for e in again["entries"]}
    assert overall == {str(s.pk): pytest.approx(Figure.objects.get(submission=s, scope="overall").value) for s in made}
    entry_page = client.get(f"/submissions/{made[0].pk}/").content.decode()
    assert 'id="category-backend"' in entry_page and 'id="parts"' in entry_page and 'id="top1-vs-mean"' in entry_page
    assert 'id="tag-table"' in entry_page and 'id="tag-chart-data"' in entry_page and "Vector_Flat" in entry_page
    assert set(Figure.objects.filter(submission=made[0], scope="part").values_list("key", flat=True)) == {"prompt", "image"}
    hidden = [t.task_id for t in sample_pack.tasks.filter(split="test")]
    rationales = zipfile.ZipFile(path).read("rationales.jsonl").decode()
    assert not any(f'"task_id": "{t}"' in rationales for t in hidden)  # hidden tasks' rationales stay on the server


def test_board_pages_through_entries(client, monkeypatch, board):
    import leaderboard.selectors

    monkeypatch.setattr(leaderboard.selectors, "BOARD_PAGE", 2)
    first, second = client.get("/").content.decode(), client.get("/?page=2").content.decode()
    assert "Page 1 of 2 (3 entries)" in first and ">strong</a>" in first and ">strong</a>" not in second
    assert sum(f">{n}</a>" in second for n in ("twin-a", "twin-b")) == 1


def test_a_pack_with_enough_hidden_test_tasks_is_ranked_by_them(client, monkeypatch, team, sample_pack):
    """The sample pack has one test task per category; asking for one makes it rank by that split: the statistics use
    the test tasks only, the page sorts by the test score by default and says so, and dev and gap stay visible."""
    import evaluation.boards

    monkeypatch.setattr(evaluation.boards, "SETTINGS", {**evaluation.boards.SETTINGS, "ranked_split_min": 1})
    splits = dict(sample_pack.tasks.values_list("task_id", "split"))
    tuned = entry(team, sample_pack, "tuned", {t: 90.0 if s == "dev" else 30.0 for t, s in splits.items()}, words=10)
    honest = entry(team, sample_pack, "honest", {t: 50.0 + (i % 3) for i, t in enumerate(splits)}, words=14)
    submissions_publish(submissions=Submission.objects.filter(pk__in=[tuned.pk, honest.pk]))
    stats = BoardStats.objects.get(pack=sample_pack, **JUDGE)
    assert stats.ranked_on == {"split": "test", "tasks": 3, "entries": 2}
    assert stats.entries[str(tuned.pk)]["score"] == pytest.approx(30.0) and stats.entries[str(tuned.pk)]["gap"] == pytest.approx(60.0)
    assert stats.entries[str(honest.pk)]["rank"] == 1
    page = client.get("/").content.decode()
    assert "Ranked by the hidden test split" in page and page.index(">honest</a>") < page.index(
        ">tuned</a>"
    )  # overall would put tuned first
    overall = client.get("/?sort=overall&dir=desc").content.decode()
    assert overall.index(">tuned</a>") < overall.index(">honest</a>")


def test_board_stats_without_enough_test_tasks_rank_every_task(board):
    pack, *_ = board
    stats = BoardStats.objects.get(pack=pack, **JUDGE)
    assert stats.ranked_on == {"split": "all", "tasks": pack.tasks.count(), "entries": 3}


def test_an_entry_that_misses_tasks_is_listed_unranked_with_what_it_covers(client, team, board):
    pack, strong, *_ = board
    some = sorted(pack.tasks.exclude(category="IM").values_list("task_id", flat=True))[:3]
    partial = entry(team, pack, "partial", dict.fromkeys(some, 99.0), words=10)  # the best scores, on 3 of 6 tasks
    submissions_publish(submissions=Submission.objects.filter(pk=partial.pk))
    stats = BoardStats.objects.get(pack=pack, **JUDGE).entries[str(partial.pk)]
    missing = [c for c in ("OE", "CO", "IM") if pack.tasks.filter(category=c).exclude(task_id__in=some).exists()]
    assert (stats["rank"], stats["covers"], stats["of"], stats["missing"]) == (None, 3, 6, missing) and "IM" in missing
    page = client.get("/").content.decode()
    assert page.index(">strong</a>") < page.index(">partial</a>") and "covers 3 of 6 tasks (missing:" in page


def test_the_board_page_reads_the_same_number_of_queries_whatever_the_board_size(client, team, sample_pack):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    tasks = sorted(sample_pack.tasks.values_list("task_id", flat=True))

    def queries() -> int:
        client.get("/")  # warm: sessions, content types
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/").status_code == 200
        return len(captured.captured_queries)

    made = [entry(team, sample_pack, f"e{i}", {t: 40.0 + i + (j % 2) for j, t in enumerate(tasks)}, words=10) for i in range(3)]
    submissions_publish(submissions=Submission.objects.filter(pk__in=[s.pk for s in made]))
    few = queries()
    made += [entry(team, sample_pack, f"f{i}", {t: 30.0 + i + (j % 3) for j, t in enumerate(tasks)}, words=12) for i in range(40)]
    submissions_publish(submissions=Submission.objects.filter(pk__in=[s.pk for s in made]))
    assert queries() == few


def test_board_shows_the_list_formatting_effect_beside_length(client, wide_board):
    """Prompts written as tag lists in some tasks and prose in others let the fit separate the list effect."""
    from evaluation.boards import board_stats_rebuild

    pack, *made = wide_board
    for i, submission in enumerate(made):
        for j, prompt in enumerate(submission.entries.order_by("task__task_id")):
            if j % 2:
                prompt.text = ", ".join(["masterpiece", "best quality", "fox", "snow", "dusk"][: 4 + (j + i) % 2])
                prompt.save()
    board_stats_rebuild(pack_id=pack.pk, revision=pack.revision)
    length = BoardStats.objects.get(pack=pack, **JUDGE).length
    assert any(e["list_coefficient"] is not None for e in length)
    assert "points for a list" in client.get(f"/?board={pack.pk}:{pack.revision}").content.decode()
