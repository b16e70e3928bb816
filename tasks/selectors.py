"""Reads for the task browser and for prompters. Test-split checklists and seed prompts never leave these functions."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from django.db.models import Count, QuerySet

from evaluator.categories import IMITATION
from evaluator.prompters.messages import Request

from . import difficulty
from .models import CONTENT_FIELDS, TAG_GROUPS, Category, PinnedTask, Tag, Task, TaskPack, TaskVersion


def browsable_tasks(pack: TaskPack, category: str = "", tag: str = "", split: str = "") -> QuerySet[Task]:
    tasks = pack.tasks.prefetch_related("tags").order_by("category", "task_id")
    if category:
        tasks = tasks.filter(category=category)
    if tag:
        tasks = tasks.filter(tags__name=tag)
    if split:
        tasks = tasks.filter(split=split)
    return tasks


def with_predictions(tasks: Iterable[Task]) -> list[Task]:
    """The tasks, each with `predicted`: the installed difficulty predictor's score of its brief verbatim (an
    imitation task's seed prompt), or None before it has made one."""
    tasks = list(tasks)
    scores = difficulty.scores(difficulty.task_text(t) for t in tasks)
    for task in tasks:
        task.predicted = scores.get(difficulty.task_text(task))
    return tasks


def coverage(pack: TaskPack) -> dict:
    """Category × tag task counts, in tag-group order, for the heatmap."""
    counts = {
        (c, t): n for c, t, n in Tag.objects.filter(tasks__pack=pack).values_list("tasks__category", "name").annotate(n=Count("tasks"))
    }
    tags = [tag for group in TAG_GROUPS.values() for tag in group]
    categories = list(Category.values)
    return {"tags": tags, "categories": categories, "z": [[counts.get((c, t), 0) for t in tags] for c in categories]}


class RevisionGone(LookupError):
    """Tasks whose content at a revision of their pack is not kept (a submission made before versions were kept, on a
    task changed since): nothing may be shown or judged in its place. The message says so in the platform's words."""

    def __init__(self, pack: TaskPack, revision: int, task_ids: list[str]):
        super().__init__(
            f"revision {revision} of {pack.name} v{pack.version} is no longer kept ({', '.join(sorted(task_ids))}): "
            f"its tasks have changed since; submit again to be judged against revision {pack.revision}"
        )


def task_at(task: Task, revision: int) -> PinnedTask:
    """The task as its pack's revision `revision` had it. RevisionGone when that content is not kept."""
    return tasks_at([task], revision)[0]


def tasks_at(tasks: Iterable[Task], revision: int) -> list[PinnedTask]:
    """task_at for many tasks of one pack, in one query; RevisionGone names every task whose content is not kept."""
    tasks = list(tasks)
    at = _versions_at({t.pk for t in tasks}, revision)
    missing = [t.task_id for t in tasks if t.pk not in at]
    if missing:
        raise RevisionGone(TaskPack.objects.get(pk=tasks[0].pack_id), revision, missing)
    return [_pinned(t, at[t.pk], revision) for t in tasks]


def pack_tasks_at(pack: TaskPack, revision: int) -> list[PinnedTask]:
    """The pack's tasks as revision `revision` had them, by category and id. A task with no content kept at that
    revision is not one of them: it was added later (or changed before versions were kept, and nothing can stand in)."""
    tasks = list(pack.tasks.order_by("category", "task_id"))
    at = _versions_at({t.pk for t in tasks}, revision)
    return [_pinned(t, at[t.pk], revision) for t in tasks if t.pk in at]


def _versions_at(task_pks: set[int], revision: int) -> dict[int, TaskVersion]:
    """Each task's latest version at the revision (a run of changes under one revision keeps its last)."""
    at: dict[int, TaskVersion] = {}
    for version in TaskVersion.objects.filter(task__in=task_pks, revision__lte=revision).order_by("task_id", "revision", "version"):
        at[version.task_id] = version
    return at


def _pinned(task: Task, version: TaskVersion, revision: int) -> PinnedTask:
    content = {name: getattr(version, name) for name in CONTENT_FIELDS}
    pinned = PinnedTask(pk=task.pk, pack_id=task.pack_id, task_id=task.task_id, version=version.version, **content)
    pinned._state.adding, pinned._state.db = False, task._state.db
    pinned.pinned_revision = revision
    return pinned


