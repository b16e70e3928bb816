"""The official route's four requests, built the way the release builds them (pure functions).

* prompt_subjective: the release's system prompt; one user message of its framing (retrieved exemplars,
  then the candidate) around its user template filled with the task description and the prompt;
* image_subjective: the same for images, the user template also filled with the prompt, and the image
  sent as it is (PNG, full size) after the text. Retrieved image exemplars are written as text: their
  scores, notes and file path, not their pixels, exactly as the release writes them;
* prompt_objective and image_objective: one user message and no system message: the checklist template
  filled with the prompt and the numbered items ("1. item"); the image check's template has no {prompt}
  in the release, so that request shows only the checklist and the image (JPEG, compressed the release's
  way: the quality found by bisection to land near a target size).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..types import Side
from .release import MemoryItem, OfficialRelease

if TYPE_CHECKING:
    from PIL.Image import Image

Message = dict[str, Any]


def numbered(items: Sequence[str]) -> str:
    """The checklist as the release lists it: "1. first item", one per line."""
    return "\n".join(f"{number}. {item}" for number, item in enumerate(items, start=1))


def dimension_lines(release: OfficialRelease, side: Side, dimensions: dict[str, Any]) -> list[str]:
    """An exemplar's human scores, one line per dimension in the release's order ("N/A" for one it lacks)."""
    lines = []
    for name in release.dimension_names(side):
        payload = dimensions.get(name) if isinstance(dimensions.get(name), dict) else {}
        rationale, note = payload.get("rationale"), payload.get("note")
        text = rationale if isinstance(rationale, str) else note if isinstance(note, str) else ""
        lines.append(release.framing.dimension_line.render({"name": name, "score": payload.get("score", "N/A"), "text": text}))
    return lines


def exemplar_block(release: OfficialRelease, side: Side, exemplars: Sequence[MemoryItem]) -> str:
    block = release.framing.prompt_exemplars if side == Side.PROMPT else release.framing.image_exemplars
    if not exemplars:
        return block.none
    rendered = []
    for rank, ex in enumerate(exemplars, start=1):
        values = {
            "rank": rank,
            "ex.task_id": ex.task_id,
            "ex.task_description": exemplar_description(release, ex.task_id),
            "ex.prompt_text": ex.text,
            "ex.image_path": ex.image_path,
            "dim_lines": dimension_lines(release, side, ex.dimensions),
        }
        rendered.append(block.item.render(values))
    return block.between.join(rendered)


def exemplar_description(release: OfficialRelease, task_id: str) -> str:
    """An exemplar's task, from the release's dataset; "N/A" when the dataset has no text for it (as the release)."""
    if task_id not in release.dataset:
        return "N/A"
    category, record = release.dataset[task_id]
    return release.describe(task_id, category, record) or "N/A"


def prompt_subjective_messages(release: OfficialRelease, description: str, prompt: str, exemplars: Sequence[MemoryItem]) -> list[Message]:
    base = release.users[Side.PROMPT].format(task_description=description, prompt_text=prompt)
    text = release.framing.prompt_message.render({"exemplar_block": exemplar_block(release, Side.PROMPT, exemplars), "base_user": base})
    return [{"role": "system", "content": release.systems[Side.PROMPT]}, {"role": "user", "content": text}]


def image_subjective_messages(
    release: OfficialRelease, description: str, prompt: str, image: Image, exemplars: Sequence[MemoryItem]
) -> list[Message]:
    base = release.users[Side.IMAGE].format(task_description=description, prompt_text=prompt)
    text = release.framing.image_message.render({"exemplar_block": exemplar_block(release, Side.IMAGE, exemplars), "base_user_text": base})
    content = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": png_data_url(image)}}]
    return [{"role": "system", "content": release.systems[Side.IMAGE]}, {"role": "user", "content": content}]


def check_messages(release: OfficialRelease, side: Side, prompt: str, items: Sequence[str], image: Image | None = None) -> list[Message]:
    content: list[dict[str, Any]] = [{"type": "text", "text": release.checks[side].format(prompt=prompt, checklist=numbered(items))}]
    if side == Side.IMAGE:
        assert image is not None  # the judge skips an image skill without an image
        content.append({"type": "image_url", "image_url": {"url": jpeg_data_url(image, release.compression)}})
    return [{"role": "user", "content": content}]


def png_data_url(image: Image) -> str:
    """The image at full size, losslessly: what the release sends when it sends a PNG file's own bytes."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def jpeg_bytes(image: Image, compression: dict[str, int]) -> bytes:
    """JPEG at the quality a bisection over [min_quality, max_quality] stops at: the first within tolerance_kb of
    target_kb, else the last one tried (the release's load_and_compress_image)."""
    rgb = image.convert("RGB") if image.mode in ("RGBA", "LA", "P") else image
    target, tolerance = compression["target_kb"] * 1024, compression["tolerance_kb"] * 1024
    low, high, best = compression["min_quality"], compression["max_quality"], b""
    while low <= high:
        quality = (low + high) // 2
        best = _jpeg(rgb, quality)
        if abs(len(best) - target) <= tolerance:
            break
        low, high = (low, quality - 1) if len(best) > target else (quality + 1, high)
    return best or _jpeg(rgb, 85)


def _jpeg(image: Image, quality: int) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality, optimize=True)
    return buffer.getvalue()


def jpeg_data_url(image: Image, compression: dict[str, int]) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(jpeg_bytes(image, compression)).decode("ascii")
