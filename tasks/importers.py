"""Importer for the official AtelierEval release, read in its own layout:

    <release>/dataset/{oe,co,im}_120.json                       tasks
    <release>/dataset/gt_image/<n>.png                          IM target images
    <release>/evaluator/objective/checklist/{oe,co,im}_checklist.json   checklists

The data is not ours to ship: users point `manage.py load_tasks --format ateliereval PATH`
at their own copy. Every problem names the file, the record and the field; nothing is
loaded unless everything reads.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from evaluator.categories import CATEGORIES, IMITATION

from .loaders import CO_FIELDS, PackData, PackError, TaskRecord
from .models import TAG_GROUP_OF

FILES = {category: f"{category.lower()}_120.json" for category in CATEGORIES}
CHECKLISTS = {category: f"{category.lower()}_checklist.json" for category in CATEGORIES}
IM_BRIEF = "Write a prompt that makes the image generator reproduce the target image as closely as possible."


def read_ateliereval(root: Path, *, require_checklists: bool = True, require_images: bool = True) -> PackData:
    root = Path(root)
    problems: list[str] = []
    digest = hashlib.sha256()
    tasks: list[TaskRecord] = []
    for category, filename in FILES.items():
        records = _json_list(root / "dataset" / filename, problems, digest)
        checklists = _checklists(root, category, problems, digest, require_checklists)
        for index, record in enumerate(records):
            task = _task(category, record, f"{filename} record {index}", root, checklists, require_images, problems)
            if task is not None:
                tasks.append(task)
        problems += _orphan_checklists(category, checklists, records)
    ids = [t.task_id for t in tasks]
    problems += [f"task_id {i!r} appears more than once" for i in sorted({i for i in ids if ids.count(i) > 1})]
    if problems:
        raise PackError(problems)
    notes = [] if require_checklists else ["checklists optional"]
    notes += [] if require_images else ["target images optional"]
    return PackData(
        name="ateliereval",
        version=f"official-{digest.hexdigest()[:10]}",
        source="ateliereval",
        title="AtelierEval (official release)",
        license="CC BY 4.0, the AtelierEval authors",
        description="Imported from a copy of the official AtelierEval release" + (f" ({', '.join(notes)})" if notes else "") + ".",
        tasks=tasks,
    )


def _json_list(path: Path, problems: list[str], digest, required: bool = True) -> list:
    if not path.is_file():
        if required:
            problems.append(f"{path}: file not found")
        return []
    raw = path.read_bytes()
    digest.update(raw)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{path}: not valid UTF-8 JSON ({exc})")
        return []
    if not isinstance(data, list):
        problems.append(f"{path}: expected a JSON list of records")
        return []
    return data


def _checklists(root: Path, category: str, problems: list[str], digest, required: bool) -> dict[str, tuple[list[str], list[str], str]]:
    """task_id -> (prompt items, image items, where the record is). A task's checklist may appear once."""
    path = root / "evaluator" / "objective" / "checklist" / CHECKLISTS[category]
    result: dict[str, tuple[list[str], list[str], str]] = {}
    for index, record in enumerate(_json_list(path, problems, digest, required)):
        where = f"{path.name} record {index}"
        if not isinstance(record, dict) or not isinstance(record.get("task_id"), str):
            problems.append(f"{where}: field 'task_id' missing or not a string")
            continue
        task_id = record["task_id"]
        if task_id in result:
            problems.append(f"{where} ({task_id}): field 'task_id': a second checklist for this task (first: {result[task_id][2]})")
            continue
        lists = [record.get(k) for k in ("prompt_checkpoint", "image_checkpoint")]
        if not all(isinstance(v, list) and all(isinstance(x, str) and x.strip() for x in v) for v in lists):
            problems.append(f"{where} ({task_id}): fields 'prompt_checkpoint' and 'image_checkpoint' must be lists of strings")
            continue
        result[task_id] = (lists[0], lists[1], where)
    return result


def _orphan_checklists(category: str, checklists: dict[str, tuple[list[str], list[str], str]], records: list) -> list[str]:
    """Checklist records whose task_id names no task of the category's task file."""
    ids = {r.get("task_id") for r in records if isinstance(r, dict)}
    return [
        f"{where} ({task_id}): field 'task_id': no task with this id in {FILES[category]}"
        for task_id, (_, _, where) in checklists.items()
        if task_id not in ids
    ]


def _task(category, record, where, root, checklists, require_images, problems) -> TaskRecord | None:
    if not isinstance(record, dict):
        problems.append(f"{where}: expected a JSON object")
        return None
    text_fields = ("task_id", "gt_prompt", "origin_image") if category == IMITATION else ("task_id", "title", "task")
    text_fields += CO_FIELDS if category == "CO" else ()
    found = [f"{where}: field '{k}' missing or not a string" for k in text_fields if not isinstance(record.get(k), str)]
    found += [
        f"{where}: field '{k}' must not be empty" for k in text_fields[:3] if isinstance(record.get(k), str) and not record[k].strip()
    ]
    tags = record.get("category")
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.lstrip("#") in TAG_GROUP_OF for t in tags):
        found.append(f"{where}: field 'category' must be a list of known tags, got {tags!r}")
    if found:
        problems.extend(found)
        return None
    task_id = record["task_id"]
    prompt_items, image_items, _ = checklists.get(task_id, ([], [], ""))
    if checklists and task_id not in checklists:
        problems.append(f"{where} ({task_id}): no checklist record for this task")
    target = _target(record, where, root, require_images, problems) if category == IMITATION else None
    return TaskRecord(
        task_id=task_id,
        category=category,
        split="dev",
        title=record.get("title") or f"Imitation {task_id}",
        brief=IM_BRIEF if category == IMITATION else record["task"].strip(),
        tags=[t.lstrip("#") for t in tags],
        prompt_checklist=prompt_items,
        image_checklist=image_items,
        constraints={k: record[k] for k in CO_FIELDS} if category == "CO" else {},
        seed_prompt=record.get("gt_prompt", "").strip(),
        target_image=target,
        where=where,
    )


def _target(record: dict, where: str, root: Path, required: bool, problems: list[str]) -> Path | None:
    path = root / "dataset" / record["origin_image"]
    if path.is_file():
        return path
    if required:
        problems.append(f"{where} ({record['task_id']}): field 'origin_image': {path} not found")
    return None
