"""What each figure rests on: of the units planned for it, how many were scored.

A figure is a mean over the units that were scored; failed units are left out (aggregate). So
a figure of a run whose model calls all failed can read 100.0 on the strength of its metric
units alone. Its coverage says so: per figure (overall, category, backend, part and skill
scopes), the units planned for it and those scored, in all and per composite skill.

Planned: a composite unit (a skill figure: a unit of that skill) that ended ok or failed or is
still pending, and a failed render (it stands for the image units that could not be planned).
Not planned: skipped units (the judge has no such skill, it does not apply, or the run was
cancelled before it) and blocked ones (a safety gate decided that the sample is not scored).

The standing of a figure, from its coverage:
- withheld: some composite skill it averages has more of its planned units missing than the
  limit that makes a run incomplete (ATELIER_MAX_MISSING_RATE): the figure would be another
  quantity (e.g. target similarity alone), not a noisier one, so no value is shown;
- partial: the figure's run is not finished and done, or some planned unit is missing;
- full: every planned unit was scored, and the run is done.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..judge.types import Status
from .scopes import Scope

if TYPE_CHECKING:  # the web process reads coverage without importing numpy and scipy (aggregate's)
    from .aggregate import Unit

PLANNED = (Status.OK, Status.FAILED, "pending")  # "pending": a unit no job has settled yet (the site's UnitStatus)
RENDER = "render"  # the skill name aggregate gives a failed render
FULL, PARTIAL, WITHHELD = "full", "partial", "withheld"


def _planned(unit: Unit) -> bool:
    return unit.status in PLANNED and (unit.composite or (unit.skill == RENDER and unit.status == Status.FAILED))


def _count(units: Iterable[Unit], skills: bool = True) -> dict[str, Any]:
    per_skill: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    scored = planned = 0
    for u in units:
        planned += 1
        scored += u.scored
        if skills and u.skill != RENDER:
            per_skill[u.skill][0] += u.scored
            per_skill[u.skill][1] += 1
    return {"scored": scored, "planned": planned, "skills": dict(sorted(per_skill.items()))}


def _scopes(unit: Unit) -> list[tuple[str, str]]:
    """The composite figures a planned unit counts for."""
    found = [(Scope.OVERALL, "overall"), (Scope.CATEGORY, unit.category), (Scope.PART, "image" if unit.backend else "prompt")]
    return [*found, (Scope.BACKEND, unit.backend)] if unit.backend else found


def coverage(units: list[Unit]) -> dict[tuple[str, str], dict[str, Any]]:
    """{(scope, key): {"scored": k, "planned": n, "skills": {skill: [k, n]}}} for the overall, category, backend,
    part and skill figures of these units (the keys aggregate.figures and detail_figures give them)."""
    composite: dict[tuple[str, str], list[Unit]] = defaultdict(list)
    by_skill: dict[str, list[Unit]] = defaultdict(list)
    for u in units:
        if _planned(u):
            for scope in _scopes(u):
                composite[scope].append(u)
        if u.skill != RENDER and u.status in PLANNED:
            by_skill[u.skill].append(u)
    out = {scope: _count(group) for scope, group in composite.items()}
    out.update({(Scope.SKILL, skill): _count(group, skills=False) for skill, group in by_skill.items()})
    return out


def standing(recorded: Mapping[str, Any], *, done: bool, max_missing: float) -> str:
    """FULL, PARTIAL or WITHHELD (see the module's docstring). A figure stored before coverage was recorded (an
    empty mapping) is full when its run is done and partial otherwise."""
    for scored, planned in recorded.get("skills", {}).values():
        if planned and (planned - scored) / planned > max_missing:
            return WITHHELD
    if not done or recorded.get("scored", 0) < recorded.get("planned", 0):
        return PARTIAL
    return FULL


def coverage_words(recorded: Mapping[str, Any]) -> str:
    """'rests on 12 of 72 judged units (17 %)', or '' when coverage was not recorded."""
    if not recorded:
        return ""
    scored, planned = recorded["scored"], recorded["planned"]
    share = f" ({100 * scored / planned:.0f} %)" if planned else ""
    return f"rests on {scored} of {planned} judged units{share}"
