"""Memory: human-scored calibration exemplars, their retrieval, and the official release's files.

AtelierJudge's rubric skills put the K most similar scored exemplars of the same
category and side before the item they judge. Similarity is cosine between
all-MiniLM-L6-v2 embeddings of prompts (text_embeddings) or CLIP embeddings of images
(image_embeddings). Unlike the official release, retrieval here never returns an
exemplar of the task being judged: the item's own human scores would leak the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .config import DEFAULTS
from .encoders import image_embeddings, text_embeddings
from .rubrics import RUBRIC, Rubric
from .types import DIMENSIONS, SIDES, Exemplar, Side

if TYPE_CHECKING:
    from PIL.Image import Image

# prompt_from_prompt_memory_oe.json, image_from_image_memory_co.json, ...
_MEMORY_FILE = re.compile(r"\A(?P<side>prompt|image)_from_(?P=side)_memory_(?P<category>oe|co|im)\.json\Z")


class MemoryFormatError(ValueError):
    """A memory file does not have the expected content; the message names file, record and field."""


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
    query: np.ndarray, pool: Sequence[tuple[Exemplar, np.ndarray]], *, category: str, side: str, exclude_task_id: str, k: int = 3
) -> list[Exemplar]:
    """The k exemplars most similar (cosine) to `query` among those of this category and side.

    Exemplars of `exclude_task_id` (the task being judged) are never returned. Ties are
    broken by exemplar_id, so the result does not depend on the pool's order.
    """
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    if k <= 0:
        return []
    candidates = [(ex, vec) for ex, vec in pool if ex.category == category and ex.side == side and ex.task_id != exclude_task_id]
    if not candidates:
        return []
    sims = cosine_similarities(query, np.stack([np.asarray(vec, dtype=np.float64).ravel() for _, vec in candidates]))
    order = sorted(range(len(candidates)), key=lambda i: (-sims[i], candidates[i][0].exemplar_id))
    return [candidates[i][0] for i in order[:k]]


def embed_exemplars(
    exemplars: Sequence[Exemplar], *, clip_model: str = DEFAULTS.clip_model, clip_pretrained: str | None = DEFAULTS.clip_pretrained
) -> list[tuple[Exemplar, np.ndarray]]:
    """(exemplar, unit embedding) pairs: MiniLM for prompts, CLIP for images (without an image: skipped)."""
    prompts = [ex for ex in exemplars if ex.side == Side.PROMPT]
    images = [ex for ex in exemplars if ex.side == Side.IMAGE and ex.image is not None]
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
    """Normalised display name, alias or key -> dimension key, for both sides."""
    names: dict[str, str] = {}
    for dim in rubric.prompt + rubric.image:
        for name in (dim.key, dim.title, *dim.aliases):
            names[_normalise(name)] = dim.key
    return names


@dataclass(frozen=True)
class _MemoryFile:
    """What a memory file's name says: the side and category of every record, and its field names."""

    name: str
    side: Side
    category: str
    rubric: Rubric

    @property
    def text_field(self) -> str:
        return "prompt" if self.side == Side.PROMPT else "image_path"

    @property
    def dims_field(self) -> str:
        return f"{self.side}_dimensions"


def _memory_file(filename: str, rubric: Rubric) -> _MemoryFile:
    match = _MEMORY_FILE.match(Path(filename).name)
    if match is None:
        raise MemoryFormatError(
            f"{filename}: not an official memory file name (prompt_from_prompt_memory_<oe|co|im>.json or image_from_image_memory_<oe|co>.json)"
        )
    return _MemoryFile(filename, Side(match["side"]), match["category"].upper(), rubric)


