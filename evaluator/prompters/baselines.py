"""Reference prompters that need no model, computed the same way for every pack.

`brief_verbatim` is the floor every prompter should beat: it hands the client's brief
(and, for CO tasks, the constraint fields) to the generator unchanged.
"""

from __future__ import annotations

BASELINES = {"brief-verbatim": "Passes the task brief (and CO constraint fields) to the generator unchanged: the do-nothing prompter."}
CONSTRAINT_ORDER = ("pairing", "layout", "quantity", "text", "constraint")


def brief_verbatim(brief: str, constraints: dict[str, str]) -> str:
    parts = [brief.strip()]
    parts += [f"{name}: {constraints[name].strip()}" for name in CONSTRAINT_ORDER if constraints.get(name, "").strip()]
    return "\n".join(parts)
