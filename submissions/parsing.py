"""Parsing uploaded prompt files (JSON Lines or CSV) into rows, or a list of line-numbered errors.

Pure functions: no database. The service checks task ids against the pack and writes
all rows in one transaction, or none when any line is wrong.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from evaluator.prompters.text import blank, normalise_prompt


@dataclass(frozen=True)
class PromptRow:
    line: int
    task_id: str
    sample: int
    prompt: str


@dataclass(frozen=True)
class Limits:
    max_bytes: int
    max_chars: int
    max_samples: int


MAX_ERRORS_SHOWN = 50  # a file of 100,000 bad lines gets the first 50 problems and a count, not megabytes
MAX_NUMBER_DIGITS = 20


class PromptFileError(Exception):
    def __init__(self, filename: str, errors: list[str]):
        shown = errors[:MAX_ERRORS_SHOWN]
        if len(errors) > MAX_ERRORS_SHOWN:
            shown.append(f"… and {len(errors) - MAX_ERRORS_SHOWN:,} more problem(s)")
        super().__init__(f"{filename}: " + "; ".join(shown[:5]))
        self.filename = filename
        self.errors = shown
        self.total = len(errors)


def shown(value: object, limit: int = 60) -> str:
    """A user's value as it may appear in a message: repr (escapes NUL, control characters and unpaired
    surrogates, which could not be encoded in the response), cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_problem(value: str) -> str | None:
    """What makes a string unstorable (PostgreSQL refuses NUL; UTF-8 cannot encode an unpaired surrogate)."""
    if "\x00" in value:
        return "contains a NUL character (U+0000)"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains an unpaired surrogate ({shown(exc.object[exc.start : exc.end])})"
    return None


class CsvCell(str):
    """A CSV cell's text, where a number may be written as digits (in JSON a number must be a number)."""


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a number of {len(digits):,} digits; at most {MAX_NUMBER_DIGITS} are accepted")
    return int(digits)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_prompt_file(filename: str, data: bytes, known_task_ids: set[str], limits: Limits) -> list[PromptRow]:
    """Every problem is reported with its line number; raises PromptFileError if there is any."""
    if len(data) > limits.max_bytes:
        raise PromptFileError(filename, [f"file is {len(data):,} bytes; the limit is {limits.max_bytes:,} bytes"])
    text = _decode(filename, data)
    fmt = _format_of(filename, text)
    raw_rows, errors = (_read_csv if fmt == "csv" else _read_jsonl)(text)
    rows = _validate(raw_rows, known_task_ids, limits, errors)
    if not rows and not errors:
        errors.append("the file holds no prompts")
    if errors:
        raise PromptFileError(filename, sorted(errors, key=_line_of))
    return rows


def _decode(filename: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise PromptFileError(
            filename, [f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save the file as UTF-8"]
        ) from None


def _format_of(filename: str, text: str) -> str:
    lower = filename.lower()
    if lower.endswith(".csv"):
        return "csv"
    if lower.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    return "jsonl" if text.lstrip().startswith("{") else "csv"


def _read_jsonl(text: str) -> tuple[list[tuple[int, dict]], list[str]]:
    rows, errors = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_int=_bounded_int, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            errors.append(f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})")
            continue
        except ValueError as exc:  # a number too long, NaN or Infinity
            errors.append(f"line {number}: invalid JSON ({exc})")
            continue
        except RecursionError:
            errors.append(f"line {number}: invalid JSON (nested too deeply)")
            continue
        if not isinstance(obj, dict):
            errors.append(f"line {number}: expected a JSON object with task_id and prompt")
            continue
        rows.append((number, obj))
    return rows, errors


def _read_csv(text: str) -> tuple[list[tuple[int, dict]], list[str]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in reader.fieldnames or []]
    except csv.Error as exc:  # e.g. a header field longer than the csv module's field limit
        return [], [f"line 1: the CSV header cannot be read ({exc})"]
    missing = [c for c in ("task_id", "prompt") if c not in header]
    if missing:
        return [], [f"line 1: the header needs columns task_id and prompt (missing: {', '.join(missing)})"]
    reader.fieldnames = header
    rows, errors = [], []
    try:
        for record in reader:
            if None in record:
                errors.append(f"line {reader.line_num}: more fields than the header has")
                continue
            cells = {k: v for k, v in record.items() if v not in (None, "") or k == "prompt"}
            if "sample" in cells:
                cells["sample"] = CsvCell(cells["sample"])
            rows.append((reader.line_num, cells))
    except csv.Error as exc:
        errors.append(f"line {reader.line_num}: {exc}")
    return rows, errors


def _validate(raw_rows: list[tuple[int, dict]], known: set[str], limits: Limits, errors: list[str]) -> list[PromptRow]:
    rows, seen = [], {}
    for number, obj in raw_rows:
        row = _row(number, obj, known, limits, errors)
        if row is None:
            continue
        key = (row.task_id, row.sample)
        if key in seen:
            errors.append(f"line {number}: duplicate prompt for task {row.task_id!r} sample {row.sample} (first on line {seen[key]})")
            continue
        seen[key] = number
        rows.append(row)
    return rows


def _row(number: int, obj: dict, known: set[str], limits: Limits, errors: list[str]) -> PromptRow | None:
    before = len(errors)
    unknown = sorted(set(obj) - {"task_id", "prompt", "sample"})
    if unknown:
        errors.append(f"line {number}: unknown field(s) {', '.join(shown(u) for u in unknown[:5])} (allowed: task_id, prompt, sample)")
    task_id = obj.get("task_id", "")
    task_id = task_id.strip() if isinstance(task_id, str) else ""
    if not task_id:
        errors.append(f"line {number}: task_id is missing or not a string")
    elif task_id not in known:
        errors.append(f"line {number}: unknown task_id {shown(task_id)} (not in this pack)")
    prompt = normalise_prompt(obj["prompt"]) if isinstance(obj.get("prompt"), str) else None
    if prompt is None or blank(prompt):
        errors.append(f"line {number}: prompt is empty" + (" (only whitespace and invisible characters)" if prompt else ""))
    elif len(prompt) > limits.max_chars:
        errors.append(f"line {number}: prompt is {len(prompt):,} characters; the limit is {limits.max_chars:,}")
    elif text_problem(prompt):
        errors.append(f"line {number}: prompt {text_problem(prompt)}")
    sample = _sample(number, obj.get("sample", 0), limits, errors)
    if len(errors) > before:
        return None
    return PromptRow(line=number, task_id=task_id, sample=sample, prompt=prompt)


def _sample(number: int, value: object, limits: Limits, errors: list[str]) -> int:
    """An integer (JSON) or a CSV cell of digits (CSV has only text; _read_csv marks its cells as CsvCell)."""
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            sample = value
        else:
            sample = _bounded_int(value.strip()) if isinstance(value, CsvCell) else -1
    except ValueError:
        sample = -1
    if not 0 <= sample < limits.max_samples:
        errors.append(f"line {number}: sample must be an integer from 0 to {limits.max_samples - 1}, not {shown(value)}")
    return sample


def _line_of(message: str) -> int:
    head = message.split(":", 1)[0]
    return int(head[5:]) if head.startswith("line ") and head[5:].isdigit() else 0
