"""JSON API for teams: submit a prompt file and follow its progress, with a per-team bearer token."""

from __future__ import annotations

from functools import wraps

from django import forms
from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from evaluation.selectors import submission_cost, submission_figures, submission_progress
from evaluation.workqueue import QueueUnavailable
from tasks.models import TaskPack

from . import ratelimit, services
from .forms import EchoSafeForm
from .models import Submission
from .parsing import PromptFileError

RETRY_SECONDS = 30


class ApiSubmitForm(EchoSafeForm):
    """The same field rules as the web form (lengths, no NUL characters), for multipart API uploads."""

    file = forms.FileField()
    prompter = forms.CharField(max_length=200)
    condition = forms.CharField(max_length=40, required=False)
    pack = forms.CharField(max_length=141, required=False, help_text="name or name@version; default: the newest pack")


def token_required(view):
    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        if ratelimit.locked_out(request):
            window = settings.ATELIER_TOKEN_FAILURE_WINDOW
            return JsonResponse({"error": f"too many invalid tokens from this address; try again in up to {window} s"}, status=429, headers={"Retry-After": str(window)})
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        team = services.token_team(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        if team is None:
            ratelimit.count_failure(request)
            return JsonResponse({"error": "missing or invalid token: send 'Authorization: Bearer <token>'"}, status=401)
        request.team = team
        return view(request, *args, **kwargs)

    return wrapper


def _pack(name_at_version: str) -> TaskPack | None:
    name, _, version = name_at_version.partition("@")
    packs = TaskPack.objects.order_by("-loaded_at")
    return (packs.filter(name=name, **({"version": version} if version else {})) if name else packs).first()


@csrf_exempt
@require_POST
@token_required
def submit(request: HttpRequest) -> JsonResponse:
    form = ApiSubmitForm(request.POST, request.FILES)
    if not form.is_valid():
        return JsonResponse({"error": "send multipart fields 'file' and 'prompter' (and optionally 'pack', 'condition')", "fields": form.errors}, status=400)
    pack = _pack(form.cleaned_data["pack"])
    if pack is None:
        return JsonResponse({"error": f"no pack {form.cleaned_data['pack']!r}", "fields": {"pack": ["no such pack"]}}, status=400)
    upload = form.cleaned_data["file"]
    try:
        submission = services.submission_create(
            team=request.team, pack=pack, prompter=form.cleaned_data["prompter"], condition=form.cleaned_data["condition"],
            filename=upload.name, data=upload.read(services.upload_limits().max_bytes + 1), idempotency_key=request.headers.get("Idempotency-Key", "")[:200],
        )  # fmt: skip
    except PromptFileError as exc:
        return JsonResponse({"error": "the prompt file was rejected; nothing was stored", "file": exc.filename, "errors": exc.errors, "problems": exc.total}, status=400)
    except services.IdempotencyConflict as exc:
        return JsonResponse({"error": str(exc)}, status=422)
    except QueueUnavailable:
        return JsonResponse({"error": "the work queue is unavailable right now; nothing was stored. Retry later (send an Idempotency-Key to retry safely)."}, status=503, headers={"Retry-After": str(RETRY_SECONDS)})
    return JsonResponse(_status(request, submission), status=201)


@require_GET
@token_required
def status(request: HttpRequest, submission_id: int) -> JsonResponse:
    submission = get_object_or_404(Submission, pk=submission_id, team=request.team)
    return JsonResponse(_status(request, submission))


def _status(request: HttpRequest, submission: Submission) -> dict:
    figures = submission_figures(submission)  # scope -> [Figure]
    return {
        "id": submission.pk, "status": submission.status, "error": submission.error, "pack": str(submission.pack),
        "status_url": request.build_absolute_uri(reverse("api-status", args=[submission.pk])),
        "page_url": request.build_absolute_uri(reverse("submission", args=[submission.pk])),
        "progress": submission_progress(submission), "judge": submission.judge_label, "judge_version": submission.judge_version,
        "cost": submission_cost(submission),
        "figures": {f"{f.scope}:{f.key}": {"value": f.value, "scale": f.scale} for group in figures.values() for f in group},
    }  # fmt: skip
