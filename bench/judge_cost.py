"""What judging one whole submission costs, and what the provider's prompt cache and the batch route save.

    .venv/bin/python bench/judge_cost.py --pack atelier-original [--json] [--tasks N] [--stand-in-images]
        [--cache-min 1024 --cache-step 128]

One prompt per task of the pack (the brief verbatim with its constraints, the brief-verbatim baseline's rule), rendered
on the shipped smoke backends (config/backends.json: 2 + 2 images of 64 px; --stand-in-images: flat 64-px stand-ins of
the same number, without torch), judged by AtelierJudge (the ateliereval route, every model skill, as the judging jobs
run them: the prompt-side skills once per prompt, the image-side ones once per image) against the scripted
OpenAI-compatible server of tests/openai_server.py, which counts usage as a provider does (its ProviderUsage): prompt
and completion tokens with the real tokenizer (o200k_base), 255 tokens per image (OpenAI's gpt-4o/gpt-4.1 count of an
image up to 512 px), and as cached the longest prefix shared with an earlier request, from 1,024 tokens on in steps of
128, as OpenAI bills it, on one machine that forgets nothing. --cache-min and --cache-step set another provider's floor
and step (DeepSeek's context caching, as announced on 2024-08-02, stores prefixes in units of 64 tokens and caches
nothing shorter: --cache-min 64 --cache-step 64); the prices stay as set below. The metric skills (CLIP target similarity) make no
request and are not run. Then a second submission on the same tasks (each prompt opened by a style sentence, so new
prompts from their first word and new images) is judged by the same server, whose cache still holds the first.

Prices: ATELIER_JUDGE_PRICE_* and ATELIER_JUDGE_PRICES_SOURCE from the environment (evaluator/judge/pricing.py), else
DEFAULT_PRICES below. `plain` bills every token at full price; `cached` bills the cached prompt tokens at the cached
price; `batch` and `batch_cached` take the batch discount off those. The four bill the same requests and judgements.

Progress goes to stderr; stdout gets the summary, or with --json one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CACHE_MIN_TOKENS, CACHE_STEP = 1024, 128  # OpenAI's floor and step (tests/openai_server.py keeps the same defaults)
MODEL = "gpt-4.1"  # what the judge asks for; the scripted server answers any model, counting with o200k_base
DEFAULT_PRICES = {  # used when ATELIER_JUDGE_PRICE_INPUT/_OUTPUT are unset
    "ATELIER_JUDGE_PRICE_INPUT": "2.00",
    "ATELIER_JUDGE_PRICE_CACHED_INPUT": "0.50",
    "ATELIER_JUDGE_PRICE_OUTPUT": "8.00",
    "ATELIER_JUDGE_BATCH_DISCOUNT": "0.5",
    "ATELIER_JUDGE_PRICES_SOURCE": "OpenAI pricing page, gpt-4.1 standard tier and Batch API, as published since 2025-04-14 "
    "(not re-checked on 2026-12-06)",
}
STYLE = "A detailed, softly lit illustration."  # the second submission's prompter opens every prompt with it


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def load_tasks(pack: Path, limit: int | None) -> list:
    """TaskInputs of the pack, the first `limit` of each category when given."""
    from evaluator.judge.types import TaskInput

    tasks = []
    for name in ("oe", "co", "im"):
        rows = [json.loads(line) for line in (pack / f"{name}.jsonl").read_text().splitlines() if line.strip()]
        for row in rows[:limit]:
            checklists = (tuple(row["prompt_checklist"]), tuple(row["image_checklist"]))
            tasks.append(
                TaskInput(row["task_id"], row["category"], row["title"], row["brief"], dict(row.get("constraints") or {}), *checklists)
            )
    return tasks


def prompts_of(tasks: list, submission: int) -> list[str]:
    from evaluator.prompters.baselines import brief_verbatim

    prompts = [brief_verbatim(t.brief, t.constraints) for t in tasks]
    return prompts if submission == 1 else [f"{STYLE} {p}" for p in prompts]


def image_maker(stand_in: bool):
    """(describe, images(task, prompt) -> [image per render]) on the shipped smoke backends, or flat stand-ins."""
    import hashlib

    from PIL import Image

    from evaluator.backends import get_renderer, load_backend_configs

    configs = [c for c in load_backend_configs(ROOT / "config" / "backends.json").values() if c.enabled]
    count = sum(c.images_per_prompt for c in configs)
    if stand_in:

        def flat(task, prompt: str) -> list:
            digest = hashlib.sha256(f"{task.task_id}\n{prompt}".encode()).digest()
            return [Image.new("RGB", (64, 64), tuple(digest[3 * k : 3 * k + 3])) for k in range(count)]

        return f"{count} flat 64-px stand-in images per prompt (not rendered)", flat

    def render(task, prompt: str) -> list:
        return [image for c in configs for image in get_renderer(c).render(prompt, c.seeds_for(task.task_id, 0))]

    names = " + ".join(f"{c.name} x {c.images_per_prompt}" for c in configs)
    return f"{count} renders per prompt on the shipped smoke backends ({names}, 64 px, random weights)", render


def judge_submission(judge, server, tasks: list, prompts: list[str], images, number: int) -> tuple[dict, dict[str, dict], dict[str, int]]:
    """Every model skill of the route on every prompt and image; (totals, per skill, judgement statuses), the usage
    as the provider reported it."""
    from evaluator.judge.routes import route_for_task
    from evaluator.judge.skills import get_skill
    from evaluator.judge.types import Kind, Side

    per_skill: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    statuses: dict[str, int] = defaultdict(int)
    started = time.perf_counter()
    for done, (task, prompt) in enumerate(zip(tasks, prompts, strict=True), start=1):
        skills = [s for s in route_for_task(task, judge.route) if get_skill(s).kind != Kind.METRIC]
        rendered = images(task, prompt)
        for skill in skills:
            for image in rendered if get_skill(skill).side == Side.IMAGE else [None]:
                before = len(server.provider.answered)
                result = judge.run(skill, task, prompt, image)
                statuses[result.status] += 1
                for answer in server.provider.answered[before:]:
                    row = per_skill[skill]
                    row["requests"] += 1
                    row["prompt_tokens"] += answer["prompt_tokens"]
                    row["cached_prompt_tokens"] += answer["prompt_tokens_details"]["cached_tokens"]
                    row["shared_prefix_tokens"] += answer["shared_tokens"]
                    row["completion_tokens"] += answer["completion_tokens"]
        if done % 30 == 0 or done == len(tasks):
            seconds = time.perf_counter() - started
            log(
                f"  submission {number}: {done}/{len(tasks)} tasks judged, {sum(r['requests'] for r in per_skill.values())} requests, {seconds:.0f} s"
            )
    totals = {key: sum(row[key] for row in per_skill.values()) for key in next(iter(per_skill.values()))}
    return totals, {skill: dict(row) for skill, row in sorted(per_skill.items())}, dict(statuses)


def priced(totals: dict[str, int], prices) -> dict[str, Any]:
    from evaluator.judge.pricing import Usage

    usage = Usage(totals["requests"], totals["prompt_tokens"], totals["cached_prompt_tokens"], totals["completion_tokens"])
    usd = {
        "plain": prices.usd(usage, cache=False),
        "cached": prices.usd(usage),
        "batch": prices.usd(usage, cache=False, batch=True),
        "batch_cached": prices.usd(usage, batch=True),
    }
    return {
        **totals,
        "usd": {k: round(v, 4) for k, v in usd.items()},
        "batch_cached_of_plain": round(usd["batch_cached"] / usd["plain"], 4),
    }


def shares(per_skill: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """Per skill: the share of prompt tokens in a prefix shared with an earlier request, and the share billed as cached."""
    return {
        skill: {
            "requests": row["requests"],
            "prompt_tokens_per_request": round(row["prompt_tokens"] / row["requests"]),
            "shared_share": round(row["shared_prefix_tokens"] / row["prompt_tokens"], 4),
            "cached_share": round(row["cached_prompt_tokens"] / row["prompt_tokens"], 4),
        }
        for skill, row in per_skill.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack", default="atelier-original", help="a folder of tasks/packs, or a path to a pack")
    parser.add_argument("--tasks", type=int, default=None, help="the first N tasks of each category (default: all)")
    parser.add_argument("--stand-in-images", action="store_true", help="flat 64-px images instead of smoke renders (no torch)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--cache-min", type=int, default=CACHE_MIN_TOKENS, help="the provider caches a shared prefix from this many tokens on"
    )
    parser.add_argument("--cache-step", type=int, default=CACHE_STEP, help="... in steps of this many tokens")
    args = parser.parse_args()
    if args.cache_min < 0 or args.cache_step < 1:
        parser.error(f"--cache-min {args.cache_min} --cache-step {args.cache_step}: the floor is at least 0 and the step at least 1")
    pack = Path(args.pack) if Path(args.pack).is_dir() else ROOT / "tasks" / "packs" / args.pack

    from evaluator.judge.config import JudgeConfig
    from evaluator.judge.openai_judge import OpenAIJudge
    from evaluator.judge.pricing import prices_from_environ, prices_from_settings
    from tests.openai_server import ProviderUsage, ScriptedOpenAIServer

    environ = os.environ if os.environ.get("ATELIER_JUDGE_PRICE_INPUT") else DEFAULT_PRICES
    prices = prices_from_settings(prices_from_environ(environ))
    assert prices is not None
    tasks = load_tasks(pack, args.tasks)
    described, images = image_maker(args.stand_in_images)
    log(f"{len(tasks)} tasks of {pack.name}; {described}; judge {MODEL} on the scripted provider")
    started = time.perf_counter()
    log(f"provider cache: prefixes from {args.cache_min} tokens on, in steps of {args.cache_step}")
    with ScriptedOpenAIServer(provider=ProviderUsage(cache_min=args.cache_min, cache_step=args.cache_step)) as server:
        config = JudgeConfig(base_url=server.base_url, model=MODEL, clip_pretrained="random", max_retries=0, timeout=30.0)
        judge = OpenAIJudge(config)
        runs = [judge_submission(judge, server, tasks, prompts_of(tasks, n), images, n) for n in (1, 2)]
    (first, first_skills, first_status), (second, second_skills, second_status) = runs
    report = {
        "pack": pack.name,
        "tasks": len(tasks),
        "images": described,
        "judge": {"model": MODEL, "version": judge.version, "route": judge.route},
        "provider_cache": {"min_tokens": args.cache_min, "step_tokens": args.cache_step},
        **priced(first, prices),
        "per_skill": shares(first_skills),
        "judgements": first_status,
        "second_submission": {**priced(second, prices), "per_skill": shares(second_skills), "judgements": second_status},
        "prices": asdict(prices),
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    summary = [
        f"{report['tasks']} tasks, {report['images']}; {report['seconds']} s; provider cache from {args.cache_min} tokens in steps of {args.cache_step}",
        f"prices: input {prices.input:g}, cached input {prices.cached_input:g}, output {prices.output:g} USD per 1M tokens, "
        f"batch discount {prices.batch_discount:.0%} ({prices.source})",
    ]
    for name, run in (("first submission", report), ("second submission, same tasks", report["second_submission"])):
        usd = run["usd"]
        summary += [
            f"{name}: {run['requests']:,} requests, {run['prompt_tokens']:,} prompt tokens ({run['cached_prompt_tokens'] / run['prompt_tokens']:.1%} "
            f"cached, {run['shared_prefix_tokens'] / run['prompt_tokens']:.1%} in a shared prefix), {run['completion_tokens']:,} completion tokens",
            f"  USD plain {usd['plain']:.2f}, cached {usd['cached']:.2f}, batch {usd['batch']:.2f}, batch+cached {usd['batch_cached']:.2f} "
            f"({run['batch_cached_of_plain']:.1%} of plain)",
        ]
        summary += [
            f"  {skill:<18} {row['requests']:>5} requests, {row['prompt_tokens_per_request']:>5} prompt tokens each, "
            f"{row['shared_share']:.1%} shared, {row['cached_share']:.1%} cached"
            for skill, row in run["per_skill"].items()
        ]
    print("\n".join(summary), file=sys.stderr if args.json else sys.stdout, flush=True)


if __name__ == "__main__":
    main()
