from __future__ import annotations

from urllib.parse import quote, urlencode

from django.conf import settings
from django.core.files.storage import default_storage
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from evaluation import selectors as units
from evaluation.exports import zip_stream
from evaluation.judges import judges_of, pick_judge, submission_judge
from evaluation.models import ACTIVE, Origin, Submission
from evaluator.categories import CATEGORIES
from tasks import difficulty
from teams.models import Prompter, PrompterKind, Weights

from . import comparisons, selectors
from .board_download import board_files
from .cache import board_page_cache
from .cite import absolute, board_cite, entry_cite
from .downloads import breakdown_response
from .filters import FILTER_PARAMS, BoardFilter
from .models import Release, SigningKey
from .releases import NoReleaseKey, board_releases, current_key, latest_of, release_current, released_board, released_boards
from .sota import board_sota
from .team_rows import team_rows

BOARD_PARAMS = ("board", "judge", "condition", "sort", "dir", "page", *FILTER_PARAMS)  # every query parameter the board page reads


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
        **{name: context["filters"].answered().get(name, "") for name in FILTER_PARAMS},
    }


@require_safe
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
    filters, refused = BoardFilter.parse(request.GET)
    page, backends = (
        selectors.leaderboard_page(board, judge, stats, sort, descending, condition, request.GET.get("page"), filters=filters)
        if judge
        else (None, [])
    )
    rows = page.object_list if page else []
    if rows and stats and (condition or filters.active):  # rows are hidden: "next" hints name rows still shown
        selectors.gaps_among_shown(rows, selectors.board_rows(board, judge, condition, filters), stats.decisions)
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
        "filters": filters,
        "filter_problems": refused,
        # URL-encoded parts only (no quote or angle bracket can survive quote() and urlencode()): safe in an attribute
        "keep": mark_safe((f"&condition={quote(condition, safe='')}" if condition else "") + filters.query()),  # noqa: S308
        "kinds": PrompterKind.choices,
        "weights": Weights.choices,
        "origins": Origin.choices,
        "team_rows": team_rows(request.user, board, judge) if judge else [],
        "release_key": current_key(),
        "cite": board_cite(board, judge, request, stats) if judge else None,
        **(selectors.human_section(board, judge, rows) if judge else {}),
        **(selectors.stats_section(board, judge, stats, condition) if judge else {}),
    }
    return TemplateResponse(request, "leaderboard/index.html", context)


@require_safe
def prompter(request: HttpRequest, prompter_id: int) -> HttpResponse:
    """A prompter's card and every published entry it has, across packs and revisions, with a chart of its scores.
    A card none of whose entries is published is its team's business (staff and members see it)."""
    card = get_object_or_404(Prompter.objects.select_related("team"), pk=prompter_id)
    entries = selectors.prompter_entries(card.pk)
    insider = request.user.is_staff or (request.user.is_authenticated and card.team.members.filter(pk=request.user.pk).exists())
    if not entries and not insider:
        raise Http404("No such prompter")
    context = {
        "card": card,
        "shown": selectors.card_view(card.values()),
        "entries": entries,
        "chart": selectors.prompter_chart(entries),
        "categories": CATEGORIES,
        "versions": card.versions.select_related("user").order_by("-number"),
        "insider": insider,
    }
    return render(request, "leaderboard/prompter.html", context)


@require_safe
def about_smoke(request: HttpRequest) -> HttpResponse:
    """What a "smoke (random weights)" badge means and what a deployer changes to get real scores."""
    return render(request, "leaderboard/about_smoke.html")


def _visible_submission(request: HttpRequest, submission_id: int) -> Submission:
    submission = get_object_or_404(Submission.objects.select_related("team", "pack"), pk=submission_id)
    if not selectors.visible_to(request.user, submission):
        raise Http404("No such submission")
    return submission


@require_safe
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
        "judge_batch": units.batch_progress(submission.pk),
        "rows": selectors.entry_rows(list(page), judge),
        "predictor": difficulty.installed(),
        "cost": units.submission_cost(submission),
        "missing": units.skill_missing(submission, judge),
        "running": submission.status in ACTIVE,
        "queues": units.queues_waiting(submission) if submission.status in ACTIVE else [],
        "in_process": not settings.REDIS_URL,  # the embedded runner: no queue or worker to count (evaluation/workqueue.py)
        "reconcile_interval": settings.ATELIER_RECONCILE_INTERVAL,
        "on_team": selectors.on_team(request.user, submission),
        "selection_limit": settings.ATELIER_BOARD_SELECTION,
        "max_missing": 100 * settings.ATELIER_MAX_MISSING_RATE,
        "prompting": selectors.prompting_section(submission) if submission.origin == Origin.ENDPOINT else None,
        "pack_coverage": units.pack_coverage(submission),
        "compare_with": comparisons.partners(request.user, submission, judge),
        "cite": entry_cite(submission, judge, request) if submission.published and judge.judge_id else None,
    }
    return render(request, "leaderboard/submission.html", context)


