"""A whole submission of the original pack, in-process, with where its time goes.

One prompt per task (the brief verbatim with its constraints, the brief-verbatim baseline's rule), submitted to
tasks/packs/atelier-original on the shipped smoke backends (config/backends.json: smoke-sd, 4 images, and
smoke-sd-fast, 2) and judged by the offline judge (all-MiniLM-L6-v2 and open_clip with random weights, "smoke
(random weights)"), with the in-process queue on a throw-away SQLite database:

    .venv/bin/python bench/submission_full.py [--tasks N] [--split dev|test|all]

--tasks takes the first N tasks of the split, evenly across OE, CO and IM. The IM tasks' targets and c_k
references are rendered first (setup, timed apart). Prints a line per finished task while it runs, then the
time per stage (exclusive: SQL time counts under database wherever it ran) with its share of the wall, and
the share of the platform's wall (the wall less the bench's own progress queries) spent in model forward passes
(diffusers pipeline calls, the judge's encoder calls); the rest is orchestration.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
STAGES = ("upload & planning", "rendering", "judging", "scores", "database", "bench's progress", "other")


class Clock:
    """Exclusive time per stage: entering a stage pauses the one it interrupts (a job run inside the upload's
    commit, SQL inside a job), so the stages add up to the wall."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.stack: list[tuple[str, float]] = [("other", time.perf_counter())]

    @contextlib.contextmanager
    def stage(self, name: str):
        now = time.perf_counter()
        outer, since = self.stack[-1]
        self.seconds[outer] += now - since
        self.stack.append((name, now))
        try:
            yield
        finally:
            now = time.perf_counter()
            inner, since = self.stack.pop()
            self.seconds[inner] += now - since
            self.stack[-1] = (self.stack[-1][0], now)

    def close(self) -> None:
        name, since = self.stack[-1]
        self.seconds[name] += time.perf_counter() - since
        self.stack[-1] = (name, time.perf_counter())


def timed(clock: Clock, stage: str, func):
    def wrapper(*args, **kwargs):
        with clock.stage(stage):
            return func(*args, **kwargs)

    wrapper.__name__ = func.__name__
    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=None, help="how many tasks (default: all of the split)")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="submission-full-"))
    os.environ.update(
        DATABASE_URL=f"sqlite:///{workdir / 'db.sqlite3'}",
        MEDIA_ROOT=str(workdir / "media"),
        ATELIER_BACKENDS_FILE=str(ROOT / "config" / "backends.json"),
        ATELIER_CLIP_PRETRAINED="random",
        DJANGO_SETTINGS_MODULE="atelier.settings",
        OPENAI_BASE_URL="",
        ATELIER_DAILY_SUBMISSIONS="0",
    )
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    run(args.tasks, args.split)


