"""The units of evaluation work: plan, render, judge, advance, finish.

Each function takes ids, loads rows, does one unit and writes its result keyed by the
unit's natural key, so running it twice changes nothing. The database is the source of
truth: the submission's status is derived from its units, never from queue state.
"""

from __future__ import annotations

import hashlib
import io
import logging
import time

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluator.backends import BackendConfig, get_renderer
from evaluator.judge import METRIC_SKILLS, TargetInput, TaskInput, cache_key, route_for_task
from evaluator.judge.types import is_image_skill

from . import queue, runtime
from .models import Judgement, PromptEntry, Render, Status, Submission, UnitStatus

log = logging.getLogger(__name__)


def submission_start(submission_id: int) -> None:
    """Claim a queued submission, create every render and prompt-judgement row, and enqueue them."""
    if not Submission.objects.filter(pk=submission_id, status=Status.QUEUED).update(status=Status.RENDERING, started=timezone.now()):
        return  # already started by another job
    submission = Submission.objects.get(pk=submission_id)
    configs, judge = runtime.backend_configs(), runtime.judge()
    if not configs:
        submission_fail(submission_id, "no rendering backend is enabled in the backends file")
        return
    with transaction.atomic():
        Submission.objects.filter(pk=submission_id).update(
            judge_id=judge.judge_id, judge_label=judge.label, judge_version=judge.version,
            backends=[{**c.to_dict(), "version_hash": c.version_hash()} for c in configs.values()],
        )  # fmt: skip
        for entry in submission.entries.select_related("task"):
            _plan_entry(entry, configs, judge.judge_id, judge.version)


def _plan_entry(entry: PromptEntry, configs: dict[str, BackendConfig], judge_id: str, judge_version: str) -> None:
    from .jobs import judge_job, render_job

    prompt_sha = hashlib.sha256(entry.text.encode()).hexdigest()
    for config in configs.values():
        for k, seed in enumerate(config.seeds_for(entry.task.task_id, entry.sample_index)):
            Render.objects.get_or_create(
                entry=entry, backend=config.name, image_index=k,
                defaults={"seed": seed, "config_hash": config.version_hash(), "prompt_sha": prompt_sha},
            )  # fmt: skip
        queue.enqueue(f"render-{config.name}", render_job, entry.pk, config.name)
    for judgement in _plan_judgements(entry, judge_id, judge_version, [None]):
        queue.enqueue("judge", judge_job, judgement.pk)


def render_entry(entry_id: int, backend: str) -> None:
    """Render every pending image of one prompt on one backend, reusing identical earlier renders."""
    entry = PromptEntry.objects.select_related("task", "submission").get(pk=entry_id)
    pending = list(Render.objects.filter(entry=entry, backend=backend, status=UnitStatus.PENDING))
    if pending:
        todo = [r for r in pending if not _reuse(r)]
        if todo:
            _render(entry, backend, todo)
        _queue_image_judgements(entry, pending)
    submission_advance(entry.submission_id)


def _reuse(render: Render) -> bool:
    same = (
        Render.objects.filter(config_hash=render.config_hash, prompt_sha=render.prompt_sha, seed=render.seed, status=UnitStatus.OK)
        .exclude(pk=render.pk)
        .first()
    )
    if same is None:
        return False
    render.image, render.sha256, render.reused_from, render.status = same.image.name, same.sha256, same, UnitStatus.OK
    render.save()
    return True


def _render(entry: PromptEntry, backend: str, renders: list[Render]) -> None:
    started = time.perf_counter()
    try:
        config = runtime.backend_configs()[backend]
        images = get_renderer(config).render(entry.text, [r.seed for r in renders])
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        log.warning("render failed for entry %s on %s: %s", entry.pk, backend, reason)
        Render.objects.filter(pk__in=[r.pk for r in renders]).update(status=UnitStatus.FAILED, error=reason)
        for r in renders:
            r.status = UnitStatus.FAILED
        return
    seconds = (time.perf_counter() - started) / len(renders)
    for render, image in zip(renders, images):
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        data = buffer.getvalue()
        render.image.save(f"{entry.submission_id}/{render.pk}.png", ContentFile(data), save=False)
        render.sha256, render.status, render.seconds = hashlib.sha256(data).hexdigest(), UnitStatus.OK, seconds
        render.save()


