"""Board statistics over per-task scores: rank ranges, adjacent comparisons, win rates and length control.

Input everywhere is `scores[entry][task_id] = task score (0-100)` with `categories[task_id]`. An entry's
score is the board's: the mean over its tasks within each category, then the mean over categories (macro).

- rank_ranges: each entry's score interval (the macro Student t interval, whose coverage
  tests/test_interval_coverage.py measures), its rank as 1 + the entries whose interval lies wholly above (LMArena's
  rule) and its range up to the entries less those wholly below, so a rank always lies inside its own range. Below
  MIN_TASKS_FOR_INTERVAL tasks in a category: the rank by score, and no interval or range.
- adjacent_tests: for each pair of neighbours in the ranking, a paired permutation test over their common tasks
  (scipy.stats.permutation_test, swapping the two entries' scores within a task), Holm-corrected across the
  board (statsmodels).
- win_rates: ECHO's pseudo-pairwise view: per common task a win, tie or loss on the task score.
- length_effect: per category, OLS of task score on entry (fixed effects), log prompt length and whether the
  prompt is written as a list (fitted within entries; the tests check it against statsmodels' dummy regression),
  the length coefficient with its 95 % interval, and each entry's score predicted at the category's mean
  log length (the length-controlled score), in the spirit of LMArena's style control.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .aggregate import MIN_TASKS_FOR_INTERVAL

Scores = dict[str, dict[str, float]]


def board_score(by_task: dict[str, float], categories: dict[str, str]) -> float | None:
    """Macro mean: per category the mean over the entry's tasks, then the mean over categories."""
    per_category: dict[str, list[float]] = defaultdict(list)
    for task, value in by_task.items():
        per_category[categories[task]].append(value)
    means = [float(np.mean(v)) for v in per_category.values() if v]
    return float(np.mean(means)) if means else None


@dataclass(frozen=True)
class RankRange:
    entry: str
    score: float
    low: float | None  # the score's 95 % interval (macro Student t over each category's tasks); None: too few tasks
    high: float | None
    rank: int  # 1 + entries whose interval lies wholly above this one's (LMArena's rule); by score alone without intervals
    rank_high: int | None  # the worst rank the intervals allow: entries less those wholly below; None without intervals


