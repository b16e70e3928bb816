"""AtelierJudge: scores a prompter's prompt and the images rendered from it.

Three implementations share the Judge protocol:
  * OpenAIJudge: the rubric judge, served by any OpenAI-compatible endpoint;
  * EmbeddingJudge: an offline checklist-only fallback (MiniLM + CLIP);
  * EnsembleJudge: several judges combined (mean scores, majority checklists).
Skills are registered by name in skills.REGISTRY (LLM request/reply pairs and local
metrics); routes pick the skills per task; the rubric is a versioned data file
(rubrics/v2.json). make_judge() picks an implementation from configuration. Heavy
model libraries are imported lazily, so importing this package stays cheap for the
web application.
"""

from __future__ import annotations

from typing import Sequence

from .cache import cache_key
from .embedding_judge import EmbeddingJudge, image_embeddings, text_embeddings
from .ensemble import EnsembleJudge
from .memory import Exemplar, MemoryFormatError, embed_exemplars, parse_memory_records, read_memory_dir, read_memory_file, retrieve
from .metric_skills import clip_score, color_shift
from .openai_judge import OpenAIJudge
from .pipeline import run_route
from .rubrics import RUBRIC, RUBRIC_VERSION, Rubric, load_rubric
from .skills import REGISTRY, get_skill
from .throughput import max_in_flight, set_max_in_flight
from .types import (
    ALL_SKILLS,
    IMAGE_DIMENSIONS,
    LLM_SKILLS,
    METRIC_SKILLS,
    PROMPT_DIMENSIONS,
    ROUTES,
    SKILLS,
    STATUS_BLOCKED,
    STATUSES,
    Judge,
    JudgeResult,
    TargetInput,
    TaskInput,
    literal_texts,
    route_for_category,
    route_for_task,
)

__all__ = [
    "ALL_SKILLS",
    "IMAGE_DIMENSIONS",
    "LLM_SKILLS",
    "METRIC_SKILLS",
    "PROMPT_DIMENSIONS",
    "REGISTRY",
    "ROUTES",
    "RUBRIC",
    "RUBRIC_VERSION",
    "SKILLS",
    "STATUSES",
    "STATUS_BLOCKED",
    "EmbeddingJudge",
    "EnsembleJudge",
    "Exemplar",
    "Judge",
    "JudgeResult",
    "MemoryFormatError",
    "OpenAIJudge",
    "Rubric",
    "TargetInput",
    "TaskInput",
    "cache_key",
    "clip_score",
    "color_shift",
    "embed_exemplars",
    "get_skill",
    "image_embeddings",
    "literal_texts",
    "load_rubric",
    "make_judge",
    "max_in_flight",
    "parse_memory_records",
    "read_memory_dir",
    "read_memory_file",
    "retrieve",
    "route_for_category",
    "route_for_task",
    "run_route",
    "set_max_in_flight",
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
    models: Sequence[str] = (),
    repair_attempts: int = 2,
    route: str = "ateliereval",
    max_in_flight: int | None = None,
) -> Judge:
    """OpenAIJudge when a judge endpoint is configured (an EnsembleJudge of one OpenAIJudge
    per model when `models` names more than one), else the offline EmbeddingJudge.

    `models` takes precedence over `model`; max_in_flight sets the process-wide bound on
    calls in flight (None leaves it as it is).
    """
    if route not in ROUTES:
        raise ValueError(f"unknown route {route!r}; expected one of {ROUTES}")
    if max_in_flight is not None:
        set_max_in_flight(max_in_flight)
    names = list(dict.fromkeys(models)) or ([model] if model else [])
    if not base_url:
        if len(names) > 1:
            raise ValueError("an ensemble of models needs a judge endpoint (base_url)")
        return EmbeddingJudge(clip_model=clip_model, clip_pretrained=clip_pretrained, route=route)
    members = [
        OpenAIJudge(
            base_url=base_url,
            api_key=api_key,
            model=name,
            timeout=timeout,
            max_retries=max_retries,
            image_max_side=image_max_side,
            repair_attempts=repair_attempts,
            route=route,
            clip_model=clip_model,
            clip_pretrained=clip_pretrained,
        )
        for name in (names or [model])
    ]
    return members[0] if len(members) == 1 else EnsembleJudge(members)
