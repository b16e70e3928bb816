"""The demo's board on the original 360-task pack: two rule-based prompters on a few public dev tasks and a few
hidden test tasks per category, so the board shows every entry's dev and test scores, their gap, and a ranking by
the hidden test split (the pack has 100 test tasks per category). Idempotent: an existing run is reused."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.utils.text import slugify

from evaluation import runtime
from evaluation.models import Status, Submission
from evaluator.categories import CATEGORIES
from evaluator.prompters.baselines import brief_verbatim
from submissions.services import submission_create
from tasks.models import Task, TaskPack
from tasks.services import PackRevision
from tasks.targets import references_render, targets_render
from teams.models import Team

PER_SPLIT = 2  # tasks per category and split: 12 tasks in all
QUALITY_TAGS = "highly detailed, sharp focus, soft light, balanced composition"
RULES: dict[str, Callable[[Task], str]] = {
    "Rule: brief verbatim": lambda t: brief_verbatim(t.brief, t.constraints or {}),
    "Rule: brief + quality tags": lambda t: f"{brief_verbatim(t.brief, t.constraints or {})}\n{QUALITY_TAGS}",
}


def demo_tasks(pack: TaskPack) -> list[Task]:
    return [
        t
        for c in CATEGORIES
        for split in ("dev", "test")
        for t in pack.tasks.filter(category=c, split=split).order_by("task_id")[:PER_SPLIT]
    ]


def demo_original(pack: TaskPack, team: Team, say: Callable[[str], None]) -> list[Submission]:
    tasks = demo_tasks(pack)
    ids = [t.task_id for t in tasks]
    backends = list(runtime.backend_configs().values())
    revision = PackRevision.begin(pack.pk)  # targets and references: one revision at most
    rendered, failures = targets_render(pack=pack, backend=backends[0], candidates=4, task_ids=ids, revision=revision)
    if failures:
        raise RuntimeError("could not render the original pack's demo IM targets:\n" + "\n".join(failures))
    references_render(pack=pack, backends=backends, task_ids=ids, revision=revision)
    pack.refresh_from_db()  # new targets move the pack to its next revision: the runs belong to that one
    where = f"({PER_SPLIT} dev + {PER_SPLIT} hidden test per category; {rendered} IM target(s) rendered)"
    return [rule_run(team, pack, name, rule, tasks, lambda line: say(f"{line} {where}…")) for name, rule in RULES.items()]


def rule_run(
    team: Team, pack: TaskPack, name: str, rule: Callable[[Task], str], tasks: list[Task], say: Callable[[str], None]
) -> Submission:
    """The team's upload of `rule`'s prompts for `tasks` under the prompter `name`, made once per pack revision."""
    run = Submission.objects.filter(team=team, pack=pack, pack_revision=pack.revision, prompter=name).exclude(status=Status.FAILED).first()
    if run is None:
        say(f"Evaluating {name!r} on {len(tasks)} tasks of {pack}")
        data = "\n".join(json.dumps({"task_id": t.task_id, "prompt": rule(t)}) for t in tasks).encode()
        run = submission_create(team=team, pack=pack, prompter=name, filename=f"{slugify(name)}.jsonl", data=data)
    return run
