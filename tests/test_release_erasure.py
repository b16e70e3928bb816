"""Erasure and the signed chain (issue 41, item 6): a withdrawal releases the board without the entry at once (an empty
board too), re-issues each earlier release that carried it without its prompts, image links and rationales, signed and
recorded in the chain, and deletes its images from the media storage; `recompute --check` verifies every release and
names the redacted ones; a tampered redaction fails. docs/releases.md, "Erasure"."""

from __future__ import annotations

import contextlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.files.storage import default_storage

from evaluation.models import PromptEntry, Render, Submission
from evaluator import recompute, signing
from leaderboard.models import Redaction, Release
from leaderboard.releases import key_create
from submissions.services import entry_withdraw, submission_create, submissions_publish

pytestmark = pytest.mark.django_db(transaction=True)  # the jobs (board, release, erase) run in-process on commit

PROMPTS = {  # two small real entries (rendered and judged in-process), each with a prompt on a dev and a test task
    "first": [
        {"task_id": "oe-s01", "prompt": "Gouache still life of a sourdough loaf and two croissants on a rustic counter"},
        {"task_id": "co-s02", "prompt": "Flat vector seed packet, tomato plant on the left, bold title on the right"},
    ],
    "second": [
        {"task_id": "oe-s01", "prompt": "Watercolour bread loaves cooling on a rack, early morning light, amber tones"},
        {"task_id": "im-s01", "prompt": "Flat retro poster, big red sun, three layers of blue hills"},
    ],
}
BUILT: dict[str, object] = {}  # what the first test built: each release's zip as served, the key list, the erased prompts


def publish(team, pack, name: str) -> Submission:
    data = "\n".join(json.dumps(line) for line in PROMPTS[name]).encode()
    made = submission_create(team=team, pack=pack, prompter=name, filename="p.jsonl", data=data)
    assert submissions_publish(submissions=Submission.objects.filter(pk=made.pk)) == 1
    return made


def served(client, release: Release) -> bytes:
    response = client.get(f"/releases/{release.digest}.zip")
    assert response.status_code == 200 and "immutable" not in response["Cache-Control"]
    return b"".join(response.streaming_content)


def text_of(data: bytes) -> str:
    """Every member of a zip as text, JSON and CSV quoting undone (a prompt with quotes is found however it is written)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        text = "\n".join(archive.read(name).decode() for name in archive.namelist())
    return text.replace('\\"', '"').replace('""', '"')


def check(*argv: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = recompute.main(list(argv))
    return code, out.getvalue().splitlines()


@pytest.fixture
def withdrawn(client, team, sample_pack) -> dict:
    """Two entries published (releases 1 and 2), then the first withdrawn (release 3) and the second (release 4: the
    empty board); what they were, their prompts and their media, and each release's zip as served."""
    key_create()
    first = publish(team, sample_pack, "first")
    second = publish(team, sample_pack, "second")
    media = {
        s.pk: set(Render.objects.filter(entry__submission=s).exclude(image="").values_list("image", flat=True)) for s in (first, second)
    }
    assert media[first.pk] and media[second.pk] and all(default_storage.exists(n) for names in media.values() for n in names)
    texts = {s.pk: list(PromptEntry.objects.filter(submission=s).values_list("text", flat=True)) for s in (first, second)}
    entry_withdraw(submission=first)
    entry_withdraw(submission=second)
    zips = {r.number: served(client, r) for r in Release.objects.order_by("number")}
    BUILT.update(zip=zips[2], keys=client.get("/releases/keys.json").content, prompts=texts[first.pk])
    return {"first": first, "second": second, "media": media, "texts": texts, "zips": zips}


def test_withdrawals_release_the_board_without_the_entry_redact_earlier_releases_and_delete_its_media(
    client, sample_pack, withdrawn, tmp_path
):
    first, second, media, texts, zips = (withdrawn[k] for k in ("first", "second", "media", "texts", "zips"))
    releases = list(Release.objects.order_by("number"))
    assert [(r.number, r.entries) for r in releases] == [(1, [first.pk]), (2, [first.pk, second.pk]), (3, [second.pk]), (4, [])]
    assert [
        (r.release.number, r.number, r.entries, r.recorded_in.number) for r in Redaction.objects.order_by("release__number", "number")
    ] == [(1, 1, [first.pk], 3), (2, 1, [first.pk], 3), (2, 2, [second.pk], 4), (3, 1, [second.pk], 4)]

    # the board's stable URLs name the empty board's release, never one that carries a withdrawn entry
    board = f"board={sample_pack.pk}:{sample_pack.revision}&judge={first.judge_id}%7C{first.judge_version}"
    assert client.get(f"/board.zip?{board}")["Location"] == f"/releases/{releases[3].digest}.zip"
    assert client.get(f"/releases/latest.json?{board}").json()["latest"]["number"] == 4
    assert [r["entries"] for r in client.get(f"/releases/{releases[1].digest}.json").json()["redactions"]] == [[first.pk], [second.pk]]
    assert json.loads(zipfile.ZipFile(io.BytesIO(zips[4])).read("board.json"))["entries"] == []

    # no prompt, image link or stored file of either entry is left; every release is served with its digest unchanged
    erased = [t for pk in texts for t in texts[pk]] + [n for names in media.values() for n in names]
    assert sum(item in text_of(data) for data in zips.values() for item in erased) == 0
    assert all(signing.digest(zipfile.ZipFile(io.BytesIO(zips[r.number])).read(signing.MANIFEST)) == r.digest for r in releases)
    assert not any(default_storage.exists(n) for names in media.values() for n in names)
    assert not Render.objects.filter(entry__submission__in=[first, second]).exclude(image="").exists()
    assert sorted(default_storage.listdir("releases")[1]) == sorted(Path(r.file).name for r in releases)  # replaced zips deleted

    # each release verifies with its chain link; the redacted ones say so, and the later ones record the redactions
    keys = tmp_path / "keys.json"
    keys.write_bytes(client.get("/releases/keys.json").content)
    paths = {n: tmp_path / f"release-{n}.zip" for n in zips}
    for n, data in zips.items():
        paths[n].write_bytes(data)
    said = {}
    for n, path in paths.items():
        code, lines = check(str(path), "--check", "--key", str(keys), *(["--previous", str(paths[n - 1])] if n > 1 else []))
        assert code == 0 and lines[0].endswith("and the signature holds"), (n, lines)
        said[n] = [line for line in lines[1:] if not line.startswith("note: latest: not checked")]
    gone = "the prompts, rewritten prompts, image links and judge rationales of entry"
    assert [line.split(" removed on")[0] for line in said[2]] == [
        f"redacted: release 2 {releases[1].digest}: {gone} {first.pk}",
        f"redacted: release 2 {releases[1].digest}: {gone} {second.pk}",
    ]
    assert said[1][0].startswith(f"redacted: release 1 {releases[0].digest}: {gone} {first.pk} removed on")
    assert [line.split(" (entries")[0] for line in said[4] if line.startswith("note: chain:")] == [
        f"note: chain: this release records the redaction of release 2 {releases[1].digest}",
        f"note: chain: this release records the redaction of release 3 {releases[2].digest}",
    ]


