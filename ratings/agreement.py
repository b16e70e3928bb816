"""Agreement from stored expert ratings of the evaluation pool (never the exemplar pool: those calibrated the judge):
judge–expert pairs and labels, the judge against each expert beside expert against expert (like with like), and
agreement between the experts themselves, for evaluator.metrics.agreement.

Every function reads either people's ratings (scripted=False, the default) or the demo's scripted raters' (scripted=True:
rules, not people; demo/experts.py), never both: the same figures, with the same intervals, are computed for
each apart, and shown apart (scripted_section)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import QuerySet

from evaluation.judges import JudgeKey, judges_of, pick_judge
from evaluation.models import Judgement, UnitStatus
from evaluator.categories import CATEGORIES
from evaluator.judge.skills import skills_where
from evaluator.judge.types import Kind, Side
from evaluator.metrics.agreement import (
    MIN_ITEMS,
    OVERALL,
    Agreement,
    ChecklistAgreement,
    ChecklistLabel,
    LikeForLike,
    Pair,
    PeopleAgreement,
    Rating,
    agreement,
    checklist_agreement,
    judge_against_experts,
    people_agreement,
)

from .models import ExpertRating, Pool


def evaluation(scripted: bool = False) -> QuerySet[ExpertRating]:
    """The ratings every figure here reads: the judge is tested only on what did not calibrate it, and on people's
    ratings or on the scripted raters', never on the two pooled."""
    return ExpertRating.objects.filter(pool=Pool.EVALUATION, scripted=scripted)


@dataclass
class Report:
    judge: JudgeKey
    rows: list[Agreement]
    checklist: ChecklistAgreement | None
    n_ratings: int
    n_raters: int
    unmatched: int  # ratings with no successful judgement by this judge to compare with
    like: list[LikeForLike] = field(default_factory=list)  # per category, then overall: judge–each expert beside expert–expert
    scripted: bool = False  # the demo's scripted raters' ratings (rules, not people), never pooled with people's

    @property
    def rubric_gap(self) -> str:
        """Why the judge's rubric scores cannot be correlated with the experts' mean, in words ("" when they can)."""
        if not self.rows:
            return "no expert's rubric score has a successful judgement of the same prompt or image by this judge to compare with"
        return _gap(self.rows[-1].spearman.value, self.rows[-1].spearman.n_items, "rated and judged")

    @property
    def like_gap(self) -> str:
        """Why the judge cannot be set beside expert against expert (the overall row), in words ("" when it can)."""
        overall = next((row for row in self.like if row.group == OVERALL), None)
        if overall is None or overall.judge_expert.n_items == 0:
            return "no unit (a prompt or image on one dimension) is rated by at least two experts and judged by this judge"
        return _gap(overall.judge_expert.value, overall.judge_expert.n_items, "rated by at least two experts and judged")


def _gap(value: float | None, units: int, counted: str) -> str:
    if value is not None:
        return ""
    if units < MIN_ITEMS:
        return f"only {units} unit{'s' if units != 1 else ''} {counted}, and a correlation needs at least {MIN_ITEMS}"
    return "the scores do not vary: on these units the judge or the experts gave every unit the same score"


def evaluation_raters(*, scripted: bool = False) -> int:
    """How many experts rated the evaluation pool: with one, no expert–expert agreement can be measured."""
    return evaluation(scripted).values("rater").distinct().count()


def judges_with_ratings(*, scripted: bool = False) -> list[JudgeKey]:
    """Judge keys (with their labels) that have figures for a submission some expert rated."""
    return judges_of(evaluation(scripted).values("entry__submission_id"))


def _judgements(judge: JudgeKey, scripted: bool) -> dict[tuple[int, int | None, str], Judgement]:
    rated = evaluation(scripted).values("entry_id")
    rows = Judgement.objects.filter(judge_id=judge.judge_id, judge_version=judge.version, status=UnitStatus.OK, entry_id__in=rated)
    return {(j.entry_id, j.render_id, j.skill): j for j in rows.select_related("entry__task")}


# What experts rate, per side: the rubric skill's dimensions and the task checklist skill's items.
_RUBRIC = {side: skills_where(side=side, kind=Kind.RUBRIC, uses_memory=True)[0] for side in Side}
_CHECKLIST = {side: skills_where(side=side, kind=Kind.CHECKLIST, composite=True)[0] for side in Side}


def _side(rating: ExpertRating) -> Side:
    return Side.IMAGE if rating.render_id else Side.PROMPT


