"""OfficialRelease: everything the official route reads from a checkout of the release, loaded once and checked.

Templates (subjective and checklist), the anchored level labels inside the subjective templates, request
options and image compression (its runtime configs), checklists, memory banks, task descriptions (its
dataset, written as its memory engine writes them) and the framing of source.py. The API sections of its
runtime configs (endpoint, key, model, fallbacks) are never read: the route calls the endpoint and model
this deployment configures. Every file read, memory images included, goes into `fingerprint`, so editing
any of them makes a new judge version.

Where the release is lenient (a memory record without a prompt, an exemplar image that cannot be opened)
the route does what the release does, skipping the record, and logs which one; where the release stops
(a checklist repeating a task) the route stops too, naming the file and record.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..rubrics import RUBRIC
from ..types import DIMENSIONS, Side
from .layout import (
    CHECKLISTS,
    DATASET,
    IMAGE_MEMORY,
    MEMORY_ENGINE,
    OBJECTIVE_RUNTIME,
    OBJECTIVE_TEMPLATES,
    PROMPT_MEMORY,
    SUBJECTIVE_CORE,
    SUBJECTIVE_RUNTIME,
    SUBJECTIVE_TEMPLATES,
    OfficialReleaseError,
    check_release,
)
from .source import Framing, read_framing

log = logging.getLogger(__name__)

# What the release's code falls back to when a config leaves a value out (subjective_eval_core.py, obj_checker_utils.py).
REQUEST_DEFAULTS = {"temperature": 0.0, "top_p": 0.7, "max_tokens": 4096}
COMPRESSION_DEFAULTS = {"target_kb": 450, "tolerance_kb": 50, "min_quality": 40, "max_quality": 95}
ATTEMPTS_DEFAULT = 5
_HEADING = re.compile(r"^\s*\d+\.\s+(?P<name>[^(\n]+?)\s*\(")
_LEVEL = re.compile(r"^\s*\W?\s*(?P<score>[1-5])\s*\((?P<label>[^)\n]+)\)\s*:")


@dataclass(frozen=True)
class MemoryItem:
    """One human-scored exemplar as the release's memory file has it."""

    task_id: str
    category: str
    side: Side
    text: str  # the prompt (prompt side)
    image_path: str  # the image, resolved as the release resolves it (image side)
    dimensions: dict[str, Any]  # the release's dimension name -> {"score", "note" or "rationale"}


@dataclass(frozen=True)
class OfficialRelease:
    root: Path
    systems: dict[Side, str]  # subjective system prompts
    users: dict[Side, str]  # subjective user templates ({task_description}, {prompt_text})
    checks: dict[Side, str]  # checklist templates ({prompt}, {checklist})
    options: dict[str, dict[str, Any]]  # "subjective" | "objective" -> request options
    compression: dict[str, int]  # the checklist image's JPEG compression
    attempts: int  # replies asked for before a checklist that does not parse counts as failed
    checklists: dict[str, dict[str, dict[Side, tuple[str, ...]]]]  # category -> task id -> side -> items
    memory: dict[tuple[Side, str], tuple[MemoryItem, ...]]  # (side, category) -> exemplars
    dataset: dict[str, tuple[str, dict[str, Any]]]  # task id -> (category, record)
    framing: Framing
    levels: dict[str, tuple[str, ...]]  # dimension name -> the five level labels of the subjective templates
    fingerprint: str  # sha256 of every file read

    def dimension_names(self, side: Side) -> tuple[str, ...]:
        return self.framing.dimension_names[str(side)]

    def describe(self, task_id: str, category: str, fallback: dict[str, Any]) -> str:
        """The task as the release's judge reads it: from its dataset, else from `fallback` (a record of our task)."""
        found_category, record = self.dataset.get(task_id, (category, fallback))
        return describe_record(self.framing, found_category, record, self.root / "dataset")


def _text(value: Any) -> str:
    return str(value).strip() if value is not None else ""


def describe_record(framing: Framing, category: str, record: dict[str, Any], dataset_dir: Path) -> str:
    """A dataset record written as the release's _build_from_dataset_item writes it."""
    d = framing.descriptions
    if category == "CO":
        lines = [d.co_line.render({"label": label, "content": _text(record.get(f))}) for label, f in d.co_sections if _text(record.get(f))]
        return d.co_sep.join(lines).strip()
    if category == "OE":
        title, task = _text(record.get("title")), _text(record.get("task"))
        return d.oe.render({"title": title, "task": task}) if title and task else task or title
    relative = _text(record.get("origin_image"))
    absolute = str((dataset_dir / relative).resolve()) if relative else ""
    return d.im.render({"origin_image_abs": absolute, "origin_image_rel": relative}).strip()


