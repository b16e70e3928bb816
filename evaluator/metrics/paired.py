"""Two entries compared task by task: per category the mean paired difference of their task scores, with an interval
valid for bounded scores at every number of tasks.

A task's difference d = a − b of two 0–100 task scores lies in [−100, 100]. Its category's interval is the site's
interval for the mean of bounded values (evaluator.metrics.intervals, STaR-Bets) on that range, which is the interval of
(d + 100) / 2 on [0, 100] mapped back: valid for any joint distribution of the two scores, so pairing (the same task
on both sides) removes the tasks' difficulty from the width without assuming normal differences (Student t does, and
covers far less than it says on piled-up 0–100 scores; docs/statistics.md). Values enter in order.task_order, an
order that does not depend on them.

The K categories' intervals are each taken at 1 − (1 − confidence) / K, so all K hold together (Bonferroni); the
overall (macro: the mean of the category differences) interval is their average, which covers the macro difference
whenever all K cover theirs: the rule of the board's neighbour tests (ranking.adjacent_tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from .order import task_order

OVERALL = "overall"


@dataclass(frozen=True)
class Difference:
    """A category's (or the macro OVERALL's) paired comparison over the tasks both entries have a score on."""

    category: str
    tasks: int
    a: float | None = None  # a's mean over those tasks (overall: the mean of the category means)
    b: float | None = None
    difference: float | None = None  # a − b, the mean of the per-task differences
    low: float | None = None
    high: float | None = None
    confidence: float | None = None  # the level this one interval is taken at (all of them together: `confidence`)

    @property
    def separated(self) -> bool:
        """Whether the interval excludes 0: the entries are told apart on this category."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


def paired_differences(
    a: dict[str, float], b: dict[str, float], categories: dict[str, str], order: Sequence[str], confidence: float = 0.95
) -> list[Difference]:
    """One Difference per category of `order` that has a task in `categories`, then OVERALL when two or more of them
    have paired tasks. `a` and `b` map task ids to task scores on 0–100; tasks outside `categories` are left out."""
    from .intervals import mean_interval  # numpy: imported when an interval is computed (tests/test_startup.py)

    shown = [c for c in order if c in set(categories.values())]
    paired = task_order(t for t in set(a) & set(b) if t in categories)
    by_category = {c: [t for t in paired if categories[t] == c] for c in shown}
    tested = [c for c in shown if by_category[c]]
    level = 1 - (1 - confidence) / max(len(tested), 1)
    out: list[Difference] = []
    parts: list[tuple[float, ...]] = []
    for category in shown:
        tasks = by_category[category]
        if not tasks:
            out.append(Difference(category, 0))
            continue
        d = [min(max(a[t] - b[t], -100.0), 100.0) for t in tasks]  # float noise at the ends folded in
        bounds = mean_interval(d, -100.0, 100.0, level)
        assert bounds is not None  # d is not empty
        part = (fmean(a[t] for t in tasks), fmean(b[t] for t in tasks), fmean(d), *bounds)
        out.append(Difference(category, len(tasks), *part, confidence=level))
        parts.append(part)
    if len(parts) > 1:
        macro = [fmean(column) for column in zip(*parts)]  # a, b, difference and both ends: each the mean over categories
        out.append(Difference(OVERALL, sum(x.tasks for x in out), *macro, confidence=confidence))
    return out
