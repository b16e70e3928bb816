"""Confidence intervals for the mean of bounded scores, compared on the same draws.

    .venv/bin/python bench/mean_intervals.py [--runs 2000] [--quick] [--seed 20261130]

Each method below has a finite-sample proof for every distribution on [0, 1] and every n (scores on 0-100 are
scaled by 1/100), two-sided at α = 0.05:

- Hoeffding (1963): x̄ ± sqrt(log(2/α) / (2n));
- Bentkus (2004), the binomial-tail bound e·P°(B ≥ s), inverted for each side at α/2;
- Maurer & Pontil (2009), Theorem 4 (empirical Bernstein), α/2 per side;
- the betting interval (evaluator.metrics.betting, Waudby-Smith & Ramdas's hedged capital: the head-to-head decisions');
- STaR-Bets (Voráček & Orabona, 2025), α/2 per side, deterministic (reject at wealth 1/δ);
- STaR-Bets with the authors' code's randomised threshold (wealth U/δ, U uniform): also valid, but two runs on the
  same scores give different intervals, so it is shown for reference and never recommended;
- three intersections of two methods, each at α/2 (a Bonferroni split: valid for any pair fixed in advance).

For every score shape and n, all methods see the same draws. Every interval is clipped to [0, 100] before its width
is measured. Progress goes to stderr; the tables to stdout: mean width and coverage per shape, the widths averaged
over shapes, the narrowest method per n, the worst coverage per method, and the cells the audit asked about.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluator.metrics.betting import betting_rows  # noqa: E402

ALPHA = 0.05
SIZES = (1, 2, 4, 8, 12, 16, 20, 30, 50, 100)
GRID = 1000  # STaR-Bets' candidate means k/GRID: each end is conservative by at most 1/GRID (0.1 point on 0-100)
BISECTION_STEPS = 40  # Bentkus: each end within 2^-40, rounded outwards
CHUNK = 250  # STaR-Bets: rows per block (keeps its rows × GRID arrays in cache)

Interval = tuple[np.ndarray, np.ndarray]
Method = Callable[[np.ndarray, float], Interval]


def _two_clusters(rng: np.random.Generator, size) -> np.ndarray:
    """60 % uniform on [0.1, 0.3], 40 % uniform on [0.75, 0.95]: mean 0.6·0.2 + 0.4·0.85 = 0.46."""
    return np.where(rng.random(size) < 0.6, rng.uniform(0.1, 0.3, size), rng.uniform(0.75, 0.95, size))


# Score shapes on [0, 1] (size: runs × n), each with its exact mean.
SHAPES: dict[str, tuple[Callable[[np.random.Generator, tuple[int, int]], np.ndarray], float]] = {
    "Bernoulli(0.97)": (lambda rng, size: (rng.random(size) < 0.97) * 1.0, 0.97),
    "Bernoulli(0.5)": (lambda rng, size: (rng.random(size) < 0.5) * 1.0, 0.5),
    "Bernoulli(0.03)": (lambda rng, size: (rng.random(size) < 0.03) * 1.0, 0.03),
    "Beta(0.5,0.5)": (lambda rng, size: rng.beta(0.5, 0.5, size), 0.5),
    "Beta(5,1) ceiling": (lambda rng, size: rng.beta(5, 1, size), 5 / 6),
    "Beta(1,5) floor": (lambda rng, size: rng.beta(1, 5, size), 1 / 6),
    "five levels": (lambda rng, size: rng.integers(0, 5, size) / 4, 0.5),
    "point mass 0.7": (lambda rng, size: np.full(size, 0.7), 0.7),
    "two clusters": (_two_clusters, 0.46),
    "uniform": (lambda rng, size: rng.random(size), 0.5),
    "spike 0.99 / 0": (lambda rng, size: (rng.random(size) < 0.9) * 0.99, 0.891),
}


def hoeffding(x: np.ndarray, alpha: float) -> Interval:
    """Hoeffding (1963), Theorem 2 for [0, 1] values, both tails at α/2: x̄ ± sqrt(log(2/α) / (2n))."""
    half = math.sqrt(math.log(2 / alpha) / (2 * x.shape[1]))
    mean = x.mean(axis=1)
    return mean - half, mean + half


def maurer_pontil(x: np.ndarray, alpha: float) -> Interval:
    """Maurer & Pontil (2009), "Empirical Bernstein bounds and sample variance penalization", Theorem 4: for n ≥ 2
    i.i.d. values in [0, 1], with probability ≥ 1 − δ, μ − x̄ ≤ sqrt(2 V_n log(2/δ) / n) + 7 log(2/δ) / (3(n − 1)),
    V_n the sample variance (n − 1 in the denominator). Each side at δ = α/2 (the other side: the theorem applied to
    1 − x). n = 1: the whole range."""
    count, n = x.shape
    if n < 2:
        return np.zeros(count), np.ones(count)
    log_term = math.log(2 / (alpha / 2))
    half = np.sqrt(2 * x.var(axis=1, ddof=1) * log_term / n) + 7 * log_term / (3 * (n - 1))
    mean = x.mean(axis=1)
    return mean - half, mean + half


def bentkus_tail(total: np.ndarray, n: int, mu: np.ndarray) -> np.ndarray:
    """Bentkus (2004), "On Hoeffding's inequalities", Ann. Probab. 32(2), 1650-1673: for X_1 … X_n independent in
    [0, 1] with mean μ, P(ΣX_i ≥ s) ≤ e · P°(B ≥ s), B ~ Binomial(n, μ), where P° equals P(B ≥ s) at the jump points
    s ∈ {0, …, n} and is interpolated between neighbouring ones. This returns e·P° with linear interpolation, which is
    at least the log-linear one (arithmetic ≥ geometric mean), so the bound holds under either reading."""
    k = np.floor(total)
    theta = total - k
    at_k = stats.binom.sf(k - 1, n, mu)  # P(B ≥ k)
    at_next = stats.binom.sf(k, n, mu)  # P(B ≥ k + 1)
    return math.e * ((1 - theta) * at_k + theta * at_next)


def bentkus_lower(total: np.ndarray, n: int, delta: float) -> np.ndarray:
    """The one-sided 1 − δ lower bound from Bentkus's tail: the largest μ with e·P°_μ(B ≥ ΣX_i) ≤ δ (that tail grows
    with μ, so these μ form [0, a]; 0 when μ = 0 is not excluded), by bisection, rounded down."""
    below, above = np.zeros(total.shape), np.ones(total.shape)
    for _ in range(BISECTION_STEPS):
        middle = (below + above) / 2
        excluded = bentkus_tail(total, n, middle) <= delta
        below, above = np.where(excluded, middle, below), np.where(excluded, above, middle)
    return np.where(bentkus_tail(total, n, below) <= delta, below, 0.0)


def bentkus(x: np.ndarray, alpha: float) -> Interval:
    """Bentkus's bound two-sided, α/2 per side (the upper end: the lower bound of 1 − x, mirrored)."""
    n = x.shape[1]
    return bentkus_lower(x.sum(axis=1), n, alpha / 2), 1 - bentkus_lower((1 - x).sum(axis=1), n, alpha / 2)


