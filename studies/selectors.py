"""Reads for the participant pages, the staff pages and the exports."""

from __future__ import annotations

from collections import Counter

from django.db.models import QuerySet

from evaluation import runtime

from .models import Assignment, Participant, Study


def constraint_bullets(task) -> list[str]:
    """A CO task's constraints as the bullets a participant reads (the brief's own words, key first). `task`: the
    task as a prompter sees it (tasks.selectors.prompter_view), or the task itself."""
    constraints = task.constraints or {}
    return [f"{key.replace('_', ' ').capitalize()}: {value}" for key, value in constraints.items()] if isinstance(constraints, dict) else []


def attempts_are_smoke(study: Study) -> bool:
    """Whether IM attempts render on a smoke backend (random weights): their images are noise, their similarity says nothing."""
    config = runtime.backend_configs().get(study.retry_backend)
    return bool(config and config.is_smoke)


def progress_of(participant: Participant) -> dict:
    assignments = list(participant.assignments.values_list("submitted", flat=True))
    done = sum(s is not None for s in assignments)
    return {"done": done, "total": len(assignments), "percent": round(100 * done / len(assignments)) if assignments else 0}


def study_progress(study: Study) -> dict:
    """Staff view: participants by state and tier, and tasks submitted."""
    rows = list(study.participants.all())
    by_state = Counter(p.state for p in rows)
    tiers = sorted({p.tier for p in rows if p.tier})
    table = [
        {"tier": t, **{s: sum(1 for p in rows if p.tier == t and p.state == s) for s in ("tasks", "completed", "withdrawn")}} for t in tiers
    ]
    return {
        "invitations": study.invitations.count(),
        "started": len(rows),
        "by_state": dict(by_state),
        "by_tier": table,
        "submitted": Assignment.objects.filter(participant__study=study, submitted__isnull=False).count(),
    }


def export_prompts(study: Study) -> QuerySet:
    """One row per submitted or drafted task, no identity: participant code, tier, order, task, prompt, timings, attempts."""
    return (
        Assignment.objects.filter(participant__study=study, participant__withdrawn__isnull=True)
        .select_related("participant", "task")
        .order_by("participant__code", "position")
    )


EXPORT_FIELDS = {
    "prompts": (
        "participant",
        "tier",
        "round",
        "position",
        "category",
        "task_id",
        "prompt",
        "draft",
        "shown",
        "submitted",
        "seconds",
        "attempts",
    ),
    "participants": (
        "participant",
        "tier",
        "scripted",
        "points",
        "state",
        "consented",
        "started",
        "completed",
        "withdrawn",
        "protocol",
        "answers",
    ),
}


def _iso(moment) -> str:
    return moment.isoformat() if moment else ""


def export_rows(study: Study, kind: str):
    if kind == "prompts":
        for a in export_prompts(study).prefetch_related("attempts"):
            yield {
                "participant": a.participant.code,
                "tier": a.participant.tier,
                "round": a.round + 1,
                "position": a.position + 1,
                "category": a.task.category,
                "task_id": a.task.task_id,
                "prompt": a.text,
                "draft": "" if a.submitted else a.draft,
                "shown": _iso(a.shown),
                "submitted": _iso(a.submitted),
                "seconds": a.seconds,
                "attempts": [{"number": t.number, "text": t.text, "status": t.status, "score": t.score} for t in a.attempts.all()],
            }
    else:
        for p in study.participants.order_by("code"):
            yield {
                "participant": p.code,
                "tier": p.tier,
                "scripted": p.scripted,
                "points": p.points,
                "state": p.state,
                "consented": _iso(p.consented),
                "started": _iso(p.started),
                "completed": _iso(p.completed),
                "withdrawn": _iso(p.withdrawn),
                "protocol": study.protocol_version,
                "answers": p.answers,
            }
