"""The render unit: every pending image of one prompt on one backend, then its image judgements."""

from __future__ import annotations

import hashlib
import io
import logging
import time

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from evaluation.models import PromptEntry, Render, UnitStatus
from evaluator.backends import BackendConfig, get_renderer
from evaluator.backends.middleware import rewriter_for

from . import runtime
from .units import plan_judgements, queue_judgements, submission_advance

log = logging.getLogger(__name__)


def render_entry(entry_id: int, backend: str) -> None:
    """Render every pending image of one prompt on one backend, reusing identical earlier renders."""
    entry = PromptEntry.objects.select_related("task", "submission").get(pk=entry_id)
    waiting = Render.objects.filter(entry=entry, backend=backend, status=UnitStatus.PENDING)
    waiting.update(started_at=timezone.now())
    pending = list(waiting)
    if pending:
        todo = [r for r in pending if not _reuse(r)]
        if todo:
            _render(entry, backend, todo)
        _queue_image_judgements(entry, pending)
    submission_advance(entry.submission_id)


def render_fail(entry_id: int, backend: str, reason: str) -> None:
    """A render job that raised: its pending images fail with our words, and the submission moves on."""
    Render.objects.filter(entry_id=entry_id, backend=backend, status=UnitStatus.PENDING).update(status=UnitStatus.FAILED, error=reason)
    submission_advance(PromptEntry.objects.values_list("submission_id", flat=True).get(pk=entry_id))


def _reuse(render: Render) -> bool:
    same = (
        Render.objects.filter(config_hash=render.config_hash, prompt_sha=render.prompt_sha, seed=render.seed, status=UnitStatus.OK)
        .exclude(pk=render.pk)
        .exclude(image="")  # a withdrawn entry's erased render (evaluation/erasure.py) has no file left to share
        .first()
    )
    if same is None:
        return False
    render.image, render.sha256, render.reused_from, render.status, render.note = (
        same.image.name,
        same.sha256,
        same,
        UnitStatus.OK,
        same.note,
    )
    render.rewritten = same.rewritten
    render.save()
    return True


def _render(entry: PromptEntry, backend: str, renders: list[Render]) -> None:
    config = runtime.backend_configs().get(backend)
    if config is None or {r.config_hash for r in renders} != {config.version_hash()}:
        # The backends file changed since the submission was planned: an image made now would not be the one its
        # recorded config names (its seed, scale and references belong to that config), so none is made.
        reason = f"backend {backend} is no longer configured as it was when this submission was planned"
        Render.objects.filter(pk__in=[r.pk for r in renders]).update(status=UnitStatus.FAILED, error=reason)
        for r in renders:
            r.status = UnitStatus.FAILED
        return
    started = time.perf_counter()
    try:
        images, note, rewritten = render_prompt(config, entry.text, [r.seed for r in renders])
    except Exception as exc:  # noqa: BLE001 - a failed render is recorded on its rows and counted, not raised
        reason = f"{type(exc).__name__}: {exc}"
        log.warning("render failed for entry %s on %s: %s", entry.pk, backend, reason)
        Render.objects.filter(pk__in=[r.pk for r in renders]).update(status=UnitStatus.FAILED, error=reason)
        for r in renders:
            r.status = UnitStatus.FAILED
        return
    seconds = (time.perf_counter() - started) / len(renders)
    for render, image in zip(renders, images):
        render.image.name, sha = store_png(image)
        render.sha256, render.status, render.seconds, render.note, render.rewritten = sha, UnitStatus.OK, seconds, note, rewritten
        render.save()


def render_prompt(config: BackendConfig, text: str, seeds: list[int]) -> tuple[list, str, str]:
    """Images of a prompt on a backend: (images, what the backend did to the prompt, the middleware's rewrite or '')."""
    renderer = get_renderer(config)
    rewriter = rewriter_for(config)
    rewritten = rewriter.rewrite(text) if rewriter else ""
    _, note = renderer.fit_prompt(rewritten or text)
    return renderer.render(rewritten or text, seeds), note, rewritten


def store_png(image) -> tuple[str, str]:
    """Store an image as PNG under its content hash: (storage name, sha256)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    sha = hashlib.sha256(buffer.getvalue()).hexdigest()
    return _store(f"renders/{sha[:2]}/{sha}.png", buffer.getvalue()), sha


def _store(name: str, data: bytes) -> str:
    """Files are named by their content's hash (no URL can be guessed from another): the same bytes are stored once."""
    return name if default_storage.exists(name) else default_storage.save(name, ContentFile(data))


def _queue_image_judgements(entry: PromptEntry, renders: list[Render]) -> None:
    submission = entry.submission
    with transaction.atomic():
        ok = [r for r in renders if r.status == UnitStatus.OK]
        queue_judgements(plan_judgements(entry, submission.judge_id, submission.judge_version, ok))
