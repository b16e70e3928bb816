"""The `atelier` command: log in, submit a prompt file and follow it, read a status, download a breakdown, print a
board, register, test and run endpoints, and describe prompters (cards). Exit 0 on success, 1 with the server's message on any error, 2 on usage."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import TextIO

from . import config
from .api import ApiError, Client

ACTIVE = ("queued", "prompting", "rendering", "judging")
BAR = 30
# The board's category columns in the site's order (evaluator/categories.py: open-ended, constrained, imitation); the
# API's rows carry the categories as a mapping, not an order. A category the client does not know follows, by code.
SITE_CATEGORIES = ("OE", "CO", "IM")
# The name columns keep at least this many characters when a narrow terminal makes them shorter (with an ellipsis).
PROMPTER_MIN, TEAM_MIN = 16, 12
EXIT_PIPE = 141  # 128 + SIGPIPE: the status a shell reports for a Unix tool whose reader left


def client() -> Client:
    data = config.load()
    return Client(
        data["url"],
        data["token"],
        tries=int(os.environ.get("ATELIER_TRIES", "5")),
        max_wait=float(os.environ.get("ATELIER_MAX_WAIT", "60")),
    )


def cmd_login(args: argparse.Namespace) -> int:
    token = args.token or os.environ.get("ATELIER_TOKEN") or getpass.getpass("API token: ")
    Client(args.url.rstrip("/"), token, tries=1).json("GET", "/api/v1/endpoints")  # a wrong token fails here, nothing saved
    print(f"logged in to {args.url}; saved to {config.save(args.url, token)}")
    return 0


def progress_line(status: dict) -> str:
    counts = [c for c in (status.get("progress") or {}).values() if c.get("total")]
    done, total = sum(c["done"] for c in counts), sum(c["total"] for c in counts)
    if not total:
        return waiting_line(status)
    filled = BAR * done // total
    return f"[{'#' * filled}{'.' * (BAR - filled)}] {done}/{total} units  {status['status']}"


def waiting_line(status: dict) -> str:
    """What a submission without units is doing: a bar of 0/0 would say nothing true."""
    word, calls = status["status"], status.get("prompting") or {}
    if word == "queued":
        return "queued: waiting for a worker to plan the units"
    if word == "prompting":  # the units are planned from the endpoint's prompts
        answered = f"{calls['called']}/{calls['total']} endpoint calls answered" if calls.get("total") else "calling the endpoint"
        return f"prompting: {answered}, no units yet"
    return f"{word}: no units planned yet" if word in ACTIVE else f"{word} (no units were planned)"


class ProgressLine:
    """The --wait progress on `stream`. On a terminal one line, redrawn in place and padded over the one before, so a
    shorter status leaves none of a longer one's letters; elsewhere (a log, a pipe) one line per change, no carriage returns."""

    def __init__(self, stream: TextIO) -> None:
        self.stream, self.shown = stream, ""
        self.in_place = stream.isatty()

    def show(self, line: str) -> None:
        if line == self.shown:
            return
        self.stream.write("\r" + line.ljust(len(self.shown)) if self.in_place else line + "\n")
        self.stream.flush()
        self.shown = line

    def end(self) -> None:
        if self.in_place and self.shown:
            self.stream.write("\n")
            self.stream.flush()


# Each scale the site scores on (evaluator/judge/scales.py): the decimals its values are shown with and its range. A
# scale the client does not know is named as the server spells it, with one decimal.
SCALES = {"score_0_100": (1, "0-100"), "likert_1_5": (2, "1-5"), "rate_0_1": (3, "0-1"), "distance_0_1": (3, "0-1, lower is closer")}


def on_scale(value: float, scale: str) -> str:
    return f"{value:.{SCALES.get(scale, (1, scale))[0]}f}"


def interval_text(low, high, scale: str) -> str:
    """'[low, high]' on the scale's decimals, or '' when either end is missing."""
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        return ""
    return f"[{on_scale(low, scale)}, {on_scale(high, scale)}]"


def partial_text(figure: dict) -> str:
    coverage = figure.get("coverage")
    if not figure.get("partial"):
        return ""
    return f"  (partial: {coverage['scored']}/{coverage['planned']} scored)" if coverage else " (partial)"


