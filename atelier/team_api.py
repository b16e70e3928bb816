"""API routes that join two apps (so they live above them, by the layering rules): a team's breakdown download with
its bearer token, and a board's ranked rows as JSON, for the command-line client (client/) and other programs."""

from __future__ import annotations

import hashlib
from dataclasses import asdict

from django.conf import settings
from django.core.cache import cache
from django.http import Http404, HttpRequest, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils.cache import patch_cache_control
from django.views.decorators.http import condition, require_safe

from evaluation.boards import boards_version
from evaluation.judges import judges_of, pick_judge, submission_judge
from evaluation.models import Submission
from leaderboard import selectors
from leaderboard.downloads import breakdown_rows, csv_lines, jsonl_lines
from leaderboard.filters import FILTER_PARAMS, BoardFilter
from submissions.api import token_required

BOARD_ROWS_MAX = 500


@require_safe
@token_required
def breakdown(request: HttpRequest, submission_id: int, fmt: str) -> StreamingHttpResponse:
    """The breakdown download of /submissions/<id>/breakdown.<fmt>, for the token's team (any status, published or not)."""
    if fmt not in ("csv", "jsonl"):
        raise Http404("Breakdowns come as .csv or .jsonl")
    submission = get_object_or_404(Submission.objects.select_related("team", "pack"), pk=submission_id, team=request.team)
    judge = pick_judge(judges_of([submission.pk]), request.GET.get("judge"), submission_judge(submission)) or submission_judge(submission)
    rows = breakdown_rows(submission, judge, request.build_absolute_uri)
    lines, content_type = (csv_lines(rows), "text/csv") if fmt == "csv" else (jsonl_lines(rows), "application/x-ndjson")
    response = StreamingHttpResponse(lines, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="submission-{submission.pk}-breakdown.{fmt}"'
    return response


def _cell(cell: selectors.Cell | None) -> dict | None:
    if cell is None:
        return None
    return {"value": cell.value, "scale": cell.scale, "ci_low": cell.ci_low, "ci_high": cell.ci_high, "standing": cell.standing}


def _row(row: selectors.Row) -> dict:
    s = row.submission
    return {
        "rank": row.stats.get("rank"),
        **{k: row.stats.get(k) for k in ("rank_high", "win_rate", "win_low", "win_high")},
        "submission": s.pk,
        "prompter": s.prompter,
        "team": s.team.name,
        "condition": row.condition,
        "overall": _cell(row.overall),
        "categories": {k: _cell(c) for k, c in row.categories.items()},
        "tasks_covered": row.tasks_covered,
        "origin": s.origin,
        "card": asdict(row.card) if row.card else None,
    }


BOARDS_PARAMS = {"pack", "judge", *FILTER_PARAMS}


def _version(request: HttpRequest):
    """The boards' version, read once per request (the ETag, Last-Modified and cache key all name it)."""
    if not hasattr(request, "_boards_version"):
        request._boards_version = boards_version()
    return request._boards_version


def _boards_etag(request: HttpRequest) -> str:
    named = f"{settings.ATELIER_CODE_VERSION}|{_version(request).key}|{request.GET.urlencode()}"
    return hashlib.sha256(named.encode()).hexdigest()[:32]


@require_safe
@condition(etag_func=_boards_etag, last_modified_func=lambda request: _version(request).at)
def boards(request: HttpRequest) -> JsonResponse:
    """GET ?pack=NAME[&judge=KEY]: the pack's board (the one with most entries) in the page's default order. Public,
    validated like the board page (ETag and Last-Modified from the boards' version: 304 when unchanged) and kept in the
    cache under that version for ATELIER_BOARD_CACHE_SECONDS."""
    key = "api-boards:" + _boards_etag(request)
    status, body = cache.get(key) or _boards_body(request)
    if status == 200 and settings.ATELIER_BOARD_CACHE_SECONDS:
        cache.set(key, (status, body), settings.ATELIER_BOARD_CACHE_SECONDS)
    response = JsonResponse(body, status=status)
    patch_cache_control(response, public=True, max_age=settings.ATELIER_BOARD_MAX_AGE)
    return response


def _boards_body(request: HttpRequest) -> tuple[int, dict]:
    unknown = sorted(set(request.GET) - BOARDS_PARAMS)
    if unknown:
        return 400, {"error": f"unknown query parameter(s) {', '.join(unknown)}: this route takes {', '.join(sorted(BOARDS_PARAMS))}"}
    filters, refused = BoardFilter.parse(request.GET)
    if refused:
        return 400, {"error": "; ".join(refused)}
    name = request.GET.get("pack", "")
    board = next((b for b in selectors.leaderboard_boards() if b.pack.name == name), None)
    judge = pick_judge(selectors.board_judges(board, humans=False), request.GET.get("judge")) if board else None
    if board is None or judge is None:
        return 404, {"error": f"no board for pack {name!r} (a board appears once an entry is published)"}
    stats = selectors.board_stats(board, judge)
    page, _ = selectors.leaderboard_page(board, judge, stats, selectors.default_sort(stats), per_page=BOARD_ROWS_MAX, filters=filters)
    rows = [_row(r) for r in page.object_list]
    return 200, {"board": board.key, "pack": str(board), "judge": judge.key, "rows": rows, "filters": filters.answered()}
