"""What a board claims is what its data support: partial entries warned at upload and never ranked, and a board
that cannot separate neighbours says so once (issue 19)."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluator.metrics.board import board_stats_compute
from submissions.services import token_create
from tests.test_prompting import endpoint, prompter  # noqa: F401 - fixtures

THREE = "\n".join(json.dumps({"task_id": t, "prompt": f"A careful picture for {t}"}) for t in ("oe-s01", "oe-s02", "co-s01")).encode()


@pytest.mark.django_db(transaction=True)
def test_an_upload_that_misses_tasks_is_warned_at_once_on_the_api_and_the_page(client, owner_client, team, sample_pack, no_backends):
    _, token = token_create(team=team, name="ci")
    answer = client.post(
        "/api/v1/submissions",
        {"file": SimpleUploadedFile("p.jsonl", THREE), "prompter": "partial", "pack": "sample"},
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert answer.status_code == 201, answer.content
    (warning,) = answer.json()["warnings"]
    assert "cover 3 of the pack's 6 tasks (missing: 1 CO, 2 IM)" in warning and "unranked" in warning
    page = owner_client.post(
        f"/teams/{team.slug}/submit/",
        {"pack": sample_pack.pk, "prompter": "partial 2", "file": SimpleUploadedFile("p.jsonl", THREE)},
        follow=True,
    )
    shown = page.content.decode()
    assert 'id="pack-coverage"' in shown and "cover 3 of the pack&#x27;s 6 tasks" in shown


def test_a_board_that_cannot_separate_neighbours_says_so():
    """Six tasks (the issue's sample board): even an entry that wins every task against another is not told apart
    with the board's six pair decisions held together, so the board says so and how many tasks a clean sweep needs;
    with 120 tasks the same kind of data is."""
    categories = {f"t{i}": ("OE", "CO", "IM")[i % 3] for i in range(6)}
    every = {f"e{k}": {t: 10.0 * k + i for i, t in enumerate(categories)} for k in range(4)}  # every entry far apart
    data = board_stats_compute(every, {}, categories, dict.fromkeys(categories, "test"))
    assert data["separable"] == {"possible": False, "tests": 6, "tasks": 6, "needed": 14}
    assert not any(c["separated"] for c in data["comparisons"])
    more = {f"t{i:03d}": ("OE", "CO", "IM")[i % 3] for i in range(120)}
    every = {f"e{k}": {t: 30.0 * k + i % 5 for i, t in enumerate(more)} for k in range(3)}
    data = board_stats_compute(every, {}, more, dict.fromkeys(more, "test"))
    assert data["separable"]["possible"] and data["decisions"]["scopes"] == ["overall", "CO", "IM", "OE"]
    assert all(c["separated"] and c["low"] > 0.5 and c["upper_wins"] == 120 for c in data["comparisons"])  # ahead on every task


def test_counts_say_what_was_scored():
    categories = {f"t{i}": ("OE", "CO", "IM")[i % 3] for i in range(30)}
    splits = {t: "test" if i < 24 else "dev" for i, t in enumerate(categories)}
    every = {"full": {t: 50.0 + i % 7 for i, t in enumerate(categories)}, "part": dict.fromkeys(list(categories)[:6], 90.0)}
    data = board_stats_compute(every, {}, categories, splits)
    assert data["ranked_on"] == {"split": "test", "tasks": 24, "entries": 1}  # the partial entry is not counted or ranked
    assert data["entries"]["part"]["rank"] is None and data["entries"]["part"]["covers"] == 6


def test_runs_with_feedback_rounds_are_never_ranked_beside_single_turn_runs():
    categories = {f"t{i}": ("OE", "CO", "IM")[i % 3] for i in range(30)}
    every = {"single": {t: 50.0 + i % 5 for i, t in enumerate(categories)}, "looped": dict.fromkeys(categories, 95.0)}
    data = board_stats_compute(every, {}, categories, dict.fromkeys(categories, "test"), feedback=["looped"])
    assert data["entries"]["single"]["rank"] == 1 and data["entries"]["looped"]["rank"] is None and data["entries"]["looped"]["feedback"]
    assert data["ranked_on"]["entries"] == 1


@pytest.mark.django_db(transaction=True)
def test_the_board_marks_and_filters_runs_with_feedback_rounds(client, team, sample_pack, endpoint, prompter, example_prompts):
    from evaluation.models import Submission
    from submissions.services import endpoint_run_create, submission_create, submissions_publish

    looped = endpoint_run_create(team=team, endpoint=endpoint, pack=sample_pack, rounds=2, feedback_backend="smoke-sd")
    single = submission_create(team=team, pack=sample_pack, prompter="one turn", filename="p.jsonl", data=example_prompts)
    assert submissions_publish(submissions=Submission.objects.filter(pk__in=[looped.pk, single.pk])) == 2
    page = client.get("/").content.decode()
    assert "feedback × 2 rounds" in page and "a run with feedback rounds: not ranked beside single-turn runs" in page
    only = client.get("/?condition=@feedback").content.decode()
    assert "feedback × 2 rounds" in only and ">one turn</a>" not in only
    assert "feedback × 2 rounds" not in client.get("/?condition=@single").content.decode()


def test_a_board_where_no_entry_covers_the_ranked_tasks_ranks_nobody_and_claims_nothing():
    categories = {f"t{i}": ("OE", "CO", "IM")[i % 3] for i in range(30)}
    every = {"a": dict.fromkeys(list(categories)[:12], 60.0), "b": dict.fromkeys(list(categories)[:9], 50.0)}
    data = board_stats_compute(every, {}, categories, dict.fromkeys(categories, "test"))
    assert data["ranked_on"] == {"split": "test", "tasks": 0, "entries": 0} and not data["intervals"]["shown"]
    assert data["entries"]["a"]["rank"] is None and data["comparisons"] == [] and data["wins"] == {}
