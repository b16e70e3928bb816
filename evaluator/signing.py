"""Signed, chained board releases: what a release's manifest is, and how anyone checks one (no Django).

A release is a zip of the board's files plus MANIFEST.json and MANIFEST.sig. The manifest names every other member
with its SHA-256 and size, the board and judge, the release's number on that board, when it was made, the digest of
the board's previous release (null for the first) and the fingerprint of the key that signed it. MANIFEST.sig is the
Ed25519 signature of the manifest's exact bytes (base64). A release's digest is the SHA-256 of those bytes, so a
chain of digests covers every member of every release before it.

A release may be redacted (docs/releases.md, "Erasure"): the site re-issues it with the prompts, rewritten prompts, image
links and judge rationales of withdrawn entries removed, keeping its MANIFEST.json and MANIFEST.sig as they were (so its
digest, and every link to it, stays) and adding REDACTION.json and REDACTION.sig: the redaction record, signed by the
site's key, naming the release's digest, the entries removed, when and by which key, and the new SHA-256 of each member
it changed (only REDACTABLE members may change: every number stays as the manifest signed it).

Every reader here opens a zip through open_zip, which refuses one that is cut short or names a member twice (tools
differ on which of two same-named members they read). A public key is given as a PEM file, or as the site's key list
(`/releases/keys.json`: every key the site has signed with, with the dates it was in use), by path or URL.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import posixpath
import tempfile
import urllib.request
import zipfile
import zlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urljoin, urlparse

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

FORMAT = "atelier-release/1"
MANIFEST, SIGNATURE = "MANIFEST.json", "MANIFEST.sig"
REDACTION_FORMAT = "atelier-redaction/1"
REDACTION, REDACTION_SIGNATURE = "REDACTION.json", "REDACTION.sig"
# The members a redaction may change: those that carry an entry's prompts (prompts.jsonl, the breakdowns' prompt and
# rewritten_prompt), its image links (the breakdowns' image_url) and the judge's rationales (which may quote a prompt).
REDACTABLE = ("prompts.jsonl", "breakdown.csv", "breakdown.jsonl", "rationales.jsonl")
FETCH_TIMEOUT = 30  # seconds for a key list or a previous release fetched by URL
FETCH_LIMIT = 2 * 1024**3  # a release fetched by URL larger than this is refused


class ReleaseUnreadable(Exception):
    """A key or release that cannot be read at all (a missing file, an unreachable URL, not PEM nor a key list, a zip
    that is cut short or names a member twice, a member that is not what it should be)."""


@dataclass(frozen=True)
class PublicKey:
    key: Ed25519PublicKey
    fingerprint: str
    created: str | None = None  # ISO datetimes from the key list: when the site began and stopped signing with it
    retired: str | None = None


def fingerprint(key: Ed25519PublicKey) -> str:
    """SHA-256 of the raw 32-byte public key, in hex: what the board page names and a manifest carries."""
    return hashlib.sha256(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)).hexdigest()


def public_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def private_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def load_private(data: bytes, name: str) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise ReleaseUnreadable(f"{name}: not an unencrypted PEM private key ({error})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ReleaseUnreadable(f"{name}: a {type(key).__name__}, not an Ed25519 key")
    return key


def manifest_bytes(manifest: dict) -> bytes:
    """The one way a manifest is written (sorted keys, floats and text as json writes them); its bytes are signed."""
    return (json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sign(manifest: bytes, key: Ed25519PrivateKey) -> bytes:
    return base64.b64encode(key.sign(manifest)) + b"\n"


# --- reading keys and releases, from a path or a URL --------------------------------------------------------------


def _is_url(source: str) -> bool:
    return urlparse(source).scheme in ("http", "https")


def _fetch(url: str, limit: int) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT) as response:  # noqa: S310 - http(s) only (_is_url)
            data = response.read(limit + 1)
    except OSError as error:
        raise ReleaseUnreadable(f"{url}: {error}") from None
    if len(data) > limit:
        raise ReleaseUnreadable(f"{url}: larger than {limit} bytes")
    return data


def _read(source: str, limit: int = 1024**2) -> bytes:
    if _is_url(source):
        return _fetch(source, limit)
    try:
        return Path(source).read_bytes()
    except OSError as error:
        raise ReleaseUnreadable(f"{source}: {error.strerror or error}") from None


def read_keys(source: str) -> list[PublicKey]:
    """The public keys a PEM file or a key list (JSON: {"keys": [{public_key, created, retired}, ...]}) gives."""
    data = _read(source)
    if data.lstrip().startswith(b"-----BEGIN"):
        return [_public(data, source)]
    try:
        listed = json.loads(data)["keys"]
        return [
            PublicKey(**{**_public(k["public_key"].encode(), source).__dict__, "created": k.get("created"), "retired": k.get("retired")})
            for k in listed
        ]
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ReleaseUnreadable(f"{source}: neither a PEM public key nor a key list ({type(error).__name__}: {error})") from None


def _public(data: bytes, source: str) -> PublicKey:
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError as error:
        raise ReleaseUnreadable(f"{source}: not a PEM public key ({error})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ReleaseUnreadable(f"{source}: a {type(key).__name__}, not an Ed25519 key")
    return PublicKey(key, fingerprint(key))


def release_path(source: str) -> tuple[Path, tempfile.TemporaryDirectory | None]:
    """A release given by path, or fetched by URL into a temporary folder (returned so the caller keeps it alive)."""
    if not _is_url(source):
        return Path(source), None
    folder = tempfile.TemporaryDirectory(prefix="atelier-release-")
    path = Path(folder.name) / "release.zip"
    path.write_bytes(_fetch(source, FETCH_LIMIT))
    return path, folder


# --- opening a zip: every reader of a board download or release goes through these ----------------------------------

# What reading a member of a damaged zip raises: a bad CRC or a header that names another file (BadZipFile), deflate
# data cut short (EOFError, zlib.error), a compression method zipfile lacks (NotImplementedError), a file that went away
# (OSError).
DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError)


def open_zip(path) -> zipfile.ZipFile:
    """A board download or release opened for reading. ReleaseUnreadable when it is not a whole zip, or when two members
    would be one file: zipfile reads the last member of a name and a streaming reader (or an unzip to disk) the first,
    so a forged board.json placed before the signed one would be checked by one tool and read by another."""
    name = Path(path).name
    try:
        archive = zipfile.ZipFile(path)
    except (*DAMAGED, ValueError) as error:  # ValueError: a directory whose offsets point outside the file
        raise ReleaseUnreadable(f"{name}: not a whole zip file ({error})") from None
    twice = repeated(archive.namelist())
    if twice:
        archive.close()
        raise ReleaseUnreadable(f"{name}: holds {'; '.join(twice)}: readers differ on which of them they read, so it is refused")
    return archive


def repeated(names: list[str]) -> list[str]:
    """Each file that more than one member would be (the same name twice; or ./name, a\\b for a/b, another case), in words."""
    files: dict[str, list[str]] = defaultdict(list)
    for name in names:
        files[posixpath.normpath(name.replace("\\", "/")).lstrip("/").casefold()].append(name)
    return [
        f"{found[0]} {len(found)} times" if len(set(found)) == 1 else " and ".join(map(repr, found)) + " as one file"
        for found in files.values()
        if len(found) > 1
    ]


def require(archive: zipfile.ZipFile, names: tuple[str, ...]) -> None:
    missing = [n for n in names if n not in archive.namelist()]
    if missing:
        raise ReleaseUnreadable(f"{Path(str(archive.filename)).name}: has no {' and no '.join(missing)}")


@contextlib.contextmanager
def reading(name: str, *errors: type[Exception]) -> Iterator[None]:
    """ReleaseUnreadable naming member `name` for a damaged zip or any of `errors` raised while it is read."""
    try:
        yield
    except (*DAMAGED, *errors) as error:
        raise ReleaseUnreadable(f"{name}: {_why(error)}") from None


def _why(error: Exception) -> str:
    if isinstance(error, KeyError):
        return f"a line or row without the field {error}"
    if isinstance(error, (ValueError, zipfile.BadZipFile)) and str(error):
        return str(error)  # what the parser or zipfile says: not JSON (...), Bad CRC-32 for file ..., File name in directory ...
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    require(archive, (name,))
    with reading(name):
        return archive.read(name)


def release_digest(path: Path) -> str:
    """A release's digest: the SHA-256 of its MANIFEST.json."""
    with open_zip(path) as archive:
        return digest(read_member(archive, MANIFEST))


