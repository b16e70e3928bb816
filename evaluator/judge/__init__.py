"""AtelierJudge: scores a prompter's prompt and the images rendered from it.

Three implementations share the Judge protocol:
  * OpenAIJudge: the rubric judge, served by any OpenAI-compatible endpoint;
  * EmbeddingJudge: an offline checklist-only fallback (MiniLM + CLIP);
  * EnsembleJudge: several judges combined (strategies declared per skill).
Skills are registered by name in skills.REGISTRY, each declaring its side, kind, scale
and ensemble strategy; routes (routes.ROUTES) pick the skills per task; the safety gate
(gate.py) decides what a block stops; the rubric is a versioned data file (rubrics/v2.json);
spec.JudgeSpec fingerprints everything that decides an answer. make_judge() picks an
implementation from a config.JudgeConfig.

Names are loaded lazily (PEP 562), so `import evaluator.judge.config` from settings, or
`from evaluator.judge import TaskInput` in the web process, does not import the openai
client, numpy or torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    # types and vocabulary
    "Side": "types",
    "Kind": "types",
    "Status": "types",
    "TaskInput": "types",
    "TargetInput": "types",
    "JudgeResult": "types",
    "Judge": "protocol",
    "PROMPT_DIMENSIONS": "types",
    "IMAGE_DIMENSIONS": "types",
    "DIMENSIONS": "types",
    "literal_texts": "types",
    "quoted_strings": "types",
    # the registry, routes and gate
    "REGISTRY": "skills",
    "ALL_SKILLS": "skills",
    "get_skill": "skills",
    "skills_where": "skills",
    "memory_skill": "skills",
    "ROUTES": "routes",
    "ROUTE_NAMES": "config",
    "DEFAULT_ROUTE": "config",
    "OFFICIAL_ROUTE": "config",
    "route_skills": "routes",
    "route_for_task": "routes",
    "run_route": "routes",
    "Block": "gate",
    "block_of": "gate",
    "stops": "gate",
    "SCALES": "scales",
    "Scale": "scales",
    "scale_named": "scales",
    # the judges and their spec
    "OpenAIJudge": "openai_judge",
    "EmbeddingJudge": "embedding_judge",
    "EnsembleJudge": "ensemble",
    "make_judge": "factory",
    "JudgeSpec": "spec",
    "JudgeConfig": "config",
    "JudgeConfigError": "config",
    "clip_weights_identity": "spec",
    "RUBRIC": "rubrics",
    "RUBRIC_VERSION": "rubrics",
    "Rubric": "rubrics",
    "load_rubric": "rubrics",
    "cache_key": "cache",
    "max_in_flight": "throughput",
    "set_max_in_flight": "throughput",
    # memory and embeddings
    "Exemplar": "types",
    "MemoryFormatError": "memory",
    "embed_exemplars": "memory",
    "parse_memory_records": "memory",
    "read_memory_dir": "memory",
    "read_memory_file": "memory",
    "retrieve": "memory",
    "image_embeddings": "embedding_judge",
    "text_embeddings": "embedding_judge",
    "clip_score": "metric_skills",
    "color_shift": "metric_skills",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
