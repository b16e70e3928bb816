"""The whole board as data: one zip (streamed) with every number the board shows, what each was computed from and
how to recompute and check it.

Checklist item texts and judge rationales of test-split tasks never leave the server (as in the breakdowns):
units carry values only, and rationales are given for dev-split tasks. Human participants appear as numbers only
(participant 0, 1, … of the board, their tier, whether scripted, study, how many prompts and when they finished).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import fields

from django.conf import settings

from evaluation.boards import board_inputs
from evaluation.difficulty import board_entries, difficulty_agreement
from evaluation.exports import csv_lines, jsonl_lines
from evaluation.figures import submission_units
from evaluation.humans import human_rows_export
from evaluation.judges import JudgeKey
from evaluation.models import BoardRow, BoardStats, Figure, Judgement, Origin, PromptEntry, Render, Status, Submission
from evaluation.trajectories import submission_steerability, trajectories
from evaluator.metrics.aggregate import Figure as Computed
from evaluator.metrics.coverage import standing
from studies.models import Participant
from tasks.models import Split

from .downloads import COLUMNS, breakdown_rows
from .selectors import Board, Row, human_section
from .sota import board_sota

README = """# {board} scored by {judge}

Files: board.json (pack, judge with its full spec, backends with config hashes, code version, statistics settings, the entries
with every figure (value, interval, n, failures), what each rests on (coverage: units scored of those planned, and whether the
figure is full, partial or withheld), task count and steerability, the board statistics as stored, the human baseline rows,
every entry's score on the humans' tasks, and how the difficulty predictor's scores agree with the judge on these entries),
tasks.csv (category and split of each task), units.jsonl (every unit the aggregation reads: one judgement or failed render per
line, with the judge version that scored it and the config hash of the backend that rendered it), prompts.jsonl,
statistics_inputs.json (what the statistics take besides task scores, prompts and tasks), trajectories.jsonl (feedback runs:
each task sample's feedback scores by round), humans.jsonl and human_units.jsonl (the human baseline's participants, by
number, and their units), breakdown.csv / breakdown.jsonl (per task, sample, backend and image: prompt, image URL, every
judged value, the prompt's predicted difficulty), rationales.jsonl (dev-split tasks), sota.json (state of the art over time:
per series, overall and each category, the best score by date with the entry that set each step and its interval, and the
human rows as reference values; leaderboard/sota.py). A signed release adds MANIFEST.json
and MANIFEST.sig (docs/releases.md).

Recompute every number from these files, with this repository at the code version named in board.json:

    python -m evaluator.recompute board.zip              # prints the recomputed numbers as JSON
    python -m evaluator.recompute board.zip --check      # compares all of board.json with them; one line per difference, exit 1
    python -m evaluator.recompute board.zip --check --key https://<this site>/releases/keys.json
                                                         # a signed release: also its signature, every member's SHA-256 and the
                                                         # link to the release before it (fetched from the site, or --previous FILE)
"""

FIGURE_FIELDS = tuple(f.name for f in fields(Computed) if f.name not in ("scope", "key"))  # what aggregate computes of a figure
# BoardStats columns board.json does not carry under "statistics": the row's identity and time, and what it describes
# rather than computes (carried as statistics_settings, backends, judge and the entries' conditions).
STATS_LEFT_OUT = ("id", "pack", "revision", "judge_id", "judge_version", "computed", "settings", "backends", "judge_label", "conditions")
DERIVED_INPUTS = ("every", "lengths", "lists", "categories", "splits")  # board_inputs the recompute derives from units, prompts and tasks


def board_files(board: Board, judge: JudgeKey, absolute: Callable[[str], str]) -> Iterator[tuple[str, Iterator[str]]]:
    entries = list(board_entries(board.pack.pk, board.revision, judge.judge_id, judge.version))
    participants = board_participants(board, judge)
    yield "README.md", iter([README.format(board=board, judge=judge)])
    yield "board.json", iter([json.dumps(_board_json(board, judge, entries, participants), indent=1, ensure_ascii=False)])
    yield "sota.json", iter([json.dumps(board_sota(board, judge), indent=1, ensure_ascii=False)])
    yield (
        "tasks.csv",
        csv_lines(
            ({"task_id": t, "category": c, "split": s} for t, c, s in board.pack.tasks.values_list("task_id", "category", "split")),
            ("task_id", "category", "split"),
        ),
    )
    yield "units.jsonl", jsonl_lines(unit_lines((({"entry": s.pk}, s) for s in entries), judge))
    prompts = PromptEntry.objects.filter(submission__in=entries).values_list("submission_id", "task__task_id", "sample_index", "text")
    yield "prompts.jsonl", jsonl_lines({"entry": e, "task_id": t, "sample": k, "prompt": p} for e, t, k, p in prompts.iterator())
    yield "statistics_inputs.json", iter([json.dumps(statistics_inputs(board, judge), indent=1)])
    yield "trajectories.jsonl", jsonl_lines(line for s in entries for line in trajectory_lines(s))
    yield "humans.jsonl", jsonl_lines(participant_lines(participants))
    yield "human_units.jsonl", jsonl_lines(unit_lines((({"participant": i}, p.submission) for i, p in enumerate(participants)), judge))
    yield "breakdown.csv", csv_lines((row for s in entries for row in breakdown_rows(s, judge, absolute)), COLUMNS)
    yield "breakdown.jsonl", jsonl_lines(row for s in entries for row in breakdown_rows(s, judge, absolute))
    yield "rationales.jsonl", jsonl_lines(_rationales(entries, judge))


def statistics_inputs(board: Board, judge: JudgeKey) -> dict:
    """What board_stats_compute takes besides what the other files give (e.g. which entries are feedback runs)."""
    return {k: v for k, v in board_inputs(board.pack, board.revision, judge.judge_id, judge.version).items() if k not in DERIVED_INPUTS}


def board_participants(board: Board, judge: JudgeKey) -> list[Participant]:
    """The human baseline's participants scored by this judge, as evaluation.humans pools them (in id order)."""
    found = Participant.objects.filter(
        submission__origin=Origin.HUMAN,
        submission__pack=board.pack,
        submission__pack_revision=board.revision,
        submission__status=Status.DONE,
        withdrawn__isnull=True,
        submission__judge_id=judge.judge_id,
        submission__judge_version=judge.version,
    )
    return list(found.select_related("submission", "study").order_by("pk"))


def unit_lines(named: Iterable[tuple[dict, Submission]], judge: JudgeKey) -> Iterator[dict]:
    """Every unit of each (name, submission), stamped with the judge version that scored it and the config hash of the
    backend that rendered it (the Render rows' own, so board.json's backends can be checked against them)."""
    for name, submission in named:
        rendered = Render.objects.filter(entry__submission=submission).values_list(
            "entry__task__task_id", "entry__sample_index", "backend", "config_hash"
        )
        hashes = {(t, k, b): h for t, k, b, h in rendered}
        for u in submission_units(submission, judge.judge_id, judge.version):
            yield {
                **name,
                **u.__dict__,
                "judge_version": judge.version,
                "config_hash": hashes.get((u.task_id, u.sample, u.backend)) if u.backend else None,
            }


def trajectory_lines(submission: Submission) -> Iterator[dict]:
    """A feedback run's trajectories: each task sample's feedback scores by round (the data of its steerability)."""
    if submission.rounds <= 1:
        return
    for row in trajectories(submission):
        scores = [c.feedback_score for c in row["rounds"] if c.feedback_score is not None]
        if scores:
            yield {
                "entry": submission.pk,
                "task_id": row["task"].task_id,
                "sample": row["sample"],
                "backend": submission.feedback_backend,
                "scores": scores,
            }


def participant_lines(participants: list[Participant]) -> Iterator[dict]:
    """Each participant by number: tier, scripted or a person, study, protocol, prompts written and when they finished."""
    for index, p in enumerate(participants):
        yield {
            "participant": index,
            "tier": p.tier,
            "scripted": p.scripted,
            "entries": p.submission.entries.count(),
            "study": p.study.name,
            "protocol": p.study.protocol_version,
            "completed": p.completed.isoformat() if p.completed else None,
        }


def _board_json(board: Board, judge: JudgeKey, entries: list, participants: list) -> dict:
    stats = BoardStats.objects.filter(
        pack=board.pack, revision=board.revision, judge_id=judge.judge_id, judge_version=judge.version
    ).first()
    shown = dict(
        BoardRow.objects.filter(pack=board.pack, revision=board.revision, judge_id=judge.judge_id, judge_version=judge.version).values_list(
            "submission_id", "tasks_covered"
        )
    )
    figures, covered = _figures(entries, judge)
    backends = {
        (b["name"], b.get("version_hash")): b
        for s in (*entries, *(p.submission for p in participants))
        for b in s.backends
        if isinstance(b, dict)
    }
    return {
        "pack": {"name": board.pack.name, "version": board.pack.version, "revision": board.revision},
        "judge": {
            "id": judge.judge_id,
            "version": judge.version,
            "label": judge.label,
            "spec": next((s.judge_spec for s in entries if s.judge_version == judge.version and s.judge_spec), None) or _spec(board, judge),
        },
        "code_version": settings.ATELIER_CODE_VERSION,
        "backends": list(backends.values()),
        "statistics_settings": stats.settings if stats else None,
        "coverage_settings": {"max_missing_rate": settings.ATELIER_MAX_MISSING_RATE},
        "entries": [
            {
                "entry": s.pk,
                "prompter": s.prompter,
                "team": s.team.name,
                "condition": s.condition,
                "origin": s.origin,
                "published": s.published_at.isoformat() if s.published_at else None,
                "card": s.card_version.public() if s.card_version_id else None,  # as it was when published; no contact
                "tasks": shown.get(s.pk),
                "figures": figures[s.pk],
                "coverage": covered[s.pk],
                "steerability": submission_steerability(s) if s.rounds > 1 else [],
            }
            for s in entries
        ],
        "statistics": {f.name: getattr(stats, f.name) for f in BoardStats._meta.concrete_fields if f.name not in STATS_LEFT_OUT}
        if stats
        else None,
        "humans": _humans(board, judge, entries),
        "difficulty": difficulty_agreement(entries, judge.judge_id, judge.version),
    }


def _spec(board: Board, judge: JudgeKey) -> dict | None:
    """The judge's spec from any submission it scored on the board: an empty board (its last entry withdrawn) still
    names the judge whole, so its release checks like any other."""
    scored = Submission.objects.filter(pack=board.pack, pack_revision=board.revision, judge_id=judge.judge_id, judge_version=judge.version)
    return scored.exclude(judge_spec={}).values_list("judge_spec", flat=True).first()


def _figures(entries: list, judge: JudgeKey) -> tuple[dict, dict]:
    """Each entry's stored figures ("scope:key" -> every computed field) and, where recorded, what each rests on."""
    figures: dict[int, dict] = {s.pk: {} for s in entries}
    covered: dict[int, dict] = {s.pk: {} for s in entries}
    stored = Figure.objects.filter(submission__in=entries, judge_id=judge.judge_id, judge_version=judge.version)
    for submission_id, scope, key, coverage, *values in stored.values_list("submission_id", "scope", "key", "coverage", *FIGURE_FIELDS):
        figures[submission_id][f"{scope}:{key}"] = dict(zip(FIGURE_FIELDS, values))
        if coverage:  # entries on a board are done: what a figure rests on decides its standing
            standing_of = standing(coverage, done=True, max_missing=settings.ATELIER_MAX_MISSING_RATE)
            covered[submission_id][f"{scope}:{key}"] = {
                "scored": coverage["scored"],
                "planned": coverage["planned"],
                "standing": standing_of,
            }
    return figures, covered


def _humans(board: Board, judge: JudgeKey, entries: list) -> dict:
    """The human baseline rows (evaluation.humans.human_rows_export) and, when they cover only some tasks, every entry's
    overall on those tasks, as the board shows them (leaderboard.selectors.human_section)."""
    section = human_section(board, judge, [Row(submission=s) for s in entries])
    rows = human_rows_export(pack=board.pack, revision=board.revision, judge_id=judge.judge_id, judge_version=judge.version)
    return {
        "rows": rows,
        "partial": section["partial"],
        "tasks": section["human_tasks"],
        "common": {str(k): v for k, v in section["common"].items()},
    }


def _rationales(entries: list, judge: JudgeKey) -> Iterator[dict]:
    rows = Judgement.objects.filter(
        submission__in=entries, judge_id=judge.judge_id, judge_version=judge.version, entry__task__split=Split.DEV
    ).exclude(rationales={})
    for j in rows.select_related("entry__task", "render").iterator():
        yield {
            "entry": j.submission_id,
            "task_id": j.entry.task.task_id,
            "sample": j.entry.sample_index,
            "backend": j.render.backend if j.render else "",
            "image_index": j.render.image_index if j.render else None,
            "skill": j.skill,
            "rationales": j.rationales,
        }
