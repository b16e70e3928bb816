"""Expert ratings and exemplars: importing files (every line checked first, then one transaction), filling the
experts' rating queues, and saving a rating made on /rate/ (and the exemplar it builds, in the exemplar pool)."""

from __future__ import annotations

import hashlib
import io
import json
import math
import random
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group, Permission
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone
from PIL import Image

from evaluation.memory import embeddings_ensure
from evaluation.models import Exemplar, ExemplarEmbedding, PromptEntry, Render, Submission, UnitStatus
from evaluator.categories import CATEGORIES
from evaluator.judge.types import DIMENSIONS, Side
from evaluator.judge.types import Exemplar as ExemplarData
from tasks.models import Task, TaskPack

from .models import ExpertRating, Pool, RatingAssignment, TaskPool

RATE_PERMISSION = "ratings.rate_items"
HIDDEN_PERMISSION = "ratings.rate_hidden_items"  # off by default: a hidden task's checklists are the test split's secret
SITE_SOURCE = "rated on this site"


class RatingFileError(Exception):
    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Rating:
    """One rater's scores (and checklist labels) of one prompt (render None) or one of its images, as read from a
    ratings file or made by a scripted rater."""

    rater: str
    entry: PromptEntry
    render: Render | None
    scores: dict[str, int]
    checklist: dict[str, int]
    note: str


def sees_hidden(user: AbstractBaseUser | None) -> bool:
    """Whether the staff allowed this rater to see hidden (test-split) tasks' checklists (HIDDEN_PERMISSION)."""
    return user is not None and user.is_active and user.has_perm(HIDDEN_PERMISSION)


def may_rate(user: AbstractBaseUser | None, task: Task) -> bool:
    """Items of a hidden (test-split) task go only to raters who see hidden checklists."""
    return task.is_public or sees_hidden(user)


def expert_ratings_import(*, submission: Submission, filename: str, data: bytes) -> int:
    """JSON Lines, one rating per line: rater, task_id, sample (default 0), and for an image backend and
    image_index; scores {dimension: 1..5} and/or checklist {item: 0|1}; optional note. Returns the count.
    A rating of a hidden task's item needs a rater who is a user allowed to see hidden checklists."""
    entries = {(e.task.task_id, e.sample_index): e for e in submission.entries.select_related("task")}
    renders = {(r.entry_id, r.backend, r.image_index): r for r in Render.objects.filter(entry__submission=submission, status=UnitStatus.OK)}
    ratings, problems, seen, pools, users = [], [], {}, {}, {}
    scripted = set(ExpertRating.objects.filter(scripted=True).values_list("rater", flat=True).distinct())
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        rating = _parse(f"{filename}:{number}", line, entries, renders, problems) if line.strip() else None
        if rating is None:
            continue
        if rating.rater in scripted:
            problems.append(
                f"{filename}:{number}: {rating.rater!r} is a scripted demo rater (a rule, not a person): people's ratings never go under its name"
            )
            continue
        task = rating.entry.task
        if rating.rater not in users:
            users[rating.rater] = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: rating.rater}).first()
        if not may_rate(users[rating.rater], task):
            problems.append(
                f"{filename}:{number}: task {task.task_id} is hidden (test split) and rater {rating.rater!r} may not see its checklists "
                f"(no active user of that name with the permission {HIDDEN_PERMISSION})"
            )
            continue
        if pools.setdefault(task.pk, task_pool(task.task_id, task.category)) == Pool.EXEMPLAR:
            problems.append(
                f"{filename}:{number}: task {task.task_id} is in the exemplar pool (its ratings calibrate the judge); "
                "an evaluation rating of it would test the judge on what calibrated it"
            )
            continue
        key = (rating.rater, rating.entry.pk, rating.render.pk if rating.render else None)
        if key in seen:
            problems.append(f"{filename}:{number}: a second rating by {rating.rater} of the same item (first on line {seen[key]})")
        seen.setdefault(key, number)
        ratings.append(rating)
    if problems or not ratings:
        raise RatingFileError(problems or [f"{filename}: no ratings"])
    with transaction.atomic():
        if [_rating_save(r, filename) for r in ratings].count(True):
            reports_follow()
    return len(ratings)


