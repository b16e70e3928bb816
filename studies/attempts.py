"""A study participant's IM attempt (retry mode): render once on the study's fast backend, then score the
image's similarity to the target, while the participant's page polls. Jobs: attempt_render_job on the
backend's render queue, then attempt_judge_job on the judge queue."""

from __future__ import annotations

from django.utils import timezone
from PIL import Image

from evaluation import runtime
from evaluation.judging import target_for
from evaluation.models import UnitStatus
from evaluation.prompting import TARGET_SKILL
from evaluation.rendering import render_prompt, store_png
from evaluation.units import task_input
from evaluation.workqueue import enqueue
from evaluator.judge.skills import get_skill

from .apps import ATTEMPT_JUDGE_JOB
from .models import Attempt


def _pending(attempt_id: int) -> Attempt | None:
    attempt = Attempt.objects.select_related("assignment__task", "assignment__participant__study").get(pk=attempt_id)
    return attempt if attempt.status == UnitStatus.PENDING else None


def attempt_render(attempt_id: int) -> None:
    attempt = _pending(attempt_id)
    if attempt is None:
        return
    task, study = attempt.assignment.task, attempt.assignment.participant.study
    config = runtime.backend_configs()[study.retry_backend]
    images, _, _ = render_prompt(config, attempt.text, config.seeds_for(task.task_id, attempt.number)[:1])
    name, _ = store_png(images[0])
    Attempt.objects.filter(pk=attempt_id).update(image=name)
    enqueue(ATTEMPT_JUDGE_JOB, attempt_id)


def attempt_judge(attempt_id: int) -> None:
    attempt = _pending(attempt_id)
    if attempt is None:
        return
    task, study = attempt.assignment.task, attempt.assignment.participant.study
    with attempt.image.open("rb") as handle:
        image = Image.open(handle).convert("RGB")
    target = target_for(
        task, runtime.backend_configs()[study.retry_backend].version_hash()
    )  # an attempt records no hash: the file's config, as attempt_render read it
    result = runtime.judge().run(TARGET_SKILL, task_input(task), attempt.text, image, target=target)
    if result.status != UnitStatus.OK or result.value is None:
        attempt_fail(attempt_id, result.reason or f"similarity {result.status}")
        return
    score = get_skill(TARGET_SKILL).scale.to_100(result.value)
    Attempt.objects.filter(pk=attempt_id, status=UnitStatus.PENDING).update(status=UnitStatus.OK, score=score, finished=timezone.now())


def attempt_fail(attempt_id: int, reason: str) -> None:
    Attempt.objects.filter(pk=attempt_id, status=UnitStatus.PENDING).update(
        status=UnitStatus.FAILED, error=reason[:500], finished=timezone.now()
    )
