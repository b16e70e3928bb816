"""Choosing an IM target among several renders of its seed prompt (ArtWhisperer's rule).

ArtWhisperer renders the hidden prompt with several seeds and keeps the candidate whose
median distance, between unit-normalised CLIP image embeddings, to a reference set of
renders is smallest: the most typical image for that prompt, not a lucky outlier.
With no separate reference set the other candidates serve as references.
"""

from __future__ import annotations

import numpy as np


def unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=float)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def median_distances(candidates: np.ndarray, references: np.ndarray | None = None) -> np.ndarray:
    """For each candidate: median L2 distance to the references (to the other candidates when none are given)."""
    c = unit(candidates)
    r = c if references is None else unit(references)
    distances = np.linalg.norm(c[:, None, :] - r[None, :, :], axis=2)
    if references is None:
        if len(c) < 2:
            return np.zeros(len(c))
        mask = ~np.eye(len(c), dtype=bool)
        return np.array([np.median(row[m]) for row, m in zip(distances, mask)])
    return np.median(distances, axis=1)


def most_representative(candidates: np.ndarray, references: np.ndarray | None = None) -> int:
    """Index of the candidate with the smallest median distance (the first one on ties)."""
    return int(np.argmin(median_distances(candidates, references)))
