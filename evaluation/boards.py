"""A board's statistics, computed when the board changes (never per request) and stored in BoardStats.

The numbers come from evaluator.metrics.ranking over the stored per-task figures (scope "task") of the
board's published entries; prompt length is the mean word count of an entry's prompts per task.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean

from django.db import transaction

from evaluator.metrics.board import SETTINGS, board_stats_compute
from leaderboard.models import BoardStats, Figure
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
        BoardStats.objects.update_or_create(pack=pack, revision=revision, judge_id=judge_id, judge_version=judge_version, defaults={**data, "settings": SETTINGS})
    return len(judges)
