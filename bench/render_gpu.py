"""Render throughput of full-size SD-2.1- and SDXL-class pipelines: one call per seed against batched calls.

Builds the architectures written in bench/architectures/*.json (the public SD-Turbo / SD 2.1 and SDXL
base component sizes) with random weights, so it measures real throughput with no download. The images
are noise: the run is labelled "smoke (random weights)" and only its timing is meaningful. In one run,
per architecture:

  (a) the renderer as used today: evaluator.backends.renderer.PipelineRenderer with batch_size 1,
      one pipeline call per seed;
  (b) one pipeline call per chunk of --batch-sizes images, across prompts and seeds (a list of prompts
      and a list of CPU generators), as PipelineRenderer does with a backend's "batch_size" option;

and prints images/s, the ratio batched / per-seed, achieved TFLOP/s against the GPU's peak (FLOPs
counted with torch.utils.flop_counter.FlopCounterMode on a meta-device copy: UNet forwards, VAE decode
and text encoders per image), and whether the batched images are bit-identical to the per-seed ones.

    .venv/bin/python bench/render_gpu.py --arch all                  # on a GPU (H100: about 3 minutes)
    .venv/bin/python bench/render_gpu.py --tiny --device cpu         # CPU smoke: tiny shapes, 64 px, ~15 s

Attention is diffusers' default processor, AttnProcessor2_0, i.e. torch's scaled_dot_product_attention
(flash / memory-efficient kernels on a GPU). Run it by hand (a test runs only the --tiny CPU smoke).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluator.backends.config import MAX_IMAGES_PER_PROMPT, SMOKE_LABEL, BackendConfig  # noqa: E402
from evaluator.backends.renderer import PipelineRenderer  # noqa: E402
from evaluator.backends.smoke import build_clip_tokenizer  # noqa: E402

ARCH_DIR = ROOT / "bench" / "architectures"
ARCHS = ("sd21", "sdxl")
COMPONENTS = ("unet", "vae", "text_encoder", "text_encoder_2")
PROMPTS = (
    "a lighthouse on a cliff at dawn, watercolour",
    "a red fox asleep in fresh snow, photograph",
    "an isometric pixel-art bakery at night",
    "a bowl of lemons on a blue tablecloth, oil painting",
)
SEED_BASE = 1000
# Dense (no sparsity) 16-bit tensor-core peaks, TFLOP/s, from NVIDIA's data sheets; first match wins.
PEAK_TFLOPS_16BIT = (
    ("H200 NVL", 835.0),
    ("H200", 989.0),
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.0),
    ("A100", 312.0),
    ("L40S", 362.0),
    ("L4", 121.0),
)


def say(message: str) -> None:
    print(message, flush=True)


# --- architectures ----------------------------------------------------------------------------------


def load_arch(name: str, tiny: bool) -> dict[str, Any]:
    """The architecture file, with its 'tiny' overrides merged into each component's config when asked."""
    spec = json.loads((ARCH_DIR / f"{name}.json").read_text(encoding="utf-8"))
    if tiny:
        overrides = spec["tiny"]
        spec["size"] = overrides.get("size", spec["size"])
        spec["steps"] = overrides.get("steps", spec["steps"])
        for component in COMPONENTS:
            if component in spec:
                spec[component]["config"] = {**spec[component]["config"], **overrides.get(component, {})}
    check_arch(name, spec)
    return spec


def check_arch(name: str, spec: dict[str, Any]) -> None:
    """Catch an inconsistent edit of an architecture file before minutes of model building."""
    unet = spec["unet"]["config"]
    encoders = [spec[c]["config"] for c in ("text_encoder", "text_encoder_2") if c in spec]
    width = sum(e["hidden_size"] for e in encoders)  # SDXL concatenates both encoders' hidden states
    if unet["cross_attention_dim"] != width:
        raise SystemExit(f"{name}: unet cross_attention_dim {unet['cross_attention_dim']} != text encoder width {width}")
    if unet.get("addition_embed_type") == "text_time":
        wanted = encoders[-1]["projection_dim"] + 6 * unet["addition_time_embed_dim"]  # pooled text + 6 size/crop ids
        if unet["projection_class_embeddings_input_dim"] != wanted:
            raise SystemExit(f"{name}: unet projection_class_embeddings_input_dim must be {wanted}")


