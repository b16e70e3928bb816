"""Rendering IM targets from hidden seed prompts (manage.py render_targets).

Each target is the most representative of several candidate renders (ArtWhisperer's rule,
evaluator.metrics.targets); the image, its seed and the backend config hash are stored,
and the task's version goes up when the image changed. A run (targets and references together)
raises the pack's revision once, at its first change of what is judged (services.PackRevision):
a target image, or a c_k reference (it scales target similarity). A rerun that changes nothing
raises nothing.
"""

from __future__ import annotations

import io
import logging

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction

from evaluator.backends import SMOKE_LABEL, BackendConfig, derive_seed, get_renderer
from evaluator.categories import IMITATION
from evaluator.judge.encoders import clip_weights_identity, image_embeddings
from evaluator.metrics.targets import most_representative

from .models import TargetReference, Task, TaskPack
from .services import PackRevision, task_touch

log = logging.getLogger(__name__)


def target_seeds(task: Task, backend: BackendConfig, candidates: int) -> list[int]:
    # "target:" keeps target seeds apart from the seeds of submissions' renders of the same task.
    return [derive_seed(f"target:{task.task_id}", 0, k, backend.name) for k in range(candidates)]


def target_render(*, task: Task, backend: BackendConfig, candidates: int, revision: PackRevision | None = None) -> int:
    """Render candidates for one IM task, keep the most representative, store it (a change joins `revision`, by
    default a run of this one task). Returns the chosen seed."""
    seeds = target_seeds(task, backend, candidates)
    images = get_renderer(backend).render(task.seed_prompt, seeds)
    embeddings = image_embeddings(images, settings.ATELIER_CLIP_MODEL, settings.ATELIER_CLIP_PRETRAINED)
    best = most_representative(embeddings)
    buffer = io.BytesIO()
    images[best].save(buffer, format="PNG")
    smoke = f" — {SMOKE_LABEL}, a stand-in target" if backend.is_smoke else ""
    weights = clip_weights_identity(settings.ATELIER_CLIP_PRETRAINED)
    clip = f"CLIP {settings.ATELIER_CLIP_MODEL} " + ("(random weights)" if weights == "random" else f"({weights})")
    task.target_image.save(f"{task.pack.name}/{task.pack.version}/{task.task_id}.png", ContentFile(buffer.getvalue()), save=False)
    task.target_seed, task.target_config_hash = seeds[best], backend.version_hash()
    task.target_note = f"rendered from the seed prompt on {backend.name}, candidate {best + 1} of {candidates} chosen by {clip}{smoke}"[
        :300
    ]
    with transaction.atomic():  # the new target and the version it makes, together
        task.save(update_fields=["target_image", "target_seed", "target_config_hash", "target_note"])
        task_touch(task=task, revision=revision)
    return seeds[best]


def targets_render(
    *,
    pack: TaskPack,
    backend: BackendConfig,
    candidates: int,
    force: bool = False,
    task_ids: list[str] | None = None,
    revision: PackRevision | None = None,
) -> tuple[int, list[str]]:
    """Targets for every IM task of a pack (or of `task_ids`) that has a seed prompt and (unless force) no target yet,
    as one revision (`revision`: the caller's run, when it renders references too)."""
    revision = revision or PackRevision.begin(pack.pk)
    tasks = pack.tasks.filter(category=IMITATION).exclude(seed_prompt="").order_by("task_id")
    tasks = tasks if task_ids is None else tasks.filter(task_id__in=task_ids)
    if not force:
        tasks = tasks.filter(target_image="")
    done, failures = 0, []
    for task in tasks:
        try:
            target_render(task=task, backend=backend, candidates=candidates, revision=revision)
            done += 1
        except Exception as exc:  # one bad task must not stop the rest; each failure is reported
            log.warning("target for %s failed: %s", task.task_id, exc)
            failures.append(f"{task.task_id}: {type(exc).__name__}: {exc}")
    return done, failures


def references_render(
    *, pack: TaskPack, backends: list[BackendConfig], task_ids: list[str] | None = None, revision: PackRevision | None = None
) -> int:
    """One render of each IM seed prompt (of `task_ids`, default all) per backend config, for the c_k scale of target
    similarity. Existing references (same task and config hash) are kept. A new one changes what is judged (target
    similarity's scale): it joins `revision`. Returns how many were rendered."""
    revision = revision or PackRevision.begin(pack.pk)
    done = 0
    tasks = pack.tasks.filter(category=IMITATION).exclude(seed_prompt="").exclude(target_image="").order_by("task_id")
    for task in tasks if task_ids is None else tasks.filter(task_id__in=task_ids):
        for backend in backends:
            if TargetReference.objects.filter(task=task, config_hash=backend.version_hash()).exists():
                continue
            seed = derive_seed(f"reference:{task.task_id}", 0, 0, backend.name)
            buffer = io.BytesIO()
            get_renderer(backend).render(task.seed_prompt, [seed])[0].save(buffer, format="PNG")
            reference = TargetReference(task=task, backend=backend.name, config_hash=backend.version_hash(), seed=seed)
            with transaction.atomic():
                reference.image.save(f"{task.pack.name}/{task.task_id}-{backend.name}.png", ContentFile(buffer.getvalue()))
                revision.changed()
            done += 1
    return done
