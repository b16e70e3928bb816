"""Per-task breakdown of a submission: one row per (task, prompt sample, backend, image).

Rows are produced in chunks of entries (three queries a chunk), so a large submission is
streamed, never built in memory. Checklist item texts of test-split tasks never leave the
server: for those tasks only the 0/1 outcomes are given, in item order.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator

from evaluator.judge import IMAGE_DIMENSIONS, PROMPT_DIMENSIONS
from submissions.models import Judgement, PromptEntry, Submission

from .selectors import JudgeKey, entry_breakdown

CHUNK = 200
COLUMNS = [
    "submission", "pack", "task_id", "category", "split", "sample", "backend", "image_index", "seed",
    "image_url", "render_status", "prompt",
    "prompt_subjective", *PROMPT_DIMENSIONS, "prompt_accuracy", "prompt_checklist",
    "image_subjective", *IMAGE_DIMENSIONS, "image_accuracy", "image_checklist",
    "failures", "judge", "backend_config_hash",
]  # fmt: skip


def breakdown_rows(submission: Submission, judge: JudgeKey, image_url: Callable[[str], str]) -> Iterator[dict]:
    entries = submission.entries.select_related("task").order_by("task__category", "task__task_id", "sample_index")
    last = 0
    while True:
        chunk = list(entries.filter(pk__gt=last).order_by("pk")[:CHUNK])
        if not chunk:
            return
        last = chunk[-1].pk
        details = entry_breakdown(chunk, judge)
        for entry in chunk:
            yield from _entry_rows(submission, judge, entry, details[entry.pk], image_url)


def _entry_rows(submission: Submission, judge: JudgeKey, entry: PromptEntry, detail: dict, image_url: Callable[[str], str]) -> Iterator[dict]:
    prompt_side = {j.skill: j for j in detail["judgements"] if j.render_id is None}
    image_side: dict[int, dict[str, Judgement]] = {}
    for j in detail["judgements"]:
        if j.render_id is not None:
            image_side.setdefault(j.render_id, {})[j.skill] = j
    for render in sorted(detail["renders"], key=lambda r: (r.backend, r.image_index)):
        judged = {**prompt_side, **image_side.get(render.pk, {})}
        row = {
            "submission": submission.pk, "pack": f"{submission.pack.name} v{submission.pack.version} rev {submission.pack_revision}", "task_id": entry.task.task_id,
            "category": entry.task.category, "split": entry.task.split, "sample": entry.sample_index,
            "backend": render.backend, "image_index": render.image_index, "seed": render.seed,
            "image_url": image_url(render.image.url) if render.image else "", "render_status": render.status,
            "prompt": entry.text, "judge": judge.key, "backend_config_hash": render.config_hash,
        }  # fmt: skip
        row.update(_skill_columns(judged, entry.task))
        failures = [f"render: {render.error}"] if render.error else []
        failures += [f"{j.skill}: {j.reason}" for j in judged.values() if j.status == "failed"]
        row["failures"] = " | ".join(failures)
        yield row


def _skill_columns(judged: dict[str, Judgement], task) -> dict:
    out: dict = {}
    for side, dims in (("prompt", PROMPT_DIMENSIONS), ("image", IMAGE_DIMENSIONS)):
        subjective, objective = judged.get(f"{side}_subjective"), judged.get(f"{side}_objective")
        ok = subjective is not None and subjective.status == "ok"
        out[f"{side}_subjective"] = subjective.value if ok else None
        out.update({d: subjective.scores.get(d) if ok else None for d in dims})
        ok = objective is not None and objective.status == "ok"
        out[f"{side}_accuracy"] = objective.value if ok else None
        # Task order, not the stored dict's (PostgreSQL's jsonb does not keep key order).
        items = getattr(task, f"{side}_checklist") if ok else []
        outcomes = [objective.checklist.get(item) for item in items]
        out[f"{side}_checklist"] = dict(zip(items, outcomes)) if task.split == "dev" else outcomes
    return out


def csv_lines(rows: Iterator[dict]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, extrasaction="raise")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v for k, v in row.items()})
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def jsonl_lines(rows: Iterator[dict]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"
