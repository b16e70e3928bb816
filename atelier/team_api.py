"""API routes that join two apps (so they live above them, by the layering rules): a team's breakdown download with
its bearer token, and a board's ranked rows as JSON, for the command-line client (client/) and other programs."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.middleware.gzip import re_accepts_gzip
from django.shortcuts import get_object_or_404
from django.utils.cache import patch_cache_control, patch_vary_headers
from django.utils.text import compress_string
from django.views.decorators.http import condition, require_safe
from pydantic import Field, ValidationError

from evaluation.boards import boards_version
from evaluation.judges import pick_judge
from evaluation.models import Origin, Submission
from evaluator.metrics.coverage import FULL, PARTIAL, WITHHELD
from leaderboard import selectors
from leaderboard.downloads import breakdown_response
from leaderboard.filters import BoardFilter, FilterQuery
from submissions.api import token_required
from teams.schemas import NO_NUL, Answer, Real, Whole, choice, refusal

BOARD_ROWS_MAX = 500  # rows a page: the most, and the default


@require_safe
@token_required
def breakdown(request: HttpRequest, submission_id: int, fmt: str) -> StreamingHttpResponse:
    """The breakdown download of /submissions/<id>/breakdown.<fmt>, for the token's team (any status, published or not)."""
    submission = get_object_or_404(Submission.objects.select_related("team", "pack"), pk=submission_id, team=request.team)
    return breakdown_response(request, submission, fmt)


# --- the board's answer, declared once (teams/schemas.py's Answer: built through these, printed by the document) ---


class BoardCell(Answer):
    """A figure as a board cell shows it."""

    value: Real | None
    scale: str
    ci_low: Real | None = Field(description="the 95 % interval's lower end, on the cell's scale")
    ci_high: Real | None = Field(description="the 95 % interval's upper end, on the cell's scale")
    standing: choice(FULL, PARTIAL, WITHHELD)


class BoardRow(Answer):
    """One entry of the board."""

    rank: int | None = Field(
        description="the best place the board's head-to-head decisions allow (1 + the entries decided ahead); null: unranked"
    )
    rank_high: int | None = Field(
        description="the worst place they allow (the ranked entries less those it is decided ahead of); equal to rank when decided"
    )
    win_rate: Real | None = Field(description="the share of common tasks won against the other ranked entries, ties half (0-1)")
    win_low: Real | None = Field(description="the win rate's 95 % interval, lower end (0-1)")
    win_high: Real | None = Field(description="the win rate's 95 % interval, upper end (0-1)")
    submission: int
    prompter: str
    team: str
    condition: str
    overall: BoardCell | None
    categories: dict[str, BoardCell | None]
    tasks_covered: int
    origin: choice(*Origin.values)
    card: dict[str, Any] | None = Field(
        description="the entry's prompter card as it was when the entry was published (the contact left out)"
    )


class Board(Answer):
    """A page of a pack's board."""

    board: str
    pack: str
    judge: str
    rows: list[BoardRow]
    filters: dict[str, str] = Field(description="the filters applied")
    page: int
    per_page: int
    pages: int = Field(description="pages of per_page rows")
    count: int = Field(description="rows on every page together")
    next: str | None = Field(description="the next page's URL (also in the Link header); null on the last")


def _cell(cell: selectors.Cell | None) -> BoardCell | None:
    if cell is None:
        return None
    return BoardCell(value=cell.value, scale=cell.scale, ci_low=cell.ci_low, ci_high=cell.ci_high, standing=cell.standing)


def _row(row: selectors.Row) -> BoardRow:
    s = row.submission
    return BoardRow(
        rank=row.stats.get("rank"),
        **{k: row.stats.get(k) for k in ("rank_high", "win_rate", "win_low", "win_high")},
        submission=s.pk,
        prompter=s.prompter,
        team=s.team.name,
        condition=row.condition,
        overall=_cell(row.overall),
        categories={k: _cell(c) for k, c in row.categories.items()},
        tasks_covered=row.tasks_covered,
        origin=s.origin,
        card=asdict(row.card) if row.card else None,
    )


PAGE_MAX = 999_999_999


class BoardsQuery(FilterQuery):
    """/api/v1/boards's query parameters, declared once: the view validates with this and the OpenAPI document prints
    it (atelier/openapi.py). Unknown parameters are refused (400), so a mistyped filter is never silently ignored."""

    pack: str = Field(pattern=NO_NUL, description="the pack's name")
    judge: str = Field("", pattern=NO_NUL, description="the judge's key; default: the board's judge")
    page: Whole = Field(1, ge=1, le=PAGE_MAX)
    per_page: Whole = Field(BOARD_ROWS_MAX, ge=1, le=BOARD_ROWS_MAX, description=f"rows a page (default {BOARD_ROWS_MAX})")


