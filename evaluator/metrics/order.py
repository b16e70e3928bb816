"""The order every interval and head-to-head decision reads per-task values in (no numpy: pages import it at start-up).

Betting intervals depend on the order of their values and keep their guarantee for any order fixed without looking at
them. Task-id order is such an order, but ids carry the category and scores depend on it, so a row in id order runs
category by category, which costs STaR-Bets and the decisions power. A fixed shuffle, the SHA-256 of each id, does not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def task_order(tasks: Iterable) -> list[str]:
    """Tasks sorted by the SHA-256 of their id (then the id)."""
    return sorted(tasks, key=lambda t: (hashlib.sha256(str(t).encode()).hexdigest(), str(t)))