class _Reader:
    """Reads files of one checkout, hashing each into the fingerprint."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.hashes: dict[str, str] = {}

    def raw(self, name: str) -> bytes:
        path = self.root / name
        data = path.read_bytes()
        self.hashes[name] = hashlib.sha256(data).hexdigest()
        return data

    def json(self, name: str) -> Any:
        try:
            return json.loads(self.raw(name).decode("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise OfficialReleaseError(f"{self.root / name}: cannot read JSON ({exc})") from exc

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(sorted(self.hashes.items())).encode()).hexdigest()


def _lines_or_text(block: Any, key: str, where: str) -> str:
    """`key` as a string, or `key_lines` as a list of strings joined by newlines (the release accepts both)."""
    if isinstance(block, dict) and isinstance(block.get(key), str):
        return block[key]
    lines = block.get(f"{key}_lines") if isinstance(block, dict) else None
    if isinstance(lines, list) and all(isinstance(x, str) for x in lines):
        return "\n".join(lines)
    raise OfficialReleaseError(f"{where}: needs a string {key!r} or a list of strings {key + '_lines'!r}")


def _probe_format(template: str, where: str, **fields: str) -> str:
    """The template filled as the release fills it (str.format), or an error naming where it breaks."""
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError) as exc:
        raise OfficialReleaseError(f"{where}: cannot be filled with {sorted(fields)} ({exc!r})") from exc


def _subjective(reader: _Reader) -> tuple[dict[Side, str], dict[Side, str]]:
    data = reader.json(SUBJECTIVE_TEMPLATES)
    systems, users = {}, {}
    for side in Side:
        where = f"{SUBJECTIVE_TEMPLATES} {side}_subjective"
        block = data.get(f"{side}_subjective") if isinstance(data, dict) else None
        systems[side] = _lines_or_text(block, "system_prompt", where)
        users[side] = _lines_or_text(block, "user_template", where)
        _probe_format(users[side], f"{where}.user_template", task_description="", prompt_text="")
    return systems, users


def _checks(reader: _Reader) -> dict[Side, str]:
    data = reader.json(OBJECTIVE_TEMPLATES)
    checks = {}
    for side in Side:
        where = f"{OBJECTIVE_TEMPLATES} {side}_check_template"
        value = data.get(f"{side}_check_template") if isinstance(data, dict) else None
        text = (
            value
            if isinstance(value, str)
            else "\n".join(value)
            if isinstance(value, list) and all(isinstance(x, str) for x in value)
            else None
        )
        if text is None or "{checklist}" not in text or (side == Side.PROMPT and "{prompt}" not in text):
            raise OfficialReleaseError(
                f"{where}: needs a string or list of strings with {{checklist}}" + (" and {prompt}" if side == Side.PROMPT else "")
            )
        _probe_format(text, where, prompt="", checklist="")
        checks[side] = text
    return checks


def _request(runtime: Any, where: str) -> dict[str, Any]:
    """temperature, top_p and max_tokens as the release sends them (a null top_p or max_tokens is left out)."""
    given = runtime.get("llm_request", {}) if isinstance(runtime, dict) else {}
    options = {key: given.get(key, default) for key, default in REQUEST_DEFAULTS.items()}
    if not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in options.values()):
        raise OfficialReleaseError(f"{where}: llm_request values must be numbers or null, got {options}")
    return {key: value for key, value in options.items() if value is not None}


def _runtime(reader: _Reader) -> tuple[dict[str, dict[str, Any]], dict[str, int], int]:
    subjective, objective = reader.json(SUBJECTIVE_RUNTIME), reader.json(OBJECTIVE_RUNTIME)
    options = {"subjective": _request(subjective, SUBJECTIVE_RUNTIME), "objective": _request(objective, OBJECTIVE_RUNTIME)}
    given = objective.get("compression", {}) if isinstance(objective, dict) else {}
    compression = {key: int(given.get(key, default)) for key, default in COMPRESSION_DEFAULTS.items()}
    attempts = int((objective.get("retry", {}) if isinstance(objective, dict) else {}).get("max_attempts", ATTEMPTS_DEFAULT))
    if attempts < 1:
        raise OfficialReleaseError(f"{OBJECTIVE_RUNTIME}: retry.max_attempts must be at least 1, got {attempts}")
    return options, compression, attempts


def _checklist_file(reader: _Reader, name: str) -> dict[str, dict[Side, tuple[str, ...]]]:
    records = reader.json(name)
    if not isinstance(records, list):
        raise OfficialReleaseError(f"{name}: expected a JSON list of records")
    found: dict[str, dict[Side, tuple[str, ...]]] = {}
    for index, record in enumerate(records):
        task_id = _text(record.get("task_id")) if isinstance(record, dict) else ""
        if not task_id:
            continue  # the release skips records without a task id
        if task_id in found:
            raise OfficialReleaseError(f"{name} record {index} ({task_id}): field 'task_id': a second checklist for this task")
        found[task_id] = {
            side: _items(record.get(f"{side}_checkpoint", []), f"{name} record {index} ({task_id}): field '{side}_checkpoint'")
            for side in Side
        }
    return found


def _items(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise OfficialReleaseError(f"{where}: expected a list of strings")
    return tuple(value)


def _memory_file(reader: _Reader, name: str, side: Side, category: str) -> tuple[MemoryItem, ...]:
    records = reader.json(name)
    if not isinstance(records, list):
        raise OfficialReleaseError(f"{name}: expected a JSON list of records")
    items = []
    for index, record in enumerate(records):
        item = _memory_item(reader, name, side, category, record)
        if item is None:
            log.warning("%s record %d: skipped, as the release skips it (no task_id, no %s, or no dimensions)", name, index, side)
        else:
            items.append(item)
    return tuple(items)


def _memory_item(reader: _Reader, name: str, side: Side, category: str, record: Any) -> MemoryItem | None:
    field = "prompt" if side == Side.PROMPT else "image_path"
    if not isinstance(record, dict):
        return None
    task_id, value, dims = _text(record.get("task_id")), _text(record.get(field)), record.get(f"{side}_dimensions", {})
    if not task_id or not value or not isinstance(dims, dict):
        return None
    if side == Side.PROMPT:
        return MemoryItem(task_id, category, side, value, "", dims)
    path = ((reader.root / name).parent / value).resolve()
    if not path.is_file():
        return None  # the release skips an exemplar whose image it cannot embed
    reader.raw(str(path.relative_to(reader.root)) if path.is_relative_to(reader.root) else str(path))
    return MemoryItem(task_id, category, side, "", str(path), dims)


def _dataset(reader: _Reader) -> dict[str, tuple[str, dict[str, Any]]]:
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for category, name in DATASET.items():
        records = reader.json(name)
        if not isinstance(records, list):
            raise OfficialReleaseError(f"{name}: expected a JSON list of records")
        for record in records:
            task_id = _text(record.get("task_id")) if isinstance(record, dict) else ""
            if task_id:
                found[task_id] = (category, record)
    return found


def anchored_levels(text: str, names: tuple[str, ...], where: str) -> dict[str, tuple[str, ...]]:
    """name -> the labels of levels 1..5 under the heading "<n>. <name> (...)" of a subjective template."""
    found: dict[str, list[tuple[int, str]]] = {name: [] for name in names}
    current = None
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = heading["name"].strip() if heading["name"].strip() in found else None
        elif (level := _LEVEL.match(line)) and current is not None:
            found[current].append((int(level["score"]), level["label"].strip()))
    for name, levels in found.items():
        if [score for score, _ in levels] != [1, 2, 3, 4, 5]:
            raise OfficialReleaseError(f"{where}: no anchored levels 1 to 5 under a heading for {name!r} (found {[s for s, _ in levels]})")
    return {name: tuple(label for _, label in levels) for name, levels in found.items()}


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower().replace("&", " ").replace("colour", "color")).strip("_")


def our_keys(release_names: tuple[str, ...], side: Side) -> dict[str, str]:
    """The release's dimension name -> our dimension key (by title or alias), for one side."""
    ours = {_normalise(n): d.key for d in RUBRIC.dimensions_of(side) for n in (d.key, d.title, *d.aliases)}
    missing = [n for n in release_names if _normalise(n) not in ours]
    if missing or len(release_names) != len(DIMENSIONS[side]):
        raise OfficialReleaseError(f"{SUBJECTIVE_CORE}: {side} dimensions {list(release_names)} do not match ours {list(DIMENSIONS[side])}")
    return {n: ours[_normalise(n)] for n in release_names}


