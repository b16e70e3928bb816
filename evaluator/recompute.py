"""Recompute a board download's figures and statistics from its own files (no database, no Django).

    python -m evaluator.recompute board.zip [--check]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
import zipfile
from collections import defaultdict

from .metrics.aggregate import Unit, detail_figures, figures, task_figures
from .metrics.board import board_stats_compute, prompt_styles


def _lines(archive: zipfile.ZipFile, name: str):
    with archive.open(name) as handle:
        for line in io.TextIOWrapper(handle, encoding="utf-8"):
            if line.strip():
                yield json.loads(line)


def recompute(path) -> dict:
    """{"figures": {entry: {"scope:key": value}}, "statistics": {...}} from units.jsonl, prompts.jsonl, tasks.csv and
    the statistics settings in board.json."""
    with zipfile.ZipFile(path) as archive:
        board = json.loads(archive.read("board.json"))
        units: dict[str, list[Unit]] = defaultdict(list)
        for row in _lines(archive, "units.jsonl"):
            units[str(row.pop("entry"))].append(Unit(**row))
        lengths, lists = prompt_styles((str(row["entry"]), row["task_id"], row["prompt"]) for row in _lines(archive, "prompts.jsonl"))
        tasks = list(csv.DictReader(io.TextIOWrapper(archive.open("tasks.csv"), encoding="utf-8")))
    recomputed = {entry: {f"{f.scope}:{f.key}": f.value for f in (*figures(u), *detail_figures(u), *task_figures(u))} for entry, u in units.items()}
    scores = {e: {k.split(":", 1)[1]: v for k, v in f.items() if k.startswith("task:") and v is not None} for e, f in recomputed.items()}
    categories, splits = {t["task_id"]: t["category"] for t in tasks}, {t["task_id"]: t["split"] for t in tasks}
    statistics = board_stats_compute(scores, lengths, categories, splits, board["statistics_settings"], lists)
    return {"figures": recomputed, "statistics": statistics}


def differences(path, tolerance: float = 1e-9) -> list[str]:
    """Where the recomputed numbers differ from the published ones in board.json (empty when they agree)."""
    with zipfile.ZipFile(path) as archive:
        board = json.loads(archive.read("board.json"))
    result, found = recompute(path), []
    for entry in board["entries"]:
        mine = result["figures"].get(str(entry["entry"]), {})
        for key, value in entry["figures"].items():
            if not _same(value, mine.get(key), tolerance):
                found.append(f"entry {entry['entry']} {key}: published {value}, recomputed {mine.get(key)}")
    statistics = board.get("statistics") or {}
    if "ranked_on" in statistics and statistics["ranked_on"] != result["statistics"]["ranked_on"]:
        found.append(f"ranked on: published {statistics['ranked_on']}, recomputed {result['statistics']['ranked_on']}")
    mine = {row["category"]: row for row in result["statistics"]["length"]}
    for row in statistics.get("length", []):
        for key, value in row.items():
            if not _same(value, mine.get(row["category"], {}).get(key), tolerance):
                found.append(f"length effect {row['category']} {key}: published {value}, recomputed {mine.get(row['category'], {}).get(key)}")
    published = statistics.get("entries", {})
    for entry, stats in published.items():
        for key, value in stats.items():
            if not _same(value, result["statistics"]["entries"].get(entry, {}).get(key), tolerance):
                found.append(f"entry {entry} statistics {key}: published {value}, recomputed {result['statistics']['entries'].get(entry, {}).get(key)}")
    return found


def _same(a, b, tolerance: float) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
    return a == b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zip")
    parser.add_argument("--check", action="store_true", help="compare with the published numbers in board.json")
    args = parser.parse_args(argv)
    if args.check:
        found = differences(args.zip)
        print("\n".join(found) or "every published figure and statistic recomputes to the same number")
        return 1 if found else 0
    json.dump(recompute(args.zip), sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
