"""Counting the HTTP requests an OpenAI-compatible client really sent (an httpx request hook), retries included:
the cost of a call is what the endpoint received, not how many answers we read."""

from __future__ import annotations

import threading


class RequestCounter:
    """Requests sent by the current thread since its last reset()."""

    def __init__(self) -> None:
        self._local = threading.local()

    def __call__(self, request: object) -> None:
        self._local.sent = self.sent + 1

    @property
    def sent(self) -> int:
        return getattr(self._local, "sent", 0)

    def reset(self) -> None:
        self._local.sent = 0
