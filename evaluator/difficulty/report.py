"""The test-split table that the training command and the benchmark print: ours per seed, mean ± std, the kept
model, and the published PQPP predictors beside them (figures quoted from the paper, measured there, not here)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Row:
    name: str
    pearson: str
    kendall: str
    note: str = ""


# PQPP (Poesina et al.), generative task, correlation with the human score averaged over SDXL and GLIDE, test split.
PUBLISHED = (
    Row("PQPP: linguistic features (pre-generation)", "<0.16", "<0.16", "published"),
    Row("PQPP: fine-tuned BERT (pre-generation)", "0.568", "0.416", "published"),
    Row("PQPP: fine-tuned CLIP (post-generation, sees the images)", "0.600", "0.448", "published"),
)
GOAL = (0.600, 0.448)


def _spread(values: Sequence[float]) -> str:
    mean = statistics.fmean(values)
    return f"{mean:.3f} ± {statistics.stdev(values):.3f}" if len(values) > 1 else f"{mean:.3f}"


def rows(manifest: dict[str, Any]) -> list[Row]:
    """Our rows from a manifest: each seed on test, their mean ± std (sample std), and the kept model."""
    seeds = manifest["seeds"]
    found = [
        Row(
            f"ours: seed {s['seed']} (epoch {s['epoch']})",
            f"{s['test']['pearson']:.3f}",
            f"{s['test']['kendall']:.3f}",
            f"{s['seconds']:.0f} s",
        )
        for s in seeds
    ]
    if len(seeds) > 1:
        found.append(
            Row(
                f"ours: mean ± std over {len(seeds)} seeds",
                _spread([s["test"]["pearson"] for s in seeds]),
                _spread([s["test"]["kendall"] for s in seeds]),
            )
        )
    kept = manifest["seed"]
    what = f"seeds {', '.join(map(str, kept))} averaged" if isinstance(kept, list) else f"seed {kept}, best on validation"
    test = manifest["metrics"]["test"]
    found.append(Row(f"ours: kept model ({what})", f"{test['pearson']:.3f}", f"{test['kendall']:.3f}", manifest["version"]))
    return found


def table(ours: Sequence[Row], others: Sequence[Row] = PUBLISHED) -> str:
    """A plain-text table, predictors down, Pearson and Kendall's tau-b across."""
    lines = [Row("predictor (PQPP test split, avg_generative_score)", "Pearson", "Kendall tau-b", "")]
    lines += [*ours, *others]
    width = max(len(r.name) for r in lines)
    text = [f"{r.name:<{width}}  {r.pearson:>13}  {r.kendall:>13}  {r.note}".rstrip() for r in lines]
    text.insert(1, "-" * len(text[0]))
    return "\n".join(text)


def meets_goal(manifest: dict[str, Any]) -> bool:
    test = manifest["metrics"]["test"]
    return test["pearson"] >= GOAL[0] and test["kendall"] >= GOAL[1]
