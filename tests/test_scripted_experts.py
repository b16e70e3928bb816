"""The demo's scripted expert raters (demo/experts.py): rules, not people. Their ratings are stored as scripted,
never reach the people's figures, and get a /judge/ section of their own with the same figures and intervals.

The board is made directly (no rendering, no judge calls): the showcase pack's 24 tasks, three rule prompters, a noise
image per prompt, and judgements whose scores we set."""

from __future__ import annotations

import html
import importlib
import io
import re

import numpy as np
import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command
from PIL import Image

from demo.experts import RATERS, demo_experts, rate_image, rate_prompt
from demo.original import RULES
from demo.showcase import SHOWCASE_RULES, showcase_data
from evaluation.models import Figure, Judgement, PromptEntry, Render, Submission, UnitStatus
from evaluator.judge.types import PROMPT_DIMENSIONS
from ratings.agreement import agreement_report, build_inputs, judges_with_ratings, people_report, scripted_section
from ratings.models import ExpertRating, Pool, TaskPool
from ratings.services import RatingFileError, ScriptedRating, expert_ratings_import, scripted_ratings_save
from tasks.services import pack_save

JUDGE = {"judge_id": "scripted-judge", "judge_version": "1"}
PROMPTERS = {"Rule: brief verbatim": RULES["Rule: brief verbatim"], **SHOWCASE_RULES}
SECTION = "Scripted raters (demo) — rules, not people"


