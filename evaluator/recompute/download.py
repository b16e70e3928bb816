"""A board download's files, read once and parsed: what every check and the recompute read (no database, no Django).

A member that is there but not what it should be (cut short, not JSON, a row without a field the recompute needs)
raises signing.ReleaseUnreadable naming the member and what is wrong with it.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import signing
from ..metrics.aggregate import Unit
from ..metrics.board import prompt_style

STAMPS = ("entry", "participant", "judge_version", "config_hash")  # what a unit line carries besides the unit


@dataclass
class Download:
    """What a board zip holds, read once."""

    board: dict
    tasks: list[dict]
    units: dict[Any, list[Unit]] = field(default_factory=dict)  # entry id -> its units, in file order
    human_units: dict[int, list[Unit]] = field(default_factory=dict)  # participant index -> units
    stamps: list[tuple] = field(default_factory=list)  # (judge version, backend, config hash) of every unit line
    prompts: list[dict] = field(default_factory=list)
    trajectories: dict[Any, list[dict]] = field(default_factory=dict)  # entry id -> its trajectories (feedback runs)
    participants: list[dict] = field(default_factory=list)
    statistics_inputs: dict = field(default_factory=dict)  # board_stats_compute's other keywords (statistics_inputs.json)
    unit_lines: list[dict] = field(default_factory=list)  # units.jsonl as written (the breakdown files are checked against it)
    breakdown: dict[str, list[dict]] = field(default_factory=dict)  # "breakdown.jsonl" / "breakdown.csv" -> rows
    names: list[str] = field(default_factory=list)  # every member's name, in the zip's order
    redaction: dict | None = None  # REDACTION.json of a redacted release (its signature is checked with --key)
    rationale_entries: Counter = field(default_factory=Counter)  # rationales.jsonl lines per entry (of a redacted release)

    @property
    def categories(self) -> dict[str, str]:
        return {t["task_id"]: t["category"] for t in self.tasks}

    def prompted_tasks(self) -> dict[Any, set[str]]:
        found: dict[Any, set[str]] = defaultdict(set)
        for p in self.prompts:
            found[p["entry"]].add(p["task_id"])
        return found


# What a member that is there but not what it should be raises as it is parsed: text that is not UTF-8 or JSON
# (ValueError), a row without a field the recompute needs (KeyError) or with one a unit does not have (TypeError).
MALFORMED = (ValueError, KeyError, TypeError, AttributeError, csv.Error)


def _lines(archive: zipfile.ZipFile, name: str) -> Iterator[dict]:
    if name not in archive.namelist():
        return
    with archive.open(name) as handle:
        for number, line in enumerate(io.TextIOWrapper(handle, encoding="utf-8"), start=1):
            if line.strip():
                yield json_object(line, f"line {number}: ")


def json_object(text: str | bytes, where: str = "") -> dict:
    try:
        found = json.loads(text)
    except ValueError as error:
        raise ValueError(f"{where}not JSON ({error})") from None
    if not isinstance(found, dict):
        raise ValueError(f"{where}a JSON {type(found).__name__}, not an object")
    return found


def _csv(archive: zipfile.ZipFile, name: str) -> list[dict]:
    return list(csv.DictReader(io.TextIOWrapper(archive.open(name), encoding="utf-8")))


def _unit(row: dict, stamps: list[tuple]) -> Unit:
    stamps.append((row.get("judge_version"), row.get("backend", ""), row.get("config_hash")))
    return Unit(**{k: v for k, v in row.items() if k not in STAMPS})


def read(path) -> Download:
    """The download's files, parsed; signing.ReleaseUnreadable, naming the member and what is wrong with it, when the
    zip is not whole, names a member twice, lacks board.json or tasks.csv, or holds a member that does not parse."""
    with signing.open_zip(path) as archive:
        signing.require(archive, ("board.json", "tasks.csv"))
        with signing.reading("board.json", *MALFORMED):
            found = Download(board=json_object(archive.read("board.json")), tasks=[], names=archive.namelist())
        with signing.reading("tasks.csv", *MALFORMED):
            found.tasks = _csv(archive, "tasks.csv")
        with signing.reading("units.jsonl", *MALFORMED):
            for row in _lines(archive, "units.jsonl"):
                found.units.setdefault(row["entry"], []).append(_unit(row, found.stamps))
                found.unit_lines.append(row)
        with signing.reading("human_units.jsonl", *MALFORMED):
            for row in _lines(archive, "human_units.jsonl"):
                found.human_units.setdefault(row["participant"], []).append(_unit(row, found.stamps))
        with signing.reading("trajectories.jsonl", *MALFORMED):
            for row in _lines(archive, "trajectories.jsonl"):
                found.trajectories.setdefault(row["entry"], []).append(row)
        _read_rest(archive, found)
    return found


def _read_rest(archive: zipfile.ZipFile, found: Download) -> None:
    """The members read whole as they are: prompts, participants, statistics inputs and the breakdowns."""
    with signing.reading("prompts.jsonl", *MALFORMED):
        found.prompts = list(_lines(archive, "prompts.jsonl"))
        for line in found.prompts:
            prompt_words(line)  # a redacted line without its words and list flag is malformed
    with signing.reading("humans.jsonl", *MALFORMED):
        found.participants = list(_lines(archive, "humans.jsonl"))
    with signing.reading("statistics_inputs.json", *MALFORMED):
        if "statistics_inputs.json" in found.names:
            found.statistics_inputs = json_object(archive.read("statistics_inputs.json"))
    with signing.reading("breakdown.jsonl", *MALFORMED):
        if "breakdown.jsonl" in found.names:
            found.breakdown["breakdown.jsonl"] = list(_lines(archive, "breakdown.jsonl"))
    with signing.reading("breakdown.csv", *MALFORMED):
        if "breakdown.csv" in found.names:
            found.breakdown["breakdown.csv"] = _csv(archive, "breakdown.csv")
    with signing.reading(signing.REDACTION, *MALFORMED):
        if signing.REDACTION in found.names:
            found.redaction = json_object(archive.read(signing.REDACTION))
            found.redaction["entries"] = [int(e) for e in found.redaction["entries"]]
    with signing.reading("rationales.jsonl", *MALFORMED):
        if found.redaction is not None:  # only what a redaction must have removed is checked of the rationales
            found.rationale_entries = Counter(int(line["entry"]) for line in _lines(archive, "rationales.jsonl"))


def prompt_words(line: dict) -> tuple[int, bool]:
    """A prompts.jsonl line's words and list flag: from its prompt, or, where a redaction erased it, as the line keeps them."""
    if line["prompt"] is None:
        return int(line["words"]), bool(line["list"])
    return prompt_style(line["prompt"])
