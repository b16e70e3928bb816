"""Hidden checklist text out of what the staff-only fields keep.

A test-split task's checklist items are secret, but the judge reads them and a remote's reply
or error can carry them back in any form: JSON-encoded once or twice, HTML-escaped, cut
mid-item, with its quotes and non-ASCII escaped. What teams and the public see of a failure is
never remote text (evaluator.failures), so this step guards only what the staff keep: raw
replies, the remote's error text, rationales and details of hidden tasks.

The text is first brought to a normal form (`normalise`: HTML entities unescaped until none are
left, `\\uXXXX` escapes decoded, backslashes dropped, NFC, whitespace collapsed), the items too,
and then every whole item and every stretch of text that any 40-character piece of an item
covers is replaced by the item's position, `item 3` (prompt checklist) or `image item 3`,
ignoring case. The stored text is the normal form: the redaction is decided on it, before any
cut.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Sequence

FRAGMENT = 40  # characters of an item that give it away: the scanner in the leak test looks for the same
_ESCAPED_CHAR = re.compile(r"\\+u([0-9a-fA-F]{4})")
_ESCAPED_SPACE = re.compile(r"\\+[nrt]")
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """The one form text and items are compared in (case is ignored by the pattern, not changed)."""
    previous = None
    while previous != text:
        previous, text = text, html.unescape(text)
    text = _ESCAPED_CHAR.sub(lambda m: chr(int(m.group(1), 16)), text)
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")  # escaped surrogate pairs join up
    text = _ESCAPED_SPACE.sub(" ", text).replace("\\", "")
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


@dataclass(frozen=True)
class Redactor:
    """Replaces hidden items in text; `Redactor.none()` passes text through (public tasks)."""

    pattern: re.Pattern[str] | None
    labels: dict[str, str]  # casefolded whole item or fragment -> its label

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
                for piece in _pieces(normalise(item)):
                    labels[piece.casefold()] = f"{prefix} {number}"
        if not labels:
            return cls.none()
        alternatives = sorted(labels, key=len, reverse=True)  # the longest first: a whole item wins over its pieces
        # A lookahead finds overlapping matches, so a cut item longer than one piece is covered to its end.
        return cls(re.compile("(?=(" + "|".join(re.escape(a) for a in alternatives) + "))", re.IGNORECASE), labels)

    def text(self, value: str) -> str:
        if self.pattern is None or not value:
            return value
        value = normalise(value)
        spans: list[list[Any]] = []  # [start, end, label], merged where they overlap or touch
        for match in self.pattern.finditer(value):
            start, end = match.start(1), match.end(1)
            if spans and start <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end, self.labels.get(match.group(1).casefold(), "item ?")])
        out, last = [], 0
        for start, end, label in spans:
            out += [value[last:start], label]
            last = end
        return "".join(out) + value[last:]

    def value(self, value: Any) -> Any:
        """Strings anywhere inside dicts and lists (keys included) are redacted; other values pass."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value


def _pieces(item: str) -> set[str]:
    """The whole item and, when it is longer, each of its FRAGMENT-character pieces."""
    if not item:
        return set()
    return {item} | {item[i : i + FRAGMENT] for i in range(len(item) - FRAGMENT + 1)}


@functools.lru_cache(maxsize=256)
def _for_items(prompt_items: tuple[str, ...], image_items: tuple[str, ...]) -> Redactor:
    return Redactor._build(prompt_items, image_items)
