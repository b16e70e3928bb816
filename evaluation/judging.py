"""The judge unit: one skill on one prompt (or one image), with the cache and the safety gate.

Writing a result is a claim on the judgement's pending state: `filter(pk=..., status=pending)
.update(...)`. A judgement a gate blocked while its job was running is therefore never
overwritten by the late result (the calls it spent are still counted). The gate itself is
evaluator.judge.gate, the same rule the library's run_route applies: a gate that blocks
stops its siblings (already judged or not), and a judgement whose sample is already
blocked is stopped before any call.

Each job judges one unit, but the units of one entry read the same CLIP image embeddings (every
render, the IM target and its references): the first such job of an entry embeds them all in one
batched forward (evaluator.judge.encoders.remember_images, bit-identical to one at a time), and
the other jobs in this worker process find them remembered.
"""

from __future__ import annotations

import functools
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone
from PIL import Image

from evaluation.models import Judgement, Render, UnitStatus
from evaluator.categories import IMITATION
from evaluator.judge import encoders
from evaluator.judge.cache import cache_key
from evaluator.judge.config import OFFICIAL_ROUTE
from evaluator.judge.embedding_judge import clip_image_reader
from evaluator.judge.gate import Block, block_of, stops
from evaluator.judge.redact import Redactor
from evaluator.judge.routes import route_skills
from evaluator.judge.skills import get_skill, skills_where
from evaluator.judge.types import JudgeResult, Kind, Side, TargetInput, skipped
from tasks.models import Task
from tasks.selectors import RevisionGone

from . import runtime
from .memory import exemplars_for
from .units import entry_task, submission_advance, task_input

log = logging.getLogger(__name__)
REDACTED_FIELDS = ("reason", "rationales", "raw", "details", "remote_text")  # reason is ours already: redacted all the same
RESULT_FIELDS = (
    "status",
    "value",
    "scale",
    "scores",
    "checklist",
    "rationales",
    "raw",
    "reason",
    "remote_text",
    "details",
    "calls",
    "throttled",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
)
SPENT_FIELDS = ("calls", "throttled", "prompt_tokens", "cached_prompt_tokens", "completion_tokens")
GATES = frozenset(skills_where(kind=Kind.GATE))
TARGET_SKILLS = skills_where(needs_target=True)


# How a unit's judge is asked: run(judge, judgement, inputs, extras) -> its result, or None when the question went into a
# batch file (evaluation/batching.py) and the judgement waits for the reply. Every route stores through _judge.
Run = Callable[[Any, Judgement, tuple, dict], JudgeResult | None]


def run_now(judge: Any, judgement: Judgement, inputs: tuple, extras: dict) -> JudgeResult:
    """The synchronous route: the judge sends its requests now."""
    return judge.run(*inputs, **extras)


def judge_unit(judgement_id: int, run: Run = run_now) -> None:
    """Judge one unit against its entry's task as the submission's pack revision had it (units.entry_task)."""
    Judgement.objects.filter(pk=judgement_id, status=UnitStatus.PENDING).update(started_at=timezone.now())
    judgement = Judgement.objects.select_related("entry__task", "entry__submission", "render").get(pk=judgement_id)
    if judgement.status == UnitStatus.PENDING:
        gone = _revision_gone(judgement)
        block = None if gone else _standing_block(judgement)
        if gone:
            _claim(judgement, status=UnitStatus.FAILED, reason=gone)
        elif block is not None:
            _claim(judgement, status=UnitStatus.BLOCKED, value=None, reason=block.reason)
        else:
            _judge(judgement, run)
    submission_advance(judgement.submission_id)


def _revision_gone(judgement: Judgement) -> str:
    """'' once the entry's task is pinned to its revision; else why it cannot be (its content is not kept)."""
    try:
        entry_task(judgement.entry)
    except RevisionGone as exc:
        log.warning("judgement %s not judged: %s", judgement.pk, exc)
        return str(exc)
    return ""


