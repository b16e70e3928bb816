"""Seconds per judgement of the offline judge: the baseline path and the optimised one, on the same inputs, in one run.

Inputs: the first N tasks of each category of tasks/packs/atelier-original's dev split, one prompt per task (the brief
verbatim with its constraints), rendered on the shipped smoke backends (config/backends.json: 4 + 2 images), each IM
task with a target (a render of its seed prompt) and a c_k reference per backend. Every routed skill is judged as the
judging jobs do, one unit at a time: the prompt-side skills once per prompt, the image-side skills once per render.

  baseline : memo, batching and text trimming off, torch's default threads: every judgement embeds what it reads;
  optimised: the defaults (memo, one batched forward for an entry's images before its first image judgement, as
             evaluation/judging.py does, CLIP text without MLP work on padding), starting from an empty memo.

Models are loaded before any path is timed; the paths run interleaved, --repeats times, and the fastest run of each
counts. A third path adds ATELIER_TORCH_THREADS=1, which can change last bits (evaluator/judge/encoders.py), so its
identity is reported, not required. Prints seconds per judgement (skipped skills, e.g. the rubric ones the
offline judge has no scorer for, are not counted), the ratio, and whether every result is identical (all fields).

    .venv/bin/python bench/judge_speed.py [--tasks-per-category 1] [--repeats 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OLD_SECONDS_PER_JUDGEMENT = 1.6  # issue 12: a 60-task dev submission, 1,309 s inside the judge's run, before the memo


def load_tasks(per_category: int) -> list[dict]:
    tasks = []
    for name in ("oe", "co", "im"):
        rows = [
            json.loads(line)
            for line in (ROOT / "tasks" / "packs" / "atelier-original" / f"{name}.jsonl").read_text().splitlines()
            if line.strip()
        ]
        tasks += [r for r in rows if r.get("split") == "dev"][:per_category]
    return tasks


def build_inputs(per_category: int):
    """[(task, prompt, renders, target per backend)]: the same inputs for both paths."""
    from evaluator.backends import derive_seed, get_renderer, load_backend_configs
    from evaluator.judge.types import TargetInput, TaskInput
    from evaluator.prompters.baselines import brief_verbatim

    configs = [c for c in load_backend_configs(ROOT / "config" / "backends.json").values() if c.enabled]
    inputs = []
    for row in load_tasks(per_category):
        task = TaskInput(
            task_id=row["task_id"],
            category=row["category"],
            title=row["title"],
            brief=row["brief"],
            constraints=dict(row.get("constraints") or {}),
            prompt_checklist=tuple(row["prompt_checklist"]),
            image_checklist=tuple(row["image_checklist"]),
        )
        prompt = brief_verbatim(task.brief, task.constraints)
        renders, targets = [], {}
        for config in configs:
            seeds = config.seeds_for(task.task_id, 0)
            renders += [(config.name, image) for image in get_renderer(config).render(prompt, seeds)]
        if task.category == "IM" and row.get("seed_prompt"):
            target = get_renderer(configs[0]).render(row["seed_prompt"], [derive_seed(f"target:{task.task_id}", 0, 0, configs[0].name)])[0]
            for config in configs:
                reference = get_renderer(config).render(row["seed_prompt"], [derive_seed(f"reference:{task.task_id}", 0, 0, config.name)])[
                    0
                ]
                targets[config.name] = TargetInput(image=target, reference=reference)
        inputs.append((task, prompt, renders, targets))
    return configs, inputs


def judge_all(judge, inputs, *, ahead: bool) -> tuple[list, int, float]:
    """Every routed skill on every input, one unit at a time; (results, judgements answered, seconds)."""
    from evaluator.judge import encoders
    from evaluator.judge.embedding_judge import clip_image_reader
    from evaluator.judge.routes import route_for_task
    from evaluator.judge.skills import get_skill
    from evaluator.judge.types import Side, Status

    results, answered = [], 0
    started = time.perf_counter()
    for task, prompt, renders, targets in inputs:
        skills = route_for_task(task, judge.route)
        for skill in (s for s in skills if get_skill(s).side == Side.PROMPT):
            results.append(judge.run(skill, task, prompt))
        image_skills = [s for s in skills if get_skill(s).side == Side.IMAGE]
        if ahead and any(clip_image_reader(judge, s) for s in image_skills):  # what the first image judgement's job does
            extra = [t for target in targets.values() for t in (target.image, target.reference)]
            encoders.remember_images([image for _, image in renders] + extra, judge.clip_model, judge.clip_pretrained)
        for backend, image in renders:
            for skill in image_skills:
                results.append(judge.run(skill, task, prompt, image, target=targets.get(backend)))
    seconds = time.perf_counter() - started
    answered = sum(r.status != Status.SKIPPED for r in results)
    return results, answered, seconds


def differing(base: list, other: list) -> int:
    return sum(dataclasses.asdict(a) != dataclasses.asdict(b) for a, b in zip(base, other, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks-per-category", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2, help="runs of each path, interleaved; the fastest counts")
    args = parser.parse_args()
    import torch

    from evaluator.judge import encoders
    from evaluator.judge.config import JudgeConfig
    from evaluator.judge.embedding_judge import EmbeddingJudge

    default_threads = torch.get_num_threads()
    configs, inputs = build_inputs(args.tasks_per_category)
    judge = EmbeddingJudge(JudgeConfig(clip_pretrained="random"))
    encoders.clip_model(judge.clip_model, judge.clip_pretrained), encoders._minilm()  # load both before timing
    renders = sum(len(r) for _, _, r, _ in inputs)
    print(
        f"{len(inputs)} dev tasks of atelier-original x {renders // len(inputs)} renders ({', '.join(c.name for c in configs)}); "
        f"judge {judge.label}; {os.cpu_count()} cores, torch default {default_threads} threads"
    )
    paths = [
        (
            "baseline",
            "memo, batching, text trim off; torch default threads",
            {"memo": False, "batch": False, "trim_text": False, "threads": None},
        ),
        ("optimised", "memo, batched images, trimmed text; ATELIER_TORCH_THREADS unset", {"threads": None}),
        ("+1 thread", "the same with ATELIER_TORCH_THREADS=1", {"threads": 1}),
    ]
    results, forwards = {}, {}
    for _ in range(args.repeats):  # interleaved, best of each: other processes on a shared machine move single runs a lot
        for name, _what, settings in paths:
            encoders._embeddings.clear()
            encoders.forward_seconds.clear()
            with encoders.speed_settings(**settings):
                out, n, seconds = judge_all(judge, inputs, ahead=settings.get("batch", True))
            if name not in results or seconds < results[name][2]:
                results[name], forwards[name] = (out, n, seconds), sum(encoders.forward_seconds.values())
    for name, what, _settings in paths:
        out, n, seconds = results[name]
        forward = forwards[name]
        line = f"{name:<10} {n} judgements in {seconds:6.1f} s = {seconds / n:.3f} s per judgement ({forward / seconds:.0%} in forward passes; {what})"
        if name != "baseline":
            base, _, base_s = results["baseline"]
            diff = differing(base, out)
            line += f"\n{'':<11}{base_s / seconds:.1f}x the baseline, {OLD_SECONDS_PER_JUDGEMENT / (seconds / n):.1f}x the {OLD_SECONDS_PER_JUDGEMENT} s per judgement of issue 12; "
            line += (
                "results identical to the baseline (every field)" if not diff else f"{diff} of {len(out)} results differ from the baseline"
            )
        print(line, flush=True)
    if differing(results["baseline"][0], results["optimised"][0]):
        sys.exit(1)


if __name__ == "__main__":
    main()
