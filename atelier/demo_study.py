"""The demo's human study: a small study on the showcase pack (atelier/demo_showcase.py), completed by scripted participants of both tiers
(so the leaderboard shows human rows), and the public entry "Take part yourself" (/demo/study/, DEBUG only): each
visitor gets a participant of their own, so a withdrawal ends only theirs.

The scripted participants are rules, not people: a novice writes the brief's first sentence, a skilled
participant the whole brief with every constraint and some craft words. They are marked Participant.scripted
before they write anything, so their rows are labelled "Scripted (demo)" and never pooled with a real person's
(the newcomer's link makes a real participant, whose rows are the people's)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET
from limits import RateLimitItemPerHour

from evaluation import runtime
from evaluator.tiers import Tier
from studies.models import Participant, Study
from studies.services import (
    StudyError,
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
from teams import ratelimit

log = logging.getLogger(__name__)
NAME = "Demo study (scripted participants)"
VISITOR = "demo visitor"  # the note on each visitor's invitation
SESSION_KEY = "demo_study_token"  # this browser's link: a reload returns to its participant
# New participants one client address may make an hour: enough for a classroom behind one NAT, not for a flood.
VISITORS_PER_HOUR = RateLimitItemPerHour(30, namespace="demo-study-visitor")
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


def _still_usable(token: str) -> bool:
    try:
        invitation_open(token=token)
    except StudyError:
        return False  # withdrawn, closed or gone: this browser may start again
    return True


@require_GET
def enter(request: HttpRequest) -> HttpResponse:
    """The demo's "Take part yourself" link: this browser's participant, made on its first visit (DEBUG only)."""
    study = Study.objects.filter(name=NAME).first() if settings.DEBUG else None
    if study is None:
        raise Http404("the demo study is served with DEBUG=true, after `manage.py demo`")
    token = request.session.get(SESSION_KEY, "")
    if not (token and _still_usable(token)):
        if not ratelimit.take(VISITORS_PER_HOUR, ratelimit.client_address(request)):
            log.warning("demo study: the hourly allowance of new participants for one address is spent")
            why = "Too many people joined the demo study from your address within the hour. Try again in an hour."
            return render(request, "studies/refused.html", {"why": why}, status=429)
        try:
            token = visitor_join(study=study)
        except StudyError as exc:
            return render(request, "studies/refused.html", {"why": str(exc)}, status=410)
        request.session[SESSION_KEY] = token
    return redirect("study-session", token=token)