# --- verifying ----------------------------------------------------------------------------------------------------


def verify(path: Path, keys: list[PublicKey]) -> tuple[dict | None, list[str]]:
    """The release's manifest (None when it has none that verifies) and every problem with its signature: the manifest
    must be signed by one of `keys` while that key was in use, and every member must be listed with its SHA-256 (or,
    in a redacted release, with the SHA-256 its signed redaction record gives)."""
    manifest, _, found = verify_release(path, keys)
    return manifest, found


def verify_release(path: Path, keys: list[PublicKey]) -> tuple[dict | None, dict | None, list[str]]:
    """verify, and the release's redaction record when it has one that verifies (None when it is not redacted)."""
    with open_zip(path) as archive:
        names = archive.namelist()
        if MANIFEST not in names or SIGNATURE not in names:
            return None, None, [f"signature: {path.name} has no {MANIFEST} and {SIGNATURE}: it is not a signed release"]
        raw, signature = read_member(archive, MANIFEST), read_member(archive, SIGNATURE)
        try:
            manifest = json.loads(raw)
            signer = str(manifest["key"])
        except (ValueError, KeyError, TypeError) as error:
            return None, None, [f"signature: {MANIFEST} is not a release manifest ({type(error).__name__}: {error})"]
        key = next((k for k in keys if k.fingerprint == signer), None)
        if key is None:
            given = ", ".join(k.fingerprint for k in keys) or "none"
            return None, None, [f"signature: the manifest names key {signer}, not a key given ({given}): it was not signed by this site"]
        try:
            key.key.verify(base64.b64decode(signature.strip(), validate=True), raw)
        except (InvalidSignature, ValueError):
            return (
                None,
                None,
                [f"signature: {SIGNATURE} does not verify {MANIFEST} with key {signer}: the manifest was changed after signing"],
            )
        redaction, found = _redaction(archive, names, raw, manifest, keys)
        found = _dates(manifest, key) + found + _members(archive, manifest, names, redaction)
    return manifest, redaction, found


