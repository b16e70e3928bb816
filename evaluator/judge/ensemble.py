"""EnsembleJudge: several judges answer every skill and their verdicts are combined.

Combination (pure, see combine()):
  * subjective: per dimension, the mean over the members that succeeded; details keep
    each member's scores and the spread (max - min) per dimension;
  * objective checklists and text_rendering flags: majority vote, a tie counts as 0 (not met);
  * faithfulness: mean of each number, pass/fail by majority (a tie fails);
  * safety: blocked when any member that answered blocks (a screen errs on the safe side);
  * metric skills: identical for every member, so only the first member computes them;
  * details["agreement"]: the share of dimensions/items/flags on which all succeeding
    members agree; calls and tokens are summed over all members; failed members are
    listed in details["failed_members"]; if every member fails, the result fails with
    every member's reason.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from statistics import fmean
from typing import TYPE_CHECKING, Sequence

from .skills import TEXT_CHECKS, text_rendering_verdict
from .types import (
    METRIC_SKILLS,
    STATUS_BLOCKED,
    STATUS_FAILED,
    STATUS_OK,
    STATUS_SKIPPED,
    Judge,
    JudgeResult,
    TargetInput,
    TaskInput,
    check_skill,
    is_objective,
    is_subjective,
)

if TYPE_CHECKING:
    from PIL.Image import Image

    from .memory import Exemplar


def majority(votes: Sequence[int]) -> int:
    """1 when more than half the votes are 1; a tie is 0."""
    return int(sum(votes) * 2 > len(votes))


def _agreement(columns: Sequence[Sequence[object]]) -> float:
    """Share of columns (one per dimension/item) whose values are all equal (1.0 when there are none)."""
    if not columns:
        return 1.0
    return sum(len(set(col)) == 1 for col in columns) / len(columns)


def _merged_rationales(oks: Sequence[tuple[str, JudgeResult]]) -> dict[str, str]:
    keys = list(dict.fromkeys(k for _, r in oks for k in r.rationales))
    return {k: "\n".join(f"[{jid}] {r.rationales[k]}" for jid, r in oks if k in r.rationales) for k in keys}


def combine(skill: str, results: Sequence[tuple[str, JudgeResult]]) -> JudgeResult:
    """One result from (member judge_id, member result) pairs of the same skill."""
    out = JudgeResult(skill=skill, status=STATUS_FAILED)
    for _, r in results:
        out.calls += r.calls
        out.prompt_tokens += r.prompt_tokens
        out.completion_tokens += r.completion_tokens
    out.raw = "\n".join(f"[{jid}]\n{r.raw}" for jid, r in results if r.raw)
    answered = [(jid, r) for jid, r in results if r.status in (STATUS_OK, STATUS_BLOCKED)]
    failed = {jid: r.reason for jid, r in results if r.status == STATUS_FAILED}
    if not answered:
        if not failed:  # every member skipped, for the same input the same reason
            out.status, out.reason = STATUS_SKIPPED, results[0][1].reason if results else "the ensemble has no members"
        else:
            out.reason = "every member failed: " + "; ".join(f"{jid}: {reason}" for jid, reason in failed.items())
        return out
    out.status = STATUS_OK
    out.rationales = _merged_rationales(answered)
    details: dict[str, object] = {"members": {}, "failed_members": failed}
    if skill.startswith("safety_"):
        blocking = {jid: r.details.get("categories", []) for jid, r in answered if r.status == STATUS_BLOCKED}
        categories = list(dict.fromkeys(c for cats in blocking.values() for c in cats))
        details["members"] = {jid: r.status for jid, r in answered}
        details.update(blocked=bool(blocking), categories=categories, agreement=_agreement([[r.status for _, r in answered]]))
        if blocking:
            out.status = STATUS_BLOCKED
            out.reason = f"blocked by {skill} ({len(blocking)} of {len(answered)} members): {', '.join(categories)}"
    elif is_subjective(skill):
        dims = list(answered[0][1].scores)
        columns = [[r.scores[d] for _, r in answered] for d in dims]
        out.scores = {d: fmean(col) for d, col in zip(dims, columns)}
        details["members"] = {jid: dict(r.scores) for jid, r in answered}
        details.update(spread={d: max(col) - min(col) for d, col in zip(dims, columns)}, agreement=_agreement(columns))
    elif is_objective(skill):
        items = list(answered[0][1].checklist)
        columns = [[r.checklist[i] for _, r in answered] for i in items]
        out.checklist = {i: majority(col) for i, col in zip(items, columns)}
        details["members"] = {jid: dict(r.checklist) for jid, r in answered}
        details["agreement"] = _agreement(columns)
    elif skill == "text_rendering":
        strings = list(answered[0][1].details["strings"])
        flags = {s: {c: majority([r.details["strings"][s][c] for _, r in answered]) for c in TEXT_CHECKS} for s in strings}
        verdict = text_rendering_verdict(flags)
        out.scores, out.checklist = verdict.scores, verdict.checklist
        columns = [[r.details["strings"][s][c] for _, r in answered] for s in strings for c in TEXT_CHECKS]
        details.update(verdict.details, members={jid: r.details["strings"] for jid, r in answered}, agreement=_agreement(columns))
    elif skill == "faithfulness":
        keys = [k for k in answered[0][1].scores if k != "passed"]
        out.scores = {k: fmean(r.scores[k] for _, r in answered) for k in keys}
        passed = majority([int(r.scores["passed"]) for _, r in answered])
        out.scores["passed"] = float(passed)
        dims = list(answered[0][1].details.get("dimension_scores", {}))
        columns = [[r.details["dimension_scores"][d] for _, r in answered] for d in dims]
        columns.append([r.scores["passed"] for _, r in answered])
        details.update(
            passed=bool(passed),
            members={jid: dict(r.scores) for jid, r in answered},
            member_requirements={jid: r.details.get("requirements", []) for jid, r in answered},
            spread={k: max(r.scores[k] for _, r in answered) - min(r.scores[k] for _, r in answered) for k in keys},
            agreement=_agreement(columns),
        )
    else:  # metric skills: the members' numbers are the same computation
        first = answered[0][1]
        out.scores, out.checklist, details = dict(first.scores), dict(first.checklist), {**first.details, "failed_members": failed}
    out.details = details
    return out


class EnsembleJudge:
    """Implements the Judge protocol over several member judges (run in parallel threads)."""

    def __init__(self, members: Sequence[Judge]) -> None:
        if not members:
            raise ValueError("an ensemble needs at least one member judge")
        ids = [m.judge_id for m in members]
        if len(set(ids)) != len(ids):
            raise ValueError(f"ensemble members must be distinct judges, got {ids}")
        self.members = tuple(members)
        self.judge_id = "ensemble:" + "+".join(ids)
        self.label = f"ensemble of {len(ids)} judges: " + "; ".join(m.label for m in members)
        versions = list(dict.fromkeys(m.version for m in members))
        self.version = versions[0] if len(versions) == 1 else "+".join(versions)

    def run(
        self,
        skill: str,
        task: TaskInput,
        prompt: str,
        image: Image | None = None,
        *,
        exemplars: Sequence[Exemplar] = (),
        target: TargetInput | None = None,
    ) -> JudgeResult:
        check_skill(skill)
        members = self.members[:1] if skill in METRIC_SKILLS else self.members

        def one(member: Judge) -> tuple[str, JudgeResult]:
            return member.judge_id, member.run(skill, task, prompt, image, exemplars=exemplars, target=target)

        if len(members) == 1:
            return combine(skill, [one(members[0])])
        with ThreadPoolExecutor(max_workers=len(members), thread_name_prefix="ensemble") as pool:
            return combine(skill, list(pool.map(one, members)))