def public_view(task: Task) -> dict:
    """What the task page may show: everything on dev, the brief and target alone on test."""
    shown = {
        "task": task,
        "tags": [t.name for t in task.tags.all()],
        "constraints": {k: v for k, v in (task.constraints or {}).items() if v},
    }
    if task.is_public:
        shown.update(prompt_checklist=task.prompt_checklist, image_checklist=task.image_checklist, seed_prompt=task.seed_prompt)
    return shown


# What a prompter may be shown: one definition for every prompter (an endpoint run and its test call, a study
# participant, the bench). Which tasks: prompter_tasks; which parts of a task: prompter_view.


def prompter_tasks(tasks: QuerySet[Task] | list[Task]) -> QuerySet[Task] | list[Task]:
    """The tasks a prompter may be shown: every OE and CO task, and an IM task only once its target image exists
    (manage.py render_targets); an IM task without one cannot be done. Of rows (a QuerySet) or of tasks as a revision
    had them (a list: pack_tasks_at)."""
    if isinstance(tasks, list):
        return [t for t in tasks if t.category != IMITATION or t.target_image]
    return tasks.exclude(category=IMITATION, target_image="")


def prompter_view(task: Task, *, with_image: bool = True) -> Request:
    """All a prompter is ever shown of a task: its category, title, brief, every constraint as the client wrote it,
    and (IM) the target image's bytes (with_image=False: a page that shows the image by its URL). Never the
    checklists, the seed prompt or anything else hidden, on either split."""
    target = None
    if with_image and task.category == IMITATION and task.target_image:
        with task.target_image.open("rb") as handle:
            target = handle.read()
    return Request(
        category=task.category, title=prompter_title(task), brief=task.brief, constraints=dict(task.constraints or {}), target_png=target
    )


def prompter_title(task: Task) -> str:
    """The title a prompter sees. An IM task's own title describes its target ("Red sun over blue hills"), so a
    prompter could write from it without looking at the image: IM tasks are shown by a neutral one."""
    return f"Imitation task {task.task_id}" if task.category == IMITATION else task.title


SPREAD = 10.0  # per-task spread of two entries' score differences the pack page assumes (the showcase shows 7.5-20)


def separability(pack: TaskPack) -> dict:
    """What the pack's ranked tasks can tell apart head to head (evaluator.metrics.pairs, seeded simulations): for a gap
    of 2, 5 and 10 points at per-task spread SPREAD, the share of runs told apart over the ranked tasks and over the
    smallest category's alone, one decision each."""
    from evaluator.metrics.board import SETTINGS, ranked_tasks  # numpy: imported when the page asks
    from evaluator.metrics.pairs import power, tasks_needed

    rows = list(pack.tasks.values_list("task_id", "category", "split"))
    categories, splits = {t: c for t, c, _ in rows}, {t: s for t, _, s in rows}
    split, ranked = ranked_tasks(categories, splits, SETTINGS["ranked_split_min"])
    smallest = min(Counter(categories[t] for t in ranked).values(), default=0)
    cells = [{"gap": gap, "overall": power(len(ranked), gap, SPREAD), "category": power(smallest, gap, SPREAD)} for gap in (2, 5, 10)]
    return {"split": split, "tasks": len(ranked), "smallest": smallest, "spread": SPREAD, "sweep": tasks_needed(), "cells": cells}


def prediction_spread(predicted: list[float], manifest: dict | None) -> dict | None:
    """Whether the predictions on these tasks differ by more than the predictor's own typical error: the spread
    (lowest to highest) beside the residual spread on its test split, σ_y √(1 − r²) (σ_y: the training target's
    standard deviation, r: Pearson on the test split). None without predictions; error None where the manifest
    does not give both (a demo predictor trained on this site's own scores: its error is unknown)."""
    if not predicted or manifest is None:
        return None
    try:
        sigma = float(manifest["normalisation"]["std"][0])
        r = float(manifest["metrics"]["test"]["pearson"])
        error = sigma * math.sqrt(max(0.0, 1 - r * r))
    except (KeyError, IndexError, TypeError, ValueError):
        error = None
    low, high = min(predicted), max(predicted)
    return {"count": len(predicted), "low": low, "high": high, "error": error, "apart": error is not None and high - low > 2 * error}
