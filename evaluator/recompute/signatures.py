"""A signed release (docs/releases.md): its signature and members' hashes, what its signed manifest says of the
board, its link to the release before it and whether the site has released the board again since."""

from __future__ import annotations

import contextlib
from pathlib import Path

from .. import signing
from .compare import short
from .download import MALFORMED, json_object


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
        board = json_object(archive.read("board.json")) if "board.json" in archive.namelist() else {}
    pack, judge = board.get("pack") or {}, board.get("judge") or {}
    said = {
        "board": {"pack": pack.get("name"), "pack_version": pack.get("version"), "revision": pack.get("revision")},
        "judge": {"id": judge.get("id"), "version": judge.get("version")},
        "code_version": board.get("code_version"),
    }
    return [
        f"signature: the signed manifest's {part} is {short(manifest.get(part))}, board.json says {short(value)}"
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
