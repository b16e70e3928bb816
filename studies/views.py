"""Participant pages (anonymous: the invitation token is the only key) and the staff's study pages."""

from __future__ import annotations

import functools

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from evaluation.exports import csv_lines, jsonl_lines
from evaluation.media import PRIVATE, media_response
from evaluation.models import UnitStatus
from evaluation.workqueue import QueueUnavailable
from tasks.selectors import prompter_view

from . import selectors, services
from .models import Attempt, Participant, Study


def with_participant(json: bool = False, withdrawing: bool = False):
    """Resolve the invitation token to its participant; a link that cannot be used gets its reason (410, page or JSON),
    and the way to withdraw when its participant has data (withdrawing: the withdrawal page, which stays reachable)."""

    def wrap(view):
        @functools.wraps(view)
        def inner(request: HttpRequest, token: str, *args, **kwargs):
            try:
                participant = services.invitation_open(token=token, withdrawing=withdrawing)
            except services.StudyError as exc:
                if json:
                    return JsonResponse({"error": str(exc)}, status=410)
                return render(
                    request, "studies/refused.html", {"why": str(exc), "withdraw_token": token if exc.can_withdraw else ""}, status=410
                )
            return view(request, participant, token, *args, **kwargs)

        return inner

    return wrap


@require_safe
@with_participant()
def session(request: HttpRequest, participant: Participant, token: str) -> HttpResponse:
    """Whatever comes next for this participant: consent, questionnaire, a module introduction, a task, or thanks."""
    context = {"p": participant, "study": participant.study, "token": token}
    if participant.state in ("consent", "questionnaire", "completed"):
        return render(request, f"studies/{participant.state}.html", context)
    current = services.current_assignment(participant)
    context.update(assignment=current, module=participant.study.modules[current.task.category], progress=selectors.progress_of(participant))
    if current.intro and not current.intro_seen:
        return render(request, "studies/intro.html", context)
    services.task_shown(assignment=current)
    shown = prompter_view(current.task, with_image=False)  # the target image is shown by its URL
    attempts = list(current.attempts.all())
    context.update(
        shown=shown,
        bullets=selectors.constraint_bullets(shown),
        attempts=attempts,
        tries_left=participant.study.retry_attempts - len(attempts),
        attempt_pending=any(a.status == UnitStatus.PENDING for a in attempts),
        max_chars=participant.study.max_prompt_chars,
        attempts_smoke=bool(participant.study.retry_attempts) and selectors.attempts_are_smoke(participant.study),
    )
    return render(request, "studies/task.html", context)


def _then_session(request: HttpRequest, token: str, problem: str | None) -> HttpResponse:
    """After a participant's action: its message, if any, then back to whatever comes next."""
    if problem:
        messages.error(request, problem)
    return redirect("study-session", token=token)


@require_POST
@with_participant()
def consent(request: HttpRequest, participant: Participant, token: str) -> HttpResponse:
    agreed = request.POST.get("agree") == "yes"
    return _then_session(
        request, token, services.consent_give(participant=participant) if agreed else "Tick the box to agree, or close this page to leave."
    )


@require_POST
@with_participant()
def questionnaire(request: HttpRequest, participant: Participant, token: str) -> HttpResponse:
    answers = {
        q["key"]: request.POST.getlist(q["key"]) if q["kind"] == "multi" else request.POST.get(q["key"], "").strip()
        for q in participant.study.questionnaire["questions"]
    }
    problems = (
        services.questionnaire_submit(participant=participant, answers=answers)
        if participant.consented
        else {"": "Please agree to the consent first."}
    )
    if problems:
        return render(
            request,
            "studies/questionnaire.html",
            {"p": participant, "study": participant.study, "token": token, "problems": problems, "answers": answers},
            status=400,
        )
    return redirect("study-session", token=token)


@require_POST
@with_participant()
def intro(request: HttpRequest, participant: Participant, token: str) -> HttpResponse:
    current = services.current_assignment(participant)
    return _then_session(request, token, services.intro_seen(assignment=current) if current else None)


def _position(request: HttpRequest) -> int:
    try:
        return int(request.POST.get("position", "-1"))
    except ValueError:
        return -1


RETRY_AFTER = 30  # seconds: a 503 when the work queue is down, as an upload answers
QUEUE_DOWN = "We could not take this just now, so nothing was changed (your draft is kept). Please try again in a minute."


@require_POST
@with_participant()
def submit(request: HttpRequest, participant: Participant, token: str) -> HttpResponse:
    try:
        problem = services.assignment_submit(participant=participant, position=_position(request), text=request.POST.get("text", ""))
    except QueueUnavailable:
        page = render(
            request,
            "studies/queue_down.html",
            {"p": participant, "study": participant.study, "token": token, "why": QUEUE_DOWN},
            status=503,
        )
        page["Retry-After"] = str(RETRY_AFTER)
        return page
    return _then_session(request, token, problem)


