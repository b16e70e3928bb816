"""Expert ratings: import (bad lines named, nothing half-written), the /judge/ page and judge_agreement; the page's
figures computed by job and stored, never in the request (ratings/reports.py)."""

from __future__ import annotations

import html
import json

import pytest
from django.core.management import call_command
from django_rq import get_connection
from rq import Queue

from evaluation.judges import JudgeKey
from evaluation.models import Judgement, Submission
from evaluation.reconcile import reconcile
from evaluation.workers import AtelierWorker
from evaluation.workqueue import job_id
from ratings.apps import REPORT_JOB
from ratings.models import ExpertRating, StoredReport
from ratings.services import RatingFileError, expert_ratings_import
from submissions.services import submission_create, submissions_publish
from tests.conftest import ROOT
from tests.test_expert_queue import expert

PROMPTS = [
    ("oe-s01", "Hand-painted gouache of bread loaves on a counter, warm morning light, no text"),
    ("oe-s02", "Soft abstract shapes in indigo and teal, calm, dark, no people"),
    ("co-s01", "Flat vector seed packet, three orange tomatoes, words SUNSET PEAR"),
    ("co-s02", "Blue sign, white arrow right, FOSSIL HALL"),
    ("im-s01", "Red sun over three blue hills, flat poster"),
    ("im-s02", "Brass key on teal wood from above"),
]


@pytest.fixture
def judged(team, sample_pack, scripted_judge):
    data = "\n".join(json.dumps({"task_id": t, "prompt": p}) for t, p in PROMPTS).encode()
    submission = submission_create(team=team, pack=sample_pack, prompter="rated", filename="p.jsonl", data=data)
    submissions_publish(submissions=Submission.objects.filter(pk=submission.pk))
    # Give the judge's prompt scores a spread we know: task i gets clarity i+1 (1..5, the sixth capped at 5).
    for i, (task_id, _) in enumerate(PROMPTS):
        j = Judgement.objects.get(submission=submission, entry__task__task_id=task_id, render=None, skill="prompt_subjective")
        j.scores = {**j.scores, "instructional_clarity": min(i + 1, 5)}
        j.save()
    return Submission.objects.get(pk=submission.pk)


def ratings_file(rows) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