def macro_ci(
    by_task: dict[str, float], categories: dict[str, str], minimum: int = MIN_TASKS_FOR_INTERVAL
) -> tuple[float | None, float | None]:
    """The 95 % interval of the macro mean: per category the mean's variance s²/n, summed and divided by the number of
    categories squared, with Student's t on the smallest category's degrees of freedom (conservative). None below
    `minimum` tasks in any category (tests/test_interval_coverage.py measures its coverage)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for task, value in by_task.items():
        groups[categories[task]].append(value)
    if not groups or min(len(v) for v in groups.values()) < minimum:
        return None, None
    variance = sum(float(np.var(v, ddof=1)) / len(v) for v in groups.values()) / len(groups) ** 2
    centre = float(np.mean([np.mean(v) for v in groups.values()]))
    half = float(stats.t.ppf(0.975, min(len(v) for v in groups.values()) - 1)) * math.sqrt(variance)
    return centre - half, centre + half


def rank_ranges(scores: Scores, categories: dict[str, str], minimum: int = MIN_TASKS_FOR_INTERVAL) -> list[RankRange]:
    """Each entry's score with its interval, rank and rank range, built so the rank lies inside its range: the rank
    is 1 + the entries whose interval lies wholly above (none can be worse placed than that), the range ends at the
    number of entries less those wholly below. Where any category has too few tasks for an interval, the rank is by
    score alone (ties share the best) and no range is given."""
    entries = sorted(scores)
    observed = {e: board_score(scores[e], categories) for e in entries}
    bounds = {e: macro_ci(scores[e], categories, minimum) for e in entries}
    out = []
    for e in entries:
        low, high = bounds[e]
        if low is None or high is None or any(b[0] is None for b in bounds.values()):
            rank = 1 + sum(observed[o] > observed[e] for o in entries)
            out.append(RankRange(e, observed[e], None, None, rank, None))
            continue
        above = sum(bounds[o][0] > high for o in entries if o != e)
        below = sum(bounds[o][1] < low for o in entries if o != e)
        out.append(RankRange(e, observed[e], low, high, 1 + above, len(entries) - below))
    return sorted(out, key=lambda r: (-r.score, r.entry))


def best_possible_p(tasks: int, resamples: int) -> float:
    """The smallest two-sided p an exact sign-flip test over `tasks` paired tasks can give (2 / 2^n; with more
    arrangements than resamples, scipy draws them at random and the floor is 1 / (resamples + 1))."""
    return 2.0 / 2**tasks if 2**tasks <= resamples + 1 else 1.0 / (resamples + 1)


@dataclass(frozen=True)
class Comparison:
    upper: str
    lower: str
    difference: float | None  # upper − lower, macro mean of the per-category mean paired differences
    tasks: int  # common tasks
    p_value: float | None
    p_holm: float | None
    separated: bool  # Holm-corrected p < alpha


def adjacent_tests(
    scores: Scores, categories: dict[str, str], order: list[str], alpha: float = 0.05, resamples: int = 9999, seed: int = 0
) -> list[Comparison]:
    from statsmodels.stats.multitest import multipletests

    raw = []
    for upper, lower in zip(order, order[1:]):
        common = sorted(set(scores[upper]) & set(scores[lower]))
        a, b = np.array([scores[upper][t] for t in common]), np.array([scores[lower][t] for t in common])
        labels = np.array([categories[t] for t in common])

        def macro_difference(x, y, axis=-1, labels=labels):
            return np.mean([np.mean(x[..., labels == c] - y[..., labels == c], axis=axis) for c in np.unique(labels)], axis=0)

        p = None
        if len(common) >= 2 and np.any(a != b):
            test = stats.permutation_test(
                (a, b),
                macro_difference,
                permutation_type="samples",
                vectorized=True,
                n_resamples=resamples,
                rng=np.random.default_rng(seed),
            )
            p = float(test.pvalue)
        raw.append((upper, lower, float(macro_difference(a, b)) if common else None, len(common), p))
    tested = [i for i, row in enumerate(raw) if row[4] is not None]
    holm = multipletests([raw[i][4] for i in tested], alpha=alpha, method="holm")[1] if tested else []
    corrected = dict(zip(tested, (float(p) for p in holm)))
    return [Comparison(u, low, d, n, p, corrected.get(i), corrected.get(i, 1.0) < alpha) for i, (u, low, d, n, p) in enumerate(raw)]


@dataclass(frozen=True)
class WinRecord:
    wins: int
    ties: int
    losses: int

    @property
    def rate(self) -> float | None:
        total = self.wins + self.ties + self.losses
        return (self.wins + 0.5 * self.ties) / total if total else None


def win_rates(
    scores: Scores, tie_margin: float = 0.0, pairs_for: list[str] | None = None
) -> tuple[dict[str, WinRecord], dict[tuple[str, str], WinRecord]]:
    """(each entry against the field, each ordered pair among `pairs_for` (default: every entry)): per common task a
    win when the score is higher by more than tie_margin, a tie within it; ties count half in the rate. The field
    record counts, per task, the other entries below, level with and above this one (sorted search: O(T·N log N))."""
    by_task: dict[str, list[float]] = defaultdict(list)
    for by_entry in scores.values():
        for task, value in by_entry.items():
            by_task[task].append(value)
    ordered = {task: np.sort(np.asarray(values)) for task, values in by_task.items()}
    field = {}
    for entry, by_entry in scores.items():
        wins = ties = losses = 0
        for task, value in by_entry.items():
            column = ordered[task]
            below = int(np.searchsorted(column, value - tie_margin, side="left"))
            above = len(column) - int(np.searchsorted(column, value + tie_margin, side="right"))
            wins, losses, ties = wins + below, losses + above, ties + len(column) - below - above - 1  # itself is level
        field[entry] = WinRecord(wins, ties, losses)
    chosen = list(scores) if pairs_for is None else pairs_for
    pairs = {}
    for a in chosen:
        for b in chosen:
            if a != b:
                diffs = [scores[a][t] - scores[b][t] for t in set(scores[a]) & set(scores[b])]
                pairs[(a, b)] = WinRecord(
                    sum(d > tie_margin for d in diffs), sum(abs(d) <= tie_margin for d in diffs), sum(d < -tie_margin for d in diffs)
                )
    return field, pairs


@dataclass(frozen=True)
class LengthEffect:
    category: str
    coefficient: float  # points of task score per unit of log(prompt length in words)
    low: float
    high: float
    n: int
    controlled: dict[str, float]  # entry -> score predicted at the category's mean log length (and mean list share)
    list_coefficient: float | None = None  # points for a prompt written as a list (None: not fitted here)
    list_low: float | None = None
    list_high: float | None = None


_LIST_LINE = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+", re.MULTILINE)


def list_formatted(prompt: str) -> bool:
    """Whether a prompt is written as a list rather than prose: bulleted or numbered lines, or a tag list (at least
    four comma-separated fragments, most of them three words or fewer, as in "masterpiece, best quality, 8k")."""
    if len(_LIST_LINE.findall(prompt)) >= 2:
        return True
    fragments = [f.split() for f in re.split(r"[,;\n]", prompt) if f.strip()]
    return len(fragments) >= 4 and sum(len(f) <= 3 for f in fragments) > len(fragments) / 2


# Style control is fitted in a category only where it is identified: at least MIN_TASKS_FOR_INTERVAL tasks, at least
# MIN_STYLE_DOF residual degrees of freedom (t's 97.5 % point is then within 7 % of the normal's, so an interval is
# not inflated by the last few rows) and prompt lengths that vary within entries by at least MIN_LENGTH_SPREAD in log
# words (about 10 %), else the slope is read off noise. A fit with 1-2 residual degrees of freedom gave OE -113
# [-2062, 1835]: never again.
MIN_STYLE_DOF = 20
MIN_LENGTH_SPREAD = 0.1


def length_effect(
    scores: Scores, lengths: dict[str, dict[str, float]], categories: dict[str, str], lists: dict[str, dict[str, float]] | None = None
) -> list[LengthEffect]:
    """Per category: score ~ entry + log(length) [+ list share], the entry as a fixed effect. Fitted within entries
    (Frisch-Waugh-Lovell: demean every variable per entry, then OLS on the style covariates, with the residual degrees
    of freedom of the full dummy regression), which gives the dummy regression's coefficients and intervals exactly
    in memory linear in the rows, so a board of 10,000 entries fits. Only where identified (see MIN_STYLE_DOF); the
    list covariate joins only where it varies within an entry. An entry's controlled score is given only where the
    category's mean log length lies within its own prompts' range (an interpolation, never an extrapolation)."""
    out = []
    for category in sorted(set(categories.values())):
        rows = [
            (e, t, v) for e, by_task in scores.items() for t, v in by_task.items() if categories[t] == category and t in lengths.get(e, {})
        ]
        entries = sorted({r[0] for r in rows})
        if len(entries) < 2 or len({r[1] for r in rows}) < MIN_TASKS_FOR_INTERVAL:
            continue
        index = _positions(rows, entries)
        y = np.array([r[2] for r in rows], dtype=float)
        log_length = np.array([math.log(max(lengths[e][t], 1.0)) for e, t, _ in rows])
        if _within_spread(log_length, index, len(entries)) < MIN_LENGTH_SPREAD:
            continue  # lengths barely vary within entries: their effect cannot be told from the entries' own
        columns = [log_length]
        if lists is not None:
            columns.append(np.array([lists.get(e, {}).get(t, 0.0) for e, t, _ in rows], dtype=float))
        fit = _within_fit(y, np.column_stack(columns), index, len(entries))
        if fit is None and len(columns) == 2:
            fit = _within_fit(y, columns[0][:, None], index, len(entries))
        if fit is None:
            continue
        beta, intervals, effects, x_mean = fit
        spans = {e: (log_length[index == i].min(), log_length[index == i].max()) for i, e in enumerate(entries)}
        controlled = {e: float(effects[i] + beta @ x_mean) for i, e in enumerate(entries) if spans[e][0] <= x_mean[0] <= spans[e][1]}
        listed = (float(beta[1]), *map(float, intervals[1])) if len(beta) == 2 else (None, None, None)
        out.append(LengthEffect(category, float(beta[0]), float(intervals[0][0]), float(intervals[0][1]), len(rows), controlled, *listed))
    return out


def _within_spread(x: np.ndarray, index: np.ndarray, groups: int) -> float:
    """The standard deviation of x around each group's own mean."""
    counts = np.bincount(index, minlength=groups).astype(float)
    means = np.bincount(index, weights=x, minlength=groups) / counts
    return float(np.sqrt(np.mean((x - means[index]) ** 2)))


