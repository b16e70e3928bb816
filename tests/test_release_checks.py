"""`python -m evaluator.recompute board.zip --check` on releases that could mislead: one the site has superseded
(asked of a live site: "superseded by release N <digest>", exit 1 unless --allow-superseded), one whose zip names a
member twice (a forged board.json before the signed one: refused by every reader), and zips that cannot be read at all
(cut short, a member renamed, JSON that does not parse: one line `cannot check: …`, exit 2, never a traceback).
Signatures, chains and tampering: tests/test_releases.py, tests/test_recompute_tamper.py."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import zipfile
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.core.files.storage import default_storage

from evaluation.models import Submission
from evaluator import recompute, signing
from leaderboard.models import Release
from leaderboard.releases import key_create, release_make
from leaderboard.selectors import board_judges, leaderboard_boards
from submissions.services import submission_create, submissions_publish
from tests.conftest import ROOT
from tests.test_cite import publish as publish_made


def saved(release: Release, path: Path) -> Path:
    with default_storage.open(release.file, "rb") as handle:
        path.write_bytes(handle.read())
    return path


def members(path: Path) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(path) as archive:
        return [(name, archive.read(name)) for name in archive.namelist()]


def rezip(items: list[tuple[str, bytes]], out: Path) -> Path:
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as target:
        for name, data in items:
            target.writestr(name, data)
    return out


def cli(*argv: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "evaluator.recompute", *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def check(*argv: str) -> tuple[int, list[str]]:
    """The command in this process: its exit status and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = recompute.main(list(argv))
    return code, out.getvalue().splitlines()


# --- superseded: asked of the live site ----------------------------------------------------------------------------


def test_a_release_the_site_has_superseded_fails_its_check_unless_allowed(
    live_server, client, team, sample_pack, example_prompts, tmp_path
):
    key_create()
    made = submission_create(team=team, pack=sample_pack, prompter="first", filename="p.jsonl", data=example_prompts)
    submissions_publish(submissions=Submission.objects.filter(pk=made.pk))
    one = Release.objects.get()
    Submission.objects.filter(pk=made.pk).update(published_at=one.created - timedelta(days=1))  # as if published a day before
    (board,) = leaderboard_boards()
    release_make(board, board_judges(board, humans=False)[0])  # the entry's date is in board.json and sota.json: a new release
    two = Release.objects.get(number=2)
    keys = f"{live_server.url}/releases/keys.json"
    query = urlencode({"board": f"{sample_pack.pk}:{sample_pack.revision}", "judge": f"{two.judge_id}|{two.judge_version}"})

    record = client.get(f"/releases/{one.digest}.json")
    assert record["Cache-Control"] == "no-cache" and record.json()["number"] == 1
    assert record.json()["latest"] | {"url": ""} == {
        "number": 2,
        "digest": two.digest,
        "previous": one.digest,
        "created": two.created.isoformat(),
        "key": two.key.fingerprint,
        "url": "",
    }
    assert client.get(f"/releases/latest.json?{query}").json()["latest"]["digest"] == two.digest
    assert (
        client.get("/releases/latest.json?board=999:1").status_code == 404 and client.get(f"/releases/{'0' * 64}.json").status_code == 404
    )

    first, second = saved(one, tmp_path / "one.zip"), saved(two, tmp_path / "two.zip")
    run = cli(str(first), "--check", "--key", keys)  # the command as a reader runs it, against the site over HTTP
    out, err = run.communicate(timeout=120)
    assert (run.returncode, err) == (1, "") and out.splitlines()[0].startswith(f"superseded by release 2 {two.digest} (made ")
    assert len(out.splitlines()) == 1 and out.rstrip().endswith(f"this is release 1): {live_server.url}/releases/{two.digest}.zip")
    code, lines = check(str(first), "--check", "--key", keys, "--allow-superseded")
    assert code == 0 and lines[0] == "every published figure and statistic recomputes to the same number, and the signature holds"
    assert lines[1].startswith(f"note: superseded by release 2 {two.digest}") and lines[1].endswith("(allowed by --allow-superseded)")
    pem = f"{live_server.url}/releases/keys/{one.key.fingerprint}.pem"  # the key itself by URL: the same site is asked
    assert check(str(first), "--check", "--key", pem)[1][0].startswith(f"superseded by release 2 {two.digest}")
    # the latest release: nothing to say (its chain link fetched from the same site)
    assert check(str(second), "--check", "--key", keys) == (
        0,
        ["every published figure and statistic recomputes to the same number, and the signature holds"],
    )


# --- a zip that names a member twice, and zips that cannot be read -------------------------------------------------


@pytest.fixture
def release(client, team, sample_pack, tmp_path) -> tuple[Path, Path]:
    """A signed release (of a board of made-up figures: built in a moment) and the site's key list."""
    key_create()
    publish_made(team, sample_pack, "first")
    keys = tmp_path / "keys.json"
    keys.write_bytes(client.get("/releases/keys.json").content)
    return saved(Release.objects.get(), tmp_path / "release.zip"), keys


