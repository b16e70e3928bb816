"""Top-1 of N for the composite: what the paper reports for N images per prompt ("mean top-1 image score").

The leaderboard's composite (evaluator.metrics.aggregate) averages the image part over every image of a
prompt. The official route's figures keep, per (task, sample, backend), only the image the paper would
keep: the best by the lowest top1_rank scored there (the image rubric for OE and CO; for IM, which has no
image rubric on this route, the image checklist), ties to the first image, exactly as aggregate's own
"top1" figures choose it. Feeding the kept units to aggregate.figures then gives the composite, category,
backend and skill figures of the best image only. Failed units of the other images stay, so failures are
still counted.
"""

from __future__ import annotations

from collections import defaultdict

from ...metrics.aggregate import Figure, Unit, figures, normalise

_Key = tuple[str, int, str]  # task, sample, backend


def best_images(units: list[Unit]) -> dict[_Key, int]:
    """(task, sample, backend) -> the id of its top-1 image, for every group with a ranking unit scored."""
    images: dict[_Key, dict[int, dict[str, Unit]]] = defaultdict(lambda: defaultdict(dict))
    for u in units:
        if u.backend and u.image >= 0 and u.scored:
            images[(u.task_id, u.sample, u.backend)][u.image][u.skill] = u
    best: dict[_Key, int] = {}
    for key, by_image in images.items():
        ranked = [u for image in by_image.values() for u in image.values() if u.top1_rank is not None]
        if not ranked:
            continue
        ranking = min(ranked, key=lambda u: u.top1_rank).skill  # type: ignore[arg-type, return-value]
        best[key] = max(sorted(by_image), key=lambda i: normalise(by_image[i][ranking]) if ranking in by_image[i] else float("-inf"))
    return best


def top1_units(units: list[Unit]) -> list[Unit]:
    """The units, less the scored image-side units of every image that is not its group's top-1."""
    best = best_images(units)

    def kept(u: Unit) -> bool:
        key = (u.task_id, u.sample, u.backend)
        return not (u.backend and u.image >= 0 and u.scored and key in best and best[key] != u.image)

    return [u for u in units if kept(u)]


def top1_figures(units: list[Unit]) -> list[Figure]:
    """aggregate.figures on the top-1 image of every prompt and backend: the official route's composite."""
    return figures(top1_units(units))
