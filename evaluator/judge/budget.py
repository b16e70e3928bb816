"""One rate budget for the judge's API key, shared by every judge worker: requests and tokens per minute.

A hosted judge limits requests and tokens per minute per API key, however many processes send them. The budget is
kept by `limits` in Redis when the deployment has one (REDIS_URL), so N workers on any number of hosts together stay
within it; without Redis (the embedded default, a single process) in this process's memory. Each window is a second
longer than a minute: a request let through as an old one leaves our window then reaches the provider after the old
one left its window, though the two crossed the network in different times.

Requests are counted in a moving window (`limits`' moving-window strategy: the last 61 s exactly, one Redis list entry
per request, so at most rpm entries). Tokens are counted by `limits`' sliding-window counter: two counters per budget
(this window's tokens and the previous window's) whatever the tpm, where a moving window would need an entry per
token. It approximates the last 61 s by counting the previous window's tokens in proportion to the share of it still
inside them, as if they had been spread evenly; tokens bunched at the end of a window can therefore let through up to
twice the tpm within some 61 s in the worst case, while a steady stream of requests (judge workers kept busy) is
counted closely. A provider that refuses the excess answers 429, which pauses everyone (below).

It acts at the HTTP level: `hooks()` are httpx event hooks on the judge's client, so every request the endpoint
receives takes from the budget first, the openai client's own retries and the judge's repair turns included, and
every 429 is seen. A request's tokens are counted before it is sent (`estimate_tokens`, what a provider reserves;
the provider reports what a request cost only once it is answered):

    its messages' tokens, by the real tokenizer (evaluator/judge/tokens.py: the model's table, o200k_base by default,
      3 per message plus the role, 3 for the reply's start: OpenAI's count of a chat request)
    + image_tokens per image                                           (ATELIER_JUDGE_IMAGE_TOKENS)
    + the request's max_completion_tokens or max_tokens, else reply_tokens   (ATELIER_JUDGE_REPLY_TOKENS)

Only the images and the reply are estimates: the provider counts an image by its own rule, and the reply is not written
yet. The tokenizer's tables load with the first request (about 1.6 s), never at import.

A 429 pauses the budget for everyone: its Retry-After (OpenAI's retry-after-ms first, then seconds or an HTTP date),
else PAUSE_WITHOUT_RETRY_AFTER, at most MAX_PAUSE, becomes a key whose time to live every sender waits out before
taking from the budget (a time to live, not a timestamp, so hosts' clocks need not agree for it; the windows
themselves use each host's clock, as `limits` does).
"""

from __future__ import annotations

import email.utils
import functools
import hashlib
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import redis
from limits import RateLimitItemPerSecond
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter, SlidingWindowCounterRateLimiter

from . import tokens
from .config import JudgeConfig

log = logging.getLogger(__name__)

WINDOW = 61  # seconds: per minute, plus a second for requests in transit (the module docstring)
MAX_PAUSE = 120.0  # seconds; the openai client honours a Retry-After up to the same
PAUSE_WITHOUT_RETRY_AFTER = 1.0
POLL_MIN, POLL_MAX = 0.01, 1.0  # seconds between two looks at a full window
REDIS_TIMEOUT = 5.0  # seconds: a Redis that does not answer fails the request (the judgement records it), never hangs it
NAMESPACE = "atelier-judge-budget"


class _Request(Protocol):
    @property
    def content(self) -> bytes: ...


class _Response(Protocol):
    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...


def estimate_tokens(body: bytes, *, image_tokens: int, reply_tokens: int) -> int:
    """The tokens a chat-completions request body will cost (see the module docstring); a body that is not a JSON
    object is counted as text."""
    try:
        payload = json.loads(body or b"{}")
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        return tokens.count(body.decode("utf-8", "replace")) + reply_tokens
    messages = payload.get("messages")
    name = tokens.encoding_name(str(payload.get("model") or ""))
    prompt = tokens.chat_tokens(messages if isinstance(messages, list) else [], image_tokens=image_tokens, name=name)
    reply = payload.get("max_completion_tokens") or payload.get("max_tokens")
    reply = reply if isinstance(reply, int) and reply > 0 else reply_tokens
    return prompt + reply


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a 429 asks us to wait (retry-after-ms, then Retry-After in seconds or as an HTTP date), None if unsaid."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            parsed = email.utils.parsedate_tz(value) if name == "retry-after" else None
            seconds = email.utils.mktime_tz(parsed) - time.time() if parsed else math.nan
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