def build_module(entry: dict[str, Any]) -> Any:
    import diffusers
    import transformers

    if entry["class"].startswith("CLIPText"):
        return getattr(transformers, entry["class"])(transformers.CLIPTextConfig(**entry["config"]))
    return getattr(diffusers, entry["class"])(**entry["config"])


def build_modules(spec: dict[str, Any], device: str, dtype: Any = None) -> dict[str, Any]:
    """Every network of the architecture with random weights (seed 0), created directly on `device` in `dtype`.

    Created in the target dtype (torch's default dtype while building, as transformers does for
    torch_dtype=) rather than cast afterwards: SDXL's UNet in float32 alone would take 10 GiB.
    """
    import torch

    torch.manual_seed(0)
    modules = {}
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype or torch.float32)
    try:
        with torch.device(device):
            for component in COMPONENTS:
                if component in spec:
                    modules[component] = build_module(spec[component]).eval().requires_grad_(False)
    finally:
        torch.set_default_dtype(previous)
    return modules


@functools.cache
def clip_tokenizer() -> Any:
    return build_clip_tokenizer()  # the real CLIP BPE (open_clip's bundled file), as the smoke backend uses


def build_pipeline(spec: dict[str, Any], device: str, dtype: Any) -> Any:
    import diffusers

    modules = build_modules(spec, device, dtype)
    scheduler = getattr(diffusers, spec["scheduler"]["class"])(**spec["scheduler"]["config"])
    if spec["pipeline"] == "StableDiffusionXLPipeline":
        pipeline = diffusers.StableDiffusionXLPipeline(
            **modules,
            tokenizer=clip_tokenizer(),
            tokenizer_2=clip_tokenizer(),
            scheduler=scheduler,
            force_zeros_for_empty_prompt=True,
            add_watermarker=False,
        )
    else:
        pipeline = diffusers.StableDiffusionPipeline(
            **modules,
            tokenizer=clip_tokenizer(),
            scheduler=scheduler,
            safety_checker=None,
            feature_extractor=None,
            requires_safety_checker=False,
        )
    pipeline.set_progress_bar_config(disable=True)
    return pipeline


def flops_per_image(spec: dict[str, Any], size: int, steps: int, cfg: bool) -> dict[str, float]:
    """FLOPs of one image, counted on a meta-device copy (shapes only: no memory, any machine).

    On meta, scaled_dot_product_attention runs as its math decomposition, so attention is counted
    as the matmuls the fused kernels perform. Elementwise ops and norms are not counted (small).
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    modules = build_modules(spec, "meta")
    unet, vae = modules["unet"], modules["vae"]
    latent = size // 2 ** (len(vae.config.block_out_channels) - 1)
    meta = {"device": "meta"}
    sample = torch.zeros(1, unet.config.in_channels, latent, latent, **meta)
    context = torch.zeros(1, 77, unet.config.cross_attention_dim, **meta)
    extra = {}
    if unet.config.addition_embed_type == "text_time":
        pooled = modules["text_encoder_2"].config.projection_dim
        extra["added_cond_kwargs"] = {"text_embeds": torch.zeros(1, pooled, **meta), "time_ids": torch.zeros(1, 6, **meta)}

    def count(run) -> float:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            run()
        return float(counter.get_total_flops())

    one_unet = count(lambda: unet(sample, torch.tensor([999], **meta), context, **extra))
    vae_decode = count(lambda: vae.decode(torch.zeros(1, vae.config.latent_channels, latent, latent, **meta)))
    ids = torch.zeros(1, 77, dtype=torch.long, **meta)
    text = sum(count(lambda m=m: m(ids)) for k, m in modules.items() if k.startswith("text_encoder"))
    unet_total = one_unet * steps * (2 if cfg else 1)  # classifier-free guidance doubles the UNet batch
    return {"unet": unet_total, "vae": vae_decode, "text": text, "total": unet_total + vae_decode + text}


# --- timing -----------------------------------------------------------------------------------------


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(device: str, repeats: int, run) -> tuple[float, list]:
    """Best wall time of `repeats` runs, and the last run's images."""
    best, images = float("inf"), []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        images = run()
        synchronize(device)
        best = min(best, time.perf_counter() - start)
    return best, images


