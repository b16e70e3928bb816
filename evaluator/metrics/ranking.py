"""Board statistics over per-task scores: rank ranges, neighbour comparisons, win rates and length control.

Input everywhere is `scores[entry][task_id] = task score (0-100)` with `categories[task_id]`. An entry's
score is the board's: the mean over its tasks within each category, then the mean over categories (macro).

Every interval here is one for means of bounded variables (evaluator.metrics.intervals, by betting): valid for any
distribution of scores on their range at every number of tasks, so one is given from one task per category on (wide
when tasks are few). Values enter each interval in task-id order, an order that does not depend on them.

- rank_ranges: each entry's score interval (macro: each category's interval at 1 - alpha / K, averaged, which covers
  the macro mean whenever all K cover theirs), its rank as 1 + the entries whose interval lies wholly above (LMArena's
  rule) and its range up to the entries less those wholly below, so a rank always lies inside its own range.
- adjacent_tests: for each pair of neighbours in the ranking, the interval of their macro paired difference over
  their common tasks (differences on [-100, 100]) at 1 - alpha / m for the board's m comparisons (Bonferroni), so all
  m hold together with probability 1 - alpha; a pair is separated when its interval excludes 0.
- win_rates: ECHO's pseudo-pairwise view: per common task a win, tie or loss on the task score; win_intervals gives
  each entry's field win rate (the mean over tasks of the share of the others it beats, ties half) its interval.
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

from .intervals import macro_intervals

Scores = dict[str, dict[str, float]]
Groups = list[list[float]]  # one entry's values per category, each list in task-id order (intervals.macro_intervals)


def board_score(by_task: dict[str, float], categories: dict[str, str]) -> float | None:
    """Macro mean: per category the mean over the entry's tasks, then the mean over categories."""
    per_category: dict[str, list[float]] = defaultdict(list)
    for task, value in by_task.items():
        per_category[categories[task]].append(value)
    means = [float(np.mean(v)) for v in per_category.values() if v]
    return float(np.mean(means)) if means else None


def category_groups(by_task: dict[str, float], categories: dict[str, str]) -> Groups:
    """The entry's values per category (categories in name order), each in task-id order."""
    groups: dict[str, list[float]] = defaultdict(list)
    for task in sorted(by_task):
        groups[categories[task]].append(by_task[task])
    return [groups[c] for c in sorted(groups)]


def macro_ci(by_task: dict[str, float], categories: dict[str, str], confidence: float = 0.95) -> tuple[float | None, float | None]:
    """The interval of one entry's macro mean (see macro_intervals)."""
    return macro_intervals([category_groups(by_task, categories)], confidence)[0]


@dataclass(frozen=True)
class RankRange:
    entry: str
    score: float
    low: float  # the score's 95 % interval (macro_intervals)
    high: float
    rank: int  # 1 + entries whose interval lies wholly above this one's (LMArena's rule)
    rank_high: int  # the worst rank the intervals allow: entries less those wholly below


def rank_ranges(scores: Scores, categories: dict[str, str], confidence: float = 0.95) -> list[RankRange]:
    """Each entry's score with its interval, rank and rank range, built so the rank lies inside its range: the rank
    is 1 + the entries whose interval lies wholly above (none can be worse placed than that), the range ends at the
    number of entries less those wholly below. An entry without a single score is not ranked (the board ranks only
    entries with a score on every ranked task)."""
    entries = sorted(e for e in scores if scores[e])
    observed = {e: board_score(scores[e], categories) for e in entries}
    bounds = dict(zip(entries, macro_intervals([category_groups(scores[e], categories) for e in entries], confidence)))
    lows = np.sort([b[0] for b in bounds.values()])
    highs = np.sort([b[1] for b in bounds.values()])
    out = []
    for e in entries:
        low, high = bounds[e]
        above = len(lows) - int(np.searchsorted(lows, high, side="right"))  # others whose low exceeds this high
        below = int(np.searchsorted(highs, low, side="left"))  # others whose high is under this low
        out.append(RankRange(e, observed[e], low, high, 1 + above, len(entries) - below))
    return sorted(out, key=lambda r: (-r.score, r.entry))


@dataclass(frozen=True)
class Comparison:
    upper: str
    lower: str
    difference: float | None  # upper − lower, macro mean of the per-category mean paired differences
    tasks: int  # common tasks
    low: float | None  # the difference's interval at 1 - alpha / m (m comparisons: Bonferroni); None without common tasks
    high: float | None
    separated: bool  # the interval excludes 0


