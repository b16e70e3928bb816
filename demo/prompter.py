"""A scripted OpenAI-compatible prompter for the demo: no model, a fixed rule, served on 127.0.0.1.

It lets a newcomer watch an endpoint run travel end to end (registration, calls, feedback
rounds, the call log) without any model. The rule: round 1 joins the request's title, brief
and requirements into one prompt; each later round adds one refinement phrase. What it
writes says nothing about any real prompter; the demo labels it so.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REFINEMENTS = (
    "sharp focus on the main subject",
    "balanced composition with clear separation of foreground and background",
    "consistent lighting and a restrained colour palette",
    "fine surface detail and clean edges",
)


def _user_text(messages: list[dict[str, Any]]) -> str:
    first = next((m for m in messages if m.get("role") == "user"), {})
    content = first.get("content", "")
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if part.get("type") == "text")
    return str(content)


def compose(messages: list[dict[str, Any]]) -> str:
    """The prompt the rule writes for a conversation."""
    fields: dict[str, str] = {}
    requirements = []
    for line in _user_text(messages).splitlines():
        if line.startswith("- "):
            requirements.append(line[2:].split(": ", 1)[-1])
        for name in ("Title", "Request"):
            if line.startswith(f"{name}: "):
                fields[name] = line[len(name) + 2 :].strip()
    parts = [fields.get("Title", "an image"), fields.get("Request", "").split(". ")[0].rstrip(".")]
    parts += requirements
    rounds_done = sum(1 for m in messages if m.get("role") == "assistant")
    # Refinements go first: a text encoder reads 77 tokens, so words added after a long prompt would change nothing.
    parts = list(REFINEMENTS[: min(rounds_done, len(REFINEMENTS))]) + parts
    return ", ".join(p for p in parts if p)


def completion(body: dict[str, Any], number: int) -> dict[str, Any]:
    """The chat.completion reply to one request body."""
    prompt = compose(body.get("messages", []))
    return {
        "id": f"demo-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "demo"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": prompt}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": len(json.dumps(body)) // 4, "completion_tokens": len(prompt) // 4, "total_tokens": 0},
    }


def site_base_url() -> str:
    """Where the demo site itself serves the rule (demo/views.py): what the demo registers, so that its endpoint still
    answers once the demo command has ended and `make demo` has started runserver. settings.ATELIER_DEMO_PROMPTER is
    the site's host:port, the one address the allow-list lets through in the demo."""
    from django.conf import settings

    return f"http://{settings.ATELIER_DEMO_PROMPTER}/demo/prompter/v1"


class DemoPrompterServer:
    """POST /v1/chat/completions on 127.0.0.1:<free port>; start() and stop() (or use as a context manager). `answer`
    makes the reply body of a request (an "error" body is sent with HTTP 400): the prompter's rule by default, the
    demo judge's (demo.judge.completion) for the judge."""

    def __init__(self, answer: Callable[[dict[str, Any], int], dict[str, Any]] = completion) -> None:
        self.calls, self.answer = 0, answer
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> DemoPrompterServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                server.calls += 1
                reply = server.answer(body, server.calls)
                data = json.dumps(reply).encode()
                self.send_response(400 if "error" in reply else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep the demo's output clean
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> DemoPrompterServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