def _source_hashes(reader: _Reader) -> None:
    for name in (MEMORY_ENGINE, SUBJECTIVE_CORE):
        reader.raw(name)


def load_release(root: str | Path) -> OfficialRelease:
    """The release checked out at `root`, read and checked; OfficialReleaseError names what is wrong."""
    reader = _Reader(check_release(root).resolve())
    systems, users = _subjective(reader)
    options, compression, attempts = _runtime(reader)
    framing = read_framing(reader.root)
    _source_hashes(reader)
    levels: dict[str, tuple[str, ...]] = {}
    for side in Side:
        our_keys(framing.dimension_names[str(side)], side)
        levels |= anchored_levels(
            users[side], framing.dimension_names[str(side)], f"{SUBJECTIVE_TEMPLATES} {side}_subjective.user_template"
        )
    checklists = {category: _checklist_file(reader, name) for category, name in CHECKLISTS.items()}
    memory = {(Side.PROMPT, c): _memory_file(reader, n, Side.PROMPT, c) for c, n in PROMPT_MEMORY.items()}
    memory |= {(Side.IMAGE, c): _memory_file(reader, n, Side.IMAGE, c) for c, n in IMAGE_MEMORY.items()}
    return OfficialRelease(
        root=reader.root,
        systems=systems,
        users=users,
        checks=_checks(reader),
        options=options,
        compression=compression,
        attempts=attempts,
        checklists=checklists,
        memory=memory,
        dataset=_dataset(reader),
        framing=framing,
        levels=levels,
        fingerprint=reader.fingerprint(),
    )
