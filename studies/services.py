"""Writes for studies: creating a study and its links, and everything a participant does.

Every write is one transaction; a participant's row is locked (select_for_update) while their plan,
answers or tasks change, so a double submit or two tabs cannot write twice.
"""

from __future__ import annotations

from datetime import timedelta

from django.core.files.storage import Storage
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.text import slugify

from evaluation import runtime
from evaluation.erasure import files_delete_unused
from evaluation.models import Origin, PromptCall, PromptEntry, Render, Submission, UnitStatus
from evaluation.workqueue import START_JOB, enqueue, enqueued_or_unchanged
from evaluator.categories import IMITATION
from tasks.models import Task, TaskPack
from tasks.selectors import prompter_tasks
from teams.models import PrompterKind, Team
from teams.services import card_for

from . import protocol
from .apps import ATTEMPT_RENDER_JOB
from .humans import human_rows_rebuild
from .models import Assignment, Attempt, Invitation, Participant, Study, _token


class StudyError(ValueError):
    """What the participant or the deployer is told; nothing was written. `can_withdraw`: the link is refused for
    work (closed study, expired link) but its participant has data and may still withdraw, as the consent promises."""

    def __init__(self, message: str, *, can_withdraw: bool = False):
        super().__init__(message)
        self.can_withdraw = can_withdraw


def study_create(
    *,
    name: str,
    pack: TaskPack,
    split: str = "",
    per_category: int = 5,
    rounds: int = 2,
    retry_attempts: int = 0,
    retry_backend: str = "",
    **protocol_overrides,
) -> Study:
    """A study on `pack` with the shipped protocol (or the given consent_text / questionnaire / tier_rule / modules)."""
    chosen = {**protocol.defaults(), **protocol_overrides}
    protocol.check(chosen["questionnaire"], chosen["tier_rule"], chosen["modules"])
    if retry_attempts and retry_backend not in runtime.backend_configs():
        raise StudyError(f"retry_backend: {retry_backend!r} is not a configured backend ({', '.join(runtime.backend_configs())})")
    tasks = usable_tasks(pack, split)
    counts = dict(tasks.values_list("category").annotate(n=Count("pk")).values_list("category", "n"))
    short = [f"{c}: {counts.get(c, 0)}" for c in chosen["modules"] if c != "about" and counts.get(c, 0) < rounds * per_category]
    if short:
        raise StudyError(
            f"pack {pack} has too few {split or 'dev+test'} tasks (IM: with a target image) for {rounds} round(s) × {per_category} per category ({'; '.join(short)})"
        )
    design = [pack.pk, split, per_category, rounds, retry_attempts, retry_backend]
    slug = slugify(name)[:90] or "study"
    if Study.objects.filter(slug=slug).exists() or Team.objects.filter(slug=f"study-{slug}"[:100]).exists():
        raise StudyError(f"name: a study called {name!r} (or one with the same slug) exists already")
    with transaction.atomic():
        team = study_team(name, slug)
        return Study.objects.create(
            name=name,
            slug=slug,
            pack=pack,
            split=split,
            per_category=per_category,
            rounds=rounds,
            retry_attempts=retry_attempts,
            retry_backend=retry_backend,
            protocol_version=protocol.version(chosen, design),
            team=team,
            consent_text=chosen["consent_text"],
            questionnaire=chosen["questionnaire"],
            tier_rule=chosen["tier_rule"],
            modules={c: v for c, v in chosen["modules"].items() if c != "about"},
        )


def study_team(name: str, slug: str) -> Team:
    """The member-less team that owns a study's participant submissions."""
    return Team.objects.create(name=f"Human study: {name}"[:100], slug=f"study-{slug}"[:100])


def usable_tasks(pack: TaskPack, split: str):
    """Tasks a participant can do: those of the split a prompter may be shown (tasks.selectors.prompter_tasks)."""
    return prompter_tasks(Task.objects.filter(pack=pack, **({"split": split} if split else {})))


def invitations_create(*, study: Study, count: int, valid_days: int | None = None, note: str = "") -> list[Invitation]:
    """New links: each row returned carries its token (`token`), given only now: the database keeps its SHA-256."""
    if not 1 <= count <= 1000:
        raise StudyError("count: between 1 and 1000 links at a time")
    expires = timezone.now() + timedelta(days=valid_days) if valid_days else None
    made = []
    for _ in range(count):
        token = _token()
        made.append(Invitation(study=study, expires=expires, note=note, digest=Invitation.digest_of(token), prefix=token[:6]))
        made[-1].token = token
    return Invitation.objects.bulk_create(made)


