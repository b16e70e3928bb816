"""Loading real diffusers pipelines (HF hub ids or local directories).

Weights are never expected to be downloadable from where this runs: a missing
model fails fast with a BackendError that says how to provide the weights.
"""

from __future__ import annotations

import inspect
import logging
import os
import re
from pathlib import Path
from typing import Any

from evaluator.backends.config import BackendConfig, BackendError
from evaluator.backends.renderer import PipelineRenderer, apply_scheduler, resolve_device

logger = logging.getLogger(__name__)

# "name" or "org/name", as the hub spells repository ids; anything else is a path.
_HUB_ID_RE = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
_TRUE_VALUES = {"1", "on", "yes", "true"}


def _hub_offline() -> bool:
    # Read at call time on purpose: huggingface_hub and diffusers read
    # HF_HUB_OFFLINE once, at import, so a later change would be ignored.
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE_VALUES


def _hub_cache_dir() -> str | None:
    # Same reason as _hub_offline: honour HF_HUB_CACHE / HF_HOME as they are now.
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return str(Path(os.environ["HF_HOME"]) / "hub")
    return None


def how_to_provide_weights(config: BackendConfig) -> str:
    """The fix, in words a deployer can act on; no weights are ever fetched at render time."""
    if _HUB_ID_RE.fullmatch(config.model) is not None:
        source, hub_id = "hub model", config.model
    else:
        source, hub_id = "local directory", "<hub model id>"
    return (
        f"To provide the weights of {source} {config.model!r}: on a machine with Hugging Face access, run "
        f"`{config.pipeline}.from_pretrained({hub_id!r}).save_pretrained('/models/{config.name}')` "
        f"(or `hf download {hub_id}` into that machine's HF_HOME cache) and copy the result here; then "
        f'set "model" in config/backends.json to that local directory (or point HF_HOME at the copied cache).'
    )


def _local_directory(config: BackendConfig) -> Path | None:
    """The model's local directory, None for a hub id; BackendError for a bad path."""
    path = Path(config.model).expanduser()
    looks_like_hub_id = _HUB_ID_RE.fullmatch(config.model) is not None
    if looks_like_hub_id and not path.exists():
        return None
    if not path.is_dir():
        raise BackendError(
            f"backend {config.name!r}: model {config.model!r} is not an existing directory "
            f"(expected a pipeline saved with save_pretrained). {how_to_provide_weights(config)}"
        )
    if not (path / "model_index.json").is_file():
        raise BackendError(
            f"backend {config.name!r}: model directory {config.model!r} has no model_index.json, so it is "
            f"not a diffusers pipeline. {how_to_provide_weights(config)}"
        )
    return path


def _pipeline_class(config: BackendConfig) -> Any:
    import diffusers

    cls = getattr(diffusers, config.pipeline, None)
    if not (isinstance(cls, type) and hasattr(cls, "from_pretrained")):
        raise BackendError(
            f"backend {config.name!r}: field 'pipeline': {config.pipeline!r} is not a diffusers pipeline "
            "class (e.g. AutoPipelineForText2Image, StableDiffusionXLPipeline, FluxPipeline)"
        )
    return cls


def _torch_dtype(config: BackendConfig, device: str) -> Any:
    import torch

    if config.dtype == "float16" and device == "cpu":
        # Half-precision kernels are missing or very slow on CPUs; GPU configs
        # still run on a CPU-only machine, only slower.
        logger.warning("backend %r: float16 is not usable on the CPU, loading in float32", config.name)
        return torch.float32
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[config.dtype]


def _dtype_keyword() -> str:
    # diffusers renamed from_pretrained's torch_dtype to dtype (huggingface/diffusers#14205);
    # older releases only know torch_dtype. _resolve_dtype arrived with the rename.
    try:
        from diffusers.utils.deprecation_utils import _resolve_dtype  # noqa: F401
    except ImportError:
        return "torch_dtype"
    return "dtype"


def _load_kwargs(config: BackendConfig, pipeline_cls: Any, dtype: Any, local: bool) -> dict[str, Any]:
    kwargs: dict[str, Any] = {_dtype_keyword(): dtype, "local_files_only": local or _hub_offline()}
    cache_dir = _hub_cache_dir()
    if cache_dir and not local:
        kwargs["cache_dir"] = cache_dir
    # Safety judging is a later AtelierJudge skill, not the renderer's: skip
    # the checker (and its ~1 GB of weights) where this pipeline class has one.
    if "safety_checker" in inspect.signature(pipeline_cls.__init__).parameters:
        kwargs.update(safety_checker=None, requires_safety_checker=False)
    return kwargs


def _load_error(config: BackendConfig, exc: Exception) -> BackendError:
    reason = f"{type(exc).__name__}: {str(exc).strip()[:400]}"
    if isinstance(exc, OSError):  # diffusers/huggingface_hub report missing files as OSError
        offline = " (offline: HF_HUB_OFFLINE is set)" if _hub_offline() else ""
        return BackendError(
            f"backend {config.name!r}: weights for model {config.model!r} are not available here{offline} "
            f"[{reason}]. {how_to_provide_weights(config)}"
        )
    return BackendError(f"backend {config.name!r}: cannot load model {config.model!r} with {config.pipeline}: {reason}")


def _drop_safety_checker(pipeline: Any) -> None:
    # Auto* pipeline classes only learn the real class while loading, so a
    # checker may have been loaded anyway; switch it off (see _load_kwargs).
    if getattr(pipeline, "safety_checker", None) is not None:
        pipeline.safety_checker = None


def load_diffusers_renderer(config: BackendConfig) -> PipelineRenderer:
    """Load config.model with config.pipeline, apply scheduler/dtype/device."""
    pipeline_cls = _pipeline_class(config)
    local_dir = _local_directory(config)
    device = resolve_device(config.device)
    dtype = _torch_dtype(config, device)
    source = str(local_dir) if local_dir is not None else config.model
    kwargs = _load_kwargs(config, pipeline_cls, dtype, local=local_dir is not None)
    try:
        pipeline = pipeline_cls.from_pretrained(source, **kwargs)
    except Exception as exc:
        raise _load_error(config, exc) from exc
    _drop_safety_checker(pipeline)
    apply_scheduler(pipeline, config)
    try:
        pipeline.to(device)
    except Exception as exc:
        raise BackendError(f"backend {config.name!r}: cannot move the pipeline to {device!r}: {exc}") from exc
    pipeline.set_progress_bar_config(disable=True)
    return PipelineRenderer(config, pipeline, device)
