"""make_judge: the judge a configuration asks for (the one place a JudgeConfig becomes a judge).

The judges are imported when one is built, not with this module: evaluation.runtime imports it in every web
process, and the judges bring the openai client, numpy and Pillow (tests/test_startup.py)."""

from __future__ import annotations

from dataclasses import replace

from .config import OFFICIAL_ROUTE, JudgeConfig
from .protocol import Judge


def make_judge(config: JudgeConfig) -> Judge:
    """OpenAIJudge when a judge endpoint is configured (an EnsembleJudge of one OpenAIJudge per model when the
    config names more than one), the release's OfficialJudge on route "official", else the offline EmbeddingJudge.

    The config was checked when it was built (JudgeConfig refuses an endpoint without CLIP weights, an ensemble
    without an endpoint, and the official route without its checkout, an endpoint and exactly one model)."""
    if config.route == OFFICIAL_ROUTE:
        from .official.judge import OfficialJudge
        from .official.release import load_release

        assert config.official_release is not None  # JudgeConfig pairs the route with its checkout
        return OfficialJudge(config, release=load_release(config.official_release))
    if not config.base_url:
        from .embedding_judge import EmbeddingJudge

        return EmbeddingJudge(config)
    from .ensemble import EnsembleJudge
    from .openai_judge import OpenAIJudge

    members = [OpenAIJudge(replace(config, model=name, models=())) for name in config.judge_models]
    return members[0] if len(members) == 1 else EnsembleJudge(members)