def judge_scores(judge: JudgeKey, *, scripted: bool = False) -> dict[tuple[str, str], float]:
    """This judge's rubric score of every evaluation-pool unit an expert rated: (item_id, dimension) -> score."""
    judged = _judgements(judge, scripted)
    scores: dict[tuple[str, str], float] = {}
    for rating in evaluation(scripted):
        rubric = judged.get((rating.entry_id, rating.render_id, _RUBRIC[_side(rating)]))
        if rubric is not None:
            scores |= {(rating.item_id, dim): float(rubric.scores[dim]) for dim in rating.scores if dim in rubric.scores}
    return scores


def like_for_like(judge: JudgeKey, resamples: int = 1000, *, scripted: bool = False) -> list[LikeForLike]:
    """Per category, then overall: the judge against each expert beside expert against expert, on the same units."""
    scores = judge_scores(judge, scripted=scripted)
    return [
        judge_against_experts(ratings, scores, group=group, resamples=resamples)
        for group, ratings in people_inputs(scripted=scripted).items()
        if ratings
    ]


def build_inputs(judge: JudgeKey, *, scripted: bool = False) -> tuple[list[Pair], list[ChecklistLabel], int]:
    judged = _judgements(judge, scripted)
    experts: dict[tuple, list] = defaultdict(list)
    task_of, unmatched = {}, 0
    for rating in evaluation(scripted).select_related("entry__task"):
        side = _side(rating)
        rubric, checklist = (
            judged.get((rating.entry_id, rating.render_id, _RUBRIC[side])),
            judged.get((rating.entry_id, rating.render_id, _CHECKLIST[side])),
        )
        unmatched += int((bool(rating.scores) and rubric is None) or (bool(rating.checklist) and checklist is None))
        task_of[rating.item_id] = rating.entry.task.task_id
        for dim, score in rating.scores.items():
            if rubric is not None and dim in rubric.scores:
                experts[("score", rating.item_id, dim, rubric.scores[dim])].append(score)
        for item, label in rating.checklist.items():
            if checklist is not None and item in checklist.checklist:
                experts[("check", rating.item_id, item, checklist.checklist[item])].append(label)
    pairs = [Pair(task_of[i], i, d, float(j), tuple(map(float, v))) for (what, i, d, j), v in experts.items() if what == "score"]
    labels = [ChecklistLabel(task_of[i], i, d, int(j), tuple(v)) for (what, i, d, j), v in experts.items() if what == "check"]
    return pairs, labels, unmatched


def agreement_report(judge: JudgeKey, resamples: int = 1000, *, scripted: bool = False) -> Report:
    """The judge against the raters. The bootstrap costs seconds: the page reads what a job stored (ratings/reports.py)."""
    pairs, labels, unmatched = build_inputs(judge, scripted=scripted)
    raters = evaluation_raters(scripted=scripted)
    checklist = checklist_agreement(labels, resamples=resamples) if labels else None
    rows = agreement(pairs, resamples=resamples) if pairs else []
    like = like_for_like(judge, resamples, scripted=scripted)
    return Report(judge, rows, checklist, evaluation(scripted).count(), raters, unmatched, like=like, scripted=scripted)


def people_inputs(*, scripted: bool = False) -> dict[str, list[Rating]]:
    """Evaluation-pool rubric scores per category (OE, CO, IM), plus all of them under "overall"."""
    groups: dict[str, list[Rating]] = {c: [] for c in (*CATEGORIES, OVERALL)}
    for r in evaluation(scripted).select_related("entry__task").order_by("pk"):
        task = r.entry.task
        found = [Rating(task.task_id, r.item_id, dim, r.rater, float(score)) for dim, score in r.scores.items()]
        groups[task.category] += found
        groups[OVERALL] += found
    return groups


def people_report(resamples: int = 1000, *, scripted: bool = False) -> list[PeopleAgreement]:
    """Agreement between experts per category and overall (seconds of bootstrap: the page reads it stored)."""
    inputs = people_inputs(scripted=scripted)
    return [people_agreement(ratings, group=group, resamples=resamples) for group, ratings in inputs.items() if ratings]


@dataclass
class ScriptedSection:
    """The demo's scripted raters (rules, not people): the same figures as the people's, computed the same way over
    their ratings alone, for a section of their own."""

    raters: list[str]
    judges: list[JudgeKey]
    judge: JudgeKey | None
    report: Report | None  # None when no judge has figures for what they rated
    people: list[PeopleAgreement]  # agreement among the scripted raters themselves


def scripted_section(requested: str | None = None, resamples: int = 1000) -> ScriptedSection | None:
    """The scripted raters' figures against the requested judge (else the one with most figures); None without scripted ratings."""
    raters = sorted(set(evaluation(scripted=True).values_list("rater", flat=True)))
    if not raters:
        return None
    judges = judges_with_ratings(scripted=True)
    judge = pick_judge(judges, requested)
    report = agreement_report(judge, resamples, scripted=True) if judge else None
    return ScriptedSection(raters, judges, judge, report, people_report(resamples, scripted=True))