def test_staff_erasure_takes_an_entry_off_its_board_and_out_of_its_releases(admin_client, team, sample_pack):
    """The admin action does what a team's withdrawal does, for a release made before releases recorded their entries
    too (its entries read from its board.json)."""
    from tests.test_cite import publish as publish_made  # entries of made-up figures: built in a moment

    key_create()
    first, second = publish_made(team, sample_pack, "first", "second")
    Release.objects.update(entries=None)  # as 0014 leaves a release made before it
    page = admin_client.post("/admin/evaluation/submission/", {"action": "erase", "_selected_action": [first.pk]}, follow=True)
    assert "Withdrew 1 submission(s)" in page.content.decode()
    first.refresh_from_db()
    assert not first.published and first.withdrawn is not None
    assert [(r.number, r.entries) for r in Release.objects.order_by("number")] == [(1, [first.pk, second.pk]), (2, [second.pk])]
    assert [(r.release.number, r.entries) for r in Redaction.objects.all()] == [(1, [first.pk])]


@pytest.fixture
def redacted(request, tmp_path) -> tuple[Path, Path]:
    """Release 2 as the withdrawals leave it (redacted twice) and the site's key list: built once for the module."""
    if "zip" not in BUILT:
        request.getfixturevalue("withdrawn")
    path, keys = tmp_path / "release.zip", tmp_path / "keys.json"
    path.write_bytes(BUILT["zip"])
    keys.write_bytes(BUILT["keys"])
    return path, keys


def _rewritten(path: Path, out: Path, change) -> Path:
    with zipfile.ZipFile(path) as source:
        members = {name: source.read(name) for name in source.namelist()}
    change(members)
    with zipfile.ZipFile(out, "w") as target:
        for name, data in members.items():
            target.writestr(name, data)
    return out


def _record_edited(members: dict) -> None:
    record = json.loads(members[signing.REDACTION])
    record["history"] = record["history"][:1]  # hide the second redaction
    members[signing.REDACTION] = signing.manifest_bytes(record)


def _prompt_back(members: dict) -> None:
    lines = members["prompts.jsonl"].decode().splitlines(keepends=True)
    row = json.loads(lines[0])
    lines[0] = json.dumps({"entry": row["entry"], "task_id": row["task_id"], "sample": row["sample"], "prompt": BUILT["prompts"][0]}) + "\n"
    members["prompts.jsonl"] = "".join(lines).encode()


def _record_removed(members: dict) -> None:
    del members[signing.REDACTION], members[signing.REDACTION_SIGNATURE]


def _resigned(members: dict) -> None:
    other = signing.Ed25519PrivateKey.generate()
    record = json.loads(members[signing.REDACTION])
    record["key"] = signing.fingerprint(other.public_key())
    members[signing.REDACTION] = signing.manifest_bytes(record)
    members[signing.REDACTION_SIGNATURE] = signing.sign(members[signing.REDACTION], other)


@pytest.mark.sqlite_pass(reason="the checks read the downloaded zip, not the database")
@pytest.mark.parametrize(
    ("change", "first_line"),
    [
        (_record_edited, "signature: REDACTION.sig does not verify REDACTION.json with key"),
        (_prompt_back, "signature: prompts.jsonl has SHA-256"),
        (_record_removed, "signature: prompts.jsonl has SHA-256"),
        (_resigned, "signature: the redaction record names key"),
    ],
)
def test_a_tampered_redaction_fails_its_check(redacted, tmp_path, change, first_line):
    path, keys = redacted
    assert check(str(path), "--check", "--key", str(keys))[0] == 0
    code, lines = check(str(_rewritten(path, tmp_path / "tampered.zip", change)), "--check", "--key", str(keys))
    assert code == 1 and lines[0].startswith(first_line), lines
    if change is _prompt_back:  # whatever its signature says, a prompt left in a redacted release is named
        assert any(line.startswith("redaction: prompts.jsonl line 1: entry") for line in lines)