@require_safe
def compare(request: HttpRequest) -> HttpResponse:
    """Two entries of one board side by side: /compare/?a=<id>&b=<id>[&judge=…&category=…&tag=…&split=…&sort=difference];
    the board's form (?pick=&pick=) is sent on to that address."""
    try:
        ids, filters = comparisons.entry_ids(request.GET), comparisons.filters_from(request.GET)
        if "pick" in request.GET:
            judge_key = {"judge": request.GET["judge"]} if request.GET.get("judge") else {}
            return redirect(f"{reverse('compare')}?{urlencode({'a': ids[0], 'b': ids[1], **judge_key})}")
        a, b = (_visible_submission(request, pk) for pk in ids)
        judges = comparisons.common_judges(a, b)
    except comparisons.BadQuery as problem:
        return render(request, "leaderboard/compare.html", {"problem": problem}, status=400)
    judge = pick_judge(judges, request.GET.get("judge"), submission_judge(a))
    rows, differences = comparisons.comparison(a, b, judge, filters)
    page = comparisons.paged(rows, request.GET.get("page"))
    comparisons.page_details(page, a, b, judge)
    query = {"a": a.pk, "b": b.pk, **({"judge": judge.key} if judge else {}), **{k: v for k, v in filters.items() if v}}
    context = {"a": a, "b": b, "judge": judge, "judges": judges, "filters": filters, "differences": differences, "page": page}
    context["duels"] = comparisons.duels(a, b, judge, differences, filters)
    context |= {"query": urlencode(query), "swapped": urlencode(query | {"a": b.pk, "b": a.pk}), **comparisons.CHOICES}
    return render(request, "leaderboard/compare.html", context)


@require_safe
def breakdown_download(request: HttpRequest, submission_id: int, fmt: str) -> StreamingHttpResponse:
    return breakdown_response(request, _visible_submission(request, submission_id), fmt)


def _board_and_judge(request: HttpRequest):
    boards = selectors.leaderboard_boards()
    board = next((b for b in boards if b.key == request.GET.get("board")), None)
    judge = pick_judge(selectors.board_judges(board, humans=False), request.GET.get("judge")) if board else None
    if board is None or judge is None:  # a board whose last entry was withdrawn: its releases still answer
        board, judge = released_board(request.GET.get("board") or "", request.GET.get("judge")) or (None, None)
    if board is None or judge is None:
        raise Http404("No such board: name one with ?board=<pack id>:<revision>&judge=<judge key> as the board page links it")
    return board, judge


@require_safe
def board_download(request: HttpRequest) -> HttpResponse:
    """The board's current signed release (made first if the board changed since), by its stable URL; a site without a
    release key streams the same files unsigned."""
    board, judge = _board_and_judge(request)
    try:
        return HttpResponseRedirect(reverse("release", args=[release_current(board, judge).digest]))
    except NoReleaseKey:
        pass
    response = StreamingHttpResponse(zip_stream(board_files(board, judge, request.build_absolute_uri)), content_type="application/zip")
    response["Content-Disposition"] = (
        f'attachment; filename="board-{board.pack.name}-v{board.pack.version}-rev{board.revision}-unsigned.zip"'
    )
    return response


RELEASE_MAX_AGE = 3600  # seconds a cache may serve a release's zip: how long a redaction may take to reach every reader


@require_safe
def release_file(request: HttpRequest, digest: str) -> FileResponse:
    """A signed release by its digest. Its digest and numbers never change, but a withdrawal re-issues it without the
    entry's prompts and image links (leaderboard/redaction.py): caches keep it an hour, not forever."""
    release = get_object_or_404(Release.objects.select_related("pack"), digest=digest)
    name = f"board-{release.pack.name}-v{release.pack.version}-rev{release.revision}-release{release.number}.zip"
    response = FileResponse(default_storage.open(release.file, "rb"), as_attachment=True, filename=name, content_type="application/zip")
    response["Cache-Control"] = f"public, max-age={RELEASE_MAX_AGE}"
    return response


