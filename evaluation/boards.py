"""A board's statistics and rows, computed when the board changes (never per request) and stored in BoardStats
and BoardRow, so the page reads one page of stored rows.

The numbers come from evaluator.metrics.ranking over the stored per-task figures (scope "task") of the
board's published entries; prompt length is the mean word count of an entry's prompts per task.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from statistics import fmean

from django.db import transaction
from django.db.models import Count

from evaluator.metrics.board import SETTINGS, board_stats_compute
from leaderboard.models import BoardRow, BoardStats, Figure
from submissions.models import PromptEntry, Status, Submission
from tasks.models import Task, TaskPack


def board_inputs(pack: TaskPack, revision: int, judge_id: str, judge_version: str) -> tuple[dict, dict, dict, dict]:
    """(scores[entry][task], lengths[entry][task], categories[task], splits[task]) of the board's published entries."""
    published = Submission.objects.filter(pack=pack, pack_revision=revision, published=True, status=Status.DONE)
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    rows = Figure.objects.filter(submission__in=published, judge_id=judge_id, judge_version=judge_version, scope="task", value__isnull=False)
    for submission_id, task_id, value in rows.values_list("submission_id", "key", "value"):
        scores[str(submission_id)][task_id] = value
    words: dict[tuple[str, str], list[int]] = defaultdict(list)
    for submission_id, task_id, text in PromptEntry.objects.filter(submission__in=published).values_list("submission_id", "task__task_id", "text"):
        words[(str(submission_id), task_id)].append(len(text.split()))
    lengths: dict[str, dict[str, float]] = defaultdict(dict)
    for (entry, task_id), counts in words.items():
        lengths[entry][task_id] = fmean(counts)
    tasks = Task.objects.filter(pack=pack).values_list("task_id", "category", "split")
    return dict(scores), dict(lengths), {t: c for t, c, _ in tasks}, {t: s for t, _, s in tasks}


@transaction.atomic
def board_stats_rebuild(*, pack_id: int, revision: int) -> int:
    """Recompute the stats of every judge with figures on this board; a judge with no published entry left loses its row."""
    pack = TaskPack.objects.get(pk=pack_id)
    published = Submission.objects.filter(pack=pack, pack_revision=revision, published=True, status=Status.DONE)
    judges = set(Figure.objects.filter(submission__in=published, scope="overall").values_list("judge_id", "judge_version"))
    for row in BoardStats.objects.filter(pack=pack, revision=revision):
        if (row.judge_id, row.judge_version) not in judges:
            row.delete()
    for judge_id, judge_version in judges:
        data = board_stats_compute(*board_inputs(pack, revision, judge_id, judge_version))
        labels = board_rows_rebuild(pack, revision, judge_id, judge_version, published, data)
        BoardStats.objects.update_or_create(pack=pack, revision=revision, judge_id=judge_id, judge_version=judge_version, defaults={**data, "settings": SETTINGS, "backends": labels})
    BoardRow.objects.filter(pack=pack, revision=revision).exclude(submission__in=published).delete()
    return len(judges)


FIGURE_FIELDS = ("value", "scale", "n", "failures", "ci_low", "ci_high")


def board_rows_rebuild(pack: TaskPack, revision: int, judge_id: str, judge_version: str, published, data: dict) -> dict[str, str]:
    """Store one row per published entry as the board page shows it (figures, sort keys, statistics); returns the
    board's backends with their labels (its columns)."""
    rows: dict[int, dict] = defaultdict(lambda: {"category": {}, "backend": {}})
    figures = Figure.objects.filter(submission__in=published, judge_id=judge_id, judge_version=judge_version, scope__in=("overall", "category", "backend"))
    for f in figures:
        shown = {k: getattr(f, k) for k in FIGURE_FIELDS}
        if f.scope == "overall":
            rows[f.submission_id]["overall"] = shown
        else:
            rows[f.submission_id][f.scope][f.key] = shown
    arena = Counter(e["arena_rank"] for e in data["entries"].values())
    gaps = {c["upper"]: c for c in data["comparisons"]}
    BoardRow.objects.filter(pack=pack, revision=revision, judge_id=judge_id, judge_version=judge_version).delete()
    made = []
    for submission in published.filter(pk__in=list(rows)).annotate(tasks=Count("entries__task", distinct=True)):
        shown, stats = rows[submission.pk], dict(data["entries"].get(str(submission.pk), {}))
        stats.update(tied=arena[stats.get("arena_rank")] > 1, next_gap=gaps.get(str(submission.pk)))
        sort = {**{c: f["value"] for c, f in shown["category"].items()}, **{f"backend:{b}": f["value"] for b, f in shown["backend"].items()}}
        sort.update({k: stats.get(k) for k in ("lc", "win_rate", "test", "dev", "gap")})
        overall = shown.get("overall", {}).get("value")
        labels = {b["name"]: b.get("label", "") for b in submission.backends if isinstance(b, dict)}
        made.append(BoardRow(pack=pack, revision=revision, judge_id=judge_id, judge_version=judge_version, submission=submission, condition=submission.condition,
                             overall=overall, tasks_covered=submission.tasks, figures=shown, sort=sort, stats=stats, backend_labels=labels))  # fmt: skip
    BoardRow.objects.bulk_create(made)
    return {name: label for row in made for name, label in row.backend_labels.items() if name in row.figures["backend"]}
