"""A redacted release: the entries its redaction names must have nothing left that the erasure removes."""

from __future__ import annotations

from .download import Download


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
