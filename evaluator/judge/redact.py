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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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

    pieces: dict[str, str]  # casefolded FRAGMENT-character piece of a long item -> its label
    short: re.Pattern[str] | None  # whole items shorter than a piece
    labels: dict[str, str]  # casefolded short item -> its label

    @classmethod
    def none(cls) -> Redactor:
        return cls({}, None, {})

    @classmethod
    def for_items(cls, prompt_items: Sequence[str], image_items: Sequence[str] = ()) -> Redactor:
        """Built once per checklist and process (every judgement write of a hidden task asks for one)."""
        return _for_items(tuple(prompt_items), tuple(image_items))

    @classmethod
    def _build(cls, prompt_items: tuple[str, ...], image_items: tuple[str, ...]) -> Redactor:
        pieces: dict[str, str] = {}
        labels: dict[str, str] = {}
        for prefix, items in (("image item", image_items), ("item", prompt_items)):  # prompt labels win a tie
            for number, item in enumerate(items, start=1):
                form = normalise(item).casefold()
                if len(form) >= FRAGMENT:  # a long item is the union of its pieces
                    pieces.update(dict.fromkeys(_pieces(form), f"{prefix} {number}"))
                elif form:
                    labels[form] = f"{prefix} {number}"
        alternatives = sorted(labels, key=len, reverse=True)  # the longest first: an item inside another stays whole
        short = re.compile("|".join(re.escape(a) for a in alternatives), re.IGNORECASE) if alternatives else None
        return cls(pieces, short, labels)

    def text(self, value: str) -> str:
        if not (self.pieces or self.short) or not value:
            return value
        value = normalise(value)
        folded = value.casefold()
        if len(folded) != len(value):  # casefolding changed the length (ß -> ss): compare letter by letter
            folded = "".join(c if len(c.casefold()) != 1 else c.casefold() for c in value)
        spans = self._spans(folded)
        out, last = [], 0
        for start, end, label in spans:
            out += [value[last:start], label]
            last = end
        return "".join(out) + value[last:]

    def _spans(self, folded: str) -> list[list[Any]]:
        """[start, end, label] of every stretch covered by an item or its pieces, merged where they overlap or touch."""
        found = [(m.start(), m.end(), self.labels.get(m.group(0), "item ?")) for m in self.short.finditer(folded)] if self.short else []
        if self.pieces:
            found += [
                (i, i + FRAGMENT, self.pieces[folded[i : i + FRAGMENT]])
                for i in range(len(folded) - FRAGMENT + 1)
                if folded[i : i + FRAGMENT] in self.pieces
            ]
        spans: list[list[Any]] = []
        for start, end, label in sorted(found):
            if spans and start <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end, label])
        return spans

    def value(self, value: Any) -> Any:
        """Strings anywhere inside dicts and lists (keys included) are redacted; other values pass."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value


def _pieces(form: str) -> list[str]:
    """Each FRAGMENT-character piece of a long item's form."""
    return [form[i : i + FRAGMENT] for i in range(len(form) - FRAGMENT + 1)]


@functools.lru_cache(maxsize=256)
def _for_items(prompt_items: tuple[str, ...], image_items: tuple[str, ...]) -> Redactor:
    return Redactor._build(prompt_items, image_items)
