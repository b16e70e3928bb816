"""Per-task breakdown of a submission: one row per (task, prompt sample, backend, image).

Rows are produced in chunks of entries (three queries a chunk), so a large submission is
streamed, never built in memory. Checklist item texts of test-split tasks never leave the
server: for those tasks only the 0/1 outcomes are given, in item order. Besides AtelierEval's
four skills (with every rubric dimension and checklist outcome), each other skill has a column
with its value (a gate's column holds its status), and `scales` names each value's scale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from django.http import Http404, HttpRequest, StreamingHttpResponse
from pydantic import ConfigDict, Field

from evaluation import exports
from evaluation.exports import csv_cell, jsonl_lines  # noqa: F401 - the breakdown view and tests read them here
from evaluation.judges import JudgeKey, judges_of, pick_judge, submission_judge
from evaluation.models import Judgement, PromptEntry, Submission, UnitStatus
from evaluation.selectors import entry_breakdown
from evaluator.judge.skills import ALL_SKILLS, get_skill, skills_where
from evaluator.judge.types import DIMENSIONS, Kind, Side
from tasks import difficulty
from tasks.models import Split
from teams.schemas import NO_NUL, Declared

CHUNK = 200
# AtelierEval's rubric and checklist skill of each side, shown in full; the other skills one column each.
RUBRIC = {side: skills_where(side=side, kind=Kind.RUBRIC, composite=True)[0] for side in Side}
CHECKLIST = {side: skills_where(side=side, kind=Kind.CHECKLIST, composite=True)[0] for side in Side}
OTHER_SKILLS = tuple(s for s in ALL_SKILLS if s not in RUBRIC.values() and s not in CHECKLIST.values())
COLUMNS = [
    "submission",
    "pack",
    "task_id",
    "category",
    "split",
    "sample",
    "backend",
    "image_index",
    "seed",
    "image_url",
    "render_status",
    "render_note",
    "prompt",
    "predicted_score",
    "difficulty_predictor",
    "rewritten_prompt",
    *(column for side in Side for column in (RUBRIC[side], *DIMENSIONS[side], f"{side}_accuracy", f"{side}_checklist")),
    *OTHER_SKILLS,
    "scales",
    "failures",
    "judge",
    "backend_config_hash",
]


def breakdown_rows(submission: Submission, judge: JudgeKey, image_url: Callable[[str], str]) -> Iterator[dict]:
    entries = submission.entries.select_related("task").order_by("task__category", "task__task_id", "sample_index")
    predictor = (difficulty.installed() or {}).get("version", "")
    last = 0
    while True:
        chunk = list(entries.filter(pk__gt=last).order_by("pk")[:CHUNK])
        if not chunk:
            return
        last = chunk[-1].pk
        details = entry_breakdown(chunk, judge)
        predicted = difficulty.scores([e.text for e in chunk], predictor) if predictor else {}
        for entry in chunk:
            prediction = {
                "predicted_score": predicted.get(entry.text),
                "difficulty_predictor": predictor if entry.text in predicted else "",
            }
            yield from (row | prediction for row in _entry_rows(submission, judge, entry, details[entry.pk], image_url))


def _entry_rows(
    submission: Submission, judge: JudgeKey, entry: PromptEntry, detail: dict, image_url: Callable[[str], str]
) -> Iterator[dict]:
    prompt_side = {j.skill: j for j in detail["judgements"] if j.render_id is None}
    image_side: dict[int, dict[str, Judgement]] = {}
    for j in detail["judgements"]:
        if j.render_id is not None:
            image_side.setdefault(j.render_id, {})[j.skill] = j
    for render in sorted(detail["renders"], key=lambda r: (r.backend, r.image_index)):
        judged = {**prompt_side, **image_side.get(render.pk, {})}
        row = {
            "submission": submission.pk,
            "pack": f"{submission.pack.name} v{submission.pack.version} rev {submission.pack_revision}",
            "task_id": entry.task.task_id,
            "category": entry.task.category,
            "split": entry.task.split,
            "sample": entry.sample_index,
            "backend": render.backend,
            "image_index": render.image_index,
            "seed": render.seed,
            "image_url": image_url(render.image.url) if render.image else "",
            "render_status": render.status,
            "render_note": render.note,
            "prompt": entry.text,
            "rewritten_prompt": render.rewritten,
            "judge": judge.key,
            "backend_config_hash": render.config_hash,
        }
        row.update(_skill_columns(judged, entry.task))
        row.update(_other_columns(judged))
        row["scales"] = {j.skill: j.scale for j in judged.values() if j.scale}
        failures = [f"render: {render.error}"] if render.error else []
        failures += [f"{j.skill}: {j.reason}" for j in judged.values() if j.status == UnitStatus.FAILED]
        row["failures"] = " | ".join(failures)
        yield row


def _skill_columns(judged: dict[str, Judgement], task) -> dict:
    out: dict = {}
    for side in Side:
        rubric, checklist = judged.get(RUBRIC[side]), judged.get(CHECKLIST[side])
        ok = rubric is not None and rubric.status == UnitStatus.OK
        out[RUBRIC[side]] = rubric.value if ok else None
        out.update({d: rubric.scores.get(d) if ok else None for d in DIMENSIONS[side]})
        ok = checklist is not None and checklist.status == UnitStatus.OK
        out[f"{side}_accuracy"] = checklist.value if ok else None
        # Task order, not the stored dict's (PostgreSQL's jsonb does not keep key order).
        items = (task.prompt_checklist if side == Side.PROMPT else task.image_checklist) if ok else []
        outcomes = [checklist.checklist.get(item) for item in items]
        out[f"{side}_checklist"] = dict(zip(items, outcomes)) if task.split == Split.DEV else outcomes
    return out


def _other_columns(judged: dict[str, Judgement]) -> dict:
    """One column per other skill: its value on its scale, or a gate's status (ok / blocked)."""
    out: dict = {}
    for skill in OTHER_SKILLS:
        j = judged.get(skill)
        out[skill] = None if j is None else j.status if get_skill(skill).kind == Kind.GATE else j.value
    return out


def csv_lines(rows: Iterator[dict]) -> Iterator[str]:
    return exports.csv_lines(rows, COLUMNS)


BREAKDOWN_FORMATS = ("csv", "jsonl")  # the breakdown's file endings (the API's document lists them from here)


class BreakdownQuery(Declared):
    """The breakdown's query parameters (the API's document prints them). Text only: NUL, the one thing text here may
    not hold, is refused before any view (atelier/unstorable.py), so reading a query string cannot fail."""

    model_config = ConfigDict(extra="ignore")

    judge: str = Field("", pattern=NO_NUL, description="the judge's key; default: the submission's own judge")


def breakdown_response(request: HttpRequest, submission: Submission, fmt: str) -> StreamingHttpResponse:
    """/submissions/<id>/breakdown.<fmt> for a submission the caller may see (the page's visitor or the API token's
    team): every row for the judge asked for (?judge=), else the submission's own, streamed as CSV or JSON lines."""
    if fmt not in BREAKDOWN_FORMATS:
        raise Http404("Breakdowns come as .csv or .jsonl")
    own = submission_judge(submission)
    judge = pick_judge(judges_of([submission.pk]), BreakdownQuery.model_validate(request.GET.dict()).judge, own) or own
    rows = breakdown_rows(submission, judge, request.build_absolute_uri)
    lines, content_type = (csv_lines(rows), "text/csv") if fmt == "csv" else (jsonl_lines(rows), "application/x-ndjson")
    response = StreamingHttpResponse(lines, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="submission-{submission.pk}-breakdown.{fmt}"'
    return response
