"""Reads for the public pages. Views stay thin; everything that touches several models is here."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from statistics import fmean
from urllib.parse import urlparse

from django.core.paginator import Paginator
from django.db.models import Count, F, FloatField, QuerySet
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from evaluation.judges import JudgeKey
from evaluation.models import BoardRow, BoardStats, Figure, HumanRow, PromptEntry, Status, Submission
from evaluation.selectors import entry_breakdown
from evaluation.trajectories import prompting_progress, round_scores, submission_steerability, trajectories
from evaluator.categories import CATEGORIES
from evaluator.judge.scales import scale_named
from evaluator.metrics import humans as human_baseline
from evaluator.metrics.order import task_order
from evaluator.metrics.scopes import RankedOn, Scope, split_cell_key
from evaluator.tiers import Tier
from tasks import difficulty
from tasks.models import TaskPack
from teams.models import PrompterKind
from teams.services import parameters_label

from .filters import BoardFilter


@dataclass
class Row:
    submission: Submission
    overall: Cell | None = None
    categories: dict[str, Cell] = field(default_factory=dict)
    backends: dict[str, Cell] = field(default_factory=dict)
    tasks_covered: int = 0
    tries: int = 0  # the team's submissions to this board (failed and cancelled runs left out)
    stats: dict = field(default_factory=dict)  # this row's BoardStats entry: rank range, win rate, lc, dev/test

    @property
    def condition(self) -> str:
        """The condition with its version where it has one, e.g. 'plain v1+ab12cd34' ('' for none)."""
        s = self.submission
        return f"{s.condition} v{s.condition_version}" if s.condition and s.condition_version else s.condition

    @property
    def card(self) -> CardView | None:
        """The entry's prompter card as it was when the entry was published."""
        return card_view(self.submission.card_version.values) if self.submission.card_version_id else None

    @property
    def middleware(self) -> bool:
        """Whether a backend rewrote prompts before rendering (its config names a rewriter)."""
        return any(isinstance(b, dict) and b.get("rewriter") for b in self.submission.backends or [])


@dataclass(frozen=True)
class CardView:
    """A card's public values as pages show them (the contact is never among them)."""

    name: str
    kind: str
    kind_label: str
    family: str
    weights: str
    parameters: str
    paper_url: str
    code_url: str
    licence: str
    description: str


def card_view(values: dict) -> CardView:
    kind = values.get("kind") or ""
    return CardView(
        name=values.get("name") or "",
        kind=kind,
        kind_label=PrompterKind(kind).label if kind in PrompterKind.values else "",
        family=values.get("family") or "",
        weights=values.get("weights") or "",
        parameters=parameters_label(values.get("parameters")),
        paper_url=values.get("paper_url") or "",
        code_url=values.get("code_url") or "",
        licence=values.get("licence") or "",
        description=values.get("description") or "",
    )


def public_submissions() -> QuerySet[Submission]:
    return Submission.objects.filter(published=True, status=Status.DONE).select_related("team", "pack")


def visible_to(user, submission: Submission) -> bool:
    if submission.published or user.is_staff:
        return True
    return on_team(user, submission)


def on_team(user, submission: Submission) -> bool:
    """Whether the user is a member of the submission's team (what the call log and the cancel button need)."""
    return user.is_authenticated and submission.team.members.filter(pk=user.pk).exists()


@dataclass(frozen=True)
class Board:
    """One leaderboard: a pack version at one revision, scored by one judge. Nothing else is ranked together."""

    pack: TaskPack
    revision: int

    @property
    def key(self) -> str:
        return f"{self.pack.pk}:{self.revision}"

    def __str__(self) -> str:
        return f"{self.pack.name} v{self.pack.version}" + (f" rev {self.revision}" if self.revision > 1 else "")


