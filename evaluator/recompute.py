"""Recompute everything a board download publishes from its own files (no database, no Django), and check it.

    python -m evaluator.recompute board.zip [--check]

From units.jsonl, prompts.jsonl, tasks.csv, statistics_inputs.json, trajectories.jsonl, humans.jsonl and
human_units.jsonl this rebuilds every number board.json carries: each entry's figures (value, interval, n, failures),
what they rest on and their standing, its task count and steerability; the board statistics as board_stats_compute
returns them (whatever keys it has, with the counts the board page stores beside them);
the human baseline rows and every row's score on the humans' tasks. `--check` compares the whole of board.json with
that, leaf by leaf (numbers within a tolerance, anything else equal) and reports what one side has and the other has
not, one line per difference. What cannot be recomputed is checked against what every unit line carries: the judge
spec must hash to the judge version every unit was scored by, each backend config to the config hash every image
unit was rendered with; the statistics settings must be the ones this code uses (evaluator.metrics.board.SETTINGS:
the recompute uses them, so the numbers of a board computed with other settings would not match anyway).

With `--key` it checks a signed release too (docs/releases.md): its signature, its chain and, when the key list was
given by the site's URL, whether the site has released the board again since (`superseded by release N <digest>`, a
difference unless `--allow-superseded`). A redacted release (withdrawn entries' prompts, image links and rationales
removed by the site) verifies when its signed redaction record does, and each redaction is named on a line `redacted: …`;
whether signed or not, the entries it names must have no prompt, rewritten prompt, image link or rationale left. Exit
status: 0 when everything agrees; 1 with one line per difference; 2 with one line `cannot check: …` when the zip cannot
be read (cut short, a member missing, renamed or named twice, a member that does not parse) or a key, a release or the
site cannot be reached.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import io
import json
import math
import sys
import zipfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from statistics import fmean
from typing import Any

from . import signing
from .backends.config import BackendConfig, BackendError
from .judge.official.composite import entry_figures
from .judge.skills import get_skill, skills_where
from .judge.spec import ClipSpec, JudgeSpec
from .judge.types import Kind, Side
from .metrics.aggregate import Figure, Unit, figures, sample_image_scores, task_figures
from .metrics.agreement import Prediction, prediction_document
from .metrics.board import SETTINGS, board_stats_compute, prompt_style, styles_of
from .metrics.coverage import coverage, standing
from .metrics.scopes import Scope
from .metrics.steerability import steerability
from .tiers import ROW_TIERS, Tier

ABOUT = (
    "prompter",
    "team",
    "condition",
    "origin",
    "published",
    "card",
)  # who an entry is (its card as published, when): named, not computed
HUMAN_ABOUT = ("label", "judge_id", "judge_version", "judge_label")  # what a human row is called (its judge is checked apart)
DESCRIBED = ("pack", "judge", "code_version", "backends", "coverage_settings")  # checked against the units, not recomputed
STAMPS = ("entry", "participant", "judge_version", "config_hash")  # what a unit line carries besides the unit
TOLERANCE = 1e-12  # relative: numbers are written as json writes floats (they round-trip), so only summation order may differ
# The field, or fields, that name a list's elements where they do (else elements are compared by position).
LABELS = (("entry",), ("scripted", "tier"), ("category",), ("upper",), ("target",), ("scope", "key"), ("name",), ("group",))
MISSING = object()
REDACTED = "redacted: "  # a verified redaction is stated on its own line, not as a note


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
                yield _json_object(line, f"line {number}: ")


def _json_object(text: str | bytes, where: str = "") -> dict:
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
            found = Download(board=_json_object(archive.read("board.json")), tasks=[], names=archive.namelist())
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
            found.statistics_inputs = _json_object(archive.read("statistics_inputs.json"))
    with signing.reading("breakdown.jsonl", *MALFORMED):
        if "breakdown.jsonl" in found.names:
            found.breakdown["breakdown.jsonl"] = list(_lines(archive, "breakdown.jsonl"))
    with signing.reading("breakdown.csv", *MALFORMED):
        if "breakdown.csv" in found.names:
            found.breakdown["breakdown.csv"] = _csv(archive, "breakdown.csv")
    with signing.reading(signing.REDACTION, *MALFORMED):
        if signing.REDACTION in found.names:
            found.redaction = _json_object(archive.read(signing.REDACTION))
            found.redaction["entries"] = [int(e) for e in found.redaction["entries"]]
    with signing.reading("rationales.jsonl", *MALFORMED):
        if found.redaction is not None:  # only what a redaction must have removed is checked of the rationales
            found.rationale_entries = Counter(int(line["entry"]) for line in _lines(archive, "rationales.jsonl"))


def prompt_words(line: dict) -> tuple[int, bool]:
    """A prompts.jsonl line's words and list flag: from its prompt, or, where a redaction erased it, as the line keeps them."""
    if line["prompt"] is None:
        return int(line["words"]), bool(line["list"])
    return prompt_style(line["prompt"])