def adjacent_tests(scores: Scores, categories: dict[str, str], order: list[str], alpha: float = 0.05) -> list[Comparison]:
    """Each neighbour pair's macro paired difference over its common tasks with its simultaneous interval."""
    pairs = []
    for upper, lower in zip(order, order[1:]):
        common = set(scores[upper]) & set(scores[lower])
        pairs.append((upper, lower, {t: scores[upper][t] - scores[lower][t] for t in common}))
    tested = sum(1 for *_, d in pairs if d)
    bounds = macro_intervals([category_groups(d, categories) for *_, d in pairs], 1 - alpha / max(tested, 1), -100.0, 100.0)
    out = []
    for (upper, lower, d), (low, high) in zip(pairs, bounds):
        separated = low is not None and high is not None and (low > 0 or high < 0)
        out.append(Comparison(upper, lower, board_score(d, categories), len(d), low, high, separated))
    return out


def separable(comparisons: list[Comparison], categories: dict[str, str], scores: Scores, alpha: float = 0.05) -> dict:
    """Whether any neighbour pair could be separated at all at this board's numbers of common tasks: the interval that
    the most extreme data (every common task's difference at +100) would get at the same level, computed by the same
    function. Where even that interval holds 0, no data could separate a pair, and the page says so."""
    tested = [c for c in comparisons if c.tasks]
    if not tested:
        return {"possible": False, "best_low": None, "tests": 0}
    extreme = [category_groups(dict.fromkeys(set(scores[c.upper]) & set(scores[c.lower]), 100.0), categories) for c in tested]
    lows = [low for low, _ in macro_intervals(extreme, 1 - alpha / len(tested), -100.0, 100.0) if low is not None]
    best = max(lows) if lows else None
    return {"possible": best is not None and best > 0, "best_low": best, "tests": len(tested)}


@dataclass(frozen=True)
class WinRecord:
    wins: int
    ties: int
    losses: int

    @property
    def rate(self) -> float | None:
        total = self.wins + self.ties + self.losses
        return (self.wins + 0.5 * self.ties) / total if total else None


def _sorted_columns(scores: Scores) -> dict[str, np.ndarray]:
    """Each task's scores over the entries that have it, sorted (for counting who lies below and above)."""
    by_task: dict[str, list[float]] = defaultdict(list)
    for by_entry in scores.values():
        for task, value in by_entry.items():
            by_task[task].append(value)
    return {task: np.sort(np.asarray(values)) for task, values in by_task.items()}


def win_rates(
    scores: Scores, tie_margin: float = 0.0, pairs_for: list[str] | None = None
) -> tuple[dict[str, WinRecord], dict[tuple[str, str], WinRecord]]:
    """(each entry against the field, each ordered pair among `pairs_for` (default: every entry)): per common task a
    win when the score is higher by more than tie_margin, a tie within it; ties count half in the rate. The field
    record counts, per task, the other entries below, level with and above this one (sorted search: O(T·N log N))."""
    ordered = _sorted_columns(scores)
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


def win_intervals(scores: Scores, tie_margin: float = 0.0, confidence: float = 0.95) -> dict[str, tuple[float, float]]:
    """Each entry's field win rate as a mean over its tasks of the share of the other entries it beats there (ties
    half), with its interval on [0, 1]. Where every entry has every task (a ranked board), that mean is
    WinRecord.rate: each task has as many opponents. Entries with no opponent on any task get none."""
    ordered = _sorted_columns(scores)
    shares: dict[str, list[float]] = {}
    for entry, by_entry in scores.items():
        mine = []
        for task in sorted(by_entry):
            column, value = ordered[task], by_entry[task]
            if len(column) < 2:
                continue
            below = int(np.searchsorted(column, value - tie_margin, side="left"))
            level = int(np.searchsorted(column, value + tie_margin, side="right")) - below - 1  # itself is level
            mine.append((below + 0.5 * level) / (len(column) - 1))
        if mine:
            shares[entry] = mine
    bounds = macro_intervals([[v] for v in shares.values()], confidence, 0.0, 1.0)
    return dict(zip(shares, bounds))  # type: ignore[arg-type]


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


# Style control is fitted in a category only where it is identified: at least MIN_STYLE_TASKS tasks, at least
# MIN_STYLE_DOF residual degrees of freedom (t's 97.5 % point is then within 7 % of the normal's, so an interval is
# not inflated by the last few rows) and prompt lengths that vary within entries by at least MIN_LENGTH_SPREAD in log
# words (about 10 %), else the slope is read off noise. A fit with 1-2 residual degrees of freedom gave OE -113
# [-2062, 1835]: never again.
MIN_STYLE_TASKS = 8
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
        if len(entries) < 2 or len({r[1] for r in rows}) < MIN_STYLE_TASKS:
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
