"""What the `atelier` command prints, through its own entry point (atelier_client.cli.main) with the REST client replaced
by a scripted one: the --wait progress through a sequence of statuses, on a terminal and in a log, and the board's
table (column order, whole names, the partial legend). tests/test_cli.py runs the installed command against a live server."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from atelier_client import cli
from evaluator.categories import CATEGORIES


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def units(done: int, total: int) -> dict:
    return {"renders": {"done": done, "total": total}, "judgements": {"done": 0, "total": 0}}


def state(status: str, done: int = 0, total: int = 0) -> dict:
    return {"id": 7, "status": status, "progress": units(done, total), "figures": {}, "page_url": "http://x/submissions/7"}


# A submission as the command sees it through its polls: no unit yet, then units rendered and judged, the word getting
# shorter on the way ("rendering" -> "judging" -> "done"), the same answer twice.
SEQUENCE = [
    state("queued"),
    state("queued"),
    state("rendering", 0, 4),
    state("rendering", 2, 4),
    state("judging", 4, 4),
    state("done", 4, 4),
]


class ScriptedApi:
    def __init__(self, statuses: list[dict], board: dict | None = None) -> None:
        self.statuses, self.board_reply = list(statuses), board

    def submit(self, path: Path, fields: dict, key: str) -> dict:
        return self.statuses.pop(0)

    def status(self, submission_id: int) -> dict:
        return self.statuses.pop(0)

    def board(self, pack: str) -> dict:
        return self.board_reply


@pytest.fixture
def prompts(tmp_path) -> Path:
    path = tmp_path / "p.jsonl"
    path.write_text('{"task_id": "oe-s01", "prompt": "a cat"}\n')
    return path


def wait(monkeypatch, prompts: Path, stderr: io.StringIO) -> str:
    monkeypatch.setattr(cli, "client", lambda: ScriptedApi(SEQUENCE))
    monkeypatch.setattr(cli.sys, "stderr", stderr)
    assert cli.main(["submit", str(prompts), "--pack", "sample", "--prompter", "m", "--wait", "--interval", "0"]) == 0
    return stderr.getvalue()


def screen(written: str) -> list[str]:
    """The lines a terminal shows for `written`: a carriage return moves back to the line's start, later text overwrites."""
    lines, line, col = [], [], 0
    for ch in written:
        if ch == "\n":
            lines.append("".join(line).rstrip())
            line, col = [], 0
        elif ch == "\r":
            col = 0
        else:
            line[col : col + 1] = [ch]
            col += 1
    return [*lines, "".join(line).rstrip()] if line else lines


def test_wait_on_a_terminal_rewrites_one_line_and_leaves_no_letters_of_a_longer_status(monkeypatch, prompts):
    written = wait(monkeypatch, prompts, Terminal())
    drawn = [screen(written[: end.start()])[-1] for end in re.finditer(r"\r(?!$)", written)][1:] + [screen(written)[-1]]
    # each state as the terminal shows it once drawn over the one before: ends in the status word, not "judgingng"
    assert [line.split()[-1] for line in drawn] == ["units", "rendering", "rendering", "judging", "done"], drawn
    assert drawn[0] == "queued: waiting for a worker to plan the units"
    assert drawn[-1] == "[" + "#" * 30 + "] 4/4 units  done"
    assert len(screen(written)) == 2  # "submitted: ..." then the one progress line, ended by a newline


def test_wait_in_a_log_prints_one_line_per_change_without_carriage_returns(monkeypatch, prompts):
    written = wait(monkeypatch, prompts, io.StringIO())
    assert "\r" not in written and "\x1b" not in written
    lines = written.splitlines()
    assert lines[0] == "submitted: id 7  http://x/submissions/7"
    progress = lines[1:]
    assert len(progress) == 5  # six answers, the repeated "queued" printed once
    assert [line.split()[-1] for line in progress[1:]] == ["rendering", "rendering", "judging", "done"]
    assert progress[-1] == "[" + "#" * 30 + "] 4/4 units  done"


def test_wait_says_it_is_waiting_for_a_worker_before_any_unit_exists(monkeypatch, prompts):
    first = wait(monkeypatch, prompts, io.StringIO()).splitlines()[1]
    assert first == "queued: waiting for a worker to plan the units"
    assert "0/0" not in first


def row(prompter: str, team: str = "Pixel Poets", standing: str = "full") -> dict:
    figure = {"value": 61.25, "standing": standing}
    return {
        "rank": 1,
        "prompter": prompter,
        "team": team,
        "overall": figure,
        "categories": {"CO": figure, "IM": figure, "OE": figure},  # keys as JSON may carry them: not the site's order
    }


def board(monkeypatch, capsys, *rows: dict, columns: int | None = None) -> list[str]:
    monkeypatch.setattr(cli, "client", lambda: ScriptedApi([], {"pack": "sample@1", "judge": "j", "rows": list(rows)}))
    monkeypatch.setattr(cli, "terminal_width", lambda: columns, raising=False)
    assert cli.main(["board", "sample"]) == 0
    return capsys.readouterr().out.splitlines()


def test_board_orders_the_categories_as_the_site_does(monkeypatch, capsys):
    header = board(monkeypatch, capsys, row("m"))[1].split()
    assert header[-3:] == ["OE", "CO", "IM"] == list(CATEGORIES)  # open-ended, constrained, imitation, as the board page


def test_board_shows_a_long_prompter_name_whole_and_aligned(monkeypatch, capsys):
    long = "a-very-long-prompter-name-with-its-version-2025-06-01"
    lines = board(monkeypatch, capsys, row(long), row("short", team="A team with quite a long name indeed"))
    assert long in lines[2] and "A team with quite a long name indeed" in lines[3]
    assert len({len(line) for line in lines[1:]}) == 1  # header and rows share the column widths


def test_board_shortens_names_with_an_ellipsis_only_when_the_terminal_is_too_narrow(monkeypatch, capsys):
    long = "a-very-long-prompter-name-with-its-version-2025-06-01"
    lines = board(monkeypatch, capsys, row(long), columns=80)
    assert all(len(line) <= 80 for line in lines), lines
    assert long not in lines[2] and "…" in lines[2] and lines[2].split()[1] == long[: lines[2].split()[1].index("…")] + "…"


def test_board_prints_the_partial_legend_only_when_a_row_is_marked(monkeypatch, capsys):
    assert "partial" not in board(monkeypatch, capsys, row("m"))[0]
    marked = board(monkeypatch, capsys, row("m"), row("n", standing="partial"))
    assert "(* partial)" in marked[0] and "61.2*" in marked[3]
