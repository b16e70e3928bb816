"""Steerability: how many rounds a prompter needs, on average, to reach an adequate score.

Two figures, both from ArtWhisperer (Vodrahalli & Zou), section 4.1 and appendix A.10. Each trajectory's per-round
scores (0–100) are put into five bins; for each target (here: a task) a Markov chain over the bins plus a START node
is estimated from that target's trajectories (START → first round, then round r → r+1); the expected number of rounds
from START until the top bin is that target's steerability, and a group's figure (here: a category's) is the mean
over its targets. The first round counts as one interaction.

- **ArtWhisperer's Algorithm 1** (`artwhisperer`), as the paper states it: raw scores, ε = 1 pseudo-count on every
  bin pair and on START → every bin, the stopping time estimated by Monte Carlo (10,000 walks per target), averaged
  over targets, with the standard error over targets (the paper's error bars).
- **The running-best chain** (`running_best`, this platform's variant, the one with an interval and the withholding
  rules): each trajectory is replaced by its running maximum (a prompter keeps its best prompt) and the smoothing is
  added only to non-decreasing moves, so the chain stays monotone; the expected rounds are solved exactly; the
  interval is a percentile bootstrap over trajectories, resampled within each target and the chains refitted. The
  paper had about 40 trajectories per image, we have one per sample (at most 8): its ε = 1 then weighs far more, so
  this figure is withheld (`Steerability.status`) when too few trajectories back it, when no trajectory reached the
  top bin at all, or when more than half of its expected rounds are steps drawn from the smoothing prior rather than
  from observed transitions. Algorithm 1's figure is given beside it whenever the targets are enough.

Both use half-open bins, [0,21) … [61,81) and [81,101] (100 falls in the top bin), which are the paper's [0,20] …
[81,100] on integer scores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise

import numpy as np
from scipy import stats

BINS: tuple[tuple[float, float], ...] = ((0, 21), (21, 41), (41, 61), (61, 81), (81, 101))  # half-open [lo, hi)
START = "start"
EPSILON = 1.0  # the paper's smoothing: one pseudo-count per possible transition
# With one trajectory a target's bootstrap resamples are all the same trajectory: it would add no spread.
MIN_PER_TARGET = 2
# The figure speaks for a category (the paper's image group); with fewer tasks it speaks for those tasks only.
MIN_TARGETS = 5
MAX_PRIOR_SHARE = 0.5  # beyond this the smoothing, not the run, decides most of the expected rounds


def score_bin(score: float, bins: Sequence[tuple[float, float]] = BINS) -> int:
    """Index of the half-open bin [lo, hi) that holds `score`; ValueError if none does (or NaN)."""
    value = float(score)
    if not math.isnan(value):
        for index, (lo, hi) in enumerate(bins):
            if lo <= value < hi:
                return index
    raise ValueError(f"score {score!r} lies outside the bins {tuple(bins)!r}")


def running_max(scores: Sequence[float]) -> list[float]:
    """Best score so far after each round."""
    best: list[float] = []
    for score in scores:
        value = float(score)
        best.append(value if not best or value > best[-1] else best[-1])
    return best


def _label(lo: float, hi: float) -> str:
    if float(lo).is_integer() and float(hi).is_integer():
        return f"{int(lo)}-{int(hi) - 1}"
    return f"{lo:g}-{hi:g}"


@dataclass(frozen=True)
class MarkovChain:
    """Fitted chain: state 0 is START, state 1 + b is bin b; `counts` are the raw, unsmoothed counts and
    `prior` each row's share of smoothing pseudo-counts (1 for a row no trajectory left)."""

    states: tuple[str, ...]
    matrix: np.ndarray
    counts: np.ndarray
    prior: np.ndarray
    n_trajectories: int

    @property
    def n_bins(self) -> int:
        return len(self.states) - 1


def transition_counts(trajectory: Sequence[float], bins: Sequence[tuple[float, float]] = BINS, use_running_max: bool = True) -> np.ndarray:
    """One trajectory's transition counts over START and the bins (all zero for an empty trajectory)."""
    raw = [float(s) for s in trajectory]
    for s in raw:  # checks every raw score, NaN included, before the running maximum can hide one
        score_bin(s, bins)
    counts = np.zeros((1 + len(bins), 1 + len(bins)))
    series = running_max(raw) if use_running_max else raw
    states = [1 + score_bin(s, bins) for s in series]
    if states:
        counts[0, states[0]] += 1
    for a, b in pairwise(states):
        counts[a, b] += 1
    return counts


