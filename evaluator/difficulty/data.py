"""Reading PQPP-layout splits: three CSV files, validated with messages that name the file, the line and the column.

The layout is PQPP's (train.csv, validation.csv, test.csv with at least `best_caption`, `sdxl_score`, `glide_score`
and `avg_generative_score`; other columns are ignored). Scores are human ratings on PQPP's −1..2 scale. The data is
the user's own copy, read from the folder they name; nothing here knows where a copy lives.
"""

from __future__ import annotations

import csv
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

SPLITS = ("train", "validation", "test")
TEXT = "best_caption"
TARGET = "avg_generative_score"
AUXILIARY = ("sdxl_score", "glide_score")
COLUMNS = (TEXT, TARGET, *AUXILIARY)
SCORE_RANGE = (-1.0, 2.0)


class SplitsError(ValueError):
    """A split folder or file that cannot be used; the message names the file, line and column at fault."""


@dataclass(frozen=True)
class Split:
    """One split: the caption texts and, aligned with them, the target and the two generators' scores."""

    name: str
    texts: tuple[str, ...]
    target: tuple[float, ...]
    sdxl: tuple[float, ...]
    glide: tuple[float, ...]

    def __len__(self) -> int:
        return len(self.texts)


@dataclass(frozen=True)
class Splits:
    train: Split
    validation: Split
    test: Split
    sha256: str  # of the three files' bytes, train then validation then test
    files: dict[str, str]  # split name -> sha256 of that file's bytes

    def __iter__(self):
        return iter((self.train, self.validation, self.test))


def _score(path: Path, line: int, column: str, value: str | None) -> float:
    where = f"{path.name}, line {line}, column {column!r}"
    if value is None or not value.strip():
        raise SplitsError(f"{where}: empty; expected a score from {SCORE_RANGE[0]:g} to {SCORE_RANGE[1]:g}")
    try:
        number = float(value)
    except ValueError:
        raise SplitsError(f"{where}: {value[:40]!r} is not a number") from None
    low, high = SCORE_RANGE
    if not math.isfinite(number) or not low <= number <= high:
        raise SplitsError(f"{where}: {number:g} is outside PQPP's score range {low:g}..{high:g}")
    return number


def read_split(path: str | Path, name: str | None = None) -> Split:
    """One CSV file of PQPP's layout as a Split; SplitsError names the file, line and column of the first problem."""
    path = Path(path)
    if not path.is_file():
        raise SplitsError(f"{path}: no such file; a split folder holds {', '.join(s + '.csv' for s in SPLITS)}")
    texts, target, sdxl, glide = [], [], [], []
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise SplitsError(f"{path.name}, line 1: missing column(s) {', '.join(missing)}; PQPP's layout has {', '.join(COLUMNS)}")
            for row in reader:
                line = reader.line_num
                text = (row[TEXT] or "").strip()
                if not text:
                    raise SplitsError(f"{path.name}, line {line}, column {TEXT!r}: empty caption")
                texts.append(text)
                target.append(_score(path, line, TARGET, row[TARGET]))
                sdxl.append(_score(path, line, "sdxl_score", row["sdxl_score"]))
                glide.append(_score(path, line, "glide_score", row["glide_score"]))
    except UnicodeDecodeError as exc:
        raise SplitsError(f"{path.name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise SplitsError(f"{path.name}: not a readable CSV file ({exc})") from None
    if len(texts) < 2:
        raise SplitsError(f"{path.name}: {len(texts)} row(s); a split needs at least 2 to measure a correlation")
    return Split(name or path.stem, tuple(texts), tuple(target), tuple(sdxl), tuple(glide))


def read_splits(folder: str | Path) -> Splits:
    """train.csv, validation.csv and test.csv from `folder`, validated, with the hash of their bytes."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SplitsError(f"{folder}: not a folder; name the folder that holds {', '.join(s + '.csv' for s in SPLITS)}")
    whole = hashlib.sha256()
    files = {}
    for name in SPLITS:
        path = folder / f"{name}.csv"
        if path.is_file():
            data = path.read_bytes()
            whole.update(data)
            files[name] = hashlib.sha256(data).hexdigest()
    train, validation, test = (read_split(folder / f"{name}.csv", name) for name in SPLITS)
    return Splits(train, validation, test, whole.hexdigest(), files)
