"""A content key for one skill run, so a stored reply can be reused instead of calling the model again.

cache_key() is the sha256 of a canonical JSON document (sorted keys, no whitespace,
UTF-8) holding everything that decides the request or the computation: skill, judge id,
judge version, the whole task, the prompt, the images (as sha256 of their PNG bytes), the
calibration exemplars (ids, texts, images, scores, notes) and the IM target (image and
reference). The judge version carries the spec's fingerprint (templates, thresholds, image
size limit, CLIP model and weights: see spec.py), so a changed judge never finds an old
reply. Re-scoring an unchanged submission with the same judge finds every key already stored.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
import weakref
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL.Image import Image

    from .types import Exemplar, TargetInput, TaskInput

CACHE_KEY_SCHEMA = "atelier-judge-cache-v2"


_digests: dict[int, str] = {}  # id(image) -> digest, for images still alive (see image_digest)
_digests_lock = threading.Lock()


def image_digest(image: Image | None) -> str | None:
    """sha256 hex of the image's PNG encoding (None for no image).

    Remembered per image object while it lives: the skills of one image each ask for its key, and encoding a
    full-size render as PNG takes far longer than the rest of the key. Inputs are read-only here (skills resize
    copies), so an object's digest cannot go stale; it is forgotten when the object is collected."""
    if image is None:
        return None
    with _digests_lock:
        known = _digests.get(id(image))
    if known is not None:
        return known
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    digest = hashlib.sha256(buffer.getvalue()).hexdigest()
    with _digests_lock:
        _digests[id(image)] = digest
    weakref.finalize(image, _forget, id(image))
    return digest


def _forget(key: int) -> None:
    with _digests_lock:
        _digests.pop(key, None)


def _exemplar(ex: Exemplar) -> dict[str, Any]:
    return {
        "exemplar_id": ex.exemplar_id,
        "task_id": ex.task_id,
        "category": ex.category,
        "side": ex.side,
        "text": ex.text,
        "image": image_digest(ex.image),
        "scores": dict(ex.scores),
        "notes": dict(ex.notes),
    }


def cache_key(
    skill: str,
    judge_id: str,
    version: str,
    task: TaskInput,
    prompt: str,
    image: Image | None,
    exemplars: Sequence[Exemplar] = (),
    target: TargetInput | None = None,
) -> str:
    """sha256 hex of the canonical JSON of every input of one skill run (order of exemplars counts)."""
    document = {
        "schema": CACHE_KEY_SCHEMA,
        "skill": skill,
        "judge_id": judge_id,
        "version": version,
        "task": asdict(task),
        "prompt": prompt,
        "image": image_digest(image),
        "exemplars": [_exemplar(ex) for ex in exemplars],
        "target": None if target is None else {"image": image_digest(target.image), "reference": image_digest(target.reference)},
    }
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
