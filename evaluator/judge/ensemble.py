"""EnsembleJudge: several judges answer every skill and their verdicts are combined.

How a skill's answers are combined is declared by the skill (skills.Skill.combine) and
implemented here, one pure strategy each:
  * mean_scores (rubric dimensions): per dimension, the mean over the members that
    succeeded; details keep each member's scores and the spread (max - min);
  * majority_checklist and majority_text_flags: majority vote, a tie counts as 0 (not met);
  * mean_faithfulness: mean of each number, pass/fail by majority (a tie fails);
  * any_blocks (gates): blocked when any member that answered blocks (a screen errs on
    the safe side);
  * first_member (metrics): the members' numbers are the same computation, so only the
    first member computes them.
Every strategy records details["agreement"], the share of dimensions/items/flags on which
all succeeding members agree. Calls and tokens are summed over all members; failed members
are listed in details["failed_members"]; if every member fails, the result fails with
every member's reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from statistics import fmean
from typing import TYPE_CHECKING

from .protocol import Judge
from .skills import REGISTRY, TEXT_CHECKS, Verdict, fill, get_skill, text_rendering_verdict
from .spec import ensemble_spec
from .types import Exemplar, JudgeResult, Kind, Status, TargetInput, TaskInput

if TYPE_CHECKING:
    from PIL.Image import Image

Answers = Sequence[tuple[str, JudgeResult]]  # (member judge_id, its ok or blocked result)


def majority(votes: Sequence[int]) -> int:
    """1 when more than half the votes are 1; a tie is 0."""
    return int(sum(votes) * 2 > len(votes))


def _agreement(columns: Sequence[Sequence[object]]) -> float:
    """Share of columns (one per dimension/item) whose values are all equal (1.0 when there are none)."""
    if not columns:
        return 1.0
    return sum(len(set(col)) == 1 for col in columns) / len(columns)


def mean_scores(answered: Answers) -> Verdict:
    dims = list(answered[0][1].scores)
    columns = [[r.scores[d] for _, r in answered] for d in dims]
    details = {"members": {jid: dict(r.scores) for jid, r in answered}, "spread": {d: max(c) - min(c) for d, c in zip(dims, columns)}}
    return Verdict(scores={d: fmean(col) for d, col in zip(dims, columns)}, details={**details, "agreement": _agreement(columns)})


def majority_checklist(answered: Answers) -> Verdict:
    items = list(answered[0][1].checklist)
    columns = [[r.checklist[i] for _, r in answered] for i in items]
    details = {"members": {jid: dict(r.checklist) for jid, r in answered}, "agreement": _agreement(columns)}
    return Verdict(checklist={i: majority(col) for i, col in zip(items, columns)}, details=details)


def majority_text_flags(answered: Answers) -> Verdict:
    strings = list(answered[0][1].details["strings"])
    flags = {s: {c: majority([r.details["strings"][s][c] for _, r in answered]) for c in TEXT_CHECKS} for s in strings}
    verdict = text_rendering_verdict(flags)
    columns = [[r.details["strings"][s][c] for _, r in answered] for s in strings for c in TEXT_CHECKS]
    verdict.details.update(members={jid: r.details["strings"] for jid, r in answered}, agreement=_agreement(columns))
    return verdict


def mean_faithfulness(answered: Answers) -> Verdict:
    keys = [k for k in answered[0][1].scores if k != "passed"]
    passed = majority([int(r.scores["passed"]) for _, r in answered])
    scores = {k: fmean(r.scores[k] for _, r in answered) for k in keys} | {"passed": float(passed)}
    dims = list(answered[0][1].details.get("dimension_scores", {}))
    columns = [[r.details["dimension_scores"][d] for _, r in answered] for d in dims] + [[r.scores["passed"] for _, r in answered]]
    details = {
        "passed": bool(passed),
        "members": {jid: dict(r.scores) for jid, r in answered},
        "member_requirements": {jid: r.details.get("requirements", []) for jid, r in answered},
        "spread": {k: max(r.scores[k] for _, r in answered) - min(r.scores[k] for _, r in answered) for k in keys},
        "agreement": _agreement(columns),
    }
    return Verdict(scores=scores, details=details)


def any_blocks(answered: Answers) -> Verdict:
    blocking = {jid: r.details.get("categories", []) for jid, r in answered if r.status == Status.BLOCKED}
    categories = list(dict.fromkeys(c for cats in blocking.values() for c in cats))
    details = {"members": {jid: r.status for jid, r in answered}, "blocked": bool(blocking), "categories": categories}
    details["agreement"] = _agreement([[r.status for _, r in answered]])
    if not blocking:
        return Verdict(details=details)
    skill = answered[0][1].skill
    reason = f"blocked by {skill} ({len(blocking)} of {len(answered)} members): {', '.join(categories)}"
    return Verdict(status=Status.BLOCKED, details=details, reason=reason)


def first_member(answered: Answers) -> Verdict:
    first = answered[0][1]
    return Verdict(scores=dict(first.scores), checklist=dict(first.checklist), details=dict(first.details))


STRATEGIES: dict[str, Callable[[Answers], Verdict]] = {
    f.__name__: f for f in (mean_scores, majority_checklist, majority_text_flags, mean_faithfulness, any_blocks, first_member)
}


def _merged_rationales(answered: Answers) -> dict[str, str]:
    keys = list(dict.fromkeys(k for _, r in answered for k in r.rationales))
    return {k: "\n".join(f"[{jid}] {r.rationales[k]}" for jid, r in answered if k in r.rationales) for k in keys}


def _totals(skill: str, results: Sequence[tuple[str, JudgeResult]]) -> JudgeResult:
    """A failed result carrying every member's calls, tokens and raw replies."""
    out = JudgeResult(skill=skill, status=Status.FAILED)
    out.calls = sum(r.calls for _, r in results)
    out.throttled = sum(r.throttled for _, r in results)
    out.prompt_tokens = sum(r.prompt_tokens for _, r in results)
    out.cached_prompt_tokens = sum(r.cached_prompt_tokens for _, r in results)
    out.completion_tokens = sum(r.completion_tokens for _, r in results)
    out.raw = "\n".join(f"[{jid}]\n{r.raw}" for jid, r in results if r.raw)
    out.remote_text = "\n".join(f"[{jid}] {r.remote_text}" for jid, r in results if r.remote_text)
    return out


