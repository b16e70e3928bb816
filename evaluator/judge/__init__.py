"""AtelierJudge: scores a prompter's prompt and the images rendered from it.

Two implementations share the Judge protocol:
  * OpenAIJudge: the rubric judge, served by any OpenAI-compatible endpoint;
  * EmbeddingJudge: an offline checklist-only fallback (MiniLM + CLIP).
make_judge() picks one from configuration. Heavy model libraries are imported
lazily, so importing this package stays cheap for the web application.
"""

from __future__ import annotations

from .embedding_judge import EmbeddingJudge, image_embeddings, text_embeddings
from .openai_judge import OpenAIJudge
from .rubrics import RUBRIC_VERSION
from .types import (
    IMAGE_DIMENSIONS,
    PROMPT_DIMENSIONS,
    SKILLS,
    Judge,
    JudgeResult,
    TaskInput,
    route_for_category,
)

__all__ = [
    "IMAGE_DIMENSIONS",
    "PROMPT_DIMENSIONS",
    "RUBRIC_VERSION",
    "SKILLS",
    "EmbeddingJudge",
    "Judge",
    "JudgeResult",
    "OpenAIJudge",
    "TaskInput",
    "make_judge",
    "image_embeddings",
    "route_for_category",
    "text_embeddings",
]


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
) -> Judge:
    """OpenAIJudge when a judge endpoint is configured, else the offline EmbeddingJudge."""
    if base_url:
        return OpenAIJudge(
            base_url=base_url,
            api_key=api_key,
            model=model,
            timeout=timeout,
            max_retries=max_retries,
            image_max_side=image_max_side,
        )
    return EmbeddingJudge(clip_model=clip_model, clip_pretrained=clip_pretrained)