# --- recompute ---------------------------------------------------------------------------------------------------


def recompute(path) -> dict:
    """Every number board.json publishes, rebuilt from the download's data files (the keys of board.json it checks)."""
    return _plain(recompute_download(read(path)))


def recompute_download(download: Download) -> dict:
    """The recomputed part of board.json: statistics settings (this code's), entries, statistics and human rows."""
    rate, tasks, categories = _max_missing(download.board), download.prompted_tasks(), download.categories
    first = ((download.board.get("judge") or {}).get("spec") or {}).get("engine") == "official"  # the release's first image
    entries = []
    for entry, units in download.units.items():
        steered = steerability_rows(download.trajectories.get(entry, []), categories)
        entries.append(_entry(entry, units, rate, len(tasks[entry]), steered, first))
    empty = not entries  # a board whose last entry was withdrawn: no statistics, as the site stores none
    return {
        "statistics_settings": None if empty else SETTINGS,
        "entries": entries,
        "statistics": None if empty else _statistics(entries, download),
        "humans": _humans(entries, download),
        "difficulty": _difficulty(download),
    }


def _max_missing(board: dict) -> float | None:
    """The deployment's missing-unit limit the standings were decided with (a setting of the site, not of this code)."""
    settings = board.get("coverage_settings")
    rate = settings.get("max_missing_rate") if isinstance(settings, dict) else None
    return rate if isinstance(rate, (int, float)) and not isinstance(rate, bool) else None


def figure_fields(figure: Figure) -> dict:
    """A figure as board.json carries it: every field of aggregate.Figure but its scope and key (those name it)."""
    return {k: v for k, v in asdict(figure).items() if k not in ("scope", "key")}


def _entry(entry, units: list[Unit], rate: float | None, tasks: int, steered: list[dict], first_image: bool) -> dict:
    made = entry_figures(units, first_image)
    covered = coverage(units)
    rests_on = {f"{f.scope}:{f.key}": covered[(f.scope, f.key)] for f in made if covered.get((f.scope, f.key))}
    return {
        "entry": entry,
        "tasks": tasks,
        "figures": {f"{f.scope}:{f.key}": figure_fields(f) for f in made},
        "coverage": {
            key: {
                "scored": c["scored"],
                "planned": c["planned"],
                "standing": standing(c, done=True, max_missing=rate) if rate is not None else None,
            }
            for key, c in rests_on.items()
        },
        "steerability": steered,
    }


def steerability_rows(trajectories: list[dict], categories: dict[str, str]) -> list[dict]:
    """An entry's steerability per category as the submission page shows it (evaluation.trajectories.
    submission_steerability): evaluator.metrics.steerability.steerability with each task a target and its samples'
    feedback-score trajectories the data, every field it returns."""
    by_category: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for line in trajectories:
        by_category[categories[line["task_id"]]][line["task_id"]].append(line["scores"])
    backend = trajectories[0]["backend"] if trajectories else ""
    return [{"category": c, "backend": backend, **asdict(steerability(by_task))} for c, by_task in sorted(by_category.items())]


def _statistics(entries: list[dict], download: Download) -> dict:
    """board_stats_compute on the entries' recomputed task scores, with the counts the board page stores beside them."""
    every = {
        str(e["entry"]): {
            k.split(":", 1)[1]: f["value"] for k, f in e["figures"].items() if k.startswith(f"{Scope.TASK}:") and f["value"] is not None
        }
        for e in entries
    }
    lengths, lists = styles_of((str(p["entry"]), p["task_id"], *prompt_words(p)) for p in download.prompts)
    splits = {t["task_id"]: t["split"] for t in download.tasks}
    inputs = {
        **download.statistics_inputs,
        "every": every,
        "lengths": lengths,
        "lists": lists,
        "categories": download.categories,
        "splits": splits,
    }
    data = board_stats_compute(**inputs, settings=SETTINGS)
    has_split = any(e.get("test") is not None and e.get("dev") is not None for e in data["entries"].values())
    return {**data, "entry_count": len(entries), "has_split": has_split}


