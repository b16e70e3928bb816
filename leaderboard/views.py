from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET

from evaluation import selectors as units
from evaluation.exports import zip_stream
from evaluation.judges import judges_of, pick_judge, submission_judge
from evaluation.models import ACTIVE, Origin, Submission
from evaluator.categories import CATEGORIES
from tasks import difficulty

from . import selectors
from .board_download import board_files
from .cache import board_page_cache
from .downloads import breakdown_rows, csv_lines, jsonl_lines
from .team_rows import team_rows

BOARD_PARAMS = ("board", "judge", "condition", "sort", "dir", "page")  # every query parameter the board page reads


def board_answered(context: dict) -> dict[str, str]:
    """The board page's BOARD_PARAMS as it answered them (what its own links say): a request that asked anything else
    is served, but its page is not kept in the cache (leaderboard/cache.py)."""
    board, judge, page, sort = context["board"], context["judge"], context["page"], context["sort"]
    sorts = {"rank", "overall", *CATEGORIES, *selectors.ROW_SORTS, *(f"backend:{b}" for b, _ in context["backends"])}
    return {
        "board": board.key if board else "",
        "judge": judge.key if judge else "",
        "condition": context["condition"],
        "sort": sort if sort in sorts else "",
        "dir": "desc" if context["descending"] else "asc",
        "page": str(page.number) if page else "",
    }


@require_GET
@board_page_cache(BOARD_PARAMS, board_answered)
def leaderboard(request: HttpRequest) -> HttpResponse:
    boards = selectors.leaderboard_boards()
    board = next((b for b in boards if b.key == request.GET.get("board")), boards[0] if boards else None)
    judges = selectors.board_judges(board) if board else []
    judge = pick_judge(judges, request.GET.get("judge"))
    stats = selectors.board_stats(board, judge) if judge else None
    conditions = stats.conditions if stats else []
    condition = request.GET.get("condition", "") if request.GET.get("condition") in (*conditions, *selectors.TURNS) else ""
    sort, descending = request.GET.get("sort") or selectors.default_sort(stats), request.GET.get("dir", "desc") != "asc"
    page, backends = (
        selectors.leaderboard_page(board, judge, stats, sort, descending, condition, request.GET.get("page")) if judge else (None, [])
    )
    rows = page.object_list if page else []
    context = {
        "boards": boards,
        "board": board,
        "judges": judges,
        "judge": judge,
        "rows": rows,
        "page": page,
        "backends": backends,
        "categories": CATEGORIES,
        "sort": sort,
        "descending": descending,
        "conditions": conditions,
        "condition": condition,
        "turns": selectors.TURNS,
        "team_rows": team_rows(request.user, board, judge) if judge else [],
        **(selectors.human_section(board, judge, rows) if judge else {}),
        **(selectors.stats_section(board, judge, stats, condition) if judge else {}),
    }
    return TemplateResponse(request, "leaderboard/index.html", context)


@require_GET
def about_smoke(request: HttpRequest) -> HttpResponse:
    """What a "smoke (random weights)" badge means and what a deployer changes to get real scores."""
    return render(request, "leaderboard/about_smoke.html")


def _visible_submission(request: HttpRequest, submission_id: int) -> Submission:
    submission = get_object_or_404(Submission.objects.select_related("team", "pack"), pk=submission_id)
    if not selectors.visible_to(request.user, submission):
        raise Http404("No such submission")
    return submission


@require_GET
def submission_detail(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = _visible_submission(request, submission_id)
    entries = submission.entries.select_related("task").order_by("task__category", "task__task_id", "sample_index")
    page = Paginator(entries, 25).get_page(request.GET.get("page"))
    judges = judges_of([submission.pk])
    judge = pick_judge(judges, request.GET.get("judge"), submission_judge(submission)) or submission_judge(submission)
    context = {
        "submission": submission,
        "page": page,
        "judges": judges,
        "judge": judge,
        "figures": (figures := units.submission_figures(submission, judge, every=True)),
        "views": selectors.entry_views(submission, judge, figures),
        "progress": (progress := units.submission_progress(submission)),
        "eta": units.submission_eta(submission, progress),
        "rows": selectors.entry_rows(list(page), judge),
        "predictor": difficulty.installed(),
        "cost": units.submission_cost(submission),
        "missing": units.skill_missing(submission, judge),
        "running": submission.status in ACTIVE,
        "queues": units.queues_waiting(submission) if submission.status in ACTIVE else [],
        "reconcile_interval": settings.ATELIER_RECONCILE_INTERVAL,
        "on_team": selectors.on_team(request.user, submission),
        "selection_limit": settings.ATELIER_BOARD_SELECTION,
        "max_missing": 100 * settings.ATELIER_MAX_MISSING_RATE,
        "prompting": selectors.prompting_section(submission) if submission.origin == Origin.ENDPOINT else None,
        "pack_coverage": units.pack_coverage(submission),
    }
    return render(request, "leaderboard/submission.html", context)


@require_GET
def breakdown_download(request: HttpRequest, submission_id: int, fmt: str) -> StreamingHttpResponse:
    if fmt not in ("csv", "jsonl"):
        raise Http404("Breakdowns come as .csv or .jsonl")
    submission = _visible_submission(request, submission_id)
    judge = pick_judge(judges_of([submission.pk]), request.GET.get("judge"), submission_judge(submission)) or submission_judge(submission)
    rows = breakdown_rows(submission, judge, request.build_absolute_uri)
    lines, content_type = (csv_lines(rows), "text/csv") if fmt == "csv" else (jsonl_lines(rows), "application/x-ndjson")
    response = StreamingHttpResponse(lines, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="submission-{submission.pk}-breakdown.{fmt}"'
    return response


@require_GET
def board_download(request: HttpRequest) -> StreamingHttpResponse:
    """The whole board (one pack revision, one judge) as a zip of CSV and JSON Lines, streamed."""
    boards = selectors.leaderboard_boards()
    board = next((b for b in boards if b.key == request.GET.get("board")), None)
    judge = pick_judge(selectors.board_judges(board, humans=False), request.GET.get("judge")) if board else None
    if board is None or judge is None:
        raise Http404("No such board: name one with ?board=<pack id>:<revision>&judge=<judge key> as the board page links it")
    response = StreamingHttpResponse(zip_stream(board_files(board, judge, request.build_absolute_uri)), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="board-{board.pack.name}-v{board.pack.version}-rev{board.revision}.zip"'
    return response
