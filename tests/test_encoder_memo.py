"""Embeddings are remembered per exact batch: a second request for the same texts or pixels costs no model call
and is bit-identical to computing it again."""

from __future__ import annotations

import numpy as np
import pytest
from cachetools import LRUCache
from PIL import Image

from evaluator.judge import encoders
from evaluator.judge.config import DEFAULTS

CLIP = (DEFAULTS.clip_model, "random")


@pytest.fixture(autouse=True)
def _fresh():
    encoders._embeddings.clear()
    yield
    encoders._embeddings.clear()


def test_same_batch_is_computed_once_and_bit_identical(monkeypatch):
    items = ["a red sun", "three blue hills"]
    first = encoders.clip_text_embeddings(items, *CLIP)
    model, _, _ = encoders.clip_model(*CLIP)
    calls = []
    original = model.encode_text
    monkeypatch.setattr(model, "encode_text", lambda tokens: calls.append(1) or original(tokens))
    again = encoders.clip_text_embeddings(list(items), *CLIP)
    assert again is first and calls == [] and not again.flags.writeable
    encoders._embeddings.clear()
    assert np.array_equal(encoders.clip_text_embeddings(items, *CLIP), first) and calls == [1]


def test_images_are_remembered_by_their_pixels_not_the_object():
    one, same = Image.new("RGB", (64, 64), (200, 30, 30)), Image.new("RGB", (64, 64), (200, 30, 30))
    other = Image.new("RGB", (64, 64), (30, 30, 200))
    assert encoders.image_embeddings([same], *CLIP) is encoders.image_embeddings([one], *CLIP)
    assert not np.array_equal(encoders.image_embeddings([other], *CLIP), encoders.image_embeddings([one], *CLIP))


def test_the_memory_is_bounded(monkeypatch):
    monkeypatch.setattr(encoders, "_embeddings", LRUCache(maxsize=3))  # EMBEDDINGS_KEPT batches in the real one
    for k in range(5):
        encoders.text_embeddings([f"sentence {k}"])
    assert len(encoders._embeddings) == 3 and ("minilm", ("sentence 4",)) in encoders._embeddings
