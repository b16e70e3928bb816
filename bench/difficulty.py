"""The prompt difficulty predictor on PQPP's test split: ours over several seeds against the published predictors and
a frozen-MiniLM + ridge baseline measured in the same run, with the training time.

    .venv/bin/python bench/difficulty.py --pqpp FOLDER [--seeds 0 1 2] [--epochs N] [--out DIR] [--set NAME=VALUE ...]

FOLDER is the user's own copy of PQPP's splits (train.csv, validation.csv, test.csv). Every seed is fine-tuned on
train (evaluator.difficulty: all-MiniLM-L6-v2, mean pooling, MLP head), its epoch and the kept model (the best seed,
or the seeds' average with --set combine=ensemble) are chosen on validation only, and the test split is read once per
model for the table. The baseline embeds every caption with the untouched MiniLM and fits a ridge regression
(alpha chosen on validation). The artefact goes to --out (default: a temporary folder, so the installed predictor is
left alone; pass models/difficulty to install it). Set ATELIER_TORCH_THREADS=1 on a machine whose cores other
processes keep busy.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def progress_printer():
    """Prints a line every 5% of the run and at its end (a bench's output is read after the run, not watched)."""
    started, shown = time.perf_counter(), [-1]

    def progress(done: int, total: int, what: str) -> None:
        step = done * 20 // total
        if step != shown[0]:
            shown[0] = step
            print(f"  {done:>5}/{total} steps  {time.perf_counter() - started:7.0f} s  {what}", flush=True)

    return progress


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pqpp", required=True, help="folder with PQPP's train.csv, validation.csv and test.csv")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--out", help="artefact folder (default: a temporary one)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="another hyperparameter")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # library notes (e.g. transformers') are not the bench's figures
    logging.basicConfig(level=logging.INFO, format="  %(message)s")
    logging.getLogger("evaluator.judge.encoders").setLevel(logging.WARNING)

    from evaluator import difficulty
    from evaluator.difficulty.network import threads
    from evaluator.difficulty.report import Row, meets_goal, rows, table

    chosen = difficulty.Hyperparameters.parse(args.set)
    if args.epochs:
        chosen["epochs"] = args.epochs
    splits = difficulty.read_splits(args.pqpp)
    print(
        f"splits: train {len(splits.train)}, validation {len(splits.validation)}, test {len(splits.test)} rows; sha256 {splits.sha256[:16]}…"
    )
    with threads() as count:
        print(f"baseline: frozen all-MiniLM-L6-v2 + ridge ({count} torch thread(s))…", flush=True)
        ridge = difficulty.frozen_ridge(splits)
    print(f"  alpha {ridge['alpha']}, validation {ridge['validation']}, {ridge['seconds']:.0f} s")
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-difficulty-")) / "difficulty"
    print(f"ours: seeds {args.seeds}, hyperparameters {chosen or 'defaults'}", flush=True)
    manifest = difficulty.train_seeds(splits_dir=args.pqpp, out_dir=out, seeds=args.seeds, progress=progress_printer(), **chosen)

    baseline = Row(
        "frozen MiniLM + ridge (measured here)",
        f"{ridge['test']['pearson']:.3f}",
        f"{ridge['test']['kendall']:.3f}",
        f"alpha {ridge['alpha']}",
    )
    print()
    print(table([*rows(manifest), baseline]))
    test = manifest["metrics"]["test"]
    per_seed = [s["seconds"] for s in manifest["seeds"]]
    print()
    print(f"hyperparameters: {manifest['hyperparameters']}")
    print(
        f"training: {manifest['training_seconds']:.0f} s for {len(per_seed)} seed(s) "
        f"({min(per_seed):.0f}-{max(per_seed):.0f} s per seed, {manifest['torch_threads']} torch thread(s)); baseline {ridge['seconds']:.0f} s"
    )
    print(
        f"kept model vs baseline: Pearson {test['pearson'] / ridge['test']['pearson']:.3f}x, "
        f"Kendall {test['kendall'] / ridge['test']['kendall']:.3f}x; "
        f"goal (0.600 / 0.448) {'met' if meets_goal(manifest) else 'not met'}"
    )
    print(f"artefact: {out} ({manifest['version']})")


if __name__ == "__main__":
    main()
