"""Prompt difficulty before rendering: a PQPP performance predictor (text only).

PQPP (Poesina et al.) scores captions by how well SDXL and GLIDE rendered them, rated by people on −1..2. This
package fine-tunes all-MiniLM-L6-v2 with a regression head on a user's copy of PQPP's splits and predicts, for any
prompt, the averaged generative score before a single image is made.

    from evaluator import difficulty
    predictor = difficulty.load("models/difficulty")       # PredictorMissing if none is trained
    predictor.predict(["a red cube on a blue sphere"])     # [score on −1..2]
    difficulty.train("path/to/pqpp", "models/difficulty", seed=0, epochs=4)

Importing this package is cheap: torch, transformers and safetensors are imported when a model is built or trained.
Plain library: no Django (docs/difficulty.md).
"""

from evaluator.difficulty.artefact import DifficultyPredictor, PredictorInvalid, PredictorMissing, load, read_manifest
from evaluator.difficulty.data import Split, Splits, SplitsError, read_split, read_splits
from evaluator.difficulty.training import Hyperparameters, Progress, correlations, frozen_ridge, train, train_seeds

__all__ = [
    "DifficultyPredictor",
    "Hyperparameters",
    "PredictorInvalid",
    "PredictorMissing",
    "Progress",
    "Split",
    "Splits",
    "SplitsError",
    "correlations",
    "frozen_ridge",
    "load",
    "read_manifest",
    "read_split",
    "read_splits",
    "train",
    "train_seeds",
]