def per_seed(renderer: PipelineRenderer, jobs: list[tuple[str, int]]) -> list:
    """What a render job does today: render(prompt, seeds) per prompt, one pipeline call per seed."""
    by_prompt: dict[str, list[int]] = {}
    for index, (prompt, _) in enumerate(jobs):
        by_prompt.setdefault(prompt, []).append(index)
    images: list = [None] * len(jobs)
    for prompt, indexes in by_prompt.items():
        for index, image in zip(indexes, renderer.render(prompt, [jobs[i][1] for i in indexes]), strict=True):
            images[index] = image
    return images


def batched(pipeline: Any, config: BackendConfig, jobs: list[tuple[str, int]], batch: int) -> list:
    """One pipeline call per `batch` jobs: a list of prompts and one CPU generator per seed."""
    import torch

    images = []
    for start in range(0, len(jobs), batch):
        chunk = jobs[start : start + batch]
        output = pipeline(
            prompt=[prompt for prompt, _ in chunk],
            num_inference_steps=config.steps,
            guidance_scale=config.guidance,
            width=config.width,
            height=config.height,
            output_type="pil",
            generator=[torch.Generator("cpu").manual_seed(seed) for _, seed in chunk],
        )
        images += [image.convert("RGB") for image in output.images]
    return images


def compare(reference: list, images: list) -> tuple[int, int]:
    """(images bit-identical to the reference, max absolute 8-bit pixel difference)."""
    import numpy as np

    same = sum(a.tobytes() == b.tobytes() for a, b in zip(reference, images, strict=True))
    worst = max(int(np.abs(np.asarray(a, np.int16) - np.asarray(b, np.int16)).max()) for a, b in zip(reference, images, strict=True))
    return same, worst


def peak_tflops(device: str, dtype_name: str, override: float | None) -> tuple[float | None, str]:
    import torch

    if override:
        return override, "--peak-tflops"
    if not device.startswith("cuda"):
        return None, "n/a on the CPU"
    name = torch.cuda.get_device_name()
    if dtype_name == "float32":
        return None, f"n/a: {name}, the table holds 16-bit tensor-core peaks (pass --peak-tflops)"
    for key, value in PEAK_TFLOPS_16BIT:
        if key in name:
            return value, f"{name}, dense 16-bit"
    return None, f"n/a: {name} is not in the table (pass --peak-tflops)"


# --- one architecture -------------------------------------------------------------------------------


