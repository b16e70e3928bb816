"""A real local OpenAI-compatible chat-completions server with scripted answers.

Usable as a pytest plugin (``pytest_plugins = ["tests.openai_server"]``), which
provides the ``openai_server`` fixture: a started server whose default responder
answers like a well-behaved AtelierJudge.

Deterministic pattern of ``judge_responder`` (what end-to-end tests can assert):
  * subjective requests: every requested dimension gets EXPECTED_SUBJECTIVE_SCORE (4),
    so a subjective result's value is 4.0;
  * objective requests: the item at 0-based position i gets 1 when i is even and
    0 when i is odd (see expected_checklist / expected_checklist_value);
  * every 200 reply reports SCRIPTED_PROMPT_TOKENS / SCRIPTED_COMPLETION_TOKENS usage.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from evaluator.judge.messages import DIMENSIONS_HEADER, ITEMS_HEADER

EXPECTED_SUBJECTIVE_SCORE = 4
SCRIPTED_PROMPT_TOKENS = 120
SCRIPTED_COMPLETION_TOKENS = 30


@dataclass
class Reply:
    """One scripted HTTP answer."""

    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (for client timeouts)
    refusal: str | None = None
    finish_reason: str = "stop"
    raw_body: str | bytes | None = None  # sent verbatim instead of a completion/error body
    usage: dict[str, int] | None = None  # overrides the scripted token counts


Responder = Callable[[dict[str, Any]], Reply]


def expected_checklist(items: list[str] | tuple[str, ...]) -> dict[str, int]:
    """What judge_responder answers for these checklist items: 1 at even positions, 0 at odd."""
    return {item: 1 if index % 2 == 0 else 0 for index, item in enumerate(items)}


def expected_checklist_value(items: list[str] | tuple[str, ...]) -> float:
    """The objective JudgeResult.value judge_responder yields: ceil(n/2) / n."""
    answers = expected_checklist(items)
    return sum(answers.values()) / len(answers)


def request_text(request_json: dict[str, Any]) -> str:
    """All text of the user messages of a chat request (string or content-part form)."""
    texts = []
    for message in request_json.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [part.get("text", "") for part in content if part.get("type") == "text"]
    return "\n".join(texts)


def keys_after(header: str, text: str) -> list[str] | None:
    """The JSON array on the line following `header`, or None when the header is absent."""
    lines = text.splitlines()
    for line, following in zip(lines, lines[1:]):
        if line.strip() == header:
            return list(json.loads(following))
    return None


def judge_responder(request_json: dict[str, Any]) -> Reply:
    """Answers like a well-behaved judge (see the module docstring for the pattern)."""
    text = request_text(request_json)
    dimensions = keys_after(DIMENSIONS_HEADER, text)
    if dimensions is not None:
        answer: dict[str, Any] = {
            dim: {"score": EXPECTED_SUBJECTIVE_SCORE, "rationale": f"scripted rationale for {dim}"}
            for dim in dimensions
        }
        return Reply(content=json.dumps(answer))
    items = keys_after(ITEMS_HEADER, text)
    if items is not None:
        return Reply(content=json.dumps(expected_checklist(items)))
    return Reply(status=400, content="scripted judge: no dimensions or checklist items in the request")


def completion_body(reply: Reply, model: str, serial: int) -> dict[str, Any]:
    usage = reply.usage or {"prompt_tokens": SCRIPTED_PROMPT_TOKENS, "completion_tokens": SCRIPTED_COMPLETION_TOKENS}
    return {
        "id": f"chatcmpl-scripted-{serial}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content, "refusal": reply.refusal},
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]},
    }


def error_body(reply: Reply) -> dict[str, Any]:
    return {"error": {"message": reply.content or f"scripted HTTP {reply.status}", "type": "scripted", "code": None}}


class ScriptedOpenAIServer:
    """POST /v1/chat/completions on 127.0.0.1:<free port>, answering from a script."""

    def __init__(self, default: Responder = judge_responder) -> None:
        self.default: Responder = default
        self.requests: list[dict[str, Any]] = []
        self.handler_errors: list[str] = []  # e.g. broken pipes after a client timeout
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._serial = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def next_reply(self, request_json: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(request_json)
            scripted = self._script.popleft() if self._script else None
        return scripted if scripted is not None else self.default(request_json)

    def start(self) -> ScriptedOpenAIServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True  # a delayed answer must not block stop()
        # A short poll interval keeps stop() (which waits for the next poll) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="scripted-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def serial(self) -> int:
        return next(self._serial)


def _make_handler(server: ScriptedOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "scripted"}}, {})
                return
            length = int(self.headers.get("Content-Length", "0"))
            request_json = json.loads(self.rfile.read(length) or b"{}")
            reply = server.next_reply(request_json)
            if reply.delay:
                time.sleep(reply.delay)
            if reply.raw_body is not None:
                body: Any = reply.raw_body
            elif reply.status == 200:
                body = completion_body(reply, str(request_json.get("model", "")), server.serial())
            else:
                body = error_body(reply)
            self._send(reply.status, body, reply.headers)

        def _send(self, status: int, body: Any, headers: dict[str, str]) -> None:
            data = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError) as exc:  # the client gave up (timeout)
                server.handler_errors.append(f"{type(exc).__name__}: {exc}")

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
            pass

    return Handler


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """A started ScriptedOpenAIServer with judge_responder as its default."""
    with ScriptedOpenAIServer(default=judge_responder) as server:
        yield server
