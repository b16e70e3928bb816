"""JSON API for teams: submit a prompt file and follow its progress, with a per-team bearer token."""

from __future__ import annotations

from functools import wraps

from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from evaluation.selectors import submission_cost, submission_figures, submission_progress
from tasks.models import TaskPack

from . import services
from .models import Submission
from .parsing import PromptFileError


def token_required(view):
    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        team = services.token_team(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        if team is None:
            return JsonResponse({"error": "missing or invalid token: send 'Authorization: Bearer <token>'"}, status=401)
        request.team = team
        return view(request, *args, **kwargs)

    return wrapper


def _pack(request: HttpRequest) -> TaskPack | None:
    """?pack=name or name@version; default: the most recently loaded pack."""
    name, _, version = request.POST.get("pack", "").partition("@")
    packs = TaskPack.objects.order_by("-loaded_at")
    if name:
        packs = packs.filter(name=name, **({"version": version} if version else {}))
    return packs.first()


@csrf_exempt
@require_POST
@token_required
def submit(request: HttpRequest) -> JsonResponse:
    upload, pack = request.FILES.get("file"), _pack(request)
    if upload is None or pack is None or not request.POST.get("prompter", "").strip():
        return JsonResponse({"error": "send multipart fields 'file' and 'prompter' (and optionally 'pack', 'condition')", "pack_found": pack is not None}, status=400)
    try:
        submission = services.submission_create(
            team=request.team, pack=pack, prompter=request.POST["prompter"].strip(), condition=request.POST.get("condition", ""),
            filename=upload.name, data=upload.read(services.upload_limits().max_bytes + 1),
        )  # fmt: skip
    except PromptFileError as exc:
        return JsonResponse({"error": "the prompt file was rejected; nothing was stored", "file": exc.filename, "errors": exc.errors}, status=400)
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
