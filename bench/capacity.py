"""Capacity on paper: what one submission costs in renders, judge calls, tokens and GPU-seconds, and what M
submissions a day need in GPU hosts, judge workers and judge quota (docs/scaling.md prints this bench's table).

    .venv/bin/python bench/capacity.py [--pack tasks/packs/atelier-original] [--samples 1] [--backends 4] [--images 1]
        [--rpm 500] [--tpm 200000] [--latency 4] [--per-day 10] [--statements-per-unit 7.5] [--redis-per-unit 57.4]

Counted, not assumed: the judge calls are the routed skills of every task of the pack (evaluator.judge.routes,
the ateliereval route: OE and CO make 2 prompt-side calls and 2 per image, IM 2 and 1 per image, its CLIP
similarity being local), and the prompt tokens are counted by the real tokenizer (evaluator/judge/tokens.py, o200k_base:
OpenAI's count of a chat request) on the exact request bodies the judge sends for those tasks, with a 512-px image
where it sends one (255 tokens, OpenAI's gpt-4o/gpt-4.1 count) and the prompt being the brief verbatim; against a
tokens-per-minute limit each call also reserves its reply (ATELIER_JUDGE_REPLY_TOKENS, 300, as the judge's budget
does: the reply is not written when the request is sent). Taken from outside, and named in the output: per-image GPU times (SD-Turbo about 25
images/s and SDXL at 30 steps about 2.5 s/image on an A100, the AtelierEval/ArtWhisperer-era figures; MLPerf
Inference SDXL 1.64 samples/s on an H100), and the database statements and Redis commands per judge unit that
bench/workers_scale.py measures (--statements-per-unit, --redis-per-unit).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atelier.settings")

GPU_SECONDS_PER_IMAGE = {  # published throughput, one image at a time
    "SD-Turbo, 1 step, 512 px (A100)": 1 / 25,
    "SDXL base, 30 steps, 1024 px (A100)": 2.5,
    "SDXL, MLPerf Inference offline (H100)": 1 / 1.64,
}


def judge_requests(pack: Path, samples: int, images: int, backends: int) -> tuple[int, int, int, dict[str, int]]:
    """(LLM calls, local metric judgements, prompt tokens, calls per category) of one submission."""
    from PIL import Image

    from evaluator.judge import tokens
    from evaluator.judge.config import DEFAULTS
    from evaluator.judge.openai_judge import REQUEST_OPTIONS
    from evaluator.judge.routes import route_for_task
    from evaluator.judge.skills import SkillInput, get_skill
    from evaluator.judge.types import Kind, Side, TargetInput, TaskInput
    from tasks.loaders import read_own_pack

    image = Image.new("RGB", (512, 512), (128, 96, 64))
    calls = metrics = prompt_tokens = 0
    by_category: dict[str, int] = {}
    for record in read_own_pack(pack).tasks:
        checklists = (tuple(record.prompt_checklist), tuple(record.image_checklist))
        task = TaskInput(record.task_id, record.category, record.title, record.brief, dict(record.constraints), *checklists)
        target = TargetInput(image=image) if record.category == "IM" else None
        for skill in route_for_task(task):
            spec = get_skill(skill)
            per_entry = 1 if spec.side == Side.PROMPT else images * backends
            if spec.kind == Kind.METRIC:
                metrics += per_entry * samples
                continue
            inp = SkillInput(
                task, record.brief, image if spec.side == Side.IMAGE else None, (), target, image_max_side=DEFAULTS.image_max_side
            )
            body = json.loads(json.dumps({"model": "judge", "messages": spec.build(inp), **REQUEST_OPTIONS}))  # as sent
            counted = tokens.chat_tokens(body["messages"], image_tokens=tokens.image_tokens_high_detail(*image.size))
            calls += per_entry * samples
            prompt_tokens += per_entry * samples * counted
            by_category[record.category] = by_category.get(record.category, 0) + per_entry * samples
    return calls, metrics, prompt_tokens, by_category


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pack", type=Path, default=ROOT / "tasks" / "packs" / "atelier-original")
    parser.add_argument("--samples", type=int, default=1, help="prompts per task")
    parser.add_argument("--backends", type=int, default=4, help="AtelierEval renders on 4")
    parser.add_argument("--images", type=int, default=1, help="images per prompt per backend")
    parser.add_argument("--rpm", type=int, default=500, help="the judge key's requests per minute")
    parser.add_argument("--tpm", type=int, default=200_000, help="the judge key's tokens per minute")
    parser.add_argument("--latency", type=float, default=4.0, help="seconds per judge call (a hosted VLM with an image)")
    parser.add_argument("--per-day", type=int, default=10, help="submissions a day")
    parser.add_argument("--statements-per-unit", type=float, default=7.5, help="bench/workers_scale.py's SQL/unit")
    parser.add_argument("--redis-per-unit", type=float, default=57.4, help="bench/workers_scale.py's Redis/unit")
    parser.add_argument("--sql-ms-per-unit", type=float, default=7.6, help="bench/workers_scale.py's SQL ms/unit at 4 workers")
    args = parser.parse_args()

    import django

    django.setup()  # the pack reader lives in the tasks app
    print(f"counting {args.pack.name}: the judge's requests for every task ...", flush=True)
    from evaluator.judge.config import DEFAULTS
    from tasks.loaders import read_own_pack

    calls, metrics, prompt_tokens, by_category = judge_requests(args.pack, args.samples, args.images, args.backends)
    tokens = prompt_tokens + calls * DEFAULTS.reply_tokens  # what the calls take from a tokens-per-minute limit
    tasks = len(read_own_pack(args.pack).tasks)
    renders = tasks * args.samples * args.backends * args.images
    print(f"\nOne submission: {tasks} tasks × {args.samples} sample(s) × {args.backends} backends × {args.images} image(s)")
    print(f"  renders                       {renders:>10,}")
    print(f"  judge calls (LLM/VLM)         {calls:>10,}   ({', '.join(f'{c} {n:,}' for c, n in sorted(by_category.items()))})")
    print(f"  local metric judgements       {metrics:>10,}   (CLIP target similarity: no call)")
    print(f"  judge prompt tokens (counted) {prompt_tokens:>10,}   ({prompt_tokens / calls:,.0f} per call, a 512-px image at 255)")
    print(
        f"  tokens against a TPM limit    {tokens:>10,}   ({tokens / calls:,.0f} per call: the prompt and a {DEFAULTS.reply_tokens}-token reply allowance)"
    )

    print("\nGPU-seconds per submission, one backend of that kind rendering all of its images (published per-image times):")
    per_backend = renders // args.backends
    for name, seconds in GPU_SECONDS_PER_IMAGE.items():
        total = per_backend * seconds
        print(f"  {name:<40} {seconds:6.3f} s/image  {total:8.0f} GPU-s  ({total / 60:5.1f} min)")

    minutes_rpm, minutes_tpm = calls / args.rpm, tokens / args.tpm
    binding = "requests" if minutes_rpm >= minutes_tpm else "tokens"
    judge_minutes = max(minutes_rpm, minutes_tpm)
    workers = math.ceil(min(args.rpm / 60, args.tpm / 60 / (tokens / calls)) * args.latency)
    print(f"\nJudge at {args.rpm:,} RPM and {args.tpm:,} TPM: {minutes_rpm:.1f} min by requests, {minutes_tpm:.1f} min by tokens;")
    print(
        f"  the {binding} limit binds: {judge_minutes:.1f} min per submission, at most {1440 / judge_minutes:.0f} submissions a day per key"
    )
    print(f"  judge workers to keep the quota busy at {args.latency:.0f} s a call (one call in flight each): {workers}")

    sdxl = per_backend * GPU_SECONDS_PER_IMAGE["SDXL base, 30 steps, 1024 px (A100)"] * args.backends
    print(f"\n{args.per_day} submissions a day:")
    print(f"  GPU hosts (A100, SDXL-30-step class on every backend, 70 % busy): {math.ceil(args.per_day * sdxl / (86400 * 0.7))}")
    print(f"  judge quota: {args.per_day * judge_minutes / 60:.1f} h of the key's day ({100 * args.per_day * judge_minutes / 1440:.0f} %)")
    units = args.per_day * (calls + metrics)
    print(
        f"  database: {units:,} judge units × {args.statements_per_unit:g} statements = {units * args.statements_per_unit:,.0f} statements a day"
    )
    print(f"  Redis: {units:,} judge units × {args.redis_per_unit:g} commands = {units * args.redis_per_unit:,.0f} commands a day")
    rate = min(args.rpm / 60, args.tpm / 60 / (tokens / calls))  # judge calls a second when the quota is the limit
    print(
        f"At the quota's pace ({rate:.1f} judge calls/s): {rate * args.statements_per_unit:.0f} SQL statements/s "
        f"({100 * rate * args.sql_ms_per_unit / 1000:.0f} % of one database connection's time at {args.sql_ms_per_unit:g} ms a unit) "
        f"and {rate * args.redis_per_unit:.0f} Redis commands/s (compare `redis-benchmark -q` on your Redis)."
    )


if __name__ == "__main__":
    main()
