"""State of the art over time: per board (pack revision) and judge, the best published overall and per-category score
by date, each step naming the entry that set it with the interval the board shows for it, and the human baseline rows
as reference values (issue 32).

`sota` is pure: it takes plain entries and reference rows and returns plain data (what the page draws and what a
release carries as sota.json). `board_sota` reads them from the rows the board page reads (BoardRow, HumanRow), so
every value and interval is the board's own.

An entry is dated by when it was first published (Submission.published_at, kept when it is withdrawn and shown again);
a row published without that date (before it was recorded) by when it finished, else when it was submitted, as the
migration that added the field filled it in. In order of date then entry id, an entry sets a step when its score is
strictly above the holder's AND the board decided it ahead of the holder head to head in that series (overall or the
category: evaluator.metrics.decisions, all of the board's decisions held together at 95 %); a higher score that is not
decided ahead is listed as "within noise of" the holder and sets no step. So on a tie the earlier entry keeps the
step, and a +0.1 is progress only if the tasks show it. A series counts the entries with a score for it: a withheld
figure (too many units missing, shown without a value) is no score. Human rows and runs with feedback rounds (which
saw their images and are never ranked beside single-turn runs) set no step. Entries that share one publication
instant (a demo publishes at once) are ordered among themselves by id, and the data says so (`shared`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db.models.functions import Coalesce

from evaluation.judges import JudgeKey
from evaluation.models import BoardStats, Origin
from evaluator.categories import CATEGORIES, CATEGORY_NAMES
from evaluator.metrics.scopes import Scope

from .selectors import Board, board_rows, human_rows

OVERALL = "overall"
SERIES: dict[str, str] = {OVERALL: "Overall", **CATEGORY_NAMES}  # series key -> name, in the board's column order
WITHHELD = "withheld"
DATED_BY = "published"  # what an entry's date is (see the module's docstring)


@dataclass(frozen=True)
class Point:
    """One figure as the board shows it: value and 95 % interval on 0-100, and its standing (full, partial, withheld)."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    standing: str = "full"

    @property
    def scored(self) -> bool:
        return self.value is not None and self.standing != WITHHELD


@dataclass(frozen=True)
class Entry:
    """A published entry of the board: who, when, and its figures by series key ("overall", "OE", "CO", "IM")."""

    entry: int
    prompter: str
    team: str
    date: datetime
    figures: Mapping[str, Point] = field(default_factory=dict)
    origin: str = Origin.FILE
    rounds: int = 1
    baseline: bool = False
    tasks: int = 0


@dataclass(frozen=True)
class Reference:
    """A human baseline row of the board (people's or scripted demo participants'), as a reference value per series."""

    label: str
    tier: str
    scripted: bool
    participants: int
    figures: Mapping[str, Point] = field(default_factory=dict)


Decided = frozenset[tuple[int, int, str]]  # (ahead, behind, series key): the board's decided head-to-head claims


def sota(entries: Iterable[Entry], references: Iterable[Reference] = (), decided: Decided = frozenset()) -> dict:
    """For "overall" and each category: the steps of the best score by date (each decided ahead of the step before
    it), the higher scores within noise of their holder, how many entries were scored, the date of the latest of them
    (where the last step's line ends), the human reference values, and the instants several entries share."""
    counted, left_out = [], {"human": 0, "feedback": 0}
    for e in entries:
        if e.origin == Origin.HUMAN:
            left_out["human"] += 1
        elif e.rounds > 1:
            left_out["feedback"] += 1
        else:
            counted.append(e)
    counted.sort(key=lambda e: (e.date, e.entry))
    references = list(references)
    instants = Counter(e.date for e in counted)
    shared = [{"date": _date(at), "entries": n} for at, n in sorted(instants.items()) if n > 1]
    return {"series": [_series(key, counted, references, decided) for key in SERIES], "left_out": left_out, "shared": shared}


