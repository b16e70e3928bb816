"""What a process (web or worker) loads once: the backend configs and the judge.

Cached per process so a worker keeps its judge models and pipelines across jobs.
Importing this module imports no torch; the judge and renderers load lazily.
"""

from __future__ import annotations

import functools

from django.conf import settings

from evaluator.backends import BackendConfig, load_backend_configs
from evaluator.judge.config import JudgeConfig
from evaluator.judge.factory import make_judge
from evaluator.judge.pricing import PRICE_SETTINGS, Prices, prices_from_settings
from evaluator.judge.protocol import Judge
from evaluator.prompters.conditions import Condition, load_conditions


@functools.cache
def backend_configs() -> dict[str, BackendConfig]:
    return {name: c for name, c in load_backend_configs(settings.ATELIER_BACKENDS_FILE).items() if c.enabled}


@functools.cache
def judge_config() -> JudgeConfig:
    """The judge's settings as one checked JudgeConfig (each field names the setting it is read from)."""
    return JudgeConfig.from_settings({name: getattr(settings, name) for name in JudgeConfig.setting_names().values()})


@functools.cache
def judge() -> Judge:
    return make_judge(judge_config())


def judge_prices() -> Prices | None:
    """The deployer's judge prices (ATELIER_JUDGE_PRICE_*; evaluator/judge/pricing.py), None when none are set."""
    return prices_from_settings({name: getattr(settings, name, None) for name in PRICE_SETTINGS.values()})


@functools.cache
def conditions() -> dict[str, Condition]:
    """The conditions an endpoint run may use: the built-in ones and the deployer's ATELIER_CONDITIONS_FILE."""
    return load_conditions(settings.ATELIER_CONDITIONS_FILE)


def reset() -> None:
    """Forget cached configs and judge (tests that change settings call this)."""
    backend_configs.cache_clear()
    judge_config.cache_clear()
    judge.cache_clear()
    conditions.cache_clear()


def snapshot_fields(current: Judge, configs: dict[str, BackendConfig] | None = None) -> dict:
    """The one writer of a submission's snapshot of what scores it: the judge (judge_fields) and, when `configs` is
    given (a start: an upload's or an endpoint run's), every backend it renders on with its config's version hash.
    A rescore passes no configs: it changes the judge and keeps the backends its renders were made on."""
    fields = judge_fields(current)
    if configs is not None:
        fields["backends"] = [{**c.to_dict(), "version_hash": c.version_hash()} for c in configs.values()]
    return fields


def judge_fields(current: Judge) -> dict:
    """What a submission records of the judge that scores it: id, label, version, its whole spec document and (for
    staff only) the hosts it calls."""
    spec = getattr(current, "spec", None)
    return {
        "judge_id": current.judge_id,
        "judge_label": current.label,
        "judge_version": current.version,
        "judge_spec": spec.document() if spec else {},
        "judge_endpoint": ", ".join(spec.endpoints)[:300] if spec else "",
    }