class _LocalPause:
    """The pause of a budget kept in this process."""

    def __init__(self) -> None:
        self._until, self._lock = 0.0, threading.Lock()

    def extend(self, seconds: float) -> None:
        with self._lock:
            self._until = max(self._until, time.monotonic() + seconds)

    def remaining(self) -> float:
        return max(0.0, self._until - time.monotonic())


class _RedisPause:
    """The pause of a budget shared through Redis: a key whose time to live is the pause left."""

    _EXTEND = "if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then redis.call('set', KEYS[1], '1', 'px', ARGV[1]) end"

    def __init__(self, url: str, key: str) -> None:
        self._redis, self._key = redis.Redis.from_url(url, socket_connect_timeout=REDIS_TIMEOUT, socket_timeout=REDIS_TIMEOUT), key
        self._extend = self._redis.register_script(self._EXTEND)

    def extend(self, seconds: float) -> None:
        self._extend(keys=[self._key], args=[max(1, round(seconds * 1000))])

    def remaining(self) -> float:
        return max(0, int(self._redis.pttl(self._key))) / 1000  # -2: no key, -1: no expiry (never written so)


def _limits_uri(url: str) -> str:
    """`limits` storage URI of a REDIS_URL (its unix sockets are redis+unix://), memory:// without one."""
    if not url:
        return "memory://"
    return "redis+unix://" + url.removeprefix("unix://") if url.startswith("unix://") else url


def budget_identity(base_url: str, api_key: str) -> str:
    """What a provider's limits belong to: the endpoint and the key (hashed: the key never reaches Redis)."""
    return hashlib.sha256(f"{base_url}\n{api_key}".encode()).hexdigest()[:16]


