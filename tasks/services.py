"""Writes for task packs: one transaction per pack, so a failed load leaves nothing behind."""

from __future__ import annotations

import hashlib
import json

from django.core.files import File
from django.db import transaction

from .loaders import PackData, TaskRecord
from .models import TAG_GROUP_OF, Tag, Task, TaskPack


def record_hash(record: TaskRecord) -> str:
    """Hash of everything a prompter or the judge sees, so an edit bumps the task's version."""
    target_bytes = record.target_image.read_bytes() if record.target_image else b""
    content = {
        "title": record.title, "brief": record.brief, "constraints": record.constraints, "tags": sorted(record.tags),
        "prompt_checklist": record.prompt_checklist, "image_checklist": record.image_checklist,
        "seed_prompt": record.seed_prompt, "target": hashlib.sha256(target_bytes).hexdigest(), "split": record.split,
    }  # fmt: skip
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


@transaction.atomic
def pack_save(*, data: PackData) -> tuple[TaskPack, dict[str, int]]:
    """Create or update a pack version; returns the pack and counts of created/changed/unchanged tasks."""
    pack, _ = TaskPack.objects.update_or_create(
        name=data.name, version=data.version,
        defaults={"source": data.source, "title": data.title, "description": data.description, "license": data.license},
    )  # fmt: skip
    counts = {"created": 0, "changed": 0, "unchanged": 0}
    tags = _ensure_tags()
    for record in data.tasks:
        counts[_task_save(pack, record, tags)] += 1
    return pack, counts


def _ensure_tags() -> dict[str, Tag]:
    for name, group in TAG_GROUP_OF.items():
        Tag.objects.get_or_create(name=name, defaults={"group": group})
    return {tag.name: tag for tag in Tag.objects.all()}


def _task_save(pack: TaskPack, record: TaskRecord, tags: dict[str, Tag]) -> str:
    digest = record_hash(record)
    task = Task.objects.filter(pack=pack, task_id=record.task_id).first()
    if task is not None and task.content_hash == digest:
        return "unchanged"
    outcome = "created" if task is None else "changed"
    task = task or Task(pack=pack, task_id=record.task_id, version=0)
    task.category, task.split, task.title, task.brief = record.category, record.split, record.title, record.brief
    task.constraints, task.seed_prompt = record.constraints, record.seed_prompt
    task.prompt_checklist, task.image_checklist = record.prompt_checklist, record.image_checklist
    task.version, task.content_hash = task.version + 1, digest
    if record.target_image:
        with record.target_image.open("rb") as handle:
            task.target_image.save(f"{pack.name}/{record.task_id}.png", File(handle), save=False)
        task.target_note = "target image from the pack"
    task.save()
    task.tags.set([tags[t.lstrip("#")] for t in record.tags])
    return outcome