def _rating_save(rating, filename: str) -> bool:
    """Store one imported rating; False when it is stored already as it stands (a re-imported file then changes nothing,
    so /judge/'s reports are not recomputed for it)."""
    values = {"scores": rating.scores, "checklist": rating.checklist, "note": rating.note, "source": filename}
    row, made = ExpertRating.objects.get_or_create(rater=rating.rater, entry=rating.entry, render=rating.render, defaults=values)
    if made or all(getattr(row, name) == value for name, value in values.items()):
        return made
    for name, value in values.items():
        setattr(row, name, value)
    row.save()
    return True


def reports_follow() -> None:
    """/judge/'s statistics follow a change of evaluation ratings: their jobs are sent once it commits (ratings/reports.py,
    imported here rather than at start-up: it imports the statistics)."""
    from .reports import ratings_changed

    ratings_changed()


def _parse(where: str, line: str, entries: dict, renders: dict, problems: list[str]) -> Rating | None:
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
    return (
        None
        if found
        else Rating(raw["rater"].strip(), entry, render, raw.get("scores", {}), raw.get("checklist", {}), str(raw.get("note", "")))
    )


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
            exemplar_id=where,
            task_id=str(raw["task_id"]),
            category=raw["category"],
            side=raw["side"],
            text=raw.get("text", ""),
            image=image,
            scores=raw.get("scores", {}),
            notes=raw.get("notes", {}),
        )
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


def exemplar_pool_problems(exemplars: list[ExemplarData]) -> list[str]:
    """An exemplar must not name a task of the evaluation pool: the judge would be calibrated on what tests it."""
    pools = {(ex.task_id, ex.category): task_pool(ex.task_id, ex.category) for ex in exemplars}
    return [
        f"{ex.exemplar_id}: task {ex.task_id} ({ex.category}) is in the evaluation pool (its expert ratings test the judge on /judge/); "
        "an exemplar of it would calibrate the judge on what tests it"
        for ex in exemplars
        if pools[(ex.task_id, ex.category)] == Pool.EVALUATION
    ]


def exemplar_task_problems(exemplars: list[ExemplarData], pack: TaskPack | None) -> list[str]:
    """An exemplar must name a task (of its category) that is loaded: in `pack`, or in any pack when None."""
    tasks = Task.objects.filter(pack=pack) if pack is not None else Task.objects.all()
    known = set(tasks.values_list("task_id", "category"))
    where = f"pack {pack}" if pack is not None else "any loaded pack"
    return [
        f"{ex.exemplar_id}: field 'task_id': no {ex.category} task {ex.task_id!r} in {where}"
        for ex in exemplars
        if (ex.task_id, ex.category) not in known
    ]


def content_sha(text: str, image_bytes: bytes) -> str:
    """What identifies an exemplar's content: the same prompt text and image are stored once per task and side."""
    return hashlib.sha256(text.encode() + b"\0" + image_bytes).hexdigest()


@transaction.atomic
def exemplars_save(*, exemplars: list[ExemplarData], source: str, embed: bool = True) -> tuple[int, int, int]:
    """Store exemplars (one already stored with the same side, category, task and content is kept) and embed
    every one of them with the current models where missing. Returns (new, kept, embedded).
    embed=False leaves the embedding to the judge's first retrieval (evaluation.memory), so that a web
    request never loads the embedding models."""
    new, rows = 0, []
    for data in exemplars:
        image_bytes = _png(data.image) if data.image is not None else b""
        sha = content_sha(data.text, image_bytes)
        row, created = Exemplar.objects.get_or_create(
            side=data.side,
            category=data.category,
            task_id=data.task_id,
            content_sha=sha,
            defaults={"text": data.text, "scores": data.scores, "notes": data.notes, "source": source},
        )
        if created and image_bytes:
            row.image.save(f"{data.category.lower()}/{sha[:16]}.png", ContentFile(image_bytes))
        new += created
        rows.append(row.pk)
    embedded = embeddings_ensure(Exemplar.objects.filter(pk__in=rows)) if embed else 0
    return new, len(rows) - new, embedded


def _png(image) -> bytes:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


# --- the experts' queue -------------------------------------------------------------------------


class QueueError(ValueError):
    """rating_queue_fill was given options it cannot honour; the message names the option."""