def _series(key: str, entries: list[Entry], references: list[Reference], decided: Decided) -> dict:
    scored = [(e, e.figures[key]) for e in entries if key in e.figures and e.figures[key].scored]
    steps: list[dict] = []
    within: list[dict] = []
    for e, point in scored:
        holder = steps[-1] if steps else None
        if holder is None or (point.value > holder["value"] and (e.entry, holder["entry"], key) in decided):
            best = holder and holder["value"]
            steps.append({**_who(e), **_point(point), "previous": best, "gain": None if best is None else point.value - best})
        elif point.value > holder["value"]:  # higher, but not told apart from the holder: noise, not progress
            within.append({**_who(e), **_point(point), "holder": holder["entry"], "holder_prompter": holder["prompter"]})
    humans = [
        {"label": r.label, "tier": r.tier, "scripted": r.scripted, "participants": r.participants, **_point(r.figures[key])}
        for r in references
        if key in r.figures and r.figures[key].scored
    ]
    return {
        "key": key,
        "name": SERIES[key],
        "scored": len(scored),
        "until": _date(scored[-1][0].date) if scored else None,
        "steps": steps,
        "within_noise": within,
        "humans": humans,
    }


def _who(e: Entry) -> dict:
    return {"entry": e.entry, "prompter": e.prompter, "team": e.team, "baseline": e.baseline, "tasks": e.tasks, "date": _date(e.date)}


def _point(p: Point) -> dict:
    return {"value": p.value, "ci_low": p.ci_low, "ci_high": p.ci_high, "standing": p.standing}


def _date(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="seconds")


# --- the board's rows --------------------------------------------------------------------------------------------


def board_sota(board: Board, judge: JudgeKey) -> dict:
    """`sota` over the board's stored rows for this judge, with the board and judge it describes: the page's data and
    the release's sota.json. Nothing in it depends on when it is asked (a release with the same rows is the same)."""
    return {
        "board": {"pack": board.pack.name, "pack_version": board.pack.version, "revision": board.revision},
        "judge": {"id": judge.judge_id, "version": judge.version, "label": judge.label},
        "dated_by": DATED_BY,
        **sota(board_entries(board, judge), board_references(board, judge), board_decided(board, judge)),
    }


def board_decided(board: Board, judge: JudgeKey) -> Decided:
    """The board's decided head-to-head claims for this judge (BoardStats.decisions), with entry ids as numbers."""
    stats = BoardStats.objects.filter(pack=board.pack, revision=board.revision, judge_id=judge.judge_id, judge_version=judge.version)
    decisions = stats.values_list("decisions", flat=True).first() or {}
    return frozenset((int(a), int(b), scope) for a, b, scope, _ in decisions.get("ahead", []))


def board_entries(board: Board, judge: JudgeKey) -> list[Entry]:
    """The board's published entries for this judge, with the overall and category figures its rows show."""
    dated = Coalesce("submission__published_at", "submission__finished", "submission__created")
    stored = board_rows(board, judge).values_list(
        "submission_id",
        "submission__prompter",
        "submission__team__name",
        dated,
        "submission__origin",
        "submission__rounds",
        "submission__is_baseline",
        "tasks_covered",
        "figures",
    )
    entries = []
    for pk, prompter, team, published, origin, rounds, baseline, tasks, shown in stored:
        figures = {key: _stored(f) for key, f in (shown.get(Scope.CATEGORY) or {}).items() if key in CATEGORIES}
        if shown.get(Scope.OVERALL):
            figures[OVERALL] = _stored(shown[Scope.OVERALL])
        entries.append(Entry(pk, prompter, team, published, figures, origin, rounds, baseline, tasks))
    return entries


def board_references(board: Board, judge: JudgeKey) -> list[Reference]:
    """The human baseline rows the board shows for this judge, in its order (people's, then scripted participants')."""
    references = []
    for view in human_rows(board, judge):
        figures = {key: Point(f.value, f.ci_low, f.ci_high) for key, f in view.categories.items() if key in CATEGORIES}
        if view.overall is not None:
            figures[OVERALL] = Point(view.overall.value, view.overall.ci_low, view.overall.ci_high)
        references.append(Reference(view.row.label, view.row.tier, view.row.scripted, view.row.participants, figures))
    return references


def _stored(figure: Mapping) -> Point:
    return Point(figure.get("value"), figure.get("ci_low"), figure.get("ci_high"), figure.get("standing") or "full")
