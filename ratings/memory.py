"""The judge's memory: stored exemplars, embedded once, retrieved per judgement (K most similar,
same category and kind, never from the task being judged: evaluator.judge.retrieve enforces it)."""

from __future__ import annotations

import functools
import hashlib
import io

import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Count, Max

from evaluator.judge import Exemplar as ExemplarData
from evaluator.judge import embed_exemplars, image_embeddings, retrieve, text_embeddings

from .models import Exemplar

TEXT_MODEL = "all-MiniLM-L6-v2"


def image_model() -> str:
    return f"{settings.ATELIER_CLIP_MODEL}:{settings.ATELIER_CLIP_PRETRAINED or 'random'}"


def _embedding_model(kind: str) -> str:
    return TEXT_MODEL if kind == "prompt" else image_model()


@transaction.atomic
def exemplars_save(*, exemplars: list[ExemplarData], source: str) -> tuple[int, int]:
    """Embed and store; an exemplar already stored (same kind, category, task and content) is left. Returns (new, kept)."""
    pairs = embed_exemplars(exemplars, clip_model=settings.ATELIER_CLIP_MODEL, clip_pretrained=settings.ATELIER_CLIP_PRETRAINED)
    new = 0
    for data, vector in pairs:
        image_bytes = _png(data.image) if data.image is not None else b""
        sha = hashlib.sha256(data.text.encode() + b"\0" + image_bytes).hexdigest()
        row, created = Exemplar.objects.get_or_create(
            kind=data.kind, category=data.category, task_id=data.task_id, content_sha=sha,
            defaults={"text": data.text, "scores": data.scores, "notes": data.notes, "source": source,
                      "embedding": [float(x) for x in vector], "embedding_model": _embedding_model(data.kind)},
        )  # fmt: skip
        if created and image_bytes:
            row.image.save(f"{data.category.lower()}/{sha[:16]}.png", ContentFile(image_bytes))
        new += created
    return new, len(pairs) - new


def _png(image) -> bytes:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def _stamp() -> tuple:
    return tuple(Exemplar.objects.aggregate(n=Count("pk"), last=Max("pk")).values())


@functools.lru_cache(maxsize=16)
def _pool(category: str, kind: str, model: str, stamp: tuple) -> list[tuple[ExemplarData, np.ndarray]]:
    """Loaded once per process until the exemplar table changes (the stamp is part of the cache key)."""
    from PIL import Image

    pool = []
    for row in Exemplar.objects.filter(category=category, kind=kind, embedding_model=model):
        image = Image.open(row.image).convert("RGB") if row.image else None
        data = ExemplarData(f"db:{row.pk}", row.task_id, row.category, row.kind, row.text, image, row.scores, row.notes)
        pool.append((data, np.asarray(row.embedding, dtype=float)))
    return pool


def exemplars_for(*, task_id: str, category: str, kind: str, prompt: str, image) -> tuple[ExemplarData, ...]:
    pool = _pool(category, kind, _embedding_model(kind), _stamp())
    if not pool or settings.ATELIER_MEMORY_K == 0:
        return ()
    if kind == "prompt":
        query = text_embeddings([prompt])[0]
    else:
        query = image_embeddings([image], settings.ATELIER_CLIP_MODEL, settings.ATELIER_CLIP_PRETRAINED)[0]
    found = retrieve(query, pool, category=category, kind=kind, exclude_task_id=task_id, k=settings.ATELIER_MEMORY_K)
    return tuple(found)