@dataclass(frozen=True)
class QueueFill:
    """What rating_queue_fill did: assignments created, and items of hidden tasks left out of the draw because
    fewer than per_item of the raters may see hidden checklists (`allowed` of them may)."""

    created: int
    withheld: int = 0
    allowed: int = 0


def rating_queue_fill(
    *,
    submissions: QuerySet[Submission],
    raters: Sequence[AbstractBaseUser],
    items: int,
    per_item: int = 2,
    exemplar_share: float = 0.5,
    backend: str | None = None,
    seed: int = 0,
) -> QueueFill:
    """Queue `items` prompt/image pairs from `submissions`, each for `per_item` distinct experts of `raters`.

    An item is a prompt entry with its first successful render (by backend name, then image index; only
    `backend`'s when given). Items already queued from these submissions count towards `items`, and experts
    already on an item towards `per_item`, so a second run with the same arguments creates nothing. New
    items are taken in a seeded order that visits every category, and every task of a category, before any
    gets a second item. New experts go to whoever has the fewest open items (never to one whose name
    already rated the item, e.g. in an imported file). An item of a hidden (test-split) task goes only to raters
    allowed to see hidden checklists (may_rate); with fewer than `per_item` of them it is withheld (not drawn).

    A task's pool is decided the first time one of its items is queued and never changes: a task already
    rated in an imported file stays "evaluation", one with imported exemplars "exemplar"; otherwise the pool
    that keeps the category's share of exemplar tasks closest to `exemplar_share` (a tie goes to evaluation).
    Raises QueueError for per_item < 2, fewer distinct raters than per_item, or a rater without the role.

    Fills of one pack's submissions take turns (the pack's row is locked for the whole fill): each counts what is
    queued and then adds to it, so two at once would both add, or deadlock deciding the same tasks' pools."""
    _check_queue_options(raters, items, per_item, exemplar_share)
    with transaction.atomic():
        packs = TaskPack.objects.filter(pk__in=submissions.values("pack_id")).order_by("pk")  # in id order: no deadlock
        list(packs.select_for_update(no_key=True).values_list("pk", flat=True))
        return _queue_fill(submissions, raters, items, per_item, exemplar_share, backend, seed)


def _queue_fill(
    submissions: QuerySet[Submission],
    raters: Sequence[AbstractBaseUser],
    items: int,
    per_item: int,
    exemplar_share: float,
    backend: str | None,
    seed: int,
) -> QueueFill:
    earlier = RatingAssignment.objects.filter(entry__submission__in=submissions).select_related("render__entry__task")
    queued = {a.entry_id: a.render for a in earlier}
    fresh = [r for r in _first_renders(submissions, backend) if r.entry_id not in queued]
    allowed = len({u.pk for u in raters if sees_hidden(u)})
    withheld = [r for r in fresh if not r.entry.task.is_public] if allowed < per_item else []
    fresh = [r for r in fresh if r.entry.task.is_public or allowed >= per_item]
    picked = list(queued.values()) + _spread(fresh, seed)[: max(items - len(queued), 0)]
    load = Counter(RatingAssignment.objects.filter(done_at=None).values_list("rater_id", flat=True))
    created = 0
    with transaction.atomic():
        pools = _task_pools([r.entry.task for r in picked], exemplar_share)
        for render in picked:
            have = set(RatingAssignment.objects.filter(entry_id=render.entry_id).values_list("rater_id", flat=True))
            rated = set(ExpertRating.objects.filter(entry_id=render.entry_id).values_list("rater", flat=True))  # e.g. from a file
            free = [u for u in raters if u.pk not in have and u.get_username() not in rated and may_rate(u, render.entry.task)]
            for rater in sorted(free, key=lambda u: (load[u.pk], u.get_username()))[: per_item - len(have)]:
                defaults = {"render": render, "pool": pools[render.entry.task_id]}
                _, made = RatingAssignment.objects.get_or_create(rater=rater, entry_id=render.entry_id, defaults=defaults)
                load[rater.pk] += made
                created += made
    return QueueFill(created=created, withheld=len(withheld), allowed=allowed)


