"""What every e-mail the site sends must hold: links a mail reader can open, i.e. absolute http(s) URLs, in the body
(plain and HTML parts) and in List-Unsubscribe. tests/conftest.py checks each test's outbox with it."""

from __future__ import annotations

import re

# A path standing alone, not inside a URL (after a letter, ':', '/', '.') or a closing tag ('<'): "/submissions/14/".
BARE_PATH = re.compile(r"(?<![\w:/.<])/[\w\-./%?=&~:+@]+")
HREF = re.compile(r"""\b(?:href|src)\s*=\s*["']?([^"'\s>]*)""", re.IGNORECASE)
ABSOLUTE = re.compile(r"https?://[^/\s\"'<>]+")


def link_problems(message) -> list[str]:
    """Each link in `message` (a django.core.mail message) that is not an absolute http(s) URL, described."""
    parts = [message.body] + [content for content, kind in getattr(message, "alternatives", ()) if kind == "text/html"]
    problems = [f"{message.subject!r}: bare path {path!r}" for part in parts for path in BARE_PATH.findall(part)]
    problems += [f"{message.subject!r}: href {h!r}" for part in parts for h in HREF.findall(part) if not ABSOLUTE.match(h)]
    unsubscribe = message.extra_headers.get("List-Unsubscribe")
    if unsubscribe is not None and not re.fullmatch(rf"<{ABSOLUTE.pattern}/\S*>", unsubscribe):
        problems.append(f"{message.subject!r}: List-Unsubscribe {unsubscribe!r}")
    return problems
