"""Reads for the comparison page: two entries of one board side by side, task by task (the board's Compare button).

Per category, the mean paired difference of the two entries' stored task scores (Scope.TASK, what the board's
statistics read) with its interval (evaluator.metrics.paired), and who won more tasks head to head
(evaluator.metrics.pairs): for two ranked entries on the board's ranked tasks, the board's own decision (one of all
its decisions held together); otherwise a decision of this page alone. Per task, each side's prompts, images and
judgements.
What is shown follows the public pages' rules: an entry is shown to whoever may see its submission page (the view
checks), and a test-split task's checklist items are named "item N" with their outcomes only (the breakdown download's
rule), never their text; no rationale, raw reply or failure text is shown.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean

from django.core.paginator import Page, Paginator
from django.db.models import F
from django.http import QueryDict

from evaluation.judges import JudgeKey, judges_of
from evaluation.models import BoardRow, BoardStats, Figure, Judgement, PromptEntry, Status, Submission, UnitStatus
from evaluation.selectors import entry_breakdown
from evaluator.categories import CATEGORIES, CATEGORY_NAMES
from evaluator.judge.config import DEMO_JUDGE_MODEL
from evaluator.judge.scales import scale_named
from evaluator.judge.skills import skills_where
from evaluator.judge.types import DIMENSIONS, Kind, Side
from evaluator.metrics.decisions import board_pair
from evaluator.metrics.order import task_order
from evaluator.metrics.paired import OVERALL, Difference, paired_differences
from evaluator.metrics.pairs import HeadToHead, head_to_head
from evaluator.metrics.scopes import Scope
from tasks.models import TAG_GROUP_OF, Split, Task
from tasks.selectors import browsable_tasks

from .selectors import on_team

COMPARE_PAGE = 20  # tasks per page: each shows both sides' prompts, images and judgements
SORTS = {"": "task", "difference": "largest difference first"}
FILTERS = {"category": CATEGORIES, "tag": tuple(TAG_GROUP_OF), "split": tuple(Split.values), "sort": tuple(SORTS)}
# What the page's filter form offers.
CHOICES = {
    "categories": [(c, CATEGORY_NAMES[c]) for c in CATEGORIES],
    "tags": list(TAG_GROUP_OF),
    "splits": Split.choices,
    "sorts": list(SORTS.items()),
}
_ID = re.compile(r"[0-9]{1,18}")  # a submission id the database can hold (a longer one would overflow, not 404)
# AtelierEval's rubric and checklist skill of each side, shown in full (dimensions, items); other skills by their value.
RUBRIC = {side: skills_where(side=side, kind=Kind.RUBRIC, composite=True)[0] for side in Side}
CHECKLIST = {side: skills_where(side=side, kind=Kind.CHECKLIST, composite=True)[0] for side in Side}
# What the demo's scripted judge (demo/judge.py: _checklist) reads for a checklist item, named on its rows: a
# tick beside "a person riding a bicycle is clearly visible" over a random-weight render would claim a look it never took.
DEMO_CHECKS = {
    Side.PROMPT: "scripted check (demo): the prompt uses half the words of",
    Side.IMAGE: "scripted check (demo) of pixel statistics, for",
}


class BadQuery(ValueError):
    """A query the page cannot answer (the view answers 400 with this text)."""


def entry_ids(query: QueryDict) -> tuple[int, int]:
    """The two submission ids to compare: ?a=&b=, or the board form's two ticked boxes (?pick=&pick=)."""
    picked = query.getlist("pick") if "pick" in query else [query.get("a", ""), query.get("b", "")]
    if len(picked) != 2 or not all(_ID.fullmatch(p) for p in picked):
        raise BadQuery("Tick exactly two entries on the board to compare them (or name them: /compare/?a=<entry id>&b=<entry id>).")
    a, b = int(picked[0]), int(picked[1])
    if a == b:
        raise BadQuery("Pick two different entries: an entry compared with itself differs nowhere.")
    return a, b


def filters_from(query: QueryDict) -> dict[str, str]:
    """category, tag, split and sort as asked ("" for none); a value the page does not know is a BadQuery."""
    filters = {name: query.get(name, "") for name in FILTERS}
    wrong = [f"{name}={value!r}" for name, value in filters.items() if value and value not in FILTERS[name]]
    if wrong:
        raise BadQuery(f"Unknown filter value: {', '.join(wrong)}.")
    return filters


def common_judges(a: Submission, b: Submission) -> list[JudgeKey]:
    """The judges with figures for both entries (the first entry's most used first): scores are compared like for like."""
    if (a.pack_id, a.pack_revision) != (b.pack_id, b.pack_revision):
        raise BadQuery("These entries are on different boards (pack version or revision): their tasks cannot be paired.")
    theirs = {j.key for j in judges_of([b.pk])}
    return [j for j in judges_of([a.pk]) if j.key in theirs]


