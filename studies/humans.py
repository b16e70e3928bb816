"""Human baseline rows: the finished submissions of a board's study participants, pooled per tier and judge by
evaluator.metrics.humans.human_rows (the one definition evaluator.recompute rebuilds them with from a download).

Scripted demo participants (rules, not people: Participant.scripted) are pooled only with each other, in rows of
their own labelled "Scripted (demo)"; real people's rows never include them. Rebuilt whenever a participant's
submission finishes or a participant withdraws; rows of a tier with nobody left are deleted. Each rebuild
sends evaluation.signals.board_changed, so the board's signed release follows (leaderboard).
"""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction

from evaluation.figures import submission_units
from evaluation.models import HumanRow, Origin, Status, Submission
from evaluation.signals import board_changed
from evaluator.metrics import humans
from tasks.models import TaskPack

from .models import Participant

Judge = tuple[str, str]  # judge id, judge version


@transaction.atomic
def human_rows_rebuild(*, pack: TaskPack, revision: int) -> list[HumanRow]:
    finished = Submission.objects.filter(
        origin=Origin.HUMAN, pack=pack, pack_revision=revision, status=Status.DONE, participant__withdrawn__isnull=True
    )
    participants = Participant.objects.filter(submission__in=finished).select_related("submission", "study").order_by("pk")
    HumanRow.objects.filter(pack=pack, revision=revision).delete()
    rows = []
    for (judge_id, judge_version), group in sorted(_by_judge(participants).items()):
        label = min(p.submission.judge_label for p in group)  # one judge version, one spec: one label
        pooled = humans.human_rows([pooled_participant(p, judge_id, judge_version) for p in group])
        rows += [
            HumanRow(pack=pack, revision=revision, judge_id=judge_id, judge_version=judge_version, judge_label=label, **r) for r in pooled
        ]
    made = HumanRow.objects.bulk_create(rows)
    board_changed.send(sender=HumanRow, pack_id=pack.pk, revision=revision)  # its release follows, once this commits
    return made


def _by_judge(participants) -> dict[Judge, list[Participant]]:
    """Participants by the judge of their submission (in id order, each the sample of its place): rows never pool
    across judges."""
    found: dict[Judge, list[Participant]] = defaultdict(list)
    for p in participants:
        found[(p.submission.judge_id, p.submission.judge_version)].append(p)
    return found


def pooled_participant(participant: Participant, judge_id: str, judge_version: str) -> humans.Participant:
    """A participant as evaluator.metrics.humans pools them: their units by this judge and what a row counts of them."""
    return humans.Participant(
        tier=participant.tier,
        scripted=participant.scripted,
        units=submission_units(participant.submission, judge_id, judge_version),
        entries=participant.submission.entries.count(),
        study=participant.study.name,
        protocol=participant.study.protocol_version,
        completed=participant.completed,
    )


def human_rows_after_finish(sender, *, submission: Submission, **kwargs) -> None:
    """evaluation.signals.submission_finished: a participant's submission finished, so its board's rows follow."""
    if submission.origin == Origin.HUMAN:
        human_rows_rebuild(pack=submission.pack, revision=submission.pack_revision)