def _check_queue_options(raters: Sequence[AbstractBaseUser], items: int, per_item: int, exemplar_share: float) -> None:
    if items < 1:
        raise QueueError(f"items must be at least 1, not {items}")
    if per_item < 2:
        raise QueueError(f"per_item must be at least 2, not {per_item}: agreement between experts needs two ratings of each item")
    if len({u.pk for u in raters}) < per_item:
        raise QueueError(f"per_item is {per_item} but only {len({u.pk for u in raters})} distinct rater(s) were given")
    if not 0 <= exemplar_share <= 1:
        raise QueueError(f"exemplar_share must lie between 0 and 1, not {exemplar_share}")
    outsiders = sorted(u.get_username() for u in raters if not (u.is_active and u.has_perm(RATE_PERMISSION)))
    if outsiders:
        raise QueueError(f"not expert raters (add them to the group 'Expert raters'): {', '.join(outsiders)}")


def _first_renders(submissions: QuerySet, backend: str | None) -> list[Render]:
    renders = Render.objects.filter(entry__submission__in=submissions, status=UnitStatus.OK).exclude(image="")
    renders = renders.filter(backend=backend) if backend else renders
    first: dict[int, Render] = {}
    for render in renders.select_related("entry__task").order_by("entry_id", "backend", "image_index"):
        first.setdefault(render.entry_id, render)
    return list(first.values())


def _spread(renders: list[Render], seed: int) -> list[Render]:
    """A seeded order in which every category, and every task within one, gets an item before any gets a second."""
    shuffled = sorted(renders, key=lambda r: r.entry_id)
    random.Random(seed).shuffle(shuffled)
    in_task, in_category, rank, position = Counter(), Counter(), {}, {}
    for r in shuffled:
        rank[r.pk] = in_task[r.entry.task_id]
        in_task[r.entry.task_id] += 1
    for r in sorted(shuffled, key=lambda r: rank[r.pk]):  # stable: the shuffle decides among equal ranks
        position[r.pk] = in_category[r.entry.task.category]
        in_category[r.entry.task.category] += 1
    return sorted(shuffled, key=lambda r: (position[r.pk], CATEGORIES.index(r.entry.task.category)))


def _task_pools(tasks: Iterable[Task], exemplar_share: float) -> dict[int, str]:
    pools = dict(TaskPool.objects.filter(task__in=[t.pk for t in tasks]).values_list("task_id", "pool"))
    for task in tasks:
        if task.pk not in pools:
            pool = _prior_pool(task) or _balanced_pool(task.category, exemplar_share)
            row, _ = TaskPool.objects.get_or_create(task=task, defaults={"pool": pool})
            pools[task.pk] = row.pool
    return pools


def _prior_pool(task: Task) -> str | None:
    return task_pool(task.task_id, task.category)


def task_pool(task_id: str, category: str) -> str | None:
    """The pool of a task, known by its task id and category as exemplars know it (so across versions of its pack):
    the one decided when it was first queued; before that, evaluation if it has evaluation ratings (e.g. an imported
    file: it has tested the judge), exemplar if it has exemplars (it calibrates the judge); None if neither."""
    decided = (
        TaskPool.objects.filter(task__task_id=task_id, task__category=category)
        .order_by("created", "pk")
        .values_list("pool", flat=True)
        .first()
    )
    if decided:
        return decided
    if ExpertRating.objects.filter(entry__task__task_id=task_id, entry__task__category=category, pool=Pool.EVALUATION).exists():
        return Pool.EVALUATION
    if Exemplar.objects.filter(task_id=task_id, category=category).exists():
        return Pool.EXEMPLAR
    return None


def _balanced_pool(category: str, share: float) -> str:
    rows = TaskPool.objects.filter(task__category=category)
    n, exemplars = rows.count(), rows.filter(pool=Pool.EXEMPLAR).count()
    closer = abs((exemplars + 1) / (n + 1) - share) < abs(exemplars / (n + 1) - share)
    return Pool.EXEMPLAR if closer else Pool.EVALUATION


# --- one rating from /rate/ ----------------------------------------------------------------------


class RatingError(Exception):
    """The rating cannot be saved; nothing was written."""


ALREADY_RATED = "you already rated this item"


@dataclass(frozen=True)
class RatingInput:
    """One expert's answers for one prompt/image pair, already checked against the rubric and the task."""

    prompt_scores: dict[str, int]
    image_scores: dict[str, int]
    prompt_checklist: dict[str, int]
    image_checklist: dict[str, int]
    rationale: str