def figure_text(figure: dict) -> str:
    """A figure as `atelier status` prints it: its value with its 95 % interval and its scale's range, e.g.
    '62.4 [48.1, 74.9] (0-100)', or the server's reason for having no interval. From a site that sends no interval
    fields (older than them) the text is as it was then."""
    if "low" not in figure and "interval_note" not in figure:
        return older_figure_text(figure)
    scale, value = figure.get("scale") or "", figure.get("value")
    interval = interval_text(figure.get("low"), figure.get("high"), scale)
    if figure.get("withheld"):
        text = "withheld"
    elif isinstance(value, (int, float)):
        named = SCALES.get(scale, (1, scale))[1]
        text = on_scale(value, scale) + (f" {interval}" if interval else "") + (f" ({named})" if named else "")
    else:
        text = "—"
    note = "" if interval else figure.get("interval_note") or ""
    return text + partial_text(figure) + (f"  {note}" if note else "")


def older_figure_text(figure: dict) -> str:
    """figure_text for a site that sends no interval: the value alone, to one decimal."""
    if figure.get("withheld"):
        return "withheld"
    text = f"{figure['value']:.1f}" if isinstance(figure.get("value"), (int, float)) else "—"
    return text + partial_text(figure)


def print_status(status: dict) -> None:
    print(f"submission {status['id']}: {status['status']}  pack {status.get('pack', '')}  judge {status.get('judge', '')}")
    if status.get("error"):
        print(f"error: {status['error']}")
    for key, figure in sorted((status.get("figures") or {}).items(), key=lambda kv: (not kv[0].startswith("overall"), kv[0])):
        print(f"  {key:<24} {figure_text(figure)}")
    for warning in status.get("warnings") or []:
        print(f"warning: {warning}")


def follow(api: Client, status: dict, interval: float) -> dict:
    """Poll until the submission leaves the active states, showing its progress on stderr."""
    progress = ProgressLine(sys.stderr)
    while True:
        progress.show(progress_line(status))
        if status["status"] not in ACTIVE:
            progress.end()
            return status
        time.sleep(interval)
        status = api.status(status["id"])


def finished(status: dict) -> int:
    print_status(status)
    return 0 if status["status"] in ("done", *ACTIVE) else 1


def cmd_submit(args: argparse.Namespace) -> int:
    api, path = client(), Path(args.file)
    if not path.is_file():
        raise ApiError(f"no such file: {path}")
    key = args.idempotency_key or str(uuid.uuid4())  # one key for this invocation, reused by each of its retries
    fields = {"prompter": args.prompter, "pack": args.pack, "condition": args.condition or ""}
    status = api.submit(path, fields, key)
    print(f"submitted: id {status['id']}  {status.get('page_url', '')}", file=sys.stderr)
    return finished(follow(api, status, args.interval) if args.wait else status)


def cmd_status(args: argparse.Namespace) -> int:
    return finished(client().status(args.id))


def cmd_download(args: argparse.Namespace) -> int:
    data = client().breakdown(args.id, args.format)
    Path(args.output).write_bytes(data)
    print(f"wrote {len(data)} bytes to {args.output}", file=sys.stderr)
    return 0


def cell(c: dict | None) -> str:
    if not c or c.get("standing") == "withheld":
        return "withheld" if c else "—"
    return f"{c['value']:.1f}" + ("*" if c.get("standing") == "partial" else "") if c.get("value") is not None else "—"


def cell_interval(c: dict | None) -> str:
    """A board cell's 95 % interval, '' where it has none (none sent, withheld, no value)."""
    if not c or c.get("standing") == "withheld" or c.get("value") is None:
        return ""
    return interval_text(c.get("ci_low"), c.get("ci_high"), c.get("scale") or "score_0_100")


def rank_range(row: dict) -> str:
    """'(2-3)' when the head-to-head decisions leave the row more than one place (rank_high, from sites that send it)."""
    rank, high = row.get("rank"), row.get("rank_high")
    return f"({rank}-{high})" if isinstance(rank, int) and isinstance(high, int) and high > rank else ""


def board_categories(rows: list[dict]) -> list[str]:
    present = {k for r in rows for k in r["categories"]}
    return [c for c in SITE_CATEGORIES if c in present] + sorted(present - set(SITE_CATEGORIES))