def invitation_open(*, token: str, withdrawing: bool = False) -> Participant:
    """The participant behind a link, created on its first visit. Raises StudyError for a link that cannot be used.
    withdrawing: a participant who started may withdraw even when the study is closed or the link expired."""
    invitation = Invitation.objects.select_related("study").filter(digest=Invitation.digest_of(token)).first()
    if invitation is None:
        raise StudyError("This link is not valid. Check that you copied all of it.")
    participant = Participant.objects.filter(invitation=invitation).first()
    if participant is not None and participant.withdrawn:
        raise StudyError("You withdrew from this study with this link, and your data was deleted. Thank you for your time.")
    if participant is not None and participant.completed:
        return participant  # the thank-you page: a finished link shows that, never the tasks again
    if participant is not None and withdrawing:
        return participant  # the consent promises withdrawal at any time: a closed study or an expired link does not stop it
    started = participant is not None
    if not invitation.study.is_open:
        raise StudyError("This study is closed: it no longer accepts answers.", can_withdraw=started)
    if invitation.expired():
        raise StudyError(f"This link expired on {invitation.expires:%Y-%m-%d %H:%M} UTC.", can_withdraw=started)
    if participant is None:
        participant, _ = Participant.objects.get_or_create(invitation=invitation, defaults={"study": invitation.study})
    return participant


def consent_give(*, participant: Participant) -> None:
    Participant.objects.filter(pk=participant.pk, consented__isnull=True).update(consented=timezone.now())


def questionnaire_submit(*, participant: Participant, answers: dict) -> dict[str, str]:
    """Store the answers, place the participant in a tier and draw their plan. Returns problems per question ({} when stored)."""
    study = participant.study
    problems = protocol.answer_problems(study.questionnaire, answers)
    if problems:
        return problems
    known = {q["key"] for q in study.questionnaire["questions"]}
    with transaction.atomic():
        row = Participant.objects.select_for_update().get(pk=participant.pk)
        if row.tier:
            return {}  # answered already (a second tab): the first answers stand
        placement = protocol.place(study.tier_rule, answers)
        row.answers, row.points, row.tier = {k: v for k, v in answers.items() if k in known}, placement.points, placement.tier
        row.save(update_fields=["answers", "points", "tier"])
        _plan(row)
    return {}


def _plan(participant: Participant) -> None:
    study = participant.study
    tasks = usable_tasks(study.pack, study.split).filter(category__in=list(study.modules))
    by_category: dict[str, list[str]] = {}
    for task_id, category in tasks.values_list("task_id", "category"):
        by_category.setdefault(category, []).append(task_id)
    taken = (
        Assignment.objects.filter(participant__study=study, participant__withdrawn__isnull=True)
        .values_list("task__task_id")
        .annotate(n=Count("pk"))
    )
    plan = protocol.draw_plan(by_category, dict(taken), study.rounds, study.per_category, seed=participant.code)
    ids = dict(tasks.values_list("task_id", "pk"))
    previous = None
    rows = []
    for position, (rnd, category, task_id) in enumerate(plan):
        rows.append(
            Assignment(participant=participant, position=position, round=rnd, task_id=ids[task_id], intro=(rnd, category) != previous)
        )
        previous = (rnd, category)
    Assignment.objects.bulk_create(rows)


def current_assignment(participant: Participant) -> Assignment | None:
    return participant.assignments.filter(submitted__isnull=True).select_related("task").order_by("position").first()


def intro_seen(*, assignment: Assignment) -> None:
    Assignment.objects.filter(pk=assignment.pk, intro_seen__isnull=True).update(intro_seen=timezone.now())


def task_shown(*, assignment: Assignment) -> None:
    Assignment.objects.filter(pk=assignment.pk, shown__isnull=True).update(shown=timezone.now())


def _prompt_problem(study: Study, text: str) -> str:
    if not text.strip():
        return "Write a prompt before going on."
    if len(text) > study.max_prompt_chars:
        return f"Your prompt has {len(text)} characters; the limit is {study.max_prompt_chars}. Please shorten it."
    return ""


def draft_save(*, participant: Participant, position: int, text: str) -> str:
    """Keep what the participant has typed so far. Returns a problem ('' when saved)."""
    if len(text) > participant.study.max_prompt_chars * 2:
        return "This draft is far over the length limit and was not saved."
    saved = Assignment.objects.filter(participant=participant, position=position, submitted__isnull=True).update(
        draft=text, draft_saved=timezone.now()
    )
    return "" if saved else "This task was already submitted."


