"""What a figure is of, and what a board's ranking rests on: the names the metrics store their numbers under, defined
once for the library and the apps (plain str enums, equal to the strings stored in the database and in board.json).

Scope is the vocabulary of aggregate.Figure.scope and of the stored Figure rows (evaluation.models.Figure.scope takes
its choices from here); cell_key names a category × backend figure; RankedOn is BoardStats.ranked_on["split"].

A figure is named by (scope, key): ("overall", "overall"), ("category", "OE"), ("backend", <name>), ("skill", <skill>),
("top1", <skill>), ("part", "prompt" | "image"), ("category_backend", cell_key("OE", <backend>)), ("task", <task id>).
"""

from __future__ import annotations

from enum import StrEnum


class Scope(StrEnum):
    OVERALL = "overall"  # the macro mean over categories (key "overall")
    CATEGORY = "category"  # one task category (key: its code)
    BACKEND = "backend"  # the image part on one backend (key: its name)
    SKILL = "skill"  # one skill on its own scale (key: the skill)
    TOP1 = "top1"  # a skill's value on each prompt's best image (key: the skill)
    PART = "part"  # the prompt part or the image part alone (key: "prompt" or "image")
    CATEGORY_BACKEND = "category_backend"  # the image part of one category on one backend (key: cell_key)
    TASK = "task"  # one task's composite score (key: the task id)


class RankedOn(StrEnum):
    """Which of the board's tasks the ranking statistics use (board.ranked_tasks)."""

    TEST = "test"  # the test split's tasks (every category has at least `ranked_split_min` of them)
    ALL = "all"  # every task


_CELL = "|"


def cell_key(category: str, backend: str) -> str:
    """The key of a Scope.CATEGORY_BACKEND figure."""
    return f"{category}{_CELL}{backend}"


def split_cell_key(key: str) -> tuple[str, str]:
    """(category, backend) of a Scope.CATEGORY_BACKEND figure's key (cell_key's inverse)."""
    category, _, backend = key.partition(_CELL)
    return category, backend
