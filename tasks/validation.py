"""Checks a pack must pass before it serves as a benchmark (manage.py validate_pack).

Pure over PackData plus an embedding function, so the near-duplicate rule is testable
with any embedder; the command passes all-MiniLM-L6-v2.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from evaluator.categories import CATEGORIES, IMITATION

from .loaders import PackData
from .models import TAG_GROUP_OF, TAG_GROUPS

CHECKLIST_BANDS = {"OE": (4, 7), "CO": (10, 15), "IM": (14, 16)}
NEAR_DUPLICATE = 0.85


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    coverage: dict[str, Counter] = field(default_factory=dict)
    closest: dict[str, tuple[float, str, str]] = field(default_factory=dict)


def validate(pack: PackData, embed: Callable[[Sequence[str]], np.ndarray]) -> Report:
    report = Report(coverage={c: Counter() for c in CATEGORIES})
    for task in pack.tasks:
        report.coverage[task.category].update(t.lstrip("#") for t in task.tags)
        _check_checklists(task, report.problems)
    _check_balance(pack, report)
    for category in CATEGORIES:
        tasks = [t for t in pack.tasks if t.category == category]
        texts = {"brief": [t.brief for t in tasks]}
        if category == IMITATION and all(t.seed_prompt for t in tasks):
            texts["seed_prompt"] = [t.seed_prompt for t in tasks]
        for name, values in texts.items():
            _check_near_duplicates(category, name, [t.task_id for t in tasks], values, embed, report)
    unused = [tag for tag in TAG_GROUP_OF if not any(report.coverage[c][tag] for c in CATEGORIES)]
    if unused:
        report.notes.append(f"tags never used: {', '.join(unused)}")
    im = [t for t in pack.tasks if t.category == IMITATION]
    with_file = sum(1 for t in im if t.target_image)
    report.notes.append(f"IM targets: {with_file} image file(s), {len(im) - with_file} seed prompt(s) to render with render_targets")
    return report


def _check_checklists(task, problems: list[str]) -> None:
    low, high = CHECKLIST_BANDS[task.category]
    for name in ("prompt_checklist", "image_checklist"):
        items = getattr(task, name)
        if not low <= len(items) <= high:
            problems.append(f"{task.where} {task.task_id}: {name} has {len(items)} items; {task.category} needs {low}–{high}")
        repeated = [item for item, n in Counter(items).items() if n > 1]
        if repeated:
            problems.append(f"{task.where} {task.task_id}: {name} repeats {repeated[0]!r}")


def _check_balance(pack: PackData, report: Report) -> None:
    counts = Counter(t.category for t in pack.tasks)
    splits = Counter((t.category, t.split) for t in pack.tasks)
    report.notes.append(
        "tasks: " + ", ".join(f"{c} {counts[c]} (dev {splits[(c, 'dev')]}, test {splits[(c, 'test')]})" for c in CATEGORIES)
    )
    if len({counts[c] for c in CATEGORIES}) != 1:
        report.problems.append(f"categories are unbalanced: { {c: counts[c] for c in CATEGORIES} }")
    if len({splits[(c, "dev")] for c in CATEGORIES}) != 1:
        report.problems.append("dev splits differ in size across categories: " + ", ".join(f"{c} {splits[(c, 'dev')]}" for c in CATEGORIES))


def _check_near_duplicates(category: str, name: str, ids: list[str], texts: list[str], embed, report: Report) -> None:
    if len(texts) < 2:
        return
    vectors = np.asarray(embed(texts), dtype=float)
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, -1.0)
    i, j = np.unravel_index(int(similarity.argmax()), similarity.shape)
    report.closest[f"{category} {name}"] = (float(similarity[i, j]), ids[i], ids[j])
    for a, b in zip(*np.nonzero(np.triu(similarity >= NEAR_DUPLICATE, k=1))):
        report.problems.append(
            f"{category}: {name}s of {ids[a]} and {ids[b]} are near-duplicates (cosine {similarity[a, b]:.3f} ≥ {NEAR_DUPLICATE})"
        )


def coverage_table(report: Report) -> str:
    """Markdown table: one row per tag (grouped), one column per category."""
    lines = ["| group | tag | OE | CO | IM | all |", "|---|---|---:|---:|---:|---:|"]
    for group, tags in TAG_GROUPS.items():
        for tag in tags:
            counts = [report.coverage[c][tag] for c in CATEGORIES]
            lines.append(f"| {group} | {tag} | {' | '.join(map(str, counts))} | {sum(counts)} |")
    return "\n".join(lines)
