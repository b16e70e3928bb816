"""The work queues' names, spelled once: settings (which imports this before Django is set up, so nothing here
imports Django), the work queue's table of jobs, the slots and the scheduler take them from here.

Four fixed queues, and one render queue per enabled backend, so a GPU worker keeps exactly one pipeline loaded.
"""

from __future__ import annotations

DEFAULT_QUEUE = "default"  # starting, finishing and board jobs; reconcile
JUDGE_QUEUE = "judge"  # judge calls, and the difficulty predictor
PROMPTER_QUEUE = "prompter"  # calls to teams' prompter endpoints
MAIL_QUEUE = "mail"  # notices to teams (notifications): a slow or dead mail server holds up no other work
FIXED_QUEUES: tuple[str, ...] = (DEFAULT_QUEUE, JUDGE_QUEUE, PROMPTER_QUEUE, MAIL_QUEUE)
RENDER_PREFIX = "render-"


def queue_names_help() -> str:
    """The queues as a worker's help names them: the fixed ones and the render pattern."""
    return ", ".join((*FIXED_QUEUES, f"{RENDER_PREFIX}<backend>"))


def render_queue(backend: str) -> str:
    """The queue a backend's render jobs run on, where that backend's GPU worker listens."""
    return f"{RENDER_PREFIX}{backend}"