def _smooth(counts: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """(transition matrix, prior share of each row) of raw counts, shape (..., n, n) with n = 1 + bins.

    Every count starts at `epsilon`, but only for pairs that a running maximum can produce (START →
    any bin, bin i → bin j with j >= i), so the smoothed chain is monotone like the data. A row with
    no mass at all (a bin never left, with epsilon=0) becomes a self-loop: without evidence of a way
    out, the prompter is taken to stay there."""
    n = counts.shape[-1]
    allowed = np.zeros((n, n))
    allowed[0, 1:] = 1
    allowed[1:, 1:] = np.triu(np.ones((n - 1, n - 1)))
    smoothed = counts + epsilon * allowed
    totals = smoothed.sum(axis=-1)
    empty = totals == 0
    for index in zip(*np.nonzero(empty)):
        smoothed[index + (index[-1],)] = 1.0  # never START: every trajectory leaves it once
    totals = smoothed.sum(axis=-1)
    prior = np.where(empty, 1.0, epsilon * allowed.sum(axis=-1) / totals)
    return smoothed / totals[..., None], prior


def fit_chain(
    trajectories: Sequence[Sequence[float]],
    bins: Sequence[tuple[float, float]] = BINS,
    epsilon: float = EPSILON,
    use_running_max: bool = True,
) -> MarkovChain:
    """Estimate the transition matrix over START and the bins from per-round score trajectories.

    Smoothing as in `_smooth`. (With `use_running_max=False` an observed decrease still counts; it
    is just never invented.) Empty trajectories are ignored."""
    if not bins:
        raise ValueError("at least one bin is needed")
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    per_trajectory = [transition_counts(t, bins, use_running_max) for t in trajectories]
    n_trajectories = sum(1 for c in per_trajectory if c[0].sum())
    if n_trajectories == 0:
        raise ValueError("no trajectory has a scored round")
    counts = np.sum(per_trajectory, axis=0)
    matrix, prior = _smooth(counts, epsilon)
    states = (START, *(_label(lo, hi) for lo, hi in bins))
    return MarkovChain(states=states, matrix=matrix, counts=counts, prior=prior, n_trajectories=n_trajectories)


def _target_state(chain: MarkovChain, target_bin: int | None) -> int:
    """State index of the target bin; states at or above it count as having reached it."""
    return _first_target(chain.n_bins, target_bin)


def _first_target(n_bins: int, target_bin: int | None) -> int:
    if target_bin is None:
        target_bin = n_bins - 1
    if not 0 <= target_bin < n_bins:
        raise ValueError(f"target_bin must be in 0..{n_bins - 1}, got {target_bin!r}")
    return 1 + target_bin


def _reach(edges: np.ndarray, sources: list[int], stop: set[int] | None = None) -> set[int]:
    """States reachable from `sources` along positive edges, not expanding past `stop`."""
    seen = set(sources)
    frontier = list(sources)
    while frontier:
        state = frontier.pop()
        if stop and state in stop:
            continue
        for nxt in np.flatnonzero(edges[state] > 0):
            if int(nxt) not in seen:
                seen.add(int(nxt))
                frontier.append(int(nxt))
    return seen


def expected_rounds(chain: MarkovChain, target_bin: int | None = None) -> float:
    """Exact expected rounds from START until the running score first reaches the target bin.

    Bins at or above the target are absorbing (with the default, the top bin, that is just the
    target). Solves (I - Q) t = 1 over the transient states reachable from START; returns
    math.inf when some reachable state can never get to the target (the system is then singular).
    """
    first = _target_state(chain, target_bin)
    n = chain.matrix.shape[0]
    targets = set(range(first, n))
    reachable = _reach(chain.matrix, [0], stop=targets)
    transient = sorted(reachable - targets)
    can_finish = _reach(chain.matrix.T, sorted(targets))
    if any(state not in can_finish for state in transient):
        return math.inf
    q = chain.matrix[np.ix_(transient, transient)]
    try:
        times = np.linalg.solve(np.eye(len(transient)) - q, np.ones(len(transient)))
    except np.linalg.LinAlgError:
        return math.inf
    return float(times[transient.index(0)])


def visits(matrix: np.ndarray, first: int) -> np.ndarray:
    """Expected visits to each state below `first` on the walk from START, for a batch (..., n, n) of
    chains in which every such state can reach the target (true whenever epsilon > 0). They sum to
    the expected rounds: START's one visit is the first round."""
    q = matrix[..., :first, :first]
    start = np.zeros(q.shape[:-1])
    start[..., 0] = 1.0
    # v (I - Q) = e_START, solved as (I - Q)^T v = e_START
    return np.linalg.solve(np.swapaxes(np.eye(first) - q, -1, -2), start[..., None])[..., 0]


def simulate_rounds(
    chain: MarkovChain, target_bin: int | None = None, n_trials: int = 10_000, seed: int = 0, max_steps: int = 1000
) -> tuple[float, float]:
    """Monte Carlo (mean, standard error) of the rounds from START to the target bin or above: the
    paper's estimator, kept to cross-check the exact solve.

    Walks `n_trials` chains with numpy's Generator seeded by `seed`; a walk still short of the
    target after `max_steps` rounds counts as `max_steps`. The standard error is NaN for one trial.
    """
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials!r}")
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
    first = _target_state(chain, target_bin)
    rng = np.random.default_rng(seed)
    cumulative = np.cumsum(chain.matrix, axis=1)
    cumulative[:, -1] = 1.0  # rows sum to 1; guard against rounding leaving the last edge short
    state = np.zeros(n_trials, dtype=int)
    steps = np.full(n_trials, max_steps, dtype=float)
    active = np.arange(n_trials)
    for step in range(1, max_steps + 1):
        if active.size == 0:
            break
        u = rng.random(active.size)
        nxt = (u[:, None] >= cumulative[state[active]]).sum(axis=1)
        state[active] = nxt
        done = nxt >= first
        steps[active[done]] = step
        active = active[~done]
    mean = float(steps.mean())
    se = float(steps.std(ddof=1) / math.sqrt(n_trials)) if n_trials > 1 else math.nan
    return mean, se