def betting(x: np.ndarray, alpha: float) -> Interval:
    """The betting interval: evaluator.metrics.betting.betting_rows (Waudby-Smith & Ramdas 2024, hedged
    capital, predictable plug-in bets, truncation c = 1/2)."""
    return betting_rows(x, 0.0, 1.0, 1 - alpha)


def star_log_wealth(x: np.ndarray, delta: float, grid: np.ndarray) -> np.ndarray:
    """STaR-Bets' final log-wealth against each candidate mean m in `grid` (rows × grid points): Algorithm 4 of
    Voráček & Orabona, "STaR-Bets: Sequential Target-Recalculating Bets for Tighter Confidence Intervals" (NeurIPS 2025,
    arXiv 2505.22422) with the implementation details of its Appendix D, as its authors' code runs it
    (github.com/vvoracek/STaR-bets-confidence-interval, star.py): wealth W ← W · (1 + ℓ (x_t − m)), 0 ≤ ℓ ≤ 1/m, with
    the bet recomputed before each x_t from the wealth W and the s = t − 1 values seen, n − s rounds left:

        ℓ = min(1/m, sqrt(2 · max(log(1/(W δ)), 0) / ((n − s) · v))),
        v = min{m(1 − m), (1/s) Σ_{i ≤ s} (x_i − m)² + c·m·n/s²},   c = 1,

    (for s = 0, v = m(1 − m)). The second-moment estimate's additive term is Appendix D.3's c·m·n/(t − 1)² with c = 1 (the
    main text's 10·log(8/α)·n/(t − 1)² instantiated); its clipping at m(1 − m) is Appendix D.1's. The cap 1/m on ℓ is
    the authors' code's (1/(m + 10⁻⁴) there) and the end of the range the paper's Section 4 allows, ℓ ∈ [1/(m − 1), 1/m]
    (a smaller cap, such as 1, would be valid too but bet less). The bet uses past values only, so under mean m the
    wealth is a nonnegative martingale and P(W_n ≥ 1/δ) ≤ δ (Markov; the paper's Theorem 2). Once W reaches 1/δ the bet
    is 0: the wealth stays. evaluator.metrics.star gives the same ends without running every candidate
    (tests/test_star.py)."""
    count, n = x.shape
    m = grid[None, :]
    target = math.log(1 / delta)
    cap = m * (1 - m)
    log_wealth = np.zeros((count, grid.size))
    squares = np.zeros((count, grid.size))
    with np.errstate(divide="ignore"):
        for seen in range(n):
            spread = cap if seen == 0 else np.minimum(cap, m * n / seen**2 + squares / seen)
            bet = np.sqrt(2 * np.maximum(target - log_wealth, 0) / ((n - seen) * spread))
            step = x[:, seen, None] - m
            log_wealth += np.log1p(np.maximum(np.minimum(bet, 1 / m) * step, -1.0))  # ℓ = 1/m and x = 0: wealth 0
            squares += step**2
    return log_wealth


