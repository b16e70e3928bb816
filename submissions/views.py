from __future__ import annotations

import json
from urllib.parse import urlparse

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from evaluation.exports import csv_lines, jsonl_lines
from evaluation.models import Submission
from evaluation.selectors import pack_coverage
from evaluation.trajectories import CALL_LOG_FIELDS, call_log, call_log_rows
from evaluation.units import submission_cancel as cancel_run
from evaluation.units import submission_rescore
from evaluation.workqueue import QueueUnavailable, enqueued_or_unchanged
from tasks import difficulty
from tasks.selectors import RevisionGone
from teams.forms import PrompterForm
from teams.models import ApiToken, Endpoint, Prompter, Team
from teams.services import CardRefused, card_save

from . import services
from .forms import EndpointForm, EndpointTestForm, RunForm, SubmitForm, TeamForm, TokenForm, add_refusal
from .parsing import PromptFileError

RETRY_AFTER = 30  # seconds, as the API's 503 says


def retry_later(response: HttpResponse) -> HttpResponse:
    """A 503 that says when to come back: the work queue was down and nothing was changed."""
    response.status_code = 503
    response["Retry-After"] = str(RETRY_AFTER)
    return response


def _queue_down(request: HttpRequest, submission_id: int) -> HttpResponse:
    return retry_later(render(request, "submissions/queue_down.html", {"submission_id": submission_id}))


def _my_team(request: HttpRequest, slug: str) -> Team:
    team = get_object_or_404(Team, slug=slug)
    if not team.members.filter(pk=request.user.pk).exists():
        raise Http404("No such team")
    return team


@login_required
def teams(request: HttpRequest) -> HttpResponse:
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        team = services.team_create(user=request.user, name=form.cleaned_data["name"])
        return redirect("team", slug=team.slug)
    return render(request, "submissions/teams.html", {"teams": request.user.teams.all(), "form": form})


@login_required
def team(request: HttpRequest, slug: str) -> HttpResponse:
    team = _my_team(request, slug)
    context = {
        "team": team,
        "submissions": team.submissions.select_related("pack"),
        "tokens": team.tokens.filter(revoked=False),
        "token_form": TokenForm(),
        "endpoints": [(e, urlparse(e.base_url).netloc) for e in team.endpoints.order_by("archived", "name")],
        "cards": team.prompters.annotate(entries=Count("submissions")),
    }
    return render(request, "submissions/team.html", context)


@login_required
def prompter_edit(request: HttpRequest, slug: str, prompter_id: int | None = None) -> HttpResponse:
    """Describe a new prompter (no id) or change a card: every saved change is a version (who, when, what)."""
    team = _my_team(request, slug)
    card = get_object_or_404(Prompter, team=team, pk=prompter_id) if prompter_id else None
    form = PrompterForm(request.POST or None, instance=card)
    if request.method == "POST" and form.is_valid():
        try:
            card, version = card_save(team=team, user=request.user, values=form.values(), card=card)
        except CardRefused as exc:
            add_refusal(form, str(exc))
        else:
            messages.success(request, f"Card {card.name} saved (version {version.number})." if version else "Nothing changed.")
            return redirect("prompter-edit", slug=team.slug, prompter_id=card.pk)
    versions = card.versions.select_related("user", "token").order_by("-number") if card else []
    context = {"team": team, "card": card, "form": form, "versions": versions}
    return render(request, "submissions/prompter_edit.html", context, status=400 if request.method == "POST" else 200)


@login_required
@require_POST
def token_new(request: HttpRequest, slug: str) -> HttpResponse:
    team = _my_team(request, slug)
    form = TokenForm(request.POST)
    if form.is_valid():
        _, token = services.token_create(team=team, name=form.cleaned_data["name"])
        messages.success(request, f"New API token (shown once, copy it now): {token}")
    return redirect("team", slug=team.slug)


@login_required
@require_POST
def token_revoke(request: HttpRequest, slug: str, token_id: int) -> HttpResponse:
    team = _my_team(request, slug)
    ApiToken.objects.filter(team=team, pk=token_id).update(revoked=True)
    return redirect("team", slug=team.slug)


@login_required
def submit(request: HttpRequest, slug: str) -> HttpResponse:
    team = _my_team(request, slug)
    form, errors, status = SubmitForm(request.POST or None, request.FILES or None), [], 200
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            submission = services.submission_create(
                team=team,
                pack=form.cleaned_data["pack"],
                prompter=form.cleaned_data["prompter"],
                condition=form.cleaned_data["condition"],
                filename=upload.name,
                data=_read_limited(upload),
                judge_by_batch=form.cleaned_data.get("judge_by_batch"),  # offered only with ATELIER_JUDGE_BATCH=ask
            )
        except PromptFileError as exc:
            errors, status = exc.errors, 400
        except services.CapReached as exc:
            errors, status = [str(exc)], 429
        except QueueUnavailable:
            errors, status = ["The work queue is unavailable right now, so nothing was stored. Please try again in a minute."], 503
        else:
            if covered := pack_coverage(submission):
                messages.warning(request, covered["warning"])
            return redirect("submission", submission_id=submission.pk)
    elif request.method == "POST":
        status = 400
    page = render(request, "submissions/submit.html", {"team": team, "form": form, "errors": errors}, status=status)
    return retry_later(page) if status == 503 else page


