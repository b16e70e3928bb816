"""A board's statistics, computed when the board changes (never per request) and stored in BoardStats.

The numbers come from evaluator.metrics.ranking over the stored per-task figures (scope "task") of the
board's published entries; prompt length is the mean word count of an entry's prompts per task.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from statistics import fmean

from django.db import transaction

from evaluator.metrics.ranking import adjacent_tests, board_score, length_effect, rank_ranges, win_rates
from leaderboard.models import BoardStats, Figure
from submissions.models import PromptEntry, Status, Submission
from tasks.models import Split, Task, TaskPack

SETTINGS = {"replicates": 1000, "seed": 0, "alpha": 0.05, "resamples": 9999, "tie_margin": 0.0}


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


def board_stats_compute(scores: dict, lengths: dict, categories: dict, splits: dict, settings: dict = SETTINGS) -> dict:
    """Everything BoardStats stores, as plain data (the board download's recompute script calls this too)."""
    ranges = rank_ranges(scores, categories, replicates=settings["replicates"], seed=settings["seed"])
    order = [r.entry for r in ranges]
    comparisons = adjacent_tests(scores, categories, order, alpha=settings["alpha"], resamples=settings["resamples"], seed=settings["seed"])
    field, pairs = win_rates(scores, tie_margin=settings["tie_margin"])
    effects = length_effect(scores, lengths, categories)
    entries = {}
    for r in ranges:
        controlled = [e.controlled[r.entry] for e in effects if r.entry in e.controlled]
        by_split = {s: board_score({t: v for t, v in scores[r.entry].items() if splits.get(t) == s}, categories) for s in (Split.DEV, Split.TEST)}
        gap = by_split[Split.DEV] - by_split[Split.TEST] if None not in by_split.values() else None
        entries[r.entry] = {
            "score": r.score, "low": r.low, "high": r.high, "rank": r.rank, "rank_low": r.rank_low, "rank_high": r.rank_high,
            "arena_rank": r.arena_rank, "win_rate": field[r.entry].rate, "lc": fmean(controlled) if controlled else None,
            "dev": by_split[Split.DEV], "test": by_split[Split.TEST], "gap": gap,
            "length": fmean(v for v in lengths.get(r.entry, {}).values()) if lengths.get(r.entry) else None,
        }  # fmt: skip
    return {
        "entries": entries,
        "comparisons": [asdict(c) for c in comparisons],
        "wins": {f"{a}:{b}": [w.wins, w.ties, w.losses] for (a, b), w in pairs.items()},
        "length": [{"category": e.category, "coefficient": e.coefficient, "low": e.low, "high": e.high, "n": e.n} for e in effects],
    }


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
