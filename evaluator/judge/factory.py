"""make_judge: the judge a configuration asks for (the one place settings become a judge)."""

from __future__ import annotations

from typing import Sequence

from .embedding_judge import EmbeddingJudge
from .ensemble import EnsembleJudge
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
) -> Judge:
    """OpenAIJudge when a judge endpoint is configured (an EnsembleJudge of one OpenAIJudge
    per model when `models` names more than one), else the offline EmbeddingJudge.

    `models` takes precedence over `model`; max_in_flight sets the process-wide bound on
    calls in flight (None leaves it as it is). A judge endpoint with CLIP weights left unset
    (clip_pretrained None) is refused: its IM scores would rank by random CLIP features under
    a real judge's name. Pass a checkpoint path or open_clip tag, or "random" to accept
    figures labelled smoke (random weights).
    """
    check_route(route)
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