def _dates(manifest: dict, key: PublicKey) -> list[str]:
    made = _when(manifest.get("created"))
    if made is None:
        return [f"signature: the manifest's created {manifest.get('created')!r} is not a date"]
    if key.created and made < (_when(key.created) or made):
        return [f"signature: signed on {manifest['created']}, before key {key.fingerprint} was made ({key.created})"]
    if key.retired and made >= (_when(key.retired) or made):
        return [f"signature: signed on {manifest['created']}, after key {key.fingerprint} was retired ({key.retired})"]
    return []


def _when(text) -> datetime | None:
    """An ISO datetime, in UTC when it names no zone (so any two compare)."""
    try:
        found = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def _members(archive: zipfile.ZipFile, manifest: dict, names: list[str], redaction: dict | None = None) -> list[str]:
    listed = {f.get("name"): f for f in manifest.get("files", []) if isinstance(f, dict)}
    redacted = {f["name"]: f for f in (redaction or {}).get("files", [])}
    found = []
    for name in names:
        if name in (MANIFEST, SIGNATURE, REDACTION, REDACTION_SIGNATURE):  # the redaction's pair is checked by _redaction
            continue
        if name not in listed:
            found.append(f"signature: {name} is in the zip but not in the signed manifest: it was added after signing")
            continue
        actual = digest(read_member(archive, name))
        if name in redacted and actual != redacted[name].get("sha256"):
            found.append(
                f"signature: {name} has SHA-256 {actual}, the signed redaction record says {redacted[name].get('sha256')}: changed after the redaction"
            )
        elif name not in redacted and actual != listed[name].get("sha256"):
            found.append(
                f"signature: {name} has SHA-256 {actual}, the signed manifest says {listed[name].get('sha256')}: changed after signing"
            )
    found += [f"signature: {name} is in the signed manifest but not in the zip: it was removed" for name in listed if name not in names]
    return found


