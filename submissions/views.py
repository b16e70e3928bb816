from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required

from evaluation.units import submission_rescore
from evaluation.workqueue import QueueUnavailable

from . import services
from .forms import SubmitForm, TeamForm, TokenForm
from .models import ApiToken, Team
from .parsing import PromptFileError


def signup(request: HttpRequest) -> HttpResponse:
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        login(request, form.save(), backend="django.contrib.auth.backends.ModelBackend")
        return redirect("teams")
    return render(request, "registration/signup.html", {"form": form})


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
    context = {"team": team, "submissions": team.submissions.select_related("pack"), "tokens": team.tokens.filter(revoked=False), "token_form": TokenForm()}
    return render(request, "submissions/team.html", context)


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
                team=team, pack=form.cleaned_data["pack"], prompter=form.cleaned_data["prompter"],
                condition=form.cleaned_data["condition"], filename=upload.name, data=_read_limited(upload),
            )  # fmt: skip
        except PromptFileError as exc:
            errors, status = exc.errors, 400
        except QueueUnavailable:
            errors, status = ["The work queue is unavailable right now, so nothing was stored. Please try again in a minute."], 503
        else:
            return redirect("submission", submission_id=submission.pk)
    elif request.method == "POST":
        status = 400
    return render(request, "submissions/submit.html", {"team": team, "form": form, "errors": errors}, status=status)


def _read_limited(upload) -> bytes:
    """Read at most one byte past the limit: enough for the parser to name the limit, without reading a huge file."""
    return upload.read(services.upload_limits().max_bytes + 1)


@staff_member_required
@require_POST
def submission_retry(request: HttpRequest, submission_id: int) -> HttpResponse:
    """Staff: resume an incomplete (or finished) submission: failed judgements of the current judge are retried."""
    try:
        queued = submission_rescore(submission_id)
    except QueueUnavailable:
        messages.error(request, "The work queue is unavailable right now: the retry is recorded and starts when the queue is back.")
    else:
        messages.info(request, f"{queued} judgement(s) queued again.")
    return redirect("submission", submission_id=submission_id)
