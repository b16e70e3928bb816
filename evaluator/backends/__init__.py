"""Rendering backends: configs as data, a diffusers loader and a tiny smoke pipeline.

Importing this package is cheap and never imports torch or diffusers, so the
web process can read and validate config/backends.json; pipelines are loaded
only when a worker calls get_renderer().
"""

from evaluator.backends.config import SMOKE_LABEL, BackendConfig, BackendError, derive_seed, load_backend_configs
from evaluator.backends.registry import clear_renderer_cache, get_renderer
from evaluator.backends.renderer import Renderer

__all__ = [
    "SMOKE_LABEL",
    "BackendConfig",
    "BackendError",
    "Renderer",
    "clear_renderer_cache",
    "derive_seed",
    "get_renderer",
    "load_backend_configs",
]
