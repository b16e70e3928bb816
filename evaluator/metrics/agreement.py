"""How well the automatic judge agrees with human expert raters.

Rubric scores (integers 1–5 per dimension) are compared with the mean of the experts who rated
the same item: Spearman ρ, Kendall τ-b, mean absolute error and the share of items within one
point. The expert ceiling is Spearman between the first two experts of each item rated by two or
more, i.e. how well humans agree with each other (AtelierEval: judge–expert ≈ 0.81, expert–expert
≈ 0.83). Checklist labels (0/1) are compared with the expert majority (ties count as "not met",
the same rule as the judge ensemble): accuracy, precision, recall and F1 for the class "met".

Agreement between people, without the judge (people_agreement): Krippendorff's α from the
`krippendorff` package (ordinal by default) on a raters × units matrix, a unit being one item on
one dimension and a missing rating NaN; and the expert–expert ceiling, Spearman between the first
two raters of each unit in rater-name order.

Rules shared by every figure:
- a statistic that is undefined (fewer than 3 items, constant input to a correlation, nothing
  predicted or nothing true for precision/recall) is None, never NaN, and so are its bounds;
- intervals are percentile intervals (95 % by default) of a cluster bootstrap over tasks (items of
  one task are not independent, so a task's items are always drawn together);
- resamples in which the statistic is undefined are dropped; if fewer than half are defined the
  bounds are None; with fewer than two tasks the bounds are None (one cluster shows no spread);
- the same seed gives the same numbers.

Cost: each resample calls scipy once per figure, and spearmanr/kendalltau take about 0.5 ms a
call whatever the size, so one rubric row at 1000 resamples takes about 1.5–2 s. Cache the
result or pass fewer resamples where that matters.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import krippendorff
import numpy as np
from scipy import stats

OVERALL = "overall"
MIN_ITEMS = 3  # below this no statistic here is reported: a correlation of two points is always ±1
WITHIN = 1.0
TOLERANCE = 1e-9  # expert means (and ensemble judge scores) are floats: 7/3 − 4/3 must count as "within 1"

Statistic = Callable[[np.ndarray], float | None]  # gets the values of the drawn tasks, concatenated


@dataclass(frozen=True)
class Pair:
    """One rated item on one rubric dimension."""

    task_id: str
    item_id: str  # e.g. "render:17" or "entry:5"
    dimension: str
    judge: float
    experts: tuple[float, ...]  # one score per expert who rated the item

    def __post_init__(self) -> None:
        if not self.experts:
            raise ValueError(f"{self.item_id}/{self.dimension}: a pair needs at least one expert score")
        if not all(math.isfinite(v) for v in (self.judge, *self.experts)):
            raise ValueError(f"{self.item_id}/{self.dimension}: scores must be finite numbers")


@dataclass(frozen=True)
class Interval:
    value: float | None
    low: float | None
    high: float | None
    n_items: int  # observations the value is computed on (for "overall": item × dimension pairs)
    n_tasks: int  # tasks those observations come from, i.e. the clusters resampled


@dataclass(frozen=True)
class Agreement:
    dimension: str  # a dimension name or "overall" (all dimensions pooled)
    spearman: Interval  # judge vs mean of experts
    kendall_tau_b: Interval
    mae: Interval  # |judge − mean of experts|
    within_1: Interval  # share of items with |judge − mean of experts| <= 1
    expert_ceiling: Interval  # Spearman between the first two experts, on items with >= 2 experts


@dataclass(frozen=True)
class ChecklistLabel:
    task_id: str
    item_id: str
    checkpoint: str
    judge: int  # 0/1
    experts: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.experts:
            raise ValueError(f"{self.item_id}/{self.checkpoint}: a label needs at least one expert label")
        if not {self.judge, *self.experts} <= {0, 1}:
            raise ValueError(f"{self.item_id}/{self.checkpoint}: checklist labels are 0 or 1")


@dataclass(frozen=True)
class ChecklistAgreement:  # positive class = "met" (1)
    accuracy: Interval
    precision: Interval
    recall: Interval
    f1: Interval


# --- the shared resampler -------------------------------------------------------------------


def task_bootstrap(
    values_by_task: dict[str, list],
    statistic: Statistic,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float | None, float | None]:
    """Percentile interval of `statistic` under a cluster bootstrap: draw tasks with replacement and
    pass the drawn tasks' values, concatenated into one numpy array, to `statistic`.
    scipy.stats.bootstrap resamples observations one by one and cannot keep a task's items
    together, hence this explicit loop."""
    _check_options(resamples, confidence)
    clusters = _clusters(values_by_task)
    if len(clusters) < 2:
        return None, None  # every resample is the same task: a zero-width interval would overstate certainty
    draws = np.random.default_rng(seed).integers(0, len(clusters), size=(resamples, len(clusters)))
    estimates = [_finite(statistic(np.concatenate([clusters[i] for i in row]))) for row in draws]
    kept = [e for e in estimates if e is not None]  # undefined resamples say nothing about the spread
    if 2 * len(kept) < resamples:
        return None, None  # mostly undefined: the surviving resamples are a biased subset
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(kept, [tail, 100 - tail])
    return float(low), float(high)


def _clusters(values_by_task: dict[str, list]) -> list[np.ndarray]:
    """One array per non-empty task, in task-id order so that a seed always draws the same tasks;
    converted once here rather than in every resample."""
    return [np.asarray(values_by_task[t]) for t in sorted(values_by_task) if len(values_by_task[t])]


def _check_options(resamples: int, confidence: float) -> None:
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie strictly between 0 and 1")


def _finite(value: float | None) -> float | None:
    """None for undefined results; scipy reports them as NaN."""
    return None if value is None or not math.isfinite(value) else float(value)


def _estimate(values_by_task: dict[str, list], statistic: Statistic, **options: Any) -> Interval:
    """Point value on all items plus its task-bootstrap interval (only when the value is defined)."""
    clusters = _clusters(values_by_task)
    value = _finite(statistic(np.concatenate(clusters))) if clusters else None
    low, high = task_bootstrap(values_by_task, statistic, **options) if value is not None else (None, None)
    return Interval(value, low, high, sum(len(c) for c in clusters), len(clusters))


def _by_task(records: Iterable[Any], row: Callable[[Any], Any]) -> dict[str, list]:
    grouped: dict[str, list] = defaultdict(list)
    for r in records:
        grouped[r.task_id].append(row(r))
    return dict(grouped)


# --- rubric scores ----------------------------------------------------------------------------


def _columns(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(judge, reference) columns of an (n, 2) array."""
    table = np.asarray(rows, dtype=float).reshape(-1, 2)
    return table[:, 0], table[:, 1]


