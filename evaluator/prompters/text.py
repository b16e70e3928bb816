"""What a prompt is once taken in, wherever it comes from (an upload, an endpoint's reply): one module with no
heavy imports, so the upload parser can use it at start-up."""

from __future__ import annotations

import unicodedata


def normalise_prompt(text: str) -> str:
    """A prompt as it is stored and rendered: Unicode NFC (one spelling of each accented letter), outer whitespace
    taken off. Every prompt the platform takes in (uploads, endpoint replies) goes through it."""
    return unicodedata.normalize("NFC", text).strip()


def blank(text: str) -> bool:
    """True when nothing is left of `text` once whitespace and invisible format characters (zero-width space and
    joiners, word joiner, byte-order mark, bidirectional marks: Unicode category Cf) are taken out."""
    return all(c.isspace() or unicodedata.category(c) == "Cf" for c in text)
