"""Calling a team's OpenAI-compatible prompter: one chat completion in, one prompt (or a recorded reason) out.

The official `openai` client does the HTTP work: it retries 429 and 5xx answers with
backoff and honours Retry-After, up to `max_retries` times. It talks through the SSRF
guard's httpx client (ssrf.guarded_client), which checks every address again when it
connects and never follows redirects. Every outcome is a CallOutcome; nothing raises
for an endpoint's misbehaviour, so the caller can record why a call failed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from evaluator.failures import REFUSED as REFUSED_REASON
from evaluator.failures import UNREADABLE, class_name, exception_reason, remote_text
from evaluator.http_count import RequestCounter

from .ssrf import UnsafeURL, guarded_client
from .text import blank, normalise_prompt

OK, FAILED, REFUSED = "ok", "failed", "refused"
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(.*?)\n?```$", re.S)
_QUOTES = ('"', "'", "“", "”")
REPLY_KEPT = 20_000  # characters of a reply the call log keeps
REDACTED = "[API key]"
REDACT_MIN = 8  # shorter keys are not taken out of replies (they would be ordinary words, e.g. "none")


@dataclass(frozen=True)
class EndpointSpec:
    """A prompter endpoint as the client needs it (the key in clear, in memory only)."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)  # no repr: a log line or traceback that prints the spec shows no key
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    timeout: float = 60.0
    max_retries: int = 2
    allowed_hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallOutcome:
    status: str  # OK, FAILED or REFUSED
    text: str  # the prompt, cleaned ('' unless OK)
    reply: str  # what the endpoint answered (content, refusal or error body), cut to REPLY_KEPT
    error: str  # why it is not OK
    http_status: int | None
    requests: int  # HTTP requests sent, retries included
    latency: float  # seconds, retries and backoff included
    prompt_tokens: int = 0
    completion_tokens: int = 0


def clean_prompt(content: str) -> str:
    """The prompt inside a reply: normalised, one code fence and one pair of enclosing quotes taken off."""
    text = normalise_prompt(content)
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1].strip()
    return text


def redact(text: str, secret: str) -> str:
    """`text` with every occurrence of `secret` replaced by REDACTED (for an endpoint that echoes its key, e.g. in a 401 body)."""
    return text.replace(secret, REDACTED) if len(secret) >= REDACT_MIN and secret in text else text


def _cause(exc: BaseException) -> BaseException | None:
    seen = exc
    while seen is not None:
        if isinstance(seen, UnsafeURL):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class PrompterClient:
    def __init__(self, spec: EndpointSpec, resolver: Callable[[str, int], list[str]] | None = None) -> None:
        self.spec = spec
        self._requests = RequestCounter()
        http = guarded_client(allowed=spec.allowed_hosts, timeout=spec.timeout, resolver=resolver)
        http.event_hooks = {"request": [self._requests], "response": []}
        import openai  # here, not at the top: every web process imports this module, few call an endpoint (tests/test_startup.py)

        self._client = openai.OpenAI(
            base_url=spec.base_url, api_key=spec.api_key or "none", timeout=spec.timeout, max_retries=spec.max_retries, http_client=http
        )

    def parameters(self, temperature: float | None = None, seed: int | None = None) -> dict[str, Any]:
        """The generation parameters a call sends (the endpoint's, with this sample's temperature and seed)."""
        chosen = {
            "temperature": self.spec.temperature if temperature is None else temperature,
            "top_p": self.spec.top_p,
            "max_tokens": self.spec.max_tokens,
            "seed": self.spec.seed if seed is None else seed,
        }
        return {name: value for name, value in chosen.items() if value is not None}

    def call(
        self, messages: list[dict[str, Any]], *, max_chars: int, temperature: float | None = None, seed: int | None = None
    ) -> CallOutcome:
        import openai  # imported by __init__ already: its exception classes

        self._requests.reset()
        started = time.perf_counter()

        def hide(value: object) -> str:
            """What the endpoint said, without its key: replies, errors and prompts are stored, logged and shown."""
            return redact(str(value), self.spec.api_key)

        def outcome(
            status: str, text: str = "", reply: str = "", error: str = "", http_status: int | None = None, usage: Any = None
        ) -> CallOutcome:
            return CallOutcome(
                status=status,
                text=hide(text),
                reply=hide(reply)[:REPLY_KEPT],
                error=hide(error),
                http_status=http_status,
                requests=self._requests.sent,
                latency=time.perf_counter() - started,
                prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            )

        try:
            completion = self._client.chat.completions.create(
                model=self.spec.model, messages=messages, **self.parameters(temperature, seed)
            )  # type: ignore[arg-type]
        except openai.APITimeoutError:
            return outcome(FAILED, error=f"timed out after {self.spec.timeout:g} s")
        except openai.APIStatusError as exc:  # the body goes to the call's reply (the team's own endpoint said it)
            return outcome(FAILED, reply=exc.response.text, error=exception_reason(exc, self._requests.sent), http_status=exc.status_code)
        except openai.APIConnectionError as exc:
            unsafe = _cause(exc)
            return outcome(
                FAILED, error=f"refused by the address guard: {unsafe}" if unsafe else exception_reason(exc, self._requests.sent)
            )
        except UnsafeURL as exc:
            return outcome(FAILED, error=f"refused by the address guard: {exc}")
        except Exception as exc:  # noqa: BLE001 - a malformed answer is the endpoint's fault: recorded on the call
            return outcome(FAILED, reply=remote_text(exc), error=f"{UNREADABLE} ({class_name(exc)})", http_status=200)
        return self._read(completion, max_chars, outcome, hide)

    @staticmethod
    def _read(completion: Any, max_chars: int, outcome: Callable[..., CallOutcome], hide: Callable[[object], str]) -> CallOutcome:
        choices = getattr(completion, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            return outcome(FAILED, reply=str(completion), error="not a chat completion (no choices or no message)", http_status=200)
        message, usage = choices[0].message, getattr(completion, "usage", None)
        refusal = getattr(message, "refusal", None) or (
            "finish_reason content_filter" if choices[0].finish_reason == "content_filter" else ""
        )
        if refusal:
            return outcome(REFUSED, reply=str(refusal), error=REFUSED_REASON, http_status=200, usage=usage)
        content = message.content
        if not isinstance(content, str):
            return outcome(
                FAILED, reply=str(content), error="the reply has no text (content is empty or not a string)", http_status=200, usage=usage
            )
        content = hide(content)  # before the length check: what is checked is what is stored
        text = clean_prompt(content)
        if blank(text):  # nothing but whitespace and invisible characters
            return outcome(FAILED, reply=content, error="empty reply", http_status=200, usage=usage)
        if len(text) > max_chars:
            return outcome(
                FAILED,
                reply=content,
                error=f"the prompt is {len(text):,} characters; prompts are limited to {max_chars:,}",
                http_status=200,
                usage=usage,
            )
        return outcome(OK, text=text, reply=content, http_status=200, usage=usage)


def check_endpoint_url(url: str, allowed: Collection[str] = ()) -> None:
    """Raise UnsafeURL (with the rule named) for a URL the platform must not call."""
    from .ssrf import check_url

    check_url(url, allowed=allowed)