def leaderboard_boards() -> list[Board]:
    """Boards whose job has stored statistics (it has published entries) or with a human baseline row, the board with
    the most entries first (the page's default): small queries over per-board rows, whatever the number of entries."""
    entries: dict[tuple[int, int], int] = defaultdict(int)
    for pack_id, revision, count in BoardStats.objects.values_list("pack_id", "revision", "entry_count"):
        entries[(pack_id, revision)] = max(entries[(pack_id, revision)], count)
    pairs = {*entries, *HumanRow.objects.values_list("pack_id", "revision").distinct()}
    packs = TaskPack.objects.in_bulk({p for p, _ in pairs})
    return sorted(
        (Board(packs[p], r) for p, r in pairs),
        key=lambda b: (-entries.get((b.pack.pk, b.revision), 0), b.pack.name, -b.pack.loaded_at.timestamp(), -b.revision),
    )


def board_judges(board: Board, humans: bool = True) -> list[JudgeKey]:
    """The board's judges, the one that scored most entries first, then (with humans) judges of human rows only."""
    stored = BoardStats.objects.filter(pack=board.pack, revision=board.revision).order_by("-entry_count", "judge_id")
    judges = [JudgeKey(j, v, label) for j, v, label in stored.values_list("judge_id", "judge_version", "judge_label")]
    return judges + [j for j in (human_judges(board) if humans else []) if j.key not in {k.key for k in judges}]


def board_submissions(board: Board, condition: str = "") -> QuerySet[Submission]:
    """The board's published submissions; with a condition name, only those run under it (any version)."""
    found = public_submissions().filter(pack=board.pack, pack_revision=board.revision)
    return found.filter(condition=condition) if condition else found


BOARD_PAGE = 50
ROW_SORTS = ("lc", "win_rate", "test", "dev", "gap")


def default_sort(stats: BoardStats | None) -> str:
    """The board lists rows in their decided order (no row above an entry decided ahead of it; evaluator.metrics.
    decisions), the unranked rows (partial coverage) after them; without statistics, by the overall score."""
    return "rank" if stats is not None else "overall"


# Besides a condition name, the board filters by kind of run: runs with feedback rounds are never ranked beside
# single-turn runs (evaluator.metrics.board), and can be listed alone.
TURNS = {"@single": "single-turn runs", "@feedback": "runs with feedback rounds"}


def board_rows(board: Board, judge: JudgeKey, condition: str = "", filters: BoardFilter | None = None) -> QuerySet[BoardRow]:
    stored = BoardRow.objects.filter(pack=board.pack, revision=board.revision, judge_id=judge.judge_id, judge_version=judge.version)
    if filters is not None and filters.active:
        stored = filters.apply(stored)
    if condition in TURNS:
        return stored.filter(submission__rounds__gt=1) if condition == "@feedback" else stored.filter(submission__rounds=1)
    return stored.filter(condition=condition) if condition else stored


def leaderboard_page(
    board: Board,
    judge: JudgeKey,
    stats: BoardStats | None,
    sort: str = "overall",
    descending: bool = True,
    condition: str = "",
    number=None,
    per_page: int | None = None,
    filters: BoardFilter | None = None,
):
    """One page of the board's stored rows (BoardRow, rebuilt by the board job), sorted in the database, and the
    board's backend columns: one indexed query for the rows, whatever the board's size."""
    stored = board_rows(board, judge, condition, filters)
    backends = stats.backends if stats else {}
    sortable = {*CATEGORIES, *ROW_SORTS, *(f"backend:{b}" for b in backends)}
    ranked = stats is not None and stats.ranked_on.get("split", RankedOn.ALL) == RankedOn.TEST
    if sort == "rank":  # the decided order (evaluator.metrics.decisions), then the unranked rows: an indexed column
        ordered = stored.order_by("position" if descending else "-position", "submission_id")
    else:
        key = F("score") if sort == "test" and ranked else Cast(KT(f"sort__{sort}"), FloatField()) if sort in sortable else F("overall")
        ordered = stored.order_by(key.desc(nulls_last=True) if descending else key.asc(nulls_last=True), "submission_id")
    # The page's submission ids first (a range of the index, even deep in the board), then those rows with their joins.
    paginator = Paginator(ordered.values_list("submission_id", flat=True), per_page or BOARD_PAGE)
    if stats is not None and not condition and not (filters and filters.active):
        paginator.count = stats.entry_count  # the board job stored how many rows it wrote: no COUNT over the board
    page = paginator.get_page(number)
    ids = list(page.object_list)
    loaded = stored.filter(submission_id__in=ids).select_related("submission__team", "submission__pack", "submission__card_version")
    by_id = {
        r.submission_id: r
        for r in loaded.defer("sort", "backend_labels", "submission__judge_spec", "submission__prompting", "submission__error")
    }
    page.object_list = _rows(board, [by_id[i] for i in ids])
    return page, sorted(backends.items())


