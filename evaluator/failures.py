"""What teams and the public are told about a failure: a closed vocabulary, never a remote's words.

A judge's or a prompter's endpoint can answer anything, including what we sent it (a test-split
task's hidden checklist), JSON-encoded twice, cut mid-item, wrapped in HTML. Redacting that text
has leaked three times, so the text a team, the public or a download sees of a failure is built
only from: our own phrases, an HTTP status code, the exception's class name (a Python identifier
from code we installed) and counts. What the remote actually said goes, redacted, to a staff-only
field (`remote_text(...)`), never to a page a team or the public can open.
"""

from __future__ import annotations

import json
import re
import sys

# Our phrases, by failure kind. Tests check every public reason is assembled from these.
TIMED_OUT = "timed out"
NO_CONNECTION = "could not connect"
HTTP_ERROR = "HTTP {status}"
UNREADABLE = "unreadable response"
REFUSED = "the model refused"
INVALID_REPLY = "invalid reply after {attempts} attempt(s)"
NOT_A_COMPLETION = "not a chat completion"
LOCAL_ERROR = "error"

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
SECRET_MIN = 8  # shorter keys are not taken out of text (they would be ordinary words, e.g. "none")


def class_name(exc: BaseException) -> str:
    """The exception's class name: always a Python identifier (checked, so a forged __name__ cannot smuggle text)."""
    name = type(exc).__name__
    return name if _IDENTIFIER.match(name) else "Exception"


def exception_reason(exc: BaseException, requests: int = 0) -> str:
    """A public reason for an exception raised while calling a remote, e.g. 'HTTP 429 (RateLimitError) after 3 requests'."""
    # The openai client is not imported here (half a second the web process never needs): an exception of its classes
    # can only exist once something imported it, so the module is looked up where it already is.
    openai = sys.modules.get("openai")
    if openai is not None and isinstance(exc, openai.APITimeoutError):
        what = TIMED_OUT
    elif openai is not None and isinstance(exc, openai.APIConnectionError):
        what = NO_CONNECTION
    elif openai is not None and isinstance(exc, openai.APIStatusError):
        what = HTTP_ERROR.format(status=int(exc.status_code))
    elif isinstance(exc, json.JSONDecodeError):
        what = UNREADABLE
    else:
        what = LOCAL_ERROR
    return f"{what} ({class_name(exc)}){after(requests)}"


def after(requests: int) -> str:
    return f" after {requests} requests" if requests > 1 else ""


def remote_text(exc: BaseException) -> str:
    """Everything an exception carries (its message and the body it read): staff only, redact first."""
    body = getattr(exc, "doc", None) or getattr(getattr(exc, "response", None), "text", None)  # JSONDecodeError keeps the document
    text = f"{class_name(exc)}: {exc}"
    return scrub(f"{text}\n{body}" if isinstance(body, str) and body and body not in text else text)


def scrub(text: str, secret: str = "") -> str:
    """`text` without a URL's credentials (`user:password@`) and without `secret` (an API key an endpoint echoed)."""
    text = _USERINFO.sub("[credentials]@", text)
    return text.replace(secret, "[API key]") if len(secret) >= SECRET_MIN and secret in text else text