EXAMPLE_PROMPTS = settings.BASE_DIR / "examples" / "demo_prompts.jsonl"


@require_safe
def example_prompts(request: HttpRequest) -> FileResponse:
    """The shipped example upload (prompts for the sample pack), served by the site itself: no internet needed."""
    return FileResponse(
        EXAMPLE_PROMPTS.open("rb"), as_attachment=True, filename="example_prompts.jsonl", content_type="application/x-ndjson"
    )


def _read_limited(upload) -> bytes:
    """Read at most one byte past the limit: enough for the parser to name the limit, without reading a huge file."""
    return upload.read(services.upload_limits().max_bytes + 1)


@staff_member_required
@require_POST
def submission_retry(request: HttpRequest, submission_id: int) -> HttpResponse:
    """Staff: resume an incomplete (or finished) submission: failed judgements of the current judge are retried."""
    try:
        with enqueued_or_unchanged():
            queued = submission_rescore(submission_id)
    except QueueUnavailable:
        return _queue_down(request, submission_id)
    except RevisionGone as exc:
        messages.error(request, f"Not rescored, nothing changed: {exc}.")
        return redirect("submission", submission_id=submission_id)
    messages.info(request, f"{queued} judgement(s) queued again.")
    return redirect("submission", submission_id=submission_id)


# --- endpoint prompters ------------------------------------------------------------------------------


def _my_endpoint(request: HttpRequest, slug: str, endpoint_id: int) -> tuple[Team, Endpoint]:
    team = _my_team(request, slug)
    return team, get_object_or_404(Endpoint, team=team, pk=endpoint_id)


@login_required
def endpoint_new(request: HttpRequest, slug: str) -> HttpResponse:
    team = _my_team(request, slug)
    form = EndpointForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            endpoint = services.endpoint_create(team=team, **form.params())
        except services.EndpointRefused as exc:
            add_refusal(form, str(exc))
        else:
            messages.success(request, f"Endpoint {endpoint.name} registered. Try a test call before a run.")
            return redirect("endpoint", slug=team.slug, endpoint_id=endpoint.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "submissions/endpoint_new.html", {"team": team, "form": form, "allowed": _address_exceptions()}, status=status)


def _address_exceptions() -> dict:
    """What the address guard lets through here besides public addresses, for the register page to say so truthfully:
    the demo site's own host:port by name (allow-listed where the demo runs, settings.ATELIER_DEMO), a deployer's entries only as
    a count (they may name internal hosts, no business of every team)."""
    allowed = settings.ATELIER_PROMPTER_ALLOWED_HOSTS
    demo = settings.ATELIER_DEMO_PROMPTER if settings.ATELIER_DEMO and settings.ATELIER_DEMO_PROMPTER in allowed else ""
    demo_url = f"http://{demo}{reverse('demo-prompter').removesuffix('/chat/completions')}" if demo else ""
    return {"demo": demo, "demo_url": demo_url, "others": len([h for h in allowed if h != demo])}


def _endpoint_page(request: HttpRequest, team: Team, endpoint: Endpoint, status: int = 200, **context) -> HttpResponse:
    runs = endpoint.submissions.select_related("pack")[:20]
    context = {"team": team, "endpoint": endpoint, "test_form": EndpointTestForm(), "run_form": RunForm(), "runs": runs, **context}
    return render(request, "submissions/endpoint.html", context, status=status)


@login_required
@require_safe
def endpoint_detail(request: HttpRequest, slug: str, endpoint_id: int) -> HttpResponse:
    team, endpoint = _my_endpoint(request, slug, endpoint_id)
    return _endpoint_page(request, team, endpoint)


@login_required
@require_POST
def endpoint_archive(request: HttpRequest, slug: str, endpoint_id: int) -> HttpResponse:
    team, endpoint = _my_endpoint(request, slug, endpoint_id)
    Endpoint.objects.filter(pk=endpoint.pk).update(archived=True)
    messages.info(request, f"Endpoint {endpoint.name} archived: it can no longer be run; its past runs stay.")
    return redirect("team", slug=team.slug)