def _rows(board: Board, stored: list[BoardRow]) -> list[Row]:
    tries = Submission.objects.filter(
        pack=board.pack, pack_revision=board.revision, team__in={r.submission.team_id for r in stored}
    ).exclude(status__in=[Status.FAILED, Status.CANCELLED])
    tries_by_team = dict(tries.values_list("team").annotate(n=Count("pk")).values_list("team", "n"))
    rows = []
    for r in stored:
        shown = r.figures
        row = Row(submission=r.submission, tasks_covered=r.tasks_covered, stats=r.stats, tries=tries_by_team.get(r.submission.team_id, 0))
        row.overall = _figure(Scope.OVERALL, "overall", shown[Scope.OVERALL]) if shown.get(Scope.OVERALL) else None
        row.categories = {k: _figure(Scope.CATEGORY, k, f) for k, f in shown.get(Scope.CATEGORY, {}).items()}
        row.backends = {k: _figure(Scope.BACKEND, k, f) for k, f in shown.get(Scope.BACKEND, {}).items()}
        rows.append(row)
    return rows


def gaps_among_shown(rows: list[Row], shown: QuerySet[BoardRow], decisions: dict) -> None:
    """With rows hidden (a filter or a condition), a row's "next" hint compares it with the next ranked row shown, not
    with a hidden neighbour: where they differ, the hint becomes the board's decision on those two (decided ahead, or
    not told apart: one of its decisions held together), saying how many rows between are hidden; the last ranked
    row shown has no row to compare with, and no hint."""
    ranked = [
        (str(pk), position) for pk, position, rank in shown.values_list("submission_id", "position", "stats__rank") if rank is not None
    ]
    after, position = {upper: lower for (upper, _), lower in zip(ranked, ranked[1:])}, dict(ranked)
    ahead = {frozenset((a, b)) for a, b, scope, _ in decisions.get("ahead", []) if scope == "overall"}
    for row in rows:
        me, gap = str(row.submission.pk), row.stats.get("next_gap")
        lower, at = after.get(me, (None, 0))
        if gap and me in position and lower != gap["lower"]:
            hidden = at - position[me] - 1
            hint = {"shown": True, "lower": lower, "separated": frozenset((me, lower)) in ahead, "hidden": hidden} if lower else None
            row.stats = {**row.stats, "next_gap": hint}


@dataclass(frozen=True)
class Cell:
    """A stored figure as a board cell shows it (a plain object: building model instances for every cell of a page
    of rows costs more than reading them)."""

    scope: str
    key: str
    value: float | None = None
    scale: str = ""
    n: int = 0
    failures: int = 0
    ci_low: float | None = None
    ci_high: float | None = None
    standing: str = "full"  # or partial or withheld (evaluator.metrics.coverage)
    rests_on: str = ""


def _figure(scope: str, key: str, stored: dict) -> Cell:
    return Cell(scope=scope, key=key, **stored)


