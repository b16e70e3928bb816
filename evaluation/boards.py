"""A board's statistics and rows, computed when the board changes (never per request) and stored in BoardStats
and BoardRow, so the page reads one page of stored rows.

The numbers come from evaluator.metrics.ranking over the stored per-task figures (Scope.TASK) of the
board's published entries; prompt length is the mean word count of an entry's prompts per task.
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Value
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from evaluation.models import BoardRow, BoardStats, Figure, HumanRow, PromptEntry, Status, Submission
from evaluation.signals import board_rebuilt
from evaluator.metrics.board import SETTINGS, board_stats_compute, prompt_styles
from evaluator.metrics.coverage import FULL, coverage_words, standing
from evaluator.metrics.scopes import Scope
from tasks.models import Task, TaskPack


def board_inputs(pack: TaskPack, revision: int, judge_id: str, judge_version: str) -> dict:
    """board_stats_compute's keywords for the board's published entries: every, lengths, lists, categories, splits."""
    published = Submission.objects.filter(pack=pack, pack_revision=revision, published=True, status=Status.DONE)
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    rows = Figure.objects.filter(
        submission__in=published, judge_id=judge_id, judge_version=judge_version, scope=Scope.TASK, value__isnull=False
    )
    for submission_id, task_id, value in rows.values_list("submission_id", "key", "value"):
        scores[str(submission_id)][task_id] = value
    prompts = PromptEntry.objects.filter(submission__in=published).values_list("submission_id", "task__task_id", "text")
    lengths, lists = prompt_styles((str(s), t, text) for s, t, text in prompts.iterator(chunk_size=5000))
    tasks = Task.objects.filter(pack=pack).values_list("task_id", "category", "split")
    feedback = sorted(str(pk) for pk in published.filter(rounds__gt=1).values_list("pk", flat=True))  # never ranked with single-turn runs
    return {
        "every": dict(scores),
        "lengths": lengths,
        "lists": lists,
        "categories": {t: c for t, c, _ in tasks},
        "splits": {t: s for t, _, s in tasks},
        "feedback": feedback,
    }


@dataclass(frozen=True)
class BoardsVersion:
    """Names what every board page shows: `key` changes whenever the board job or a human-row rebuild writes, `at` is
    the latest of those writes (None before any board exists)."""

    key: str
    at: datetime | None


def boards_version() -> BoardsVersion:
    """The boards' version from the rows the pages read: each board job saves every BoardStats row of its board (its
    `computed` moves) or deletes some, in the transaction that rewrites its BoardRows, and a human-row rebuild recreates
    its HumanRows. The key hashes every such row's id and time, so any write changes it, even a job that commits after
    another one's later stamp or on a host whose clock lags (a maximum of the times would miss both). One read over
    per-board rows (boards x judges), whatever the number of entries; every cached board page asks it."""
    with connection.cursor() as cursor:
        cursor.execute(*_version_sql(connection.alias))
        rows = sorted((table, pk, _aware(at)) for table, pk, at in cursor.fetchall())
    key = hashlib.sha256(repr([(table, pk, at.isoformat()) for table, pk, at in rows]).encode()).hexdigest()[:24]
    return BoardsVersion(key=key, at=max((at for _, _, at in rows), default=None))


@functools.cache
def _version_sql(alias: str) -> tuple[str, tuple]:
    """The ORM's SQL for the version read, compiled once per process: compiling the union cost 0.9 ms a request,
    running it 0.03 ms (SQLite, 1,000 entries), and it runs on every cached page."""
    stats = BoardStats.objects.order_by().annotate(table=Value("stats")).values_list("table", "pk", "computed")
    humans = HumanRow.objects.order_by().annotate(table=Value("humans")).values_list("table", "pk", "computed")
    return stats.union(humans, all=True).query.get_compiler(alias).as_sql()


def _aware(at: datetime | str) -> datetime:
    """A `computed` value as the cursor gives it (SQLite: text in UTC) as an aware datetime."""
    found = parse_datetime(at) if isinstance(at, str) else at
    return found if timezone.is_aware(found) else timezone.make_aware(found, UTC)


@transaction.atomic
def board_stats_rebuild(*, pack_id: int, revision: int) -> int:
    """Recompute the stats of every judge with figures on this board; a judge with no published entry left loses its row."""
    pack = TaskPack.objects.get(pk=pack_id)
    published = Submission.objects.filter(pack=pack, pack_revision=revision, published=True, status=Status.DONE)
    overall = Figure.objects.filter(submission__in=published, scope=Scope.OVERALL).values_list("judge_id", "judge_version", "judge_label")
    labels = {(judge_id, version): label for judge_id, version, label in overall}  # one read: the judges and their labels
    judges = set(labels)
    for row in BoardStats.objects.filter(pack=pack, revision=revision):
        if (row.judge_id, row.judge_version) not in judges:
            row.delete()
    conditions = sorted(set(published.exclude(condition="").values_list("condition", flat=True)))
    for judge_id, judge_version in judges:
        data = board_stats_compute(**board_inputs(pack, revision, judge_id, judge_version), settings=SETTINGS)
        backends, rows = board_rows_rebuild(pack, revision, judge_id, judge_version, published, data)
        page = {
            "settings": SETTINGS,
            "backends": backends,
            "judge_label": labels[(judge_id, judge_version)],
            "entry_count": rows,
            "conditions": conditions,
            "has_split": any(e.get("test") is not None and e.get("dev") is not None for e in data["entries"].values()),
        }
        BoardStats.objects.update_or_create(
            pack=pack, revision=revision, judge_id=judge_id, judge_version=judge_version, defaults={**data, **page}
        )
    BoardRow.objects.filter(pack=pack, revision=revision).exclude(submission__in=published).delete()
    board_rebuilt.send(sender=TaskPack, pack_id=pack_id, revision=revision)
    return len(judges)


def _positions(entries: dict, overall: dict[int, float | None]) -> dict[int, int]:
    """Each row's place in the board's default order: the ranked rows in their decided order, then the others by
    overall score (none last), ties by submission."""
    ranked = sorted((e["position"], int(pk)) for pk, e in entries.items() if e.get("position") is not None)
    rest = sorted(
        (pk for pk in overall if str(pk) not in entries or entries[str(pk)].get("position") is None),
        key=lambda pk: (overall[pk] is None, -(overall[pk] or 0.0), pk),
    )
    return {pk: i for i, pk in enumerate([pk for _, pk in ranked] + rest)}


FIGURE_FIELDS = ("value", "scale", "n", "failures", "ci_low", "ci_high")


def _standing(figure: Figure) -> dict[str, str]:
    """What a board cell says besides the value when the figure rests on fewer units than planned (entries are done)."""
    shown = standing(figure.coverage, done=True, max_missing=settings.ATELIER_MAX_MISSING_RATE)
    return {} if shown == FULL else {"standing": shown, "rests_on": coverage_words(figure.coverage)}


def board_rows_rebuild(
    pack: TaskPack, revision: int, judge_id: str, judge_version: str, published, data: dict
) -> tuple[dict[str, str], int]:
    """Store one row per published entry as the board page shows it (figures, sort keys, statistics); returns the
    board's backends with their labels (its columns) and the number of rows."""
    rows: dict[int, dict] = defaultdict(lambda: {Scope.CATEGORY: {}, Scope.BACKEND: {}})
    figures = Figure.objects.filter(
        submission__in=published, judge_id=judge_id, judge_version=judge_version, scope__in=(Scope.OVERALL, Scope.CATEGORY, Scope.BACKEND)
    )
    for f in figures:
        shown = {**{k: getattr(f, k) for k in FIGURE_FIELDS}, **_standing(f)}
        if f.scope == Scope.OVERALL:
            rows[f.submission_id][Scope.OVERALL] = shown
        else:
            rows[f.submission_id][f.scope][f.key] = shown
    shared = Counter(e.get("rank") for e in data["entries"].values() if e.get("rank") is not None)
    gaps = {c["upper"]: c for c in data["comparisons"]}
    positions = _positions(data["entries"], {pk: r.get(Scope.OVERALL, {}).get("value") for pk, r in rows.items()})
    BoardRow.objects.filter(pack=pack, revision=revision, judge_id=judge_id, judge_version=judge_version).delete()
    made = []
    for submission in published.filter(pk__in=list(rows)).annotate(tasks=Count("entries__task", distinct=True)):
        shown, stats = rows[submission.pk], dict(data["entries"].get(str(submission.pk), {}))
        stats.update(tied=stats.get("rank") is not None and shared[stats["rank"]] > 1, next_gap=gaps.get(str(submission.pk)))
        sort = {
            **{c: f["value"] for c, f in shown[Scope.CATEGORY].items()},
            **{f"backend:{b}": f["value"] for b, f in shown[Scope.BACKEND].items()},
        }
        sort.update({k: stats.get(k) for k in ("lc", "win_rate", "test", "dev", "gap")})  # the ranked score has its own column
        overall = shown.get(Scope.OVERALL, {}).get("value")
        labels = {b["name"]: b.get("label", "") for b in submission.backends if isinstance(b, dict)}
        made.append(
            BoardRow(
                pack=pack,
                revision=revision,
                judge_id=judge_id,
                judge_version=judge_version,
                submission=submission,
                condition=submission.condition,
                overall=overall,
                score=stats.get("score"),
                position=positions[submission.pk],
                tasks_covered=submission.tasks,
                figures=shown,
                sort=sort,
                stats=stats,
                backend_labels=labels,
            )
        )
    BoardRow.objects.bulk_create(made)
    return {name: label for row in made for name, label in row.backend_labels.items() if name in row.figures[Scope.BACKEND]}, len(made)
