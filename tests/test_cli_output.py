"""What the `atelier` command prints, through its own entry point (atelier_client.cli.main) with the REST client replaced
by a scripted one: the --wait progress through a sequence of statuses, on a terminal and in a log, the figures of
`atelier status` with their intervals (or why none), and the board's table (column order, whole names, the partial
legend, intervals beside the values or under the row, rank ranges), each also as a site older than the intervals
answers. tests/test_cli.py runs the installed command against a live server."""

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


def figure(value: float | None, low: float | None, high: float | None, scale: str = "score_0_100", **extra) -> dict:
    """A figure as the API sends it now (submissions/api.py _figure)."""
    note = None if low is not None else "no interval: none of its tasks has a score"
    shown = {"value": value, "scale": scale, "low": low, "high": high, "interval_note": note, "partial": False, "withheld": False}
    return {**shown, "coverage": {"scored": 12, "planned": 12}, **extra}


# A status as the site answers it (values from a run of the sample pack): intervals on each figure's own scale.
FIGURES = {
    "overall:overall": figure(42.793981937149205, 11.52, 74.06),
    "category:OE": figure(None, None, None, partial=True, coverage={"scored": 0, "planned": 6}),
    "skill:prompt_objective": figure(0.7839285714285715, 0.2868664553388953, 1.0, "rate_0_1"),
    "skill:image_rubric": figure(3.4166, 2.9, 3.81, "likert_1_5"),
    "category:IM": figure(
        None,
        None,
        None,
        partial=True,
        withheld=True,
        interval_note="no interval: withheld, as its value is (too many of its planned units are missing)",
        coverage={"scored": 2, "planned": 12},
    ),
}
OLDER = ("low", "high", "interval_note")  # the fields a site older than the intervals does not send


def status_lines(monkeypatch, capsys, figures: dict) -> list[str]:
    monkeypatch.setattr(
        cli, "client", lambda: ScriptedApi([{**state("done", 4, 4), "pack": "sample v1", "judge": "j", "figures": figures}])
    )
    assert cli.main(["status", "7"]) == 0
    return capsys.readouterr().out.splitlines()


def test_status_prints_each_figure_with_its_interval_and_scale_or_why_it_has_none(monkeypatch, capsys):
    assert status_lines(monkeypatch, capsys, FIGURES) == [
        "submission 7: done  pack sample v1  judge j",
        "  overall:overall          42.8 [11.5, 74.1] (0-100)",
        "  category:IM              withheld  (partial: 2/12 scored)  no interval: withheld, as its value is (too many of its planned units are missing)",
        "  category:OE              —  (partial: 0/6 scored)  no interval: none of its tasks has a score",
        "  skill:image_rubric       3.42 [2.90, 3.81] (1-5)",
        "  skill:prompt_objective   0.784 [0.287, 1.000] (0-1)",
    ]


def test_status_from_a_site_without_intervals_prints_as_before(monkeypatch, capsys):
    older = {key: {k: v for k, v in f.items() if k not in OLDER} for key, f in FIGURES.items()}
    assert status_lines(monkeypatch, capsys, older)[1:] == [
        "  overall:overall          42.8",
        "  category:IM              withheld",
        "  category:OE              —  (partial: 0/6 scored)",
        "  skill:image_rubric       3.4",
        "  skill:prompt_objective   0.8",
    ]


def row(
    prompter: str, team: str = "Pixel Poets", standing: str = "full", interval: tuple | None = None, rank_high: int | None = None
) -> dict:
    """A board row; with `interval` its cells carry ci_low and ci_high, with `rank_high` a rank range (new fields)."""
    cell = {"value": 61.25, "standing": standing}
    if interval:
        cell.update(scale="score_0_100", ci_low=interval[0], ci_high=interval[1])
    return {
        "rank": 1,
        **({"rank_high": rank_high} if rank_high is not None else {}),
        "prompter": prompter,
        "team": team,
        "overall": cell,
        "categories": {"CO": cell, "IM": cell, "OE": cell},  # keys as JSON may carry them: not the site's order
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


def test_board_from_a_site_without_intervals_or_rank_ranges_prints_as_before(monkeypatch, capsys):
    assert board(monkeypatch, capsys, row("m"), {**row("n", standing="partial"), "rank": None}) == [
        "sample@1  judge j  (* partial)",
        "rank  prompter team         overall       OE       CO       IM",
        "   1  m        Pixel Poets     61.2     61.2     61.2     61.2",
        "   -  n        Pixel Poets    61.2*    61.2*    61.2*    61.2*",
    ]


def test_board_without_a_width_limit_shows_each_interval_beside_its_value_and_rank_ranges(monkeypatch, capsys):
    second = {**row("second", interval=(48.12, 74.93), rank_high=3), "rank": 2}
    lines = board(monkeypatch, capsys, row("first", interval=(50.0, 70.0), rank_high=1), second)
    assert lines == [
        "sample@1  judge j  ([low, high]: 95 % interval)  (rank (a-b): between places a and b, by head-to-head decisions)",
        "rank        prompter team                  overall                OE                CO                IM",
        "   1        first    Pixel Poets 61.2 [50.0, 70.0] 61.2 [50.0, 70.0] 61.2 [50.0, 70.0] 61.2 [50.0, 70.0]",
        "   2 (2-3)  second   Pixel Poets 61.2 [48.1, 74.9] 61.2 [48.1, 74.9] 61.2 [48.1, 74.9] 61.2 [48.1, 74.9]",
    ]


def test_board_on_a_narrow_terminal_puts_the_intervals_under_each_row_named_by_column(monkeypatch, capsys):
    long = "a-very-long-prompter-name-with-its-version-2025-06-01"
    withheld = {**row("withheld", interval=(40.0, 80.0)), "overall": {"value": None, "standing": "withheld", "ci_low": 1.0, "ci_high": 2.0}}
    lines = board(monkeypatch, capsys, row(long, interval=(48.12, 74.93), rank_high=2), withheld, columns=80)
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[2:] == [
        "rank        prompter             team         overall       OE       CO       IM",
        "   1 (1-2)  a-very-long-prompte… Pixel Poets     61.2     61.2     61.2     61.2",
        "      overall [48.1, 74.9]  OE [48.1, 74.9]  CO [48.1, 74.9]  IM [48.1, 74.9]",
        "   1        withheld             Pixel Poets withheld     61.2     61.2     61.2",
        "      OE [40.0, 80.0]  CO [40.0, 80.0]  IM [40.0, 80.0]",  # a withheld cell shows no interval: it would give it away
    ]
    assert lines[:2] == [
        "sample@1  judge j  ([low, high]: 95 % interval)",
        "  (rank (a-b): between places a and b, by head-to-head decisions)",
    ]
    whole = board(monkeypatch, capsys, row(long, interval=(48.12, 74.93)), columns=150)  # room enough: one line a row again
    assert len(whole) == 3 and whole[2].endswith("61.2 [48.1, 74.9]") and long in whole[2] and len(whole[2]) <= 150
    # a little less room: the names give way first (down to their least width, as without intervals), the intervals stay
    beside = board(monkeypatch, capsys, row(long, interval=(48.12, 74.93)), columns=120)
    assert len(beside) == 3 and beside[2].endswith("61.2 [48.1, 74.9]") and "…" in beside[2] and len(beside[2]) <= 120
