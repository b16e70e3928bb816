"""The scales a judgement's value can be on, and the one map every reader uses to put them on 0–100.

A stored value always travels with its scale's name, so aggregation, pages and downloads
read (value, scale) and never need to know which skill wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scale:
    name: str
    low: float
    high: float
    higher_is_better: bool
    label: str
    digits: int  # decimals shown on pages

    def to_100(self, value: float) -> float:
        """The value on 0–100, 100 being best (a distance counts down)."""
        share = (value - self.low) / (self.high - self.low)
        return 100.0 * (share if self.higher_is_better else 1.0 - share)


LIKERT_1_5 = Scale("likert_1_5", 1.0, 5.0, True, "rubric score 1–5", 2)
RATE_0_1 = Scale("rate_0_1", 0.0, 1.0, True, "share 0–1", 3)
SCORE_0_100 = Scale("score_0_100", 0.0, 100.0, True, "score 0–100", 1)
DISTANCE_0_1 = Scale("distance_0_1", 0.0, 1.0, False, "distance 0–1 (lower is closer)", 3)

SCALES: dict[str, Scale] = {s.name: s for s in (LIKERT_1_5, RATE_0_1, SCORE_0_100, DISTANCE_0_1)}
NO_SCALE = ""  # a gate's verdict (blocked or not) has no value


def scale_named(name: str) -> Scale:
    try:
        return SCALES[name]
    except KeyError:
        raise ValueError(f"unknown scale {name!r}; expected one of {sorted(SCALES)}") from None