def _correlatable(x: np.ndarray, y: np.ndarray) -> bool:
    # a constant column has no ranking; scipy would warn and return NaN
    return len(x) >= MIN_ITEMS and np.ptp(x) > 0 and np.ptp(y) > 0


def _spearman(rows: np.ndarray) -> float | None:
    x, y = _columns(rows)
    return float(stats.spearmanr(x, y).statistic) if _correlatable(x, y) else None


def _kendall_tau_b(rows: np.ndarray) -> float | None:
    x, y = _columns(rows)
    return float(stats.kendalltau(x, y, variant="b").statistic) if _correlatable(x, y) else None


def _mae(rows: np.ndarray) -> float | None:
    x, y = _columns(rows)
    return float(np.mean(np.abs(x - y))) if len(x) >= MIN_ITEMS else None


def _within_1(rows: np.ndarray) -> float | None:
    x, y = _columns(rows)
    return float(np.mean(np.abs(x - y) <= WITHIN + TOLERANCE)) if len(x) >= MIN_ITEMS else None


def _agreement(dimension: str, pairs: list[Pair], **options: Any) -> Agreement:
    scores = _by_task(pairs, lambda p: (p.judge, fmean(p.experts)))
    experts = _by_task([p for p in pairs if len(p.experts) >= 2], lambda p: p.experts[:2])
    return Agreement(
        dimension,
        spearman=_estimate(scores, _spearman, **options),
        kendall_tau_b=_estimate(scores, _kendall_tau_b, **options),
        mae=_estimate(scores, _mae, **options),
        within_1=_estimate(scores, _within_1, **options),
        expert_ceiling=_estimate(experts, _spearman, **options),
    )