def expert_rating_save(*, assignment: RatingAssignment, rating: RatingInput) -> None:
    """The prompt-side and the image-side rating in one transaction, the assignment marked done; in the
    exemplar pool the item's exemplars are rebuilt from every exemplar-pool rating of it so far."""
    try:
        with transaction.atomic():
            if RatingAssignment.objects.filter(pk=assignment.pk, done_at=None).update(done_at=timezone.now()) != 1:
                raise RatingError(ALREADY_RATED)  # a double submit, or a second tab
            rater, entry = assignment.rater.get_username(), assignment.entry
            sides = (
                (None, rating.prompt_scores, rating.prompt_checklist),
                (assignment.render, rating.image_scores, rating.image_checklist),
            )
            for render, scores, checklist in sides:
                ExpertRating.objects.create(
                    rater=rater,
                    entry=entry,
                    render=render,
                    scores=scores,
                    checklist=checklist,
                    note=rating.rationale,
                    source=SITE_SOURCE,
                    pool=assignment.pool,
                )
            if assignment.pool == Pool.EXEMPLAR:
                _exemplars_rebuild(entry, assignment.render)
            else:
                reports_follow()
    except IntegrityError as exc:  # a rating of this item under the same name came in from a file
        raise RatingError(ALREADY_RATED) from exc


def _exemplars_rebuild(entry: PromptEntry, render: Render) -> None:
    """The item's prompt and image exemplars, scored with the median per dimension over its experts so far (a
    half rounds up). The content is the same at every rebuild, so exemplars_save keeps the stored row: its
    scores are updated here, and its embeddings dropped so that the judge's cached pool (keyed by them) reloads."""
    task, ratings = entry.task, list(ExpertRating.objects.filter(entry=entry, pool=Pool.EXEMPLAR))
    try:
        with render.image.open("rb") as handle:
            image = Image.open(io.BytesIO(handle.read())).convert("RGB")
    except (OSError, ValueError) as exc:
        raise RatingError("the image of this item cannot be read; please tell the staff") from exc
    source = f"{SITE_SOURCE} (median of {len({r.rater for r in ratings})} expert(s))"
    found, shas = [], []
    prompts, images = [r for r in ratings if r.render_id is None], [r for r in ratings if r.render_id == render.pk]
    for side, text, picture, rated in ((Side.PROMPT, entry.text, None, prompts), (Side.IMAGE, "", image, images)):
        scores = {d: math.floor(statistics.median(r.scores[d] for r in rated) + 0.5) for d in DIMENSIONS[side]}
        found.append(ExemplarData(f"{side}:{entry.pk}", task.task_id, task.category, side, text=text, image=picture, scores=scores))
        shas.append(content_sha(text, _png(picture) if picture is not None else b""))
    exemplars_save(exemplars=found, source=source, embed=False)
    for data, sha in zip(found, shas):
        stored = Exemplar.objects.filter(
            side=data.side, category=task.category, task_id=task.task_id, content_sha=sha, source__startswith=SITE_SOURCE
        )
        stale = [r.pk for r in stored if r.scores != data.scores]
        ExemplarEmbedding.objects.filter(exemplar__in=stale).delete()
        Exemplar.objects.filter(pk__in=stale).update(scores=data.scores, source=source)


# --- scripted raters: the demo's rules, not people ---------------------------------------------------

SCRIPTED_MARK = "(demo)"  # every scripted rater's name says so, wherever it is shown


ScriptedRating = Rating  # a scripted rater's rating: the same fields, saved with scripted=True


