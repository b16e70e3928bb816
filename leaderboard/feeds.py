"""The Atom feed of a board: its newly published entries, newest first (Django's syndication framework).

/board.atom?board=<pack id>:<revision>[&judge=<judge key>], the names the board page and board.zip use; without a
judge every published entry of the board, with one only the entries that judge scored. A study's pooled human rows
are not entries and never appear. Unknown board or judge: 404.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.syndication.views import Feed
from django.db.models import F, QuerySet
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed

from evaluation.judges import JudgeKey, pick_judge
from evaluation.models import Origin, Submission
from evaluator.metrics.scopes import Scope

from . import selectors

FEED_ENTRIES = 50


class BoardFeed(Feed):
    feed_type = Atom1Feed

    def get_object(self, request: HttpRequest) -> tuple[selectors.Board, JudgeKey | None]:
        board = next((b for b in selectors.leaderboard_boards() if b.key == request.GET.get("board")), None)
        if board is None:
            raise Http404("No such board: name one with ?board=<pack id>:<revision> as the board page links it")
        if not (asked := request.GET.get("judge")):
            return board, None
        judge = pick_judge(selectors.board_judges(board), asked)
        if judge is None or judge.key != asked:
            raise Http404("No such judge on this board")
        return board, judge

    def title(self, obj) -> str:
        board, judge = obj
        return f"AtelierEval leaderboard: {board}" + (f", scored by {judge}" if judge else "")

    def subtitle(self, obj) -> str:
        return "Entries as they are published on this board, newest first."

    def link(self, obj) -> str:
        return reverse("leaderboard") + _query(obj)

    def feed_url(self, obj) -> str:
        """rel="self": this feed's own address with its query (Django's default, the path alone, names no board: a 404)."""
        return reverse("board-feed") + _query(obj)

    def items(self, obj) -> QuerySet[Submission]:
        board, judge = obj
        entries = selectors.board_submissions(board).exclude(origin=Origin.HUMAN)
        if judge is not None:
            entries = entries.filter(
                figures__scope=Scope.OVERALL, figures__judge_id=judge.judge_id, figures__judge_version=judge.version
            ).distinct()
        newest = Coalesce("published_at", "finished", "created")  # published_at is empty only on rows from before it
        return entries.annotate(when=newest).order_by(F("when").desc(), "-pk")[:FEED_ENTRIES]

    def item_title(self, item: Submission) -> str:
        return f"{item.prompter} ({item.team.name}) on {item.pack}"

    def item_description(self, item: Submission) -> str:
        condition = f", condition {item.condition}" if item.condition else ""
        return f"Entry #{item.pk} by team {item.team.name}: {item.get_origin_display()}{condition}."

    def item_link(self, item: Submission) -> str:
        return reverse("submission", args=[item.pk])

    def item_pubdate(self, item: Submission):
        return item.when

    def item_updateddate(self, item: Submission):
        return item.when

    def item_author_name(self, item: Submission) -> str:
        return item.team.name


def _query(obj: tuple[selectors.Board, JudgeKey | None]) -> str:
    """'?board=…[&judge=…]': the board (and judge) the feed is of, as the page and the feed take them."""
    board, judge = obj
    return "?" + urlencode({"board": board.key, **({"judge": judge.key} if judge else {})})
