"""Streaming CSV and JSON Lines for every download (breakdowns, call logs), with one rule for spreadsheet safety."""

from __future__ import annotations

import csv
import io
import json
import zipfile
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


class _Pipe(io.RawIOBase):
    """A write-only, unseekable sink whose bytes are taken out as the zip is written (zipfile streams to it)."""

    def __init__(self):
        self.chunks: list[bytes] = []
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.chunks.append(bytes(data))
        self.size += len(data)
        return len(data)

    def take(self) -> bytes:
        data, self.chunks, self.size = b"".join(self.chunks), [], 0
        return data


def zip_stream(files: Iterable[tuple[str, Iterable[str]]]) -> Iterator[bytes]:
    """A zip archive of (name, text lines) built as it is sent: memory holds one line and the deflate window, not a file."""
    pipe = _Pipe()
    with zipfile.ZipFile(pipe, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, lines in files:
            with archive.open(name, "w") as member:
                for line in lines:
                    member.write(line.encode("utf-8"))
                    if pipe.size >= 64 * 1024:
                        yield pipe.take()
            yield pipe.take()
    yield pipe.take()