class JudgeBudget:
    """Requests (rpm) and tokens (tpm) per `window` seconds for one endpoint and key, and its shared pause.
    storage_url "" keeps them in this process."""

    def __init__(
        self,
        *,
        storage_url: str,
        identity: str,
        rpm: int | None,
        tpm: int | None,
        image_tokens: int,
        reply_tokens: int,
        window: int = WINDOW,
    ) -> None:
        if rpm is None and tpm is None:
            raise ValueError("a judge budget needs requests or tokens per minute")
        self.identity, self.window = identity, window
        self.image_tokens, self.reply_tokens = image_tokens, reply_tokens
        options = {"socket_connect_timeout": REDIS_TIMEOUT, "socket_timeout": REDIS_TIMEOUT} if storage_url else {}
        self._storage = storage = storage_from_string(_limits_uri(storage_url), key_prefix=NAMESPACE, **options)
        self._moving, self._sliding = MovingWindowRateLimiter(storage), SlidingWindowCounterRateLimiter(storage)  # requests, tokens
        self._requests = RateLimitItemPerSecond(rpm, window, namespace="requests") if rpm else None
        self._tokens = RateLimitItemPerSecond(tpm, window, namespace="tokens") if tpm else None
        key = f"{NAMESPACE}:{identity}:paused"
        self._pause = _RedisPause(storage_url, key) if storage_url else _LocalPause()

    def hooks(self) -> dict[str, list[Callable[[Any], None]]]:
        """httpx event hooks: take from the budget before each request, pause everyone on a 429."""
        return {"request": [self.before_send], "response": [self.after_response]}

    def before_send(self, request: _Request) -> None:
        try:
            self.take(estimate_tokens(request.content, image_tokens=self.image_tokens, reply_tokens=self.reply_tokens))
        except redis.RedisError as exc:  # raised through the client: the judge job fails and records it on the unit
            log.error("the judge's shared budget could not be reached, so the request is not sent: %s: %s", type(exc).__name__, exc)
            raise

    def after_response(self, response: _Response) -> None:
        if response.status_code == 429:
            asked = retry_after(response.headers)
            seconds = min(MAX_PAUSE, PAUSE_WITHOUT_RETRY_AFTER if asked is None else asked)
            log.warning("the judge endpoint answered 429: every judge worker pauses %.1f s", seconds)
            self._pause.extend(seconds)

    def take(self, tokens: int) -> float:
        """Wait until the pause is over and the windows have room for one request of `tokens`, take it, and return
        the seconds waited."""
        started = time.monotonic()
        tokens = self._within_budget(tokens)
        while True:
            if (paused := self._pause.remaining()) > 0:
                time.sleep(paused)
                continue
            wait = self._try(tokens)
            if wait == 0:
                waited = time.monotonic() - started
                if waited > 1:
                    log.debug("judge budget: waited %.1f s for a request of %d tokens", waited, tokens)
                return waited
            time.sleep(min(POLL_MAX, max(POLL_MIN, wait)))

    def usage(self) -> dict[str, float]:
        """What the shared windows hold now, for an operator's gauges: requests and tokens taken within the last
        window, the limits, and the pause left (seconds)."""
        out: dict[str, float] = {"paused_seconds": self._pause.remaining()}
        for name, item, limiter in (("requests", self._requests, self._moving), ("tokens", self._tokens, self._sliding)):
            if item is not None:
                _, remaining = limiter.get_window_stats(item, self.identity)
                out[f"{name}_used"], out[f"{name}_limit"] = item.amount - remaining, item.amount
        return out

    def _within_budget(self, tokens: int) -> int:
        tokens = max(1, tokens)
        if self._tokens is not None and tokens > self._tokens.amount:
            log.warning("a judge request of about %d tokens is more than the whole per-minute budget: it takes all of it", tokens)
            return self._tokens.amount
        return tokens

    def _try(self, tokens: int) -> float:
        """0 when the request was taken from both windows, else the seconds until the fuller one may have room.
        Both are tested before either is hit, so a full token window costs no request; a request hit between the
        test and the token hit by another worker is spent unused, which only makes the budget stricter."""
        if self._requests is not None and not self._moving.test(self._requests, self.identity):
            return self._until_a_request()
        if self._tokens is not None and not self._sliding.test(self._tokens, self.identity, cost=tokens):
            return self._until_tokens(tokens)
        if self._requests is not None and not self._moving.hit(self._requests, self.identity):
            return self._until_a_request()
        if self._tokens is not None and not self._sliding.hit(self._tokens, self.identity, cost=tokens):
            return self._until_tokens(tokens)
        return 0.0

    def _until_a_request(self) -> float:
        assert self._requests is not None
        reset, _ = self._moving.get_window_stats(self._requests, self.identity)  # when the oldest request leaves the window
        return max(POLL_MIN, reset - time.time())

    def _until_tokens(self, tokens: int) -> float:
        """Seconds until the sliding-window counter has room for `tokens`, were nobody else to take any: its count is
        previous × (previous's time left / window) + current, and the current window's count becomes the previous one
        when it ends (`limits`' SlidingWindowCounterSupport: times left of the previous key, and of the current one,
        which is written to live two windows)."""
        assert self._tokens is not None
        amount, window = self._tokens.amount, self._tokens.get_expiry()
        previous, previous_left, current, current_left = self._storage.get_sliding_window(self._tokens.key_for(self.identity), window)
        if current + tokens <= amount:  # room once enough of the previous window has slid out
            wait = previous_left - (amount - tokens - current) * window / previous if previous else 0.0
        else:  # room once the current window is the previous one and enough of it has slid out
            wait = current_left - (amount - tokens) * window / current
        return max(POLL_MIN, wait)


@functools.cache
def _shared(
    storage_url: str, identity: str, rpm: int | None, tpm: int | None, image_tokens: int, reply_tokens: int, window: int
) -> JudgeBudget:
    return JudgeBudget(
        storage_url=storage_url, identity=identity, rpm=rpm, tpm=tpm, image_tokens=image_tokens, reply_tokens=reply_tokens, window=window
    )


def shared_budget(config: JudgeConfig) -> JudgeBudget | None:
    """The one budget of this process for the config's endpoint and key (every judge and client of it share it;
    an ensemble's models too, as a provider's per-key limits do), None when neither rpm nor tpm is set."""
    if config.rpm is None and config.tpm is None:
        return None
    identity = budget_identity(config.base_url, config.api_key)
    return _shared(config.budget_url, identity, config.rpm, config.tpm, config.image_tokens, config.reply_tokens, WINDOW)
