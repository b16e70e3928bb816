"""JudgeConfig: every setting that builds a judge, each default written once here and checked once, on construction.

Each field names the Django setting (and environment variable) it comes from, so a refusal names what to change.
Kept free of Django, the openai client, numpy and torch: settings imports it to take the defaults and to check
the judge at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .routes import DEFAULT_ROUTE, OFFICIAL_ROUTE, ROUTE_NAMES

MIN_IMAGE_MAX_SIDE = 64


class JudgeConfigError(ValueError):
    """A judge configuration that must not run (the message names the setting to change)."""


def _setting(name: str, default: Any, **kwargs: Any) -> Any:
    return field(default=default, metadata={"setting": name}, **kwargs)


@dataclass(frozen=True)
class JudgeConfig:
    """What make_judge builds a judge from. base_url "" is the offline embedding judge; `models` (several: an
    ensemble) takes precedence over `model`; clip_pretrained is a checkpoint path, an open_clip tag, or "random"
    (figures labelled smoke); max_in_flight None leaves the process-wide bound on calls as it is. rpm and tpm (None: no
    budget) are one budget for the endpoint's key shared by every judge worker (evaluator/judge/budget.py) through
    budget_url's Redis ("": this process's memory); image_tokens and reply_tokens estimate a request's tokens. None of
    these five changes a verdict, so none is part of the judge's spec or version."""

    base_url: str = _setting("OPENAI_BASE_URL", "")
    api_key: str = _setting("OPENAI_API_KEY", "", repr=False)
    model: str = _setting("ATELIER_JUDGE_MODEL", "")
    models: tuple[str, ...] = _setting("ATELIER_JUDGE_MODELS", ())
    timeout: float = _setting("ATELIER_JUDGE_TIMEOUT", 60.0)  # seconds per request
    max_retries: int = _setting("ATELIER_JUDGE_MAX_RETRIES", 2)  # the client's own retries (429, 5xx, timeouts)
    image_max_side: int = _setting("ATELIER_JUDGE_IMAGE_MAX_SIDE", 512)  # pixels, longest side of a sent image
    repair_attempts: int = _setting("ATELIER_JUDGE_REPAIRS", 2)  # repair turns after a reply that does not parse
    route: str = _setting("ATELIER_JUDGE_ROUTE", DEFAULT_ROUTE)
    clip_model: str = _setting("ATELIER_CLIP_MODEL", "ViT-B-32")
    clip_pretrained: str | None = _setting("ATELIER_CLIP_PRETRAINED", None)
    max_in_flight: int | None = _setting("ATELIER_JUDGE_MAX_IN_FLIGHT", None)
    official_release: str | None = _setting("ATELIER_OFFICIAL_RELEASE", None)  # a checkout of the release
    rpm: int | None = _setting("ATELIER_JUDGE_RPM", None)  # requests per minute, all workers together
    tpm: int | None = _setting("ATELIER_JUDGE_TPM", None)  # estimated tokens per minute, all workers together
    image_tokens: int = _setting("ATELIER_JUDGE_IMAGE_TOKENS", 350)  # counted per image sent, in the estimate
    reply_tokens: int = _setting("ATELIER_JUDGE_REPLY_TOKENS", 300)  # counted per request that names no max_tokens
    budget_url: str = _setting("REDIS_URL", "", repr=False)  # where the budget is shared (may hold a password)

    def __post_init__(self) -> None:
        object.__setattr__(self, "models", tuple(dict.fromkeys(self.models)))
        object.__setattr__(self, "official_release", self.official_release or None)
        self._check_numbers()
        self._check_route()
        self._check_endpoint()

    @classmethod
    def setting_names(cls) -> dict[str, str]:
        """field name -> the setting it comes from."""
        return {f.name: f.metadata["setting"] for f in fields(cls)}

    @classmethod
    def from_settings(cls, values: Mapping[str, Any]) -> JudgeConfig:
        """The config from settings keyed by setting name (OPENAI_BASE_URL, ATELIER_JUDGE_MODEL...)."""
        return cls(**{name: values[setting] for name, setting in cls.setting_names().items()})

    @property
    def judge_models(self) -> tuple[str, ...]:
        """The model of each judge to build: `models`, else `model` if set."""
        return self.models or ((self.model,) if self.model else ())

    def _named(self, name: str) -> str:
        return f"{self.setting_names()[name]}={getattr(self, name)!r}"

    def _check_numbers(self) -> None:
        minimums = {
            "max_retries": 0,
            "repair_attempts": 0,
            "image_max_side": MIN_IMAGE_MAX_SIDE,
            "max_in_flight": 1,
            "rpm": 1,
            "tpm": 1,
            "image_tokens": 0,
            "reply_tokens": 0,
        }
        for name, minimum in minimums.items():
            value = getattr(self, name)
            if value is not None and value < minimum:
                raise JudgeConfigError(f"{self._named(name)}: must be at least {minimum}")
        if self.timeout <= 0:
            raise JudgeConfigError(f"{self._named('timeout')}: must be positive")

    def _check_route(self) -> None:
        if self.route not in ROUTE_NAMES:
            raise JudgeConfigError(f"{self._named('route')}: expected one of {', '.join(ROUTE_NAMES)}")
        if (self.route == OFFICIAL_ROUTE) != bool(self.official_release):
            raise JudgeConfigError(
                f"{self._named('route')}: the route {OFFICIAL_ROUTE!r} is the judge of ATELIER_OFFICIAL_RELEASE, and only it "
                f"(route {OFFICIAL_ROUTE!r} and an official release checkout go together), got route {self.route!r}, "
                f"release {self.official_release!r}"
            )

    def _check_endpoint(self) -> None:
        models = self.judge_models
        if self.route == OFFICIAL_ROUTE and (not self.base_url or len(models) != 1):
            raise JudgeConfigError(
                f"the official route needs a judge endpoint (OPENAI_BASE_URL) and exactly one model (ATELIER_JUDGE_MODEL), got {list(models)}"
            )
        if not self.base_url:
            if len(models) > 1:
                raise JudgeConfigError(
                    f"an ensemble of models (ATELIER_JUDGE_MODELS={list(models)}) needs a judge endpoint (OPENAI_BASE_URL)"
                )
            return
        if not models:
            raise JudgeConfigError(
                "OPENAI_BASE_URL configures a real judge but no model is set (ATELIER_JUDGE_MODEL or ATELIER_JUDGE_MODELS)"
            )
        if self.clip_pretrained is None:
            # A real judge must not rank IM tasks (or, on the official route, retrieve exemplars) by random CLIP features.
            raise JudgeConfigError(
                "ATELIER_CLIP_PRETRAINED is unset but OPENAI_BASE_URL configures a real judge: target similarity would use random "
                "CLIP weights. Set ATELIER_CLIP_PRETRAINED to a local checkpoint path or an open_clip tag, or to 'random' to accept "
                "figures labelled 'smoke (random weights)'."
            )


DEFAULTS = JudgeConfig()
