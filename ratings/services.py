"""Importing expert ratings and exemplars: every line checked first, then one transaction."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

from django.core.files.base import ContentFile
from django.db import transaction
from PIL import Image

from evaluation.memory import embeddings_ensure
from evaluator.judge.memory import Exemplar as ExemplarData
from evaluator.judge.types import DIMENSIONS, Side
from submissions.models import PromptEntry, Render, Submission, UnitStatus
from tasks.models import Task, TaskPack

from .models import Exemplar, ExpertRating


class RatingFileError(Exception):
    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class _Rating:
    rater: str
    entry: PromptEntry
    render: Render | None
    scores: dict[str, int]
    checklist: dict[str, int]
    note: str


def expert_ratings_import(*, submission: Submission, filename: str, data: bytes) -> int:
    """JSON Lines, one rating per line: rater, task_id, sample (default 0), and for an image backend and
    image_index; scores {dimension: 1..5} and/or checklist {item: 0|1}; optional note. Returns the count."""
    entries = {(e.task.task_id, e.sample_index): e for e in submission.entries.select_related("task")}
    renders = {(r.entry_id, r.backend, r.image_index): r for r in Render.objects.filter(entry__submission=submission, status=UnitStatus.OK)}
    ratings, problems, seen = [], [], {}
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        rating = _parse(f"{filename}:{number}", line, entries, renders, problems) if line.strip() else None
        if rating is None:
            continue
        key = (rating.rater, rating.entry.pk, rating.render.pk if rating.render else None)
        if key in seen:
            problems.append(f"{filename}:{number}: a second rating by {rating.rater} of the same item (first on line {seen[key]})")
        seen.setdefault(key, number)
        ratings.append(rating)
    if problems or not ratings:
        raise RatingFileError(problems or [f"{filename}: no ratings"])
    with transaction.atomic():
        for r in ratings:
            ExpertRating.objects.update_or_create(
                rater=r.rater, entry=r.entry, render=r.render,
                defaults={"scores": r.scores, "checklist": r.checklist, "note": r.note, "source": filename},
            )  # fmt: skip
    return len(ratings)


def _parse(where: str, line: str, entries: dict, renders: dict, problems: list[str]) -> _Rating | None:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        problems.append(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})")
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("rater"), str) or not raw["rater"].strip():
        problems.append(f"{where}: field 'rater' must be a non-empty string")
        return None
    entry = entries.get((str(raw.get("task_id", "")), raw.get("sample", 0)))
    if entry is None:
        problems.append(f"{where}: no prompt for task_id {raw.get('task_id')!r} sample {raw.get('sample', 0)!r} in this submission")
        return None
    render = None
    if "backend" in raw or "image_index" in raw:
        render = renders.get((entry.pk, raw.get("backend"), raw.get("image_index")))
        if render is None:
            problems.append(f"{where}: no rendered image for backend {raw.get('backend')!r} image_index {raw.get('image_index')!r}")
            return None
    found = _score_problems(raw.get("scores", {}), DIMENSIONS[Side.IMAGE if render else Side.PROMPT])
    items = entry.task.image_checklist if render else entry.task.prompt_checklist
    found += _checklist_problems(raw.get("checklist", {}), items)
    if not raw.get("scores") and not raw.get("checklist"):
        found.append("give 'scores' or 'checklist' (or both)")
    problems += [f"{where}: {p}" for p in found]
    return None if found else _Rating(raw["rater"].strip(), entry, render, raw.get("scores", {}), raw.get("checklist", {}), str(raw.get("note", "")))


def _score_problems(scores: object, dimensions: tuple[str, ...]) -> list[str]:
    if not isinstance(scores, dict):
        return ["field 'scores' must be an object"]
    found = [f"field 'scores': unknown dimension {k!r} (expected one of {', '.join(dimensions)})" for k in scores if k not in dimensions]
    found += [f"field 'scores': {k} must be an integer 1..5, not {v!r}" for k, v in scores.items() if type(v) is not int or not 1 <= v <= 5]
    return found


def _checklist_problems(checklist: object, items: list[str]) -> list[str]:
    if not isinstance(checklist, dict):
        return ["field 'checklist' must be an object"]
    found = [f"field 'checklist': {k!r} is not an item of this task's checklist" for k in checklist if k not in items]
    found += [f"field 'checklist': {k!r} must be 0 or 1, not {v!r}" for k, v in checklist.items() if v not in (0, 1) or type(v) is bool]
    return found


def exemplars_read_own(path) -> list:
    """Our exemplar file: JSON Lines {side, category, task_id, text | image (path beside the file), scores, notes},
    dimension keys as in evaluator.judge (instructional_clarity, ..., technical_flawlessness); every line scores
    all four dimensions of its side."""
    path, exemplars, problems = Path(path), [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            exemplar = _own_exemplar(f"{path.name}:{number}", line, path.parent, problems)
            exemplars += [exemplar] if exemplar is not None else []
    if problems:
        raise RatingFileError(problems)
    return exemplars


def _own_exemplar(where: str, line: str, folder: Path, problems: list[str]) -> ExemplarData | None:
    try:
        raw = json.loads(line)
        image = Image.open(folder / raw["image"]).convert("RGB") if raw.get("image") else None
        exemplar = ExemplarData(
            exemplar_id=where, task_id=str(raw["task_id"]), category=raw["category"], side=raw["side"],
            text=raw.get("text", ""), image=image, scores=raw.get("scores", {}), notes=raw.get("notes", {}),
        )  # fmt: skip
    except json.JSONDecodeError as exc:
        problems.append(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})")
        return None
    except KeyError as exc:
        problems.append(f"{where}: field {exc.args[0]!r} is required")
        return None
    except (OSError, ValueError, TypeError) as exc:
        problems.append(f"{where}: {exc}")
        return None
    missing = [d for d in DIMENSIONS[Side(exemplar.side)] if d not in exemplar.scores]
    if missing:
        problems.append(f"{where}: field 'scores': missing dimension(s) {missing}; every exemplar scores all four of its side")
        return None
    return exemplar


def exemplar_task_problems(exemplars: list[ExemplarData], pack: TaskPack | None) -> list[str]:
    """An exemplar must name a task (of its category) that is loaded: in `pack`, or in any pack when None."""
    tasks = Task.objects.filter(pack=pack) if pack is not None else Task.objects.all()
    known = set(tasks.values_list("task_id", "category"))
    where = f"pack {pack}" if pack is not None else "any loaded pack"
    return [f"{ex.exemplar_id}: field 'task_id': no {ex.category} task {ex.task_id!r} in {where}" for ex in exemplars if (ex.task_id, ex.category) not in known]


@transaction.atomic
def exemplars_save(*, exemplars: list[ExemplarData], source: str) -> tuple[int, int, int]:
    """Store exemplars (one already stored with the same side, category, task and content is kept) and embed
    every one of them with the current models where missing. Returns (new, kept, embedded)."""
    new, rows = 0, []
    for data in exemplars:
        image_bytes = _png(data.image) if data.image is not None else b""
        sha = hashlib.sha256(data.text.encode() + b"\0" + image_bytes).hexdigest()
        row, created = Exemplar.objects.get_or_create(
            side=data.side, category=data.category, task_id=data.task_id, content_sha=sha,
            defaults={"text": data.text, "scores": data.scores, "notes": data.notes, "source": source},
        )  # fmt: skip
        if created and image_bytes:
            row.image.save(f"{data.category.lower()}/{sha[:16]}.png", ContentFile(image_bytes))
        new += created
        rows.append(row.pk)
    embedded = embeddings_ensure(Exemplar.objects.filter(pk__in=rows))
    return new, len(rows) - new, embedded


def _png(image) -> bytes:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()