def _version(request: HttpRequest):
    """The boards' version, read once per request (the ETag, Last-Modified and cache key all name it)."""
    if not hasattr(request, "_boards_version"):
        request._boards_version = boards_version()
    return request._boards_version


def _boards_etag(request: HttpRequest) -> str:
    # the site's address too: the answer's `next` link names it
    named = f"{settings.ATELIER_CODE_VERSION}|{_version(request).key}|{request.build_absolute_uri('/')}|{request.GET.urlencode()}"
    return hashlib.sha256(named.encode()).hexdigest()[:32]


def _public(view):
    """Cache-Control: public on every answer, the 304s included (condition() answers those before the view runs)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        patch_cache_control(response, public=True, max_age=settings.ATELIER_BOARD_MAX_AGE)
        return response

    return wrapper


@require_safe
@_public
@condition(etag_func=_boards_etag, last_modified_func=lambda request: _version(request).at)
def boards(request: HttpRequest) -> HttpResponse:
    """GET ?pack=NAME[&judge=KEY][&page=N&per_page=M]: a page of the pack's board (the one with most entries) in the
    page's default order, with `next` (and a Link header) naming the following page. Public, validated like the board
    page (ETag and Last-Modified from the boards' version: 304 when unchanged) and kept in the cache, encoded, under
    that version for ATELIER_BOARD_CACHE_SECONDS (0: no cache, read or written), gzipped too."""
    seconds = settings.ATELIER_BOARD_CACHE_SECONDS
    key = "api-boards-v2:" + _boards_etag(request)  # v2: with the gzipped bytes
    cached = cache.get(key) if seconds else None
    status, content, packed, following = cached or _boards_answer(request)
    if cached is None and status == 200 and seconds:
        cache.set(key, (status, content, packed, following), seconds)
    response = HttpResponse(content, status=status, content_type="application/json")
    if packed and re_accepts_gzip.search(request.headers.get("Accept-Encoding", "")):
        # gzipped once per cached answer, not per request (atelier/api_errors.py would, at ~5 ms for 500 rows); a
        # public board holds no secret, so the same bytes for everyone are safe. Weak ETag: as GZipMiddleware's.
        response.content = packed
        response["Content-Encoding"], response["ETag"] = "gzip", f'W/"{_boards_etag(request)}"'
    patch_vary_headers(response, ("Accept-Encoding",))
    if following:
        response["Link"] = f'<{following}>; rel="next"'
    return response


def _boards_answer(request: HttpRequest) -> tuple[int, bytes, bytes | None, str | None]:
    """(status, the JSON body, it gzipped (a board's answer only), the next page's URL or None)."""
    status, body = _boards_body(request)
    content = json.dumps(body, cls=DjangoJSONEncoder).encode()
    return status, content, compress_string(content) if status == 200 else None, body.get("next")


def _next_url(request: HttpRequest, page) -> str | None:
    if not page.has_next():
        return None
    query = request.GET.copy()
    query["page"] = str(page.next_page_number())
    return request.build_absolute_uri(f"{request.path}?{query.urlencode()}")


def _boards_body(request: HttpRequest) -> tuple[int, dict]:
    try:
        query = BoardsQuery.model_validate(request.GET.dict())
    except ValidationError as exc:
        error, field = refusal(exc, "query parameter", BoardsQuery)
        return 400, {"error": error, "field": field}
    filters, refused = BoardFilter.parse(request.GET)  # the names just validated, read into the filter (a guard: it takes what they take)
    if refused:
        return 400, {"error": "; ".join(refused)}
    name, number, per_page = query.pack, query.page, query.per_page
    board = next((b for b in selectors.leaderboard_boards() if b.pack.name == name), None)
    judge = pick_judge(selectors.board_judges(board, humans=False), query.judge or None) if board else None
    if board is None or judge is None:
        return 404, {"error": f"no board for pack {name!r} (a board appears once an entry is published)"}
    stats = selectors.board_stats(board, judge)
    page, _ = selectors.leaderboard_page(
        board, judge, stats, selectors.default_sort(stats), number=number, per_page=per_page, filters=filters
    )
    if page.number != number:  # the paginator gives the last page for one past it: the API says there is none
        return 404, {"error": f"no page {number}: the board has {page.paginator.num_pages} page(s) of {per_page} rows"}
    rows = [_row(r) for r in page.object_list]
    return 200, Board(
        **{"board": board.key, "pack": str(board), "judge": judge.key, "rows": rows, "filters": filters.answered()},
        **{"page": number, "per_page": per_page, "pages": page.paginator.num_pages, "count": page.paginator.count},
        next=_next_url(request, page),
    ).answer()