def scripted_ratings_save(*, ratings: Sequence[ScriptedRating], source: str) -> int:
    """Store scripted raters' ratings (scripted=True, evaluation pool), checked as an imported file's lines are; nothing is
    stored if one is wrong (RatingFileError). A rating of an item its rater already rated replaces it, so running the same
    rules again adds nothing. Returns how many are new. Refused: a name without SCRIPTED_MARK or one people rate under,
    a hidden (test-split) task (a rule is no user allowed to see its checklists), a task of the exemplar pool."""
    people = set(ExpertRating.objects.filter(scripted=False, rater__in={r.rater for r in ratings}).values_list("rater", flat=True))
    pools: dict[int, str | None] = {}
    problems, seen = [], set()
    for r in ratings:
        side = Side.IMAGE if r.render is not None else Side.PROMPT
        task, where = r.entry.task, f"{r.rater}, {r.entry.task.task_id} {side} of entry {r.entry.pk}"
        found = _score_problems(r.scores, DIMENSIONS[side])
        found += _checklist_problems(r.checklist, task.image_checklist if r.render is not None else task.prompt_checklist)
        found += [f"the name must say {SCRIPTED_MARK}"] if SCRIPTED_MARK not in r.rater else []
        found += ["people rate under this name"] if r.rater in people else []
        found += ["the task is hidden (test split)"] if not task.is_public else []
        found += ["a second rating of the same item"] if _scripted_key(r) in seen else []
        seen.add(_scripted_key(r))
        if task.pk not in pools:
            pools[task.pk] = task_pool(task.task_id, task.category)
        if pools[task.pk] == Pool.EXEMPLAR:
            found.append("the task is in the exemplar pool (its ratings calibrate the judge)")
        problems += [f"{where}: {p}" for p in found]
    if problems:
        raise RatingFileError(problems)
    stored = {(row.rater, row.entry_id, row.render_id): row for row in ExpertRating.objects.filter(rater__in={r.rater for r in ratings})}
    fresh, changed = [], []
    for r in ratings:
        fields = {"scores": r.scores, "checklist": r.checklist, "note": r.note, "source": source}
        row = stored.get(_scripted_key(r))
        if row is None:
            fresh.append(ExpertRating(rater=r.rater, entry=r.entry, render=r.render, scripted=True, pool=Pool.EVALUATION, **fields))
        elif any(getattr(row, name) != value for name, value in fields.items()):
            changed.append((row.pk, fields))
    with transaction.atomic():
        ExpertRating.objects.bulk_create(fresh)
        for pk, fields in changed:
            ExpertRating.objects.filter(pk=pk).update(**fields, updated=timezone.now())  # the reports' input stamp
        if fresh or changed:
            reports_follow()
    return len(fresh)


def _scripted_key(r: ScriptedRating) -> tuple[str, int, int | None]:
    return r.rater, r.entry.pk, r.render.pk if r.render is not None else None


# --- the raters' roles ---------------------------------------------------------------------------

EXPERT_GROUP, HIDDEN_GROUP = "Expert raters", "Hidden-item raters"  # made by migrations 0004 and 0005
ROLE_GROUPS = {RATE_PERMISSION: EXPERT_GROUP, HIDDEN_PERMISSION: HIDDEN_GROUP}


def _role_group(permission: str) -> Group:
    """The group holding `permission` ("app.codename"), made again if it was deleted (as a test database's flush does)."""
    app_label, codename = permission.split(".")
    group, _ = Group.objects.get_or_create(name=ROLE_GROUPS[permission])
    group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return group


def rater_role_grant(*, users: Iterable[AbstractBaseUser], hidden: bool = False) -> int:
    """Make these users expert raters (the group "Expert raters"), and with `hidden` also hidden-item raters, who may
    rate items of hidden (test-split) tasks ("Hidden-item raters"). Returns how many gained a role."""
    groups = [_role_group(RATE_PERMISSION)] + ([_role_group(HIDDEN_PERMISSION)] if hidden else [])
    wanted, gained = {g.pk for g in groups}, 0
    with transaction.atomic():
        for user in users:
            gained += not wanted <= set(user.groups.values_list("pk", flat=True))
            user.groups.add(*groups)
    return gained


def rater_role_revoke(*, users: Iterable[AbstractBaseUser], hidden_only: bool = False) -> int:
    """Take the hidden-item role away (`hidden_only`), or both rater roles. Their open items of hidden tasks leave
    /rate/ at once (selectors.assignments_of); ratings already made stay. Returns how many lost a role. A permission
    held otherwise (given to the user directly, or a superuser's) is not a group's to take: see who still has it."""
    groups = list(Group.objects.filter(name__in=[HIDDEN_GROUP] if hidden_only else [EXPERT_GROUP, HIDDEN_GROUP]))
    lost = 0
    with transaction.atomic():
        for user in users:
            lost += user.groups.filter(pk__in=[g.pk for g in groups]).exists()
            user.groups.remove(*groups)
    return lost