def _redaction(
    archive: zipfile.ZipFile, names: list[str], raw: bytes, manifest: dict, keys: list[PublicKey]
) -> tuple[dict | None, list[str]]:
    """The release's redaction record (None when it has none, or none that verifies) and every problem with it: it must
    be signed by one of `keys` while that key was in use, name this release (the digest of its manifest, its board,
    judge and number), be made after it, and change only REDACTABLE members the manifest lists."""
    if REDACTION not in names and REDACTION_SIGNATURE not in names:
        return None, []
    if REDACTION not in names or REDACTION_SIGNATURE not in names:
        return None, [f"signature: the release holds one of {REDACTION} and {REDACTION_SIGNATURE} without the other"]
    data, signature = read_member(archive, REDACTION), read_member(archive, REDACTION_SIGNATURE)
    try:
        record = json.loads(data)
        signer = str(record["key"])
        changed = [str(f["name"]) for f in record["files"]]
    except (ValueError, KeyError, TypeError) as error:
        return None, [f"signature: {REDACTION} is not a redaction record ({type(error).__name__}: {error})"]
    key = next((k for k in keys if k.fingerprint == signer), None)
    if key is None:
        return None, [f"signature: the redaction record names key {signer}, not a key given: it was not made by this site"]
    try:
        key.key.verify(base64.b64decode(signature.strip(), validate=True), data)
    except (InvalidSignature, ValueError):
        return None, [
            f"signature: {REDACTION_SIGNATURE} does not verify {REDACTION} with key {signer}: the redaction record was changed after signing"
        ]
    found = [f"signature: the redaction record: {line.removeprefix('signature: ')}" for line in _dates(record, key)]
    if record.get("release") != digest(raw):
        found.append(
            f"signature: the redaction record redacts release {record.get('release')}, this release's manifest hashes to {digest(raw)}"
        )
    found += [
        f"signature: the redaction record's {part} is {record.get(part)!r}, the manifest's {manifest.get(part)!r}"
        for part in ("board", "judge", "number")
        if record.get(part) != manifest.get(part)
    ]
    made, released = _when(record.get("created")), _when(manifest.get("created"))
    if made is not None and released is not None and made < released:
        found.append(f"signature: the redaction record is dated {record['created']}, before the release it redacts ({manifest['created']})")
    listed = {f.get("name") for f in manifest.get("files", []) if isinstance(f, dict)}
    found += [
        f"signature: the redaction record changes {name}, which a redaction may not change (only {', '.join(REDACTABLE)})"
        for name in changed
        if name not in REDACTABLE or name not in listed
    ]
    return (None if found else record), found


def redaction_lines(record: dict) -> list[str]:
    """What a verified redaction record says was removed, one line per redaction, oldest first."""
    return [
        f"redacted: release {record.get('number')} {record.get('release')}: the prompts, rewritten prompts, image links and "
        f"judge rationales of entr{'y' if len(step.get('entries', [])) == 1 else 'ies'} {', '.join(map(str, step.get('entries', [])))} "
        f"removed on {step.get('created')}, signed by key {step.get('key')}"
        for step in record.get("history", [])
    ]


def chain(manifest: dict, previous: Path, keys: list[PublicKey]) -> list[str]:
    """The link to the previous release: it is signed too, of the same board and judge, numbered one less, made
    earlier, and the SHA-256 of its manifest is the digest this release names."""
    named = manifest.get("previous")
    if named is None:
        return [f"chain: release {manifest.get('number')} names no previous release, but one was given"]
    before, found = verify(previous, keys)
    if before is None:
        return [f"chain: the previous release: {line}" for line in found]
    actual = release_digest(previous)
    if actual != named:
        return [f"chain: the release given as previous has digest {actual}, this release names {named}"]
    found = [f"chain: the previous release: {line}" for line in found]
    found += [
        f"chain: the previous release's {part} is {before.get(part)!r}, this release's {manifest.get(part)!r}"
        for part in ("board", "judge")
        if before.get(part) != manifest.get(part)
    ]
    if before.get("number") != (manifest.get("number") or 0) - 1:
        found.append(f"chain: the previous release is number {before.get('number')}, this one {manifest.get('number')}")
    made, made_before = _when(manifest.get("created")), _when(before.get("created"))
    if made is None or made_before is None or made_before > made:
        found.append(f"chain: the previous release was made {before.get('created')}, after this one ({manifest.get('created')})")
    return found


def _releases_url(key_source: str) -> str:
    """The site's /releases/ beside a key given by URL: its key list (/releases/keys.json) or one key
    (/releases/keys/<fingerprint>.pem)."""
    folder = urljoin(key_source, ".")
    return urljoin(folder, "..") if folder.rstrip("/").endswith("/keys") else folder


def previous_url(key_source: str, manifest: dict) -> str | None:
    """Where the site serves the release this one names, when the keys came from the site by URL."""
    if not _is_url(key_source) or not manifest.get("previous"):
        return None
    return urljoin(_releases_url(key_source), f"{manifest['previous']}.zip")


def record_url(key_source: str, release: str) -> str | None:
    """Where the site says what it knows of a release (`/releases/<digest>.json`: the release and its board's latest),
    when the keys came from the site by URL."""
    return urljoin(_releases_url(key_source), f"{release}.json") if _is_url(key_source) else None


def latest_release(url: str) -> dict:
    """The board's latest release as the site's record of a release names it: number, digest, created and url."""
    data = _fetch(url, 1024**2)
    try:
        latest = json.loads(data)["latest"]
        return {"number": int(latest["number"]), "digest": str(latest["digest"]), "created": latest["created"], "url": latest["url"]}
    except (ValueError, KeyError, TypeError) as error:
        raise ReleaseUnreadable(f"{url}: not the site's record of a release ({type(error).__name__}: {error})") from None