def _queue_image_judgements(entry: PromptEntry, renders: list[Render]) -> None:
    from .jobs import judge_job

    submission = entry.submission
    with transaction.atomic():
        ok = [r for r in renders if r.status == UnitStatus.OK]
        for judgement in _plan_judgements(entry, submission.judge_id, submission.judge_version, ok):
            queue.enqueue("judge", judge_job, judgement.pk)


def task_input(entry: PromptEntry) -> TaskInput:
    task = entry.task
    return TaskInput(
        task_id=task.task_id, category=task.category, title=task.title, brief=task.brief,
        constraints=dict(task.constraints or {}), prompt_checklist=tuple(task.prompt_checklist),
        image_checklist=tuple(task.image_checklist),
    )  # fmt: skip


def judge_unit(judgement_id: int) -> None:
    judgement = Judgement.objects.select_related("entry__task", "render").get(pk=judgement_id)
    if judgement.status == UnitStatus.PENDING:
        _judge(judgement)
    submission_advance(judgement.submission_id)


RESULT_FIELDS = ("status", "value", "scores", "checklist", "rationales", "raw", "reason", "details", "calls", "prompt_tokens", "completion_tokens")


def _judge(judgement: Judgement) -> None:
    """Run one skill, or reuse an identical judgement (same cache key) with zero calls."""
    judge = runtime.judge()
    if judge.judge_id != judgement.judge_id or judge.version != judgement.judge_version:
        judgement.status = UnitStatus.FAILED
        judgement.reason = f"this worker's judge is {judge.judge_id} {judge.version}, not {judgement.judge_id} {judgement.judge_version}"
        judgement.save()
        return
    task, prompt, image, target = task_input(judgement.entry), judgement.entry.text, _image(judgement.render), _target(judgement)
    exemplars = _exemplars(judgement, task, prompt, image)
    # Metric skills use CLIP locally; the judge id does not name that model, so the key must.
    keyed_skill = f"{judgement.skill}@{settings.ATELIER_CLIP_MODEL}:{settings.ATELIER_CLIP_PRETRAINED}" if judgement.skill in METRIC_SKILLS else judgement.skill
    judgement.cache_key = cache_key(keyed_skill, judge.judge_id, judge.version, task, prompt, image, exemplars, target)
    earlier = Judgement.objects.filter(cache_key=judgement.cache_key, status__in=[UnitStatus.OK, UnitStatus.BLOCKED]).exclude(pk=judgement.pk).first()
    if earlier is not None:
        for name in RESULT_FIELDS:
            setattr(judgement, name, getattr(earlier, name))
        judgement.calls = judgement.prompt_tokens = judgement.completion_tokens = 0
        judgement.cached = True
    else:
        result = judge.run(judgement.skill, task, prompt, image, exemplars=exemplars, target=target)
        for name in RESULT_FIELDS:
            setattr(judgement, name, getattr(result, name))
    judgement.save()
    if judgement.status == UnitStatus.BLOCKED and judgement.skill.startswith("safety_"):
        _block_siblings(judgement)


def _block_siblings(judgement: Judgement) -> None:
    """A blocked prompt blocks every judgement of its entry; a blocked image, those of that image."""
    siblings = Judgement.objects.filter(entry_id=judgement.entry_id, judge_id=judgement.judge_id, judge_version=judgement.judge_version)
    if judgement.render_id is not None:
        siblings = siblings.filter(render_id=judgement.render_id)
    siblings.exclude(pk=judgement.pk).update(status=UnitStatus.BLOCKED, value=None, reason=f"blocked by {judgement.skill}: {judgement.reason}")


def _image(render: Render | None):
    if render is None:
        return None
    from PIL import Image

    with render.image.open("rb") as handle:
        return Image.open(handle).convert("RGB")


def _target(judgement: Judgement) -> TargetInput | None:
    """An IM task's target image and, when one was rendered on this render's backend config, the
    render of its seed prompt that sets the target's c_k scale (manage.py render_targets --references)."""
    task = judgement.entry.task
    if judgement.render is None or task.category != "IM" or not task.target_image:
        return None
    from PIL import Image

    reference = task.references.filter(config_hash=judgement.render.config_hash).first()
    with task.target_image.open("rb") as handle:
        target = Image.open(handle).convert("RGB")
    if reference is None:
        return TargetInput(image=target)
    with reference.image.open("rb") as handle:
        return TargetInput(image=target, reference=Image.open(handle).convert("RGB"))


