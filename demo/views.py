"""The demo site's views: its scripted prompter and judge as OpenAI-compatible chat completions (called by the site's
own workers once `manage.py demo` has ended) and the demo study's public "Take part yourself" link. They exist only
where the demo app is installed and routed (settings.ATELIER_DEMO): a deployment has no such route at all."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from limits import RateLimitItemPerHour

from studies.models import Study
from studies.services import StudyError, invitation_open
from teams import ratelimit

from . import judge, prompter
from .study import NAME, visitor_join

log = logging.getLogger(__name__)
SESSION_KEY = "demo_study_token"  # this browser's link: a reload returns to its participant
# New participants one client address may make an hour: enough for a classroom behind one NAT, not for a flood.
VISITORS_PER_HOUR = RateLimitItemPerHour(30, namespace="demo-study-visitor")


def _chat(answer: Callable[[dict[str, Any], int], dict[str, Any]]):
    """A view answering POST chat completions with `answer`, as the command's local server does. Called by the demo
    site itself, not by a browser: no CSRF token."""

    @csrf_exempt
    @require_POST
    def view(request: HttpRequest) -> JsonResponse:
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            return JsonResponse({"error": {"message": "the body is not JSON"}}, status=400)
        reply = answer(body, 1)
        return JsonResponse(reply, status=400 if "error" in reply else 200)

    return view


prompter_chat = _chat(prompter.completion)  # POST /demo/prompter/v1/chat/completions
judge_chat = _chat(judge.completion)  # POST /demo/judge/v1/chat/completions


def _still_usable(token: str) -> bool:
    try:
        invitation_open(token=token)
    except StudyError:
        return False  # withdrawn, closed or gone: this browser may start again
    return True


@require_GET
def study_enter(request: HttpRequest) -> HttpResponse:
    """The demo's "Take part yourself" link: this browser's participant, made on its first visit."""
    study = Study.objects.filter(name=NAME).first()
    if study is None:
        raise Http404("the demo study is made by `manage.py demo`")
    token = request.session.get(SESSION_KEY, "")
    if not (token and _still_usable(token)):
        if not ratelimit.take(VISITORS_PER_HOUR, ratelimit.client_address(request)):
            log.warning("demo study: the hourly allowance of new participants for one address is spent")
            why = "Too many people joined the demo study from your address within the hour. Try again in an hour."
            return render(request, "studies/refused.html", {"why": why}, status=429)
        try:
            token = visitor_join(study=study)
        except StudyError as exc:
            return render(request, "studies/refused.html", {"why": str(exc)}, status=410)
        request.session[SESSION_KEY] = token
    return redirect("study-session", token=token)