def assignment_submit(*, participant: Participant, position: int, text: str) -> str:
    """Submit the prompt of the current task. Returns a problem for the participant ('' when stored). QueueUnavailable:
    the last task's prompts could not be sent for evaluation, and nothing was stored (the draft stays)."""
    problem = _prompt_problem(participant.study, text)
    if problem:
        return problem
    with enqueued_or_unchanged():
        row = Participant.objects.select_for_update().get(pk=participant.pk)
        if row.withdrawn or row.completed:
            return "This session is over; nothing more can be submitted."
        current = current_assignment(row)
        if current is None or current.position != position:
            return "That task was already submitted (a second click or another tab); here is where you are now."
        now = timezone.now()
        seconds = (now - current.shown).total_seconds() if current.shown else None
        Assignment.objects.filter(pk=current.pk).update(text=text, draft=text, submitted=now, seconds=seconds)
        if current_assignment(row) is None:
            _complete(row)
    return ""


def _complete(participant: Participant) -> None:
    """The last task is in: the prompts become a submission of kind human, evaluated like any other (not published alone)."""
    study = participant.study
    submission = Submission.objects.create(
        team=study.team,
        pack=study.pack,
        pack_revision=study.pack.revision,
        prompter=f"participant {participant.code}",
        condition=participant.tier,
        origin=Origin.HUMAN,
        source_name=f"study {study.slug}",
        baseline_note=f"study {study.name}, protocol {study.protocol_version}",
        card=card_for(team=study.team, name=f"participant {participant.code}", kind=PrompterKind.HUMAN),
    )
    PromptEntry.objects.bulk_create(
        PromptEntry(submission=submission, task_id=a.task_id, sample_index=0, text=a.text, line=a.position + 1)
        for a in participant.assignments.all()
    )
    participant.completed, participant.submission = timezone.now(), submission
    participant.save(update_fields=["completed", "submission"])
    enqueue(START_JOB, submission.pk)


def attempt_create(*, participant: Participant, position: int, text: str) -> tuple[Attempt | None, str]:
    """An IM retry: render the prompt on the study's fast backend and score it. Returns (attempt, problem).
    QueueUnavailable: the render could not be enqueued, and nothing was stored."""
    study = participant.study
    problem = _prompt_problem(study, text)
    if problem:
        return None, problem
    with enqueued_or_unchanged():
        Participant.objects.select_for_update().get(pk=participant.pk)
        current = current_assignment(participant)
        if current is None or current.position != position or current.task.category != IMITATION or not study.retry_attempts:
            return None, "Trying a prompt is only possible on the current imitation task of a study in retry mode."
        attempts = list(current.attempts.all())
        if any(a.status == UnitStatus.PENDING for a in attempts):
            return None, "Your previous attempt is still being rendered; wait for its image."
        if len(attempts) >= study.retry_attempts:
            return None, f"You have used all {study.retry_attempts} attempts for this task; submit your final prompt."
        attempt = Attempt.objects.create(assignment=current, number=len(attempts) + 1, text=text)
        Assignment.objects.filter(pk=current.pk).update(draft=text, draft_saved=timezone.now())
        enqueue(ATTEMPT_RENDER_JOB, attempt.pk, backend=study.retry_backend)
    return attempt, ""


def _participant_files(participant: Participant, submission: Submission | None) -> dict[str, Storage]:
    """Storage name -> storage of every file the participant's rows name: attempt images, and their submission's
    renders and feedback images."""
    rows = [(Attempt.objects.filter(assignment__participant=participant), "image")]
    if submission is not None:
        rows += [
            (Render.objects.filter(entry__submission=submission), "image"),
            (PromptCall.objects.filter(submission=submission), "feedback_image"),
        ]
    files: dict[str, Storage] = {}
    for queryset, field in rows:
        storage = queryset.model._meta.get_field(field).storage
        files |= dict.fromkeys(queryset.exclude(**{field: ""}).values_list(field, flat=True), storage)
    return files


def participant_withdraw(*, participant: Participant) -> None:
    """Delete the participant's prompts, drafts, attempts, answers and submission, and once that is committed every file
    of theirs no remaining row names; keep only that they withdrew (and their tier, for staff counts)."""
    with transaction.atomic():
        row = Participant.objects.select_for_update(of=("self",)).select_related("submission").get(pk=participant.pk)
        if row.withdrawn:
            return
        submission = row.submission
        files = _participant_files(row, submission)
        # After the commit, so a rollback never leaves rows naming deleted files; checked then, against committed rows.
        transaction.on_commit(lambda: files_delete_unused(files))
        row.assignments.all().delete()
        row.answers, row.points, row.withdrawn, row.submission = {}, None, timezone.now(), None
        row.save(update_fields=["answers", "points", "withdrawn", "submission"])
        if submission is not None:
            submission.delete()
            human_rows_rebuild(pack=submission.pack, revision=submission.pack_revision)
