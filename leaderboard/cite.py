"""How to cite a board (issue 32): BibTeX and CITATION.cff fields naming the pack (name, version, revision), the judge
(id, version) and the board's latest signed release (number, digest), so a paper can say exactly which board it quotes.
An entry is cited alike (issue 42), as BibTeX and a plain-text reference: its team, prompter and page, its board and
judge, its overall score and rank there, and the latest signed release that carries it.

The text is built here as plain strings, with BibTeX's special characters escaped; the template escapes it for HTML.
Without a release the fields say so and carry no digest; their date is then when the board's statistics last changed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse

from evaluation.judges import JudgeKey
from evaluation.models import BoardRow, BoardStats, Submission
from evaluator.metrics.scopes import Scope

from .models import Release
from .releases import board_releases
from .selectors import Board

AUTHOR = "AtelierEval leaderboard"
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")  # BibTeX's month macros
BIBTEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def board_cite(board: Board, judge: JudgeKey, request: HttpRequest, stats: BoardStats | None = None) -> dict:
    """The cite block's data for this board and judge: its latest release (or None), BibTeX and CITATION.cff text.
    Without a release the fields are dated by when the board's statistics (`stats`) last changed."""
    release = board_releases(board, judge).select_related("key").order_by("-number").first()
    board_url = absolute(request, f"{reverse('leaderboard')}?{urlencode({'board': board.key, 'judge': judge.key}, safe=':')}")
    dated = release.created if release else (stats.computed if stats else None)
    fields = {
        "board": board,
        "judge": judge,
        "release": release,
        "url": board_url,
        "file": absolute(request, reverse("release", args=[release.digest])) if release else "",
        "date": dated.astimezone(UTC) if dated else None,
    }
    return {"release": release, "url": board_url, "file": fields["file"], "bibtex": bibtex(**fields), "cff": cff(**fields)}


def entry_cite(submission: Submission, judge: JudgeKey, request: HttpRequest) -> dict:
    """The cite block of a published entry scored by `judge`: the latest release of its board that carries it (or
    None), its board row's overall score and rank, BibTeX and a plain-text reference."""
    board = Board(submission.pack, submission.pack_revision)
    releases = board_releases(board, judge).order_by("-number").only("number", "digest", "created", "entries")
    # newest first: a published entry is in its board's latest release, unless made before releases listed entries
    release = next((r for r in releases.iterator(chunk_size=8) if submission.pk in (r.entries or [])), None)
    row = BoardRow.objects.filter(submission=submission, judge_id=judge.judge_id, judge_version=judge.version).first()
    overall = (row.figures.get(Scope.OVERALL) or {}) if row else {}
    dated = release.created if release else submission.published_at
    entry = EntryCitation(
        submission=submission,
        board=board,
        judge=judge,
        release=release,
        url=absolute(request, f"{reverse('submission', args=[submission.pk])}?{urlencode({'judge': judge.key}, safe=':')}"),
        file=absolute(request, reverse("release", args=[release.digest])) if release else "",
        date=dated.astimezone(UTC) if dated else None,
        score=_score(overall, row.stats.get("rank") if row else None),
    )
    return {"release": release, "file": entry.file, "bibtex": entry_bibtex(entry), "text": entry_text(entry)}


def _score(overall: dict, rank: int | None) -> str:
    """The overall score as the board shows it, e.g. "overall 61.2 [55.0, 67.1] (95 % interval), rank 3"; "" without."""
    if overall.get("value") is None:
        return ""
    shown = f"overall {overall['value']:.1f}"
    if overall.get("ci_low") is not None and overall.get("ci_high") is not None:
        shown += f" [{overall['ci_low']:.1f}, {overall['ci_high']:.1f}] (95 % interval)"
    return shown + (f", rank {rank}" if rank is not None else ", unranked")


def _entry_title(submission: Submission, board: Board, judge: JudgeKey) -> str:
    return (
        f"Entry #{submission.pk}, {submission.prompter} by {submission.team.name}, on {board.pack.name} v{board.pack.version}"
        f" revision {board.revision}, judge {judge.judge_id} version {judge.version} ({AUTHOR})"
    )


def _entry_release(release: Release | None) -> str:
    if release is None:
        return "not yet in a signed release of its board (no digest)"
    return f"in signed release {release.number} of its board, digest (SHA-256 of its MANIFEST.json) {release.digest}"


@dataclass(frozen=True)
class EntryCitation:
    """What an entry's citations say: the entry, its board and judge, the release carrying it, its page and file URLs."""

    submission: Submission
    board: Board
    judge: JudgeKey
    release: Release | None
    url: str
    file: str
    date: datetime | None
    score: str


