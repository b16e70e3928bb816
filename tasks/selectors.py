"""Reads for the task browser. Test-split checklists and seed prompts never leave these functions."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from .models import TAG_GROUPS, Category, Tag, Task, TaskPack


def browsable_tasks(pack: TaskPack, category: str = "", tag: str = "", split: str = "") -> QuerySet[Task]:
    tasks = pack.tasks.prefetch_related("tags").order_by("category", "task_id")
    if category:
        tasks = tasks.filter(category=category)
    if tag:
        tasks = tasks.filter(tags__name=tag)
    if split:
        tasks = tasks.filter(split=split)
    return tasks


def coverage(pack: TaskPack) -> dict:
    """Category × tag task counts, in tag-group order, for the heatmap."""
    counts = {(c, t): n for c, t, n in Tag.objects.filter(tasks__pack=pack).values_list("tasks__category", "name").annotate(n=Count("tasks"))}
    tags = [tag for group in TAG_GROUPS.values() for tag in group]
    categories = list(Category.values)
    return {"tags": tags, "categories": categories, "z": [[counts.get((c, t), 0) for t in tags] for c in categories]}


def public_view(task: Task) -> dict:
    """What the task page may show: everything on dev, the brief and target alone on test."""
    shown = {"task": task, "tags": [t.name for t in task.tags.all()], "constraints": {k: v for k, v in (task.constraints or {}).items() if v}}
    if task.is_public:
        shown.update(prompt_checklist=task.prompt_checklist, image_checklist=task.image_checklist, seed_prompt=task.seed_prompt)
    return shown
