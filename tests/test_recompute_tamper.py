"""Forged board downloads: `python -m evaluator.recompute board.zip --check` recomputes every number board.json
carries and reports each one that was changed, added or deleted, and checks the judge spec, the backend configs and
the statistics settings against what every unit carries.

One real board is built once (two uploads, an endpoint run with feedback rounds, two study participants; every job
in-process) and downloaded over HTTP; each test forges its board.json."""

from __future__ import annotations

import copy
import csv
import io
import json
import shutil
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation.models import Status, Submission
from evaluator.recompute import differences, judge_spec, main
from tests.conftest import ROOT
from tests.test_studies import NOVICE, SKILLED  # the questionnaire answers of a skilled and a novice participant

# The board is built through the database once, but every check here is the recompute script reading a zip's files;
# building a download and recomputing it on PostgreSQL is test_board_stats.py's test_board_download_recomputes_….
pytestmark = [
    pytest.mark.django_db(transaction=True),  # the build's jobs run on commit
    pytest.mark.sqlite_pass(reason="the checks read the downloaded zip, not the database"),
]
BUILT: dict[str, bytes | str] = {}  # the board zip, built by the first test that needs it: one build for the module
BASELINE: dict[str, set[str]] = {}  # what --check reports on it unchanged (nothing, when the first test passes)


