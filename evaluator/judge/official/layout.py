"""The files a checkout of the AtelierEval release must have for the official route (paths relative to its root).

Kept free of everything but pathlib and the category table, so that settings can check a folder at start-up.
"""

from __future__ import annotations

from pathlib import Path

from ...categories import CATEGORIES, IMITATION

SUBJECTIVE_TEMPLATES = "evaluator/configs/templates/subjective_prompt_templates.json"
OBJECTIVE_TEMPLATES = "evaluator/configs/templates/objective_check_templates.json"
SUBJECTIVE_RUNTIME = "evaluator/configs/runtime/subjective_runtime.json"
OBJECTIVE_RUNTIME = "evaluator/configs/runtime/objective_runtime.json"
MEMORY_ENGINE = "evaluator/subjective/s1_subjective_memory_skill_engine.py"
SUBJECTIVE_CORE = "evaluator/subjective/subjective_eval_core.py"
CHECKLISTS = {c: f"evaluator/objective/checklist/{c.lower()}_checklist.json" for c in CATEGORIES}
PROMPT_MEMORY = {c: f"evaluator/subjective/memory/prompt_from_prompt_memory_{c.lower()}.json" for c in CATEGORIES}
# An imitation is not judged on its own aesthetics (no image_subjective), so the release has no image memory for IM.
IMAGE_MEMORY = {c: f"evaluator/subjective/memory/image_from_image_memory_{c.lower()}.json" for c in CATEGORIES if c != IMITATION}
DATASET = {c: f"dataset/{c.lower()}_120.json" for c in CATEGORIES}

REQUIRED: tuple[str, ...] = (
    SUBJECTIVE_TEMPLATES,
    OBJECTIVE_TEMPLATES,
    SUBJECTIVE_RUNTIME,
    OBJECTIVE_RUNTIME,
    MEMORY_ENGINE,
    SUBJECTIVE_CORE,
    *CHECKLISTS.values(),
    *PROMPT_MEMORY.values(),
    *IMAGE_MEMORY.values(),
    *DATASET.values(),
)


class OfficialReleaseError(ValueError):
    """A folder that is not a usable checkout of the release; the message names the file (and record, field)."""


def release_problems(root: str | Path) -> list[str]:
    """What keeps `root` from being used as a release checkout: [] when every required file is there."""
    root = Path(root)
    if not root.is_dir():
        return [f"{root} is not a folder"]
    return [f"{root / name}: file not found" for name in REQUIRED if not (root / name).is_file()]


def check_release(root: str | Path) -> Path:
    """`root` as a Path, or OfficialReleaseError naming every missing file."""
    problems = release_problems(root)
    if problems:
        raise OfficialReleaseError(f"{root} is not a checkout of the AtelierEval release: " + "; ".join(problems))
    return Path(root)