def star_lower(log_wealth: np.ndarray, threshold: np.ndarray, size: int) -> np.ndarray:
    """The lower bound from the wealth on the grid m_k = k/size, k = 1 … size − 1 (m_size = 1 is never rejected: its
    bets never win). Rejecting m_k rejects every m in (m_{k−1}, m_k]: a bettor there who copies m_k's bets (predictable,
    and ℓ ≤ 1/m_k ≤ 1/m) ends with at least m_k's wealth. So the bound is m_{k−1} for the first k not rejected."""
    kept = np.concatenate([log_wealth < threshold[:, None], np.ones((log_wealth.shape[0], 1), bool)], axis=1)
    return np.argmax(kept, axis=1) / size


def star_intervals(x: np.ndarray, alpha: float, shifts: list[np.ndarray], grid: int = GRID) -> list[Interval]:
    """STaR-Bets two-sided, α/2 per side (the upper end: the lower bound of 1 − x, mirrored), one interval per entry of
    `shifts` (rows × 2: the log-threshold's shift for each row and side) from the same wealth. A shift of 0 is the
    deterministic test (reject at wealth 1/δ); log U with U uniform and independent of the scores is the authors'
    code's randomised threshold U/δ (github.com/vvoracek/STaR-bets-confidence-interval): P(W_n ≥ U/δ) =
    E min(1, δW_n) ≤ δ."""
    delta, points = alpha / 2, np.arange(1, grid) / grid
    ends = [(np.empty(x.shape[0]), np.empty(x.shape[0])) for _ in shifts]
    for start in range(0, x.shape[0], CHUNK):
        block = slice(start, start + CHUNK)
        for side, values in enumerate((x[block], 1 - x[block])):
            log_wealth = star_log_wealth(values, delta, points)
            for (lower, upper), shift in zip(ends, shifts):
                bound = star_lower(log_wealth, math.log(1 / delta) + shift[block, side], grid)
                if side == 0:
                    lower[block] = bound
                else:
                    upper[block] = 1 - bound
    return ends


def star_bets(x: np.ndarray, alpha: float) -> Interval:
    """STaR-Bets, deterministic (see star_intervals)."""
    return star_intervals(x, alpha, [np.zeros((x.shape[0], 2))])[0]


SINGLE: dict[str, Method] = {
    "Hoeffding": hoeffding,
    "Bentkus": bentkus,
    "Maurer-Pontil": maurer_pontil,
    "betting": betting,
    "STaR-Bets": star_bets,
}
RANDOMISED = "STaR-Bets, randomised"
PAIRS = {
    "Bentkus ∩ betting": ("Bentkus", "betting"),
    "Bentkus ∩ STaR": ("Bentkus", "STaR-Bets"),
    "betting ∩ STaR": ("betting", "STaR-Bets"),
}
METHODS = [*SINGLE, RANDOMISED, *PAIRS]
RECOMMENDABLE = [name for name in METHODS if name != RANDOMISED]


def intervals(x: np.ndarray, uniforms: np.ndarray) -> dict[str, Interval]:
    """Every method's interval of each row, clipped to [0, 1]: the single methods at α, the randomised STaR-Bets, and
    each pair's intersection of its two methods at α/2."""
    out = {name: method(x, ALPHA) for name, method in SINGLE.items() if method is not star_bets}
    out["STaR-Bets"], out[RANDOMISED] = star_intervals(x, ALPHA, [np.zeros_like(uniforms), np.log(uniforms)])
    halves = {name: SINGLE[name](x, ALPHA / 2) for name in {part for pair in PAIRS.values() for part in pair}}
    for name, (first, second) in PAIRS.items():
        out[name] = np.maximum(halves[first][0], halves[second][0]), np.minimum(halves[first][1], halves[second][1])
    return {name: (np.clip(low, 0, 1), np.clip(high, 0, 1)) for name, (low, high) in out.items()}