def entry_rows(entries: list[PromptEntry], judge: JudgeKey) -> list[dict]:
    """Display rows for the submission page: prompt-side judgements, and per backend its images and the
    mean over images of each image-side skill that has a value (a gate's verdict has none), with its scale; and
    the prompt's predicted score by the installed difficulty predictor, once it has made one."""
    details = entry_breakdown(entries, judge)
    predicted = difficulty.scores(e.text for e in entries)
    rows = []
    for entry in entries:
        detail = details[entry.pk]
        prompt = {j.skill: j for j in detail["judgements"] if j.render_id is None}
        by_render = defaultdict(list)
        for j in detail["judgements"]:
            if j.render_id is not None and j.value is not None:
                by_render[j.render_id].append(j)
        backends = []
        for name in sorted({r.backend for r in detail["renders"]}):
            renders = sorted((r for r in detail["renders"] if r.backend == name), key=lambda r: r.image_index)
            values, scales = defaultdict(list), {}
            for j in (j for render in renders for j in by_render[render.pk]):
                values[j.skill].append(j.value)
                scales[j.skill] = scale_named(j.scale)
            means = {skill: (fmean(v), scales[skill]) for skill, v in values.items()}
            backends.append({"name": name, "renders": renders, "means": means})
        rows.append({"entry": entry, "prompt": prompt, "backends": backends, "predicted": predicted.get(entry.text)})
    return rows


TRAJECTORIES_SHOWN = 50


def prompting_section(submission: Submission) -> dict:
    """What the submission page shows of an endpoint run: progress, the settings it ran with, the endpoint's registered
    host now (its calls went to the host of the settings, which differ once the endpoint is re-pointed), the first
    trajectories and, with feedback rounds, the mean score by round (chart and table from the same rows) and steerability."""
    section = {
        "progress": prompting_progress(submission),
        "settings": submission.prompting or {},
        "registered": urlparse(submission.endpoint.base_url).netloc if submission.endpoint_id else "",
        "trajectories": trajectories(submission, limit=TRAJECTORIES_SHOWN),
    }
    if submission.rounds > 1:
        by_category: dict[str, list[dict]] = defaultdict(list)
        for point in round_scores(submission):
            by_category[point["category"]].append(point)
        section["rounds"] = [{"category": c, "points": points} for c, points in sorted(by_category.items())]
        section["chart"] = [
            {k: [p[field] for p in points] for k, field in (("x", "round"), ("y", "mean"), ("low", "low"), ("high", "high"))}
            | {"category": c}
            for c, points in sorted(by_category.items())
        ]
        section["steerability"] = [_with_digits(row) for row in submission_steerability(submission)]
    return section


def _with_digits(row: dict) -> dict:
    """The decimals each estimate's noise supports: the running-best chain's from its interval's half-width,
    Algorithm 1's from 1.96 standard errors."""
    from evaluator.metrics.intervals import digits_supported

    chain = (row["high"] - row["low"]) / 2 if row.get("low") is not None and row.get("high") is not None else None
    se = row.get("artwhisperer_se")
    return row | {"digits": digits_supported(chain), "artwhisperer_digits": digits_supported(None if se is None else 1.96 * se)}


@dataclass
class HumanView:
    """A human baseline row as the board shows it, with the same figure cells as a prompter row."""

    row: HumanRow
    overall: Figure | None = None
    categories: dict[str, Figure] = field(default_factory=dict)
    backends: dict[str, Figure] = field(default_factory=dict)
    common: float | None = None  # overall on the humans' tasks (its own overall)


def human_judges(board: Board) -> list[JudgeKey]:
    rows = HumanRow.objects.filter(pack=board.pack, revision=board.revision, tier=Tier.ALL)
    found = {
        (r.judge_id, r.judge_version): JudgeKey(r.judge_id, r.judge_version, r.judge_label) for r in rows
    }  # people's and scripted rows
    return list(found.values())


def human_rows(board: Board, judge: JudgeKey) -> list[HumanView]:
    """The board's human baseline rows for this judge: people's (novice, skilled, all), then scripted demo participants'
    rows of their own, never pooled with people."""
    rows = HumanRow.objects.filter(pack=board.pack, revision=board.revision, judge_id=judge.judge_id, judge_version=judge.version)
    found = {(r.scripted, r.tier): r for r in rows}
    views = []
    for scripted, tier in [(s, t) for s in (False, True) for t in HumanRow.TIER_ORDER]:
        if (scripted, tier) in found:
            view = HumanView(found[(scripted, tier)])
            for data in view.row.figures:
                figure = Figure(**{k: data[k] for k in ("scope", "key", "value", "n", "failures", "ci_low", "ci_high", "scale")})
                if figure.scope == Scope.OVERALL:
                    view.overall = figure
                elif figure.scope in (Scope.CATEGORY, Scope.BACKEND):
                    getattr(view, "categories" if figure.scope == Scope.CATEGORY else "backends")[figure.key] = figure
            view.common = view.overall.value if view.overall else None
            views.append(view)
    return views


