"""Routes: which skills run for a task, defined once, and running a whole route with the gate.

"ateliereval" is AtelierEval's own judge: OE and CO run the four rubric/checklist skills; IM
skips image_subjective (an imitation is judged on fidelity, not its own aesthetics) and adds
target_similarity. "extended" adds the safety gates (first, so a block saves the calls after
them), text_rendering (only for tasks whose checklist quotes literal text), faithfulness,
and color_shift for IM. "official" is the released judge reproduced from a checkout (evaluator/judge/official/):
the release's own skills only, so IM runs no target_similarity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..categories import check_category
from .config import DEFAULT_ROUTE, EXTENDED_ROUTE, OFFICIAL_ROUTE, ROUTE_NAMES
from .gate import Block, block_of, stopped, stops
from .protocol import Judge
from .skills import get_skill
from .types import Exemplar, JudgeResult, Side, TargetInput, TaskInput

if TYPE_CHECKING:
    from PIL.Image import Image

_ATELIEREVAL_OE_CO = ("prompt_subjective", "prompt_objective", "image_subjective", "image_objective")
_ATELIEREVAL_IM = ("prompt_subjective", "prompt_objective", "image_objective", "target_similarity")
_GATES = ("safety_prompt", "safety_image")
# Keyed by the route names of config.py, which settings check a configured route against without importing this module.
ROUTES: dict[str, dict[str, tuple[str, ...]]] = {
    DEFAULT_ROUTE: {"OE": _ATELIEREVAL_OE_CO, "CO": _ATELIEREVAL_OE_CO, "IM": _ATELIEREVAL_IM},
    EXTENDED_ROUTE: {
        "OE": _GATES + _ATELIEREVAL_OE_CO + ("text_rendering", "faithfulness"),
        "CO": _GATES + _ATELIEREVAL_OE_CO + ("text_rendering", "faithfulness"),
        "IM": _GATES + _ATELIEREVAL_IM + ("text_rendering", "faithfulness", "color_shift"),
    },
    OFFICIAL_ROUTE: {
        "OE": _ATELIEREVAL_OE_CO,
        "CO": _ATELIEREVAL_OE_CO,
        "IM": ("prompt_subjective", "prompt_objective", "image_objective"),
    },
}
if tuple(ROUTES) != ROUTE_NAMES:
    raise RuntimeError(f"config.ROUTE_NAMES {ROUTE_NAMES} must name the routes defined here, in order: {tuple(ROUTES)}")


def check_route(route: str) -> str:
    if route not in ROUTES:
        raise ValueError(f"unknown route {route!r}; expected one of {ROUTE_NAMES}")
    return route


def route_skills(category: str, route: str = DEFAULT_ROUTE) -> tuple[str, ...]:
    """Every skill a route may run for a category, in order."""
    return ROUTES[check_route(route)][check_category(category)]


def route_for_task(task: TaskInput, route: str = DEFAULT_ROUTE) -> tuple[str, ...]:
    """The skills to plan for this task, in route order: those that apply to its content."""
    return tuple(s for s in route_skills(task.category, route) if get_skill(s).applies(task))


def route_skip_reason(skill: str, task: TaskInput, route: str = DEFAULT_ROUTE) -> str | None:
    if skill not in route_skills(task.category, route):
        suffix = "" if route == DEFAULT_ROUTE else f" on the {route} route"
        return f"{task.category} tasks are not judged on {skill}{suffix}"
    return None


def run_route(
    judge: Judge,
    task: TaskInput,
    prompt: str,
    image: Image | None = None,
    *,
    route: str = DEFAULT_ROUTE,
    skills: Sequence[str] | None = None,
    prompt_exemplars: Sequence[Exemplar] = (),
    image_exemplars: Sequence[Exemplar] = (),
    target: TargetInput | None = None,
) -> dict[str, JudgeResult]:
    """skill -> result for every skill of route_for_task(task, route) (or only `skills`, in route order), gated."""
    order = route_for_task(task, route)
    if skills is not None:
        unknown = [s for s in skills if s not in order]
        if unknown:
            raise ValueError(f"{unknown} are not on the {route} route for task {task.task_id}")
        order = tuple(s for s in order if s in skills)
    exemplars = {Side.PROMPT: prompt_exemplars, Side.IMAGE: image_exemplars}
    results: dict[str, JudgeResult] = {}
    blocks: list[Block] = []
    for skill in order:
        block = next((b for b in blocks if stops(b, skill)), None)
        if block is not None:
            results[skill] = stopped(skill, block)
            continue
        spec = get_skill(skill)
        result = judge.run(skill, task, prompt, image, exemplars=exemplars[spec.side] if spec.uses_memory else (), target=target)
        results[skill] = result
        new_block = block_of(skill, result.status, result.reason)
        if new_block is not None:
            blocks.append(new_block)
    return results
