"""The Renderer interface and the render loop shared by every diffusers pipeline.

torch is imported inside functions only: importing this module (which the
package __init__ does, for the Renderer type) must not pull torch into the web
process.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from evaluator.backends.config import BackendConfig, BackendError

if TYPE_CHECKING:
    from PIL import Image

_MAX_SEED = 2**64 - 1  # torch.Generator.manual_seed accepts unsigned 64-bit seeds


@runtime_checkable
class Renderer(Protocol):
    """Turns a prompt into one RGB image per seed, at the config's size."""

    config: BackendConfig

    def render(self, prompt: str, seeds: Sequence[int]) -> list[Image.Image]: ...


def resolve_device(device: str) -> str:
    """Resolve "auto" to the GPU when there is one; any other device is taken as given."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _check_seeds(seeds: Sequence[int]) -> list[int]:
    checked = list(seeds)
    for seed in checked:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _MAX_SEED:
            raise BackendError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    return checked


class PipelineRenderer:
    """Renders with a loaded diffusers pipeline, one pipeline call per seed.

    One call per seed (not a batch) so image k is bit-identical whatever else
    is rendered with it: batched kernels may round differently, and a
    benchmark's published images must be reproducible one by one.
    """

    def __init__(self, config: BackendConfig, pipeline: Any, device: str) -> None:
        self.config = config
        self.pipeline = pipeline
        self.device = device
        # Pipelines keep per-call state (scheduler timesteps): one render at a time.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config.name!r}, device={self.device!r})"

    def render(self, prompt: str, seeds: Sequence[int]) -> list[Image.Image]:
        if not isinstance(prompt, str):
            raise BackendError(f"backend {self.config.name!r}: prompt must be a string, got {prompt!r}")
        checked = _check_seeds(seeds)
        with self._lock:
            return [self._render_one(prompt, seed) for seed in checked]

    def _render_one(self, prompt: str, seed: int) -> Image.Image:
        import torch

        # A CPU generator gives the same starting noise on any hardware;
        # diffusers moves the noise to the pipeline's device.
        generator = torch.Generator("cpu").manual_seed(seed)
        config = self.config
        try:
            output = self.pipeline(
                prompt=prompt,
                num_inference_steps=config.steps,
                guidance_scale=config.guidance,
                width=config.width,
                height=config.height,
                generator=generator,
                output_type="pil",
            )
        except Exception as exc:
            raise BackendError(f"backend {config.name!r}: rendering failed: {type(exc).__name__}: {exc}") from exc
        image = output.images[0].convert("RGB")
        if image.size != (config.width, config.height):
            raise BackendError(
                f"backend {config.name!r}: pipeline returned {image.size[0]}x{image.size[1]}, "
                f"expected {config.width}x{config.height}; pick a size this pipeline supports"
            )
        return image


def apply_scheduler(pipeline: Any, config: BackendConfig) -> None:
    """Swap the pipeline's scheduler for the configured class, keeping its settings."""
    if config.scheduler is None:
        return
    import diffusers

    scheduler_cls = getattr(diffusers, config.scheduler, None)
    if not (isinstance(scheduler_cls, type) and issubclass(scheduler_cls, diffusers.SchedulerMixin)):
        raise BackendError(
            f"backend {config.name!r}: field 'scheduler': {config.scheduler!r} is not a diffusers "
            "scheduler class (e.g. EulerDiscreteScheduler, DPMSolverMultistepScheduler)"
        )
    # from_config keeps the model's betas/prediction type; only the sampler changes.
    try:
        pipeline.scheduler = scheduler_cls.from_config(pipeline.scheduler.config)
    except Exception as exc:
        raise BackendError(
            f"backend {config.name!r}: field 'scheduler': cannot build {config.scheduler} from this "
            f"pipeline's scheduler config: {type(exc).__name__}: {exc}"
        ) from exc