def common_task_scores(board: Board, judge: JudgeKey, rows: list[Row], tasks: list[str]) -> dict[int, float]:
    """Each prompter row's overall on `tasks` only (evaluator.metrics.humans.common_task_scores), from the stored
    per-task figures; a row with no stored task figures (scored before they existed: run rescore) is left out."""
    category = dict(board.pack.tasks.filter(task_id__in=tasks).values_list("task_id", "category"))
    scores: dict[int, dict[str, float | None]] = defaultdict(dict)
    figures = Figure.objects.filter(
        submission__in=[r.submission.pk for r in rows],
        judge_id=judge.judge_id,
        judge_version=judge.version,
        scope=Scope.TASK,
        key__in=tasks,
    )
    for submission_id, task_id, value in figures.values_list("submission_id", "key", "value"):
        scores[submission_id][task_id] = value
    return human_baseline.common_task_scores(scores, tasks, category)


def human_section(board: Board, judge: JudgeKey, rows: list[Row]) -> dict:
    """Human rows, and when the humans did only part of the board's tasks (evaluator.metrics.humans.common_tasks),
    every row's overall on those tasks."""
    humans = human_rows(board, judge)
    pooled = [(h.row.tier, h.row.scripted, h.row.tasks) for h in humans]
    tasks, partial = human_baseline.common_tasks(pooled, board.pack.tasks.count() if humans else 0)  # no rows: no query
    return {
        "humans": humans,
        "partial": partial,
        "human_tasks": len(tasks),
        "common": common_task_scores(board, judge, rows, tasks) if partial else {},
    }


def board_stats(board: Board, judge: JudgeKey) -> BoardStats | None:
    """The board's stored statistics without the per-entry ones (those travel on each BoardRow): what a request reads."""
    found = BoardStats.objects.filter(pack=board.pack, revision=board.revision, judge_id=judge.judge_id, judge_version=judge.version)
    return found.defer("entries", "comparisons").first()


HEATMAP_ENTRIES = 30  # the win-rate matrix shows the top entries by score; the download has every pair
SCATTER_ENTRIES = 500
COMPARISONS_SHOWN = 100


def stats_section(board: Board, judge: JudgeKey, stats: BoardStats | None, condition: str = "") -> dict:
    """What the board shows beside the table, all stored (see StatsSection); has_split is needed by the table too."""
    if stats is None:
        return {"stats": None}
    return {"stats": stats, "section": StatsSection(board, judge, stats, condition), "has_split": stats.has_split}