def measure(x: np.ndarray, truth: float, uniforms: np.ndarray) -> dict[str, tuple[float, float]]:
    """(mean width on 0-100, share of rows covering `truth`) per method. An empty intersection has width 0 and covers
    nothing."""
    out = {}
    for name, (low, high) in intervals(x, uniforms).items():
        out[name] = float(np.mean(np.maximum(high - low, 0)) * 100), float(np.mean((low <= truth) & (truth <= high)))
    return out


def run(runs: int, seed: int, sizes: tuple[int, ...]) -> dict[str, dict[int, dict[str, tuple[float, float]]]]:
    """results[shape][n][method] = (width, coverage); each (shape, n) cell draws its own rows, shared by all methods."""
    results: dict[str, dict[int, dict[str, tuple[float, float]]]] = {}
    started = time.perf_counter()
    for index, (shape, (draw, truth)) in enumerate(SHAPES.items()):
        results[shape] = {}
        for n in sizes:
            rng = np.random.default_rng([seed, index, n])
            x = draw(rng, (runs, n))
            results[shape][n] = measure(x, truth, 1 - rng.random((runs, 2)))  # uniforms in (0, 1]
        print(f"  {shape}: done ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    return results


def table(title: str, rows: dict[str, list[str]], sizes: tuple[int, ...]) -> None:
    """A markdown table: one row per key, one column per n."""
    print(f"\n{title}\n")
    print("| method | " + " | ".join(f"n={n}" for n in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(cells) + " |")


def average_width(results, method: str, n: int) -> float:
    return float(np.mean([results[shape][n][method][0] for shape in results]))


def report(results, sizes: tuple[int, ...], runs: int) -> None:
    """Per-shape tables, then the summaries."""
    for shape in results:
        rows = {m: [f"{results[shape][n][m][0]:.1f} ({results[shape][n][m][1]:.3f})" for n in sizes] for m in METHODS}
        table(f"{shape}: mean width on 0-100 (coverage), {runs:,} draws per cell", rows, sizes)
    rows = {m: [f"{average_width(results, m, n):.1f}" for n in sizes] for m in METHODS}
    table(f"Mean width on 0-100, averaged over the {len(results)} shapes", rows, sizes)
    narrowest(results, sizes)
    worst_coverage(results, sizes)
    focus(results, sizes)


def narrowest(results, sizes: tuple[int, ...]) -> None:
    print("\nNarrowest per n, averaged over shapes (the randomised STaR-Bets left out)\n")
    print("| n | narrowest | width | runner-up | width | narrowest single method | width |")
    print("|---:|---|---:|---|---:|---|---:|")
    for n in sizes:
        ranked = sorted(RECOMMENDABLE, key=lambda m: average_width(results, m, n))
        single = min(SINGLE, key=lambda m: average_width(results, m, n))
        cells = [ranked[0], f"{average_width(results, ranked[0], n):.1f}", ranked[1], f"{average_width(results, ranked[1], n):.1f}"]
        print(f"| {n} | " + " | ".join(cells) + f" | {single} | {average_width(results, single, n):.1f} |")


def worst_coverage(results, sizes: tuple[int, ...]) -> None:
    print("\nWorst coverage per method (over every shape and n)\n")
    print("| method | worst coverage | cell |")
    print("|---|---:|---|")
    for method in METHODS:
        cover, shape, n = min((results[s][n][method][1], s, n) for s in results for n in sizes)
        print(f"| {method} | {cover:.3f} | {shape}, n={n} |")


def focus(results, sizes: tuple[int, ...]) -> None:
    """The audit's reference cell and the ceiling and floor shapes at n = 8-20."""
    if 8 in sizes:
        print("\nReference cell: Bernoulli(0.97), n = 8 (the audit: Hoeffding/Bentkus 47.6, betting 55.9)\n")
        print("| method | width | coverage |")
        print("|---|---:|---:|")
        for method in METHODS:
            width, cover = results["Bernoulli(0.97)"][8][method]
            print(f"| {method} | {width:.1f} | {cover:.3f} |")
    middle = tuple(n for n in sizes if 8 <= n <= 20)
    for shape in ("Beta(5,1) ceiling", "Beta(1,5) floor", "Bernoulli(0.97)", "spike 0.99 / 0"):
        rows = {m: [f"{results[shape][n][m][0]:.1f}" for n in middle] for m in METHODS}
        table(f"{shape}: mean width on 0-100", rows, middle)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2000, help="draws per (shape, n) cell (default 2,000)")
    parser.add_argument("--quick", action="store_true", help="200 draws per cell")
    parser.add_argument("--seed", type=int, default=20261130)
    options = parser.parse_args()
    runs = 200 if options.quick else options.runs
    started = time.perf_counter()
    results = run(runs, options.seed, SIZES)
    report(results, SIZES, runs)
    print(f"\n{runs:,} draws per cell, α = {ALPHA}, STaR-Bets grid 1/{GRID}; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
