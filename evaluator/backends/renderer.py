"""The Renderer interface and the render loop shared by every diffusers pipeline.

torch is imported inside functions only: importing this module (which the
package __init__ does, for the Renderer type) must not pull torch into the web
process.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from evaluator.backends.config import BackendConfig, BackendError

if TYPE_CHECKING:
    from PIL import Image

_FITTED_KEPT = 32  # prompts whose fit a renderer remembers
_MAX_SEED = 2**64 - 1  # torch.Generator.manual_seed accepts unsigned 64-bit seeds


@runtime_checkable
class Renderer(Protocol):
    """Turns a prompt into one RGB image per seed, at the config's size."""

    config: BackendConfig

    def render(self, prompt: str, seeds: Sequence[int]) -> list[Image.Image]: ...

    def fit_prompt(self, prompt: str) -> tuple[str, str]:
        """(the prompt as the text encoder will read it, a note saying what was cut, or "")."""
        ...


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
    """Renders with a loaded diffusers pipeline, `config.batch_size` seeds per pipeline call.

    batch_size 1 (the default) is one call per seed, so image k is bit-identical
    whatever else is rendered with it: a benchmark's published images must be
    reproducible one by one. batch_size N > 1 renders the seeds in chunks of N,
    one call per chunk with one CPU generator per seed: the starting noise is
    the same, but batched kernels (cuBLAS/cuDNN picking other algorithms for
    another batch shape, fp16/bf16 accumulation order) may round differently, so
    image k can differ slightly from its one-by-one render, and with the size of
    the chunk it fell in (the last chunk may be smaller). That is why batch_size
    is part of the config's version hash. The trade: on a GPU a batch keeps the
    device busy (bench/render_gpu.py measures how much faster it is).
    """

    def __init__(self, config: BackendConfig, pipeline: Any, device: str) -> None:
        self.config = config
        self.pipeline = pipeline
        self.device = device
        # Pipelines keep per-call state (scheduler timesteps): one render at a time.
        self._lock = threading.Lock()
        # The last prompts' fits: a render job asks for the note, then render() fits the same prompt again (a long
        # prompt's fit is a binary search over tokenizer calls).
        self._fits = functools.lru_cache(maxsize=_FITTED_KEPT)(lambda prompt: self._fit(prompt))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config.name!r}, device={self.device!r})"

    def render(self, prompt: str, seeds: Sequence[int]) -> list[Image.Image]:
        if not isinstance(prompt, str):
            raise BackendError(f"backend {self.config.name!r}: prompt must be a string, got {prompt!r}")
        checked = _check_seeds(seeds)
        fitted, _ = self.fit_prompt(prompt)
        size = self.config.batch_size
        images: list[Image.Image] = []
        with self._lock:
            for start in range(0, len(checked), size):
                images += self._render_chunk(fitted, checked[start : start + size])
        return images

    def _tokenizers(self) -> list[Any]:
        return [t for t in (getattr(self.pipeline, "tokenizer", None), getattr(self.pipeline, "tokenizer_2", None)) if t is not None]

    def fit_prompt(self, prompt: str) -> tuple[str, str]:
        """Cut the prompt, at a word boundary, to what the pipeline's CLIP text encoders read (77 tokens).

        The pipeline would cut it anyway, after warning once per call; cutting it here, once,
        keeps the words whole and lets the caller record it. Pipelines whose encoders read
        different lengths (a T5 beside CLIP) get the prompt as it is.
        """
        return self._fits(prompt)

    def _fit(self, prompt: str) -> tuple[str, str]:
        limits = {int(t.model_max_length) for t in self._tokenizers()}
        if len(limits) != 1:
            return prompt, ""
        limit = limits.pop()
        count = self._token_count(prompt)
        if count <= limit:
            return prompt, ""
        words = prompt.split()
        low, high = 0, len(words)  # the most words that fit: binary search on the word count
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if self._token_count(" ".join(words[:middle])) <= limit else (low, middle - 1)
        kept = " ".join(words[:low])
        return kept, f"prompt cut to the {limit} tokens the text encoder reads ({count} given; {len(words) - low} word(s) dropped)"

    def _token_count(self, text: str) -> int:
        """Tokens with the start and end markers, by the longest-reading tokenizer (verbose=False: no length warning)."""
        return max(len(t(text, truncation=False, verbose=False)["input_ids"]) for t in self._tokenizers())

    def _render_chunk(self, prompt: str, seeds: list[int]) -> list[Image.Image]:
        """One pipeline call for these seeds: one prompt and generator per seed (a bare generator for one seed)."""
        import torch

        # A CPU generator gives the same starting noise on any hardware;
        # diffusers moves the noise to the pipeline's device.
        generators = [torch.Generator("cpu").manual_seed(seed) for seed in seeds]
        single = len(seeds) == 1  # exactly the call made before batch_size existed
        config = self.config
        try:
            output = self.pipeline(
                prompt=prompt if single else [prompt] * len(seeds),
                num_inference_steps=config.steps,
                guidance_scale=config.guidance,
                width=config.width,
                height=config.height,
                generator=generators[0] if single else generators,
                output_type="pil",
            )
        except Exception as exc:
            raise BackendError(f"backend {config.name!r}: rendering failed: {type(exc).__name__}: {exc}") from exc
        if len(output.images) != len(seeds):
            raise BackendError(f"backend {config.name!r}: pipeline returned {len(output.images)} images for {len(seeds)} seeds")
        images = [image.convert("RGB") for image in output.images]
        for image in images:
            if image.size != (config.width, config.height):
                raise BackendError(
                    f"backend {config.name!r}: pipeline returned {image.size[0]}x{image.size[1]}, "
                    f"expected {config.width}x{config.height}; pick a size this pipeline supports"
                )
        return images


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
