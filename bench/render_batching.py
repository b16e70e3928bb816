"""How much does rendering one pipeline call per seed cost against one batched call?

The renderer calls the pipeline once per seed so that image k is bit-identical however many
images are rendered with it (see evaluator/backends/renderer.py). This benchmark measures the
price of that choice on the configured backend: images per second both ways, the ratio, and
whether the batched images even match the per-seed ones.

    .venv/bin/python bench/render_batching.py [--backend smoke-sd] [--images 4] [--repeats 3]

Run it by hand (never as a test). On the smoke backend it measures the pipeline's overhead only;
on a GPU with a real backend it measures what a deployer pays.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluator.backends import get_renderer, load_backend_configs  # noqa: E402


def batched(renderer, prompt: str, seeds: list[int]):
    import torch

    config = renderer.config
    generators = [torch.Generator("cpu").manual_seed(s) for s in seeds]
    output = renderer.pipeline(
        prompt=[prompt] * len(seeds),
        num_inference_steps=config.steps,
        guidance_scale=config.guidance,
        width=config.width,
        height=config.height,
        generator=generators,
        output_type="pil",
    )
    return [image.convert("RGB") for image in output.images]


def best_of(repeats: int, run) -> tuple[float, list]:
    times, images = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        images = run()
        times.append(time.perf_counter() - start)
    return min(times), images


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="smoke-sd")
    parser.add_argument("--images", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends-file", default=str(ROOT / "config" / "backends.json"))
    args = parser.parse_args()
    config = load_backend_configs(args.backends_file)[args.backend]
    renderer = get_renderer(dataclasses.replace(config, batch_size=1))  # the baseline: one call per seed, whatever the file says
    prompt, seeds = "a lighthouse on a cliff at dawn, watercolour", list(range(1000, 1000 + args.images))
    renderer.render(prompt, seeds[:1])  # warm-up: first call pays lazy initialisation
    per_seed, singles = best_of(args.repeats, lambda: renderer.render(prompt, seeds))
    batch, batch_images = best_of(args.repeats, lambda: batched(renderer, prompt, seeds))
    same = sum(a.tobytes() == b.tobytes() for a, b in zip(singles, batch_images))
    print(f"backend {args.backend} ({renderer.config.label or renderer.config.model}), {args.images} images, best of {args.repeats}")
    print(f"  one call per seed : {per_seed:.3f} s  ({args.images / per_seed:.1f} images/s)   <- baseline: batch_size 1, one call per seed")
    print(f"  one batched call  : {batch:.3f} s  ({args.images / batch:.1f} images/s)")
    print(f"  batched / per-seed time ratio: {batch / per_seed:.2f}")
    print(f"  batched images identical to per-seed images: {same} of {args.images}")


if __name__ == "__main__":
    main()
