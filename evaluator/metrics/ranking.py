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
- length_effect: per category, OLS of task score on entry (fixed effects) and log prompt length (statsmodels),
  the length coefficient with its 95 % interval, and each entry's score predicted at the category's mean
  log length (the length-controlled score), in the spirit of LMArena's style control.
"""

from __future__ import annotations

import math
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
    controlled: dict[str, float]  # entry -> score predicted at the category's mean log length


def length_effect(scores: Scores, lengths: dict[str, dict[str, float]], categories: dict[str, str]) -> list[LengthEffect]:
    """Per category: score ~ entry + log(length). Needs at least two entries, more tasks than parameters, and
    lengths that vary within an entry (otherwise length and entry cannot be told apart and the category is left out)."""
    import statsmodels.api as sm

    out = []
    for category in sorted(set(categories.values())):
        rows = [(e, t, v, math.log(max(lengths[e][t], 1.0))) for e, by_task in scores.items() for t, v in by_task.items() if categories[t] == category and t in lengths.get(e, {})]
        entries = sorted({r[0] for r in rows})
        if len(entries) < 2 or len(rows) <= len(entries) + 1:
            continue
        design = np.array([[1.0 if r[0] == e else 0.0 for e in entries] + [r[3]] for r in rows])
        if np.linalg.matrix_rank(design) < design.shape[1]:
            continue  # each entry's length is constant here: its effect cannot be told from the entry's own
        fit = sm.OLS(np.array([r[2] for r in rows]), design).fit()
        low, high = fit.conf_int(0.05)[-1]
        mean_log = float(np.mean(design[:, -1]))
        controlled = {e: float(fit.params[i] + fit.params[-1] * mean_log) for i, e in enumerate(entries)}
        out.append(LengthEffect(category, float(fit.params[-1]), float(low), float(high), len(rows), controlled))
    return out
