"""What a signed-in member sees on a board beside its public rows: their teams' finished entries on this board that are
not published (so on no public page), with this judge's figures, unranked. Pages that show them are never shared
(leaderboard/cache.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from evaluation.judges import JudgeKey
from evaluation.models import Figure, Status, Submission
from evaluator.metrics.scopes import Scope

from .selectors import Board

TEAM_ROWS_SHOWN = 20


@dataclass
class TeamRow:
    submission: Submission
    overall: Figure | None = None
    categories: dict[str, Figure] = field(default_factory=dict)
    backends: dict[str, Figure] = field(default_factory=dict)


def team_rows(user, board: Board, judge: JudgeKey) -> list[TeamRow]:
    """The user's teams' latest unpublished done entries on the board, scored by this judge (none for a visitor)."""
    if not user.is_authenticated:
        return []
    own = Submission.objects.filter(
        pack=board.pack, pack_revision=board.revision, team__members=user, published=False, status=Status.DONE
    ).select_related("team")
    rows = {s.pk: TeamRow(s) for s in own.order_by("-created")[:TEAM_ROWS_SHOWN]}
    figures = Figure.objects.filter(
        submission__in=list(rows),
        judge_id=judge.judge_id,
        judge_version=judge.version,
        scope__in=(Scope.OVERALL, Scope.CATEGORY, Scope.BACKEND),
    )
    for f in figures:
        row = rows[f.submission_id]
        if f.scope == Scope.OVERALL:
            row.overall = f
        else:
            (row.categories if f.scope == Scope.CATEGORY else row.backends)[f.key] = f
    return [r for r in rows.values() if r.overall is not None]
