"""The Judge protocol: what the platform calls, whichever judge answers.

Apart from types.py because a judge carries its spec (spec.py), which itself reads the types: types.py imports nothing
of the judge, and nothing imports this module but the code that takes a judge (routes, ensemble, factory, the site).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from .types import Exemplar, JudgeResult, TargetInput, TaskInput

if TYPE_CHECKING:
    from PIL.Image import Image

    from .spec import JudgeSpec


class Judge(Protocol):
    """What the platform calls. A judge may also offer `skip_reason(skill, task) -> str | None`: why it skips a
    skill on a task whatever the prompt and images are; the platform then records the skip without loading inputs."""

    spec: JudgeSpec  # everything that decides the judge's answers; id, version and label come from it
    judge_id: str  # stable id stored with every judgement
    label: str  # human description shown on every page
    version: str  # rubric version + fingerprint of templates, thresholds and models

    def run(
        self,
        skill: str,
        task: TaskInput,
        prompt: str,
        image: Image | None = None,
        *,
        exemplars: Sequence[Exemplar] = (),
        target: TargetInput | None = None,
    ) -> JudgeResult: ...
