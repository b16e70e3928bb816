"""Which judge version a figure belongs to: the key every board, page and agreement report selects by."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from evaluation.models import Figure, Submission
from evaluator.metrics.scopes import Scope


@dataclass(frozen=True)
class JudgeKey:
    """A judge (model, ensemble or offline judge) at one version: figures of different keys are never mixed."""

    judge_id: str
    version: str
    label: str = ""

    @property
    def key(self) -> str:
        return f"{self.judge_id}|{self.version}"

    @classmethod
    def parse(cls, key: str) -> JudgeKey:
        judge_id, _, version = key.rpartition("|")
        return cls(judge_id, version)

    def __str__(self) -> str:
        return f"{self.label or self.judge_id} ({self.version})"


def judges_of(submission_ids) -> list[JudgeKey]:
    """Judge keys with figures for these submissions, most used first."""
    overall = Figure.objects.filter(submission_id__in=submission_ids, scope=Scope.OVERALL)
    counts = Counter(overall.values_list("judge_id", "judge_version", "judge_label"))
    return [JudgeKey(*triple) for triple, _ in counts.most_common()]


def pick_judge(judges: list[JudgeKey], requested: str | None, default: JudgeKey | None = None) -> JudgeKey | None:
    by_key = {j.key: j for j in judges}
    return by_key.get(requested or "") or (default and by_key.get(default.key)) or (judges[0] if judges else None)


def submission_judge(submission: Submission) -> JudgeKey:
    return JudgeKey(submission.judge_id, submission.judge_version, submission.judge_label)