@login_required
@require_POST
def endpoint_test(request: HttpRequest, slug: str, endpoint_id: int) -> HttpResponse:
    """Call the endpoint once, as round 1 of a run would, and show what was sent and what came back (nothing stored)."""
    team, endpoint = _my_endpoint(request, slug, endpoint_id)
    form = EndpointTestForm(request.POST)
    if not form.is_valid():
        return _endpoint_page(request, team, endpoint, 400, test_form=form)
    try:
        test = services.endpoint_test_call(endpoint=endpoint, pack=form.cleaned_data["pack"], condition=form.cleaned_data["condition"])
    except services.EndpointRefused as exc:
        add_refusal(form, str(exc))
        return _endpoint_page(request, team, endpoint, 400, test_form=form)
    return _endpoint_page(request, team, endpoint, test_form=form, test=shown_test_call(test))


def shown_test_call(test: services.TestCall) -> dict:
    """A test call as the page and the API show it: the request as JSON, the outcome, latency in ms."""
    o = test.outcome
    return {
        "task_id": test.task_id,
        "request": test.request,
        "request_json": json.dumps(test.request, indent=2, ensure_ascii=False),
        "status": o.status,
        "reply": o.reply,
        "text": o.text,
        "error": o.error,
        "http_status": o.http_status,
        "requests": o.requests,
        "latency_ms": round(o.latency * 1000),
        "tokens": {"prompt": o.prompt_tokens, "completion": o.completion_tokens},
    }


@login_required
@require_POST
def endpoint_run(request: HttpRequest, slug: str, endpoint_id: int) -> HttpResponse:
    team, endpoint = _my_endpoint(request, slug, endpoint_id)
    form, errors, status = RunForm(request.POST), [], 400
    if form.is_valid():
        try:
            submission = services.endpoint_run_create(team=team, endpoint=endpoint, **form.run_kwargs())
        except (services.EndpointRefused, services.CapReached) as exc:
            add_refusal(form, str(exc))
        except QueueUnavailable:
            errors, status = ["The work queue is unavailable right now, so nothing was stored. Please try again in a minute."], 503
        else:
            return redirect("submission", submission_id=submission.pk)
    page = _endpoint_page(request, team, endpoint, status, run_form=form, run_errors=errors)
    return retry_later(page) if status == 503 else page


def _team_submission(request: HttpRequest, submission_id: int, staff: bool = True) -> Submission:
    """A submission of one of the user's teams (or any, for staff when `staff`); anyone else gets a 404."""
    submission = get_object_or_404(Submission.objects.select_related("team", "pack"), pk=submission_id)
    user = request.user
    allowed = user.is_authenticated and ((staff and user.is_staff) or submission.team.members.filter(pk=user.pk).exists())
    if not allowed:
        raise Http404("No such submission")
    return submission


@require_POST
def submission_cancel(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = _team_submission(request, submission_id, staff=False)
    if cancel_run(submission.pk, f"cancelled by {request.user.get_username()}"):
        messages.info(request, "Run cancelled: calls not made yet and pending units were stopped.")
    else:
        messages.error(request, f"Nothing to cancel: the run is {submission.status}.")
    return redirect("submission", submission_id=submission.pk)


@require_POST
def submission_board(request: HttpRequest, submission_id: int) -> HttpResponse:
    """The team shows its entry on the board (within the selection limit) or withdraws it."""
    submission = _team_submission(request, submission_id, staff=False)
    try:
        if request.POST.get("action") == "withdraw":
            services.entry_withdraw(submission=submission)
            messages.info(
                request,
                "Withdrawn from the board: it no longer ranks, its prompts and image links are removed from the board's releases"
                " and its images deleted; its scores and history stay here.",
            )
        else:
            services.entry_select(submission=submission)
            messages.info(request, "Shown on the board.")
    except services.CapReached as exc:
        messages.error(request, str(exc))
    except QueueUnavailable:
        return _queue_down(request, submission.pk)
    return redirect("submission", submission_id=submission.pk)


@require_safe
def call_log_page(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = _team_submission(request, submission_id)
    page = Paginator(call_log(submission), 50).get_page(request.GET.get("page"))
    predicted = difficulty.scores(call.text for call in page)
    rows = [(call, json.dumps(call.request, indent=2, ensure_ascii=False), predicted.get(call.text)) for call in page]
    context = {"submission": submission, "page": page, "rows": rows, "predictor": difficulty.installed()}
    return render(request, "submissions/call_log.html", context)


@require_safe
def call_log_download(request: HttpRequest, submission_id: int, fmt: str) -> StreamingHttpResponse:
    if fmt not in ("csv", "jsonl"):
        raise Http404("Call logs come as .csv or .jsonl")
    submission = _team_submission(request, submission_id)
    rows = call_log_rows(submission)
    lines = csv_lines(rows, CALL_LOG_FIELDS) if fmt == "csv" else jsonl_lines(rows)
    response = StreamingHttpResponse(lines, content_type=f"{'text/csv' if fmt == 'csv' else 'application/x-ndjson'}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="submission-{submission.pk}-calls.{fmt}"'
    return response