# --- a category's figure: per-target chains, averaged ------------------------------------------------


class Status(StrEnum):
    SHOWN = "shown"
    NEVER_REACHED = "never_reached"  # no trajectory reached the target bin: the data say only that
    TOO_FEW = "too_few"  # fewer than MIN_TARGETS targets with MIN_PER_TARGET trajectories each
    PRIOR = "prior"  # more than MAX_PRIOR_SHARE of the expected rounds are steps the smoothing decided


@dataclass(frozen=True)
class TargetFit:
    target: str
    n_trajectories: int
    n_reached: int  # trajectories whose best score reached the target bin
    expected_rounds: float
    prior_rounds: float  # expected rounds that are steps drawn from the smoothing; all of them if n_reached == 0


@dataclass(frozen=True)
class Steerability:
    """A group's steerability: the running-best chain's figure (`expected_rounds`, with its interval), or the reason
    it is withheld (`status`; the figure and its interval are None unless SHOWN), and ArtWhisperer's Algorithm 1 on
    the same targets (`artwhisperer` ± `artwhisperer_se`, None when too few targets count or none reached the top bin).
    `prior_share` is known once enough targets count."""

    status: Status
    expected_rounds: float | None
    low: float | None
    high: float | None
    prior_share: float | None
    n_trajectories: int
    n_reached: int
    n_targets: int  # targets averaged: those with at least min_per_target trajectories
    n_targets_short: int  # targets left out for having fewer
    min_per_target: int
    min_targets: int
    targets: tuple[TargetFit, ...]
    artwhisperer: float | None = None
    artwhisperer_se: float | None = None


def _fit_target(target: str, counts: np.ndarray, reached: np.ndarray, epsilon: float, first: int) -> TargetFit:
    """Chain of one target from its trajectories' counts (n_t, n, n); a target never reached is all prior."""
    matrix, prior = _smooth(counts.sum(axis=0), epsilon)
    seen = visits(matrix, first)
    rounds = float(seen.sum())
    prior_rounds = float(seen @ prior[:first]) if reached.any() else rounds
    return TargetFit(target, len(counts), int(reached.sum()), rounds, prior_rounds)


