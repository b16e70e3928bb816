"""Signed, chained whole-board releases, through the site: the key command, a release made when the board changes
(none when nothing changed), the stable URLs, the key list with its dates across a rotation, and the recompute
script checking signature and chain by file and by URL. Forged releases: tests/test_recompute_tamper.py."""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import json
import threading
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction

from evaluation.models import Submission
from evaluator import signing
from evaluator.recompute import main
from leaderboard.models import Release, SigningKey
from submissions.services import submission_create, submissions_publish

LATEST_NOT_CHECKED = "note: latest: not checked: give --key the site's keys.json by URL to learn whether release {} is its board's latest"


def _publish(team, pack, data: bytes, name: str) -> Submission:
    made = submission_create(team=team, pack=pack, prompter=name, filename="p.jsonl", data=data)
    submissions_publish(submissions=Submission.objects.filter(pk=made.pk))
    return made


def _download(client, url: str, path: Path) -> Path:
    response = client.get(url)
    path.write_bytes(b"".join(response.streaming_content))
    return path


def _check(capsys, *argv: str) -> tuple[int, list[str]]:
    code = main([*argv])
    return code, capsys.readouterr().out.splitlines()


@contextlib.contextmanager
def site_copy(folder: Path, client, paths: list[str]):
    """The site's release URLs as a plain HTTP server serves them (files fetched through the test client first): the
    recompute script's URL fetching, over real HTTP, without a live Django server thread."""
    for path in paths:
        (folder / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        response = client.get(path)
        (folder / path.lstrip("/")).write_bytes(b"".join(response.streaming_content) if response.streaming else response.content)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_releases_are_signed_chained_listed_and_checked_by_url(client, team, sample_pack, example_prompts, tmp_path, settings, capsys):
    out = io.StringIO()
    call_command("release_key", "create", stdout=out)
    first_key = SigningKey.objects.get()
    assert first_key.fingerprint in out.getvalue() and Path(settings.ATELIER_RELEASE_KEY).stat().st_mode & 0o777 == 0o600
    assert "BEGIN PRIVATE KEY" not in first_key.public_key

    _publish(team, sample_pack, example_prompts, "first")
    (one,) = Release.objects.all()  # the board job released the board
    assert (one.number, one.previous, one.key_id) == (1, "", first_key.pk)
    page = client.get("/").content.decode()
    assert first_key.fingerprint in page and 'id="release-signing"' in page
    board = page.split('id="board-download"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    assert client.get(board)["Location"] == f"/releases/{one.digest}.zip"  # the current release, nothing new made
    assert Release.objects.count() == 1
    first = _download(client, f"/releases/{one.digest}.zip", tmp_path / "one.zip")
    with zipfile.ZipFile(first) as archive:
        manifest = json.loads(archive.read(signing.MANIFEST))
        assert signing.digest(archive.read(signing.MANIFEST)) == one.digest
        assert {f["name"] for f in manifest["files"]} == set(archive.namelist()) - {signing.MANIFEST, signing.SIGNATURE}

    keys = tmp_path / "keys.json"
    keys.write_bytes(client.get("/releases/keys.json").content)
    assert _check(capsys, str(first), "--check", "--key", str(keys)) == (
        0,
        ["every published figure and statistic recomputes to the same number, and the signature holds", LATEST_NOT_CHECKED.format(1)],
    )

    call_command("release_key", "create", "--rotate", stdout=out)  # the old key stays listed, retired from now
    second_key = SigningKey.objects.get(retired__isnull=True)
    first_key.refresh_from_db()
    assert first_key.retired == second_key.created and second_key != first_key
    _publish(team, sample_pack, example_prompts, "second")
    two = Release.objects.get(number=2)
    assert (two.previous, two.key_id) == (one.digest, second_key.pk)
    second = _download(client, f"/releases/{two.digest}.zip", tmp_path / "two.zip")
    listing = client.get(board.replace("/board.zip", "/releases/")).content.decode()
    assert listing.index('id="release-2"') < listing.index('id="release-1"') and one.digest in listing and "(retired)" in listing
    index = client.get("/releases/")  # bare: every board with its latest release, never a 404
    boards = index.content.decode().split('id="release-boards"')[1].split("</table>")[0]
    assert (
        index.status_code == 200 and f'href="/releases/{two.digest}.zip">release 2</a>' in boards and f"?board={sample_pack.pk}:" in boards
    )
    unknown = client.get("/releases/?board=999:1")
    assert (
        unknown.status_code == 404
        and 'id="releases-problem"' in unknown.content.decode()
        and 'id="release-boards"' in unknown.content.decode()
    )

    # by URL: the key list from the site, the previous release fetched from it by its digest
    served = ["/releases/keys.json", f"/releases/{one.digest}.zip", f"/releases/{two.digest}.json"]
    with site_copy(tmp_path / "site", client, served) as site:
        code, lines = _check(capsys, str(second), "--check", "--key", f"{site}/releases/keys.json")
    assert (code, lines) == (0, ["every published figure and statistic recomputes to the same number, and the signature holds"])
    # by file: the chain checked against the release given, or noted as unchecked without one
    keys.write_bytes(client.get("/releases/keys.json").content)
    assert _check(capsys, str(second), "--check", "--key", str(keys), "--previous", str(first))[0] == 0
    code, lines = _check(capsys, str(second), "--check", "--key", str(keys))
    assert code == 0 and lines[-2:] == [
        f"note: chain: not checked: release 2 follows {one.digest}; give --previous FILE|URL",
        LATEST_NOT_CHECKED.format(2),
    ]
    code, lines = _check(capsys, str(second), "--check", "--key", str(keys), "--previous", str(second))
    assert code == 1 and lines[0].startswith("chain: the release given as previous has digest")
    # the first release still verifies with the key list: its key was in use when it was signed
    assert _check(capsys, str(first), "--check", "--key", str(keys))[0] == 0
    pem = tmp_path / "old.pem"
    pem.write_bytes(client.get(f"/releases/keys/{first_key.fingerprint}.pem").content)
    code, lines = _check(capsys, str(second), "--check", "--key", str(pem))
    assert code == 1 and lines[0].startswith(f"signature: the manifest names key {second_key.fingerprint}, not a key given")


def test_a_release_is_made_only_when_the_board_changed_and_never_without_a_key(client, team, sample_pack, example_prompts, settings):
    from leaderboard.releases import NoReleaseKey, key_create, release_make, releases_make
    from leaderboard.selectors import board_judges, leaderboard_boards

    empty = client.get("/releases/")  # a new site: a friendly page with links, not a 404
    assert empty.status_code == 200 and 'id="releases-none"' in empty.content.decode()
    _publish(team, sample_pack, example_prompts, "first")
    assert Release.objects.count() == 0  # no key: the board job released nothing (and did not fail)
    index = client.get("/releases/").content.decode()
    assert "none yet" in index.split('id="release-boards"')[1] and 'id="releases-no-key"' in index
    with pytest.raises(NoReleaseKey, match="release_key create"):
        releases_make(sample_pack.pk, sample_pack.revision)
    key_create()
    with pytest.raises(NoReleaseKey, match="--rotate"):
        key_create()
    assert releases_make(sample_pack.pk, sample_pack.revision) == 1
    (board,) = leaderboard_boards()
    (judge,) = board_judges(board, humans=False)
    made = Release.objects.get()
    assert release_make(board, judge) == made and Release.objects.count() == 1  # nothing changed: the same release
    with pytest.raises(IntegrityError), transaction.atomic():  # a second release after the same one would fork the chain
        Release.objects.create(
            **{f.name: getattr(made, f.name) for f in Release._meta.concrete_fields if f.name != "id"} | {"digest": "0" * 64, "number": 2}
        )
