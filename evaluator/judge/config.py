"""JudgeConfig: every setting that builds a judge, each name and default written once here and checked once, on construction.

Each field names the Django setting (and environment variable) it comes from and how its text is read, so a refusal
names what to change, and settings take every judge setting from `settings_from_environ` instead of spelling them
again. Kept free of Django, the openai client, numpy and torch, and importing nothing else of the judge: settings
import it to read and check the judge's configuration at start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlparse

MIN_IMAGE_MAX_SIDE = 64

# The routes by name (routes.py defines the skills of each): here, so that checking a configured route needs no skill.
DEFAULT_ROUTE = "ateliereval"  # AtelierEval's own judge
EXTENDED_ROUTE = "extended"  # with the safety gates, text rendering, faithfulness and colour shift
OFFICIAL_ROUTE = "official"  # the release's judge, read from a checkout (official/)
ROUTE_NAMES: tuple[str, ...] = (DEFAULT_ROUTE, EXTENDED_ROUTE, OFFICIAL_ROUTE)

# Read from the environment (settings_from_environ), three settings default to something other than the object's field,
# each as the site did before (docs/configuration.md): ATELIER_JUDGE_ROUTE is OFFICIAL_ROUTE when ATELIER_OFFICIAL_RELEASE
# is set (the two go together), and
ENDPOINT_MODEL = "gpt-4o-mini"  # ATELIER_JUDGE_MODEL, unset while OPENAI_BASE_URL is set
SITE_MAX_IN_FLIGHT = 8  # ATELIER_JUDGE_MAX_IN_FLIGHT, unset: a deployment bounds each process's calls (None would not)


class JudgeConfigError(ValueError):
    """A judge configuration that must not run (the message names the setting to change)."""


# How a setting's text (an environment variable) becomes its value: each reader takes the name (for its refusal) and the text.
Reader = Callable[[str, str], Any]


# The model name of the demo's scripted judge (demo/judge.py: rules, no model); its label says so (spec.py).
DEMO_JUDGE_MODEL = "scripted-judge-demo"


def _text(name: str, text: str) -> str:
    return text


def _optional_text(name: str, text: str) -> str | None:
    return text.strip() or None


def _http_url(name: str, text: str) -> str:
    value, parsed = text.strip(), urlparse(text.strip())
    if value and (parsed.scheme not in ("http", "https") or not parsed.netloc):
        raise JudgeConfigError(f"{name}={value!r}: expected a URL starting with http:// or https://")
    return value


def _names(name: str, text: str) -> tuple[str, ...]:
    return tuple(m.strip() for m in text.split(",") if m.strip())


def _integer(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise JudgeConfigError(f"{name}={text!r}: expected an integer") from None


def _per_minute(name: str, text: str) -> int | None:
    return _integer(name, text) or None  # 0: no budget


def _flag(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise JudgeConfigError(f"{name}={text!r}: expected true/false (1/0, yes/no, on/off)")


def _number(name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise JudgeConfigError(f"{name}={text!r}: expected a number") from None


def _setting(name: str, default: Any, read: Reader | None, **kwargs: Any) -> Any:
    """A field read from the setting `name`; `read` None: settings read it for a use of their own and pass it on."""
    return field(default=default, metadata={"setting": name, "read": read}, **kwargs)


@dataclass(frozen=True)
class JudgeConfig:
    """What make_judge builds a judge from. base_url "" is the offline embedding judge; `models` (several: an
    ensemble) takes precedence over `model`; clip_pretrained is a checkpoint path, an open_clip tag, or "random"
    (figures labelled smoke); max_in_flight None leaves the process-wide bound on calls as it is. rpm and tpm (None: no
    budget) are one budget for the endpoint's key shared by every judge worker (evaluator/judge/budget.py) through
    budget_url's Redis ("": this process's memory); image_tokens and reply_tokens estimate a request's tokens. None of
    these five changes a verdict, so none is part of the judge's spec or version; nor does prompt_cache_key, which sends
    each request's cache key to the provider (off for an endpoint that refuses the parameter)."""

    base_url: str = _setting("OPENAI_BASE_URL", "", _http_url)
    api_key: str = _setting("OPENAI_API_KEY", "", _text, repr=False)
    model: str = _setting("ATELIER_JUDGE_MODEL", "", _text)  # from the environment: ENDPOINT_MODEL with an endpoint
    models: tuple[str, ...] = _setting("ATELIER_JUDGE_MODELS", (), _names)  # comma-separated in the environment
    timeout: float = _setting("ATELIER_JUDGE_TIMEOUT", 60.0, _number)  # seconds per request
    max_retries: int = _setting("ATELIER_JUDGE_MAX_RETRIES", 2, _integer)  # the client's own retries (429, 5xx, timeouts)
    image_max_side: int = _setting("ATELIER_JUDGE_IMAGE_MAX_SIDE", 512, _integer)  # pixels, longest side of a sent image
    repair_attempts: int = _setting("ATELIER_JUDGE_REPAIRS", 2, _integer)  # repair turns after a reply that does not parse
    route: str = _setting("ATELIER_JUDGE_ROUTE", DEFAULT_ROUTE, _text)  # from the environment: official with a release
    clip_model: str = _setting("ATELIER_CLIP_MODEL", "ViT-B-32", _text)
    clip_pretrained: str | None = _setting("ATELIER_CLIP_PRETRAINED", None, _optional_text)
    max_in_flight: int | None = _setting("ATELIER_JUDGE_MAX_IN_FLIGHT", None, _integer)  # from the environment: SITE_MAX_IN_FLIGHT
    official_release: str | None = _setting("ATELIER_OFFICIAL_RELEASE", None, _optional_text)  # a checkout of the release
    rpm: int | None = _setting("ATELIER_JUDGE_RPM", None, _per_minute)  # requests per minute, all workers together
    tpm: int | None = _setting("ATELIER_JUDGE_TPM", None, _per_minute)  # estimated tokens per minute, all workers together
    image_tokens: int = _setting("ATELIER_JUDGE_IMAGE_TOKENS", 350, _integer)  # counted per image sent, in the estimate
    reply_tokens: int = _setting("ATELIER_JUDGE_REPLY_TOKENS", 300, _integer)  # counted per request that names no max_tokens
    budget_url: str = _setting("REDIS_URL", "", None, repr=False)  # where the budget is shared (may hold a password)
    prompt_cache_key: bool = _setting("ATELIER_JUDGE_PROMPT_CACHE_KEY", True, _flag)  # OpenAI's prompt_cache_key, per skill and task

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


def settings_from_environ(environ: Mapping[str, str]) -> dict[str, Any]:
    """Every judge setting read from the environment (or any mapping of names to text), keyed by setting name: what
    Django's settings hold and JudgeConfig.from_settings takes. An unset variable takes its field's default, but for
    the environment's own defaults above; a variable set to text that does not read raises JudgeConfigError naming it
    (ranges and combinations are JudgeConfig's to check). REDIS_URL, read by settings for the work queue, is left out."""
    values: dict[str, Any] = {}
    for f in fields(JudgeConfig):
        name, read = f.metadata["setting"], f.metadata["read"]
        if read is not None:
            values[name] = read(name, environ[name]) if name in environ else f.default
    names = JudgeConfig.setting_names()
    unset = {field_name for field_name, name in names.items() if name not in environ}
    if "model" in unset and values[names["base_url"]]:
        values[names["model"]] = ENDPOINT_MODEL
    if "route" in unset and values[names["official_release"]]:
        values[names["route"]] = OFFICIAL_ROUTE
    if "max_in_flight" in unset:
        values[names["max_in_flight"]] = SITE_MAX_IN_FLIGHT
    return values
