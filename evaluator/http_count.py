"""Counting the HTTP requests an OpenAI-compatible client really sent (an httpx request hook), retries included, and
the 429s it was answered with (a response hook): the cost of a call is what the endpoint received, not how many
answers we read, and the 429s are how often the provider's limits pushed back."""

from __future__ import annotations

import threading
from typing import NamedTuple


class Spent(NamedTuple):
    sent: int
    throttled: int  # answered 429


class RequestCounter:
    """Requests sent, and 429s received, by the current thread (its totals only grow; take a mark() and ask since())."""

    def __init__(self) -> None:
        self._local = threading.local()

    def __call__(self, request: object) -> None:
        self._local.sent = self.sent + 1

    def response(self, response: object) -> None:
        if getattr(response, "status_code", None) == 429:
            self._local.throttled = getattr(self._local, "throttled", 0) + 1

    @property
    def sent(self) -> int:
        return getattr(self._local, "sent", 0)

    def mark(self) -> Spent:
        return Spent(self.sent, getattr(self._local, "throttled", 0))

    def since(self, mark: Spent) -> Spent:
        now = self.mark()
        return Spent(now.sent - mark.sent, now.throttled - mark.throttled)

    def reset(self) -> None:
        self._local.sent = self._local.throttled = 0
