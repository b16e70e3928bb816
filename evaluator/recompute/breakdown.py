"""The breakdown files (breakdown.jsonl, breakdown.csv): a second copy of every judgement, checked value by value
against units.jsonl, prompts.jsonl and tasks.csv."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

from ..judge.skills import get_skill, skills_where
from ..judge.types import Kind, Side
from .compare import MISSING, short
from .download import Download

# The breakdown's column of each skill: AtelierEval's checklist skills give their rate as "<side>_accuracy", every other
# skill its own column (a gate's column holds its status).
CHECKLIST_COLUMNS = {skills_where(side=side, kind=Kind.CHECKLIST, composite=True)[0]: f"{side}_accuracy" for side in Side}
EVERYWHERE = "*"  # a prompt-side value is repeated on every row (backend and image) of its task sample


def _skill_column(skill: str) -> str:
    return CHECKLIST_COLUMNS.get(skill, skill)


def _expected_cells(download: Download) -> tuple[dict, Counter, dict]:
    """From the unit lines: each (entry, task, sample, backend, image, column) cell's value (None for a failed unit),
    the failed renders per (entry, task, sample, backend), and each image's backend config hash."""
    cells: dict[tuple, Any] = {}
    failed: Counter = Counter()
    hashes: dict[tuple, Any] = {}
    for line in download.unit_lines:
        where = (line["entry"], line["task_id"], line["sample"])
        if line["skill"] == "render":
            failed[(*where, line["backend"])] += 1
            continue
        gate = (declared := _declared(line["skill"])) is not None and declared.kind == Kind.GATE
        value = line["status"] if gate else (line["value"] if line["status"] == "ok" else None)
        image = (line["backend"], line.get("image_index")) if line["backend"] else (EVERYWHERE, EVERYWHERE)
        cells[(*where, *image, _skill_column(line["skill"]))] = value
        if line["backend"]:
            hashes[(*where, line["backend"])] = line.get("config_hash")
    return cells, failed, hashes


def breakdown_differences(download: Download) -> list[str]:
    """Every breakdown row against units.jsonl, prompts.jsonl and tasks.csv: each judged value, each failed render,
    each prompt, category, split, judge and backend config hash (the breakdowns are a second copy that must agree)."""
    if not download.breakdown:
        return []
    cells, failed, hashes = _expected_cells(download)
    columns = {c for *_, c in cells}
    prompts = {(p["entry"], p["task_id"], p["sample"]): p["prompt"] for p in download.prompts}
    tasks = {t["task_id"]: t for t in download.tasks}
    judge = download.board.get("judge") or {}
    found: list[str] = []
    for name, rows in download.breakdown.items():
        text = name.endswith(".csv")
        seen: dict[tuple, Any] = {}
        rendered_failed: Counter = Counter()
        for number, row in enumerate(rows, start=2 if text else 1):
            try:
                where = (int(row["submission"]), row["task_id"], int(row["sample"]))
                image = (row["backend"], int(row["image_index"]))
            except (KeyError, TypeError, ValueError) as error:
                found.append(f"{name} line {number}: not a breakdown row ({type(error).__name__}: {error})")
                continue
            said = {
                "prompt": (row.get("prompt"), prompts.get(where)),
                "category": (row.get("category"), (tasks.get(where[1]) or {}).get("category")),
                "split": (row.get("split"), (tasks.get(where[1]) or {}).get("split")),
                "judge": (row.get("judge"), f"{judge.get('id')}|{judge.get('version')}"),
                "backend_config_hash": (row.get("backend_config_hash"), hashes.get((*where, image[0]), row.get("backend_config_hash"))),
            }
            found += [
                f"{name} line {number}: {column} {short(mine)}, the other files say {short(theirs)}"
                for column, (mine, theirs) in said.items()
                if _cell(mine, theirs, text) != theirs
            ]
            if row.get("render_status") == "failed":
                rendered_failed[(*where, image[0])] += 1
            for column in columns:
                value = row.get(column)
                if value in (None, ""):
                    continue
                key = (*where, *(image if _image_side(column) else (EVERYWHERE, EVERYWHERE)), column)
                expected = cells.get(key, MISSING)
                if expected is MISSING or _cell(value, expected, text) != expected:
                    found.append(f"{name} line {number}: {column} {short(value)}, units.jsonl {short(_absent(expected))}")
                seen[key] = True
        found += [
            f"{name}: {_where(key)} {key[-1]} is {short(value)} in units.jsonl, missing from the breakdown"
            for key, value in cells.items()
            if value is not None and key not in seen
        ]
        found += [
            f"{name}: {n} failed render(s) of entry {key[0]} task {key[1]} sample {key[2]} on {key[3]} in units.jsonl, {rendered_failed[key]} in the breakdown"
            for key, n in (failed | rendered_failed).items()
            if failed[key] != rendered_failed[key]
        ]
    return found


@functools.cache
def _declared(skill: str):
    try:
        return get_skill(skill)
    except ValueError:  # a skill this code does not know: its units still compare, as values
        return None


def _image_side(column: str) -> bool:
    declared = _declared(next((s for s, c in CHECKLIST_COLUMNS.items() if c == column), column))
    return declared is not None and declared.side == Side.IMAGE


def _cell(value: Any, expected: Any, text: bool) -> Any:
    """A breakdown cell as the type the units give (CSV cells are text: numbers parse, empty is None)."""
    if not text or value is None:
        return value
    if value == "":
        return None
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        try:
            return float(value)
        except ValueError:
            return value
    return (
        value[1:]
        if isinstance(value, str) and value.startswith("'") and isinstance(expected, str) and not expected.startswith("'")
        else value
    )


def _absent(value: Any) -> Any:
    return "(no such unit)" if value is MISSING else value


def _where(key: tuple) -> str:
    backend = "" if key[3] == EVERYWHERE else f" on {key[3]} image {key[4]}"
    return f"entry {key[0]} task {key[1]} sample {key[2]}{backend}"
