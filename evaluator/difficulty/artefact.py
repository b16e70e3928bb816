"""A trained predictor on disk, and loading it back.

An artefact is a folder: manifest.json (version, the weights' and the training data's sha256, hyperparameters,
seed(s), validation and test metrics, training seconds, library versions), one model-<seed>.safetensors per member
(the fine-tuned encoder with its head; several members are averaged), and the tokenizer and encoder config they were
trained with. `load` checks the manifest and every weights file's hash before anything is used; the network is built
on the first `predict`, so importing this module and loading a manifest never import torch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cachetools import LRUCache

log = logging.getLogger(__name__)
MANIFEST = "manifest.json"
FORMAT = 1
KIND = "minilm-finetuned"
TRAIN_COMMAND = "manage.py train_difficulty --pqpp PATH"


class PredictorMissing(Exception):
    """No trained predictor where one was looked for."""

    def __init__(self, path: str | Path, why: str = "no predictor") -> None:
        self.path = Path(path)
        super().__init__(
            f"{why} at {self.path}: train one with `{TRAIN_COMMAND}` (a folder holding PQPP's train.csv, validation.csv and test.csv)"
        )


class PredictorInvalid(Exception):
    """An artefact that exists but cannot be trusted: an unreadable manifest or a weights file whose hash differs."""


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def version_of(weights: Sequence[dict[str, Any]]) -> str:
    """The artefact's version: the format, the kind, and 12 hex of its weights' hashes (a retrained model is a new version)."""
    joined = hashlib.sha256("".join(w["sha256"] for w in weights).encode()).hexdigest()
    return f"pqpp-{KIND}.{FORMAT}+{joined[:12]}"


_hashes: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256: a second load need not read 90 MB again
_hashes_lock = threading.Lock()


def _checked_sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _hashes_lock:
        if key not in _hashes:
            _hashes[key] = file_sha256(path)
        return _hashes[key]


def read_manifest(folder: str | Path) -> dict[str, Any]:
    folder = Path(folder)
    path = folder / MANIFEST
    if not folder.is_dir():
        raise PredictorMissing(folder, "no predictor folder")
    if not path.is_file():
        raise PredictorMissing(folder, f"no {MANIFEST}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PredictorInvalid(f"{path}: unreadable manifest ({exc}); train again with `{TRAIN_COMMAND}`") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or not manifest.get("weights"):
        raise PredictorInvalid(f"{path}: not a format-{FORMAT} difficulty manifest; train again with `{TRAIN_COMMAND}`")
    return manifest


def verify(folder: Path, manifest: dict[str, Any]) -> None:
    for member in manifest["weights"]:
        path = folder / member["file"]
        if not path.is_file():
            raise PredictorInvalid(f"{path}: weights file named in {MANIFEST} is missing; train again with `{TRAIN_COMMAND}`")
        found = _checked_sha256(path)
        if found != member["sha256"]:
            raise PredictorInvalid(
                f"{path}: sha256 {found[:16]}… does not match {MANIFEST} ({member['sha256'][:16]}…): "
                f"the weights changed after training; train again with `{TRAIN_COMMAND}`"
            )


# weights hashes -> [(regressor, tokenizer)]: one build per process and artefact, the two most recently used kept
_networks: LRUCache[tuple[str, ...], Any] = LRUCache(maxsize=2)
_networks_lock = threading.Lock()


class DifficultyPredictor:
    """A trained predictor: `predict(texts)` gives each prompt's predicted PQPP generative score (−1..2)."""

    def __init__(self, folder: Path, manifest: dict[str, Any]) -> None:
        self.folder = folder
        self.manifest = manifest
        self.version: str = manifest["version"]
        test = manifest.get("metrics", {}).get("test", {})
        quality = f", PQPP test Pearson {test['pearson']:.3f}" if "pearson" in test else ""
        self.label = f"PQPP difficulty predictor {self.version} (text only{quality})"

    def __repr__(self) -> str:
        return f"<DifficultyPredictor {self.version} at {self.folder}>"

    def _networks(self) -> list[tuple[Any, Any]]:
        key = tuple(w["sha256"] for w in self.manifest["weights"])
        with _networks_lock:
            if key not in _networks:
                _networks[key] = [self._build(w["file"]) for w in self.manifest["weights"]]
            return _networks[key]

    def _build(self, file: str) -> tuple[Any, Any]:
        from safetensors.torch import load_file

        from evaluator.difficulty import network

        hp = self.manifest["hyperparameters"]
        model, tokenizer = network.build(hidden=hp["hidden"], dropout=hp["dropout"], config_dir=self.folder, pretrained=False)
        model.load_state_dict(load_file(self.folder / file))
        model.eval()
        return model, tokenizer

    def predict(self, texts: Sequence[str]) -> list[float]:
        """Predicted averaged generative score for each text, in order (batched, deterministic, clipped to −1..2)."""
        if isinstance(texts, str):
            raise TypeError("predict takes a sequence of texts, not one string")
        if not texts:
            return []
        from evaluator.difficulty import network

        hp = self.manifest["hyperparameters"]
        mean, std = self.manifest["normalisation"]["mean"][0], self.manifest["normalisation"]["std"][0]
        total = None
        with network.threads():
            for model, tokenizer in self._networks():
                ids = network.encode(tokenizer, [str(t) for t in texts], hp["max_length"])
                first = network.outputs(model, tokenizer, ids, hp["eval_batch_size"])[:, 0]
                total = first if total is None else total + first
        low, high = self.manifest["scale"]
        scores = (total / len(self.manifest["weights"])) * std + mean
        return [float(min(max(s, low), high)) for s in scores.tolist()]


