"""Running a whole route for one sample, with the safety gate.

On the extended route safety_prompt and safety_image run first. When safety_prompt
blocks, every other skill of the sample is "blocked" without a call; when only
safety_image blocks, the skills that look at the image are blocked and the prompt
skills still run. A blocked result never carries a score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .types import STATUS_BLOCKED, Judge, JudgeResult, TargetInput, TaskInput, blocked, is_image_skill, route_for_task

if TYPE_CHECKING:
    from PIL.Image import Image

    from .memory import Exemplar


def run_route(
    judge: Judge,
    task: TaskInput,
    prompt: str,
    image: Image | None = None,
    *,
    route: str = "ateliereval",
    skills: Sequence[str] | None = None,
    prompt_exemplars: Sequence[Exemplar] = (),
    image_exemplars: Sequence[Exemplar] = (),
    target: TargetInput | None = None,
) -> dict[str, JudgeResult]:
    """skill -> result for every skill of route_for_task(task, route) (or only `skills`, in route order)."""
    order = route_for_task(task, route)
    if skills is not None:
        unknown = [s for s in skills if s not in order]
        if unknown:
            raise ValueError(f"{unknown} are not on the {route} route for task {task.task_id}")
        order = tuple(s for s in order if s in skills)
    results: dict[str, JudgeResult] = {}
    gate: dict[str, str] = {}  # "all" / "image" -> reason
    for skill in order:
        gated = gate.get("all") or (gate.get("image") if is_image_skill(skill) else None)
        if gated:
            results[skill] = blocked(skill, gated)
            continue
        exemplars = prompt_exemplars if skill == "prompt_subjective" else image_exemplars if skill == "image_subjective" else ()
        result = judge.run(skill, task, prompt, image, exemplars=exemplars, target=target)
        results[skill] = result
        if skill.startswith("safety_") and result.status == STATUS_BLOCKED:
            gate["all" if skill == "safety_prompt" else "image"] = result.reason
    return results