def _judge(judgement: Judgement, run: Run) -> None:
    """Run one skill, or reuse an identical judgement (same cache key) with zero calls."""
    judge = runtime.judge()
    if (judge.judge_id, judge.version) != (judgement.judge_id, judgement.judge_version):
        reason = f"this worker's judge is {judge.judge_id} {judge.version}, not {judgement.judge_id} {judgement.judge_version}"
        _claim(judgement, status=UnitStatus.FAILED, reason=reason)
        return
    task = task_input(judgement.entry.task)
    fixed = getattr(judge, "skip_reason", None)  # optional: judges that skip some skills whatever the input say which
    reason = fixed(judgement.skill, task) if fixed is not None else None
    if reason:  # recorded as run() would record it; a skip has nothing to reuse, so no cache key
        result = skipped(judgement.skill, reason)
        _claim(judgement, **{name: getattr(result, name) for name in RESULT_FIELDS})
        return
    prompt, image = judgement.entry.text, _image(judgement.render)
    target, exemplars = _target(judgement), _exemplars(judgement, prompt, image)
    key = cache_key(judgement.skill, judge.judge_id, judge.version, task, prompt, image, exemplars, target)
    earlier = Judgement.objects.filter(cache_key=key, status__in=[UnitStatus.OK, UnitStatus.BLOCKED]).exclude(pk=judgement.pk).first()
    if earlier is not None:
        fields = {name: getattr(earlier, name) for name in RESULT_FIELDS} | {
            "calls": 0,
            "throttled": 0,
            "prompt_tokens": 0,
            "cached_prompt_tokens": 0,
            "completion_tokens": 0,
            "cached": True,
        }
    else:
        _embed_ahead(judgement, judge)
        result = run(judge, judgement, (judgement.skill, task, prompt, image), {"exemplars": exemplars, "target": target})
        if result is None:
            return
        fields = {name: getattr(result, name) for name in RESULT_FIELDS}
    if not _claim(judgement, cache_key=key, **fields):
        _count_spent(judgement, fields)
        return
    block = block_of(judgement.skill, fields["status"], redactor(judgement.entry.task).text(fields["reason"]))
    if block is not None:
        _block_siblings(judgement, block)


_AHEAD_KEPT = 4096
_embedded_ahead: OrderedDict[tuple[int, str, str | None], None] = OrderedDict()  # (render, CLIP model, weights) done in this process


def _embed_ahead(judgement: Judgement, judge: Any) -> None:
    """Before the first CLIP-reading judgement of a render in this process: embed the entry's rendered images not
    embedded yet (and an IM task's target and references) in one batched forward; the judge then finds each one
    remembered. Only warms the encoders' memo, so it changes no number, and does nothing with batching off."""
    clip = clip_image_reader(judge, judgement.skill)
    settings = encoders.speed()
    if clip is None or judgement.render_id is None or not (settings.memo and settings.batch):
        return
    if (judgement.render_id, *clip) in _embedded_ahead:
        return
    renders = [r for r in Render.objects.filter(entry_id=judgement.entry_id, status=UnitStatus.OK).order_by("pk") if r.image]
    renders = [r for r in renders if (r.pk, *clip) not in _embedded_ahead]
    images = [_open(r.image) for r in renders]
    task = judgement.entry.task
    if task.category == IMITATION and task.target_image and any(clip_image_reader(judge, s) for s in _entry_skills(judgement)):
        images.append(_open(task.target_image))
        images += [_open(ref.image) for ref in task.references.filter(config_hash__in={r.config_hash for r in renders})]
    encoders.remember_images(images, *clip)
    for render in renders:
        _embedded_ahead[(render.pk, *clip)] = None
    while len(_embedded_ahead) > _AHEAD_KEPT:
        _embedded_ahead.popitem(last=False)


def _entry_skills(judgement: Judgement) -> set[str]:
    """The target-reading skills planned for this judgement's entry (is the IM target worth embedding ahead?)."""
    return set(
        Judgement.objects.filter(entry_id=judgement.entry_id, render__isnull=False)
        .filter(skill__in=TARGET_SKILLS)
        .values_list("skill", flat=True)
    )


def redactor(task: Task) -> Redactor:
    """How text about this task is stored: a test-split task's checklist items become `item N` (evaluator.judge.redact)."""
    return Redactor.none() if task.is_public else Redactor.for_items(task.prompt_checklist, task.image_checklist)


def judge_fail(judgement_id: int, reason: str, remote: str) -> None:
    """A judge job that raised: the judgement fails with our words (the remote's, redacted, for staff only)."""
    judgement = Judgement.objects.select_related("entry__task", "entry__submission").get(pk=judgement_id)
    _revision_gone(judgement)  # its revision's hidden items are the ones to redact; when not kept, the current ones
    task = judgement.entry.task
    Judgement.objects.filter(pk=judgement_id, status=UnitStatus.PENDING).update(
        status=UnitStatus.FAILED, reason=reason, remote_text=redactor(task).text(remote)
    )
    submission_advance(Judgement.objects.values_list("submission_id", flat=True).get(pk=judgement_id))