@require_POST
@with_participant(json=True)
def draft(request: HttpRequest, participant: Participant, token: str) -> JsonResponse:
    problem = services.draft_save(participant=participant, position=_position(request), text=request.POST.get("text", ""))
    return JsonResponse({"error": problem} if problem else {"saved": True}, status=400 if problem else 200)


def _attempt_json(token: str, attempt: Attempt) -> dict:
    image = reverse("study-attempt-image", args=[token, attempt.number]) if attempt.image else ""
    return {
        "number": attempt.number,
        "status": attempt.status,
        "score": attempt.score,
        "image": image,
        "error": attempt.error,
        "text": attempt.text,  # the page pairs each image with the prompt that made it
    }


@require_POST
@with_participant(json=True)
def attempt_new(request: HttpRequest, participant: Participant, token: str) -> JsonResponse:
    try:
        attempt, problem = services.attempt_create(participant=participant, position=_position(request), text=request.POST.get("text", ""))
    except QueueUnavailable:
        return JsonResponse({"error": QUEUE_DOWN}, status=503, headers={"Retry-After": str(RETRY_AFTER)})
    if problem:
        return JsonResponse({"error": problem}, status=400)
    attempt.refresh_from_db()  # in-process queues have run it already
    return JsonResponse(_attempt_json(token, attempt))


def _attempt(participant: Participant, number: int) -> Attempt:
    return get_object_or_404(Attempt, assignment=services.current_assignment(participant), number=number)


@require_safe
@with_participant(json=True)
def attempt_status(request: HttpRequest, participant: Participant, token: str, number: int) -> JsonResponse:
    return JsonResponse(_attempt_json(token, _attempt(participant, number)))


@require_safe
@with_participant(json=True)
def attempt_image(request: HttpRequest, participant: Participant, token: str, number: int) -> HttpResponse:
    attempt = _attempt(participant, number)
    if not attempt.image:
        raise Http404("Not rendered yet")
    return media_response(attempt.image.name, PRIVATE, storage=attempt.image.storage)


@require_http_methods(["GET", "POST"])
@with_participant(withdrawing=True)
def withdraw(request: HttpRequest, participant: Participant, token: str) -> HttpResponse:
    if request.method == "POST" and request.POST.get("confirm") == "yes":
        services.participant_withdraw(participant=participant)
        return render(
            request,
            "studies/refused.html",
            {"why": "You have withdrawn. Your prompts and answers were deleted. Thank you for your time.", "withdrawn": True},
        )
    return render(request, "studies/withdraw.html", {"p": participant, "study": participant.study, "token": token})


@staff_member_required
@require_http_methods(["GET", "POST"])
def study_staff(request: HttpRequest, slug: str) -> HttpResponse:
    """Progress by state and tier, the invitations, and new links on request: shown once, in the answer to the request
    that made them (on the page, or as a CSV file), since only their tokens' hashes are stored."""
    study = get_object_or_404(Study, slug=slug)
    made = []
    if request.method == "POST":
        try:
            made = services.invitations_create(
                study=study, count=int(request.POST.get("count") or 0), valid_days=int(request.POST.get("days") or 0) or None
            )
        except (ValueError, services.StudyError) as exc:
            messages.error(request, f"count / days: {exc}")
            return redirect("study-staff", slug=slug)
    new = [(request.build_absolute_uri(reverse("study-session", args=[i.token])), i) for i in made]
    if new and request.POST.get("format") == "csv":
        rows = ({"link": url, "expires": i.expires.isoformat() if i.expires else ""} for url, i in new)
        response = HttpResponse("".join(csv_lines(rows, ("link", "expires"))), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="study-{study.slug}-links.csv"'
    else:
        invitations = study.invitations.select_related("participant").order_by("-created")[:200]
        context = {"study": study, "progress": selectors.study_progress(study), "new": new, "invitations": invitations}
        response = render(request, "studies/staff.html", context)
    response["Cache-Control"] = "no-store"  # new links appear in this answer only: no cache keeps them
    return response


@staff_member_required
@require_safe
def study_export(request: HttpRequest, slug: str, kind: str, fmt: str) -> StreamingHttpResponse:
    study = get_object_or_404(Study, slug=slug)
    if kind not in selectors.EXPORT_FIELDS or fmt not in ("csv", "jsonl"):
        raise Http404("Exports: prompts or participants, as .csv or .jsonl")
    rows = selectors.export_rows(study, kind)
    lines = csv_lines(rows, selectors.EXPORT_FIELDS[kind]) if fmt == "csv" else jsonl_lines(rows)
    response = StreamingHttpResponse(
        lines, content_type="text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="study-{study.slug}-{kind}.{fmt}"'
    return response


@staff_member_required
@require_safe
def studies_staff(request: HttpRequest) -> HttpResponse:
    studies = [(s, selectors.study_progress(s)) for s in Study.objects.select_related("pack")]
    return render(request, "studies/staff_list.html", {"studies": studies})