def _humans(entries: list[dict], download: Download) -> dict:
    """The human baseline rows as evaluation.humans pools them (per tier, people apart from scripted demo participants,
    each participant one sample) and, when the people's "all" row (else the scripted one) covers only some of the
    board's tasks, every entry's overall on its tasks (as leaderboard.selectors.human_section does)."""
    rows = []
    for scripted in (False, True):
        pool = [p for p in download.participants if bool(p.get("scripted")) == scripted]
        rows += [
            _human_row(scripted, tier, members, download.human_units)
            for tier in ROW_TIERS
            if (members := [p for p in pool if tier in (Tier.ALL, p["tier"])])
        ]
    pooled = sorted((r for r in rows if r["tier"] == Tier.ALL), key=lambda r: r["scripted"])
    tasks = pooled[0]["tasks"] if pooled else []
    partial = bool(rows) and len(tasks) < len(download.tasks)
    return {
        "rows": rows,
        "partial": partial,
        "tasks": len(tasks),
        "common": _common_scores(entries, tasks, download.categories) if partial else {},
    }


def _human_row(scripted: bool, tier: str, group: list[dict], units: dict[int, list[Unit]]) -> dict:
    pooled = [replace(u, sample=sample) for sample, p in enumerate(group) for u in units.get(p["participant"], [])]
    done = sorted(p["completed"] for p in group if p["completed"])
    return {
        "tier": tier,
        "scripted": scripted,
        "participants": len(group),
        "tasks_per_participant": sum(p["entries"] for p in group) / len(group),
        "tasks": sorted({u.task_id for u in pooled}),
        "protocols": sorted({p["protocol"] for p in group}),
        "studies": sorted({p["study"] for p in group}),
        "first": done[0] if done else None,
        "last": done[-1] if done else None,
        "figures": [asdict(f) for f in (*figures(pooled), *task_figures(pooled))],
    }


def _common_scores(entries: list[dict], tasks: list[str], categories: dict[str, str]) -> dict[str, float]:
    """Each entry's category means over `tasks` only, then their mean (entries with none of those tasks left out)."""
    out = {}
    for e in entries:
        by_category: dict[str, list[float]] = defaultdict(list)
        for task_id in tasks:
            if (f := e["figures"].get(f"{Scope.TASK}:{task_id}")) and f["value"] is not None:
                by_category[categories[task_id]].append(f["value"])
        if by_category:
            out[str(e["entry"])] = fmean(fmean(v) for v in by_category.values())
    return out


def _difficulty(download: Download) -> dict | None:
    """The difficulty predictor's agreement with the judge (evaluation.difficulty.difficulty_agreement): each prompt's
    predicted score from the breakdown, its image part from the units; the predictor's name from the breakdown, or
    from board.json when no prompt was predicted."""
    published = download.board.get("difficulty")
    predicted = {
        (r["submission"], r["task_id"], r["sample"]): (r["predicted_score"], r.get("difficulty_predictor") or "")
        for r in download.breakdown.get("breakdown.jsonl", [])
        if r.get("predicted_score") is not None
    }
    if not predicted and not isinstance(published, dict):
        return None
    versions = sorted({version for _, version in predicted.values()})
    predictor = ",".join(versions) if versions else published.get("predictor")
    items, contributing = [], 0
    for entry, units in download.units.items():
        observed = sample_image_scores(units)
        found = [
            Prediction(t, download.categories[t], score, observed[(t, k)])
            for (e, t, k), (score, _) in predicted.items()
            if e == entry and (t, k) in observed
        ]
        items += found
        contributing += bool(found)
    return prediction_document(predictor, contributing, items)


def _plain(data: Any) -> Any:
    """As board.json would hold it (tuples as lists, keys as strings, enums as their values)."""
    return json.loads(json.dumps(data))


# --- check -------------------------------------------------------------------------------------------------------


def differences(path, tolerance: float = TOLERANCE) -> list[str]:
    """Every difference between board.json and what its data recompute to (empty when they agree)."""
    download = read(path)
    return check(download, _plain(recompute_download(download)), tolerance)


def check(download: Download, recomputed: dict, tolerance: float = TOLERANCE) -> list[str]:
    board = download.board
    found = [f"{key}: deleted from board.json" for key in DESCRIBED if key not in board]
    found += breakdown_differences(download)
    found += redaction_differences(download)
    found += judge_differences(board.get("judge"), download.stamps)
    found += backend_differences(board.get("backends"), download.stamps)
    compare(_published(board), recomputed, "", tolerance, found)
    return found


