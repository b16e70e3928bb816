"""Signed, chained whole-board releases (docs/releases.md; the format and the checks are evaluator/signing.py).

A release is made by the release_job whenever what a board's release carries changes (its statistics rebuilt, its
human rows rebuilt, its difficulty predictions made or a predictor installed: leaderboard/apps.py), and, as a last
resort, when its download is asked for and the boards changed since its board's latest release was found current.
Its members are hashed as they are written; when they equal the latest release's, no release is made. A new one is
numbered one more, names the latest's digest, is stored under releases/<digest>.zip in the media storage and only
then recorded, so a row always has its file.

A board whose last entry was withdrawn is released too (an empty board), so its latest release never carries a
withdrawn entry; and before a board is released its earlier releases that carry a withdrawn entry are re-issued
without the entry's prompts, image links and rationales (leaderboard/redaction.py): the next release's manifest names
each such redaction (`redactions`), so the chain records what was removed, when and by which key.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.boards import boards_version
from evaluation.difficulty import board_entries
from evaluation.judges import JudgeKey, pick_judge
from evaluation.models import Submission
from evaluator import signing
from tasks import difficulty
from tasks.models import PredictedDifficulty, TaskPack

from .board_download import board_files
from .models import Redaction, Release, SigningKey
from .redaction import releases_redact, withdrawn_entries
from .selectors import Board, board_judges, leaderboard_boards

log = logging.getLogger(__name__)
STAMP = (1980, 1, 1, 0, 0, 0)  # every member's time in the zip: a member's bytes, not when it was written, are the release


class NoReleaseKey(Exception):
    """The site has no usable signing key (ATELIER_RELEASE_KEY): no release can be made."""


# --- the key ------------------------------------------------------------------------------------------------------


def key_create(path: Path | None = None, *, rotate: bool = False) -> SigningKey:
    """Write a new private key (mode 0600, replacing the file in one step) and list its public key; with rotate,
    the key it replaces stays listed, retired from now."""
    path = Path(path or settings.ATELIER_RELEASE_KEY)
    if path.exists() and not rotate:
        raise NoReleaseKey(f"{path} exists: pass --rotate to replace it (its public key stays listed, retired)")
    private = signing.Ed25519PrivateKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".release-key-")
    try:
        os.fchmod(handle, 0o600)
        os.write(handle, signing.private_pem(private))
    finally:
        os.close(handle)
    os.replace(temporary, path)
    return key_listed(private.public_key())


def key_listed(public: signing.Ed25519PublicKey) -> SigningKey:
    """The listed row of this public key, listing it (and retiring the key in use before it) on its first use."""
    found, made = SigningKey.objects.get_or_create(
        fingerprint=signing.fingerprint(public), defaults={"public_key": signing.public_pem(public), "created": timezone.now()}
    )
    if made:
        SigningKey.objects.exclude(pk=found.pk).filter(retired__isnull=True).update(retired=found.created)
    return found


def signing_key() -> tuple[signing.Ed25519PrivateKey, SigningKey]:
    path = Path(settings.ATELIER_RELEASE_KEY)
    try:
        private = signing.load_private(path.read_bytes(), str(path))
    except FileNotFoundError:
        raise NoReleaseKey(f"no release key at {path}: run `manage.py release_key create`") from None
    except (OSError, signing.ReleaseUnreadable) as error:
        raise NoReleaseKey(f"the release key {path} cannot be used: {error}") from None
    listed = key_listed(private.public_key())
    if listed.retired is not None:
        raise NoReleaseKey(
            f"the release key {path} ({listed.fingerprint[:16]}…) was retired on {listed.retired:%Y-%m-%d}: it signs nothing new"
        )
    return private, listed


def key_state() -> str:
    """The signing key as /readyz reports it, reading only: "" when there is none (downloads are unsigned, which the
    site allows), its fingerprint when it can sign; NoReleaseKey, in words without its path, when it is set but unusable."""
    path = Path(settings.ATELIER_RELEASE_KEY)
    try:
        private = signing.load_private(path.read_bytes(), "the release key")
    except FileNotFoundError:
        return ""
    except OSError as error:
        raise NoReleaseKey(f"the release key cannot be read ({type(error).__name__})") from None
    except signing.ReleaseUnreadable:
        raise NoReleaseKey("the release key is not an Ed25519 private key in PEM") from None
    fingerprint = signing.fingerprint(private.public_key())
    retired = SigningKey.objects.filter(fingerprint=fingerprint, retired__isnull=False).values_list("retired", flat=True).first()
    if retired is not None:
        raise NoReleaseKey(f"the release key {fingerprint[:16]}… was retired on {retired:%Y-%m-%d}: it signs nothing new")
    return fingerprint


def current_key() -> SigningKey | None:
    """The listed key in use (the board page names its fingerprint), if any."""
    return SigningKey.objects.filter(retired__isnull=True).order_by("-created").first()


# --- releases -----------------------------------------------------------------------------------------------------


def board_releases(board: Board, judge: JudgeKey):
    return Release.objects.filter(pack=board.pack, revision=board.revision, judge_id=judge.judge_id, judge_version=judge.version)


def latest_of(release: Release) -> Release:
    """The latest release of the board `release` is of (itself when none followed it)."""
    same = {f: getattr(release, f) for f in ("pack_id", "revision", "judge_id", "judge_version")}
    return Release.objects.filter(**same).select_related("key").order_by("-number").first() or release


def _state() -> str:
    """What a release's content follows besides the code: the boards' version (statistics and human rows) and the
    difficulty predictions shown in the breakdown (the installed predictor and how many prompts it has scored)."""
    predictor = (difficulty.installed() or {}).get("version", "")
    predicted = PredictedDifficulty.objects.filter(predictor=predictor).count() if predictor else 0
    return hashlib.sha256(f"{boards_version().key}:{predictor}:{predicted}".encode()).hexdigest()[:40]


def release_current(board: Board, judge: JudgeKey) -> Release:
    """The board's latest release, made first when the boards or the predictions changed since it was last found
    current."""
    version = _state()
    latest = board_releases(board, judge).order_by("-number").first()
    if latest is not None and latest.seen_version == version:
        return latest
    found = release_make(board, judge)
    Release.objects.filter(pk=found.pk).update(seen_version=version)
    return found


def release_make(board: Board, judge: JudgeKey) -> Release:
    """A release of the board as it is now: the latest one when nothing in it changed, else a new one, signed."""
    private, key = signing_key()
    latest = board_releases(board, judge).order_by("-number").first()
    with tempfile.TemporaryDirectory(prefix="atelier-release-") as folder:
        path = Path(folder) / "release.zip"
        members = write_members(path, board_files(board, judge, _absolute))
        if latest is not None and latest.members == members:
            return latest
        created = timezone.now()
        pending = Redaction.objects.filter(release__in=board_releases(board, judge), recorded_in=None)
        recorded = list(pending.select_related("release", "key").order_by("created", "pk"))
        manifest = {
            "format": signing.FORMAT,
            "board": {"pack": board.pack.name, "pack_version": board.pack.version, "revision": board.revision},
            "judge": {"id": judge.judge_id, "version": judge.version},
            "number": latest.number + 1 if latest else 1,
            "previous": latest.digest if latest else None,
            "created": created.isoformat(),
            "key": key.fingerprint,
            "site": settings.ATELIER_SITE_URL,
            "code_version": settings.ATELIER_CODE_VERSION,
            "files": members,
        }
        if recorded:  # the redactions of this board's releases since its latest release: the chain records them
            manifest["redactions"] = [_recorded(r) for r in recorded]
        raw = signing.manifest_bytes(manifest)
        digest = signing.digest(raw)
        with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(_info(signing.MANIFEST), raw)
            archive.writestr(_info(signing.SIGNATURE), signing.sign(raw, private))
        with path.open("rb") as handle:
            name = default_storage.save(f"releases/{digest}.zip", File(handle))
        size = path.stat().st_size
    fields = {"pack": board.pack, "revision": board.revision, "judge_id": judge.judge_id, "judge_version": judge.version}
    try:
        with transaction.atomic():
            made = Release.objects.create(
                **fields,
                number=manifest["number"],
                digest=digest,
                previous=latest.digest if latest else "",
                key=key,
                created=created,
                file=name,
                size=size,
                members=members,
                entries=sorted(board_entries(board.pack.pk, board.revision, judge.judge_id, judge.version).values_list("pk", flat=True)),
            )
            Redaction.objects.filter(pk__in=[r.pk for r in recorded]).update(recorded_in=made)
            return made
    except IntegrityError:  # another maker released this board first: keep its release, not ours
        default_storage.delete(name)
        winner = board_releases(board, judge).order_by("-number").first()
        if winner is None:
            raise
        return winner


def _recorded(redaction: Redaction) -> dict:
    """A redaction as a later release's manifest names it: the release redacted, what was removed, when, by which key."""
    return {
        "release": redaction.release.digest,
        "number": redaction.release.number,
        "entries": redaction.entries,
        "created": redaction.created.isoformat(),
        "key": redaction.key.fingerprint,
        "redaction": redaction.digest,
    }