def combine(skill: str, results: Sequence[tuple[str, JudgeResult]]) -> JudgeResult:
    """One result from (member judge_id, member result) pairs of the same skill."""
    out = _totals(skill, results)
    answered = [(jid, r) for jid, r in results if r.status in (Status.OK, Status.BLOCKED)]
    failed = {jid: r.reason for jid, r in results if r.status == Status.FAILED}
    if not answered:
        if not failed:  # every member skipped: for the same input, for the same reason
            out.status, out.reason = Status.SKIPPED, results[0][1].reason if results else "the ensemble has no members"
        else:
            out.reason = "every member failed: " + "; ".join(f"{jid}: {reason}" for jid, reason in failed.items())
        return out
    verdict = STRATEGIES[get_skill(skill).combine](answered)
    verdict.rationales = _merged_rationales(answered)
    verdict.details["failed_members"] = failed
    return fill(out, verdict)


class EnsembleJudge:
    """Implements the Judge protocol over several member judges (run in parallel threads)."""

    def __init__(self, members: Sequence[Judge]) -> None:
        if not members:
            raise ValueError("an ensemble needs at least one member judge")
        ids = [m.judge_id for m in members]
        if len(set(ids)) != len(ids):
            raise ValueError(f"ensemble members must be distinct judges, got {ids}")
        self.members = tuple(members)
        self.spec = ensemble_spec(tuple(m.spec for m in members), {name: s.combine for name, s in REGISTRY.items()})
        self.judge_id, self.label, self.version = self.spec.judge_id, self.spec.label, self.spec.version

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
        members = self.members[:1] if get_skill(skill).kind == Kind.METRIC else self.members

        def one(member: Judge) -> tuple[str, JudgeResult]:
            return member.judge_id, member.run(skill, task, prompt, image, exemplars=exemplars, target=target)

        if len(members) == 1:
            return combine(skill, [one(members[0])])
        with ThreadPoolExecutor(max_workers=len(members), thread_name_prefix="ensemble") as pool:
            return combine(skill, list(pool.map(one, members)))
