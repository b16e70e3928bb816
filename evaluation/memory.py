"""The judge's memory: stored exemplars, embedded per embedding model, retrieved per judgement
(K most similar, same category and side, never from the task being judged: evaluator.judge.retrieve
enforces it).

Embeddings are keyed by the identity of the model that computed them (MiniLM as installed for
prompts; the CLIP model and its weights for images: evaluator.judge.encoders). When the judge's
model changes, the exemplars have no embedding for it yet; they are computed on first use (or
ahead of time with `manage.py embed_exemplars`), so the retrieval pool is never silently empty.
"""

from __future__ import annotations

import functools
import io
import logging

import numpy as np
from django.conf import settings
from django.db.models import Count, Max, QuerySet

from evaluation.models import Exemplar, ExemplarEmbedding
from evaluator.judge.encoders import clip_identity, image_embeddings, text_embeddings, text_model_identity
from evaluator.judge.memory import embed_exemplars, retrieve
from evaluator.judge.types import Exemplar as ExemplarData
from evaluator.judge.types import Side

log = logging.getLogger(__name__)


def embedding_model(side: str) -> str:
    """The identity of the model that embeds exemplars of this side under the current settings."""
    if side == Side.PROMPT:
        return text_model_identity()
    return clip_identity(settings.ATELIER_CLIP_MODEL, settings.ATELIER_CLIP_PRETRAINED)


def exemplar_data(row: Exemplar) -> ExemplarData:
    from PIL import Image

    image = None
    if row.image:
        with row.image.open("rb") as handle:
            image = Image.open(io.BytesIO(handle.read())).convert("RGB")
    return ExemplarData(f"db:{row.pk}", row.task_id, row.category, row.side, row.text, image, row.scores, row.notes)


def embeddings_ensure(exemplars: QuerySet[Exemplar]) -> int:
    """Embed, with the current models, every exemplar here that has no embedding for them. Returns how many."""
    done = 0
    for side in Side:
        model = embedding_model(side)
        rows = list(exemplars.filter(side=side).exclude(embeddings__model=model))
        if not rows:
            continue
        pairs = embed_exemplars(
            [exemplar_data(r) for r in rows], clip_model=settings.ATELIER_CLIP_MODEL, clip_pretrained=settings.ATELIER_CLIP_PRETRAINED
        )
        by_id = {r.pk: r for r in rows}
        ExemplarEmbedding.objects.bulk_create(
            [
                ExemplarEmbedding(exemplar=by_id[int(data.exemplar_id.removeprefix("db:"))], model=model, vector=[float(x) for x in vec])
                for data, vec in pairs
            ],
            ignore_conflicts=True,  # another worker embedding the same exemplar at the same time
        )
        done += len(pairs)
        log.info("embedded %d %s exemplar(s) with %s", len(pairs), side, model)
    return done


def _stamp(model: str) -> tuple:
    exemplars = Exemplar.objects.aggregate(n=Count("pk"), last=Max("pk"))
    vectors = ExemplarEmbedding.objects.filter(model=model).aggregate(n=Count("pk"), last=Max("pk"))
    return (*exemplars.values(), *vectors.values())


@functools.lru_cache(maxsize=16)
def _pool(category: str, side: str, model: str, stamp: tuple) -> list[tuple[ExemplarData, np.ndarray]]:
    """Loaded once per process until the exemplars or their embeddings change (the stamp is part of the cache key)."""
    rows = ExemplarEmbedding.objects.filter(model=model, exemplar__category=category, exemplar__side=side).select_related("exemplar")
    return [(exemplar_data(row.exemplar), np.asarray(row.vector, dtype=float)) for row in rows]


def exemplars_for(*, task_id: str, category: str, side: str, prompt: str, image) -> tuple[ExemplarData, ...]:
    if settings.ATELIER_MEMORY_K == 0 or not Exemplar.objects.filter(category=category, side=side).exists():
        return ()
    model = embedding_model(side)
    embeddings_ensure(Exemplar.objects.filter(category=category, side=side))
    pool = _pool(category, side, model, _stamp(model))
    if side == Side.PROMPT:
        query = text_embeddings([prompt])[0]
    else:
        query = image_embeddings([image], settings.ATELIER_CLIP_MODEL, settings.ATELIER_CLIP_PRETRAINED)[0]
    return tuple(retrieve(query, pool, category=category, side=side, exclude_task_id=task_id, k=settings.ATELIER_MEMORY_K))
