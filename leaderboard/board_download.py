"""The whole board as data: one zip (streamed) with what every figure was computed from and how to recompute it.

Checklist item texts and judge rationales of test-split tasks never leave the server (as in the breakdowns):
units carry values only, and rationales are given for dev-split tasks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from django.conf import settings

from evaluation.exports import csv_lines, jsonl_lines
from evaluation.figures import submission_units
from evaluation.judges import JudgeKey
from evaluator.metrics.board import SETTINGS
from evaluator.metrics.coverage import standing
from submissions.models import Judgement, PromptEntry
from tasks.models import Split

from .downloads import COLUMNS, breakdown_rows
from .models import BoardStats, Figure
from .selectors import Board, board_submissions

README = """# {board} scored by {judge}

Files: board.json (pack, judge with its full spec, backends with config hashes, code version, statistics settings, the entries and
their published figures, what each rests on (coverage: units scored of those planned, and whether the figure is
full, partial or withheld) and statistics), tasks.csv (category and split of each task), units.jsonl (every unit
the aggregation reads: one judgement or failed render per line), prompts.jsonl, breakdown.csv / breakdown.jsonl
(per task, sample, backend and image: prompt, image URL, every judged value), rationales.jsonl (dev-split tasks).

Recompute every figure and the board statistics from this file, with this repository at the code version named
in board.json:

    python -m evaluator.recompute board.zip              # prints the recomputed figures and statistics as JSON
    python -m evaluator.recompute board.zip --check      # compares them with board.json; exit 1 on a difference
"""


def board_files(board: Board, judge: JudgeKey, absolute: Callable[[str], str]) -> Iterator[tuple[str, Iterator[str]]]:
    entries = list(board_submissions(board).filter(figures__judge_id=judge.judge_id, figures__judge_version=judge.version, figures__scope="overall").distinct().order_by("pk"))
    yield "README.md", iter([README.format(board=board, judge=judge)])
    yield "board.json", iter([json.dumps(_board_json(board, judge, entries), indent=1, ensure_ascii=False)])
    yield "tasks.csv", csv_lines(({"task_id": t, "category": c, "split": s} for t, c, s in board.pack.tasks.values_list("task_id", "category", "split")), ("task_id", "category", "split"))
    yield "units.jsonl", jsonl_lines({"entry": s.pk, **u.__dict__} for s in entries for u in submission_units(s, judge.judge_id, judge.version))
    prompts = PromptEntry.objects.filter(submission__in=entries).values_list("submission_id", "task__task_id", "sample_index", "text")
    yield "prompts.jsonl", jsonl_lines({"entry": e, "task_id": t, "sample": k, "prompt": p} for e, t, k, p in prompts.iterator())
    yield "breakdown.csv", csv_lines((row for s in entries for row in breakdown_rows(s, judge, absolute)), COLUMNS)
    yield "breakdown.jsonl", jsonl_lines(row for s in entries for row in breakdown_rows(s, judge, absolute))
    yield "rationales.jsonl", jsonl_lines(_rationales(entries, judge))


def _board_json(board: Board, judge: JudgeKey, entries: list) -> dict:
    stats = BoardStats.objects.filter(pack=board.pack, revision=board.revision, judge_id=judge.judge_id, judge_version=judge.version).first()
    figures: dict[str, dict] = {str(s.pk): {} for s in entries}
    covered: dict[str, dict] = {str(s.pk): {} for s in entries}
    stored = Figure.objects.filter(submission__in=entries, judge_id=judge.judge_id, judge_version=judge.version)
    for submission_id, scope, key, value, coverage in stored.values_list("submission_id", "scope", "key", "value", "coverage"):
        figures[str(submission_id)][f"{scope}:{key}"] = value
        if coverage:  # entries on a board are done: what a figure rests on decides its standing
            standing_of = standing(coverage, done=True, max_missing=settings.ATELIER_MAX_MISSING_RATE)
            covered[str(submission_id)][f"{scope}:{key}"] = {"scored": coverage["scored"], "planned": coverage["planned"], "standing": standing_of}
    backends = {b["name"]: b for s in entries for b in s.backends if isinstance(b, dict)}
    return {
        "pack": {"name": board.pack.name, "version": board.pack.version, "revision": board.revision},
        "judge": {"id": judge.judge_id, "version": judge.version, "label": judge.label, "spec": next((s.judge_spec for s in entries if s.judge_version == judge.version and s.judge_spec), None)},
        "code_version": settings.ATELIER_CODE_VERSION, "backends": list(backends.values()),
        "statistics_settings": stats.settings if stats else SETTINGS,
        "entries": [{"entry": s.pk, "prompter": s.prompter, "team": s.team.name, "condition": s.condition, "origin": s.origin, "figures": figures[str(s.pk)],
                     "coverage": covered[str(s.pk)]} for s in entries],
        "statistics": {"ranked_on": stats.ranked_on, "entries": stats.entries, "comparisons": stats.comparisons, "wins": stats.wins, "length": stats.length} if stats else None,
    }  # fmt: skip


def _rationales(entries: list, judge: JudgeKey) -> Iterator[dict]:
    rows = Judgement.objects.filter(submission__in=entries, judge_id=judge.judge_id, judge_version=judge.version, entry__task__split=Split.DEV).exclude(rationales={})
    for j in rows.select_related("entry__task", "render").iterator():
        yield {"entry": j.submission_id, "task_id": j.entry.task.task_id, "sample": j.entry.sample_index, "backend": j.render.backend if j.render else "",
               "image_index": j.render.image_index if j.render else None, "skill": j.skill, "rationales": j.rationales}  # fmt: skip
