"""Streaming CSV and JSON Lines for every download (breakdowns, call logs), with one rule for spreadsheet safety."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A cell a spreadsheet will not run: text starting like a formula gets a leading apostrophe (OWASP's rule for
    CSV injection). Numbers stay numbers; dicts and lists become JSON text (then checked like any text)."""
    if isinstance(value, (dict, list)):
        value = json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_lines(rows: Iterable[dict], fields: Sequence[str]) -> Iterator[str]:
    """One CSV line per row (header first), streamed: memory stays one row whatever the download's size."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(fields), extrasaction="raise")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_cell(v) for k, v in row.items()})
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def jsonl_lines(rows: Iterable[dict]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"
