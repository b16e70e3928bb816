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

The checks, a module each: figures.py and humans.py rebuild the numbers (the human rows and the scores on the humans'
tasks with evaluator.metrics.humans, the functions the site computes them with), compare.py compares them with
board.json, breakdown.py checks the breakdown files against the units, described.py the judge spec and backend configs,
redaction.py a redacted release's erasure and signatures.py a signed release's signature, chain and latest release.
"""

from __future__ import annotations

import argparse
import json
import sys

from .. import signing
from .breakdown import _skill_column, breakdown_differences
from .compare import DESCRIBED, TOLERANCE, compare, plain, published, same
from .described import backend_differences, judge_differences, judge_spec
from .download import Download, prompt_words, read
from .figures import figure_fields, recompute, recompute_download, steerability_rows
from .redaction import redaction_differences
from .signatures import chain_differences, signature_differences, superseded

__all__ = [
    "Download",
    "_skill_column",
    "arguments",
    "backend_differences",
    "breakdown_differences",
    "chain_differences",
    "check",
    "check_all",
    "compare",
    "differences",
    "figure_fields",
    "judge_differences",
    "judge_spec",
    "main",
    "prompt_words",
    "read",
    "recompute",
    "recompute_download",
    "redaction_differences",
    "same",
    "signature_differences",
    "steerability_rows",
    "superseded",
]
REDACTED = "redacted: "  # a verified redaction is stated on its own line, not as a note


def differences(path, tolerance: float = TOLERANCE) -> list[str]:
    """Every difference between board.json and what its data recompute to (empty when they agree)."""
    download = read(path)
    return check(download, plain(recompute_download(download)), tolerance)


def check(download: Download, recomputed: dict, tolerance: float = TOLERANCE) -> list[str]:
    board = download.board
    found = [f"{key}: deleted from board.json" for key in DESCRIBED if key not in board]
    found += breakdown_differences(download)
    found += redaction_differences(download)
    found += judge_differences(board.get("judge"), download.stamps)
    found += backend_differences(board.get("backends"), download.stamps)
    compare(published(board), recomputed, "", tolerance, found)
    return found


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evaluator.recompute", description=__doc__.splitlines()[0])
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
    return found + check(download, plain(recompute_download(download))), notes
