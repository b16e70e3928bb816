"""A tiny random-weight StableDiffusionPipeline, built locally with no download.

It runs the real diffusers code path (tokenizer -> text encoder -> UNet
denoising loop -> VAE decode) in well under a second on a CPU, so the whole
site and its workers can be exercised end to end without model weights. Its
images are noise-like and meaningless: every result from it is labelled
SMOKE_LABEL.

The UNet and text encoder sizes follow diffusers' own pipeline tests (get_dummy_components); the VAE scales
by 8, as Stable Diffusion's does.
Changing anything here changes the images: bump config.SMOKE_REVISION.
"""

from __future__ import annotations

import functools
import gzip
import json
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator.backends.config import BackendConfig, BackendError
from evaluator.backends.renderer import PipelineRenderer, apply_scheduler

if TYPE_CHECKING:
    from PIL import Image
    from transformers import CLIPTokenizer

SMOKE_WEIGHTS_SEED = 0
CLIP_CONTEXT_LENGTH = 77
# CLIP's BPE file holds 49152 lines; OpenAI's tokenizer uses lines [1, 48895):
# 48894 merges -> 256 bytes + 256 "</w>" forms + 48894 merges + 2 specials = 49408.
_CLIP_MERGES_END = 49152 - 256 - 2 + 1
CLIP_VOCAB_SIZE = 49408
_START, _END = "<|startoftext|>", "<|endoftext|>"


def _bpe_file() -> Path:
    # open_clip ships OpenAI's BPE table; using it avoids any hub download.
    import open_clip

    path = Path(open_clip.__file__).with_name("bpe_simple_vocab_16e6.txt.gz")
    if not path.is_file():
        raise BackendError(f"smoke backend: CLIP BPE file not found at {path} (is open_clip_torch installed?)")
    return path


@functools.cache
def _clip_vocab_and_merges() -> tuple[dict[str, int], tuple[tuple[str, str], ...]]:
    """The CLIP vocabulary, built exactly as OpenAI's clip/simple_tokenizer.py does."""
    from open_clip.tokenizer import bytes_to_unicode

    lines = gzip.decompress(_bpe_file().read_bytes()).decode("utf-8").split("\n")
    merges = tuple((left, right) for left, right in (line.split() for line in lines[1:_CLIP_MERGES_END]))
    byte_chars = list(bytes_to_unicode().values())
    tokens = byte_chars + [char + "</w>" for char in byte_chars]
    tokens += ["".join(pair) for pair in merges] + [_START, _END]
    return {token: index for index, token in enumerate(tokens)}, merges


def build_clip_tokenizer() -> CLIPTokenizer:
    """A real transformers CLIPTokenizer (same ids as openai/clip-vit-large-patch14).

    Written as vocab.json + merges.txt and loaded with from_pretrained: the
    files-on-disk form every transformers version reads (4.x's slow tokenizer
    has no in-memory constructor; 5.x also accepts CLIPTokenizer(vocab=, merges=)).
    """
    from transformers import CLIPTokenizer

    vocab, merges = _clip_vocab_and_merges()
    with tempfile.TemporaryDirectory(prefix="smoke-clip-tokenizer-") as directory:
        (Path(directory) / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
        merges_text = "#version: 0.2\n" + "".join(f"{left} {right}\n" for left, right in merges)
        (Path(directory) / "merges.txt").write_text(merges_text, encoding="utf-8")
        return CLIPTokenizer.from_pretrained(directory, model_max_length=CLIP_CONTEXT_LENGTH)


def _build_components() -> dict[str, Any]:
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    unet = UNet2DConditionModel(
        block_out_channels=(32, 64),
        layers_per_block=2,
        sample_size=8,  # latents of a 64 px image (the VAE below scales by 8)
        in_channels=4,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
    )
    # Four blocks, so latents are an eighth of the image side as in Stable Diffusion (a 64 px image: 8x8 latents).
    # diffusers' test VAE has two blocks (latents at half the side): the UNet then ran at 32x32, 6-7x the cost of a
    # render for no gain in what the smoke backend exercises (SMOKE_REVISION 1).
    vae = AutoencoderKL(
        block_out_channels=[32, 32, 64, 64],
        in_channels=3,
        out_channels=3,
        down_block_types=["DownEncoderBlock2D"] * 4,
        up_block_types=["UpDecoderBlock2D"] * 4,
        latent_channels=4,
    )
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=5,
            num_attention_heads=4,
            projection_dim=32,
            # Must cover the real tokenizer's ids, and its special tokens.
            vocab_size=CLIP_VOCAB_SIZE,
            max_position_embeddings=CLIP_CONTEXT_LENGTH,
            bos_token_id=CLIP_VOCAB_SIZE - 2,
            eos_token_id=CLIP_VOCAB_SIZE - 1,
            pad_token_id=CLIP_VOCAB_SIZE - 1,
            layer_norm_eps=1e-5,
        )
    )
    # Stable Diffusion 1.x's own scheduler settings (steps_offset=1 as in its config).
    scheduler = DDIMScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False, set_alpha_to_one=False, steps_offset=1
    )
    return {"unet": unet, "vae": vae, "text_encoder": text_encoder, "scheduler": scheduler}


def build_smoke_pipeline() -> Any:
    """The tiny StableDiffusionPipeline, identical weights on every call and machine."""
    import torch
    from diffusers import StableDiffusionPipeline

    # fork_rng: seeding must not disturb the worker's global RNG state.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SMOKE_WEIGHTS_SEED)
        components = _build_components()
    pipeline = StableDiffusionPipeline(
        **components,
        tokenizer=build_clip_tokenizer(),
        # No safety checker: nothing to check in noise, and safety is judged later by AtelierJudge.
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipeline.to("cpu")  # components are built in float32 already
    pipeline.set_progress_bar_config(disable=True)
    return pipeline


_cpu_settings_lock = threading.Lock()


@contextmanager
def _tiny_model_cpu_settings() -> Iterator[None]:
    """One intra-op thread, subnormal floats flushed to zero, for one render.

    The model is too small to gain from threads, and on a busy machine (a web
    host, a shared CI box) OpenMP threads spinning against other processes
    made a 0.4 s render take 3-20 s. One thread also makes the smoke images
    independent of the machine's core count. Subnormals (which x86 handles in
    slow microcode) appear inside random-weight kernels and are invisible in
    8-bit output; the flag is per thread, which is why it goes with the single
    thread. Both settings are process-wide in torch, so they are restored.
    """
    import torch

    with _cpu_settings_lock:  # two smoke renderers must not interleave save/restore
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        flushing = torch.set_flush_denormal(True)
        try:
            yield
        finally:
            if flushing:  # no getter exists: restore torch's default (off)
                torch.set_flush_denormal(False)
            torch.set_num_threads(threads)


class SmokeRenderer(PipelineRenderer):
    """Renders with the tiny random-weight pipeline on the CPU (float32)."""

    def render(self, prompt: str, seeds: Sequence[int]) -> list[Image.Image]:
        with _tiny_model_cpu_settings():
            return super().render(prompt, seeds)


def load_smoke_renderer(config: BackendConfig) -> SmokeRenderer:
    if not config.is_smoke:
        raise BackendError(f"backend {config.name!r} is not a smoke backend")
    pipeline = build_smoke_pipeline()
    apply_scheduler(pipeline, config)
    # Always the CPU: smoke images are then bit-identical on web hosts and GPU workers.
    return SmokeRenderer(config, pipeline, device="cpu")