def _published(board: dict) -> dict:
    """board.json less what is described rather than computed (checked apart) and the names of entries and human rows."""
    shown = {k: v for k, v in board.items() if k not in DESCRIBED}
    shown["entries"] = _unnamed(shown.get("entries", MISSING), ABOUT)
    if isinstance(shown.get("humans"), dict):
        shown["humans"] = {**shown["humans"], "rows": _unnamed(shown["humans"].get("rows", MISSING), HUMAN_ABOUT)}
    return {k: v for k, v in shown.items() if v is not MISSING}


def _unnamed(items: Any, names: tuple[str, ...]) -> Any:
    if not isinstance(items, list):
        return items
    return [{k: v for k, v in item.items() if k not in names} if isinstance(item, dict) else item for item in items]


def compare(published: Any, recomputed: Any, path: str, tolerance: float, found: list[str]) -> None:
    """Append one line per leaf that differs and per key or list element on one side only."""
    if published is MISSING:
        found.append(f"{path}: deleted from board.json (recomputed {_short(recomputed)})")
    elif recomputed is MISSING:
        found.append(f"{path}: added in board.json ({_short(published)}), not recomputed")
    elif isinstance(published, dict) and isinstance(recomputed, dict):
        for key in [*published, *(k for k in recomputed if k not in published)]:
            compare(published.get(key, MISSING), recomputed.get(key, MISSING), f"{path}.{key}" if path else str(key), tolerance, found)
    elif isinstance(published, list) and isinstance(recomputed, list):
        for label, mine, theirs in _pairs(published, recomputed):
            compare(mine, theirs, f"{path}[{label}]", tolerance, found)
    elif not same(published, recomputed, tolerance):
        found.append(f"{path}: published {_short(published)}, recomputed {_short(recomputed)}")


def _pairs(published: list, recomputed: list) -> Iterator[tuple[str, Any, Any]]:
    """Elements side by side: by the field that names them where one does on both sides (so a deleted row is one
    deletion, not a shift of every row after it), else by position."""
    key = next((k for k in LABELS if _names(published, k) is not None and _names(recomputed, k) is not None), None)
    if key is None:
        for i in range(max(len(published), len(recomputed))):
            yield str(i), published[i] if i < len(published) else MISSING, recomputed[i] if i < len(recomputed) else MISSING
        return
    mine, theirs = dict(zip(_names(published, key), published)), dict(zip(_names(recomputed, key), recomputed))  # type: ignore[arg-type]
    for name in [*mine, *(n for n in theirs if n not in mine)]:
        yield name, mine.get(name, MISSING), theirs.get(name, MISSING)


def _names(items: list, key: tuple[str, ...]) -> list[str] | None:
    """Each element's name by these fields ("scope=task,key=co-s01"), or None unless every element has one of its own."""
    names = [",".join(f"{k}={x[k]}" for k in key) for x in items if isinstance(x, dict) and all(k in x for k in key)]
    return names if len(names) == len(items) and len(set(names)) == len(names) else None


def same(a: Any, b: Any, tolerance: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=tolerance, abs_tol=0.0)
    return type(a) is type(b) and a == b