def test_no_template_comment_spans_lines():
    """Django's {# … #} ends on its own line; one that goes on to the next is printed on the page as it stands (the
    like-for-like table printed its comment twice on /judge/): a longer comment is {% comment %}."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in (ROOT / "templates").rglob("*.html")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if line.count("{#") > line.count("#}")
    ]
    assert found == []


@pytest.mark.django_db(transaction=True)
def test_bad_rating_lines_are_named_and_nothing_is_stored(judged):
    rows = [
        {"rater": "ana", "task_id": "oe-s01", "scores": {"instructional_clarity": 3}},
        {"rater": "ana", "task_id": "nope", "scores": {"instructional_clarity": 3}},
        {"rater": "ana", "task_id": "oe-s02", "scores": {"clarity": 9}},
        {"rater": "ana", "task_id": "co-s01", "backend": "smoke-sd", "image_index": 7, "scores": {"mood_atmosphere": 2}},
        {"rater": "ana", "task_id": "co-s01", "checklist": {"made-up item": 1}},
    ]
    with pytest.raises(RatingFileError) as info:
        expert_ratings_import(submission=judged, filename="r.jsonl", data=ratings_file(rows) + b"\n{oops")
    problems = info.value.problems
    assert problems[0] == "r.jsonl:2: no prompt for task_id 'nope' sample 0 in this submission"
    assert "r.jsonl:3: field 'scores': unknown dimension 'clarity'" in problems[1]
    assert "r.jsonl:3: field 'scores': clarity must be an integer 1..5, not 9" in problems[2]
    assert problems[3] == "r.jsonl:4: no rendered image for backend 'smoke-sd' image_index 7"
    assert problems[4] == "r.jsonl:5: field 'checklist': 'made-up item' is not an item of this task's checklist"
    assert problems[5].startswith("r.jsonl:6: invalid JSON")
    assert ExpertRating.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_judge_page_shows_agreement_with_intervals(judged, client, tmp_path, capsys, django_user_model):
    for name in ("ana", "ben"):  # half the tasks are hidden (test split): their raters must be allowed to see hidden checklists
        expert(django_user_model, name, hidden=True)
    co = judged.entries.get(task__task_id="co-s01").task
    judge_items = Judgement.objects.get(submission=judged, entry__task__task_id="co-s01", render=None, skill="prompt_objective").checklist
    labels = {item: judge_items[item] for item in co.prompt_checklist}
    labels[co.prompt_checklist[-1]] = 1 - labels[co.prompt_checklist[-1]]  # the experts disagree on the last item only
    rows = []
    for i, (task_id, _) in enumerate(PROMPTS):
        # Judge: 1 2 3 4 5 5. "ana" gives the same; "ben" gives 1 1 3 3 5 4.
        ana = {"rater": "ana", "task_id": task_id, "scores": {"instructional_clarity": min(i + 1, 5)}}
        rows.append({**ana, "checklist": labels} if task_id == "co-s01" else ana)
        rows.append({"rater": "ben", "task_id": task_id, "scores": {"instructional_clarity": max(min(i + 1, 5) - (i % 2), 1)}})
    path = tmp_path / "ratings.jsonl"
    path.write_bytes(ratings_file(rows))
    call_command("import_expert_ratings", str(path), "--submission", str(judged.pk))
    assert ExpertRating.objects.count() == 12

    page = html.unescape(client.get("/judge/").content.decode())
    assert "12 ratings by 2 raters" in page
    assert "{#" not in page and "#}" not in page and "table_id the table's id" not in page  # a template's comment stays unprinted
    assert not any(f'id="{gap}"' in page for gap in ("one-rater", "no-rubric-correlation", "no-like-for-like"))  # nothing to explain
    clarity = page.split("<td>instructional_clarity</td>")[1].split("</tr>")[0]
    cells = [c.split("</td>")[0].split("<br>")[0] for c in clarity.split('<td class="num">')[1:]]
    # By hand: expert means 1 1.5 3 3.5 5 4.5; ranks of the judge 1 2 3 4 5.5 5.5, of the means 1 2 3 4 6 5
    # -> rho = 17 / sqrt(17 * 17.5) = 0.986; |judge - mean| = 0 .5 0 .5 0 .5 -> MAE 0.25, all within 1.
    assert cells[0] == "0.986" and cells[2] == "0.250" and cells[3] == "1.000"
    assert "[" not in clarity and "too few items for an interval" in clarity  # six tasks: fewer than the 10 an interval needs
    assert cells[4:] == ["6", "6"]
    # Like with like: ana gives the judge's scores (rho 1); ben's ranks 1.5 1.5 3.5 3.5 6 5 against 1 2 3 4 5.5 5.5 give
    # rho = 16 / sqrt(17 * 16.5) = 0.955 with the judge and with ana. Judge-expert (1 + 0.955) / 2 = 0.978; expert-expert 0.955
    # (against the mean the judge showed 0.986 beside a ceiling of 0.955).
    like = page.split('id="like-for-like"')[1].split("<td>overall</td>")[1].split("</tr>")[0]
    like_cells = [c.split("</td>")[0].split("<br>")[0] for c in like.split('<td class="num">')[1:]]
    assert like_cells == ["0.978", "0.955", "6", "6", "2"]
    assert "Spearman's ρ between the judge and each expert, averaged over the experts" in page
    checklist = page.split("<h2>Checklists</h2>")[1]
    accuracy = (len(co.prompt_checklist) - 1) / len(co.prompt_checklist)
    assert f"{accuracy:.3f}" in checklist

    call_command("judge_agreement", "--resamples", "200")
    out = capsys.readouterr().out
    assert "instructional_clarity" in out and f"accuracy {accuracy:.3f}" in out


BEING_COMPUTED = "Being computed — figures appear when the job finishes"


def judge_page(client) -> str:
    return html.unescape(client.get("/judge/").content.decode())


@pytest.mark.django_db(transaction=True)
def test_judge_page_reads_what_report_jobs_stored_and_says_when(judged, client, redis_url, settings, django_user_model):
    """Issue 42: /judge/ computes nothing. Cold, it says its figures are being computed and sends their jobs (unless
    they are coming); a worker computes them and the page shows them with the time; a new rating leaves the last
    figures up, marked as recomputing; a job that fails says why, and is not sent again for the same ratings."""
    settings.REDIS_URL = redis_url
    connection = get_connection("default")
    queue, people = Queue("default", connection=connection), ("people", False, "")
    worker = AtelierWorker([queue], connection=connection)  # rq's SimpleWorker took 20 s to stop (evaluation/workers.py)
    judge = ("judge", False, JudgeKey(judged.judge_id, judged.judge_version).key)
    sent = {job_id(REPORT_JOB, people), job_id(REPORT_JOB, judge)}
    for name in ("ana", "ben", "cy"):
        expert(django_user_model, name, hidden=True)
    rows = [
        {"rater": r, "task_id": t, "scores": {"instructional_clarity": 1 + (i + n) % 5}}
        for i, (t, _) in enumerate(PROMPTS)
        for n, r in enumerate(("ana", "ben"))
    ]
    expert_ratings_import(submission=judged, filename="r.jsonl", data=ratings_file(rows))
    assert set(queue.job_ids) == sent  # sent when the ratings were committed
    queue.empty()

    cold = judge_page(client)  # nothing computed, nothing coming: the page sends the jobs and answers
    assert cold.count(BEING_COMPUTED) == 2 and '<meta http-equiv="refresh"' in cold
    assert 'id="people-agreement"' not in cold and "ratings by" not in cold and "No expert ratings" not in cold
    assert set(queue.job_ids) == sent
    judge_page(client)
    assert len(queue.job_ids) == 2  # coming already: not sent twice

    assert worker.work(burst=True)
    page = judge_page(client)
    stored = StoredReport.objects.get(kind="judge")
    assert stored.error == "" and stored.data["n_ratings"] == 12
    assert f"Computed at {stored.computed_at:%Y-%m-%d %H:%M} UTC." in page.split('id="judge-computed"')[1].split("</p>")[0]
    assert 'id="people-agreement"' in page and "12 ratings by 2 raters" in page and BEING_COMPUTED not in page and "refresh" not in page
    assert page.count('data-computed="current"') == 2 and queue.count == 0

    more = [{"rater": "cy", "task_id": t, "scores": {"instructional_clarity": 3}} for t, _ in PROMPTS[:3]]
    expert_ratings_import(submission=judged, filename="more.jsonl", data=ratings_file(more))
    stale = judge_page(client)  # the last figures stay, said to be recomputed
    assert "12 ratings by 2 raters" in stale and stale.count("; new ratings since, recomputing.") == 1
    assert "; new ratings or judgements since, recomputing." in stale and set(queue.job_ids) == sent
    assert worker.work(burst=True)
    assert "15 ratings by 3 raters" in judge_page(client)
    stamps = sorted(ExpertRating.objects.values_list("pk", "updated"))
    assert expert_ratings_import(submission=judged, filename="more.jsonl", data=ratings_file(more)) == 3
    assert queue.count == 0 and sorted(ExpertRating.objects.values_list("pk", "updated")) == stamps  # the same file again: no change

    entry = judged.entries.get(task__task_id="oe-s01")  # a rating no service checked: written straight to the table
    ExpertRating.objects.create(rater="dee", entry=entry, scores={"instructional_clarity": "high"})
    assert "2 statistics report(s) sent" in str(reconcile())  # no job was sent for it: reconcile sends them
    assert worker.work(burst=True)
    failed = judge_page(client)
    assert {r.error for r in StoredReport.objects.all()} == {"job error (ValueError)"}
    assert "15 ratings by 3 raters" in failed and failed.count("but recomputing them failed on") == 2
    assert failed.count("(job error (ValueError)): these are the last figures computed.") == 2 and "high" not in failed
    assert queue.count == 0 and "0 statistics report(s) sent" in str(reconcile())  # not sent again for the same ratings