def pick_tasks(pack, split: str, count: int | None) -> list:
    """The first `count` tasks of the split, round-robin over the categories (so a small run has all three)."""
    tasks = pack.tasks.order_by("task_id") if split == "all" else pack.tasks.filter(split=split).order_by("task_id")
    by_category: dict[str, list] = defaultdict(list)
    for task in tasks:
        by_category[task.category].append(task)
    mixed = [t for group in zip(*by_category.values()) for t in group]
    mixed += [t for group in by_category.values() for t in group[len(mixed) // len(by_category) :]]
    return mixed[: count if count is not None else len(mixed)]


def run(count: int | None, split: str) -> None:
    import logging

    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from evaluation import jobs, runtime
    from evaluation.models import Judgement, PromptEntry, Render, Submission
    from evaluator.backends.renderer import PipelineRenderer
    from evaluator.judge import encoders
    from evaluator.prompters.baselines import brief_verbatim
    from submissions.services import submission_create, team_create
    from tasks.loaders import read_own_pack
    from tasks.services import pack_save
    from tasks.targets import references_render, target_render

    logging.getLogger("evaluation").setLevel(logging.ERROR)
    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    pack, _ = pack_save(data=read_own_pack(ROOT / "tasks" / "packs" / "atelier-original"))
    tasks = pick_tasks(pack, split, count)
    configs = list(runtime.backend_configs().values())
    print(
        f"{len(tasks)} tasks of {pack.name} (split {split}) on {', '.join(c.name for c in configs)}; offline judge {runtime.judge().label}; "
        f"ATELIER_TORCH_THREADS={os.environ.get('ATELIER_TORCH_THREADS', '') or 'unset'} ({encoders.torch_threads() or 'torch default'})",
        flush=True,
    )
    im = [t for t in tasks if t.category == "IM" and t.seed_prompt]
    for n, task in enumerate(im, 1):
        target_render(task=task, backend=configs[0], candidates=4)
        if n % 20 == 0 or n == len(im):
            print(f"  setup: {n}/{len(im)} IM targets rendered, {time.perf_counter() - started:.1f} s", flush=True)
    references_render(pack=pack, backends=configs)  # only tasks with a target, i.e. the chosen IM tasks
    setup = time.perf_counter() - started
    print(f"setup: migrate, pack, {len(im)} IM targets and their references in {setup:.1f} s", flush=True)

    clock, forward = Clock(), defaultdict(float)
    shown, judged, began = [0], [0], [0.0]

    def sql(execute, statement, params, many, context):
        if clock.stack[-1][0] == "bench's progress":  # the bench's own queries stay under its own stage
            return execute(statement, params, many, context)
        with clock.stage("database"):
            return execute(statement, params, many, context)

    def progress() -> None:
        """Every 50 judge jobs, one query for the tasks with no unit left pending, shown at each 1/20 of the tasks (the
        bench's own queries stay few: a query per judgement would be counted in the figures as the platform's)."""
        judged[0] += 1
        if judged[0] % 50:
            return
        entries = PromptEntry.objects.exclude(renders__status="pending").exclude(judgements__status="pending")
        n = entries.filter(submission__team__name="bench").distinct().count()
        if n >= shown[0] + max(1, len(tasks) // 20) or (n == len(tasks) > shown[0]):
            shown[0] = n
            wall = time.perf_counter() - began[0]
            print(f"  {n:4d}/{len(tasks)} tasks judged, {wall:7.1f} s, {wall / n:.2f} s per task", flush=True)

    judge_job = jobs.judge_job

    def judge_and_report(judgement_id: int) -> None:
        judge_job(judgement_id)
        with clock.stage("bench's progress"):
            progress()

    jobs.start_submission_job = timed(clock, "upload & planning", jobs.start_submission_job)
    render_job, rendered = jobs.render_job, [0]

    def render_and_report(entry_id: int, backend: str) -> None:
        render_job(entry_id, backend)
        rendered[0] += 1
        if rendered[0] % max(1, len(tasks) * len(configs) // 10) == 0:
            wall = time.perf_counter() - began[0]
            print(f"  {rendered[0]:4d}/{len(tasks) * len(configs)} render jobs (prompt x backend), {wall:7.1f} s", flush=True)

    jobs.render_job = timed(clock, "rendering", render_and_report)
    jobs.judge_job = timed(clock, "judging", judge_and_report)
    jobs.finish_submission_job = timed(clock, "scores", jobs.finish_submission_job)
    render_chunk = PipelineRenderer._render_chunk

    def timed_chunk(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return render_chunk(self, *args, **kwargs)
        finally:
            forward["diffusers pipeline"] += time.perf_counter() - t

    PipelineRenderer._render_chunk = timed_chunk
    encoders.forward_seconds.clear()
    user = get_user_model().objects.create_user("bench")
    team = team_create(user=user, name="bench")
    lines = [json.dumps({"task_id": t.task_id, "prompt": brief_verbatim(t.brief, t.constraints or {})}) for t in tasks]
    began[0] = time.perf_counter()
    with connection.execute_wrapper(sql), clock.stage("upload & planning"):
        submission = submission_create(
            team=team, pack=pack, prompter="brief verbatim", filename="bench.jsonl", data="\n".join(lines).encode()
        )
    wall = time.perf_counter() - began[0]
    clock.close()
    forward.update({f"judge {k}": v for k, v in encoders.forward_seconds.items()})

    submission = Submission.objects.get(pk=submission.pk)
    judgements = Judgement.objects.filter(submission=submission)
    renders = Render.objects.filter(entry__submission=submission)
    ran = judgements.exclude(status="skipped").count()
    print(f"\nsubmission #{submission.pk}: {submission.status} {submission.error}".rstrip())
    print(
        f"{len(tasks)} tasks, {renders.count()} renders ({renders.filter(status='ok').count()} ok), {judgements.count()} judgements "
        f"({ran} judged, {judgements.filter(status='ok').count()} ok, {judgements.filter(status='failed').count()} failed), "
        f"wall {wall:.1f} s (+ setup {setup:.1f} s)"
    )
    print(f"\n{'stage':<20}{'seconds':>10}{'share':>9}")
    for stage in STAGES:
        print(f"{stage:<20}{clock.seconds.get(stage, 0.0):>10.1f}{clock.seconds.get(stage, 0.0) / wall:>9.1%}")
    print(f"{'wall':<20}{wall:>10.1f}")
    model, own = sum(forward.values()), clock.seconds.get("bench's progress", 0.0)
    platform = wall - own  # the bench's progress lines are its own work, not the platform's
    print(
        f"\nthe platform's wall (the bench's progress queries left out) {platform:.1f} s: model forward passes {model:.1f} s ({model / platform:.1%}); "
        f"orchestration {platform - model:.1f} s ({1 - model / platform:.1%})"
    )
    for name, seconds in sorted(forward.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<26}{seconds:>8.1f} s {seconds / platform:>7.1%}")
    if ran:
        print(
            f"judging: {clock.seconds['judging'] / ran:.3f} s per judgement outside SQL ({ran} judged); torch threads for the judge: {encoders.torch_threads()}"
        )


if __name__ == "__main__":
    main()