def terminal_width() -> int | None:
    """The columns a table must fit in: the terminal's, or None (no limit) when stdout is a file or a pipe."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def name_widths(rows: list[dict], others: int, limit: int | None) -> tuple[int, int]:
    """The prompter and team columns, each as wide as its longest name; when that overflows `limit`, the team column
    gives way first, then the prompter's, each down to its minimum."""
    prompter = max([len("prompter"), *(len(r["prompter"]) for r in rows)])
    team = max([len("team"), *(len(r["team"]) for r in rows)])
    excess = others + prompter + team - limit if limit else 0
    for_team = min(max(excess, 0), max(team - TEAM_MIN, 0))
    for_prompter = min(max(excess - for_team, 0), max(prompter - PROMPTER_MIN, 0))
    return prompter - for_prompter, team - for_team


def fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def packed(pieces: list[str], limit: int | None, indent: str) -> list[str]:
    """The pieces on as few lines as `limit` allows, two spaces apart; lines after the first start with `indent`."""
    lines = [pieces[0]]
    for piece in pieces[1:]:
        if limit and len(lines[-1]) + 2 + len(piece) > limit:
            lines.append(indent + piece)
        else:
            lines[-1] += "  " + piece
    return lines


CELL = 8  # a figure column's least width: "withheld"


def board_lines(board: dict, limit: int | None) -> list[str]:
    """The board as a table: rank (with its range where wider than one place), names, then the overall and category
    cells, each with its 95 % interval beside it when the table fits `limit` with the names at their least width, else
    on a line under the row, each named by its column (more lines where even that would not fit). The title says
    what the marks mean."""
    rows, categories = board["rows"], board_categories(board["rows"])
    heads = ["overall", *categories]
    figures = [[r["overall"], *(r["categories"].get(c) for c in categories)] for r in rows]
    values = [[cell(f) for f in row_figures] for row_figures in figures]
    intervals = [[cell_interval(f) for f in row_figures] for row_figures in figures]
    ranges = [rank_range(r) for r in rows]
    range_width = max(map(len, ranges), default=0)
    rank_width = 4 + (1 + range_width if range_width else 0)

    def others(widths: list[int]) -> int:  # every character of a line but the two names
        return rank_width + 2 + 1 + 1 + sum(widths) + len(widths) - 1

    beside = [[f"{v} {i}" if i else v for v, i in zip(vs, ivs)] for vs, ivs in zip(values, intervals)]
    widths = [max([CELL, len(h), *(len(row[k]) for row in beside)]) for k, h in enumerate(heads)]  # each interval beside
    prompter, team = name_widths(rows, others(widths), limit)
    inline = limit is None or others(widths) + prompter + team <= limit
    if not inline:  # the values alone in their columns, the intervals on lines of their own
        widths = [max(CELL, len(h)) for h in heads]
        prompter, team = name_widths(rows, others(widths), limit)

    def line(rank: str, name: str, team_name: str, shown: list[str]) -> str:
        return f"{rank:<{rank_width}}  {fit(name, prompter):<{prompter}} {fit(team_name, team):<{team}} " + " ".join(
            f"{f:>{w}}" for f, w in zip(shown, widths)
        )

    def rank(r: dict, shown_range: str) -> str:
        return f"{r['rank'] or '-':>4}" + (f" {shown_range}" if range_width else "")

    lines = [line(f"{'rank':>4}", "prompter", "team", heads)]
    for r, shown_range, vs, ivs, both in zip(rows, ranges, values, intervals, beside):
        lines.append(line(rank(r, shown_range), r["prompter"], r["team"], both if inline else vs))
        if limit is not None and not inline and any(ivs):
            indent = " " * 6  # where the names start when no rank has a range: short, so that the line fits
            lines += [indent + text for text in packed([f"{h} {i}" for h, i in zip(heads, ivs) if i], limit - len(indent), "")]
    legends = [
        *(["(* partial)"] if any(v.endswith("*") for vs in values for v in vs) else []),
        *(["([low, high]: 95 % interval)"] if any(i for ivs in intervals for i in ivs) else []),
        *(["(rank (a-b): between places a and b, by head-to-head decisions)"] if range_width else []),
    ]
    title = packed([f"{board['pack']}  judge {board['judge']}", *legends], limit, "  ")
    return [*title, *lines]


def cmd_board(args: argparse.Namespace) -> int:
    board = client().board(args.pack)
    if args.json:
        print(json.dumps(board, indent=2))
        return 0
    print("\n".join(board_lines(board, terminal_width())))
    return 0


