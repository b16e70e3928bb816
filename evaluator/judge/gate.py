"""The safety gate: one rule for what a blocked gate stops, used by the library and the site.

A gate skill (kind "gate", the safety screens) that blocks stops the other skills of its
sample: a blocked prompt (a prompt-side gate) stops every skill of the sample, on every
image; a blocked image (an image-side gate) stops the image-side skills of that one image,
and the prompt-side skills still run. A stopped skill's result is "blocked": never a score.
`evaluator.judge.routes.run_route` applies it while running a route in order; the site
applies the same `stops` to judgement rows that run concurrently (evaluation.judging).
"""

from __future__ import annotations

from dataclasses import dataclass

from .skills import get_skill
from .types import JudgeResult, Kind, Side, Status, blocked


@dataclass(frozen=True)
class Block:
    gate: str  # the gate skill that blocked
    reason: str  # its reason ("blocked by safety_prompt: graphic_violence")
    scope: Side  # PROMPT: the whole sample; IMAGE: the image-side skills of one image


def block_of(skill: str, status: str, reason: str) -> Block | None:
    """The block a result imposes, if it is a gate's block."""
    spec = get_skill(skill)
    if spec.kind != Kind.GATE or status != Status.BLOCKED:
        return None
    return Block(gate=skill, reason=reason, scope=spec.side)


def stops(block: Block, skill: str) -> bool:
    """Whether the block stops this skill (of the same sample; for an image block, of the same image)."""
    if skill == block.gate:
        return False
    return block.scope == Side.PROMPT or get_skill(skill).side == Side.IMAGE


def stopped(skill: str, block: Block) -> JudgeResult:
    return blocked(skill, block.reason)
