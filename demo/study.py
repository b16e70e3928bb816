"""The demo's human study: a small study on the showcase pack (demo/showcase.py), completed by scripted participants of both tiers
(so the leaderboard shows human rows), and a participant for each visitor of its public entry "Take part yourself"
(/demo/study/, demo/views.py), so a withdrawal ends only theirs.

The scripted participants are rules, not people: a novice writes the brief's first sentence, a skilled
participant the whole brief with every constraint and some craft words. They are marked Participant.scripted
before they write anything, so their rows are labelled "Scripted (demo)" and never pooled with a real person's
(the newcomer's link makes a real participant, whose rows are the people's)."""

from __future__ import annotations

from django.db import transaction

from evaluation import runtime
from evaluator.tiers import Tier
from studies.models import Participant, Study
from studies.services import (
    assignment_submit,
    consent_give,
    current_assignment,
    intro_seen,
    invitation_open,
    invitations_create,
    questionnaire_submit,
    study_create,
    task_shown,
)
from tasks.models import TaskPack
from tasks.selectors import prompter_title

NAME = "Demo study (scripted participants)"
VISITOR = "demo visitor"  # the note on each visitor's invitation
NOVICE = {
    "t2i_experience": "lt3m",
    "t2i_frequency": "rarely",
    "professional": "no",
    "art_background": "none",
    "check_seed": "unsure",
    "check_cfg": "unsure",
    "check_thirds": "centre",
}
SKILLED = {
    "t2i_experience": "gt2y",
    "t2i_frequency": "daily",
    "professional": "yes",
    "art_background": "formal",
    "tools": ["local", "nodes"],
    "concepts": ["seed", "cfg", "composition", "lighting"],
    "check_seed": "seed",
    "check_cfg": "strict",
    "check_thirds": "lines",
}
SCRIPTED = ((Tier.NOVICE, NOVICE), (Tier.NOVICE, NOVICE), (Tier.SKILLED, SKILLED), (Tier.SKILLED, SKILLED))


def scripted_prompt(task, tier: str, variant: int) -> str:
    first = task.brief.split(". ")[0].rstrip(".")
    if tier == Tier.NOVICE:
        return f"{first}" + (", nice colours" if variant else "")
    constraints = "; ".join(f"{v}" for v in (task.constraints or {}).values())
    craft = ("clean composition, even soft lighting, crisp detail", "balanced rule-of-thirds framing, controlled palette")[variant % 2]
    return f"{prompter_title(task)}: {task.brief} {constraints + '. ' if constraints else ''}{craft}"  # the title as shown


def demo_study(pack: TaskPack, write, per_category: int = 2) -> Study:
    """The study (created once) and its scripted participants (completed once); people enter through `enter`."""
    study = Study.objects.filter(name=NAME).first()
    if study is None:
        backend = next(iter(runtime.backend_configs()))
        study = study_create(name=NAME, pack=pack, per_category=per_category, rounds=1, retry_attempts=3, retry_backend=backend)
    if not study.participants.filter(completed__isnull=False).exists():
        write(
            f"Human study: {len(SCRIPTED)} scripted participants do {study.tasks_per_participant} tasks each; their prompts are evaluated…"
        )
        for variant, (tier, answers) in enumerate(SCRIPTED):
            participant = invitation_open(token=invitations_create(study=study, count=1, note="scripted")[0].token)
            Participant.objects.filter(pk=participant.pk).update(scripted=True)
            participant.refresh_from_db()
            consent_give(participant=participant)
            questionnaire_submit(participant=participant, answers=answers)
            while (current := current_assignment(participant)) is not None:
                intro_seen(assignment=current)
                task_shown(assignment=current)
                problem = assignment_submit(
                    participant=participant, position=current.position, text=scripted_prompt(current.task, tier, variant)
                )
                if problem:
                    raise RuntimeError(f"scripted participant {participant.code}: {problem}")
    return study


def visitor_join(*, study: Study) -> str:
    """A new link and its participant, for one visitor; StudyError (nothing kept) when the study takes nobody."""
    with transaction.atomic():
        token = invitations_create(study=study, count=1, note=VISITOR)[0].token
        invitation_open(token=token)
    return token