def noise_png(seed: int) -> bytes:
    """A 64×64 image whose contrast, colour and centre vary with the seed over the band the raters read."""
    rng = np.random.default_rng(seed)
    grey = 0.5 + rng.normal(0, rng.uniform(0.05, 0.1), (64, 64))
    grey[16:48, 16:48] += rng.uniform(-0.03, 0.03)
    tint = rng.uniform(0.2, 0.45, 3) * np.array([1, -1, 0.5])
    pixels = np.clip(grey[..., None] + tint[None, None, :] - tint.mean(), 0, 1)
    buffer = io.BytesIO()
    Image.fromarray((pixels * 255).astype(np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def judged_like(scores: dict[str, int], shift: int) -> dict[str, int]:
    """The judge's scores: the first scripted rater's, moved by -1, 0 or +1 (kept in 1..5)."""
    return {d: min(5, max(1, s + (shift + n) % 3 - 1)) for n, (d, s) in enumerate(scores.items())}


@pytest.fixture
def board(team):
    """The showcase pack with three rule prompters, one image per prompt, judged, and a Figure so the judge is listed."""
    pack, _ = pack_save(data=showcase_data())
    tasks = list(pack.tasks.order_by("task_id"))
    submissions = []
    for s, (name, rule) in enumerate(PROMPTERS.items()):
        submission = Submission.objects.create(team=team, pack=pack, prompter=name, status="done", published=True)
        Figure.objects.create(submission=submission, **JUDGE, judge_label="scripted judge (demo)", scope="overall", key="overall", value=50)
        for n, task in enumerate(tasks):
            entry = PromptEntry.objects.create(submission=submission, task=task, text=rule(task))
            render = Render(
                entry=entry, backend="smoke-sd", image_index=0, seed=n, config_hash="c" * 8, prompt_sha="p", status=UnitStatus.OK
            )
            render.image.save(f"{submission.pk}-{n}.png", ContentFile(noise_png(100 * s + n)), save=True)
            prompt, image = rate_prompt(RATERS[0], entry), rate_image(RATERS[0], render, Image.open(render.image.path))
            for skill, on, scores in (("prompt_subjective", None, prompt.scores), ("image_subjective", render, image.scores)):
                Judgement.objects.create(
                    submission=submission,
                    entry=entry,
                    render=on,
                    skill=skill,
                    **JUDGE,
                    status=UnitStatus.OK,
                    scores=judged_like(scores, n + s),
                )
            checks = {item: label if i else 1 - label for i, (item, label) in enumerate(prompt.checklist.items())}  # differs on one item
            Judgement.objects.create(
                submission=submission, entry=entry, skill="prompt_objective", **JUDGE, status=UnitStatus.OK, checklist=checks
            )
        submissions.append(submission)
    return pack, Submission.objects.filter(pk__in=[s.pk for s in submissions])


def people_rate(submission: Submission, tasks: int = 4) -> int:
    """Two people, ana and ben, rate the prompts of the first tasks: the same items the scripted raters rate."""
    entries = list(submission.entries.select_related("task").order_by("task__task_id")[:tasks])
    for i, entry in enumerate(entries):
        ana = {d: 1 + (i + j) % 5 for j, d in enumerate(PROMPT_DIMENSIONS)}
        ExpertRating.objects.create(rater="ana", entry=entry, scores=ana)
        ExpertRating.objects.create(rater="ben", entry=entry, scores={d: max(1, s - i % 2) for d, s in ana.items()})
    return 2 * len(entries)


def test_scripted_defaults_to_false_in_the_model_and_the_migration(db):
    field = importlib.import_module("ratings.migrations.0007_expertrating_scripted").Migration.operations[0].field
    assert field.default is False and ExpertRating._meta.get_field("scripted").default is False


def test_the_rules_rate_every_prompt_and_image_once_and_a_second_run_adds_nothing(board, team):
    pack, submissions = board
    said = []
    TaskPool.objects.create(task=pack.tasks.order_by("task_id").first(), pool=Pool.EXEMPLAR)  # it calibrates the judge: left out
    new = demo_experts(pack, submissions, said.append)
    assert new == 2 * 2 * 3 * 23  # two raters, a prompt and an image, three prompters, 24 tasks less the exemplar one
    rows = ExpertRating.objects.all()
    assert rows.filter(scripted=True, pool=Pool.EVALUATION).count() == new and {r.rater for r in rows} == {r.name for r in RATERS}
    assert all(1 <= s <= 5 for r in rows for s in r.scores.values()) and all("(demo)" in r.rater for r in rows)
    assert "rated 69 prompt(s) and 69 image(s) of 23 showcase task(s) (276 new rating(s))" in said[0]
    a, b = ({(r.item_id, d): s for r in rows.filter(rater=x.name) for d, s in r.scores.items()} for x in RATERS)
    differ = sum(a[k] != b[k] for k in a)
    assert 0.1 * len(a) < differ < 0.9 * len(a)  # the two rules agree often, not always
    stored = lambda: {(r.pk, str(r.scores), str(r.checklist), r.updated) for r in ExpertRating.objects.all()}
    before = stored()
    assert demo_experts(pack, submissions, said.append) == 0 and stored() == before  # nothing added, nothing rewritten


def test_scripted_ratings_never_reach_the_peoples_figures_and_have_their_own(board, capsys):
    pack, submissions = board
    people = people_rate(submissions[0])
    demo_experts(pack, submissions, lambda line: None)
    judge = judges_with_ratings()[0]
    report = agreement_report(judge, resamples=50)
    assert (report.n_ratings, report.n_raters, report.scripted) == (people, 2, False)
    assert all(row.n_raters == 2 and row.alpha.n_tasks == 4 for row in people_report(resamples=50))
    pairs, labels, _ = build_inputs(judge)
    assert {len(p.experts) for p in pairs} == {2} and not labels  # ana and ben only; they gave no checklist labels
    section = scripted_section(judge.key, resamples=50)
    assert section.raters == [r.name for r in RATERS] and section.report.scripted
    assert section.report.n_ratings == ExpertRating.objects.filter(scripted=True).count() and section.report.n_raters == 2
    pairs, labels, _ = build_inputs(judge, scripted=True)
    assert {len(p.experts) for p in pairs} == {2} and labels  # the two rules only, with their checklist labels
    overall = section.report.like[-1]
    assert overall.group == "overall" and overall.judge_expert.n_tasks == 24 and overall.judge_expert.low is not None

    call_command("judge_agreement", "--resamples", "50")  # the command too: people first, then the rules in a block of their own
    people, scripted = capsys.readouterr().out.split("Scripted raters (demo) — rules, not people")
    assert "experts, overall:" in people and "scripted rater" not in people and "scripted-" not in people
    assert "scripted raters (demo), overall:" in scripted and "judge-scripted rho" in scripted and "[" in scripted


def test_judge_page_shows_the_scripted_section_apart_with_intervals(board, client, monkeypatch, django_capture_on_commit_callbacks):
    pack, submissions = board
    people = people_rate(submissions[0])
    page = html.unescape(client.get("/judge/").content.decode())
    assert SECTION not in page and 'id="people-only"' not in page  # no scripted ratings: no section
    demo_experts(pack, submissions, lambda line: None)
    # The reports' 1000 resamples cost seconds here; 50 do (the people's four tasks are too few for any interval either way).
    monkeypatch.setattr("ratings.reports.RESAMPLES", 50)
    with django_capture_on_commit_callbacks(execute=True):  # the page sends the report jobs: in-process, they run on commit
        assert "Being computed" in client.get("/judge/").content.decode()
    page = html.unescape(client.get("/judge/").content.decode())
    people_part, scripted_part = page.split(f"<h2>{SECTION}</h2>")
    assert f"{people} ratings by 2 raters" in people_part and not any(r.name in people_part for r in RATERS)
    people_overall = people_part.split('id="people-agreement"')[1].split("<td>overall</td>")[1].split("</tr>")[0]
    assert people_overall.startswith('<td class="num">4</td><td class="num">2</td>')  # items rated by two, experts: ana and ben
    assert "[" not in people_part.split('id="people-agreement"')[1].split("</table>")[0]  # four tasks: no interval for people
    scripted = ExpertRating.objects.filter(scripted=True).count()
    assert f"{scripted} scripted (demo) ratings by 2 scripted raters" in scripted_part
    for table in ("scripted-people-agreement", "scripted-like-for-like", "scripted-rubric-agreement", "scripted-checklist"):
        rows = scripted_part.split(f'id="{table}"')[1].split("</table>")[0]
        assert '<span class="ci">[' in rows, table  # 24 tasks: every table has intervals
    assert re.search(
        r'"scripted-like-for-like".*?<td>overall</td>\s*<td class="num">-?\d\.\d{3}<br><span class="ci">\[', page, re.S
    )  # what test_demo.py checks on the demo's page
    overall = scripted_part.split('id="scripted-like-for-like"')[1].split("<td>overall</td>")[1].split("</tr>")[0]
    assert overall.count("[") == 2 and '<td class="num">24</td>' in overall and '<td class="num">2</td>' in overall


def test_people_and_rules_never_share_a_name(board):
    pack, submissions = board
    demo_experts(pack, submissions, lambda line: None)
    submission = submissions[0]
    line = (
        f'{{"rater": "{RATERS[0].name}", "task_id": "{submission.entries.first().task.task_id}", "scores": {{"instructional_clarity": 3}}}}'
    )
    with pytest.raises(RatingFileError, match="is a scripted demo rater"):
        expert_ratings_import(submission=submission, filename="r.jsonl", data=line.encode())
    entry = submission.entries.select_related("task").first()
    ExpertRating.objects.create(rater="ana (demo)", entry=entry, scores={"instructional_clarity": 2})
    wrong = [
        ScriptedRating("ana (demo)", entry, None, {"instructional_clarity": 3}, {}, ""),  # people rate under it
        ScriptedRating("rule-c", entry, None, {"instructional_clarity": 9}, {}, ""),  # no (demo), and 9 is no score
    ]
    with pytest.raises(RatingFileError) as info:
        scripted_ratings_save(ratings=wrong, source="test")
    assert [p.split(": ", 1)[1] for p in info.value.problems] == [
        "people rate under this name",
        "field 'scores': instructional_clarity must be an integer 1..5, not 9",
        "the name must say (demo)",
    ]
