from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from . import difficulty, selectors
from .models import TAG_GROUP_OF, Category, Split, Task, TaskPack


@require_safe
def task_list(request: HttpRequest) -> HttpResponse:
    packs = list(TaskPack.objects.order_by("name", "-loaded_at"))
    pack = next((p for p in packs if str(p.pk) == request.GET.get("pack")), packs[0] if packs else None)
    filters = {k: request.GET.get(k, "") for k in ("category", "tag", "split")}
    filters = {k: v for k, v in filters.items() if v in {"category": Category.values, "tag": TAG_GROUP_OF, "split": Split.values}[k]}
    context = {
        "packs": packs,
        "pack": pack,
        "filters": filters,
        "categories": Category.choices,
        "splits": Split.choices,
        "tags": list(TAG_GROUP_OF),
        "tasks": selectors.with_predictions(selectors.browsable_tasks(pack, **filters)) if pack else [],
        "predictor": difficulty.installed(),
        "coverage": selectors.coverage(pack) if pack else None,
        "separability": selectors.separability(pack) if pack and pack.tasks.exists() else None,
    }
    predicted = [t.predicted for t in context["tasks"] if t.predicted is not None]
    context["spread"] = selectors.prediction_spread(predicted, context["predictor"])
    return render(request, "tasks/list.html", context)


@require_safe
def task_detail(request: HttpRequest, pack_id: int, task_id: str) -> HttpResponse:
    task = get_object_or_404(Task.objects.select_related("pack"), pack_id=pack_id, task_id=task_id)
    predicted = selectors.with_predictions([task])[0].predicted
    return render(request, "tasks/detail.html", selectors.public_view(task) | {"predicted": predicted, "predictor": difficulty.installed()})
