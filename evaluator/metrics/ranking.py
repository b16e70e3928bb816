"""Board statistics over per-task scores: rank ranges, neighbour comparisons, win rates and length control.

Input everywhere is `scores[entry][task_id] = task score (0-100)` with `categories[task_id]`. An entry's
score is the board's: the mean over its tasks within each category, then the mean over categories (macro).

Every interval here is one for means of bounded variables (evaluator.metrics.intervals, STaR-Bets): valid for any
distribution of scores on their range at the number of tasks scored, so one is given from one task per category on
(wide when tasks are few). Values enter each interval in order.task_order, an order that does not depend on them.

- score_intervals: each entry's score interval (macro: each category's interval at 1 - alpha / K, averaged, which
  covers the macro mean whenever all K cover theirs): the paper's figure, with its uncertainty.
- rank_ranges: ranks from the board's head-to-head decisions (evaluator.metrics.decisions): best 1 + the entries
  decided ahead, worst N − the entries it is decided ahead of, in a row order that honours every decision.
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
from .order import task_order

Scores = dict[str, dict[str, float]]
Groups = list[list[float]]  # one entry's values per category, each list in order.task_order (macro_intervals)


def board_score(by_task: dict[str, float], categories: dict[str, str]) -> float | None:
    """Macro mean: per category the mean over the entry's tasks, then the mean over categories."""
    per_category: dict[str, list[float]] = defaultdict(list)
    for task, value in by_task.items():
        per_category[categories[task]].append(value)
    means = [float(np.mean(v)) for v in per_category.values() if v]
    return float(np.mean(means)) if means else None


def category_groups(by_task: dict[str, float], categories: dict[str, str]) -> Groups:
    """The entry's values per category (categories in name order), each in order.task_order."""
    groups: dict[str, list[float]] = defaultdict(list)
    for task in task_order(by_task):
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
    rank: int  # 1 + the entries decided ahead of it (evaluator.metrics.decisions)
    rank_high: int  # N − the entries it is decided ahead of


def score_intervals(scores: Scores, categories: dict[str, str], confidence: float = 0.95) -> dict[str, tuple[float, float, float]]:
    """Each entry's macro score with its interval: entry -> (score, low, high). An entry without a score is left out."""
    entries = sorted(e for e in scores if scores[e])
    bounds = macro_intervals([category_groups(scores[e], categories) for e in entries], confidence)
    return {e: (board_score(scores[e], categories), *b) for e, b in zip(entries, bounds)}  # type: ignore[misc]


def rank_ranges(
    scores: Scores, categories: dict[str, str], decisions: dict, rates: dict[str, float], confidence: float = 0.95
) -> list[RankRange]:
    """Each ranked entry's score with its interval and its rank range from the board's decisions, in row order
    (decisions.row_order: never below an entry it is decided ahead of)."""
    from .decisions import rank_bounds, row_order

    shown = score_intervals(scores, categories, confidence)
    order, _ = row_order(list(shown), decisions, rates, {e: v[0] for e, v in shown.items()})
    bounds = rank_bounds(order, decisions)
    return [RankRange(e, *shown[e], *bounds[e]) for e in order]


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
    return field, pair_records(scores, list(scores) if pairs_for is None else pairs_for, tie_margin)


def pair_records(scores: Scores, chosen: list[str], tie_margin: float = 0.0) -> dict[tuple[str, str], WinRecord]:
    """Each ordered pair among `chosen`: wins, ties and losses on their common tasks."""
    pairs = {}
    for a in chosen:
        for b in chosen:
            if a != b:
                diffs = [scores[a][t] - scores[b][t] for t in set(scores[a]) & set(scores[b])]
                pairs[(a, b)] = WinRecord(
                    sum(d > tie_margin for d in diffs), sum(abs(d) <= tie_margin for d in diffs), sum(d < -tie_margin for d in diffs)
                )
    return pairs


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