class StatsSection:
    """Neighbour comparisons (simultaneous intervals), the pairwise win-rate matrix of the top entries, and the length effect
    with its scatter (the statistics are the whole board's; with a condition filter only the entries in view are
    listed). Each part is read when the template first asks for it, so a request whose cached section HTML is still
    current (same board version) reads none of it. At most SCATTER_ENTRIES rows."""

    def __init__(self, board: Board, judge: JudgeKey, stats: BoardStats, condition: str) -> None:
        self.board, self.judge, self.stats, self.condition = board, judge, stats, condition

    @cached_property
    def _top(self) -> list[tuple[int, str, dict]]:
        rows = board_rows(self.board, self.judge, self.condition).order_by("position", "submission_id")
        return list(rows.values_list("submission_id", "submission__prompter", "stats", "submission__team__name")[:SCATTER_ENTRIES])

    @cached_property
    def _names(self) -> dict[str, str]:
        """Rows named as the table names them: rank, prompter and team (prompters may share a name)."""
        return {str(pk): row_name(prompter, team, stats.get("rank")) for pk, prompter, stats, team in self._top}

    @cached_property
    def heatmap(self) -> dict:
        ids = [str(pk) for pk, _, stats, _ in self._top if stats.get("rank") is not None][:HEATMAP_ENTRIES]
        matrix = [[_rate(self.stats.wins.get(f"{a}:{b}")) if a != b else None for b in ids] for a in ids]
        bounds = [[_bounds(self.stats.wins.get(f"{a}:{b}")) if a != b else None for b in ids] for a in ids]
        return {"labels": [self._names[i] for i in ids], "z": matrix, "bounds": bounds}

    @cached_property
    def comparisons(self) -> list[dict]:
        names = self._names
        gaps = [
            row["next_gap"]
            for _, _, row, _ in self._top[:COMPARISONS_SHOWN]
            if row.get("next_gap") and (not self.condition or row["next_gap"]["lower"] in names)
        ]
        missing = [int(c["lower"]) for c in gaps if c["lower"] not in names]
        found = Submission.objects.filter(pk__in=missing).values_list("pk", "prompter", "team__name") if missing else []
        lower = {str(pk): row_name(p, team, None) for pk, p, team in found}
        return [{**c, "upper_name": names[c["upper"]], "lower_name": names.get(c["lower"]) or lower.get(c["lower"], "?")} for c in gaps]

    @cached_property
    def scatter(self) -> list[dict]:
        return [
            {"name": self._names[str(pk)], "x": row["length"], "y": row["score"]}
            for pk, _, row, _ in self._top
            if row.get("length") and row.get("score") is not None
        ]

    @property
    def length(self) -> list[dict]:
        return self.stats.length


def row_name(prompter: str, team: str, rank: int | None) -> str:
    return f"{rank}. {prompter} · {team}" if rank is not None else f"{prompter} · {team} (unranked)"


def _rate(record: list | None) -> float | None:
    if not record or not sum(record[:3]):
        return None
    wins, ties, losses = record[:3]
    return round(100 * (wins + 0.5 * ties) / (wins + ties + losses), 1)


def _bounds(record: list | None) -> list[float] | None:
    """A win-table cell's interval in percent (stored since the board decides pairs head to head), or None."""
    if not record or len(record) < 5 or record[3] is None:
        return None
    return [round(100 * record[3]), round(100 * record[4])]


def _interval(values: list[float]) -> tuple[float, float]:
    """The 95 % interval of the mean of task scores on 0-100, in order.task_order (evaluator.metrics.intervals)."""
    from evaluator.metrics.intervals import mean_interval  # numpy: imported when a page needs an interval

    return mean_interval(values, 0.0, 100.0)  # type: ignore[return-value]


def entry_views(submission: Submission, judge: JudgeKey, figures: dict[str, list[Figure]]) -> dict:
    """More views of one entry's stored figures: category × backend, prompt vs image part, mean vs top-1 per skill,
    and the mean task score per tag (from the stored per-task figures and the tasks' tags)."""
    cells = {split_cell_key(f.key): f for f in figures.get(Scope.CATEGORY_BACKEND, [])}
    backends = sorted({b for _, b in cells})
    categories = sorted({c for c, _ in cells}, key=CATEGORIES.index)
    matrix = [{"category": c, "cells": [cells.get((c, b)) for b in backends]} for c in categories]
    means = {f.key: f for f in figures.get(Scope.SKILL, [])}
    top1 = [{"skill": f.key, "mean": means.get(f.key), "top1": f} for f in figures.get(Scope.TOP1, [])]
    tasks = Figure.objects.filter(
        submission=submission, judge_id=judge.judge_id, judge_version=judge.version, scope=Scope.TASK, value__isnull=False
    )
    scores = dict(tasks.values_list("key", "value"))
    by_tag: dict[tuple[str, str], list[float]] = defaultdict(list)
    tagged = {t.task_id: t for t in submission.pack.tasks.filter(task_id__in=list(scores)).prefetch_related("tags")}
    for task_id in task_order(tagged):
        for tag in tagged[task_id].tags.all():
            by_tag[(tag.group, tag.name)].append(scores[task_id])
    tags = [{"group": g, "tag": t, "mean": fmean(v), "n": len(v), "interval": _interval(v)} for (g, t), v in sorted(by_tag.items())]
    return {
        "backends": backends,
        "matrix": matrix,
        "parts": figures.get(Scope.PART, []),
        "top1": top1,
        "tags": tags,
        "tag_chart": {"x": [r["tag"] for r in tags], "y": [round(r["mean"], 2) for r in tags], "n": [r["n"] for r in tags]},
    }


