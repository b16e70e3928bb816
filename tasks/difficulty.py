"""Prompt difficulty on the site: the installed predictor's scores for prompt texts, made before any image is.

The predictor (evaluator.difficulty, trained by `manage.py train_difficulty`) lives in ATELIER_DIFFICULTY_MODEL.
Scores are stored per (predictor version, text sha256) in PredictedDifficulty, so an entry, the call that wrote it
and a task brief with the same words share one row, and a retrained predictor's scores never mix with the old
one's. The web process only reads rows and the manifest (no torch); a job or `manage.py predict_difficulty` fills
them. Without a predictor nothing is predicted and the pages say how to train one. The table is this layer's, so
the task browser reads it; the evaluation layer sends its submissions' prompts here (evaluation/difficulty.py).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from django.conf import settings

from evaluator import difficulty
from evaluator.difficulty.artefact import verify

from .models import Category, PredictedDifficulty, Split, Task
from .signals import difficulty_changed

log = logging.getLogger(__name__)
BATCH = 256
CHUNK = 500  # texts per IN (...) query: SQLite's parameter limit
TRAIN_HINT = "manage.py train_difficulty --pqpp PATH"
_loaded: dict[str, difficulty.DifficultyPredictor] = {}
_lock = threading.Lock()


def state() -> tuple[dict | None, str]:
    """(manifest, "") for an installed predictor whose weights match their hashes (read without torch; the hashes are
    remembered per file size and time, so only the first call reads the files); (None, "") when none is installed;
    (None, why) when one is there but cannot be used: readiness and staff pages say why."""
    folder = settings.ATELIER_DIFFICULTY_MODEL
    try:
        manifest = difficulty.read_manifest(folder)
        verify(Path(folder), manifest)
    except difficulty.PredictorMissing:
        return None, ""
    except difficulty.PredictorInvalid as exc:
        log.warning("difficulty predictor not used: %s", exc)
        return None, str(exc)
    return manifest, ""


def installed() -> dict | None:
    """The installed predictor's manifest, or None when there is none or it cannot be used (state() says why)."""
    return state()[0]


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def task_text(task: Task) -> str:
    """The prompt a task's difficulty is predicted for: its brief verbatim; an imitation task's brief asks for an
    image, so its seed prompt (the words that made the target) stands in, when it has one and is public (a test-split
    task's seed prompt stays on the server, and so does anything computed from it)."""
    if task.category == Category.IM:
        return task.seed_prompt if task.split == Split.DEV else ""
    return task.brief


def scores(texts: Iterable[str], version: str | None = None) -> dict[str, float]:
    """text -> the installed predictor's score, for the texts it has scored so far."""
    if version is None:
        manifest = installed()
        if manifest is None:
            return {}
        version = manifest["version"]
    by_sha = {text_sha(t): t for t in texts if t.strip()}
    shas, found = sorted(by_sha), {}
    for start in range(0, len(shas), CHUNK):
        rows = PredictedDifficulty.objects.filter(predictor=version, text_sha__in=shas[start : start + CHUNK])
        found.update({by_sha[sha]: score for sha, score in rows.values_list("text_sha", "score")})
    return found


def _predictor(manifest: dict) -> difficulty.DifficultyPredictor:
    with _lock:  # one load per process and version; a retrained artefact is loaded afresh
        if manifest["version"] not in _loaded:
            _loaded.clear()
            _loaded[manifest["version"]] = difficulty.load(settings.ATELIER_DIFFICULTY_MODEL)
        return _loaded[manifest["version"]]


def predict_missing(texts: Iterable[str], *, progress: Callable[[int], None] | None = None) -> int:
    """Score the texts the installed predictor has not scored yet; returns how many were scored (0 without one)."""
    manifest = installed()
    if manifest is None:
        return 0
    wanted = {t for t in texts if t.strip()}
    todo = sorted(wanted - set(scores(wanted, manifest["version"])))
    if not todo:
        return 0
    predictor = _predictor(manifest)
    for start in range(0, len(todo), BATCH):
        batch = todo[start : start + BATCH]
        rows = [
            PredictedDifficulty(predictor=predictor.version, text_sha=text_sha(t), score=s) for t, s in zip(batch, predictor.predict(batch))
        ]
        PredictedDifficulty.objects.bulk_create(rows, ignore_conflicts=True)  # another worker may have scored one
        if progress:
            progress(len(batch))
    boards_follow(todo)
    return len(todo)


def boards_follow(texts: list[str] | None) -> None:
    """What the boards show of difficulty may have changed: predictions of `texts` were stored, or (None) a predictor
    was installed or applied. The apps above hear it (signals.difficulty_changed): a board's release follows."""
    difficulty_changed.send(sender=PredictedDifficulty, texts=texts)


def predictor_written(folder: str | Path) -> None:
    """A command wrote a predictor into `folder`: when that is the one the site uses, every board may show it now."""
    if Path(folder).resolve() == Path(settings.ATELIER_DIFFICULTY_MODEL).resolve():
        boards_follow(None)