def _claim(judgement: Judgement, **fields: Any) -> bool:
    """Write a result onto a still-pending judgement (hidden text redacted); False when something else settled it first.
    Calls and tokens add to what earlier attempts of this judgement spent (a retried judgement counts both)."""
    hide = redactor(judgement.entry.task)
    fields |= {name: hide.value(fields[name]) for name in REDACTED_FIELDS if name in fields}
    fields |= {name: F(name) + fields[name] for name in SPENT_FIELDS if name in fields}
    return bool(Judgement.objects.filter(pk=judgement.pk, status=UnitStatus.PENDING).update(**fields, updated=timezone.now()))


def _count_spent(judgement: Judgement, fields: dict[str, Any]) -> None:
    """A late result is dropped, but the calls and tokens it cost were spent: count them."""
    log.info("judgement %s was settled while its job ran (%s); its late result is dropped", judgement.pk, judgement.skill)
    Judgement.objects.filter(pk=judgement.pk).update(**{name: F(name) + fields[name] for name in SPENT_FIELDS})


def _same_sample(judgement: Judgement):
    return Judgement.objects.filter(
        entry_id=judgement.entry_id, judge_id=judgement.judge_id, judge_version=judgement.judge_version
    ).exclude(pk=judgement.pk)


def _block_siblings(judgement: Judgement, block: Block) -> None:
    """A blocked prompt blocks every judgement of its sample; a blocked image, those of that image."""
    siblings = _same_sample(judgement)
    if block.scope == Side.IMAGE:
        siblings = siblings.filter(render_id=judgement.render_id)
    stopped = [skill for skill in set(siblings.values_list("skill", flat=True)) if stops(block, skill)]
    siblings.filter(skill__in=stopped).update(status=UnitStatus.BLOCKED, value=None, reason=block.reason, updated=timezone.now())


def _standing_block(judgement: Judgement) -> Block | None:
    """A block already imposed on this judgement's sample (or image) by a gate that finished first. On a route with no
    gate for the task's category nothing can block, and the question is not asked (it was a query per unit)."""
    if GATES.isdisjoint(route_skills(judgement.entry.task.category, settings.ATELIER_JUDGE_ROUTE)):
        return None
    gates = _same_sample(judgement).filter(skill__in=GATES, status=UnitStatus.BLOCKED)
    gates = (
        gates.filter(Q(render__isnull=True) | Q(render_id=judgement.render_id))
        if judgement.render_id
        else gates.filter(render__isnull=True)
    )
    for skill, reason in gates.values_list("skill", "reason"):
        block = block_of(skill, UnitStatus.BLOCKED, reason)
        if block is not None and stops(block, judgement.skill):
            return block
    return None


def _open(field) -> Image.Image:
    """The stored image, decoded once while it is recent in this process: an image's judgements run one after another,
    and each used to decode the file again (and re-encode it for its cache key, see evaluator.judge.cache). Keyed by
    storage name, which is safe because a stored file is never rewritten under its name (renders are named by their
    content's hash; other saves get a fresh name from the storage). The judge never changes an image in place."""
    return _decoded(field.storage, str(getattr(field.storage, "location", "")), field.name)


@functools.lru_cache(maxsize=16)
def _decoded(storage, location: str, name: str) -> Image.Image:
    """`location` is in the key because one storage object serves another root after a settings change (tests)."""
    with storage.open(name, "rb") as handle:
        return Image.open(handle).convert("RGB")


def _image(render: Render | None) -> Image.Image | None:
    return None if render is None else _open(render.image)


def target_for(task: Task, config_hash: str) -> TargetInput | None:
    """An IM task's target image and, when one was rendered on the backend config with this version hash, the render
    of its seed prompt that sets the target's c_k scale (manage.py render_targets --references). The one lookup of a
    target: pass the hash of the config that rendered the image being scored (a Render's `config_hash`), never the
    hash of whatever config the backends file now gives that backend's name; the two differ once the file changes."""
    if task.category != IMITATION or not task.target_image:
        return None
    reference = task.references.filter(config_hash=config_hash).first()
    return TargetInput(image=_open(task.target_image), reference=_open(reference.image) if reference else None)


def _target(judgement: Judgement) -> TargetInput | None:
    return None if judgement.render is None else target_for(judgement.entry.task, judgement.render.config_hash)


def _exemplars(judgement: Judgement, prompt: str, image: Image.Image | None) -> tuple:
    """Calibration exemplars for the skills that use memory (memory holds rubric scores, not checklist labels)."""
    skill = get_skill(judgement.skill)
    if not skill.uses_memory or settings.ATELIER_JUDGE_ROUTE == OFFICIAL_ROUTE:  # that judge retrieves from the release's memory
        return ()
    task = judgement.entry.task
    return exemplars_for(task_id=task.task_id, category=task.category, side=skill.side, prompt=prompt, image=image)
