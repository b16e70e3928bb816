"""Media files (renders, targets, references, exemplar images) served with the same rules as the pages.

A render is visible when one submission that uses it is visible to the viewer (published, or
the viewer is on its team, or staff); targets are public (the task page shows them on both
splits); c_k reference renders and exemplar images are staff-only. A file nobody may see is
a 404, exactly like a file that does not exist. Render files are named by the sha256 of their
content, so a URL cannot be guessed from another; published files are cached as immutable.
"""

from __future__ import annotations

from django.core.files.storage import default_storage
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from evaluation.media import PRIVATE, PUBLIC, media_response
from evaluation.models import Exemplar, PromptCall, Render
from tasks.models import TargetReference, Task

from .selectors import visible_to


def _render_access(request: HttpRequest, name: str) -> str | None:
    """A render, or a feedback image of an endpoint run's round (same folder: files are named by content)."""
    owners = [r.entry.submission for r in Render.objects.filter(image=name).select_related("entry__submission__team")]
    owners += [c.submission for c in PromptCall.objects.filter(feedback_image=name).select_related("submission__team")]
    visible = [s for s in owners if visible_to(request.user, s)]
    if not visible:
        return None
    return PUBLIC if any(s.published for s in visible) else PRIVATE


def access(request: HttpRequest, name: str) -> str | None:
    """The Cache-Control a viewer gets for this file, or None when the viewer may not see it."""
    folder = name.split("/", 1)[0]
    if folder == "renders":
        return _render_access(request, name)
    if folder == "targets":
        return PUBLIC if Task.objects.filter(target_image=name).exists() else None
    staff_only = {"references": TargetReference, "exemplars": Exemplar}.get(folder)
    if staff_only is not None and request.user.is_staff and staff_only.objects.filter(image=name).exists():
        return PRIVATE
    return None


@require_safe
def media_file(request: HttpRequest, name: str) -> HttpResponse:
    cache_control = access(request, name) if ".." not in name.split("/") else None
    if cache_control is None or not default_storage.exists(name):
        raise Http404("No such file")
    return media_response(name, cache_control)
