"""The submission page's steerability table (issue 19, item 6): a figure with its interval only where the data carry it,
otherwise the reason in words. Calls are stored rows of a finished three-round run; no prompter is called."""

from __future__ import annotations

import html

import pytest

from evaluation.models import CallStatus, PromptCall, Status, Submission
from evaluation.trajectories import submission_steerability
from tasks.models import Task

CLIMB = [[10, 30, 60, 90, 90], [15, 45, 85, 85, 85]]  # best score reaches 81-100 in round 4 and round 3
STUCK = [5, 10, 8, 12, 9]  # never leaves the bottom bin


def tasks_of(pack, category: str, count: int) -> list[Task]:
    """The pack's tasks of a category, topped up with plain ones so that a category can have enough targets."""
    have = list(pack.tasks.filter(category=category).order_by("task_id"))
    extra = [
        Task.objects.create(pack=pack, task_id=f"{category.lower()}-x{i}", category=category, title=f"Extra {i}", brief="A brief.")
        for i in range(count - len(have))
    ]
    return (have + extra)[:count]


def finished_run(team, pack) -> Submission:
    """OE: five tasks, eight samples each, climbing; CO: four samples on two tasks, stuck at the bottom; IM: one sample."""
    submission = Submission.objects.create(
        team=team,
        pack=pack,
        prompter="scripted",
        origin="endpoint",
        condition="plain",
        status=Status.DONE,
        samples=8,
        rounds=5,
        feedback_backend="smoke-sd",
    )
    plan = [("OE", 5, [CLIMB[s % 2] for s in range(8)]), ("CO", 2, [STUCK] * 4), ("IM", 1, [[100]])]
    for category, n_tasks, trajectories in plan:
        for task in tasks_of(pack, category, n_tasks):
            for sample, scores in enumerate(trajectories):
                for round_, score in enumerate(scores):
                    PromptCall.objects.create(
                        submission=submission,
                        task=task,
                        sample_index=sample,
                        round=round_,
                        status=CallStatus.OK,
                        text=f"prompt {round_}",
                        feedback_status="ok",
                        feedback_score=score,
                    )
    return submission


def steer_row(page: str, category: str) -> str:
    table = page.split('id="steerability"')[1].split("</table>")[0]
    return table.split(f'id="steerability-{category}"')[1].split("</tr>")[0]


@pytest.mark.django_db(transaction=True)
def test_submission_page_shows_a_figure_only_where_the_data_carry_it(owner_client, team, sample_pack):
    submission = finished_run(team, sample_pack)
    rows = {r["category"]: r for r in submission_steerability(submission)}
    assert {c: r["status"] for c, r in rows.items()} == {"OE": "shown", "CO": "never_reached", "IM": "too_few"}
    oe = rows["OE"]
    assert oe["low"] <= oe["expected_rounds"] <= oe["high"] and oe["prior_share"] <= 0.5
    assert (oe["n_targets"], oe["n_trajectories"], oe["n_reached"]) == (5, 40, 40)

    page = html.unescape(owner_client.get(f"/submissions/{submission.pk}/").content.decode())
    assert "95 % percentile bootstrap over trajectories" in page
    shown = steer_row(page, "OE")
    assert f'{oe["expected_rounds"]:.2f} <span class="ci">[{oe["low"]:.2f}, {oe["high"]:.2f}]</span>' in shown
    assert f"{round(100 * oe['prior_share'])} %" in shown
    assert "never reached the top bin in any of 8 trajectories" in steer_row(page, "CO")
    im = steer_row(page, "IM")
    assert "not shown: too few trajectories (needs at least 2 on each of at least 5 tasks; 0 tasks have that)" in im
    assert "1 left out: fewer than 2 trajectories" in im and "smoke-sd" in im
    # ArtWhisperer's Algorithm 1 beside it on the same tasks, with the standard error over tasks; none where withheld
    assert f'{oe["artwhisperer"]:.2f} <span class="ci">± {oe["artwhisperer_se"]:.2f}</span>' in shown
    assert rows["CO"]["artwhisperer"] is None and '<td class="num steer-artwhisperer">—</td>' in steer_row(page, "CO")