@dataclass
class TaskRow:
    task: Task
    a: float | None  # each entry's stored task score (0–100)
    b: float | None
    sides: tuple[list[dict], list[dict]] | None = None  # each entry's samples (page_details)
    scores: list[dict] | None = None  # the two sides' judgements, row by row (page_details)

    @property
    def difference(self) -> float | None:
        return self.a - self.b if self.a is not None and self.b is not None else None


def task_scores(submission: Submission, judge: JudgeKey | None) -> dict[str, float]:
    if judge is None:
        return {}
    stored = Figure.objects.filter(
        submission=submission, judge_id=judge.judge_id, judge_version=judge.version, scope=Scope.TASK, value__isnull=False
    )
    return dict(stored.values_list("key", "value"))


def comparison(a: Submission, b: Submission, judge: JudgeKey | None, filters: dict[str, str]) -> tuple[list[TaskRow], list[Difference]]:
    """The filtered tasks either entry has a prompt for (site order, or largest difference first), and per category
    the paired difference over the tasks both have a score on."""
    tasks = browsable_tasks(a.pack, filters["category"], filters["tag"], filters["split"])
    tasks = tasks.filter(entries__submission__in=[a.pk, b.pk]).distinct()
    scores = task_scores(a, judge), task_scores(b, judge)
    rows = sorted(
        (TaskRow(t, scores[0].get(t.task_id), scores[1].get(t.task_id)) for t in tasks),
        key=lambda r: (CATEGORIES.index(r.task.category), r.task.task_id),
    )
    if filters["sort"] == "difference":
        rows.sort(key=lambda r: (r.difference is None, -abs(r.difference or 0)))  # stable: ties keep the site order
    categories = {r.task.task_id: r.task.category for r in rows}
    return rows, paired_differences(*scores, categories, CATEGORIES)


@dataclass(frozen=True)
class Duel:
    """A against B head to head on one row's tasks: the board's decision (`board`: one of its `tests` decisions held
    together) or this page's own (its rows' decisions held together)."""

    pair: HeadToHead
    board: bool
    tests: int

    @property
    def ahead(self) -> str:
        return {"a": "A", "b": "B"}.get(self.pair.ahead or "", "")


def duels(a: Submission, b: Submission, judge: JudgeKey | None, differences: list[Difference], filters: dict[str, str]) -> dict[str, Duel]:
    """Each row of the differences table head to head: from the board's decisions where both entries are ranked and no
    tag or split filter changes the ranked tasks, else over the row's common tasks, the page's rows held together."""
    scores = task_scores(a, judge), task_scores(b, judge)
    shown = dict(Task.objects.filter(pack=a.pack, task_id__in=set(scores[0]) & set(scores[1])).values_list("task_id", "category"))
    if filters["category"]:
        shown = {t: c for t, c in shown.items() if c == filters["category"]}
    out = _board_duels(a, b, judge, scores, {d.category for d in differences}) if not (filters["tag"] or filters["split"]) else {}
    rest = [d.category for d in differences if d.tasks and d.category not in out]
    for scope in rest:
        tasks = task_order(t for t, c in shown.items() if scope in (OVERALL, c))
        out[scope] = Duel(head_to_head([scores[0][t] for t in tasks], [scores[1][t] for t in tasks], tests=len(rest)), False, len(rest))
    return out


def _board_duels(a: Submission, b: Submission, judge: JudgeKey | None, scores: tuple[dict, dict], scopes: set[str]) -> dict[str, Duel]:
    stats = (
        judge
        and BoardStats.objects.filter(
            pack=a.pack_id, revision=a.pack_revision, judge_id=judge.judge_id, judge_version=judge.version
        ).first()
    )
    ids = (str(a.pk), str(b.pk))
    if not stats or not stats.decisions.get("tests") or any(stats.entries.get(i, {}).get("rank") is None for i in ids):
        return {}
    ranked = Task.objects.filter(pack=a.pack, task_id__in=set(scores[0]) & set(scores[1]))
    if stats.ranked_on.get("split") == Split.TEST:
        ranked = ranked.filter(split=Split.TEST)
    categories = dict(ranked.values_list("task_id", "category"))
    out = {}
    for scope in scopes & set(stats.decisions["scopes"]):
        tasks = task_order(t for t, c in categories.items() if scope in (OVERALL, c))
        found = board_pair(stats.decisions, scores[0], scores[1], ids, tasks, scope)
        if found is not None:
            out[scope] = Duel(found, True, stats.decisions["tests"])
    return out


def page_details(page: Page, a: Submission, b: Submission, judge: JudgeKey | None) -> None:
    """Fill in the page's rows: each side's samples (prompt, each backend's renders) and their judgements side by side."""
    rows: list[TaskRow] = list(page.object_list)
    sides = [_side(s, judge, [r.task for r in rows]) for s in (a, b)]
    for row in rows:
        (samples_a, cells_a), (samples_b, cells_b) = (side.get(row.task.pk, ([], {})) for side in sides)
        row.sides = (samples_a, samples_b)
        row.scores = [{"key": key, "a": cells_a.get(key), "b": cells_b.get(key)} for key in sorted({*cells_a, *cells_b})]


