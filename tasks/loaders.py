"""Reading task packs from disk into plain records, with errors that name file, line and field.

Parsing is separate from writing (tasks.services.pack_save) so that a bad pack is
rejected whole before a single row is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.categories import CATEGORIES, IMITATION

from .models import TAG_GROUP_OF

CATEGORY_FILES = {category: f"{category.lower()}.jsonl" for category in CATEGORIES}
CO_FIELDS = ("pairing", "layout", "quantity", "text", "constraint")
TASK_FIELDS = {
    "task_id", "category", "split", "title", "brief", "constraints", "tags",
    "prompt_checklist", "image_checklist", "seed_prompt", "target_image",
}  # fmt: skip
REQUIRED = ("task_id", "category", "split", "title", "brief", "tags", "prompt_checklist", "image_checklist")


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
    if not isinstance(data, dict):
        raise PackError([f"{path}: expected a JSON object"])
    problems = [f"{path}: field '{k}' is required (a non-empty string)" for k in ("name", "version") if not _is_text(data.get(k))]
    allowed = {"name", "version", "title", "description", "license"}
    problems += [f"{path}: unknown field '{k}'" for k in data if k not in allowed]
    if problems:
        raise PackError(problems)
    return {k: str(data.get(k, "")) for k in allowed}


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
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a JSON object")
        return None
    found = [f"{where}: unknown field '{k}'" for k in raw if k not in TASK_FIELDS]
    found += [f"{where}: field '{k}' is required" for k in REQUIRED if k not in raw]
    found += _field_problems(raw, category, where, root)
    problems.extend(found)
    if found:
        return None
    target = raw.get("target_image")
    return TaskRecord(
        task_id=raw["task_id"], category=category, split=raw["split"], title=raw["title"].strip(),
        brief=raw["brief"].strip(), tags=list(raw["tags"]), prompt_checklist=list(raw["prompt_checklist"]),
        image_checklist=list(raw["image_checklist"]), constraints=dict(raw.get("constraints") or {}),
        seed_prompt=raw.get("seed_prompt", "").strip(), target_image=(root / target) if target else None, where=where,
    )  # fmt: skip


def _field_problems(raw: dict, category: str, where: str, root: Path) -> list[str]:
    found = []
    for key in ("task_id", "title", "brief"):
        if key in raw and not _is_text(raw[key]):
            found.append(f"{where}: field '{key}' must be a non-empty string")
    if raw.get("category", category) != category:
        found.append(f"{where}: field 'category' is {raw['category']!r} but the file holds {category} tasks")
    if "split" in raw and raw["split"] not in ("dev", "test"):
        found.append(f"{where}: field 'split' must be 'dev' or 'test', not {raw['split']!r}")
    for key in ("tags", "prompt_checklist", "image_checklist"):
        if key in raw and not (isinstance(raw[key], list) and all(_is_text(x) for x in raw[key])):
            found.append(f"{where}: field '{key}' must be a list of non-empty strings")
    for tag in raw.get("tags", []) if isinstance(raw.get("tags"), list) else []:
        if isinstance(tag, str) and tag.lstrip("#") not in TAG_GROUP_OF:
            found.append(f"{where}: field 'tags': unknown tag {tag!r}")
    found += _constraint_problems(raw, category, where)
    found += _target_problems(raw, category, where, root)
    return found


def _constraint_problems(raw: dict, category: str, where: str) -> list[str]:
    constraints = raw.get("constraints")
    if constraints in (None, {}):
        return [f"{where}: field 'constraints' is required for CO tasks"] if category == "CO" else []
    if not isinstance(constraints, dict) or not all(isinstance(v, str) for v in constraints.values()):
        return [f"{where}: field 'constraints' must be an object of strings"]
    return [f"{where}: field 'constraints': unknown key {k!r} (allowed: {', '.join(CO_FIELDS)})" for k in constraints if k not in CO_FIELDS]


def _target_problems(raw: dict, category: str, where: str, root: Path) -> list[str]:
    seed, target = raw.get("seed_prompt"), raw.get("target_image")
    if category != IMITATION:
        return [f"{where}: field '{k}' is only for IM tasks" for k in ("seed_prompt", "target_image") if raw.get(k)]
    if not seed and not target:
        return [f"{where}: an IM task needs 'seed_prompt' or 'target_image'"]
    if seed is not None and not isinstance(seed, str):
        return [f"{where}: field 'seed_prompt' must be a string"]
    if target is not None and (not _is_text(target) or not (root / target).is_file()):
        return [f"{where}: field 'target_image': file {target!r} not found in {root}"]
    return []


def _check_unique_ids(tasks: list[TaskRecord], problems: list[str]) -> None:
    seen: dict[str, str] = {}
    for task in tasks:
        if task.task_id in seen:
            problems.append(f"{task.where}: task_id {task.task_id!r} already used at {seen[task.task_id]}")
        seen.setdefault(task.task_id, task.where)


def _is_text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())
