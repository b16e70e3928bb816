"""ArtWhisperer's Algorithm 1 (appendix A.10) against an independent implementation written from the paper's
pseudo-code in plain Python (dicts of counts, the standard library's random walks), on synthetic runs drawn from
known chains; and the running-best chain beside it on the same data, as the submission page shows both."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from evaluator.metrics.steerability import artwhisperer, artwhisperer_chain, steerability

PAPER_BINS = [(0, 20), (21, 40), (41, 60), (61, 80), (81, 100)]  # closed, on integer scores, as the paper writes them


def paper_bin(score: int) -> int:
    return next(i for i, (lo, hi) in enumerate(PAPER_BINS) if lo <= score <= hi)


def paper_chain(users: list[list[int]], epsilon: int = 1) -> dict[str, dict[str, Fraction]]:
    """EstimateMarkovChain: counts of every bin pair (and dummy -> bin) start at epsilon; each score adds one."""
    nodes = ["dummy", *map(str, range(5))]
    counts = {a: {b: Fraction(epsilon) for b in nodes[1:]} for a in nodes}
    for scores in users:
        before = "dummy"
        for score in scores:
            now = str(paper_bin(score))
            counts[before][now] += 1
            before = now
    return {a: {b: c / sum(row.values()) for b, c in row.items()} for a, row in counts.items()}


def paper_stopping_time(chain: dict[str, dict[str, Fraction]], walks: int, rng: random.Random) -> float:
    """RunMonteCarloEstimation: walks from the dummy node until the last bin, counting steps."""
    total = 0
    for _ in range(walks):
        node, steps = "dummy", 0
        while node != "4":
            node = rng.choices(list(chain[node]), weights=[float(p) for p in chain[node].values()])[0]
            steps += 1
        total += steps
    return total / walks


def synthetic_runs(rng: random.Random, targets: int, per_target: int, rounds: int) -> dict[str, list[list[int]]]:
    """Runs of a prompter that improves by a target-specific step with noise, and sometimes falls back."""
    runs = {}
    for t in range(targets):
        step, start = rng.uniform(3, 20), rng.uniform(0, 60)
        runs[f"t{t}"] = [
            [max(0, min(100, round(start + step * r + rng.gauss(0, 15)))) for r in range(rng.randint(1, rounds))] for _ in range(per_target)
        ]
    return runs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_algorithm_1_matches_an_independent_implementation_of_the_paper(seed):
    rng = random.Random(seed)
    runs = synthetic_runs(rng, targets=6, per_target=rng.choice([2, 4, 8]), rounds=8)
    for users in runs.values():  # the same chain, exactly
        ours, theirs = artwhisperer_chain(users).matrix, paper_chain(users)
        nodes = list(theirs)
        assert all(
            math.isclose(ours[i, j], float(theirs[a].get(b, 0)), rel_tol=1e-12) for i, a in enumerate(nodes) for j, b in enumerate(nodes)
        )
    # the same stopping time per target and averaged: two Monte Carlo estimates agree within their noise
    walks = 4000
    theirs = [paper_stopping_time(paper_chain(users), walks, rng) for _, users in sorted(runs.items())]
    mean, se = artwhisperer(runs, walks=walks, seed=seed)
    assert se == pytest.approx(statistics_se(theirs), rel=0.25)
    # each per-target time is a mean of geometric-like walks with sd <= its mean: both estimates sit within
    # 5 standard errors of each other (the noise of 2 x 4000 walks per target, averaged over 6 targets)
    noise = math.sqrt(2) * max(theirs) / math.sqrt(walks * len(theirs))
    assert abs(mean - sum(theirs) / len(theirs)) <= 5 * noise, (mean, theirs)


def statistics_se(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) / math.sqrt(len(values))


def test_both_figures_are_given_on_the_same_tasks_and_differ_where_the_paper_said():
    """A prompter that reaches the top bin and then falls back: the running-best chain keeps its best score (it
    needs the rounds to the first visit), Algorithm 1 counts raw scores too, but its pseudo-counts on every pair let
    walks fall back as well as climb; on these runs Algorithm 1 needs more rounds."""
    runs = {f"t{t}": [[30, 50, 70, 90, 40, 90], [50, 85, 60, 20, 95], [20, 40, 85], [60, 90, 50, 88]] * 2 for t in range(5)}
    figure = steerability(runs)
    assert figure.status == "shown" and figure.n_targets == 5
    assert figure.artwhisperer is not None and figure.artwhisperer_se is not None
    assert figure.artwhisperer > figure.expected_rounds
    # the exact stopping time of Algorithm 1's chain for one target (all five are the same): solved with fractions
    exact = exact_stopping_time(paper_chain(runs["t0"]))
    assert figure.artwhisperer == pytest.approx(exact, rel=0.03)


def exact_stopping_time(chain: dict[str, dict[str, Fraction]]) -> float:
    """Expected steps from the dummy node to bin 4: t(a) = 1 + sum over b != 4 of P(a, b) t(b), by Gauss-Jordan
    elimination on exact fractions."""
    nodes = [n for n in chain if n != "4"]
    rows = [[(1 if a == b else 0) - chain[a].get(b, 0) for b in nodes] + [Fraction(1)] for a in nodes]
    for col in range(len(nodes)):
        pivot = next(r for r in range(col, len(rows)) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        rows[col] = [x / rows[col][col] for x in rows[col]]
        for r in range(len(rows)):
            if r != col and rows[r][col] != 0:
                rows[r] = [x - rows[r][col] * y for x, y in zip(rows[r], rows[col])]
    return float(rows[nodes.index("dummy")][-1])


def test_too_few_targets_or_none_reached_gives_no_algorithm_1_figure():
    assert steerability({"a": [[10, 20], [30, 40]]}).artwhisperer is None  # one task of the five needed
    never = steerability({f"t{t}": [[10, 20], [30, 40]] for t in range(5)})
    assert never.status == "never_reached" and never.artwhisperer is None
