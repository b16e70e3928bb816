"""Figures say what they rest on: an incomplete run's figures are partial or withheld on its page and in the API,
never a bare score; once complete they read as normal (issue 18, item 8)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from evaluation.models import Status, Submission
from evaluator.judge.scales import scale_named
from evaluator.metrics.aggregate import Unit
from evaluator.metrics.coverage import FULL, PARTIAL, WITHHELD, coverage, coverage_words, standing
from submissions.services import submission_create, submissions_publish, token_create
from tests.openai_server import Reply, judge_responder

# One IM and one OE prompt, two test backends (one image each): 12 composite units are planned. With every model
# call failing, only the 2 target-similarity units (IM, one per backend) are scored.
PROMPTS = b'{"task_id": "im-s01", "prompt": "A red sun over three blue hills"}\n{"task_id": "oe-s01", "prompt": "Gouache bread loaves in warm light"}\n'


def unit(skill: str, status: str, backend: str = "b", value: float | None = 0.5, category: str = "IM") -> Unit:
    return Unit("t1", category, 0, skill, status, value if status == "ok" else None, backend, 1, "rate_0_1", composite=skill != "render")


def test_coverage_counts_planned_units_and_standing_reads_them():
    units = [
        unit("a", "ok"),
        unit("a", "failed"),
        unit("b", "ok", backend=""),
        unit("render", "failed"),
        unit("a", "skipped"),
        unit("a", "blocked"),
    ]
    found = coverage(units)
    assert found[("overall", "overall")] == {
        "scored": 2,
        "planned": 4,
        "skills": {"a": [1, 2], "b": [1, 1]},
    }  # skipped, blocked: not planned
    assert found[("backend", "b")] == {"scored": 1, "planned": 3, "skills": {"a": [1, 2]}}  # the failed render counts once
    assert found[("part", "prompt")]["planned"] == 1 and found[("skill", "a")] == {"scored": 1, "planned": 2, "skills": {}}
    assert standing(found[("overall", "overall")], done=True, max_missing=0.05) == WITHHELD  # skill a: half missing
    assert standing(found[("overall", "overall")], done=True, max_missing=0.5) == PARTIAL
    assert standing({"scored": 3, "planned": 3, "skills": {"a": [3, 3]}}, done=True, max_missing=0.05) == FULL
    assert standing({"scored": 3, "planned": 3, "skills": {"a": [3, 3]}}, done=False, max_missing=0.05) == PARTIAL
    assert (standing({}, done=True, max_missing=0.05), standing({}, done=False, max_missing=0.05)) == (FULL, PARTIAL)  # not recorded
    assert coverage_words({"scored": 2, "planned": 12}) == "rests on 2 of 12 judged units (17 %)"


def scores_table(page: str) -> str:
    return page.split('<table id="scores">')[1].split("</table>")[0]


@pytest.mark.django_db(transaction=True)
def test_an_incomplete_run_shows_partial_and_withheld_figures_with_their_coverage(
    owner_client, admin_client, team, sample_pack, scripted_judge
):
    scripted_judge.default = lambda request: Reply(status=500, content="scripted outage")  # every model call fails
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=PROMPTS)
    submission.refresh_from_db()
    assert submission.status == Status.INCOMPLETE, submission.error
    overall = submission.figures.get(scope="overall")
    assert overall.value is not None and overall.coverage["scored"] == 2  # stored as computed: from target similarity alone
    _, token = token_create(team=team, name="t")

    page = owner_client.get(f"/submissions/{submission.pk}/").content.decode()
    table = scores_table(page)
    assert 'id="partial-note"' in page and "partial: the run is incomplete" in page
    assert '<td>overall</td><td>overall</td><td class="num"><span class="badge status-failed">withheld</span></td>' in table
    row = table.split("<td>overall</td><td>overall</td>")[1].split("</tr>")[0]
    assert f"{overall.value:.1f}" not in row and "rests on 2 of 12 judged units (17 %)" in row
    similarity = submission.figures.get(scope="skill", key="target_similarity")
    assert (
        f'{similarity.value:.{scale_named(similarity.scale).digits}f} <span class="badge status-incomplete">partial</span>' in table
        and "rests on 2 of 2 judged units (100 %)" in table
    )

    figures = owner_client.get(f"/api/v1/submissions/{submission.pk}", HTTP_AUTHORIZATION=f"Bearer {token}").json()["figures"]
    assert figures["overall:overall"] == {
        "value": None,
        "scale": "score_0_100",
        "partial": True,
        "withheld": True,
        "coverage": {"scored": 2, "planned": 12},
        "low": None,
        "high": None,
        "interval_note": "no interval: withheld, as its value is (too many of its planned units are missing)",
    }
    assert figures["skill:target_similarity"]["partial"] and not figures["skill:target_similarity"]["withheld"]
    assert (
        figures["skill:target_similarity"]["coverage"] == {"scored": 2, "planned": 2}
        and figures["skill:target_similarity"]["value"] == similarity.value
    )
    assert all(f["partial"] for f in figures.values())  # the run is not done: nothing reads as a normal score

    scripted_judge.default = judge_responder  # the endpoint is back: retry the failed judgements
    assert admin_client.post(f"/submissions/{submission.pk}/retry/").status_code == 302
    submission.refresh_from_db()
    assert submission.status == Status.DONE, submission.error
    overall = submission.figures.get(scope="overall")
    table = scores_table(owner_client.get(f"/submissions/{submission.pk}/").content.decode())
    assert (
        f'<td>overall</td><td>overall</td><td class="num">{overall.value:.1f}</td>' in table
        and "rests on 12 of 12 judged units (100 %)" in table
    )
    figures = owner_client.get(f"/api/v1/submissions/{submission.pk}", HTTP_AUTHORIZATION=f"Bearer {token}").json()["figures"]
    assert figures["overall:overall"] == {
        "value": overall.value,
        "scale": "score_0_100",
        "partial": False,
        "withheld": False,
        "coverage": {"scored": 12, "planned": 12},
        "low": overall.ci_low,
        "high": overall.ci_high,
        "interval_note": None,
    }

    assert submissions_publish(submissions=Submission.objects.filter(pk=submission.pk)) == 1
    board = owner_client.get("/").content.decode()
    link = board.split('id="board-download"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    with zipfile.ZipFile(io.BytesIO(b"".join(owner_client.get(link).streaming_content))) as archive:
        entry = json.loads(archive.read("board.json"))["entries"][0]
    assert entry["coverage"]["overall:overall"] == {"scored": 12, "planned": 12, "standing": "full"}


@pytest.mark.django_db(transaction=True)
def test_a_done_run_that_misses_units_is_marked_partial_on_its_board(owner_client, team, sample_pack, scripted_judge, settings):
    settings.ATELIER_MAX_MISSING_RATE = 1.0  # a deployment that accepts any missing rate: the run is done, not complete
    scripted_judge.default = lambda request: Reply(status=500, content="scripted outage")
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=PROMPTS)
    submission.refresh_from_db()
    assert submission.status == Status.DONE, submission.error
    assert submissions_publish(submissions=Submission.objects.filter(pk=submission.pk)) == 1
    overall = submission.figures.get(scope="overall")
    board = owner_client.get("/").content.decode()
    assert f'{overall.value:.1f}<br><span class="ci">partial: rests on 2 of 12 judged units (17 %)</span>' in board
    link = board.split('id="board-download"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    with zipfile.ZipFile(io.BytesIO(b"".join(owner_client.get(link).streaming_content))) as archive:
        entry = json.loads(archive.read("board.json"))["entries"][0]
    assert entry["coverage"]["overall:overall"] == {"scored": 2, "planned": 12, "standing": "partial"}