@require_safe
def release_list(request: HttpRequest) -> HttpResponse:
    """Every release of a board, newest first, with its digest, the digest it follows and the key that signed it;
    without ?board= every board and its latest release, and for a board that has none the same list with why."""
    if not request.GET.get("board"):
        return _release_index(request)
    try:
        board, judge = _board_and_judge(request)
    except Http404 as missing:
        return _release_index(request, problem=str(missing), status=404)
    releases = board_releases(board, judge).select_related("key").prefetch_related("redactions").order_by("-number")
    return render(
        request, "leaderboard/releases.html", {"board": board, "judge": judge, "releases": releases, "keys": SigningKey.objects.all()}
    )


def _release_index(request: HttpRequest, problem: str = "", status: int = 200) -> HttpResponse:
    """Each board and judge (shown now, or released before), its number of releases and its latest one."""
    boards = []
    for board, judge in released_boards():
        found = board_releases(board, judge).select_related("key").order_by("-number")
        boards.append({"board": board, "judge": judge, "count": found.count(), "latest": found.first()})
    context = {"index": boards, "problem": problem, "release_key": current_key(), "keys": SigningKey.objects.all()}
    return render(request, "leaderboard/releases.html", context, status=status)


def release_record(request: HttpRequest, release: Release | None) -> dict | None:
    """A release as the site's JSON gives it: number, digest, the digest it follows, when, the key and its file's URL."""
    if release is None:
        return None
    return {
        "number": release.number,
        "digest": release.digest,
        "previous": release.previous or None,
        "created": release.created.isoformat(),
        "key": release.key.fingerprint,
        "url": absolute(request, reverse("release", args=[release.digest])),
    }


def _fresh(data: dict) -> JsonResponse:
    response = JsonResponse(data)
    response["Cache-Control"] = "no-cache"  # the board's latest release moves: a cache asks again every time
    return response


@require_safe
def release_json(request: HttpRequest, digest: str) -> JsonResponse:
    """The site's record of a release, with its board and judge and the board's latest release (`recompute --check
    --key URL` asks it whether the release it checks was superseded)."""
    release = get_object_or_404(Release.objects.select_related("pack", "key"), digest=digest)
    board = {"pack": release.pack.name, "pack_version": release.pack.version, "revision": release.revision}
    judge = {"id": release.judge_id, "version": release.judge_version}
    redactions = [
        {"number": r.number, "entries": r.entries, "created": r.created.isoformat(), "key": r.key.fingerprint, "digest": r.digest}
        for r in release.redactions.select_related("key").order_by("number")
    ]
    record = {**release_record(request, release), "board": board, "judge": judge, "redactions": redactions}
    return _fresh({**record, "latest": release_record(request, latest_of(release))})


@require_safe
def release_latest(request: HttpRequest) -> JsonResponse:
    """The board's latest release (null before its first): /releases/latest.json?board=…&judge=…, as the release list."""
    board, judge = _board_and_judge(request)
    latest = board_releases(board, judge).select_related("key").order_by("-number").first()
    return _fresh({"board": board.key, "judge": judge.key, "latest": release_record(request, latest)})


@require_safe
def release_keys(request: HttpRequest) -> JsonResponse:
    """Every public key the site has signed releases with, and when it was in use (`recompute --key URL` reads it)."""
    keys = [
        {
            "algorithm": "ed25519",
            "fingerprint": k.fingerprint,
            "public_key": k.public_key,
            "created": k.created.isoformat(),
            "retired": k.retired.isoformat() if k.retired else None,
        }
        for k in SigningKey.objects.order_by("created")
    ]
    return JsonResponse({"keys": keys})


@require_safe
def release_key_pem(request: HttpRequest, fingerprint: str) -> HttpResponse:
    key = get_object_or_404(SigningKey, fingerprint=fingerprint)
    return HttpResponse(key.public_key, content_type="application/x-pem-file")


SOTA_PARAMS = ("board", "judge")


def sota_answered(context: dict) -> dict[str, str]:
    return {"board": context["board"].key, "judge": context["judge"].key} if context.get("sota") else {}


@require_safe
@board_page_cache(SOTA_PARAMS, sota_answered)
def sota(request: HttpRequest) -> HttpResponse:
    """State of the art over time on one board and judge: /sota/?board=<pack id>:<revision>&judge=<judge key>, a chart and a
    table of the best overall and per-category score by date (the release's sota.json holds the same data)."""
    try:
        board, judge = _board_and_judge(request)
    except Http404 as missing:
        context = {"problem": str(missing), "boards": selectors.leaderboard_boards()}
        return TemplateResponse(request, "leaderboard/sota.html", context, status=404)
    return TemplateResponse(request, "leaderboard/sota.html", {"board": board, "judge": judge, "sota": board_sota(board, judge)})