def _interval(counts: list[np.ndarray], epsilon: float, first: int, resamples: int, confidence: float, seed: int) -> tuple[float, float]:
    """Percentile bootstrap of the mean over targets: each target's trajectories are resampled on their
    own (scipy's independent multi-sample resampling, by trajectory index) and its chain refitted."""

    def mean_rounds(*drawn: np.ndarray, axis: int = -1) -> np.ndarray:
        per_target = [visits(_smooth(c[i].sum(axis=-3), epsilon)[0], first).sum(axis=-1) for c, i in zip(counts, drawn)]
        return np.mean(per_target, axis=0)

    data = tuple(np.arange(len(c)) for c in counts)
    result = stats.bootstrap(
        data,
        mean_rounds,
        vectorized=True,
        paired=False,
        n_resamples=resamples,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def steerability(
    by_target: Mapping[str, Sequence[Sequence[float]]],
    *,
    bins: Sequence[tuple[float, float]] = BINS,
    epsilon: float = EPSILON,
    target_bin: int | None = None,
    min_per_target: int = MIN_PER_TARGET,
    min_targets: int = MIN_TARGETS,
    max_prior_share: float = MAX_PRIOR_SHARE,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Steerability:
    """A group's steerability from its targets' trajectories (empty ones ignored), as the paper computes
    it, with a bootstrap interval over trajectories; or why it is withheld."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0 (every state must be able to reach the target), got {epsilon!r}")
    first = _first_target(len(bins), target_bin)
    # 1. per target, each trajectory's transition counts and whether it reached the target bin
    data = {t: [transition_counts(s, bins) for s in runs if len(s)] for t, runs in sorted(by_target.items())}
    reached = {t: np.array([c[:, first:].sum() > 0 for c in cs], dtype=bool) for t, cs in data.items()}
    counted = [t for t, cs in data.items() if len(cs) >= min_per_target]
    tally = {
        "n_trajectories": sum(map(len, data.values())),
        "n_reached": int(sum(r.sum() for r in reached.values())),
        "n_targets": len(counted),
        "n_targets_short": sum(1 for cs in data.values() if 0 < len(cs) < min_per_target),
        "min_per_target": min_per_target,
        "min_targets": min_targets,
    }
    withheld = {"expected_rounds": None, "low": None, "high": None}
    # 2. what the data say before any chain: nothing reached the target, or too little to average
    if tally["n_trajectories"] and not tally["n_reached"]:
        return Steerability(Status.NEVER_REACHED, **withheld, prior_share=None, targets=(), **tally)
    if len(counted) < min_targets:
        return Steerability(Status.TOO_FEW, **withheld, prior_share=None, targets=(), **tally)
    # 3. one chain per target, averaged; withheld when the smoothing decides most of the rounds
    fits = tuple(_fit_target(t, np.array(data[t]), reached[t], epsilon, first) for t in counted)
    share = sum(f.prior_rounds for f in fits) / sum(f.expected_rounds for f in fits)
    tally["artwhisperer"], tally["artwhisperer_se"] = artwhisperer(
        {t: by_target[t] for t in counted}, bins=bins, epsilon=epsilon, seed=seed
    )
    if share > max_prior_share:
        return Steerability(Status.PRIOR, **withheld, prior_share=share, targets=fits, **tally)
    # 4. the interval: trajectories resampled within each target, chains refitted
    low, high = _interval([np.array(data[t]) for t in counted], epsilon, first, resamples, confidence, seed)
    value = float(np.mean([f.expected_rounds for f in fits]))
    return Steerability(Status.SHOWN, value, low, high, share, targets=fits, **tally)


# --- ArtWhisperer's Algorithm 1, as the paper states it ----------------------------------------------------------

ARTWHISPERER_WALKS = 10_000


def artwhisperer_chain(
    trajectories: Sequence[Sequence[float]], bins: Sequence[tuple[float, float]] = BINS, epsilon: float = EPSILON
) -> MarkovChain:
    """EstimateMarkovChain: every bin pair's count and START → every bin start at ε; each raw score's bin (no running
    maximum) adds one transition from the bin before it (START for the first round); rows normalised."""
    n = 1 + len(bins)
    counts = sum((transition_counts(t, bins, use_running_max=False) for t in trajectories if len(t)), np.zeros((n, n)))
    smoothed = counts.copy()
    smoothed[:, 1:] += epsilon  # never into START: it is only the walk's beginning
    matrix = smoothed / smoothed.sum(axis=1, keepdims=True)
    states = (START, *(_label(lo, hi) for lo, hi in bins))
    return MarkovChain(states, matrix, counts, np.zeros(n), sum(1 for t in trajectories if len(t)))


def artwhisperer(
    by_target: Mapping[str, Sequence[Sequence[float]]],
    *,
    bins: Sequence[tuple[float, float]] = BINS,
    epsilon: float = EPSILON,
    walks: int = ARTWHISPERER_WALKS,
    seed: int = 0,
) -> tuple[float, float | None]:
    """EstimateSteerability: per target (sorted by name) its chain and the Monte Carlo stopping time to the top bin
    from START (RunMonteCarloEstimation, `walks` walks, seed + the target's position), then their mean and the
    standard error over targets (None for one target)."""
    if not by_target:
        raise ValueError("no target to estimate")
    times = [
        simulate_rounds(artwhisperer_chain(runs, bins, epsilon), n_trials=walks, seed=seed + i)[0]
        for i, (_, runs) in enumerate(sorted(by_target.items()))
    ]
    se = float(np.std(times, ddof=1) / math.sqrt(len(times))) if len(times) > 1 else None
    return float(np.mean(times)), se
