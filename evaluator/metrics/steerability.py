"""Steerability: how many rounds a prompter needs, on average, to reach an adequate score.

Following ArtWhisperer (Vodrahalli & Zou), section 4.1 and appendix A.10, algorithm 1: each
trajectory's per-round scores (0–100) are put into five bins, a Markov chain over the bins plus a
START node is estimated from the observed transitions (START → first round, then round r → r+1)
with additive smoothing, and the expected number of rounds from START until the target bin (the
top one by default) is the steerability figure. The first round counts as one interaction.
Our deviations from the paper: the bins are half-open, [0,21) … [61,81) and [81,101] (100 falls
in the top bin); each trajectory is replaced by its running maximum (a prompter keeps its best
prompt); smoothing is added only to non-decreasing transitions so the chain stays monotone; and
an exact linear solve is reported beside the paper's Monte Carlo estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

BINS: tuple[tuple[float, float], ...] = ((0, 21), (21, 41), (41, 61), (61, 81), (81, 101))  # half-open [lo, hi)
START = "start"


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
    """Fitted chain: state 0 is START, state 1 + b is bin b; `counts` are the raw, unsmoothed counts."""

    states: tuple[str, ...]
    matrix: np.ndarray
    counts: np.ndarray
    n_trajectories: int

    @property
    def n_bins(self) -> int:
        return len(self.states) - 1


def fit_chain(
    trajectories: Sequence[Sequence[float]],
    bins: Sequence[tuple[float, float]] = BINS,
    epsilon: float = 1.0,
    use_running_max: bool = True,
) -> MarkovChain:
    """Estimate the transition matrix over START and the bins from per-round score trajectories.

    Smoothing: every count starts at `epsilon`, but only for pairs that a running maximum can
    produce, i.e. START → any bin and bin i → bin j with j >= i; decreasing pairs, and any pair
    into START, get nothing, so the smoothed chain is monotone like the data. (With
    `use_running_max=False` an observed decrease still counts; it is just never invented.)
    A row that ends up with no mass at all (a bin never left, with epsilon=0) becomes a self-loop:
    without evidence of a way out, the prompter is taken to stay there.
    Empty trajectories are ignored.
    """
    if not bins:
        raise ValueError("at least one bin is needed")
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    n = 1 + len(bins)
    counts = np.zeros((n, n))
    n_trajectories = 0
    for trajectory in trajectories:
        raw = [float(s) for s in trajectory]
        if not raw:
            continue
        for s in raw:  # checks every raw score, NaN included, before the running maximum can hide one
            score_bin(s, bins)
        series = running_max(raw) if use_running_max else raw
        states = [1 + score_bin(s, bins) for s in series]
        counts[0, states[0]] += 1
        for a, b in pairwise(states):
            counts[a, b] += 1
        n_trajectories += 1
    if n_trajectories == 0:
        raise ValueError("no trajectory has a scored round")

    allowed = np.zeros((n, n), dtype=bool)
    allowed[0, 1:] = True
    allowed[1:, 1:] = np.triu(np.ones((n - 1, n - 1), dtype=bool))
    smoothed = counts + epsilon * allowed
    totals = smoothed.sum(axis=1)
    for row in np.flatnonzero(totals == 0):
        smoothed[row, row] = 1.0  # never START: every trajectory leaves it once
        totals[row] = 1.0
    matrix = smoothed / totals[:, None]
    states = (START, *(_label(lo, hi) for lo, hi in bins))
    return MarkovChain(states=states, matrix=matrix, counts=counts, n_trajectories=n_trajectories)


def _target_state(chain: MarkovChain, target_bin: int | None) -> int:
    """State index of the target bin; states at or above it count as having reached it."""
    if target_bin is None:
        target_bin = chain.n_bins - 1
    if not 0 <= target_bin < chain.n_bins:
        raise ValueError(f"target_bin must be in 0..{chain.n_bins - 1}, got {target_bin!r}")
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


def simulate_rounds(
    chain: MarkovChain,
    target_bin: int | None = None,
    n_trials: int = 10_000,
    seed: int = 0,
    max_steps: int = 1000,
) -> tuple[float, float]:
    """Monte Carlo (mean, standard error) of the rounds from START to the target bin or above.

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


@dataclass(frozen=True)
class Steerability:
    """Expected rounds to the target (exact and simulated), with the data behind them."""

    expected_rounds: float
    simulated_rounds: float
    simulated_se: float
    n_trajectories: int
    first_round_bins: tuple[int, ...]  # how many trajectories started in each bin


def steerability(
    trajectories: Sequence[Sequence[float]],
    bins: Sequence[tuple[float, float]] = BINS,
    epsilon: float = 1.0,
    target_bin: int | None = None,
    n_trials: int = 10_000,
    seed: int = 0,
) -> Steerability:
    """Fit the chain to the trajectories and report the exact and simulated expected rounds."""
    chain = fit_chain(trajectories, bins=bins, epsilon=epsilon)
    mean, se = simulate_rounds(chain, target_bin=target_bin, n_trials=n_trials, seed=seed)
    return Steerability(
        expected_rounds=expected_rounds(chain, target_bin=target_bin),
        simulated_rounds=mean,
        simulated_se=se,
        n_trajectories=chain.n_trajectories,
        first_round_bins=tuple(int(c) for c in chain.counts[0, 1:]),
    )