def entry_bibtex(entry: EntryCitation) -> str:
    submission, board, judge, release = entry.submission, entry.board, entry.judge, entry.release
    url, file, date, score = entry.url, entry.file, entry.date, entry.score
    key = "-".join(
        _slug(part)
        for part in (
            "atelier",
            f"entry{submission.pk}",
            board.pack.name,
            f"v{board.pack.version}",
            f"rev{board.revision}",
            judge.judge_id,
            judge.version,
        )
    )
    key += f"-release{release.number}" if release else ""
    note = "; ".join(part for part in (score, _entry_release(release)) if part)
    note = _bib(note[:1].upper() + note[1:]) + (f". Release file: \\url{{{file}}}" if file else "")
    lines = [
        f"@misc{{{key},",
        f"  title = {{{{{_bib(_entry_title(submission, board, judge))}}}}},",
        f"  author = {{{{{_bib(submission.team.name)}}}}},",
        f"  howpublished = {{{_bib(AUTHOR)}, \\url{{{url}}}}},",
        f"  url = {{{url}}},",
        *([f"  year = {{{date.year}}},", f"  month = {MONTHS[date.month - 1]},"] if date else []),
        f"  note = {{{note}}},",
        "}",
    ]
    return "\n".join(lines)


def entry_text(entry: EntryCitation) -> str:
    """A plain-text reference: team (year). Title. Score; release. URL."""
    year = f" ({entry.date.year})" if entry.date else ""
    facts = "; ".join(part for part in (entry.score, _entry_release(entry.release)) if part)
    title = _entry_title(entry.submission, entry.board, entry.judge)
    return f"{entry.submission.team.name}{year}. {title}. {facts[:1].upper() + facts[1:]}. {entry.url}"


def absolute(request: HttpRequest, path: str) -> str:
    """A site path as a full URL: under ATELIER_SITE_URL where it is set (what releases name), else this request's host."""
    return settings.ATELIER_SITE_URL + path if settings.ATELIER_SITE_URL else request.build_absolute_uri(path)


def _title(board: Board, judge: JudgeKey, release: Release | None) -> str:
    named = f"{AUTHOR}: {board.pack.name} v{board.pack.version} revision {board.revision}, judge {judge.judge_id} version {judge.version}"
    return named + (f", release {release.number} (digest {release.digest[:12]})" if release else "")


def bibtex(*, board: Board, judge: JudgeKey, release: Release | None, url: str, file: str, date: datetime | None) -> str:
    key = "-".join(
        _slug(part)
        for part in ("atelier", board.pack.name, f"v{board.pack.version}", f"rev{board.revision}", judge.judge_id, judge.version)
    )
    about = f"pack {board.pack.name} version {board.pack.version} revision {board.revision}; judge {judge.judge_id} version {judge.version}"
    about += f" ({judge.label})" if judge.label else ""
    if release:
        note = f"Signed release {release.number} of this board, digest (SHA-256 of its MANIFEST.json) {release.digest}; {about}"
        note += f"; signed with Ed25519 key {release.key.fingerprint}"
    else:
        note = f"No signed release of this board yet (no digest): {about}"
    note = _bib(note) + (f". Release file: \\url{{{file}}}" if file else "")
    key += f"-release{release.number}" if release else ""
    lines = [
        f"@misc{{{key},",
        f"  title = {{{{{_bib(_title(board, judge, release))}}}}},",
        f"  author = {{{{{_bib(AUTHOR)}}}}},",
        f"  howpublished = {{\\url{{{url}}}}},",
        f"  url = {{{url}}},",
        *([f"  year = {{{date.year}}},", f"  month = {MONTHS[date.month - 1]},"] if date else []),
        f"  note = {{{note}}},",
        "}",
    ]
    return "\n".join(lines)


def cff(*, board: Board, judge: JudgeKey, release: Release | None, url: str, file: str, date: datetime | None) -> str:
    """CITATION.cff (format 1.2.0) fields; strings are written as JSON strings, which YAML reads as double-quoted."""
    q = json.dumps
    lines = [
        "cff-version: 1.2.0",
        f"message: {q('If you quote this board, cite it as below: the digest names exactly which release you quote.' if release else 'This board has no signed release yet: these fields name it without a digest.')}",
        "type: dataset",
        f"title: {q(_title(board, judge, release))}",
        "authors:",
        f"  - name: {q(AUTHOR)}",
        f"url: {q(url)}",
    ]
    if release:
        lines += [
            f"version: {q(f'release {release.number}')}",
            f"date-released: {date:%Y-%m-%d}",
            f"repository-artifact: {q(file)}",
            "identifiers:",
            "  - type: other",
            f"    value: {q(f'sha256:{release.digest}')}",
            f"    description: {q('the release digest: SHA-256 of its MANIFEST.json')}",
        ]
    lines += [
        "keywords:",
        *(
            f"  - {q(word)}"
            for word in (
                f"pack: {board.pack.name}",
                f"pack version: {board.pack.version}",
                f"pack revision: {board.revision}",
                f"judge: {judge.judge_id}",
                f"judge version: {judge.version}",
            )
        ),
    ]
    return "\n".join(lines)


def _bib(text: str) -> str:
    return "".join(BIBTEX_SPECIAL.get(c, c) for c in text)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", str(text).lower()).strip("-") or "x"