def _dimension_scores(dims: Any, where: str, file: _MemoryFile) -> tuple[dict[str, int], dict[str, str]]:
    """(scores, notes) of one record: every dimension of its side exactly once, each an integer 1..5."""
    field_name, names, allowed = file.dims_field, dimension_names(file.rubric), DIMENSIONS[file.side]
    if not isinstance(dims, dict) or not dims:
        raise MemoryFormatError(f"{where}: field {field_name!r} must be a non-empty object of dimension -> {{score, note}}")
    scores: dict[str, int] = {}
    notes: dict[str, str] = {}
    for display, entry in dims.items():
        key = names.get(_normalise(str(display)))
        if key is None or key not in allowed:
            known = [d.title for d in file.rubric.dimensions_of(file.side)]
            raise MemoryFormatError(f"{where}: field {field_name!r}: unknown {file.side} dimension {display!r} (known: {known})")
        if key in scores:
            raise MemoryFormatError(f"{where}: field {field_name!r}: dimension {display!r} given twice")
        scores[key], notes[key] = _score_and_note(entry, f"{where}: field {field_name!r}.{display!r}")
    missing = [d.title for d in file.rubric.dimensions_of(file.side) if d.key not in scores]
    if missing:
        raise MemoryFormatError(f"{where}: field {field_name!r}: missing dimension(s) {missing}; every record scores all {len(allowed)}")
    return scores, notes


def _score_and_note(entry: Any, where: str) -> tuple[int, str]:
    score = entry.get("score") if isinstance(entry, dict) else None
    if isinstance(score, float) and score.is_integer():
        score = int(score)
    if isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 5:
        raise MemoryFormatError(f"{where}.score must be an integer 1..5, got {score!r}")
    note = entry.get("note", "")
    if not isinstance(note, str):
        raise MemoryFormatError(f"{where}.note must be a string")
    return score, note


def _memory_record(record: Any, index: int, file: _MemoryFile, image_root: Path | None, load_images: bool) -> Exemplar:
    where = f"{file.name} record {index}"
    if not isinstance(record, dict):
        raise MemoryFormatError(f"{where}: expected a JSON object")
    task_id = record.get("task_id")
    if not isinstance(task_id, str) or not task_id.strip():
        raise MemoryFormatError(f"{where}: field 'task_id' missing or not a non-empty string")
    where = f"{where} ({task_id})"
    value = record.get(file.text_field)
    if not isinstance(value, str) or not value.strip():
        raise MemoryFormatError(f"{where}: field {file.text_field!r} missing or not a non-empty string")
    scores, notes = _dimension_scores(record.get(file.dims_field), where, file)
    is_prompt = file.side == Side.PROMPT
    image = _open_image(Path(image_root or ".") / value, where, file.text_field) if not is_prompt and load_images else None
    return Exemplar(
        exemplar_id=where,
        task_id=task_id,
        category=file.category,
        side=file.side,
        text=value if is_prompt else "",
        image=image,
        scores=scores,
        notes=notes,
        image_path="" if is_prompt else value,
    )


def _same_content(a: Exemplar, b: Exemplar) -> bool:
    return (a.text, a.image_path, a.scores, a.notes) == (b.text, b.image_path, b.scores, b.notes)


def parse_memory_records(
    records: Any, *, filename: str, image_root: Path | None = None, load_images: bool = True, rubric: Rubric = RUBRIC
) -> list[Exemplar]:
    """Exemplars from the records of one official memory file (already read as JSON).

    `filename` must be one of prompt_from_prompt_memory_{oe,co,im}.json or
    image_from_image_memory_{oe,co}.json: it gives the side and category. Every record
    must score all four dimensions of its side. A task may appear once: a repeated record
    with the same content is kept once, one with different content is an error (which of
    the two would the judge trust?). Image paths are resolved under `image_root`; with
    load_images=False images are not opened.
    """
    file = _memory_file(filename, rubric)
    if not isinstance(records, list):
        raise MemoryFormatError(f"{filename}: expected a JSON list of records")
    first: dict[str, tuple[int, Exemplar]] = {}
    for index, record in enumerate(records):
        exemplar = _memory_record(record, index, file, image_root, load_images)
        if exemplar.task_id not in first:
            first[exemplar.task_id] = (index, exemplar)
        elif not _same_content(first[exemplar.task_id][1], exemplar):
            earlier = first[exemplar.task_id][0]
            raise MemoryFormatError(
                f"{filename} record {index} ({exemplar.task_id}): field 'task_id': repeats record {earlier} with different content"
            )
    return [exemplar for _, exemplar in first.values()]


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
