"""The demo's showcase board: enough evidence for every section of a board to show figures.

A pack of its own made of public dev tasks of the original pack (8 per category; their text is the original pack's,
read at demo time), so that:
- style control is identified (it needs 8 tasks in every category; with four ranked entries a category has 26
  residual degrees of freedom);
- steerability has 8 targets per category with 2 trajectories each (the scripted endpoint run with 3 feedback
  rounds and 2 samples);
- intervals, rank ranges, neighbour tests and win rates rest on 24 common tasks and four ranked entries (the
  brief-verbatim baseline, two rule prompters, the scripted endpoint single-turn);
- the human rows come from the demo study's scripted participants (demo/study.py).
Idempotent: what exists is reused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from django.conf import settings

from demo.original import RULES, rule_run
from evaluation import runtime
from evaluation.models import Submission
from submissions.baselines import baseline_create
from tasks.loaders import PackData, read_own_pack
from tasks.models import Task, TaskPack
from tasks.services import PackRevision, pack_save
from tasks.targets import references_render, targets_render
from teams.models import Team

ORIGINAL_PACK = settings.BASE_DIR / "tasks" / "packs" / "atelier-original"
PER_CATEGORY = {"OE": 8, "CO": 8, "IM": 8}
SHOWCASE_RULES: dict[str, Callable[[Task], str]] = {
    **{name: rule for name, rule in RULES.items() if name != "Rule: brief verbatim"},  # the baseline is the verbatim one
    "Rule: first sentence": lambda t: t.brief.split(". ")[0].rstrip("."),
}


def showcase_data() -> PackData:
    """The showcase pack: the first dev tasks of each category of the original pack, under a name of its own."""
    original = read_own_pack(ORIGINAL_PACK)
    tasks = [
        t for category, n in PER_CATEGORY.items() for t in [t for t in original.tasks if t.category == category and t.split == "dev"][:n]
    ]
    return dataclasses.replace(
        original,
        name="showcase",
        version="1",
        title="Demo showcase (24 dev tasks of the original pack)",
        description="The demo's board with enough entries and tasks for every figure: 8 public dev tasks per category of "
        "atelier-original, judged by the scripted demo judge. Not a benchmark.",
        tasks=tasks,
    )


def showcase_pack(say: Callable[[str], None]) -> TaskPack:
    """The pack, saved once, with its IM targets and references rendered (one revision at most)."""
    pack, _ = pack_save(data=showcase_data())
    backends = list(runtime.backend_configs().values())
    revision = PackRevision.begin(pack.pk)
    rendered, failures = targets_render(pack=pack, backend=backends[0], candidates=4, revision=revision)
    if failures:
        raise RuntimeError("could not render the showcase pack's IM targets:\n" + "\n".join(failures))
    references_render(pack=pack, backends=backends, revision=revision)
    pack.refresh_from_db()
    say(f"Loaded {pack} ({pack.tasks.count()} tasks); {rendered} IM target(s) rendered.")
    return pack


def showcase_entries(pack: TaskPack, team: Team, say: Callable[[str], None]) -> list[Submission]:
    """The baseline and the rule prompters on the showcase (the endpoint runs are the demo command's)."""
    tasks = list(pack.tasks.order_by("task_id"))
    rules = [rule_run(team, pack, name, rule, tasks, lambda line: say(f"{line}…")) for name, rule in SHOWCASE_RULES.items()]
    return [baseline_create(pack=pack, baseline="brief-verbatim"), *rules]
