"""The benchmark's task categories, defined once for the library, the apps and the pack formats.

AtelierEval has three: OE (open-ended briefs), CO (briefs with explicit constraints) and
IM (imitation of a target image). Everything else (Django choices, pack file names, the
aggregation order, validation) is derived from this table.
"""

from __future__ import annotations

CATEGORY_NAMES: dict[str, str] = {"OE": "Open-ended", "CO": "Constrained", "IM": "Imitation"}
CATEGORIES: tuple[str, ...] = tuple(CATEGORY_NAMES)
# The category whose tasks carry a target image (and a hidden seed prompt that rendered it).
IMITATION = "IM"


def check_category(category: str) -> str:
    if category not in CATEGORY_NAMES:
        raise ValueError(f"unknown task category {category!r}; expected one of {CATEGORIES}")
    return category