def cmd_endpoint(args: argparse.Namespace) -> int:
    api = client()
    if args.action == "add":
        fields = {
            k: v
            for k, v in vars(args).items()
            if k in ("name", "base_url", "model", "api_key", "temperature", "max_tokens", "max_in_flight") and v is not None
        }
        print(json.dumps(api.json("POST", "/api/v1/endpoints", fields), indent=2))
        return 0
    if args.action == "test":
        print(json.dumps(api.json("POST", f"/api/v1/endpoints/{args.id}/test", {"pack": args.pack, "condition": args.condition}), indent=2))
        return 0
    fields = {"pack": args.pack, "condition": args.condition, "samples": args.samples, "rounds": args.rounds}
    status = api.json("POST", f"/api/v1/endpoints/{args.id}/runs", fields, headers={"Idempotency-Key": str(uuid.uuid4())})
    return finished(follow(api, status, args.interval) if args.wait else status)


def endpoint_parser(sub) -> None:
    endpoint = sub.add_parser("endpoint", help="register, test and run an OpenAI-compatible prompter").add_subparsers(
        dest="action", required=True
    )
    add = endpoint.add_parser("add", help="register an endpoint")
    add.add_argument("--name", required=True)
    add.add_argument("--base-url", required=True)
    add.add_argument("--model", required=True)
    add.add_argument("--api-key", default=os.environ.get("ATELIER_ENDPOINT_KEY"))
    add.add_argument("--temperature", type=float)
    add.add_argument("--max-tokens", type=int)
    add.add_argument("--max-in-flight", type=int)
    for action in ("test", "run"):
        p = endpoint.add_parser(action, help="one test call (nothing stored)" if action == "test" else "start a run")
        p.add_argument("id", type=int)
        p.add_argument("--pack", default="")
        p.add_argument("--condition", default="plain")
    run = endpoint.choices["run"]
    run.add_argument("--samples", type=int, default=1)
    run.add_argument("--rounds", type=int, default=1)
    run.add_argument("--wait", action="store_true")
    run.add_argument("--interval", type=float, default=2.0, help=argparse.SUPPRESS)


CARD_OPTIONS = ("kind", "family", "weights", "parameters", "paper_url", "code_url", "licence", "description", "contact")
CARD_COLUMNS = ("id", "name", "kind", "family", "weights", "params", "version", "updated")


def card_fields(args: argparse.Namespace) -> dict:
    """The card fields given on the command line, and only those ('' is given: it clears the field)."""
    return {name: getattr(args, name) for name in ("name", *CARD_OPTIONS) if getattr(args, name, None) is not None}


def card_lines(card: dict) -> list[str]:
    """One card, a field a line (the parameters with their unit)."""
    shown = {**card, "parameters": card.get("parameters_label"), "kind": card.get("kind") or "(not described yet)"}
    return [f"{name:<12} {shown.get(name) or ''}".rstrip() for name in ("id", "name", *CARD_OPTIONS, "version", "updated")]


def cards_table(cards: list[dict]) -> list[str]:
    """The team's cards, a line each, every column as wide as its widest value (names whole)."""
    rows = [
        [
            str(c["id"]),
            c["name"],
            c["kind"] or "-",
            c["family"] or "-",
            c["weights"] or "-",
            c["parameters_label"] or "-",
            str(c["version"] or "-"),
        ]
        + [c["updated"][:16].replace("T", " ")]
        for c in cards
    ]
    widths = [max(len(row[i]) for row in [list(CARD_COLUMNS), *rows]) for i in range(len(CARD_COLUMNS))]
    return ["  ".join(value.ljust(width) for value, width in zip(row, widths)).rstrip() for row in [list(CARD_COLUMNS), *rows]]


def history_lines(history: dict) -> list[str]:
    """A card's versions, oldest first: number, when (UTC, to the minute), who, what changed."""
    rows = [[str(v["number"]), v["when"][:16].replace("T", " "), v["by"], ", ".join(v["changed"])] for v in history["versions"]]
    head = ["version", "when", "by", "changed"]
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(value.ljust(width) for value, width in zip(row, widths)).rstrip() for row in [head, *rows]]
    return [f"prompter card {history['id']} ({history['name']}): {len(rows)} version(s)", *lines]


