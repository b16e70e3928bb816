"""What a process (web or worker) loads once: the backend configs and the judge.

Cached per process so a worker keeps its judge models and pipelines across jobs.
Importing this module imports no torch; the judge and renderers load lazily.
"""

from __future__ import annotations

import functools

from django.conf import settings

from evaluator.backends import BackendConfig, load_backend_configs
from evaluator.judge.factory import make_judge
from evaluator.judge.types import Judge
from evaluator.prompters.conditions import Condition, load_conditions


@functools.cache
def backend_configs() -> dict[str, BackendConfig]:
    return {name: c for name, c in load_backend_configs(settings.ATELIER_BACKENDS_FILE).items() if c.enabled}


@functools.cache
def judge() -> Judge:
    return make_judge(
        base_url=settings.OPENAI_BASE_URL,
        api_key=settings.OPENAI_API_KEY,
        model=settings.ATELIER_JUDGE_MODEL,
        timeout=settings.ATELIER_JUDGE_TIMEOUT,
        max_retries=settings.ATELIER_JUDGE_MAX_RETRIES,
        image_max_side=settings.ATELIER_JUDGE_IMAGE_MAX_SIDE,
        clip_model=settings.ATELIER_CLIP_MODEL,
        clip_pretrained=settings.ATELIER_CLIP_PRETRAINED,
        models=settings.ATELIER_JUDGE_MODELS,
        repair_attempts=settings.ATELIER_JUDGE_REPAIRS,
        route=settings.ATELIER_JUDGE_ROUTE,
        max_in_flight=settings.ATELIER_JUDGE_MAX_IN_FLIGHT,
        official_release=settings.ATELIER_OFFICIAL_RELEASE or None,
    )


@functools.cache
def conditions() -> dict[str, Condition]:
    """The conditions an endpoint run may use: the built-in ones and the deployer's ATELIER_CONDITIONS_FILE."""
    return load_conditions(settings.ATELIER_CONDITIONS_FILE)


def reset() -> None:
    """Forget cached configs and judge (tests that change settings call this)."""
    backend_configs.cache_clear()
    judge.cache_clear()
    conditions.cache_clear()


def judge_fields(current: Judge) -> dict:
    """What a submission records of the judge that scores it: id, label, version, its whole spec document and (for
    staff only) the hosts it calls."""
    spec = getattr(current, "spec", None)
    return {"judge_id": current.judge_id, "judge_label": current.label, "judge_version": current.version, "judge_spec": spec.document() if spec else {},
            "judge_endpoint": ", ".join(spec.endpoints)[:300] if spec else ""}  # fmt: skip
