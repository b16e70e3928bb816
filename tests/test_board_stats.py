"""Board statistics on the site: computed by a job when the board changes, stored, shown beside the table."""

from __future__ import annotations

import json

import pytest

from evaluation.boards import board_inputs, board_stats_compute
from evaluator.metrics.ranking import board_score
from leaderboard.models import BoardStats, Figure
from submissions.models import PromptEntry, Submission
from submissions.services import submissions_publish

JUDGE = {"judge_id": "test-judge", "judge_version": "v1"}


def entry(team, pack, name: str, scores: dict[str, float], words: int) -> Submission:
    """(Prompt lengths vary by task around `words`, so length and entry can be told apart.)"""
    """A finished submission whose stored figures follow from `scores` (per task), as figures_rebuild would store them."""
    submission = Submission.objects.create(team=team, pack=pack, pack_revision=pack.revision, prompter=name, status="done", judge_label="test judge", **JUDGE)
    tasks = {t.task_id: t for t in pack.tasks.all()}
    categories = {t: task.category for t, task in tasks.items()}
    for i, task_id in enumerate(scores):
        PromptEntry.objects.create(submission=submission, task=tasks[task_id], text=" ".join(["word"] * (words + 3 * i)))
    rows = [Figure(submission=submission, scope="task", key=t, value=v, n=1, **JUDGE) for t, v in scores.items()]
    for category in sorted(set(categories[t] for t in scores)):
        values = [v for t, v in scores.items() if categories[t] == category]
        rows.append(Figure(submission=submission, scope="category", key=category, value=sum(values) / len(values), n=len(values), **JUDGE))
    rows.append(Figure(submission=submission, scope="overall", key="overall", value=board_score(scores, categories), n=len(scores), **JUDGE))
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
    assert stats.entries[str(strong.pk)]["arena_rank"] == 1 and stats.entries[str(strong.pk)]["win_rate"] == 1.0
    assert stats.entries[str(twin_a.pk)]["arena_rank"] == stats.entries[str(twin_b.pk)]["arena_rank"] == 2  # cannot be separated
    assert stats.settings["replicates"] == 1000
    # Rerunning the computation on the same stored inputs gives the same numbers (seeded): the download's promise.
    again = board_stats_compute(*board_inputs(pack, pack.revision, **JUDGE))
    assert json.loads(json.dumps(again["entries"])) == stats.entries


def test_board_shows_rank_ranges_ties_win_rates_length_control_and_the_split_gap(client, board):
    pack, strong, twin_a, twin_b = board
    page = client.get("/").content.decode()
    assert "Rank (95 % range)" in page and "tied" in page and "Win rate" in page and "Length-controlled" in page
    assert "Test split" in page and "Gap" in page  # the sample pack has a hidden test split
    assert 'id="win-heatmap-data"' in page and "vendor/plotly/plotly.min.js" in page
    stats = BoardStats.objects.get(pack=pack, **JUDGE).entries[str(strong.pk)]
    assert stats["gap"] == pytest.approx(stats["dev"] - stats["test"])
    by_lc = client.get("/?sort=lc&dir=desc").content.decode()
    lc = {s.pk: BoardStats.objects.get(pack=pack, **JUDGE).entries[str(s.pk)]["lc"] for s in (strong, twin_a, twin_b)}
    first = max(lc, key=lambda k: lc[k] if lc[k] is not None else -1)
    names = {strong.pk: "strong", twin_a.pk: "twin-a", twin_b.pk: "twin-b"}
    positions = {n: by_lc.index(f">{n}</a>") for n in names.values()}
    assert min(positions, key=positions.get) == names[first]


def test_unpublishing_rebuilds_the_board_without_the_entry(admin_client, board):
    pack, strong, twin_a, twin_b = board
    admin_client.post("/admin/submissions/submission/", {"action": "unpublish", "_selected_action": [strong.pk]})
    stats = BoardStats.objects.get(pack=pack, **JUDGE)
    assert str(strong.pk) not in stats.entries and len(stats.entries) == 2
