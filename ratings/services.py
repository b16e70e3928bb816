"""Importing expert ratings and exemplars: every line checked first, then one transaction."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from django.db import transaction

from evaluator.judge import IMAGE_DIMENSIONS, PROMPT_DIMENSIONS
from submissions.models import PromptEntry, Render, Submission

from .models import ExpertRating


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
    renders = {(r.entry_id, r.backend, r.image_index): r for r in Render.objects.filter(entry__submission=submission, status="ok")}
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
    found = _score_problems(raw.get("scores", {}), IMAGE_DIMENSIONS if render else PROMPT_DIMENSIONS)
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


def content_sha(text: str, image_bytes: bytes = b"") -> str:
    return hashlib.sha256(text.encode() + b"\0" + image_bytes).hexdigest()


def exemplars_read_own(path) -> list:
    """Our exemplar file: JSON Lines {kind, category, task_id, text | image (path beside the file), scores, notes},
    dimension keys as in evaluator.judge (instructional_clarity, ..., technical_flawlessness)."""
    from pathlib import Path

    from PIL import Image

    from evaluator.judge import Exemplar as ExemplarData

    path, exemplars, problems = Path(path), [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            raw = json.loads(line)
            image = Image.open(path.parent / raw["image"]).convert("RGB") if raw.get("image") else None
            exemplars.append(ExemplarData(
                exemplar_id=where, task_id=str(raw["task_id"]), category=raw["category"], kind=raw["kind"],
                text=raw.get("text", ""), image=image, scores=raw.get("scores", {}), notes=raw.get("notes", {}),
            ))  # fmt: skip
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})")
        except KeyError as exc:
            problems.append(f"{where}: field {exc.args[0]!r} is required")
        except (OSError, ValueError, TypeError) as exc:
            problems.append(f"{where}: {exc}")
    if problems:
        raise RatingFileError(problems)
    return exemplars