@pytest.mark.django_db(transaction=True)
def test_a_forged_board_json_before_the_signed_one_is_refused_by_every_reader(release, tmp_path):
    path, keys = release
    signed = members(path)
    board = json.loads(dict(signed)["board.json"])
    board["entries"][0]["prompter"] = "someone else"  # what a streaming reader (the first member of a name) would show
    forged = rezip([("board.json", json.dumps(board).encode()), *signed], tmp_path / "forged.zip")
    with zipfile.ZipFile(forged) as archive:  # zipfile itself reads the last one: the signed board.json, which verifies
        assert json.loads(archive.read("board.json")) != board and archive.namelist().count("board.json") == 2
    refused = "forged.zip: holds board.json 2 times: readers differ on which of them they read, so it is refused"
    for reader in (lambda: recompute.read(forged), lambda: signing.verify(forged, signing.read_keys(str(keys)))):
        with pytest.raises(signing.ReleaseUnreadable, match=refused):
            reader()
    with pytest.raises(signing.ReleaseUnreadable, match="refused"):  # given as the release before another one
        signing.chain({"previous": "0" * 64, "number": 2}, forged, signing.read_keys(str(keys)))
    assert check(str(forged), "--check", "--key", str(keys)) == (2, [])
    variant = rezip([*signed, ("./Board.json", json.dumps(board).encode())], tmp_path / "variant.zip")  # one file on disk
    with pytest.raises(signing.ReleaseUnreadable, match=r"holds 'board.json' and './Board.json' as one file"):
        recompute.read(variant)


def test_the_site_never_writes_a_release_with_a_member_named_twice(tmp_path):
    from leaderboard.releases import write_members

    with pytest.raises(ValueError, match="MANIFEST.json 2 times"):
        write_members(tmp_path / "r.zip", [("board.json", iter(["{}"])), ("MANIFEST.json", iter(["{}"]))])


def _local_name(path: Path, name: str, new: bytes, out: Path) -> Path:
    """The zip with one member's name changed in its local header only (what a streaming reader sees), not in the
    central directory (what zipfile lists)."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        at = archive.getinfo(name).header_offset + 30
    assert data[at : at + len(new)] == name.encode() and len(new) == len(name)
    data[at : at + len(new)] = new
    out.write_bytes(bytes(data))
    return out


def _replaced(path: Path, name: str, data: bytes, out: Path) -> Path:
    return rezip([(n, data if n == name else d) for n, d in members(path)], out)


@pytest.mark.django_db(transaction=True)
def test_a_zip_that_cannot_be_read_gives_one_line_and_exit_2(release, tmp_path):
    path, keys = release
    units = dict(members(path))["units.jsonl"].splitlines(keepends=True) or [b"\n"]
    (tmp_path / "cut.zip").write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    renamed = rezip([(n.replace("board.json", "board.jsn"), d) for n, d in members(path)], tmp_path / "renamed.zip")
    cases = {  # zip: what its one line names
        tmp_path / "cut.zip": "cut.zip: not a whole zip file",
        renamed: "renamed.zip: has no board.json",
        _local_name(
            path, "board.json", b"boarX.json", tmp_path / "header.zip"
        ): "board.json: File name in directory 'board.json' and header",
        _replaced(path, "board.json", b'{"pack": ', tmp_path / "board.zip"): "board.json: not JSON (Expecting value",
        _replaced(path, "units.jsonl", units[0] + b"{oops\n", tmp_path / "units.zip"): "units.jsonl: line 2: not JSON",
    }
    runs = [(cli(str(p), "--check", *(["--key", str(keys)] if i % 2 else [])), "check", said) for i, (p, said) in enumerate(cases.items())]
    runs.append((cli(str(tmp_path / "cut.zip")), "recompute", "cut.zip: not a whole zip file"))  # without --check
    for run, verb, said in runs:
        out, err = run.communicate(timeout=120)
        assert (run.returncode, out) == (2, ""), (said, out, err)
        assert len(err.splitlines()) == 1 and err.startswith(f"cannot {verb}: ") and said in err, (said, err)
    # more that does not parse, read in this process: the same refusal, naming the member
    for name, data, said in (
        ("board.json", b"[1, 2]", "board.json: a JSON list, not an object"),
        ("tasks.csv", b"task_id,category\n\xff\xfe,CO\n", "tasks.csv: 'utf-8' codec can't decode"),
        ("humans.jsonl", b'{"participant": 0}\n[]\n', "humans.jsonl: line 2: a JSON list, not an object"),
        ("units.jsonl", b'{"judge_version": "1"}\n', "units.jsonl: a line or row without the field 'entry'"),
    ):
        with pytest.raises(signing.ReleaseUnreadable, match=re.escape(said)):
            recompute.read(_replaced(path, name, data, tmp_path / "more.zip"))


@pytest.mark.parametrize(
    "query", ["", "?board=%00&judge=%00", "?board=1:1&judge=a%00b", "?board=99999999999999999999:1&judge=x", "?board=" + "9" * 500]
)
def test_the_latest_release_route_answers_strangers_without_a_500(db, client, query):
    """A public parameter: NUL bytes, overflowing ids and unknown boards are a 404 naming no internals (on each database)."""
    response = client.get(f"/releases/latest.json{query}")
    assert response.status_code in (400, 404), (query, response.status_code)
    assert "Traceback" not in response.content.decode(errors="replace")