def _positions(rows: list, entries: list[str]) -> np.ndarray:
    where = {e: i for i, e in enumerate(entries)}
    return np.array([where[r[0]] for r in rows])


def _within_fit(y: np.ndarray, x: np.ndarray, index: np.ndarray, groups: int):
    """(coefficients, 95 % intervals, each group's fixed effect, the covariates' overall means) of y ~ group + x, or
    None where x does not vary within groups (rank-deficient) or fewer than MIN_STYLE_DOF residual degrees of freedom
    are left."""
    counts = np.bincount(index, minlength=groups).astype(float)
    y_mean = np.bincount(index, weights=y, minlength=groups) / counts
    x_means = np.column_stack([np.bincount(index, weights=x[:, k], minlength=groups) / counts for k in range(x.shape[1])])
    y_within, x_within = y - y_mean[index], x - x_means[index]
    dof = len(y) - groups - x.shape[1]
    gram = x_within.T @ x_within
    if dof < MIN_STYLE_DOF or np.linalg.matrix_rank(gram) < x.shape[1] or min(np.diag(gram)) < 1e-12:
        return None
    beta = np.linalg.solve(gram, x_within.T @ y_within)
    residual = y_within - x_within @ beta
    covariance = np.linalg.inv(gram) * float(residual @ residual) / dof
    half = stats.t.ppf(0.975, dof) * np.sqrt(np.diag(covariance))
    effects = y_mean - x_means @ beta
    return beta, np.column_stack([beta - half, beta + half]), effects, x.mean(axis=0)
