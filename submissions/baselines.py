"""Baseline rows: ordinary submissions whose prompts a reference prompter computed here."""

from __future__ import annotations

import json

from evaluation.models import Status, Submission
from evaluator.prompters.baselines import BASELINES, brief_verbatim
from tasks.models import TaskPack
from teams.models import Team

from .services import submission_create, submissions_publish

BASELINE_TEAM = "Baselines"


def baseline_create(*, pack: TaskPack, baseline: str, publish: bool = False) -> Submission:
    team, _ = Team.objects.get_or_create(name=BASELINE_TEAM, defaults={"slug": "baselines"})
    same = {"team": team, "pack": pack, "pack_revision": pack.revision, "prompter": baseline, "is_baseline": True}
    existing = Submission.objects.filter(**same).exclude(status=Status.FAILED).first()
    submission = existing or _create(team, pack, baseline)
    submission.refresh_from_db()
    if publish:
        submissions_publish(submissions=Submission.objects.filter(pk=submission.pk))
    return submission


def _create(team: Team, pack: TaskPack, baseline: str) -> Submission:
    lines = [
        json.dumps({"task_id": t.task_id, "prompt": brief_verbatim(t.brief, t.constraints or {})}) for t in pack.tasks.order_by("task_id")
    ]
    submission = submission_create(
        team=team, pack=pack, prompter=baseline, filename=f"{baseline}.jsonl", data="\n".join(lines).encode(), is_baseline=True
    )
    Submission.objects.filter(pk=submission.pk).update(baseline_note=BASELINES[baseline])
    return submission