@dataclass
class PrompterEntry:
    """One published entry of a card on one board and judge, as the prompter's page lists it."""

    submission: Submission
    board: Board
    judge: JudgeKey
    rank: int | None
    overall: Cell | None
    categories: dict[str, Cell]
    card: CardView | None


def prompter_entries(card_id: int) -> list[PrompterEntry]:
    """Every published entry of a card, on every pack, revision and judge, oldest publication first."""
    stored = (
        BoardRow.objects.filter(submission__card_id=card_id, submission__published=True, submission__status=Status.DONE)
        .select_related("submission__pack", "submission__card_version", "submission__team")
        .defer("sort", "backend_labels", "submission__judge_spec", "submission__prompting", "submission__error")
        .order_by("submission__published_at", "submission_id", "judge_id", "judge_version")
    )
    entries = []
    for r in stored:
        shown, s = r.figures, r.submission
        label = s.judge_label if (s.judge_id, s.judge_version) == (r.judge_id, r.judge_version) else ""
        entries.append(
            PrompterEntry(
                submission=s,
                board=Board(s.pack, r.revision),
                judge=JudgeKey(r.judge_id, r.judge_version, label),
                rank=r.stats.get("rank"),
                overall=_figure(Scope.OVERALL, "overall", shown[Scope.OVERALL]) if shown.get(Scope.OVERALL) else None,
                categories={k: _figure(Scope.CATEGORY, k, f) for k, f in shown.get(Scope.CATEGORY, {}).items()},
                card=card_view(s.card_version.values) if s.card_version_id else None,
            )
        )
    return entries


def prompter_chart(entries: list[PrompterEntry]) -> dict:
    """Overall and per-category scores on each board the prompter was published on, for the judge that scored most of
    its entries: one group of series per board (pack version and revision), since scores on different tasks are never
    drawn on one axis, nor those of different judges; one point per entry, with its interval."""
    judges: dict[str, int] = defaultdict(int)
    for e in entries:
        judges[e.judge.key] += 1
    if not judges:
        return {}
    judge = max(judges, key=lambda k: (judges[k], k))
    chosen = [e for e in entries if e.judge.key == judge]
    boards: dict[str, list[PrompterEntry]] = defaultdict(list)
    for e in chosen:
        boards[e.board.key].append(e)
    groups = [{"board": str(on[0].board), "key": key, "series": _chart_series(on)} for key, on in boards.items()]
    label = next((e.judge.label for e in chosen if e.judge.label), chosen[0].judge.judge_id)
    return {"judge": label, "groups": [g for g in groups if g["series"]]}


def _chart_series(entries: list[PrompterEntry]) -> list[dict]:
    series = []
    for name in ("overall", *CATEGORIES):
        points = [(e, e.overall if name == "overall" else e.categories.get(name)) for e in entries]
        points = [(e, c) for e, c in points if c is not None and c.value is not None]
        x = [
            f"#{e.submission.pk} ({e.submission.published_at:%Y-%m-%d})" if e.submission.published_at else f"#{e.submission.pk}"
            for e, _ in points
        ]
        series.append(
            {
                "name": name,
                "x": x,
                "y": [c.value for _, c in points],
                "low": [c.ci_low for _, c in points],
                "high": [c.ci_high for _, c in points],
            }
        )
    return [s for s in series if s["x"]]
