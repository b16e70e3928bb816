"""Board statistics over per-task scores: rank ranges, adjacent comparisons, win rates and length control.

Input everywhere is `scores[entry][task_id] = task score (0-100)` with `categories[task_id]`. An entry's
score is the board's: the mean over its tasks within each category, then the mean over categories (macro).

- rank_ranges: a paired bootstrap over tasks. Each replicate resamples every category's tasks with replacement
  once and recomputes every entry on that same resample, so entries that did the same tasks move together.
  An entry's rank range is the 2.5-97.5 % interval of its rank over replicates; its Arena rank is 1 + the
  number of entries whose lower score bound lies above its upper bound (LMSYS Chatbot Arena's rule).
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
import warnings
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from scipy import stats

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
    low: float  # score interval (2.5 %, 97.5 %) over replicates
    high: float
    rank: int  # rank by score (1 = best)
    rank_low: int  # best rank in the 95 % range
    rank_high: int  # worst rank in the 95 % range
    arena_rank: int  # 1 + entries whose lower bound is above this entry's upper bound


def rank_ranges(scores: Scores, categories: dict[str, str], replicates: int = 1000, seed: int = 0) -> list[RankRange]:
    entries = sorted(scores)
    if not entries:
        return []
    tasks_by_category: dict[str, list[str]] = defaultdict(list)
    for task in sorted({t for s in scores.values() for t in s}):
        tasks_by_category[categories[task]].append(task)
    rng = np.random.default_rng(seed)
    table = {c: np.array([[scores[e].get(t, np.nan) for t in tasks] for e in entries]) for c, tasks in tasks_by_category.items()}
    samples = np.empty((replicates, len(entries)))
    with warnings.catch_warnings():  # nanmean of an all-NaN row: an entry without tasks in a resampled category
        warnings.simplefilter("ignore", RuntimeWarning)
        for r in range(replicates):
            picked = [values[:, rng.integers(0, values.shape[1], values.shape[1])] for values in table.values()]
            samples[r] = np.nanmean(np.vstack([np.nanmean(p, axis=1) for p in picked]), axis=0)
    observed = np.array([board_score(scores[e], categories) for e in entries], dtype=float)
    samples = np.where(np.isnan(samples), observed, samples)  # an entry that drew none of its tasks keeps its score
    ranks = np.vstack([stats.rankdata(-row, method="min") for row in samples])
    low, high = np.percentile(samples, [2.5, 97.5], axis=0)
    rank_low, rank_high = np.percentile(ranks, [2.5, 97.5], axis=0, method="nearest")
    order = stats.rankdata(-observed, method="min")
    out = []
    for i, entry in enumerate(entries):
        arena = 1 + int(np.sum(low > high[i]))
        out.append(RankRange(entry, float(observed[i]), float(low[i]), float(high[i]), int(order[i]), int(rank_low[i]), int(rank_high[i]), arena))
    return sorted(out, key=lambda r: (-r.score, r.entry))


@dataclass(frozen=True)
class Comparison:
    upper: str
    lower: str
    difference: float | None  # upper − lower, macro mean of the per-category mean paired differences
    tasks: int  # common tasks
    p_value: float | None
    p_holm: float | None
    separated: bool  # Holm-corrected p < alpha


def adjacent_tests(scores: Scores, categories: dict[str, str], order: list[str], alpha: float = 0.05, resamples: int = 9999, seed: int = 0) -> list[Comparison]:
    from statsmodels.stats.multitest import multipletests

    raw = []
    for upper, lower in zip(order, order[1:]):
        common = sorted(set(scores[upper]) & set(scores[lower]))
        a, b = np.array([scores[upper][t] for t in common]), np.array([scores[lower][t] for t in common])
        labels = np.array([categories[t] for t in common])

        def macro_difference(x, y, axis=-1):
            return np.mean([np.mean(x[..., labels == c] - y[..., labels == c], axis=axis) for c in np.unique(labels)], axis=0)

        p = None
        if len(common) >= 2 and np.any(a != b):
            test = stats.permutation_test((a, b), macro_difference, permutation_type="samples", vectorized=True, n_resamples=resamples, rng=np.random.default_rng(seed))
            p = float(test.pvalue)
        raw.append((upper, lower, float(macro_difference(a, b)) if common else None, len(common), p))
    tested = [i for i, row in enumerate(raw) if row[4] is not None]
    holm = multipletests([raw[i][4] for i in tested], alpha=alpha, method="holm")[1] if tested else []
    corrected = dict(zip(tested, (float(p) for p in holm)))
    return [Comparison(u, l, d, n, p, corrected.get(i), corrected.get(i, 1.0) < alpha) for i, (u, l, d, n, p) in enumerate(raw)]


@dataclass(frozen=True)
class WinRecord:
    wins: int
    ties: int
    losses: int

    @property
    def rate(self) -> float | None:
        total = self.wins + self.ties + self.losses
        return (self.wins + 0.5 * self.ties) / total if total else None


def win_rates(scores: Scores, tie_margin: float = 0.0, pairs_for: list[str] | None = None) -> tuple[dict[str, WinRecord], dict[tuple[str, str], WinRecord]]:
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
                pairs[(a, b)] = WinRecord(sum(d > tie_margin for d in diffs), sum(abs(d) <= tie_margin for d in diffs), sum(d < -tie_margin for d in diffs))
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


def length_effect(scores: Scores, lengths: dict[str, dict[str, float]], categories: dict[str, str], lists: dict[str, dict[str, float]] | None = None) -> list[LengthEffect]:
    """Per category: score ~ entry + log(length) [+ list share], the entry as a fixed effect. Fitted within entries
    (Frisch-Waugh-Lovell: demean every variable per entry, then OLS on the style covariates, with the residual degrees
    of freedom of the full dummy regression), which gives the dummy regression's coefficients and intervals exactly
    in memory linear in the rows, so a board of 10,000 entries fits. Needs at least two entries, more rows than
    parameters, and lengths that vary within an entry; the list covariate joins only where it varies within an entry."""
    out = []
    for category in sorted(set(categories.values())):
        rows = [(e, t, v) for e, by_task in scores.items() for t, v in by_task.items() if categories[t] == category and t in lengths.get(e, {})]
        entries = sorted({r[0] for r in rows})
        if len(entries) < 2:
            continue
        index = _positions(rows, entries)
        y = np.array([r[2] for r in rows], dtype=float)
        columns = [np.array([math.log(max(lengths[e][t], 1.0)) for e, t, _ in rows])]
        if lists is not None:
            columns.append(np.array([lists.get(e, {}).get(t, 0.0) for e, t, _ in rows], dtype=float))
        fit = _within_fit(y, np.column_stack(columns), index, len(entries))
        if fit is None and len(columns) == 2:
            fit = _within_fit(y, columns[0][:, None], index, len(entries))
        if fit is None:
            continue  # each entry's length is constant here: its effect cannot be told from the entry's own
        beta, intervals, effects, x_mean = fit
        controlled = {e: float(effects[i] + beta @ x_mean) for i, e in enumerate(entries)}
        listed = (float(beta[1]), *map(float, intervals[1])) if len(beta) == 2 else (None, None, None)
        out.append(LengthEffect(category, float(beta[0]), float(intervals[0][0]), float(intervals[0][1]), len(rows), controlled, *listed))
    return out


def _positions(rows: list, entries: list[str]) -> np.ndarray:
    where = {e: i for i, e in enumerate(entries)}
    return np.array([where[r[0]] for r in rows])


def _within_fit(y: np.ndarray, x: np.ndarray, index: np.ndarray, groups: int):
    """(coefficients, 95 % intervals, each group's fixed effect, the covariates' overall means) of y ~ group + x, or
    None where x does not vary within groups (rank-deficient) or no residual degrees of freedom are left."""
    counts = np.bincount(index, minlength=groups).astype(float)
    y_mean = np.bincount(index, weights=y, minlength=groups) / counts
    x_means = np.column_stack([np.bincount(index, weights=x[:, k], minlength=groups) / counts for k in range(x.shape[1])])
    y_within, x_within = y - y_mean[index], x - x_means[index]
    dof = len(y) - groups - x.shape[1]
    gram = x_within.T @ x_within
    if dof <= 0 or np.linalg.matrix_rank(gram) < x.shape[1] or min(np.diag(gram)) < 1e-12:
        return None
    beta = np.linalg.solve(gram, x_within.T @ y_within)
    residual = y_within - x_within @ beta
    covariance = np.linalg.inv(gram) * float(residual @ residual) / dof
    half = stats.t.ppf(0.975, dof) * np.sqrt(np.diag(covariance))
    effects = y_mean - x_means @ beta
    return beta, np.column_stack([beta - half, beta + half]), effects, x.mean(axis=0)