def paged(rows: list[TaskRow], number: str | None) -> Page:
    return Paginator(rows, COMPARE_PAGE).get_page(number)


@dataclass(frozen=True, order=True)
class Key:
    """A row of a task's score table: the part (prompt, or a backend), then dimensions, rates, items, other skills."""

    part: str  # "" for the prompt, else the backend's name
    group: int
    position: int
    label: str
    scale: str = ""  # "" for a checklist item (its cell counts outcomes)


@dataclass
class Cell:
    """One side's values for a row: the mean of a value on its scale, or a checklist item's outcomes (1 met, 0 not)."""

    scale: str
    values: list[float]

    @property
    def shown(self) -> str:
        if self.scale:
            return f"{fmean(self.values):.{scale_named(self.scale).digits}f}"
        met = sum(1 for v in self.values if v)
        return ("✓" if met else "✗") if len(self.values) == 1 else f"{met}/{len(self.values)}"

    @property
    def mark(self) -> str:
        """A checklist item's class on the page: met by every judged unit, by none, or ("") by some or not an item."""
        met = sum(1 for v in self.values if v)
        return "" if self.scale else "met" if met == len(self.values) else "unmet" if not met else ""


def _side(submission: Submission, judge: JudgeKey | None, tasks: list[Task]) -> dict[int, tuple[list[dict], dict[Key, Cell]]]:
    entries = list(PromptEntry.objects.filter(submission=submission, task__in=tasks).select_related("task").order_by("sample_index"))
    details = entry_breakdown(entries, judge or JudgeKey("", ""))  # no common judge: renders without judgements
    samples: dict[int, list[dict]] = defaultdict(list)
    cells: dict[int, dict[Key, Cell]] = defaultdict(dict)
    for entry in entries:
        renders = sorted(details[entry.pk]["renders"], key=lambda r: (r.backend, r.image_index))
        backends = sorted({r.backend for r in renders})
        samples[entry.task_id].append(
            {"entry": entry, "backends": [(name, [r for r in renders if r.backend == name]) for name in backends]}
        )
        backend_of = {r.pk: r.backend for r in renders}
        for j in details[entry.pk]["judgements"]:
            if j.status == UnitStatus.OK:
                part = "" if j.render_id is None else backend_of.get(j.render_id, "?")
                for key, value in _values(j, part, entry.task):
                    cells[entry.task_id].setdefault(key, Cell(key.scale, [])).values.append(value)
    return {pk: (samples[pk], cells[pk]) for pk in samples}


def _values(j: Judgement, part: str, task: Task) -> list[tuple[Key, float]]:
    """(row, value) pairs of one ok judgement: the rubric's dimensions, the checklist's rate and item outcomes (a
    hidden task's items by number only), or another skill's headline value."""
    side = Side.PROMPT if j.render_id is None else Side.IMAGE
    if j.skill == RUBRIC[side]:
        return [(Key(part, 0, i, d.replace("_", " "), j.scale), j.scores[d]) for i, d in enumerate(DIMENSIONS[side]) if d in j.scores]
    if j.skill == CHECKLIST[side]:
        items = task.prompt_checklist if side == Side.PROMPT else task.image_checklist
        shown = [(Key(part, 1, 0, "checklist met (share)", j.scale), j.value)] if j.value is not None else []
        demo = DEMO_CHECKS[side] if j.judge_id.endswith(DEMO_JUDGE_MODEL) else ""
        for i, item in enumerate(items):
            if j.checklist.get(item) is not None:
                label = item if task.is_public else f"item {i + 1}"
                label = (f"{demo} “{label}”" if task.is_public else f"{demo} {label}") if demo else label
                shown.append((Key(part, 2, i, label), float(j.checklist[item])))
        return shown
    if j.value is None or not j.scale:  # a gate's verdict has no value
        return []
    return [(Key(part, 3, 0, j.skill.replace("_", " "), j.scale), j.value)]


PARTNERS = 10  # each of the two groups the submission page offers to compare with


def partners(user, submission: Submission, judge: JudgeKey) -> list[Submission]:
    """What the submission page offers to compare with: the team's other runs on the same board that the viewer may
    see, then the board's top published entries by this judge (by the ranked score)."""
    board = Submission.objects.filter(pack=submission.pack_id, pack_revision=submission.pack_revision).exclude(pk=submission.pk)
    runs = board.filter(team=submission.team_id).exclude(status__in=[Status.FAILED, Status.CANCELLED])
    if not (user.is_staff or on_team(user, submission)):
        runs = runs.filter(published=True)
    rows = BoardRow.objects.filter(
        pack=submission.pack_id, revision=submission.pack_revision, judge_id=judge.judge_id, judge_version=judge.version
    )
    top = rows.exclude(submission=submission).order_by(F("score").desc(nulls_last=True), "submission_id")
    found = [*runs.select_related("team").order_by("-created")[:PARTNERS]]
    found += [r.submission for r in top.select_related("submission__team")[:PARTNERS] if r.submission not in found]
    return found
