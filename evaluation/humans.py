"""Human baseline rows: the finished submissions of a board's study participants, pooled per tier.

Each participant is one sample of the pooled units, so evaluator.metrics.aggregate's task score
(mean over samples) is the mean over the participants who did the task, and every figure and
interval is computed exactly as for a prompter. Rebuilt whenever a participant's submission
finishes or a participant withdraws; rows of a tier with nobody left are deleted.
"""

from __future__ import annotations

from dataclasses import asdict, replace

from django.db import transaction

from evaluator.metrics.aggregate import figures, task_figures
from leaderboard.models import HumanRow
from studies.models import Participant
from submissions.models import Status, Submission
from tasks.models import TaskPack

from .figures import submission_units

TIERS = ("novice", "skilled")


@transaction.atomic
def human_rows_rebuild(*, pack: TaskPack, revision: int) -> list[HumanRow]:
    finished = Submission.objects.filter(origin="human", pack=pack, pack_revision=revision, status=Status.DONE, participant__withdrawn__isnull=True)
    participants = list(Participant.objects.filter(submission__in=finished).select_related("submission", "study"))
    HumanRow.objects.filter(pack=pack, revision=revision).delete()
    judges = {(p.submission.judge_id, p.submission.judge_version, p.submission.judge_label) for p in participants}
    rows = []
    for judge_id, judge_version, label in sorted(judges):
        judged = [p for p in participants if (p.submission.judge_id, p.submission.judge_version) == (judge_id, judge_version)]
        for tier in (*TIERS, "all"):
            group = [p for p in judged if tier == "all" or p.tier == tier]
            if group:
                rows.append(_row(pack, revision, tier, judge_id, judge_version, label, group))
    return HumanRow.objects.bulk_create(rows)


def _row(pack: TaskPack, revision: int, tier: str, judge_id: str, judge_version: str, label: str, group: list[Participant]) -> HumanRow:
    units = []
    for sample, participant in enumerate(sorted(group, key=lambda p: p.pk)):
        units += [replace(u, sample=sample) for u in submission_units(participant.submission, judge_id, judge_version)]
    tasks = sorted({u.task_id for u in units})
    per_participant = [p.submission.entries.count() for p in group]
    done = sorted(p.completed for p in group if p.completed)
    return HumanRow(
        pack=pack, revision=revision, tier=tier, judge_id=judge_id, judge_version=judge_version, judge_label=label,
        figures=[asdict(f) for f in (*figures(units), *task_figures(units))], tasks=tasks, participants=len(group),
        tasks_per_participant=sum(per_participant) / len(group), protocols=sorted({p.study.protocol_version for p in group}),
        studies=sorted({p.study.name for p in group}), first=done[0] if done else None, last=done[-1] if done else None,
    )  # fmt: skip
