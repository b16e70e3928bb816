from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from evaluation.media import PRIVATE, media_response
from evaluator.metrics.agreement import MIN_TASKS_FOR_INTERVAL
from tasks import difficulty

from . import selectors
from .agreement import evaluation_raters
from .forms import RATIONALE_MAX, QueueForm, RatingForm
from .models import RatingAssignment
from .reports import judge_page
from .services import ALREADY_RATED, HIDDEN_GROUP, RATE_PERMISSION, QueueError, RatingError, expert_rating_save, rating_queue_fill

expert_only = permission_required(RATE_PERMISSION, raise_exception=True)  # under login_required: anonymous → login page


@require_safe
def judge_validity(request: HttpRequest) -> HttpResponse:
    """Reads the figures jobs stored (ratings/reports.py), never computes them: each section says when they were computed,
    or that they are being computed."""
    context = judge_page(request.GET.get("judge"))
    context |= {"min_tasks": MIN_TASKS_FOR_INTERVAL, "one_rater": evaluation_raters() == 1, "predictor": difficulty.installed()}
    return render(request, "ratings/judge.html", context)


def _assignment(request: HttpRequest, pk: int) -> RatingAssignment:
    """One of this expert's items; anyone else's, or one of a hidden task they may not see, is a 404 like one that does not exist."""
    return get_object_or_404(selectors.assignments_of(request.user).select_related("entry__task", "render", "rater"), pk=pk)


def _page(request: HttpRequest, assignment: RatingAssignment | None, form: RatingForm | None, status: int = 200) -> HttpResponse:
    done, total = selectors.progress(request.user)
    context = {"assignment": assignment, "form": form, "done": done, "total": total, "rationale_max": RATIONALE_MAX}
    if assignment is not None:
        context |= {"task": assignment.entry.task, "prompt": assignment.entry.text, "sections": form.sections()}
    return render(request, "ratings/rate.html", context, status=status)


@require_safe
@login_required
@expert_only
def rate(request: HttpRequest) -> HttpResponse:
    assignment = selectors.next_assignment(request.user)
    return _page(request, assignment, RatingForm(task=assignment.entry.task) if assignment else None)


@require_POST
@login_required
@expert_only
def rate_save(request: HttpRequest, pk: int) -> HttpResponse:
    assignment = _assignment(request, pk)
    if assignment.done_at is not None:
        messages.error(request, f"{ALREADY_RATED}; nothing was changed.")
        return redirect("rate")
    form = RatingForm(request.POST, task=assignment.entry.task)
    if not form.is_valid():
        return _page(request, assignment, form, status=400)
    try:
        expert_rating_save(assignment=assignment, rating=form.rating())
    except RatingError as exc:
        messages.error(request, f"{exc}; nothing was changed.")
        return redirect("rate")
    messages.success(request, "Rating saved.")
    return redirect("rate")


@require_safe
@login_required
@expert_only
def rate_image(request: HttpRequest, pk: int) -> HttpResponse:
    """The image of one of this expert's items, whoever made it (the media URL would need the submission visible)."""
    render_ = _assignment(request, pk).render
    if not render_.image or not render_.image.storage.exists(render_.image.name):
        raise Http404("No image")
    return media_response(render_.image.name, PRIVATE, storage=render_.image.storage)


@staff_member_required
@require_http_methods(["GET", "POST"])
def rate_queue(request: HttpRequest) -> HttpResponse:
    """Staff: the expert raters with their open and done items, and a form that gives them items (rating_queue_fill,
    as `manage.py rating_assign` does). ?raters=<id>&… preselects raters (the admin's Users action links here)."""
    form = QueueForm(request.POST or None, initial={"raters": request.GET.getlist("raters")})
    if request.method == "POST" and form.is_valid():
        try:
            filled = rating_queue_fill(**form.fill_kwargs())
        except QueueError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{filled.created} new assignment(s) queued.")
            if filled.withheld:
                messages.warning(
                    request,
                    f"{filled.withheld} item(s) of hidden (test-split) tasks withheld: {filled.allowed} of these raters may rate hidden items, "
                    f"{form.cleaned_data['per_item']} needed per item (make more of them hidden-item raters: group '{HIDDEN_GROUP}').",
                )
            return redirect("rate_queue")
    status = 400 if request.method == "POST" else 200
    return render(request, "ratings/queue.html", {"form": form, "loads": selectors.rater_loads()}, status=status)