def load(path: str | Path) -> DifficultyPredictor:
    """The predictor saved in `path`. PredictorMissing if the folder or its manifest is absent; PredictorInvalid if
    the manifest is unreadable or a weights file's sha256 differs from the manifest's."""
    folder = Path(path)
    manifest = read_manifest(folder)
    verify(folder, manifest)
    return DifficultyPredictor(folder, manifest)


def _noted(function: Any, path: str, exc_info: Any) -> None:
    log.warning("could not remove %s after writing a difficulty artefact: %s", path, exc_info[1])


def write(out_dir: str | Path, manifest: dict[str, Any], members: dict[str, Any], tokenizer: Any, config: Any) -> dict[str, Any]:
    """Save an artefact: weights, hashes and version go into the manifest, which is written last; the folder is
    replaced whole (built beside it, then renamed over it), so a reader never sees half of one."""
    from safetensors.torch import save_file

    out, staging = staging_beside(out_dir)
    try:
        weights = []
        for name, state in members.items():
            file = f"model-{name}.safetensors"
            save_file(state, staging / file, metadata={"format": "pt"})
            (staging / file).chmod(0o644)  # readable by a web process running as another user, as the rest
            weights.append({"file": file, "sha256": file_sha256(staging / file), "member": name})
        tokenizer.save_pretrained(staging)
        config.save_pretrained(staging)
        manifest = {"format": FORMAT, "kind": KIND, "version": version_of(weights), "weights": weights, **manifest}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    except BaseException:
        shutil.rmtree(staging, onerror=_noted)
        raise
    install(staging, out)
    return manifest


def staging_beside(out_dir: str | Path) -> tuple[Path, Path]:
    """(the artefact folder, a new empty folder beside it to build the artefact in)."""
    out = Path(out_dir).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    staging.chmod(0o755)  # mkdtemp's folder is private; the web process may run as another user
    return out, staging


def install(staging: Path, out: Path) -> None:
    """Rename a built artefact over `out` (the previous one stays if anything fails); staging is gone after."""
    old = out.with_name(f".{out.name}-old-{os.getpid()}")
    try:
        if out.exists():
            out.rename(old)
        staging.rename(out)
    except BaseException:
        if old.exists() and not out.exists():
            old.rename(out)  # the previous artefact stays installed
        shutil.rmtree(staging, onerror=_noted)
        raise
    if old.exists():
        shutil.rmtree(old, onerror=_noted)
