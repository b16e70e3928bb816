"""Memory: human-scored calibration exemplars, their retrieval, and the official release's files.

AtelierJudge's subjective branch puts the K most similar scored exemplars of the same
category and kind before the item it judges. Similarity is cosine between
all-MiniLM-L6-v2 embeddings of prompts (text_embeddings) or CLIP embeddings of images
(image_embeddings). Unlike the official release, retrieval here never returns an
exemplar of the task being judged: the item's own human scores would leak the answer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .rubrics import RUBRIC, Rubric
from .types import CATEGORIES, IMAGE_DIMENSIONS, PROMPT_DIMENSIONS

if TYPE_CHECKING:
    from PIL.Image import Image

KINDS: tuple[str, ...] = ("prompt", "image")
_DIMENSIONS_OF_KIND = {"prompt": PROMPT_DIMENSIONS, "image": IMAGE_DIMENSIONS}
# prompt_from_prompt_memory_oe.json, image_from_image_memory_co.json, ...
_MEMORY_FILE = re.compile(r"\A(?P<kind>prompt|image)_from_(?P=kind)_memory_(?P<category>oe|co|im)\.json\Z")


class MemoryFormatError(ValueError):
    """A memory file does not have the expected content; the message names file, record and field."""


@dataclass
class Exemplar:
    """One human-scored item: a prompt (kind "prompt") or a rendered image (kind "image")."""

    exemplar_id: str
    task_id: str
    category: str
    kind: str  # "prompt" | "image"
    text: str = ""  # the prompt (kind "prompt")
    image: Image | None = None  # the image (kind "image")
    scores: dict[str, int] = field(default_factory=dict)  # dimension key -> 1..5
    notes: dict[str, str] = field(default_factory=dict)  # dimension key -> the expert's note
    image_path: str = ""  # where the image came from (official files), for provenance

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"exemplar {self.exemplar_id!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.category not in CATEGORIES:
            raise ValueError(f"exemplar {self.exemplar_id!r}: unknown category {self.category!r}")
        allowed = _DIMENSIONS_OF_KIND[self.kind]
        unknown = [d for d in list(self.scores) + list(self.notes) if d not in allowed]
        if unknown:
            raise ValueError(f"exemplar {self.exemplar_id!r}: {sorted(set(unknown))} are not {self.kind} dimensions {allowed}")
        bad = {d: s for d, s in self.scores.items() if isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= 5}
        if bad:
            raise ValueError(f"exemplar {self.exemplar_id!r}: scores must be integers 1..5, got {bad}")


def cosine_similarities(query: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Cosine of `query` with every row of `matrix` (0 where either vector is zero)."""
    q = np.asarray(query, dtype=np.float64).ravel()
    m = np.asarray(matrix, dtype=np.float64).reshape(len(matrix), -1)
    if m.shape[1] != q.shape[0]:
        raise ValueError(f"query has {q.shape[0]} dimensions, the pool's vectors have {m.shape[1]}")
    norms = np.linalg.norm(m, axis=1) * np.linalg.norm(q)
    dots = m @ q
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def retrieve(
    query: np.ndarray,
    pool: Sequence[tuple[Exemplar, np.ndarray]],
    *,
    category: str,
    kind: str,
    exclude_task_id: str,
    k: int = 3,
) -> list[Exemplar]:
    """The k exemplars most similar (cosine) to `query` among those of this category and kind.

    Exemplars of `exclude_task_id` (the task being judged) are never returned. Ties are
    broken by exemplar_id, so the result does not depend on the pool's order.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if k <= 0:
        return []
    candidates = [(ex, vec) for ex, vec in pool if ex.category == category and ex.kind == kind and ex.task_id != exclude_task_id]
    if not candidates:
        return []
    sims = cosine_similarities(query, np.stack([np.asarray(vec, dtype=np.float64).ravel() for _, vec in candidates]))
    order = sorted(range(len(candidates)), key=lambda i: (-sims[i], candidates[i][0].exemplar_id))
    return [candidates[i][0] for i in order[:k]]


def embed_exemplars(
    exemplars: Sequence[Exemplar], *, clip_model: str = "ViT-B-32", clip_pretrained: str | None = None
) -> list[tuple[Exemplar, np.ndarray]]:
    """(exemplar, unit embedding) pairs: MiniLM for prompts, CLIP for images (without an image: skipped)."""
    from .embedding_judge import image_embeddings, text_embeddings

    prompts = [ex for ex in exemplars if ex.kind == "prompt"]
    images = [ex for ex in exemplars if ex.kind == "image" and ex.image is not None]
    pairs: list[tuple[Exemplar, np.ndarray]] = []
    if prompts:
        pairs += list(zip(prompts, text_embeddings([ex.text for ex in prompts])))
    if images:
        pairs += list(zip(images, image_embeddings([ex.image for ex in images], clip_model, clip_pretrained)))  # type: ignore[misc]
    return pairs


# --- the official release's memory files ---------------------------------------------------------


def _normalise(name: str) -> str:
    name = name.lower().replace("&", " ").replace("colour", "color").replace("formalisation", "formalization")
    return re.sub(r"[^a-z0-9]+", "_", name).strip("_")


def dimension_names(rubric: Rubric = RUBRIC) -> dict[str, str]:
    """Normalised display name, alias or key -> dimension key, for both kinds."""
    names: dict[str, str] = {}
    for dim in rubric.prompt + rubric.image:
        for name in (dim.key, dim.title, *dim.aliases):
            names[_normalise(name)] = dim.key
    return names


def parse_memory_records(
    records: Any,
    *,
    filename: str,
    image_root: Path | None = None,
    load_images: bool = True,
    rubric: Rubric = RUBRIC,
) -> list[Exemplar]:
    """Exemplars from the records of one official memory file (already read as JSON).

    `filename` must be one of prompt_from_prompt_memory_{oe,co,im}.json or
    image_from_image_memory_{oe,co}.json: it gives the kind and category. Image paths
    are resolved under `image_root`; with load_images=False images are not opened.
    """
    match = _MEMORY_FILE.match(Path(filename).name)
    if match is None:
        raise MemoryFormatError(f"{filename}: not an official memory file name (prompt_from_prompt_memory_<oe|co|im>.json or image_from_image_memory_<oe|co>.json)")
    kind, category = match["kind"], match["category"].upper()
    if not isinstance(records, list):
        raise MemoryFormatError(f"{filename}: expected a JSON list of records")
    names = dimension_names(rubric)
    allowed = _DIMENSIONS_OF_KIND[kind]
    text_field, dims_field = ("prompt", "prompt_dimensions") if kind == "prompt" else ("image_path", "image_dimensions")
    exemplars = []
    for index, record in enumerate(records):
        where = f"{filename} record {index}"
        if not isinstance(record, dict):
            raise MemoryFormatError(f"{where}: expected a JSON object")
        task_id = record.get("task_id")
        if not isinstance(task_id, str) or not task_id.strip():
            raise MemoryFormatError(f"{where}: field 'task_id' missing or not a non-empty string")
        where = f"{where} ({task_id})"
        value = record.get(text_field)
        if not isinstance(value, str) or not value.strip():
            raise MemoryFormatError(f"{where}: field {text_field!r} missing or not a non-empty string")
        dims = record.get(dims_field)
        if not isinstance(dims, dict) or not dims:
            raise MemoryFormatError(f"{where}: field {dims_field!r} must be a non-empty object of dimension -> {{score, note}}")
        scores: dict[str, int] = {}
        notes: dict[str, str] = {}
        for display, entry in dims.items():
            key = names.get(_normalise(str(display)))
            if key is None or key not in allowed:
                raise MemoryFormatError(
                    f"{where}: field {dims_field!r}: unknown {kind} dimension {display!r} "
                    f"(known: {[d.title for d in rubric.dimensions(kind + '_subjective')]})"
                )
            if key in scores:
                raise MemoryFormatError(f"{where}: field {dims_field!r}: dimension {display!r} given twice")
            score = entry.get("score") if isinstance(entry, dict) else None
            if isinstance(score, float) and score.is_integer():
                score = int(score)
            if isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 5:
                raise MemoryFormatError(f"{where}: field {dims_field!r}.{display!r}.score must be an integer 1..5, got {score!r}")
            note = entry.get("note", "")
            if not isinstance(note, str):
                raise MemoryFormatError(f"{where}: field {dims_field!r}.{display!r}.note must be a string")
            scores[key], notes[key] = score, note
        image = None
        if kind == "image" and load_images:
            image = _open_image(Path(image_root or ".") / value, where, text_field)
        exemplars.append(
            Exemplar(
                exemplar_id=f"official:{kind}:{category.lower()}:{index}:{task_id}",
                task_id=task_id,
                category=category,
                kind=kind,
                text=value if kind == "prompt" else "",
                image=image,
                scores=scores,
                notes=notes,
                image_path=value if kind == "image" else "",
            )
        )
    return exemplars


def _open_image(path: Path, where: str, field_name: str) -> Image:
    from PIL import Image as PILImage

    try:
        with PILImage.open(path) as handle:
            return handle.convert("RGB")
    except (OSError, ValueError) as exc:
        raise MemoryFormatError(f"{where}: field {field_name!r}: cannot open image {path} ({exc})") from exc


def read_memory_file(path: str | Path, *, image_root: str | Path | None = None, load_images: bool = True) -> list[Exemplar]:
    """Exemplars from one official memory file; image paths resolve under image_root (default: the file's folder)."""
    path = Path(path)
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MemoryFormatError(f"{path}: cannot read JSON ({exc})") from exc
    root = Path(image_root) if image_root is not None else path.parent
    return parse_memory_records(records, filename=path.name, image_root=root, load_images=load_images)


def read_memory_dir(directory: str | Path, *, image_root: str | Path | None = None, load_images: bool = True) -> list[Exemplar]:
    """Exemplars from every official memory file present in a folder (sorted by file name)."""
    directory = Path(directory)
    files = sorted(p for p in directory.iterdir() if _MEMORY_FILE.match(p.name))
    if not files:
        raise MemoryFormatError(f"{directory}: no official memory files (prompt_from_prompt_memory_*.json, image_from_image_memory_*.json)")
    exemplars: list[Exemplar] = []
    for file in files:
        exemplars += read_memory_file(file, image_root=image_root, load_images=load_images)
    return exemplars
