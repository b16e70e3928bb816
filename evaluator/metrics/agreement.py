"""How well the automatic judge agrees with human expert raters.

Rubric scores (integers 1–5 per dimension) are compared with the mean of the experts who rated
the same item: Spearman ρ, Kendall τ-b, mean absolute error and the share of items within one
point. Checklist labels (0/1) are compared with the expert majority (ties count as "not met",
the same rule as the judge ensemble): accuracy, precision, recall and F1 for the class "met".

The judge against the experts' ceiling, like with like (judge_against_experts): a mean of experts
is less noisy than any one expert, so the judge against the mean beside one expert against another
favours the judge. Both figures are therefore one rater against one other rater, on the same units
(an item on one dimension, rated by at least two experts and judged): Spearman between the judge
and each expert, averaged over the experts, beside Spearman between two experts, averaged over the
pairs of experts; both on the same bootstrap draws.

Agreement between people, without the judge (people_agreement): Krippendorff's α from the
`krippendorff` package (ordinal by default) on a raters × units matrix, a unit being one item on
one dimension and a missing rating NaN; and the expert–expert ceiling, Spearman between the first
two raters of each unit in rater-name order.

Rules shared by every figure:
- a statistic that is undefined (fewer than 3 items, constant input to a correlation, nothing
  predicted or nothing true for precision/recall) is None, never NaN, and so are its bounds;
- intervals are percentile intervals (95 % by default) of a cluster bootstrap over tasks (items of
  one task are not independent, so a task's items are always drawn together);
- an interval is given only from at least MIN_TASKS_FOR_INTERVAL (10) tasks, hence at least 10
  items; below that the bounds are None and the note says "too few items for an interval". In a
  simulation (two raters, 1–5 scores, population ρ ≈ 0.59, 400 runs) the task bootstrap's 95 %
  interval covered the true ρ 90–95 % of the time from 8–10 tasks on, but 75–90 % with 5 tasks and
  23 % with 3: below 10 tasks the interval would claim more certainty than it has;
- resamples in which the statistic is undefined are dropped; if fewer than half are defined the
  bounds are None;
- the same seed gives the same numbers.

Cost: each resample computes each figure once. Spearman, Kendall's tau-b and Pearson are computed here with numpy
(equal to scipy's to 1e-12, tests/test_agreement_fast.py) rather than by scipy, whose checks cost about 0.3 ms a call
whatever the size (tau-b asks scipy only past PAIRWISE_MAX items with many distinct values on both sides): one rubric
row of a few hundred items at 1000 resamples takes about 0.3 s (bench/agreement.py).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import fmean
from typing import Any

import krippendorff
import numpy as np
from scipy import stats

OVERALL = "overall"
MIN_ITEMS = 3  # below this no statistic here is reported: a correlation of two points is always ±1
MIN_TASKS_FOR_INTERVAL = 10  # below this the percentile interval under-covers (see the module docstring)
TOO_FEW_FOR_INTERVAL = "too few items for an interval"
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
    note: str = ""  # why a defined value has no interval: TOO_FEW_FOR_INTERVAL


@dataclass(frozen=True)
class Agreement:
    dimension: str  # a dimension name or "overall" (all dimensions pooled)
    spearman: Interval  # judge vs mean of experts
    kendall_tau_b: Interval
    mae: Interval  # |judge − mean of experts|
    within_1: Interval  # share of items with |judge − mean of experts| <= 1


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
    values_by_task: dict[str, list], statistic: Statistic, *, resamples: int = 1000, confidence: float = 0.95, seed: int = 0
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


def _estimate(
    values_by_task: dict[str, list], statistic: Statistic, *, min_tasks: int = MIN_TASKS_FOR_INTERVAL, **options: Any
) -> Interval:
    """Point value on all items plus its task-bootstrap interval: only when the value is defined, and
    only from at least `min_tasks` tasks (otherwise the note says why there is none)."""
    clusters = _clusters(values_by_task)
    n_items, n_tasks = sum(len(c) for c in clusters), len(clusters)
    value = _finite(statistic(np.concatenate(clusters))) if clusters else None
    if value is None:
        return Interval(None, None, None, n_items, n_tasks)
    if n_tasks < min_tasks:
        return Interval(value, None, None, n_items, n_tasks, TOO_FEW_FOR_INTERVAL)
    low, high = task_bootstrap(values_by_task, statistic, **options)
    return Interval(value, low, high, n_items, n_tasks)


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
    """Spearman's rho as scipy.stats.spearmanr gives it (Pearson's r of average ranks), without its per-call checks:
    a bootstrap calls it thousands of times (tests/test_agreement_fast.py holds it to scipy's value)."""
    x, y = _columns(rows)
    if not _correlatable(x, y):
        return None
    rx, ry = _average_ranks(x), _average_ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float(np.dot(rx, ry) / math.sqrt(np.dot(rx, rx) * np.dot(ry, ry)))


def _average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties given their mean rank (scipy.stats.rankdata's 'average', by the same steps)."""
    order = np.argsort(a, kind="mergesort")
    inverse = np.empty(len(a), dtype=np.intp)
    inverse[order] = np.arange(len(a))
    ordered = a[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    dense = np.cumsum(starts)[inverse]
    bounds = np.r_[np.nonzero(starts)[0], len(a)]
    return 0.5 * (bounds[dense] + bounds[dense - 1] + 1)


TABLE_MAX = 4096  # distinct x values times distinct y values up to which Kendall's tau-b is counted on their table
PAIRWISE_MAX = 150  # items up to which it is otherwise counted over all pairs at once (n x n; scipy is faster above)
PROBE = 256  # items whose distinct values are counted first when there are more


def _kendall_tau_b(rows: np.ndarray) -> float | None:
    """Kendall's tau-b as scipy.stats.kendalltau(variant="b") gives it, without its per-call checks (a bootstrap calls it
    thousands of times). Scores here take few distinct values (1-5, means of a few experts), so the pairs are counted on
    the table of distinct x by distinct y values (O(n log n + table)); many distinct values on both sides are counted over
    all pairs with numpy up to PAIRWISE_MAX items, and by scipy above."""
    x, y = _columns(rows)
    if not _correlatable(x, y):
        return None
    # The first PROBE items' distinct values bound the table's size from below: many there, and no sort of all is wasted.
    if len(x) <= PROBE or len(np.unique(x[:PROBE])) * len(np.unique(y[:PROBE])) <= TABLE_MAX:
        xs, xi = np.unique(x, return_inverse=True)
        ys, yi = np.unique(y, return_inverse=True)
        if len(xs) * len(ys) <= TABLE_MAX:
            return _tau_b_table(np.bincount(xi * len(ys) + yi, minlength=len(xs) * len(ys)).reshape(len(xs), len(ys)))
    if len(x) > PAIRWISE_MAX:
        return float(stats.kendalltau(x, y, variant="b").statistic)
    upper = np.triu_indices(len(x), 1)
    dx, dy = np.sign(np.subtract.outer(x, x)[upper]), np.sign(np.subtract.outer(y, y)[upper])
    return float(np.dot(dx, dy) / math.sqrt(np.count_nonzero(dx) * np.count_nonzero(dy)))


def _tau_b_table(table: np.ndarray) -> float:
    """Tau-b from the counts of each (x value, y value) cell, both in ascending order: a pair of items is concordant
    when the second lies in a later row and a later column, discordant when in a later row and an earlier column. Exact
    integer counts, then scipy's own expression, so the value is scipy's to the last bit."""
    later_rows = np.zeros_like(table)  # [i, j]: items in rows after i, column j
    later_rows[:-1] = np.cumsum(table[::-1], axis=0)[::-1][1:]
    after = np.zeros_like(table)  # ... and in a column after j
    after[:, :-1] = np.cumsum(later_rows[:, ::-1], axis=1)[:, ::-1][:, 1:]
    before = np.zeros_like(table)  # ... and in a column before j
    before[:, 1:] = np.cumsum(later_rows, axis=1)[:, :-1]
    con_minus_dis = int(np.sum(table * (after - before)))
    n = int(table.sum())
    tot = n * (n - 1) // 2
    xtie, ytie = (int(np.sum(t * (t - 1) // 2)) for t in (table.sum(axis=1), table.sum(axis=0)))
    tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
    return float(min(1.0, max(-1.0, tau)))


def _mae(rows: np.ndarray) -> float | None:
    x, y = _columns(rows)
    return float(np.mean(np.abs(x - y))) if len(x) >= MIN_ITEMS else None


def _within_1(rows: np.ndarray) -> float | None:
    x, y = _columns(rows)
    return float(np.mean(np.abs(x - y) <= WITHIN + TOLERANCE)) if len(x) >= MIN_ITEMS else None


def _agreement(dimension: str, pairs: list[Pair], **options: Any) -> Agreement:
    scores = _by_task(pairs, lambda p: (p.judge, fmean(p.experts)))
    return Agreement(
        dimension,
        spearman=_estimate(scores, _spearman, **options),
        kendall_tau_b=_estimate(scores, _kendall_tau_b, **options),
        mae=_estimate(scores, _mae, **options),
        within_1=_estimate(scores, _within_1, **options),
    )


def agreement(
    pairs: Sequence[Pair], *, resamples: int = 1000, confidence: float = 0.95, seed: int = 0, min_tasks: int = MIN_TASKS_FOR_INTERVAL
) -> list[Agreement]:
    """One Agreement per dimension present (sorted by name), then "overall" (all dimensions pooled)."""
    _check_options(resamples, confidence)
    dimensions = sorted({p.dimension for p in pairs})
    if OVERALL in dimensions:
        raise ValueError(f'"{OVERALL}" is reserved for the pooled row and cannot be a dimension name')
    options = {"resamples": resamples, "confidence": confidence, "seed": seed, "min_tasks": min_tasks}
    rows = [_agreement(d, [p for p in pairs if p.dimension == d], **options) for d in dimensions]
    return rows + [_agreement(OVERALL, list(pairs), **options)]


# --- a prediction against what was observed ----------------------------------------------------


@dataclass(frozen=True)
class Prediction:
    task_id: str  # the cluster: a task's items are drawn together
    category: str
    predicted: float
    observed: float


def _pearson(rows: np.ndarray) -> float | None:
    """Pearson's r by scipy.stats.pearsonr's steps (centred, scaled by the largest deviation before the norm, clipped to
    [-1, 1]), without its per-call checks."""
    x, y = _columns(rows)
    if not _correlatable(x, y):
        return None
    xm, ym = x - x.mean(), y - y.mean()
    normxm, normym = (np.abs(d).max() * np.linalg.norm(d / np.abs(d).max()) for d in (xm, ym))
    return float(np.clip(np.dot(xm / normxm, ym / normym), -1.0, 1.0))


def prediction_agreement(
    items: Sequence[Prediction], *, resamples: int = 1000, confidence: float = 0.95, seed: int = 0, min_tasks: int = MIN_TASKS_FOR_INTERVAL
) -> list[tuple[str, Interval, Interval]]:
    """(group, Pearson r, Kendall τ-b) of predicted against observed values: per category present (sorted), then
    "overall" (all items); intervals by the task bootstrap, under the rules of this module."""
    _check_options(resamples, confidence)
    options = {"resamples": resamples, "confidence": confidence, "seed": seed, "min_tasks": min_tasks}
    groups = [(c, [i for i in items if i.category == c]) for c in sorted({i.category for i in items})] + [(OVERALL, list(items))]
    out = []
    for name, group in groups:
        rows = _by_task(group, lambda i: (i.predicted, i.observed))
        out.append((name, _estimate(rows, _pearson, **options), _estimate(rows, _kendall_tau_b, **options)))
    return out


def prediction_document(predictor: str, submissions: int, items: Sequence[Prediction], resamples: int = 1000) -> dict:
    """prediction_agreement as the board's release and /judge/ carry it, on the items in one canonical order (so the
    task bootstrap draws the same tasks whichever order the items were gathered in)."""
    ordered = sorted(items, key=lambda i: (i.task_id, i.category, i.predicted, i.observed))
    rows = prediction_agreement(ordered, resamples=resamples) if ordered else []
    return {
        "predictor": predictor,
        "submissions": submissions,
        "rows": [{"group": name, "pearson": asdict(pearson), "kendall": asdict(kendall)} for name, pearson, kendall in rows],
    }


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
    labels: Sequence[ChecklistLabel],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    min_tasks: int = MIN_TASKS_FOR_INTERVAL,
) -> ChecklistAgreement:
    """Judge labels against the expert majority, each figure with its task-bootstrap interval."""
    _check_options(resamples, confidence)
    rows = _by_task(labels, lambda label: (label.judge, majority(label.experts)))
    options = {"resamples": resamples, "confidence": confidence, "seed": seed, "min_tasks": min_tasks}
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


def _unit_columns(ratings: Sequence[Rating]) -> dict[tuple[str, str, str], np.ndarray]:
    """One column per (task, item, dimension) unit: the raters' scores in rater-name order, NaN where missing."""
    raters = {name: i for i, name in enumerate(sorted({r.rater for r in ratings}))}
    columns: dict[tuple[str, str, str], np.ndarray] = {}
    for r in ratings:
        column = columns.setdefault((r.task_id, r.item_id, r.dimension), np.full(len(raters), np.nan))
        if not np.isnan(column[raters[r.rater]]):
            raise ValueError(f"{r.item_id}/{r.dimension}: {r.rater} rated it twice")
        if not math.isfinite(r.score):
            raise ValueError(f"{r.item_id}/{r.dimension}: scores must be finite numbers")
        column[raters[r.rater]] = r.score
    return columns


def _units_by_task(ratings: Sequence[Rating]) -> dict[str, list[np.ndarray]]:
    """Per task, one column per unit (in unit order): the raters' scores in rater-name order, NaN where missing."""
    grouped: dict[str, list[np.ndarray]] = defaultdict(list)
    for (task_id, _, _), column in sorted(_unit_columns(ratings).items(), key=lambda kv: kv[0]):
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
    min_tasks: int = MIN_TASKS_FOR_INTERVAL,
) -> PeopleAgreement:
    """Krippendorff's α and the Spearman ceiling of one group of ratings, each with its task-bootstrap interval."""
    _check_options(resamples, confidence)
    # Units rated once are not pairable: they change neither figure, so they are left out of the counts too.
    units = {t: kept for t, cols in _units_by_task(ratings).items() if (kept := [c for c in cols if np.sum(~np.isnan(c)) >= 2])}
    pairs = {t: [first_two(c) for c in cols] for t, cols in units.items()}
    options = {"resamples": resamples, "confidence": confidence, "seed": seed, "min_tasks": min_tasks}

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


# --- the judge beside the experts, like with like -----------------------------------------------


@dataclass(frozen=True)
class LikeForLike:
    group: str  # a category, or "overall"
    judge_expert: Interval  # Spearman of the judge with one expert, averaged over the experts
    expert_expert: Interval  # Spearman of one expert with another, averaged over the pairs of experts
    n_experts: int  # experts who rated at least one of the units (n_items of either figure counts the units)


def _present_spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman of two raters on the units both rated (None when fewer than MIN_ITEMS or constant)."""
    both = ~np.isnan(x) & ~np.isnan(y)
    return _spearman(np.column_stack((x[both], y[both])))


def _mean_of_pairs(rows: np.ndarray, pairs: Iterable[tuple[int, int]]) -> float | None:
    """Mean Spearman over the rater pairs (columns of `rows`, one row per unit) whose correlation is defined."""
    found = [rho for a, b in pairs if (rho := _present_spearman(rows[:, a], rows[:, b])) is not None]
    return fmean(found) if found else None


def _judge_with_each(rows: np.ndarray) -> float | None:  # column 0 is the judge
    return _mean_of_pairs(rows, ((0, e) for e in range(1, rows.shape[1])))


def _expert_with_expert(rows: np.ndarray) -> float | None:
    return _mean_of_pairs(rows, ((a, b) for a in range(1, rows.shape[1]) for b in range(a + 1, rows.shape[1])))


def judge_against_experts(
    ratings: Sequence[Rating],
    judge: Mapping[tuple[str, str], float],
    *,
    group: str = OVERALL,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    min_tasks: int = MIN_TASKS_FOR_INTERVAL,
) -> LikeForLike:
    """The judge against each expert (averaged over experts) beside expert against expert (averaged over pairs), on
    the units rated by at least two experts that the judge scored (`judge` maps (item_id, dimension) to its score).
    Both figures are computed on the same task-bootstrap draws: the same seed draws the same tasks for both."""
    _check_options(resamples, confidence)
    units: dict[str, list[np.ndarray]] = defaultdict(list)
    for (task_id, item_id, dimension), column in sorted(_unit_columns(ratings).items(), key=lambda kv: kv[0]):
        if np.sum(~np.isnan(column)) >= 2 and (item_id, dimension) in judge:
            units[task_id].append(np.concatenate(([float(judge[(item_id, dimension)])], column)))
    raters = sorted({r.rater for r in ratings})
    used = np.concatenate([np.asarray(cols) for cols in units.values()]) if units else np.empty((0, 1 + len(raters)))
    options = {"resamples": resamples, "confidence": confidence, "seed": seed, "min_tasks": min_tasks}
    return LikeForLike(
        group,
        judge_expert=_estimate(dict(units), _judge_with_each, **options),
        expert_expert=_estimate(dict(units), _expert_with_expert, **options),
        n_experts=int(np.sum(np.any(~np.isnan(used[:, 1:]), axis=0))),
    )
