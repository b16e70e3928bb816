"""Reading task packs from disk into plain records, with errors that name file, line and field.

Parsing is separate from writing (tasks.services.pack_save) so that a bad pack is
rejected whole before a single row is written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.categories import CATEGORIES, IMITATION
from evaluator.schema_errors import Problem, field_name, validator
from evaluator.schema_errors import problems as schema_problems

from .models import TAG_GROUP_OF

CATEGORY_FILES = {category: f"{category.lower()}.jsonl" for category in CATEGORIES}
CO_FIELDS = ("pairing", "layout", "quantity", "text", "constraint")
_TEXT = {"description": "a non-empty string", "type": "string", "pattern": r"\S"}
_TEXTS = {"description": "a list of non-empty strings", "type": "array", "items": _TEXT}
_TAG = {
    "description": "a known tag (tasks/packs/FORMAT.md)",
    "type": "string",
    "pattern": rf"^#*(?:{'|'.join(map(re.escape, TAG_GROUP_OF))})\Z",  # \Z: re.search lets $ match before a final newline
}
# The shape of one line of a task file (tasks/packs/FORMAT.md). What depends on the file, the category or the disk
# (the category is the file's, CO tasks have constraints, IM tasks a seed prompt or a target that exists) is code.
TASK_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["task_id", "category", "split", "title", "brief", "tags", "prompt_checklist", "image_checklist"],
    "properties": {
        "task_id": _TEXT,
        "category": {"description": f"one of {', '.join(CATEGORIES)}", "enum": list(CATEGORIES)},
        "split": {"description": "'dev' or 'test'", "enum": ["dev", "test"]},
        "title": _TEXT,
        "brief": _TEXT,
        "constraints": {
            "type": ["object", "null"],
            "properties": dict.fromkeys(CO_FIELDS, {"type": "string"}),
            "additionalProperties": False,
        },
        "tags": {"type": "array", "items": _TAG},
        "prompt_checklist": _TEXTS,
        "image_checklist": _TEXTS,
        "seed_prompt": {"type": "string"},
        "target_image": {"type": ["string", "null"]},
    },
    "additionalProperties": False,
}
MANIFEST_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["name", "version"],
    "properties": {
        "name": _TEXT,
        "version": _TEXT,
        "title": {"type": "string"},
        "description": {"type": "string"},
        "license": {"type": "string"},
    },
    "additionalProperties": False,
}
_TASK, _MANIFEST = validator(TASK_SCHEMA), validator(MANIFEST_SCHEMA)


class PackError(Exception):
    """A pack that cannot be loaded; `problems` lists every problem found, each naming where."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class TaskRecord:
    task_id: str
    category: str
    split: str
    title: str
    brief: str
    tags: list[str]
    prompt_checklist: list[str]
    image_checklist: list[str]
    constraints: dict[str, str] = field(default_factory=dict)
    seed_prompt: str = ""
    target_image: Path | None = None
    where: str = ""  # file:line, for messages


@dataclass
class PackData:
    name: str
    version: str
    source: str
    title: str = ""
    description: str = ""
    license: str = ""
    tasks: list[TaskRecord] = field(default_factory=list)


def read_own_pack(directory: Path) -> PackData:
    directory = Path(directory)
    manifest = _read_manifest(directory / "pack.json")
    pack = PackData(source="own", **manifest)
    problems: list[str] = []
    for category, filename in CATEGORY_FILES.items():
        path = directory / filename
        if path.exists():
            pack.tasks.extend(_read_task_file(path, category, directory, problems))
    if not pack.tasks and not problems:
        problems.append(f"{directory}: no tasks (expected {', '.join(CATEGORY_FILES.values())})")
    _check_unique_ids(pack.tasks, problems)
    if problems:
        raise PackError(problems)
    return pack


def _read_manifest(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PackError([f"{path}: missing pack manifest"]) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PackError([f"{path}: not valid JSON ({exc})"]) from None
    found = [f"{path}: {_message(p)}" for p in schema_problems(_MANIFEST, data)]
    if found:
        raise PackError(found)
    return {k: data.get(k, "") for k in MANIFEST_SCHEMA["properties"]}


def _read_task_file(path: Path, category: str, root: Path, problems: list[str]) -> list[TaskRecord]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})")
        return []
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})")
            continue
        record = _task_from_json(raw, category, where, root, problems)
        if record is not None:
            records.append(record)
    return records


def _task_from_json(raw: object, category: str, where: str, root: Path, problems: list[str]) -> TaskRecord | None:
    """The record on one line, or None with its problems added: first those of its shape, then (when it has the
    right shape) those of the rules that depend on the file, the category or the disk."""
    found = [_message(p) for p in schema_problems(_TASK, raw)] or _rule_problems(raw, category, root)
    problems.extend(f"{where}: {text}" for text in found)
    if found:
        return None
    target = raw.get("target_image")
    return TaskRecord(
        task_id=raw["task_id"],
        category=category,
        split=raw["split"],
        title=raw["title"].strip(),
        brief=raw["brief"].strip(),
        tags=list(raw["tags"]),
        prompt_checklist=list(raw["prompt_checklist"]),
        image_checklist=list(raw["image_checklist"]),
        constraints=dict(raw.get("constraints") or {}),
        seed_prompt=raw.get("seed_prompt", "").strip(),
        target_image=(root / target) if target else None,
        where=where,
    )


def _message(problem: Problem) -> str:
    return problem.message(f"field {field_name(problem.path)}" if problem.path else "")


def _rule_problems(raw: dict, category: str, root: Path) -> list[str]:
    found = []
    if raw["category"] != category:
        found.append(f"field 'category' is {raw['category']!r} but the file holds {category} tasks")
    if category == "CO" and not raw.get("constraints"):
        found.append("field 'constraints' is required for CO tasks")
    return found + _target_problems(raw, category, root)


def _target_problems(raw: dict, category: str, root: Path) -> list[str]:
    seed, target = raw.get("seed_prompt"), raw.get("target_image")
    if category != IMITATION:
        return [f"field '{k}' is only for IM tasks" for k in ("seed_prompt", "target_image") if raw.get(k)]
    if not seed and not target:
        return ["an IM task needs 'seed_prompt' or 'target_image'"]
    if target is not None and not (root / target).is_file():
        return [f"field 'target_image': file {target!r} not found in {root}"]
    return []


def _check_unique_ids(tasks: list[TaskRecord], problems: list[str]) -> None:
    seen: dict[str, str] = {}
    for task in tasks:
        if task.task_id in seen:
            problems.append(f"{task.where}: task_id {task.task_id!r} already used at {seen[task.task_id]}")
        seen.setdefault(task.task_id, task.where)