def cmd_prompter(args: argparse.Namespace) -> int:
    api = client()
    if args.action == "list":
        cards = api.json("GET", "/api/v1/prompters")["prompters"]
        if args.json:
            print(json.dumps(cards, indent=2))
        else:
            print("\n".join(cards_table(cards)) if cards else "no prompter cards yet (atelier prompter add NAME --kind ...)")
        return 0
    if args.action == "history":
        history = api.json("GET", f"/api/v1/prompters/{args.id}/versions")
        print(json.dumps(history, indent=2) if args.json else "\n".join(history_lines(history)))
        return 0
    fields = card_fields(args)
    if args.action == "add":
        card = api.json("POST", "/api/v1/prompters", fields)
    elif not fields:
        print("atelier prompter edit: error: nothing to change: give at least one option (atelier prompter edit -h)", file=sys.stderr)
        return 2
    else:
        card = api.json("PATCH", f"/api/v1/prompters/{args.id}", fields)
    print(f"prompter card {card['id']} ({card['name']}): version {card['version']}", file=sys.stderr)
    print("\n".join(card_lines(card)))
    return 0


def prompter_parser(sub) -> None:
    prompter = sub.add_parser("prompter", help="describe the team's prompters (cards): list, add, edit, history").add_subparsers(
        dest="action", required=True
    )
    prompter.add_parser("list", help="the team's cards").add_argument("--json", action="store_true")
    history = prompter.add_parser("history", help="a card's changes: each version, when, by whom, what changed")
    history.add_argument("id", type=int, metavar="ID")
    history.add_argument("--json", action="store_true")
    add = prompter.add_parser("add", help="describe a new prompter (submissions under NAME use its card)")
    add.add_argument("name", metavar="NAME")
    edit = prompter.add_parser("edit", help="change a card: only the options given are sent ('' clears a field)")
    edit.add_argument("id", type=int, metavar="ID")
    edit.add_argument("--name")
    for p in (add, edit):
        p.add_argument("--kind", help="mllm, human, rule, agent or other")
        p.add_argument("--family", help="model family, e.g. Qwen2.5-VL")
        p.add_argument("--weights", help="open or closed")
        p.add_argument("--parameters", help="parameter count with its unit: 7B, 350M, 1.5T")
        p.add_argument("--paper-url")
        p.add_argument("--code-url")
        p.add_argument("--licence")
        p.add_argument("--description", help="plain text, at most 600 characters")
        p.add_argument("--contact", help="shown to the site's staff only")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="atelier", description="AtelierEval from the command line (the REST API, with a team token).")
    sub = p.add_subparsers(dest="command", required=True)
    login = sub.add_parser("login", help="store the server URL and a team token (mode 0600)")
    login.add_argument("url")
    login.add_argument("--token", help="default: $ATELIER_TOKEN, else asked for")
    submit = sub.add_parser("submit", help="upload a prompt file")
    submit.add_argument("file")
    submit.add_argument("--pack", required=True, help="name or name@version")
    submit.add_argument("--prompter", required=True)
    submit.add_argument("--condition", default="")
    submit.add_argument("--wait", action="store_true", help="follow with a progress bar until done, then print the figures")
    submit.add_argument("--idempotency-key", help="default: a new one per invocation (its retries reuse it)")
    submit.add_argument("--interval", type=float, default=2.0, help=argparse.SUPPRESS)
    sub.add_parser("status", help="a submission's status and figures").add_argument("id", type=int)
    download = sub.add_parser("download", help="a submission's per-task breakdown")
    download.add_argument("id", type=int)
    download.add_argument("--format", choices=("csv", "jsonl"), default="csv")
    download.add_argument("-o", "--output", required=True)
    board = sub.add_parser("board", help="a pack's board")
    board.add_argument("pack")
    board.add_argument("--json", action="store_true")
    endpoint_parser(sub)
    prompter_parser(sub)
    return p


COMMANDS = {
    "login": cmd_login,
    "submit": cmd_submit,
    "status": cmd_status,
    "download": cmd_download,
    "board": cmd_board,
    "endpoint": cmd_endpoint,
    "prompter": cmd_prompter,
}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)  # usage errors exit 2
    try:
        status = COMMANDS[args.command](args)
        sys.stdout.flush()  # here, not at the interpreter's exit: a reader that left is found inside this try
        return status
    except BrokenPipeError:  # the reader left (`atelier board sample | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the interpreter's last flush must not fail too
        return EXIT_PIPE
    except (ApiError, config.NotLoggedIn, OSError) as exc:
        print(f"atelier: error: {exc}", file=sys.stderr)
        for line in getattr(exc, "body", {}).get("errors", []):
            print(f"  {line}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
