"""Erasure meets the signed chain: a release that carries a withdrawn entry is re-issued without the entry's prompts,
rewritten prompts, image links and judge rationales (docs/releases.md, "Erasure").

The re-issued zip keeps every other member byte for byte, and MANIFEST.json and MANIFEST.sig as they were, so the
release keeps its digest and its place in the chain. REDACTION.json, signed by the key in use (REDACTION.sig), names the
release's digest, every entry removed so far, each redaction (when, by which key) and the new SHA-256 of each member it
rewrote; evaluator/signing.py checks it. The zip it replaces is deleted from the media storage once the release's row
names the new one. A prompt's words and list flag stay on its line in prompts.jsonl: the board's length statistics read
them, so a redacted release still recomputes to its published numbers.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.models import Submission
from evaluator import signing
from evaluator.metrics.board import prompt_style

from .models import Redaction, Release, SigningKey

STAMP = (1980, 1, 1, 0, 0, 0)  # every member's time, as leaderboard/releases.py writes them
BLANKED = ("prompt", "rewritten_prompt", "image_url")  # a breakdown row's text and links of its prompt
REMOVED = {  # what a redaction takes out of each member it rewrites, in its record's words
    "prompts.jsonl": "the prompt of each line of the entries (its words and list flag kept: the length statistics read them)",
    "breakdown.csv": "prompt, rewritten_prompt and image_url of each row of the entries",
    "breakdown.jsonl": "prompt, rewritten_prompt and image_url of each row of the entries",
    "rationales.jsonl": "every line of the entries",
}


def withdrawn_entries(pack_id: int, revision: int) -> set[int]:
    """The board's entries their team (or staff) took off it: what its releases must no longer carry."""
    found = Submission.objects.filter(pack_id=pack_id, pack_revision=revision, published=False, withdrawn__isnull=False)
    return set(found.values_list("pk", flat=True))


def releases_redact(releases, withdrawn: set[int], private: signing.Ed25519PrivateKey, key: SigningKey) -> list[Redaction]:
    """Re-issue each of `releases` (one board's) that carries one of `withdrawn` not yet removed from it; then, once
    committed, delete the zips the redactions replaced."""
    made = []
    for release in releases.order_by("number").prefetch_related("redactions"):
        removed = {e for r in release.redactions.all() for e in r.entries}
        if (set(release_entries(release)) & withdrawn) - removed:
            made.append(release_redact(release, withdrawn, private, key))
    transaction.on_commit(lambda: replaced_delete(releases))
    return [m for m in made if m is not None]


def release_entries(release: Release) -> list[int]:
    """The entries a release carries, read once from its board.json for a release made before they were recorded."""
    if release.entries is None:
        with default_storage.open(release.file, "rb") as handle, zipfile.ZipFile(handle) as archive:
            release.entries = [int(e["entry"]) for e in json.loads(archive.read("board.json"))["entries"]]
        Release.objects.filter(pk=release.pk).update(entries=release.entries)
    return release.entries


def release_redact(release: Release, withdrawn: set[int], private, key: SigningKey) -> Redaction | None:
    """The release re-issued without the withdrawn entries it carries (and those earlier redactions removed), its row
    naming the new zip; None when another job removed them first."""
    with transaction.atomic():
        row = Release.objects.select_for_update().get(pk=release.pk)
        earlier = list(row.redactions.select_related("key").order_by("number"))
        removed = {e for r in earlier for e in r.entries}
        todo = sorted((set(row.entries or []) & withdrawn) - removed)
        if not todo:
            return None
        created = timezone.now()
        with tempfile.TemporaryDirectory(prefix="atelier-redaction-") as folder:
            path, record, raw = reissue(row, earlier, todo, created, private, key, Path(folder))
            with path.open("rb") as handle:
                name = default_storage.save(f"releases/{row.digest}-redacted-{len(earlier) + 1}.zip", File(handle))
            size = path.stat().st_size
        try:
            with transaction.atomic():
                made = Redaction.objects.create(
                    release=row,
                    number=len(earlier) + 1,
                    entries=todo,
                    digest=signing.digest(raw),
                    key=key,
                    created=created,
                    files=record["files"],
                    replaced=row.file,
                )
                Release.objects.filter(pk=row.pk).update(file=name, size=size)
        except IntegrityError:  # redacted by another job meanwhile: its zip stands, ours goes
            default_storage.delete(name)
            raise
    return made


