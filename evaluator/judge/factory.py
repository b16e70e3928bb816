"""make_judge: the judge a configuration asks for (the one place settings become a judge)."""

from __future__ import annotations

from typing import Sequence

from .embedding_judge import EmbeddingJudge
from .ensemble import EnsembleJudge
from .official.judge import ROUTE as OFFICIAL_ROUTE
from .official.judge import OfficialJudge
from .official.release import load_release
from .openai_judge import OpenAIJudge
from .routes import DEFAULT_ROUTE, check_route
from .spec import JudgeConfigError
from .throughput import set_max_in_flight
from .types import Judge


def make_judge(
    *,
    base_url: str = "",
    api_key: str = "",
    model: str = "",
    timeout: float = 60.0,
    max_retries: int = 2,
    image_max_side: int = 512,
    clip_model: str = "ViT-B-32",
    clip_pretrained: str | None = None,
    models: Sequence[str] = (),
    repair_attempts: int = 2,
    route: str = DEFAULT_ROUTE,
    max_in_flight: int | None = None,
    official_release: str | None = None,
) -> Judge:
    """OpenAIJudge when a judge endpoint is configured (an EnsembleJudge of one OpenAIJudge
    per model when `models` names more than one), else the offline EmbeddingJudge.

    `models` takes precedence over `model`; max_in_flight sets the process-wide bound on
    calls in flight (None leaves it as it is). A judge endpoint with CLIP weights left unset
    (clip_pretrained None) is refused: its IM scores would rank by random CLIP features under
    a real judge's name. Pass a checkpoint path or open_clip tag, or "random" to accept
    figures labelled smoke (random weights).

    official_release (a checkout of the AtelierEval release) makes the judge the release's own, route
    "official" (evaluator/judge/official/); that route needs it, and it needs one model and an endpoint.
    """
    check_route(route)
    if official_release or route == OFFICIAL_ROUTE:
        names = list(dict.fromkeys(models)) or [model]
        return _official(official_release, route, base_url, api_key, names, timeout, max_retries, clip_model, clip_pretrained, max_in_flight)
    if max_in_flight is not None:
        set_max_in_flight(max_in_flight)
    names = list(dict.fromkeys(models)) or ([model] if model else [])
    if not base_url:
        if len(names) > 1:
            raise JudgeConfigError("an ensemble of models needs a judge endpoint (base_url)")
        return EmbeddingJudge(clip_model=clip_model, clip_pretrained=clip_pretrained, route=route)
    if clip_pretrained is None:
        raise JudgeConfigError(
            "a judge endpoint is configured but the CLIP weights are not (ATELIER_CLIP_PRETRAINED): target similarity "
            "would score with random CLIP features; set it to a local checkpoint path or an open_clip tag, or to "
            "'random' to accept figures labelled smoke (random weights)"
        )
    members = [
        OpenAIJudge(
            base_url=base_url, api_key=api_key, model=name, timeout=timeout, max_retries=max_retries, image_max_side=image_max_side,
            repair_attempts=repair_attempts, route=route, clip_model=clip_model, clip_pretrained=clip_pretrained,
        )  # fmt: skip
        for name in (names or [model])
    ]
    return members[0] if len(members) == 1 else EnsembleJudge(members)


def _official(
    release: str | None, route: str, base_url: str, api_key: str, models: list[str], timeout: float, max_retries: int,
    clip_model: str, clip_pretrained: str | None, max_in_flight: int | None,
) -> Judge:
    """The release's judge from its checkout; refused unless route, checkout, endpoint and one model all say so."""
    if not release or route != OFFICIAL_ROUTE:
        raise JudgeConfigError(
            f"route {OFFICIAL_ROUTE!r} and an official release checkout go together (ATELIER_OFFICIAL_RELEASE), got route {route!r}, release {release!r}"
        )
    if not base_url or len([m for m in models if m]) != 1:
        raise JudgeConfigError(f"the official route needs a judge endpoint (OPENAI_BASE_URL) and exactly one model, got {models}")
    if clip_pretrained is None:
        raise JudgeConfigError("the official route retrieves image exemplars with CLIP (ATELIER_CLIP_PRETRAINED): set weights, or 'random' for a smoke judge")
    return OfficialJudge(
        release=load_release(release), base_url=base_url, model=models[0], api_key=api_key, timeout=timeout, max_retries=max_retries,
        clip_model=clip_model, clip_pretrained=clip_pretrained, max_in_flight=max_in_flight,
    )  # fmt: skip
