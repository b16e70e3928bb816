"""The one redaction step for hidden checklist text.

A test-split task's checklist items are secret, but the judge reads them and a prompter
writes the text the judge reads: a reply can echo an item, a repair message can list the
expected keys, an exception can quote a request. Every text written about a hidden task
(failure reasons, rationales, raw replies, details, job errors) passes through `Redactor`
before it is stored, so nothing downstream (pages, downloads, API, admin) can show it.

An item is replaced by its position, `item 3` (prompt checklist) or `image item 3`, in the
forms a text may carry it: as written, JSON-escaped and Python-repr-escaped, ignoring case.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Sequence


def _forms(item: str) -> set[str]:
    return {item, json.dumps(item)[1:-1], json.dumps(item, ensure_ascii=False)[1:-1], repr(item)[1:-1]} - {""}


@dataclass(frozen=True)
class Redactor:
    """Replaces hidden items in text; `Redactor.none()` passes text through (public tasks)."""

    pattern: re.Pattern[str] | None
    labels: dict[str, str]

    @classmethod
    def none(cls) -> Redactor:
        return cls(None, {})

    @classmethod
    def for_items(cls, prompt_items: Sequence[str], image_items: Sequence[str] = ()) -> Redactor:
        """Built once per checklist and process (every judgement write of a hidden task asks for one)."""
        return _for_items(tuple(prompt_items), tuple(image_items))

    @classmethod
    def _build(cls, prompt_items: tuple[str, ...], image_items: tuple[str, ...]) -> Redactor:
        labels: dict[str, str] = {}
        for prefix, items in (("image item", image_items), ("item", prompt_items)):  # prompt labels win a tie
            for number, item in enumerate(items, start=1):
                for form in _forms(item.strip()):
                    labels[form.casefold()] = f"{prefix} {number}"
        if not labels:
            return cls.none()
        alternatives = sorted(labels, key=len, reverse=True)  # the longest first: an item inside another stays whole
        return cls(re.compile("|".join(re.escape(a) for a in alternatives), re.IGNORECASE), labels)

    def text(self, value: str) -> str:
        if self.pattern is None or not value:
            return value
        return self.pattern.sub(lambda m: self.labels.get(m.group(0).casefold(), "item ?"), value)

    def value(self, value: Any) -> Any:
        """Strings anywhere inside dicts and lists (keys included) are redacted; other values pass."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value


@functools.lru_cache(maxsize=256)
def _for_items(prompt_items: tuple[str, ...], image_items: tuple[str, ...]) -> Redactor:
    return Redactor._build(prompt_items, image_items)