def reissue(row: Release, earlier: list[Redaction], todo: list[int], created, private, key: SigningKey, folder: Path):
    """(the re-issued zip, its redaction record, the record's bytes), written under `folder` from the stored zip."""
    source, target = folder / "release.zip", folder / "redacted.zip"
    with default_storage.open(row.file, "rb") as handle, source.open("wb") as out:
        shutil.copyfileobj(handle, out)
    erased = sorted({e for r in earlier for e in r.entries} | set(todo))
    with signing.open_zip(source) as old, zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as new:
        manifest = json.loads(old.read(signing.MANIFEST))
        before = signing.digest(old.read(signing.REDACTION)) if signing.REDACTION in old.namelist() else None
        changed = redacted_members(old, new, set(erased))
        original = {f["name"]: f["sha256"] for f in manifest["files"]}
        steps = [*((r.entries, r.created, r.key) for r in earlier), (todo, created, key)]
        record = {
            "format": signing.REDACTION_FORMAT,
            "release": row.digest,
            "board": manifest["board"],
            "judge": manifest["judge"],
            "number": manifest["number"],
            "entries": erased,
            "removed": {name: REMOVED[name] for name in changed},
            "history": [{"entries": e, "created": at.isoformat(), "key": k.fingerprint} for e, at, k in steps],
            "files": [{"name": name, **sums, "original": original.get(name)} for name, sums in changed.items()],
            "created": created.isoformat(),
            "key": key.fingerprint,
            "previous": before,
        }
        raw = signing.manifest_bytes(record)
        new.writestr(_info(signing.REDACTION), raw)
        new.writestr(_info(signing.REDACTION_SIGNATURE), signing.sign(raw, private))
    return target, record, raw


def redacted_members(old: zipfile.ZipFile, new: zipfile.ZipFile, erased: set[int]) -> dict[str, dict]:
    """Copy every member of `old` into `new` (an earlier redaction's record left out), the REDACTABLE ones without the
    erased entries' text; each rewritten member's name -> {sha256, size}."""
    changed = {}
    for name in old.namelist():
        if name in (signing.REDACTION, signing.REDACTION_SIGNATURE):
            continue
        with old.open(name) as source, new.open(_info(name), "w") as target:
            if name not in REWRITE:
                shutil.copyfileobj(source, target)
                continue
            sha, size = hashlib.sha256(), 0
            for line in REWRITE[name](io.TextIOWrapper(source, encoding="utf-8", newline=""), erased):
                data = line.encode("utf-8")
                target.write(data)
                sha.update(data)
                size += len(data)
        changed[name] = {"sha256": sha.hexdigest(), "size": size}
    return changed


def _rows(lines: Iterable[str]) -> Iterator[tuple[str, dict | None]]:
    for line in lines:
        yield line, (json.loads(line) if line.strip() else None)


def _prompts(lines: Iterable[str], erased: set[int]) -> Iterator[str]:
    for line, row in _rows(lines):
        if row is None or row.get("entry") not in erased or row.get("prompt") is None:
            yield line
            continue
        words, as_list = prompt_style(row["prompt"])
        yield json.dumps({**row, "prompt": None, "words": words, "list": as_list}, ensure_ascii=False) + "\n"


def _breakdown_jsonl(lines: Iterable[str], erased: set[int]) -> Iterator[str]:
    for line, row in _rows(lines):
        blank = row is not None and row.get("submission") in erased
        yield json.dumps({**row, "prompt": None, "rewritten_prompt": "", "image_url": ""}, ensure_ascii=False) + "\n" if blank else line


def _breakdown_csv(lines: Iterable[str], erased: set[int]) -> Iterator[str]:
    """Rows of the erased entries with their prompt, rewritten prompt and image link blank (rows re-written as the
    site's csv writer writes them, so the others keep their bytes)."""
    reader, out = csv.reader(lines), io.StringIO()
    writer, names = csv.writer(out), {str(e) for e in erased}
    header = next(reader, None)
    if header is None:
        return
    writer.writerow(header)
    at, blanked = header.index("submission"), [header.index(c) for c in BLANKED]
    for row in reader:
        if row[at] in names:
            row = [("" if i in blanked else cell) for i, cell in enumerate(row)]
        writer.writerow(row)
        yield out.getvalue()
        out.seek(0)
        out.truncate()
    yield out.getvalue()


def _rationales(lines: Iterable[str], erased: set[int]) -> Iterator[str]:
    return (line for line, row in _rows(lines) if row is None or row.get("entry") not in erased)


REWRITE: dict[str, Callable[[Iterable[str], set[int]], Iterator[str]]] = {
    "prompts.jsonl": _prompts,
    "breakdown.csv": _breakdown_csv,
    "breakdown.jsonl": _breakdown_jsonl,
    "rationales.jsonl": _rationales,
}


def replaced_delete(releases) -> list[str]:
    """Delete from the media storage each zip a redaction replaced (the release's row already names the new one). The
    name is kept on the redaction until its file is gone, so a delete that fails is done by the next release job."""
    gone = []
    for redaction in Redaction.objects.filter(release__in=releases).exclude(replaced=""):
        default_storage.delete(redaction.replaced)  # a file already gone is no error, on disk or in a bucket
        Redaction.objects.filter(pk=redaction.pk).update(replaced="")
        gone.append(redaction.replaced)
    return gone


def _info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, STAMP)
    info.compress_type = zipfile.ZIP_DEFLATED
    return info
