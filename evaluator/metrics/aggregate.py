"""From unit judgements to leaderboard figures.

A unit carries its value with the name of its scale (evaluator.judge.scales) and says whether
it is part of the composite; this module never looks at which skill wrote it. Composite
figures are on 0–100 so prompt and image sides can be averaged: a 1–5 rubric score s maps to
(s − 1) / 4 · 100, a 0–1 rate r to r · 100, and a 0–100 score (ArtWhisperer's CLIP score)
stays as it is (scales.Scale.to_100).

- sample score = mean of the available parts: the prompt part (mean over the prompt-side
  composite skills: rubric and checklist) and the image part (mean over backends of the mean
  over image-side composite skills, rubric, checklist and target similarity, of the mean over images);
- task score = mean over the task's prompt samples;
- category score = mean over its tasks, with a 95 % interval for means of bounded scores (evaluator.metrics.intervals:
  STaR-Bets, valid for any distribution on the scale at the number of tasks scored, so it is given from one task on);
- overall = mean of the category scores (macro, so a category with more tasks does not weigh more), its interval the
  average of the category intervals each taken at 1 − 0.05 / K (Bonferroni: macro_mean_ci);
- backend score = the image part on that backend alone, averaged the same way;
- top-1 (AtelierEval's "best of N"): the best image per prompt and backend (ranked by the unit
  with the lowest top1_rank present: image rubric, then target similarity, then checklist), with
  every value of that image;
- skill figures: each skill on its own scale, averaged per task first.
Failed units are left out of the means and counted (a failed render is a unit with skill
"render"); skipped units (a skill the judge does not have) are neither scored nor counted.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean

from ..categories import CATEGORIES
from ..judge.scales import SCORE_0_100, scale_named
from ..judge.types import Status
from .order import task_order
from .scopes import Scope, cell_key

# The interval module (numpy) is imported when an interval is computed, not by importing this module, which every web
# process does (tests/test_startup.py).

COMPOSITE_SCALE = SCORE_0_100.name


@dataclass(frozen=True)
class Unit:
    task_id: str
    category: str
    sample: int
    skill: str
    status: str  # a Status value
    value: float | None
    backend: str = ""  # "" for prompt-side units
    image: int = -1  # the render's id for image-side units, so skills of one image can be paired
    scale: str = ""  # the value's scale (scales.SCALES); "" for a gate or a failed render
    composite: bool = False  # part of the composite score
    top1_rank: int | None = None  # ranks images for top-1 (lowest present rank decides)
    image_index: int = -1  # the image's place among its prompt's images on its backend (0: the first); -1 on the prompt side

    @property
    def scored(self) -> bool:
        return self.status == Status.OK and self.value is not None and bool(self.scale)


@dataclass(frozen=True)
class Figure:
    scope: str  # a scopes.Scope (figures read back from JSON carry the plain string, equal to it)
    key: str
    value: float | None
    n: int
    failures: int
    ci_low: float | None = None
    ci_high: float | None = None
    scale: str = COMPOSITE_SCALE


def normalise(unit: Unit) -> float:
    """The unit's value on 0–100 (its scale's map)."""
    assert unit.value is not None
    return scale_named(unit.scale).to_100(unit.value)


def mean_ci(values: list[float], scale: str = COMPOSITE_SCALE, confidence: float = 0.95) -> tuple[float | None, float | None]:
    """The interval of the mean over tasks on the scale's range (intervals.mean_interval: valid for any distribution of
    bounded scores at every number of tasks), or (None, None) without values. `values` must come in a fixed order that
    does not depend on them (the callers pass order.task_order)."""
    if not values:
        return None, None
    from .intervals import mean_interval

    bounds = scale_named(scale)
    low, high = mean_interval([_within(v, bounds.low, bounds.high) for v in values], bounds.low, bounds.high, confidence)
    return low, high


def macro_mean_ci(groups: list[list[float]], confidence: float = 0.95) -> tuple[float | None, float | None]:
    """The interval of a macro mean on 0–100 (the mean of each group's mean: categories): intervals.macro_intervals,
    the one rule the board's scores use too. (None, None) when any group is empty."""
    from .intervals import macro_intervals

    bounds = scale_named(COMPOSITE_SCALE)
    folded = [[_within(v, bounds.low, bounds.high) for v in values] for values in groups]
    return macro_intervals([folded], confidence, bounds.low, bounds.high)[0]


def _within(value: float, low: float, high: float, slack: float = 1e-9) -> float:
    """A value on its scale, floating-point noise at the ends folded in; a value truly outside is refused by name."""
    if low - slack <= value <= high + slack:
        return min(max(value, low), high)
    raise ValueError(f"score {value!r} lies outside its scale [{low}, {high}]")


def _mean(values: list[float]) -> float | None:
    return fmean(values) if values else None


def _sample_parts(units: list[Unit]) -> tuple[float | None, dict[str, float]]:
    """(prompt part, {backend: image part}) for the units of one (task, sample)."""
    prompt = [normalise(u) for u in units if u.composite and not u.backend and u.scored]
    by_backend_skill: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for u in units:
        if u.composite and u.backend and u.scored:
            by_backend_skill[u.backend][u.skill].append(normalise(u))
    image = {b: fmean(fmean(v) for v in skills.values()) for b, skills in by_backend_skill.items()}
    return _mean(prompt), image


def sample_image_scores(units: list[Unit]) -> dict[tuple[str, int], float]:
    """(task, sample) -> its image part (0–100): the mean over backends of each backend's image-side composite."""
    by_sample: dict[tuple[str, int], list[Unit]] = defaultdict(list)
    for u in units:
        by_sample[(u.task_id, u.sample)].append(u)
    scores = {key: _mean(list(_sample_parts(group)[1].values())) for key, group in by_sample.items()}
    return {key: value for key, value in scores.items() if value is not None}


def task_scores(units: list[Unit]) -> dict[str, dict]:
    """Per task: category, overall score and per-backend image score (means over samples)."""
    by_sample: dict[tuple[str, int], list[Unit]] = defaultdict(list)
    for u in units:
        by_sample[(u.task_id, u.sample)].append(u)
    samples: dict[str, list[tuple[float | None, dict[str, float]]]] = defaultdict(list)
    category: dict[str, str] = {}
    for (task_id, _), group in by_sample.items():
        samples[task_id].append(_sample_parts(group))
        category[task_id] = group[0].category
    result = {}
    for task_id, parts in samples.items():
        composite = [_mean([p for p in (prompt, _mean(list(image.values()))) if p is not None]) for prompt, image in parts]
        backends = {b for _, image in parts for b in image}
        result[task_id] = {
            "category": category[task_id],
            "score": _mean([c for c in composite if c is not None]),
            "samples": sum(c is not None for c in composite),
            "backends": {b: fmean(image[b] for _, image in parts if b in image) for b in backends},
        }
    return result


def figures(units: list[Unit]) -> list[Figure]:
    scored_tasks = task_scores(units)
    tasks = {t: scored_tasks[t] for t in task_order(scored_tasks)}  # the order every interval reads its values in
    failures = _failures(units)
    out: list[Figure] = []
    scored = []  # each category's task scores, for the overall (macro) interval
    for cat in CATEGORIES:
        values = [t["score"] for t in tasks.values() if t["category"] == cat and t["score"] is not None]
        if not values and not failures[(Scope.CATEGORY, cat)]:
            continue
        out.append(Figure(Scope.CATEGORY, cat, _mean(values), len(values), failures[(Scope.CATEGORY, cat)], *mean_ci(values)))
        if values:
            scored.append(values)
    n_tasks = sum(1 for t in tasks.values() if t["score"] is not None)
    overall = _mean([fmean(v) for v in scored])
    out.append(Figure(Scope.OVERALL, "overall", overall, n_tasks, failures[(Scope.OVERALL, "overall")], *macro_mean_ci(scored)))
    for backend in sorted({u.backend for u in units if u.backend}):
        values = [t["backends"][backend] for t in tasks.values() if backend in t["backends"]]
        out.append(Figure(Scope.BACKEND, backend, _mean(values), len(values), failures[(Scope.BACKEND, backend)], *mean_ci(values)))
    out.extend(_skill_figures(units, failures))
    out.extend(_top1_figures(units))
    return out


def detail_figures(units: list[Unit]) -> list[Figure]:
    """More views of the same composite: the prompt part and the image part alone (Scope.PART, macro over
    categories like overall), and the image part per category and backend (Scope.CATEGORY_BACKEND, key
    scopes.cell_key("OE", backend): the mean over the category's tasks)."""
    by_sample: dict[tuple[str, int], list[Unit]] = defaultdict(list)
    for u in units:
        by_sample[(u.task_id, u.sample)].append(u)
    parts: dict[str, dict[str, list[float]]] = {"prompt": defaultdict(list), "image": defaultdict(list)}
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    category: dict[str, str] = {}
    for (task_id, _), group in by_sample.items():
        prompt, image = _sample_parts(group)
        category[task_id] = group[0].category
        if prompt is not None:
            parts["prompt"][task_id].append(prompt)
        if image:
            parts["image"][task_id].append(fmean(image.values()))
        for backend, value in image.items():
            cells[(task_id, backend)].append(value)
    out = []
    for name, per_task in parts.items():
        per_category: dict[str, list[float]] = defaultdict(list)
        for task_id, values in per_task.items():
            per_category[category[task_id]].append(fmean(values))
        out.append(Figure(Scope.PART, name, _mean([fmean(v) for v in per_category.values()]), len(per_task), 0))
    grid: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (task_id, backend), values in cells.items():
        grid[(category[task_id], backend)].append(fmean(values))
    out += [Figure(Scope.CATEGORY_BACKEND, cell_key(c, b), fmean(v), len(v), 0) for (c, b), v in sorted(grid.items())]
    return out


def task_figures(units: list[Unit]) -> list[Figure]:
    """Each task's composite score (Scope.TASK, key the task id; n = its samples with a score): stored so that
    boards can compare entries on a common set of tasks (e.g. the tasks human participants did)."""
    out = []
    for task_id, t in sorted(task_scores(units).items()):
        if t["score"] is not None:
            out.append(Figure(Scope.TASK, task_id, t["score"], t["samples"], 0))
    return out


def _top1_figures(units: list[Unit]) -> list[Figure]:
    """AtelierEval's top-1 of N: per (task, sample, backend) keep the image with the best image score
    (by the lowest top1_rank present: image rubric where judged, else target similarity, else checklist
    accuracy; better on the unit's scale; ties go to the first image) and report its values, averaged
    per task, then over tasks, each on its own scale."""
    images: dict[tuple[str, int, str], dict[int, dict[str, Unit]]] = defaultdict(lambda: defaultdict(dict))
    for u in units:
        if u.backend and u.image >= 0 and u.scored:
            images[(u.task_id, u.sample, u.backend)][u.image][u.skill] = u
    per_task: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    scales: dict[str, str] = {}
    for (task_id, _, _), by_image in images.items():
        ranked = [u for image in by_image.values() for u in image.values() if u.top1_rank is not None]
        if not ranked:
            continue
        ranking = min(ranked, key=lambda u: u.top1_rank).skill  # type: ignore[arg-type, return-value]
        best = max(sorted(by_image), key=lambda i: normalise(by_image[i][ranking]) if ranking in by_image[i] else float("-inf"))
        for skill, unit in by_image[best].items():
            per_task[skill][task_id].append(unit.value)  # type: ignore[arg-type]
            scales[skill] = unit.scale
    return [
        Figure(
            Scope.TOP1,
            skill,
            fmean(fmean(v) for v in tasks.values()),
            len(tasks),
            0,
            *mean_ci([fmean(tasks[t]) for t in task_order(tasks)], scales[skill]),
            scale=scales[skill],
        )
        for skill, tasks in sorted(per_task.items())
    ]


def _skill_figures(units: list[Unit], failures: dict[tuple[str, str], int]) -> list[Figure]:
    """Each skill on its own scale (1–5 or 0–1), averaged per task first."""
    per_task: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    scales: dict[str, str] = {}
    for u in units:
        if u.scored:
            per_task[u.skill][u.task_id].append(u.value)  # type: ignore[arg-type]
        if u.scale and u.status != Status.SKIPPED:
            scales[u.skill] = u.scale
    out = []
    for skill in sorted(scales):  # judged skills with a value scale: gates and failed renders have none
        values = [fmean(per_task[skill][t]) for t in task_order(per_task[skill])]
        out.append(
            Figure(
                Scope.SKILL,
                skill,
                _mean(values),
                len(values),
                failures[(Scope.SKILL, skill)],
                *mean_ci(values, scales[skill]),
                scale=scales[skill],
            )
        )
    return out


def _failures(units: list[Unit]) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for u in units:
        if u.status != Status.FAILED:
            continue
        for key in ((Scope.OVERALL, "overall"), (Scope.CATEGORY, u.category), (Scope.SKILL, u.skill)):
            counts[key] += 1
        if u.backend:
            counts[(Scope.BACKEND, u.backend)] += 1
    return counts