def write_members(path: Path, files: Iterable[tuple[str, Iterator[str]]]) -> list[dict]:
    """Write each (name, text lines) into a new zip at `path`; each member's name, SHA-256 and size, in order.
    ValueError when two members (or a member and the manifest or signature to come) would be one file."""
    members = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, lines in files:
            sha, size = hashlib.sha256(), 0
            with archive.open(_info(name), "w") as member:
                for line in lines:
                    data = line.encode("utf-8")
                    member.write(data)
                    sha.update(data)
                    size += len(data)
            members.append({"name": name, "sha256": sha.hexdigest(), "size": size})
    twice = signing.repeated([m["name"] for m in members] + [signing.MANIFEST, signing.SIGNATURE])
    if twice:  # every reader refuses such a zip (signing.open_zip): never make one
        raise ValueError(f"a release would hold {'; '.join(twice)}")
    return members


def _info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, STAMP)
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _absolute(path: str) -> str:
    return settings.ATELIER_SITE_URL + path if path.startswith("/") else path


def releases_make(pack_id: int | None = None, revision: int | None = None) -> int:
    """A current release of every judge's board of this pack revision, or of every board when none is named
    (release_job), each board's earlier releases redacted first; how many are new or current."""
    private, key = signing_key()  # NoReleaseKey before any work
    made = 0
    for board, judge in released_boards(pack_id, revision):
        withdrawn = withdrawn_entries(board.pack.pk, board.revision)
        if withdrawn:
            releases_redact(board_releases(board, judge), withdrawn, private, key)
        release_current(board, judge)
        made += 1
    return made


