"""Steerability two ways on the same synthetic runs: ArtWhisperer's Algorithm 1 against the running-best chain.

    .venv/bin/python bench/steerability.py [--seeds 40]

Runs come from tests/test_steerability_artwhisperer.py's generator (6 targets a seed, 2, 4 or 8 trajectories a
target, up to 8 rounds, a target-specific improvement with noise and falls). Per target: the running-best chain's
exact expected rounds and Algorithm 1's Monte Carlo stopping time (10,000 walks); then their ratio and difference,
and per category (a seed's six targets) both figures where Algorithm 1's is given.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluator.metrics.steerability import artwhisperer_chain, expected_rounds, fit_chain, simulate_rounds, steerability  # noqa: E402
from tests.test_steerability_artwhisperer import synthetic_runs  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=40)
    args = parser.parse_args()
    ratios, differences, categories = [], [], []
    for seed in range(args.seeds):
        rng = random.Random(seed)
        runs = synthetic_runs(rng, targets=6, per_target=rng.choice([2, 4, 8]), rounds=8)
        for i, (_, users) in enumerate(sorted(runs.items())):
            ours = expected_rounds(fit_chain(users))
            theirs = simulate_rounds(artwhisperer_chain(users), seed=i)[0]
            ratios.append(theirs / ours)
            differences.append(theirs - ours)
        figure = steerability(runs)
        if figure.artwhisperer is not None:
            categories.append((np.mean([t.expected_rounds for t in figure.targets]), figure.artwhisperer, figure.status))
        print(f"seed {seed + 1}/{args.seeds}", file=sys.stderr, end="\r")
    print(
        f"{len(ratios)} targets: Algorithm 1 / running-best chain {np.mean(ratios):.2f}x on average "
        f"(median {np.median(ratios):.2f}, max {max(ratios):.2f}); difference {np.mean(differences):.2f} rounds on average, "
        f"at most {max(differences):.2f}"
    )
    print(
        f"{len(categories)} categories with both figures ({sum(s == 'shown' for *_, s in categories)} with the running-best "
        f"chain's shown): mean {np.mean([o for o, _, _ in categories]):.2f} rounds (running-best) vs "
        f"{np.mean([a for _, a, _ in categories]):.2f} (Algorithm 1)"
    )


if __name__ == "__main__":
    main()