def _short(value: Any, limit: int = 90) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the breakdown files: a second copy of every judgement, checked value by value against the units ---------------

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
                f"{name} line {number}: {column} {_short(mine)}, the other files say {_short(theirs)}"
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
                    found.append(f"{name} line {number}: {column} {_short(value)}, units.jsonl {_short(_absent(expected))}")
                seen[key] = True
        found += [
            f"{name}: {_where(key)} {key[-1]} is {_short(value)} in units.jsonl, missing from the breakdown"
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


def redaction_differences(download: Download) -> list[str]:
    """In a redacted release, each entry the redaction names must have no prompt, rewritten prompt, image link or
    rationale left: the check that the erasure was done, whatever its record's signature."""
    if download.redaction is None:
        return []
    erased = set(download.redaction["entries"])
    found = [
        f"redaction: prompts.jsonl line {number}: entry {line['entry']}'s prompt is still there"
        for number, line in enumerate(download.prompts, start=1)
        if line["entry"] in erased and line["prompt"] is not None
    ]
    for name, rows in download.breakdown.items():
        found += [
            f"redaction: {name} line {number}: entry {row['submission']}'s {column} is still there"
            for number, row in enumerate(rows, start=2 if name.endswith(".csv") else 1)
            if str(row.get("submission")) in {str(e) for e in erased}
            for column in ("prompt", "rewritten_prompt", "image_url")
            if row.get(column) not in (None, "")
        ]
    return found + [
        f"redaction: rationales.jsonl: {n} line(s) of entry {e} are still there"
        for e, n in download.rationale_entries.items()
        if e in erased
    ]


# --- what is described, not computed: checked against the stamps of the unit lines ---------------------------------


def judge_spec(document: dict) -> JudgeSpec:
    """The JudgeSpec a spec document (JudgeSpec.document()) describes."""
    members = tuple(judge_spec(m) for m in document["members"])
    return JudgeSpec(
        engine=document["engine"],
        models=tuple(document["models"]),
        route=document["route"],
        base_version=document["base_version"],
        clip=ClipSpec(**document["clip"]),
        parameters=document["parameters"],
        templates=document["templates"],
        members=members,
    )


def judge_differences(judge: Any, stamps: list[tuple]) -> list[str]:
    """The spec must be a whole spec document that hashes to the judge's version and id, and every unit must have been
    scored by that version."""
    if not isinstance(judge, dict) or not isinstance(judge.get("spec"), dict):
        return ["judge.spec: missing from board.json, so the judge version cannot be checked"]
    try:
        spec = judge_spec(judge["spec"])
        document, derived = _plain(spec.document()), {"version": spec.version, "id": spec.judge_id}
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
        return [f"judge.spec: not a judge spec document ({type(error).__name__}: {error})"]
    found: list[str] = []
    compare(judge["spec"], document, "judge.spec", 0.0, found)  # a field the spec does not have is reported too
    found += [
        f"judge.{name}: published {_short(judge.get(name))}, the spec gives {_short(value)}"
        for name, value in derived.items()
        if judge.get(name) != value
    ]
    versions = Counter(version for version, _, _ in stamps)
    return found + [
        f"units: {n} scored by judge version {v}, board.json names {_short(judge.get('version'))}"
        for v, n in versions.items()
        if v != judge.get("version")
    ]


def backend_differences(backends: Any, stamps: list[tuple]) -> list[str]:
    """Each backend config must hash to its version_hash, and the configs must be the ones the image units were
    rendered with (config hash per unit line): none missing, none extra."""
    if not isinstance(backends, list):
        return [f"backends: published {_short(backends)}, not a list of backend configs"]
    found, listed = [], set()
    for i, config in enumerate(backends):
        try:
            digest = BackendConfig.from_dict({k: v for k, v in config.items() if k != "version_hash"}).version_hash()
        except (BackendError, AttributeError, TypeError, ValueError) as error:
            found.append(f"backends[{i}]: not a backend config ({type(error).__name__}: {error})")
            continue
        if config.get("version_hash") != digest:
            found.append(f"backends[{i}].version_hash: published {_short(config.get('version_hash'))}, its config hashes to {digest}")
        listed.add((config["name"], digest))
    used = Counter((backend, digest) for _, backend, digest in stamps if backend)
    found += [
        f"units: {n} rendered by backend {b} with config {d}, which backends does not list"
        for (b, d), n in used.items()
        if (b, d) not in listed
    ]
    return found + [
        f"backends: {b} with config {d} added in board.json, no unit was rendered with it" for b, d in sorted(listed - set(used))
    ]


def signature_differences(
    path, key_source: str, previous: str | None = None, allow_superseded: bool = False
) -> tuple[list[str], list[str]]:
    """What is wrong with a release's signature, its members' hashes, what its manifest says of the board, its link
    to the previous release and whether the site has a newer one; and notes on what could not be checked.
    ReleaseUnreadable when a key, a release or the site's record of it cannot be read at all."""
    keys = signing.read_keys(key_source)
    manifest, redaction, found = signing.verify_release(Path(path), keys)
    if manifest is None:
        return found, []
    found += _manifest_differences(path, manifest)
    linked, notes = chain_differences(manifest, key_source, previous, keys)
    newer, more = superseded(path, manifest, key_source, allow_superseded)
    said = signing.redaction_lines(redaction) if redaction else []
    recorded = [
        f"chain: this release records the redaction of release {r.get('number')} {r.get('release')} (entries "
        f"{', '.join(map(str, r.get('entries', [])))}, on {r.get('created')}, redaction record {r.get('redaction')})"
        for r in manifest.get("redactions", [])
    ]
    return found + linked + newer, said + notes + more + recorded


def _manifest_differences(path, manifest: dict) -> list[str]:
    """The signed manifest's board, judge and code version against board.json's."""
    with signing.open_zip(path) as archive, signing.reading("board.json", *MALFORMED):
        board = _json_object(archive.read("board.json")) if "board.json" in archive.namelist() else {}
    pack, judge = board.get("pack") or {}, board.get("judge") or {}
    said = {
        "board": {"pack": pack.get("name"), "pack_version": pack.get("version"), "revision": pack.get("revision")},
        "judge": {"id": judge.get("id"), "version": judge.get("version")},
        "code_version": board.get("code_version"),
    }
    return [
        f"signature: the signed manifest's {part} is {_short(manifest.get(part))}, board.json says {_short(value)}"
        for part, value in said.items()
        if manifest.get(part) != value
    ]


def chain_differences(manifest: dict, key_source: str, previous: str | None, keys: list) -> tuple[list[str], list[str]]:
    """The link to the release before it (given, or fetched from the site whose key list was given by URL)."""
    source = previous or signing.previous_url(key_source, manifest)
    if source is not None and (manifest.get("previous") or previous):
        before, folder = signing.release_path(source)
        with folder or contextlib.nullcontext():
            return signing.chain(manifest, before, keys), []
    if manifest.get("previous"):
        return [], [f"chain: not checked: release {manifest.get('number')} follows {manifest['previous']}; give --previous FILE|URL"]
    if manifest.get("number") != 1:
        return [f"chain: release {manifest.get('number')} names no previous release (only a board's first may)"], []
    return [], []


def superseded(path, manifest: dict, key_source: str, allowed: bool) -> tuple[list[str], list[str]]:
    """Whether the board has a newer release than this one, asked of the site whose key list was given by URL (its
    record of this release names the board's latest). A superseded release is a difference unless `allowed`."""
    digest = signing.release_digest(Path(path))
    url = signing.record_url(key_source, digest)
    if url is None:
        return [], [
            f"latest: not checked: give --key the site's keys.json by URL to learn whether release {manifest.get('number')} is its board's latest"
        ]
    latest = signing.latest_release(url)
    if latest["digest"] == digest:
        return [], []
    line = f"superseded by release {latest['number']} {latest['digest']} (made {latest['created']}; this is release {manifest.get('number')}): {latest['url']}"
    return ([], [f"{line} (allowed by --allow-superseded)"]) if allowed else ([line], [])


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zip")
    parser.add_argument("--check", action="store_true", help="compare every published number with the recomputed one")
    parser.add_argument("--key", help="the site's public key (PEM) or key list (keys.json), by path or URL: check the signature")
    parser.add_argument("--previous", help="the release this one follows, by path or URL (default with a --key URL: fetched from the site)")
    parser.add_argument(
        "--allow-superseded", action="store_true", help="with a --key URL: a release the site has a newer one of is a note, not a failure"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """0 when everything checks, 1 with one line per difference, 2 with one line `cannot check: …` (or `cannot
    recompute: …`) when the zip, a member of it, a key or the site cannot be read."""
    args = arguments(argv)
    try:
        if not args.check:
            json.dump(recompute(args.zip), sys.stdout, indent=1)
            return 0
        found, notes = check_all(args)
    except signing.ReleaseUnreadable as error:
        print(f"cannot {'check' if args.check else 'recompute'}: {error}", file=sys.stderr)
        return 2
    agreed = "every published figure and statistic recomputes to the same number" + (", and the signature holds" if args.key else "")
    print("\n".join(found) or agreed)
    for line in notes:
        print(line if line.startswith(REDACTED) else f"note: {line}")
    return 1 if found else 0


def check_all(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Every difference and note of `--check`: the zip is read whole first, so a damaged one says nothing else."""
    download = read(args.zip)
    found, notes = signature_differences(args.zip, args.key, args.previous, args.allow_superseded) if args.key else ([], [])
    if signing.MANIFEST in download.names and not args.key:
        notes.append("signature: not checked: give --key with the site's keys.json (or its public key) to check it")
    if download.redaction is not None and not args.key:
        notes += [
            f"redacted (its record's signature not checked): {line.removeprefix(REDACTED)}"
            for line in signing.redaction_lines(download.redaction)
        ]
    return found + check(download, _plain(recompute_download(download))), notes


if __name__ == "__main__":
    sys.exit(main())
