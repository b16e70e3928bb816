"""Human baseline rows: the finished submissions of a board's study participants, pooled per tier.

Each participant is one sample of the pooled units, so evaluator.metrics.aggregate's task score
(mean over samples) is the mean over the participants who did the task, and every figure and
interval is computed exactly as for a prompter. Scripted demo participants (rules, not people:
Participant.scripted) are pooled only with each other, in rows of their own labelled
"Scripted (demo)"; real people's rows never include them. Rebuilt whenever a participant's
submission finishes or a participant withdraws; rows of a tier with nobody left are deleted. Each rebuild
sends evaluation.signals.board_changed, so the board's signed release follows (leaderboard).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, replace

from django.db import transaction

from evaluation.figures import submission_units
from evaluation.models import HumanRow, Origin, Status, Submission
from evaluation.signals import board_changed
from evaluator.metrics.aggregate import figures, task_figures
from evaluator.tiers import ROW_TIERS, Tier
from tasks.models import TaskPack

from .models import Participant

Pool = tuple[str, str, bool]  # judge id, judge version, scripted


@transaction.atomic
def human_rows_rebuild(*, pack: TaskPack, revision: int) -> list[HumanRow]:
    finished = Submission.objects.filter(
        origin=Origin.HUMAN, pack=pack, pack_revision=revision, status=Status.DONE, participant__withdrawn__isnull=True
    )
    participants = Participant.objects.filter(submission__in=finished).select_related("submission", "study")
    HumanRow.objects.filter(pack=pack, revision=revision).delete()
    rows = []
    for pool, group in sorted(_pools(participants).items()):
        for tier in ROW_TIERS:
            members = [p for p in group if tier == Tier.ALL or p.tier == tier]
            if members:
                rows.append(_row(pack, revision, tier, pool, members))
    made = HumanRow.objects.bulk_create(rows)
    board_changed.send(sender=HumanRow, pack_id=pack.pk, revision=revision)  # its release follows, once this commits
    return made


def _pools(participants) -> dict[Pool, list[Participant]]:
    """Participants by the judge of their submission and by whether they are scripted: never pooled across either."""
    pools: dict[Pool, list[Participant]] = defaultdict(list)
    for p in participants:
        pools[(p.submission.judge_id, p.submission.judge_version, p.scripted)].append(p)
    return pools


def _row(pack: TaskPack, revision: int, tier: str, pool: Pool, group: list[Participant]) -> HumanRow:
    judge_id, judge_version, scripted = pool
    units = []
    for sample, participant in enumerate(sorted(group, key=lambda p: p.pk)):
        units += [replace(u, sample=sample) for u in submission_units(participant.submission, judge_id, judge_version)]
    tasks = sorted({u.task_id for u in units})
    per_participant = [p.submission.entries.count() for p in group]
    done = sorted(p.completed for p in group if p.completed)
    label = min(p.submission.judge_label for p in group)
    return HumanRow(
        pack=pack,
        revision=revision,
        tier=tier,
        judge_id=judge_id,
        judge_version=judge_version,
        judge_label=label,
        scripted=scripted,
        figures=[asdict(f) for f in (*figures(units), *task_figures(units))],
        tasks=tasks,
        participants=len(group),
        tasks_per_participant=sum(per_participant) / len(group),
        protocols=sorted({p.study.protocol_version for p in group}),
        studies=sorted({p.study.name for p in group}),
        first=done[0] if done else None,
        last=done[-1] if done else None,
    )


def human_rows_after_finish(sender, *, submission: Submission, **kwargs) -> None:
    """evaluation.signals.submission_finished: a participant's submission finished, so its board's rows follow."""
    if submission.origin == Origin.HUMAN:
        human_rows_rebuild(pack=submission.pack, revision=submission.pack_revision)
