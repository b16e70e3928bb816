"""Middleware: a backend that rewrites every prompt before rendering, the way commercial generators do.

AtelierEval studies this: a rewriter can lift weak prompts and flatten strong ones. A backend
config's optional `rewriter` names an OpenAI-compatible model and its instruction; the text it
returns is what the backend renders, and the caller stores it beside the image. The config is
the deployer's own, so the call is not put through the SSRF guard that team endpoints get.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from typing import Any

from .config import BackendConfig, BackendError

_clients: dict[str, Rewriter] = {}
_lock = threading.Lock()


class Rewriter:
    def __init__(self, spec: Mapping[str, Any]) -> None:
        import openai

        self.spec = dict(spec)
        key = os.environ.get(str(spec.get("api_key_env", "")), "") if spec.get("api_key_env") else ""
        self._client = openai.OpenAI(
            base_url=spec["base_url"], api_key=key or "none", timeout=float(spec.get("timeout", 60)), max_retries=2
        )

    def rewrite(self, prompt: str) -> str:
        """The rewritten prompt; BackendError (naming the middleware) when there is none to render."""
        import openai

        try:
            completion = self._client.chat.completions.create(
                model=self.spec["model"],
                temperature=float(self.spec.get("temperature", 0)),
                messages=[{"role": "system", "content": self.spec["instruction"]}, {"role": "user", "content": prompt}],
            )
        except openai.OpenAIError as exc:
            raise BackendError(f"middleware {self.spec['model']!r}: {type(exc).__name__}: {exc}") from exc
        choices = getattr(completion, "choices", None)
        text = (choices[0].message.content or "").strip() if choices and getattr(choices[0], "message", None) else ""
        if not text:
            raise BackendError(f"middleware {self.spec['model']!r} returned no text")
        return text


def rewriter_for(config: BackendConfig) -> Rewriter | None:
    """The config's rewriter, one client per process and rewriter spec (None when the backend has no middleware)."""
    if not config.rewriter:
        return None
    key = json.dumps(dict(config.rewriter), sort_keys=True)
    with _lock:
        if key not in _clients:
            _clients[key] = Rewriter(config.rewriter)
        return _clients[key]