def released_boards(pack_id: int | None = None, revision: int | None = None) -> list[tuple[Board, JudgeKey]]:
    """Every (board, judge) of this pack revision (of every board when none is named) to release: those shown now, and
    those released before whose last entry has gone (an empty board is released as such, never left with a latest
    release that carries a withdrawn entry)."""
    pairs = [
        (board, judge)
        for board in leaderboard_boards()
        if pack_id is None or (board.pack.pk == pack_id and board.revision == revision)
        for judge in board_judges(board, humans=False)
    ]
    shown = {(b.pack.pk, b.revision, j.key) for b, j in pairs}
    released = Release.objects.filter(**({} if pack_id is None else {"pack_id": pack_id, "revision": revision}))
    gone = sorted(
        (p, r, j, v)
        for p, r, j, v in released.order_by().values_list("pack_id", "revision", "judge_id", "judge_version").distinct()
        if (p, r, f"{j}|{v}") not in shown
    )
    packs = TaskPack.objects.in_bulk({p for p, *_ in gone})
    return pairs + [(Board(packs[p], r), JudgeKey(j, v, _judge_label(j, v))) for p, r, j, v in gone]


def _judge_label(judge_id: str, version: str) -> str:
    labels = Submission.objects.filter(judge_id=judge_id, judge_version=version).exclude(judge_label="")
    return labels.values_list("judge_label", flat=True).first() or ""


def released_board(board: str, judge: str | None) -> tuple[Board, JudgeKey] | None:
    """The board and judge of a board key ("<pack id>:<revision>") and judge key among those released, shown now or
    not (a board whose last entry was withdrawn keeps its releases' URLs); None for a key that names none."""
    pack_id, _, revision = board.partition(":")
    if not (re.fullmatch(r"[0-9]{1,9}", pack_id) and re.fullmatch(r"[0-9]{1,9}", revision)):
        return None
    pairs = [(b, j) for b, j in released_boards(int(pack_id), int(revision)) if board_releases(b, j).exists()]
    chosen = pick_judge([j for _, j in pairs], judge)
    return next(((b, j) for b, j in pairs if j == chosen), None)