def agreement(pairs: Sequence[Pair], *, resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> list[Agreement]:
    """One Agreement per dimension present (sorted by name), then "overall" (all dimensions pooled)."""
    _check_options(resamples, confidence)
    dimensions = sorted({p.dimension for p in pairs})
    if OVERALL in dimensions:
        raise ValueError(f'"{OVERALL}" is reserved for the pooled row and cannot be a dimension name')
    options = {"resamples": resamples, "confidence": confidence, "seed": seed}
    rows = [_agreement(d, [p for p in pairs if p.dimension == d], **options) for d in dimensions]
    return rows + [_agreement(OVERALL, list(pairs), **options)]


# --- checklist labels -------------------------------------------------------------------------


def majority(labels: Sequence[int]) -> int:
    """1 only when a strict majority says "met"; a tie is 0, as in the judge ensemble."""
    return int(2 * sum(labels) > len(labels))


def _confusion(rows: np.ndarray) -> tuple[int, int, int, int]:
    """(true positives, false positives, false negatives, true negatives) for (judge, reference) rows."""
    table = np.asarray(rows, dtype=int).reshape(-1, 2)
    judge, reference = table[:, 0] == 1, table[:, 1] == 1
    cells = (judge & reference, judge & ~reference, ~judge & reference, ~judge & ~reference)
    tp, fp, fn, tn = (int(np.sum(c)) for c in cells)
    return tp, fp, fn, tn


def _accuracy(rows: np.ndarray) -> float | None:
    tp, _, _, tn = _confusion(rows)
    return (tp + tn) / len(rows) if len(rows) >= MIN_ITEMS else None


def _precision(rows: np.ndarray) -> float | None:
    tp, fp, _, _ = _confusion(rows)
    return tp / (tp + fp) if len(rows) >= MIN_ITEMS and tp + fp else None  # nothing predicted "met": undefined


def _recall(rows: np.ndarray) -> float | None:
    tp, _, fn, _ = _confusion(rows)
    return tp / (tp + fn) if len(rows) >= MIN_ITEMS and tp + fn else None  # nothing truly "met": undefined


def _f1(rows: np.ndarray) -> float | None:
    if _precision(rows) is None or _recall(rows) is None:
        return None  # F1 needs both; 2TP/(2TP+FP+FN) is then well defined (0 when TP = 0)
    tp, fp, fn, _ = _confusion(rows)
    return 2 * tp / (2 * tp + fp + fn)


def checklist_agreement(
    labels: Sequence[ChecklistLabel], *, resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> ChecklistAgreement:
    """Judge labels against the expert majority, each figure with its task-bootstrap interval."""
    _check_options(resamples, confidence)
    rows = _by_task(labels, lambda label: (label.judge, majority(label.experts)))
    options = {"resamples": resamples, "confidence": confidence, "seed": seed}
    return ChecklistAgreement(*(_estimate(rows, s, **options) for s in (_accuracy, _precision, _recall, _f1)))


# --- agreement between people -----------------------------------------------------------------

LEVELS = ("nominal", "ordinal", "interval", "ratio")
SCALE_1_5 = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Rating:
    """One person's score of one unit: an item (a prompt or an image) on one rubric dimension."""

    task_id: str
    item_id: str
    dimension: str
    rater: str
    score: float


@dataclass(frozen=True)
class PeopleAgreement:
    group: str  # a category, or "overall"
    n_items: int  # items rated by at least two people: only these carry information about agreement
    n_raters: int
    alpha: Interval  # Krippendorff's α over item × dimension units (n_items there counts units)
    ceiling: Interval  # Spearman between the first two raters (by name) of each unit rated twice or more


def krippendorff_alpha(matrix: Any, *, level: str = "ordinal", value_domain: Sequence[float] | None = None) -> float | None:
    """α of a raters × units matrix (NaN where a rater did not rate a unit), computed by the
    krippendorff package. None when undefined: fewer than MIN_ITEMS units rated by two or more,
    or one single value throughout those units (no disagreement can be expected)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    data = np.asarray(matrix, dtype=float)
    if data.ndim != 2:
        raise ValueError("expected a two-dimensional raters × units matrix")
    pairable = data[:, np.sum(~np.isnan(data), axis=0) >= 2]
    values = pairable[~np.isnan(pairable)]
    if pairable.shape[1] < MIN_ITEMS or np.ptp(values) == 0:
        return None
    domain = None if value_domain is None else list(value_domain)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _finite(krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=domain))


def _units_by_task(ratings: Sequence[Rating]) -> dict[str, list[np.ndarray]]:
    """Per task, one column per unit: the raters' scores in rater-name order, NaN where missing."""
    raters = {name: i for i, name in enumerate(sorted({r.rater for r in ratings}))}
    columns: dict[tuple[str, str, str], np.ndarray] = {}
    for r in ratings:
        column = columns.setdefault((r.task_id, r.item_id, r.dimension), np.full(len(raters), np.nan))
        if not np.isnan(column[raters[r.rater]]):
            raise ValueError(f"{r.item_id}/{r.dimension}: {r.rater} rated it twice")
        if not math.isfinite(r.score):
            raise ValueError(f"{r.item_id}/{r.dimension}: scores must be finite numbers")
        column[raters[r.rater]] = r.score
    grouped: dict[str, list[np.ndarray]] = defaultdict(list)
    for (task_id, _, _), column in sorted(columns.items(), key=lambda kv: kv[0]):
        grouped[task_id].append(column)
    return dict(grouped)


def first_two(column: np.ndarray) -> tuple[float, float]:
    """The scores of the first two raters (in rater-name order) who rated this unit (it has at least two)."""
    present = column[~np.isnan(column)]
    return float(present[0]), float(present[1])


def people_agreement(
    ratings: Sequence[Rating],
    *,
    group: str = OVERALL,
    level: str = "ordinal",
    value_domain: Sequence[float] | None = SCALE_1_5,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PeopleAgreement:
    """Krippendorff's α and the Spearman ceiling of one group of ratings, each with its task-bootstrap interval."""
    _check_options(resamples, confidence)
    # Units rated once are not pairable: they change neither figure, so they are left out of the counts too.
    units = {t: kept for t, cols in _units_by_task(ratings).items() if (kept := [c for c in cols if np.sum(~np.isnan(c)) >= 2])}
    pairs = {t: [first_two(c) for c in cols] for t, cols in units.items()}
    options = {"resamples": resamples, "confidence": confidence, "seed": seed}

    def alpha(columns: np.ndarray) -> float | None:  # the drawn units, one per row: the package wants raters as rows
        return krippendorff_alpha(np.asarray(columns).T, level=level, value_domain=value_domain)

    raters_of_item = Counter(item for item, _ in {(r.item_id, r.rater) for r in ratings})
    return PeopleAgreement(
        group,
        n_items=sum(1 for n in raters_of_item.values() if n >= 2),
        n_raters=len({r.rater for r in ratings}),
        alpha=_estimate(units, alpha, **options),
        ceiling=_estimate(pairs, _spearman, **options),
    )