def bench_arch(name: str, args: argparse.Namespace, device: str, dtype_name: str) -> list[dict[str, Any]]:
    import torch

    dtype = getattr(torch, dtype_name)
    spec = load_arch(name, args.tiny)
    size = args.size or spec["size"]
    steps = args.steps or spec["steps"]
    guidance = spec["guidance"] if args.guidance is None else args.guidance
    cfg = guidance > 1.0  # diffusers runs classifier-free guidance only above 1
    shape = "tiny" if args.tiny else "full-size"
    say(f"\n== {name}: {shape} {spec['pipeline']}, {size}x{size}, {steps} step(s), guidance {guidance}, {dtype_name}, {device}")

    started = time.perf_counter()
    pipeline = build_pipeline(spec, device, dtype)
    params = {
        k: sum(p.numel() for p in getattr(pipeline, k).parameters()) / 1e6 for k in COMPONENTS if getattr(pipeline, k, None) is not None
    }
    say(f"   built with random weights in {time.perf_counter() - started:.1f} s: " + ", ".join(f"{k} {v:,.1f}M" for k, v in params.items()))
    processors = sorted({type(p).__name__ for p in pipeline.unet.attn_processors.values()})
    say(f"   attention: {', '.join(processors)} (torch scaled_dot_product_attention, diffusers' default)")
    if spec["pipeline"] == "StableDiffusionXLPipeline" and dtype_name == "float16" and pipeline.vae.config.force_upcast:
        say("   VAE decodes in float32 (force_upcast, as SDXL's own VAE config): what sdxl-base in float16 does today")
    if args.vae_slicing:
        pipeline.vae.enable_slicing()
        say("   VAE slicing on (decodes one image at a time)")

    flops = flops_per_image(spec, size, steps, cfg)
    say(
        f"   FLOPs per image: {flops['total'] / 1e12:.4g} T (UNet {flops['unet'] / 1e12:.4g} T over {steps} step(s){' with CFG' if cfg else ''}, "
        f"VAE decode {flops['vae'] / 1e12:.4g} T, text {flops['text'] / 1e12:.3g} T)"
    )
    if args.compile:
        pipeline.unet.compile(dynamic=False)
        say("   torch.compile(unet): each new batch shape compiles during its warm-up (not timed)")

    config = BackendConfig(
        name=f"bench-{name}",
        model=f"bench/architectures/{name}.json",
        pipeline=spec["pipeline"],
        steps=steps,
        guidance=guidance,
        width=size,
        height=size,
        scheduler=None,
        dtype=dtype_name,
        images_per_prompt=min(args.images, MAX_IMAGES_PER_PROMPT),
        seed_policy=f"fixed:{SEED_BASE}",
        label=f"{name} {shape} - {SMOKE_LABEL}",
        device=device,
    )
    renderer = PipelineRenderer(config, pipeline, device)
    jobs = [(PROMPTS[i % len(PROMPTS)], SEED_BASE + i) for i in range(args.images)]
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()

    rows = []

    def row(mode: str, batch: int, seconds: float, images: list, reference: list | None) -> dict[str, Any]:
        same, worst = compare(reference, images) if reference is not None else (len(images), 0)
        rate = len(images) / seconds
        result = {
            "arch": name,
            "mode": mode,
            "batch": batch,
            "images": len(images),
            "seconds": seconds,
            "rate": rate,
            "tflops": flops["total"] * rate / 1e12,
            "identical": same,
            "max_diff": worst,
        }
        rows.append(result)
        return result

    started = time.perf_counter()
    say("   warm-up: renderer, one call per seed ...")
    renderer.render(jobs[0][0], [jobs[0][1]])
    say(f"   warm-up done in {time.perf_counter() - started:.1f} s; timing {args.images} image(s), one call per seed ...")
    seconds, reference = timed(device, args.repeats, lambda: per_seed(renderer, jobs))  # noqa: F821 - deleted below, after the lambda has run
    say(f"   per-seed: {seconds:.3f} s, {args.images / seconds:.3g} images/s")
    row("per-seed (renderer today)", 1, seconds, reference, None)

    for batch in args.batch_sizes:
        started = time.perf_counter()
        batched(pipeline, config, jobs[:batch], batch)  # warm-up at this batch shape (compiles with --compile)
        say(f"   batch {batch}: warm-up {time.perf_counter() - started:.1f} s; timing {args.images} image(s) ...")
        seconds, images = timed(device, args.repeats, lambda b=batch: batched(pipeline, config, jobs, b))  # noqa: F821 - as above
        result = row("batched", batch, seconds, images, reference)
        say(
            f"   batch {batch}: {seconds:.3f} s, {result['rate']:.3g} images/s, identical to per-seed {result['identical']} of {len(images)}, max |diff| {result['max_diff']}"
        )

    if device.startswith("cuda"):
        say(f"   peak GPU memory: {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
    del renderer, pipeline
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return rows


# --- main -------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", choices=(*ARCHS, "all"), default="all")
    parser.add_argument("--size", type=int, default=None, help="pixels per side (default per arch: 512 / 1024; 64 with --tiny)")
    parser.add_argument(
        "--steps", type=int, default=None, help="denoising steps (default per arch: 1 as sd-turbo / 30 as sdxl-base; 1 / 4 with --tiny)"
    )
    parser.add_argument("--guidance", type=float, default=None, help="guidance scale (default per arch: 0 / 5; > 1 runs CFG)")
    parser.add_argument("--images", type=int, default=8, help="images per measurement (prompts x seeds)")
    parser.add_argument("--batch-sizes", default="1,4,8", help="comma-separated batch sizes for the batched calls")
    parser.add_argument("--repeats", type=int, default=1, help="time each measurement this many times, keep the best")
    parser.add_argument(
        "--dtype", choices=("float16", "bfloat16", "float32"), default=None, help="default float16 on a GPU, float32 on the CPU"
    )
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--compile", action="store_true", help="torch.compile the UNet")
    parser.add_argument("--tiny", action="store_true", help="shrunken architectures at 64 px (CPU smoke)")
    parser.add_argument("--full", action="store_true", help="full-size architectures even on the CPU (very slow)")
    parser.add_argument("--vae-slicing", action="store_true", help="decode one image at a time (for small GPUs)")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the device's peak TFLOP/s, overriding the table")
    args = parser.parse_args(argv)
    try:
        args.batch_sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    except ValueError:
        parser.error(f"--batch-sizes must be comma-separated integers, got {args.batch_sizes!r}")
    if not args.batch_sizes or min(args.batch_sizes) < 1:
        parser.error("--batch-sizes needs integers >= 1")
    if args.images < 1 or args.repeats < 1 or (args.steps is not None and args.steps < 1):
        parser.error("--images, --repeats and --steps must be >= 1")
    if args.size is not None and (args.size < 8 or args.size % 8):
        parser.error("--size must be a multiple of 8")
    return args


def summary(rows: list[dict[str, Any]], peak: float | None, peak_note: str) -> None:
    say(f"\nSummary - {SMOKE_LABEL}: images are noise, only timing is meaningful")
    say(f"peak: {f'{peak:g} TFLOP/s' if peak else 'n/a'} ({peak_note})")
    header = f"{'arch':<5} {'mode':<26} {'batch':>5} {'images':>6} {'seconds':>8} {'images/s':>9} {'x per-seed':>10} {'TFLOP/s':>8} {'% peak':>7} {'identical':>9} {'max|diff|':>9}"
    say(header)
    say("-" * len(header))
    for r in rows:
        base = next(b for b in rows if b["arch"] == r["arch"] and b["mode"].startswith("per-seed"))
        share = f"{100 * r['tflops'] / peak:.1f}" if peak else "n/a"
        say(
            f"{r['arch']:<5} {r['mode']:<26} {r['batch']:>5} {r['images']:>6} {r['seconds']:>8.3f} {r['rate']:>9.3g} {r['rate'] / base['rate']:>10.2f} "
            f"{r['tflops']:>8.3g} {share:>7} {r['identical']:>4} of {r['images']:<2} {r['max_diff']:>9}"
        )
    batched_rows = [r for r in rows if r["mode"] == "batched"]
    same = sum(r["identical"] for r in batched_rows)
    total = sum(r["images"] for r in batched_rows)
    worst = max((r["max_diff"] for r in batched_rows), default=0)
    say(f"batched images bit-identical to per-seed images: {same} of {total} (max abs pixel difference {worst})")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import numpy as np
    import torch

    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is available")
    if device == "cpu" and not args.tiny and not args.full:
        args.tiny = True
        say("device is cpu: switching to --tiny (full-size architectures need a GPU; --full forces them)")
    dtype_name = args.dtype or ("float16" if device == "cuda" else "float32")
    if device == "cpu":
        # As the smoke backend does: random-weight nets produce subnormal floats, which x86 handles in slow
        # microcode; flushing them is a per-thread flag, so it goes with one thread (tiny models gain
        # nothing from more, and on a shared machine threads spinning against other processes add noise).
        torch.set_flush_denormal(True)
        torch.set_num_threads(1)
    peak, peak_note = peak_tflops(device, dtype_name, args.peak_tflops)
    where = torch.cuda.get_device_name() if device == "cuda" else f"CPU, {torch.get_num_threads()} thread(s)"
    say(f"render_gpu - {SMOKE_LABEL}: images are noise, only timing is meaningful")
    say(
        f"device {device} ({where}); torch {torch.__version__}; {dtype_name}; batch sizes {args.batch_sizes}; {args.images} image(s) per measurement"
        + ("; torch.compile" if args.compile else "")
    )
    warnings.filterwarnings("ignore", message=".*upcast_vae.*")  # SDXL's fp32 VAE decode warns on every call
    # ModelMixin.to(dtype=...) warns about "modules that should be kept in float32: []" on every cast (an
    # empty list), here and in SDXL's per-call VAE upcast; nothing is kept in float32 in these models.
    logging.getLogger("diffusers.models.modeling_utils").addFilter(lambda record: "should be kept in float32" not in record.getMessage())
    rows = []
    # Random weights can overflow to NaN in 16-bit; casting those to 8-bit pixels warns, harmlessly here.
    with np.errstate(invalid="ignore", over="ignore"):
        for name in ARCHS if args.arch == "all" else (args.arch,):
            rows += bench_arch(name, args, device, dtype_name)
    summary(rows, peak, peak_note)


if __name__ == "__main__":
    main()
