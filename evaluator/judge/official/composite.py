"""Which image of N the official route's composite keeps: the release's first image, or the paper's best of N.

The leaderboard's composite (evaluator.metrics.aggregate) averages the image part over every image of a prompt.
The official route reproduces the release, whose runner judges only the first image of each task folder
(`image_candidates[0]`): its figures keep, per (task, sample, backend), the first image alone (`first_image_units`,
lowest image index; its failures count, the other images' units are left out as the release never judges them).

The paper reports, for N images per prompt, the *mean top-1 image score*: the best image of each prompt
(`best_of_n_units`: the lowest top1_rank scored there, the image rubric for OE and CO, the image checklist for IM,
ties to the first image, exactly as aggregate's own "top1" figures choose it; failed units of the other images stay).
That is its own figure, "best of N", never the composite.
"""

from __future__ import annotations

from collections import defaultdict

from ...metrics.aggregate import Figure, Unit, detail_figures, figures, normalise, task_figures
from ...metrics.scopes import Scope

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


def first_image_units(units: list[Unit]) -> list[Unit]:
    """The units, less the image-side units of every image after its group's first (the release judges only that)."""
    first: dict[_Key, int] = {}
    for u in units:
        if u.backend and u.image >= 0:
            key = (u.task_id, u.sample, u.backend)
            first[key] = min(first.get(key, u.image_index), u.image_index)
    return [u for u in units if not (u.backend and u.image >= 0 and u.image_index != first[(u.task_id, u.sample, u.backend)])]


def best_of_n_units(units: list[Unit]) -> list[Unit]:
    """The units, less the scored image-side units of every image that is not its group's best (the paper's top-1)."""
    best = best_images(units)

    def kept(u: Unit) -> bool:
        key = (u.task_id, u.sample, u.backend)
        return not (u.backend and u.image >= 0 and u.scored and key in best and best[key] != u.image)

    return [u for u in units if kept(u)]


def best_of_n_figures(units: list[Unit]) -> list[Figure]:
    """aggregate.figures on the best image of every prompt and backend: the paper's top-1 of N."""
    return figures(best_of_n_units(units))


def entry_figures(units: list[Unit], first_image: bool = False) -> list[Figure]:
    """Every figure stored for an entry: aggregate's figures, more views of them and each task's score. With
    first_image (the official route) all of them on each prompt's first image, except the "top1" figures, which
    stay the paper's best of all N images."""
    if not first_image:
        return [*figures(units), *detail_figures(units), *task_figures(units)]
    kept = first_image_units(units)
    best = [f for f in figures(units) if f.scope == Scope.TOP1]
    return [*(f for f in figures(kept) if f.scope != Scope.TOP1), *best, *detail_figures(kept), *task_figures(kept)]


def first_image_figures(units: list[Unit]) -> list[Figure]:
    """aggregate.figures on the first image of every prompt and backend: the official route's composite."""
    return figures(first_image_units(units))
