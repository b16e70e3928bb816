"""The REST API over urllib: bearer token, JSON answers, multipart uploads, and retries of 503 and 429 that honour
Retry-After (a bounded number of tries, each wait capped). Every other failure raises ApiError with the server's message."""

from __future__ import annotations

import json
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode, urlsplit
from urllib.request import Request, urlopen

RETRY_STATUSES = (429, 503)
NOT_TRANSIENT = 3600  # a Retry-After further away than this (a daily cap) is answered at once, not waited out
TIMEOUT = 120


class ApiError(Exception):
    def __init__(self, message: str, body: dict | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.status, self.body = status, body or {}


def _message(status: int, raw: bytes) -> tuple[str, dict]:
    try:
        body = json.loads(raw)
    except ValueError:
        return f"HTTP {status}: {raw[:300].decode('utf-8', 'replace').strip()}", {}
    if not isinstance(body, dict):
        return f"HTTP {status}: {body!r}", {}
    return f"HTTP {status}: {body.get('error') or body}", body


def multipart(fields: dict[str, str], file_field: str, path: Path) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()]
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{path.name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
    body = b"".join(parts) + head.encode() + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


@dataclass
class Client:
    url: str
    token: str
    tries: int = 5
    max_wait: float = 60.0
    log: object = field(default=sys.stderr)

    def request(self, method: str, path: str, *, body: bytes | None = None, content_type: str = "", headers: dict | None = None) -> bytes:
        """The answer's body; 429/503 are retried after Retry-After (capped at max_wait) up to `tries` times in all."""
        for attempt in range(1, self.tries + 1):
            try:
                return self._once(method, path, body, content_type, headers or {})
            except HTTPError as exc:
                raw = exc.read()
                if exc.code not in RETRY_STATUSES or attempt == self.tries or _asked(exc) > NOT_TRANSIENT:
                    raise ApiError(*_message(exc.code, raw), status=exc.code) from exc
                self._wait(exc, raw, attempt)
        raise AssertionError("unreachable: the last try returns or raises")

    def _once(self, method: str, path: str, body: bytes | None, content_type: str, headers: dict) -> bytes:
        sent = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json",
            **headers,
            **({"Content-Type": content_type} if content_type else {}),
        }
        try:
            with urlopen(Request(self.url + path, data=body, method=method, headers=sent), timeout=TIMEOUT) as response:
                return response.read()
        except URLError as exc:
            if isinstance(exc, HTTPError):
                raise
            raise ApiError(f"cannot reach {self.url}: {exc.reason}") from exc

    def _wait(self, exc: HTTPError, raw: bytes, attempt: int) -> None:
        seconds = min(_asked(exc), self.max_wait)
        print(f"{_message(exc.code, raw)[0]} — retrying in {seconds:g} s (try {attempt + 1} of {self.tries})", file=self.log)
        time.sleep(seconds)

    def json(self, method: str, path: str, data: dict | None = None, headers: dict | None = None) -> dict:
        body = json.dumps(data).encode() if data is not None else None
        return json.loads(self.request(method, path, body=body, content_type="application/json" if body else "", headers=headers))

    def submit(self, path: Path, fields: dict[str, str], key: str) -> dict:
        body, content_type = multipart(fields, "file", path)
        return json.loads(
            self.request("POST", "/api/v1/submissions", body=body, content_type=content_type, headers={"Idempotency-Key": key})
        )

    def status(self, submission_id: int) -> dict:
        return self.json("GET", f"/api/v1/submissions/{submission_id}")

    def breakdown(self, submission_id: int, fmt: str) -> bytes:
        return self.request("GET", f"/api/v1/submissions/{submission_id}/breakdown.{fmt}")

    def board(self, pack: str, per_page: int | None = None) -> dict:
        """The pack's whole board: its first page with the rows of every page after it (following `next`)."""
        board = self.json("GET", "/api/v1/boards?" + urlencode({"pack": pack, **({"per_page": per_page} if per_page else {})}))
        following = board.get("next")
        for _ in range(1, board.get("pages", 1)):  # bounded by the page count the server gave
            if not following:
                break
            page = self.json("GET", _path(following))
            board["rows"] += page["rows"]
            following = page.get("next")
        return {**board, "next": None}


def _path(url: str) -> str:
    """A link the server gave, as a path on the configured URL (behind a proxy the server may name another host)."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _asked(exc: HTTPError) -> float:
    """The seconds Retry-After asks for (1 when it names none or a date)."""
    header = exc.headers.get("Retry-After", "")
    return float(header) if header.replace(".", "", 1).isdigit() else 1.0
