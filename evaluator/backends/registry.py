"""Process-wide cache of loaded renderers.

A worker keeps its pipelines across jobs: loading SDXL takes far longer than
rendering with it. The cache is keyed by BackendConfig.version_hash(), so an
edited config (new steps, scheduler...) gets a fresh renderer while a relabel
does not. It is a small LRU because several big pipelines do not fit in one
GPU's memory together.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections import OrderedDict

from evaluator.backends.config import BackendConfig, BackendError
from evaluator.backends.renderer import Renderer

MAX_CACHED_RENDERERS = 2

_cache: OrderedDict[str, Renderer] = OrderedDict()
_lock = threading.Lock()


def _load(config: BackendConfig) -> Renderer:
    if config.is_smoke:
        from evaluator.backends.smoke import load_smoke_renderer

        return load_smoke_renderer(config)
    from evaluator.backends.diffusers_backend import load_diffusers_renderer

    return load_diffusers_renderer(config)


def _release_memory() -> None:
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def get_renderer(config: BackendConfig) -> Renderer:
    """The renderer for config, loaded once per process; BackendError if it can't load.

    Configs that differ only in label/enabled share a renderer, whose .config
    is the first one loaded: read presentation fields from your own config.
    """
    key = config.version_hash()
    # Loading under the lock: two threads must not load the same 10 GB model twice.
    with _lock:
        renderer = _cache.get(key)
        if renderer is not None:
            _cache.move_to_end(key)
            return renderer
        try:
            renderer = _load(config)
        except BackendError:
            raise
        except Exception as exc:  # an import or library failure is still a backend problem
            raise BackendError(f"backend {config.name!r}: cannot load: {type(exc).__name__}: {exc}") from exc
        _cache[key] = renderer
        evicted = False
        while len(_cache) > MAX_CACHED_RENDERERS:
            _cache.popitem(last=False)
            evicted = True
    if evicted:
        _release_memory()
    return renderer


def clear_renderer_cache() -> None:
    """Forget every loaded renderer (tests, or freeing memory between batches)."""
    with _lock:
        _cache.clear()
    _release_memory()