def _pack(directory: Path):
    """The sample pack and one more dev task per category (three each, one of them hidden): nine tasks. Every
    interval is given (wide at these counts), neighbour intervals and win rates with theirs; the length fit needs
    more tasks per category: the board withholds it, and its tamper below forges numbers where it shows none."""
    from tasks.loaders import read_own_pack
    from tasks.services import pack_save

    shutil.copytree(ROOT / "tasks" / "packs" / "sample", directory)
    (directory / "pack.json").write_text(json.dumps({**json.loads((directory / "pack.json").read_text()), "name": "tamper"}))
    for name in ("co", "oe", "im"):
        lines = (ROOT / "tasks" / "packs" / "atelier-original" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        extra = next(line for line in lines if json.loads(line)["split"] == "dev")
        (directory / f"{name}.jsonl").write_text(
            (directory / f"{name}.jsonl").read_text(encoding="utf-8").rstrip("\n") + "\n" + extra + "\n", encoding="utf-8"
        )
    pack, _ = pack_save(data=read_own_pack(directory))
    return pack


def _uploads(team, pack) -> list[Submission]:
    """Two uploads that differ: one writes the brief out with a style, the other a few words of the title."""
    from submissions.services import submission_create

    tasks = list(pack.tasks.order_by("task_id"))
    long = [{"task_id": t.task_id, "prompt": f"{t.brief} Flat poster, bold colours, clean composition."} for t in tasks]
    short = [{"task_id": t.task_id, "prompt": " ".join(t.title.split()[:4])} for t in tasks]
    files = ["\n".join(json.dumps(line) for line in prompts).encode() for prompts in (long, short)]
    return [submission_create(team=team, pack=pack, prompter=f"upload-{i}", filename="p.jsonl", data=data) for i, data in enumerate(files)]


def _feedback_run(client, owner, team, pack, server, django_settings) -> Submission:
    from submissions import services

    django_settings.ATELIER_PROMPTER_ALLOWED_HOSTS, django_settings.ATELIER_PROMPTER_MAX_RETRIES = ("127.0.0.1",), 0
    endpoint = services.endpoint_create(
        team=team, name="local", base_url=server.base_url, model="tiny-prompter", api_key="sk-test-key", seed=7
    )
    client.force_login(owner)
    form = {"pack": pack.pk, "condition": "plain", "samples": 1, "rounds": 2, "feedback_backend": "smoke-sd"}
    assert client.post(f"/teams/{team.slug}/endpoints/{endpoint.pk}/run/", form).status_code == 302
    return Submission.objects.get(origin="endpoint")


def _participants(pack) -> None:
    from django.test import Client

    from studies.models import Invitation
    from studies.services import invitations_create, study_create

    study = study_create(name="Pilot", pack=pack, per_category=1, rounds=1)
    for answers in (SKILLED, NOVICE):
        person, url = Client(), f"/study/{invitations_create(study=study, count=1)[0].token}/"
        assert (
            person.post(url + "consent", {"agree": "yes"}).status_code == 302
            and person.post(url + "questionnaire", answers).status_code == 302
        )
        participant = study.participants.get(invitation__digest=Invitation.digest_of(url.strip("/").split("/")[-1]))
        for assignment in participant.assignments.order_by("position"):
            if assignment.intro:
                person.post(url + "intro")
            person.post(url + "submit", {"position": assignment.position, "text": f"a red sun over {assignment.task.task_id}, flat poster"})


def _build(request) -> bytes:
    from leaderboard.releases import key_create
    from submissions.services import submissions_publish

    key_create()  # the site signs its releases: /board.zip redirects to the current one
    client, team = request.getfixturevalue("client"), request.getfixturevalue("team")
    pack = _pack(request.getfixturevalue("tmp_path_factory").mktemp("packs") / "tamper")
    made = _uploads(team, pack)
    made.append(
        _feedback_run(
            client,
            request.getfixturevalue("owner"),
            team,
            pack,
            request.getfixturevalue("prompter_server"),
            request.getfixturevalue("settings"),
        )
    )
    assert [s.status for s in Submission.objects.filter(pk__in=[s.pk for s in made])] == [Status.DONE] * 3
    assert submissions_publish(submissions=Submission.objects.filter(pk__in=[s.pk for s in made])) == 3
    _participants(pack)
    page = client.get("/").content.decode()
    assert "Humans — all" in page
    link = page.split('id="board-download"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    release = client.get(link)
    assert release.status_code == 302 and release["Location"].startswith("/releases/")
    response = client.get(release["Location"])
    assert response.status_code == 200
    BUILT["keys"] = client.get("/releases/keys.json").content
    return b"".join(response.streaming_content)


@pytest.fixture
def board_zip(request, tmp_path) -> Path:
    if "failed" in BUILT:  # build once: the tests after a failed build say so instead of building again
        pytest.fail(f"building the board failed in an earlier test: {BUILT['failed']}")
    if "zip" not in BUILT:
        try:
            BUILT["zip"] = _build(request)
        except BaseException as error:
            BUILT["failed"] = f"{type(error).__name__}: {error}"
            raise
    path = tmp_path / "board.zip"
    path.write_bytes(BUILT["zip"])
    (tmp_path / "keys.json").write_bytes(BUILT["keys"])
    return path


def published(path: Path) -> dict:
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("board.json"))


def forged(path: Path, board: dict, out: Path) -> Path:
    """A copy of the zip whose board.json is `board`."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            target.writestr(name, json.dumps(board, indent=1) if name == "board.json" else source.read(name))
    return out


def run_check(path: Path, capsys) -> tuple[int, list[str]]:
    code = main([str(path), "--check"])
    return code, capsys.readouterr().out.splitlines()


# --- the unchanged board -----------------------------------------------------------------------------------------


def test_the_downloaded_board_recomputes_to_every_published_number(board_zip, capsys):
    board = published(board_zip)
    assert run_check(board_zip, capsys) == (
        0,
        [
            "every published figure and statistic recomputes to the same number",
            "note: signature: not checked: give --key with the site's keys.json (or its public key) to check it",
        ],
    )
    assert main([str(board_zip), "--check", "--key", str(board_zip.parent / "keys.json")]) == 0
    with zipfile.ZipFile(board_zip) as archive:
        names = set(archive.namelist())
        units = [json.loads(line) for line in archive.read("units.jsonl").decode().splitlines()]
    assert {"trajectories.jsonl", "humans.jsonl", "human_units.jsonl"} <= names
    assert all(u["judge_version"] == board["judge"]["version"] for u in units) and all(u["config_hash"] for u in units if u["backend"])
    # the board is real: intervals, a neighbour interval, human rows and a feedback run's steerability
    assert len(board["entries"]) == 3 and any(f["ci_low"] is not None for f in board["entries"][0]["figures"].values())
    assert board["statistics"]["comparisons"][0]["low"] is not None and board["statistics"]["comparisons"][0]["high"] is not None
    assert [(r["scripted"], r["tier"]) for r in board["humans"]["rows"]] == [(False, "novice"), (False, "skilled"), (False, "all")]
    assert board["humans"]["partial"] and board["humans"]["common"]
    assert sum(bool(e["steerability"]) for e in board["entries"]) == 1
    assert all({"value", "ci_low", "ci_high", "n", "failures"} <= set(f) for e in board["entries"] for f in e["figures"].values())


# --- one tamper of each kind -------------------------------------------------------------------------------------


def _first(board: dict) -> dict:
    return board["entries"][0]


def _stats(board: dict) -> dict:
    return board["statistics"]["entries"][str(_first(board)["entry"])]


def _bump(where: dict, key: str, by: float = 1) -> None:
    """Change a number (one the board withholds, or no longer has, gets one)."""
    where[key] = (where[key] if where.get(key) is not None else 50) + by


def _interval_figure(board: dict) -> dict:
    """A figure with an interval if the board has one (else one whose missing interval gets a bound)."""
    figures = _first(board)["figures"]
    return next((f for f in figures.values() if f["ci_low"] is not None), figures["category:OE"])


def _human(board: dict, tier: str) -> dict:
    return next(r for r in board["humans"]["rows"] if (r["scripted"], r["tier"]) == (False, tier))


def _overall(row: dict) -> dict:
    return next(f for f in row["figures"] if f["scope"] == "overall")


def _steered(board: dict) -> dict:
    return next(e for e in board["entries"] if e["steerability"])


def _neighbour_separated(board: dict) -> None:
    row = board["statistics"]["comparisons"][0]
    row.update(low=0.003, separated=not row["separated"])


def _length_row(board: dict) -> None:
    """A fit's coefficient and its interval moved (a fit made up where the board has too few tasks to fit one)."""
    rows = board["statistics"]["length"]
    if not rows:
        rows.append({"category": "OE", "coefficient": None, "low": None, "high": None, "n": 9})
    for key in ("coefficient", "low", "high"):
        _bump(rows[0], key, 2.0)


def _win_record(board: dict) -> None:
    """6-0-0 for the first pair of the win matrix (nine tasks: no pair played six)."""
    wins, first, second = board["statistics"]["wins"], *(str(e["entry"]) for e in board["entries"][:2])
    wins[next(iter(wins), f"{first}:{second}")] = [6, 0, 0]


def _added_entry(board: dict) -> None:
    board["entries"].append({**copy.deepcopy(_first(board)), "entry": 999999})


def _added_figure(board: dict) -> None:
    _first(board)["figures"]["category:XX"] = dict(_first(board)["figures"]["category:OE"])


TAMPERS: dict[str, tuple[Callable[[dict], None], str]] = {
    # kind: (forgery, what the report must name)
    "figure value": (lambda b: _bump(_first(b)["figures"]["overall:overall"], "value"), ".figures.overall:overall.value: published"),
    "figure CI bound": (lambda b: _bump(_interval_figure(b), "ci_high", 0.5), ".ci_high: published"),
    "figure n": (lambda b: _bump(_first(b)["figures"]["overall:overall"], "n"), ".figures.overall:overall.n: published"),
    "figure failures": (
        lambda b: _bump(_first(b)["figures"]["overall:overall"], "failures"),
        ".figures.overall:overall.failures: published",
    ),
    "coverage and standing": (
        lambda b: _first(b)["coverage"]["overall:overall"].update(scored=0, standing="withheld"),
        ".coverage.overall:overall.standing: published",
    ),
    "task count": (lambda b: _bump(_first(b), "tasks"), "].tasks: published"),
    "score interval": (lambda b: _bump(_stats(b), "low", -3.0), ".low: published"),
    "rank": (lambda b: _bump(_stats(b), "rank"), ".rank: published"),
    "rank range bound": (lambda b: _bump(_stats(b), "rank_high"), ".rank_high: published"),
    "arena rank": (lambda b: _bump(_stats(b), "arena_rank"), ".arena_rank: "),
    "neighbour interval's upper end": (lambda b: b["statistics"]["comparisons"][0].update(high=0.001), ".high: published 0.001"),
    "neighbour low 0.003 with separated flipped": (_neighbour_separated, ".low: published 0.003"),
    "win record 6-0-0": (_win_record, "statistics.wins."),
    "length coefficient and interval": (_length_row, "statistics.length[category="),
    "controlled score": (lambda b: _bump(_stats(b), "lc"), ".lc: published"),
    "win rate": (lambda b: _stats(b).update(win_rate=0.999), ".win_rate: published 0.999"),
    "win rate interval": (lambda b: _stats(b).update(win_low=0.998), ".win_low: published 0.998"),
    "dev-test gap": (lambda b: _bump(_stats(b), "gap"), ".gap: published"),
    "dev-test gap interval": (lambda b: _bump(_stats(b), "gap_high"), ".gap_high: published"),
    "ranked-on task count": (lambda b: _bump(b["statistics"]["ranked_on"], "tasks"), "statistics.ranked_on.tasks: published"),
    "entry count": (lambda b: _bump(b["statistics"], "entry_count"), "statistics.entry_count: published"),
    "deleted entry": (lambda b: b["entries"].pop(0), ": deleted from board.json"),
    "added entry": (_added_entry, "entries[entry=999999]: added in board.json"),
    "deleted entry statistics": (lambda b: b["statistics"]["entries"].pop(str(_first(b)["entry"])), ": deleted from board.json"),
    "deleted figure": (lambda b: _first(b)["figures"].pop("category:OE"), ".figures.category:OE: deleted from board.json"),
    "added figure": (_added_figure, ".figures.category:XX: added in board.json"),
    "deleted comparison row": (lambda b: b["statistics"]["comparisons"].pop(0), "statistics.comparisons[upper="),
    "deleted statistics section": (lambda b: b["statistics"].pop("length"), "statistics.length: deleted from board.json"),
    "judge spec field": (lambda b: b["judge"]["spec"].update(route="another-route"), "judge.version: published"),
    "judge version": (lambda b: b["judge"].update(version=b["judge"]["version"][:-1] + "0"), "units: "),
    "backend config field": (lambda b: _bump(b["backends"][0], "steps"), "backends[0].version_hash: published"),
    "deleted backend": (lambda b: b["backends"].pop(0), "which backends does not list"),
    "backend replaced by text": (lambda b: b["backends"].__setitem__(0, "smoke-sd"), "backends[0]: not a backend config"),
    "statistics setting": (
        lambda b: b["statistics_settings"].update(alpha=0.1),
        "statistics_settings.alpha: published 0.1, recomputed 0.05",
    ),
    "human row figure": (
        lambda b: _bump(_overall(_human(b, "all")), "value"),
        "humans.rows[scripted=False,tier=all].figures[scope=overall,key=overall].value",
    ),
    "human participants": (
        lambda b: _bump(_human(b, "skilled"), "participants"),
        "humans.rows[scripted=False,tier=skilled].participants: published",
    ),
    "deleted human row": (
        lambda b: b["humans"]["rows"].remove(_human(b, "novice")),
        "humans.rows[scripted=False,tier=novice]: deleted from board.json",
    ),
    "score on the humans' tasks": (lambda b: _bump(b["humans"]["common"], next(iter(b["humans"]["common"]))), "humans.common."),
    "steerability number": (lambda b: _bump(_steered(b)["steerability"][0], "n_trajectories"), ".n_trajectories: published"),
    "deleted steerability": (lambda b: _steered(b)["steerability"].clear(), ".steerability[category="),
}


def reported(board_zip: Path, forgery: Path, capsys) -> tuple[int, list[str]]:
    """--check's exit code on the forgery and the lines it reports beyond those of the unchanged board (none, when
    that passes): a forgery counts as caught only by a line of its own."""
    if "baseline" not in BASELINE:
        BASELINE["baseline"] = set(differences(board_zip))
    code, lines = run_check(forgery, capsys)
    return code, [line for line in lines if line not in BASELINE["baseline"]]


def test_every_kind_of_tamper_is_caught_and_named(board_zip, tmp_path, capsys):
    results: dict[str, str | None] = {}
    for kind, (forge, named) in TAMPERS.items():
        board = published(board_zip)
        forge(board)
        code, lines = reported(board_zip, forged(board_zip, board, tmp_path / "forged.zip"), capsys)
        results[kind] = next((line for line in lines if named in line), None) if code == 1 else None
    with capsys.disabled():
        print("\n" + "\n".join(f"{kind:38} {'caught' if line else 'MISSED'}  {line or ''}" for kind, line in results.items()))
    assert [kind for kind, line in results.items() if line is None] == []


# --- random forgeries --------------------------------------------------------------------------------------------

# Labels of the board, not numbers of it: the pack's name, version and revision, and the deployment's missing-unit
# limit (a site setting the recompute takes from board.json: checked only through the standings it decides); and a
# backend's presentation fields (its config hash leaves them out). Their sections may still be deleted.
UNCHECKED = (("pack",), ("coverage_settings",))
# What an entry is, named in board.json and not computed (evaluator/recompute/compare.py ABOUT): its prompter card as published
# (a team's own words and numbers, such as its parameter count) is covered by the release's signature, not by recompute.
ABOUT_ENTRY = ("card", "published")
PRESENTATION = ("enabled", "label")


def places(node, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """(path, "number" | "flag" | "section") of every number, true/false and section (object or list) below the root."""
    if path[:1] == ("entries",) and len(path) >= 3 and path[2] in ABOUT_ENTRY:
        return
    if isinstance(node, (dict, list)):
        if path:
            yield path, "section"
        for key, child in node.items() if isinstance(node, dict) else enumerate(node):
            yield from places(child, (*path, key))
    elif path[:1] in UNCHECKED or (path[:1] == ("backends",) and path[-1] in PRESENTATION):
        return
    elif isinstance(node, bool):
        yield path, "flag"
    elif isinstance(node, (int, float)):
        yield path, "number"


def forge_at(board: dict, path: tuple, what: str, draw) -> str:
    parent = board
    for key in path[:-1]:
        parent = parent[key]
    old = parent[path[-1]]
    if what == "section":
        del parent[path[-1]]
        return "deleted"
    parent[path[-1]] = (not old) if what == "flag" else changed(old, draw)
    return f"{old!r} -> {parent[path[-1]]!r}"


def changed(number, draw):
    if isinstance(number, int):
        return number + draw(st.sampled_from([-3, -2, -1, 1, 2, 3]))
    if number != number or number in (float("inf"), float("-inf")):
        return 1.0
    return number + draw(st.sampled_from([-1, 1])) * max(abs(number), 1.0) * draw(st.floats(1e-6, 10.0))


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_forged_number_or_deleted_section_is_reported(board_zip, tmp_path, capsys, data):
    board = published(board_zip)
    path, what = data.draw(st.sampled_from(list(places(board))), label="place")
    change = forge_at(board, path, what, data.draw)
    code, lines = reported(board_zip, forged(board_zip, board, tmp_path / "forged.zip"), capsys)
    assert code == 1 and lines, f"{'.'.join(map(str, path))} {change}: not reported"


def test_a_judge_spec_and_version_forged_to_agree_still_disagree_with_every_unit(board_zip, tmp_path, capsys):
    board = published(board_zip)
    board["judge"]["spec"]["route"] = "another-route"
    board["judge"]["version"] = judge_spec(board["judge"]["spec"]).version
    code, lines = run_check(forged(board_zip, board, tmp_path / "forged.zip"), capsys)
    assert code == 1 and [line for line in lines if line.startswith("judge")] == []
    assert any(line.startswith("units: ") and "scored by judge version" in line for line in lines), lines


# --- forged releases: what only the signature catches --------------------------------------------------------------


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _rezip(members: dict[str, bytes], out: Path) -> Path:
    with zipfile.ZipFile(out, "w") as target:
        for name, data in members.items():
            target.writestr(name, data)
    return out


def _json_lines(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def _consistent(members: dict[str, bytes], tmp: Path) -> dict[str, bytes]:
    """The audit's forgery, made consistent everywhere: every unit of the last entry of one scored skill set to the
    best value any entry got, the breakdown files changed to match, and board.json regenerated with this project's code."""
    from evaluator.recompute import _skill_column, recompute

    units = _json_lines(members["units.jsonl"])
    entry = units[-1]["entry"]
    skill = next(u["skill"] for u in units if u["entry"] == entry and u["status"] == "ok" and isinstance(u["value"], float))
    best = max(u["value"] for u in units if u["skill"] == skill and u["value"] is not None)
    for u in units:
        if u["entry"] == entry and u["skill"] == skill and u["status"] == "ok":
            u["value"] = best
    skill = _skill_column(skill)
    members["units.jsonl"] = "".join(json.dumps(u) + "\n" for u in units).encode()
    rows = _json_lines(members["breakdown.jsonl"])
    for row in rows:
        if row["submission"] == entry and row[skill] is not None:
            row[skill] = best
    members["breakdown.jsonl"] = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    table = list(csv.DictReader(io.StringIO(members["breakdown.csv"].decode())))
    for row in table:
        if row["submission"] == str(entry) and row[skill] != "":
            row[skill] = repr(best)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(table[0]))
    writer.writeheader()
    writer.writerows(table)
    members["breakdown.csv"] = text.getvalue().encode()
    recomputed = recompute(_rezip(members, tmp / "half.zip"))
    board = json.loads(members["board.json"])
    names = {e["entry"]: {k: e[k] for k in ("prompter", "team", "condition", "origin")} for e in board["entries"]}
    board.update(recomputed, entries=[{**e, **names[e["entry"]]} for e in recomputed["entries"]])
    board["humans"]["rows"] = [
        {**new, **{k: old[k] for k in ("label", "judge_id", "judge_version", "judge_label") if k in old}}
        for new, old in zip(board["humans"]["rows"], json.loads(members["board.json"])["humans"]["rows"])
    ]
    members["board.json"] = json.dumps(board, indent=1, ensure_ascii=False).encode()
    return members


def _manifest_rehashed(members: dict[str, bytes]) -> dict[str, bytes]:
    from evaluator import signing

    manifest = json.loads(members[signing.MANIFEST])
    for f in manifest["files"]:
        f["sha256"], f["size"] = signing.digest(members[f["name"]]), len(members[f["name"]])
    members[signing.MANIFEST] = signing.manifest_bytes(manifest)
    return members


def _resigned(members: dict[str, bytes]) -> dict[str, bytes]:
    """Re-hashed and signed again with the forger's own key (named in the manifest, as the site's would be)."""
    from evaluator import signing

    key = signing.Ed25519PrivateKey.generate()
    manifest = json.loads(_manifest_rehashed(members)[signing.MANIFEST])
    manifest["key"] = signing.fingerprint(key.public_key())
    members[signing.MANIFEST] = signing.manifest_bytes(manifest)
    members[signing.SIGNATURE] = signing.sign(members[signing.MANIFEST], key)
    return members


def _board_edit(change: Callable[[dict], None]) -> Callable[[dict[str, bytes], Path], dict[str, bytes]]:
    def forge(members: dict[str, bytes], tmp: Path) -> dict[str, bytes]:
        board = json.loads(members["board.json"])
        change(board)
        members["board.json"] = json.dumps(board, indent=1, ensure_ascii=False).encode()
        return members

    return forge


def _nudge(board: dict) -> None:
    figure = _first(board)["figures"]["overall:overall"]
    figure["value"] *= 1 + 1e-11  # under the old check's tolerance of 1e-10


def _breakdown_value(name: str) -> Callable[[dict[str, bytes], Path], dict[str, bytes]]:
    def forge(members: dict[str, bytes], tmp: Path) -> dict[str, bytes]:
        lines = members[name].decode().splitlines(keepends=True)
        if name.endswith(".jsonl"):
            row = json.loads(lines[0])
            column = next(k for k, v in row.items() if isinstance(v, float))
            row[column] += 1.0
            lines[0] = json.dumps(row, ensure_ascii=False) + "\n"
        else:
            table = list(csv.DictReader(io.StringIO("".join(lines))))
            column = next(k for k, v in table[0].items() if v.replace(".", "", 1).isdigit() and "." in v)
            table[0][column] = repr(float(table[0][column]) + 1.0)
            text = io.StringIO()
            writer = csv.DictWriter(text, fieldnames=list(table[0]))
            writer.writeheader()
            writer.writerows(table)
            lines = [text.getvalue()]
        members[name] = "".join(lines).encode()
        return members

    return forge


def _with(*steps):
    def forge(members: dict[str, bytes], tmp: Path) -> dict[str, bytes]:
        for step in steps:
            members = step(members, tmp) if step.__code__.co_argcount == 2 else step(members)
        return members

    return forge


def _drop(name: str):
    return lambda members, tmp: {k: v for k, v in members.items() if k != name}


def _garbage_signature(members: dict[str, bytes], tmp: Path) -> dict[str, bytes]:
    import base64

    return {**members, "MANIFEST.sig": base64.b64encode(bytes(64)) + b"\n"}


def _renumbered(members: dict[str, bytes], tmp: Path) -> dict[str, bytes]:
    manifest = json.loads(members["MANIFEST.json"])
    manifest["number"] += 1
    return {**members, "MANIFEST.json": json.dumps(manifest, indent=1, sort_keys=True).encode()}


RELEASE_FORGERIES: dict[str, Callable[[dict[str, bytes], Path], dict[str, bytes]]] = {
    # kind: forgery of the release's files (each counted as caught only by a "signature:" line)
    "units edited, breakdowns and board.json made to agree (the audit's rank 3 -> 1)": _consistent,
    "... and the manifest's hashes updated": _with(_consistent, _manifest_rehashed),
    "... and signed again with the forger's own key": _with(_consistent, _resigned),
    "human row relabelled 'Experts (forged)'": _board_edit(lambda b: b["humans"]["rows"][0].update(label="Experts (forged)")),
    "prompter renamed": _board_edit(lambda b: _first(b).update(prompter="someone else")),
    "team renamed": _board_edit(lambda b: _first(b).update(team="another team")),
    "pack name": _board_edit(lambda b: b["pack"].update(name="another pack")),
    "code version": _board_edit(lambda b: b.update(code_version="v9.9.9")),
    "max_missing_rate 0.05 -> 0.5": _board_edit(lambda b: b["coverage_settings"].update(max_missing_rate=0.5)),
    "a figure moved by 1e-11 (relative)": _board_edit(_nudge),
    "breakdown.csv value": _breakdown_value("breakdown.csv"),
    "breakdown.jsonl value": _breakdown_value("breakdown.jsonl"),
    "rationales.jsonl removed": _drop("rationales.jsonl"),
    "a file added": lambda members, tmp: {**members, "notes.txt": b"trust me\n"},
    "MANIFEST.sig removed": _drop("MANIFEST.sig"),
    "signature replaced": _garbage_signature,
    "manifest's release number changed": _renumbered,
    **{f"board.json: {kind}": _board_edit(forge) for kind, (forge, _) in TAMPERS.items()},
}


def test_every_forged_release_fails_its_signature(board_zip, tmp_path, capsys):
    """Each forgery, checked with the site's key list: caught by a line naming the signature. Printed beside it:
    whether the check without a key (recomputing only) catches it too."""
    keys = str(board_zip.parent / "keys.json")
    rows = []
    for kind, forge in RELEASE_FORGERIES.items():
        path = _rezip(forge(_members(board_zip), tmp_path), tmp_path / "forged.zip")
        code = main([str(path), "--check", "--key", keys])
        lines = capsys.readouterr().out.splitlines()
        signed = code == 1 and any(line.startswith("signature: ") for line in lines)
        unsigned = main([str(path), "--check"]) == 1
        capsys.readouterr()
        rows.append((kind, signed, unsigned, next((line for line in lines if line.startswith("signature: ")), "")))
    with capsys.disabled():
        print(
            "\n"
            + "\n".join(
                f"{kind[:70]:70} {'caught' if s else 'MISSED'} (without a key: {'caught' if u else 'missed'})  {line[:90]}"
                for kind, s, u, line in rows
            )
        )
    assert [kind for kind, signed, _, _ in rows if not signed] == []
    # the consistent forgery is what only the signature catches: recomputing alone finds nothing wrong with it
    assert [u for kind, _, u, _ in rows[:3]] == [False, False, False]