def _exemplars(judgement: Judgement, task: TaskInput, prompt: str, image) -> tuple:
    """Calibration exemplars for rubric skills only (memory holds rubric scores, not checklist labels)."""
    if not judgement.skill.endswith("_subjective"):
        return ()
    from ratings.memory import exemplars_for

    kind = "image" if judgement.render_id else "prompt"
    return exemplars_for(task_id=task.task_id, category=task.category, kind=kind, prompt=prompt, image=image)


def submission_advance(submission_id: int) -> None:
    """Move the submission on when its units allow it. Safe to call after every unit, from any worker."""
    renders = Render.objects.filter(entry__submission_id=submission_id)
    if renders.filter(status=UnitStatus.PENDING).exists():
        return
    if Submission.objects.filter(pk=submission_id, status=Status.RENDERING).exists() and not renders.filter(status=UnitStatus.OK).exists():
        first = renders.exclude(error="").values_list("error", flat=True).first() or "no renders were planned"
        submission_fail(submission_id, f"no image could be rendered: {first}")
        return
    Submission.objects.filter(pk=submission_id, status=Status.RENDERING).update(status=Status.JUDGING)
    if not Judgement.objects.filter(submission_id=submission_id, status=UnitStatus.PENDING).exists():
        from .jobs import finish_submission_job

        queue.enqueue("default", finish_submission_job, submission_id)


def submission_rescore(submission_id: int) -> int:
    """Score a finished submission again with this process's judge. Judgements that exist for that judge
    and rubric version are kept, identical ones elsewhere are reused (cache), so an unchanged submission
    makes no model calls; the previous judge's figures stay. Returns how many judgements were queued."""
    from .jobs import judge_job

    judge = runtime.judge()
    if not Submission.objects.filter(pk=submission_id, status=Status.DONE).update(
        status=Status.JUDGING, judge_id=judge.judge_id, judge_label=judge.label, judge_version=judge.version, finished=None
    ):
        return 0
    queued = 0
    with transaction.atomic():
        for entry in PromptEntry.objects.filter(submission_id=submission_id).select_related("task"):
            renders = [None, *entry.renders.filter(status=UnitStatus.OK)]
            for judgement in _plan_judgements(entry, judge.judge_id, judge.version, renders):
                queue.enqueue("judge", judge_job, judgement.pk)
                queued += 1
    if not queued:
        submission_advance(submission_id)
    return queued


def _plan_judgements(entry: PromptEntry, judge_id: str, judge_version: str, renders: list[Render | None]) -> list[Judgement]:
    """Pending judgement rows for every routed skill of one entry: prompt-side for None, image-side per render."""
    skills = route_for_task(task_input(entry), settings.ATELIER_JUDGE_ROUTE)
    pending = []
    for render in renders:
        for skill in skills:
            if is_image_skill(skill) != (render is not None):
                continue
            judgement, _ = Judgement.objects.get_or_create(
                submission_id=entry.submission_id, entry=entry, render=render, skill=skill, judge_id=judge_id, judge_version=judge_version
            )
            if judgement.status == UnitStatus.PENDING:
                pending.append(judgement)
    return pending


def submission_finish(submission_id: int) -> None:
    from leaderboard.services import scores_rebuild

    with transaction.atomic():
        if not Submission.objects.filter(pk=submission_id, status=Status.JUDGING).update(status=Status.DONE, finished=timezone.now()):
            return  # finished already, or failed
        scores_rebuild(submission=Submission.objects.get(pk=submission_id))


def submission_fail(submission_id: int, reason: str) -> None:
    Submission.objects.filter(pk=submission_id).exclude(status=Status.DONE).update(
        status=Status.FAILED, error=reason, finished=timezone.now()
    )


def pending_units(submission_id: int) -> tuple[list[tuple[int, str]], list[int]]:
    """(entry, backend) pairs with pending renders and pending judgement ids: what `reconcile` re-enqueues."""
    pairs = Render.objects.filter(entry__submission_id=submission_id, status=UnitStatus.PENDING).values_list("entry_id", "backend")
    judgements = Judgement.objects.filter(Q(submission_id=submission_id) & Q(status=UnitStatus.PENDING)).values_list("pk", flat=True)
    return sorted(set(pairs)), list(judgements)
