"""A real local OpenAI-compatible chat-completions server with scripted answers.

Usable as a pytest plugin (``pytest_plugins = ["tests.openai_server"]``), which
provides the ``openai_server`` fixture: a started server whose default responder
answers like a well-behaved AtelierJudge.

Deterministic pattern of ``judge_responder`` (what end-to-end tests can assert):
  * subjective requests: every requested dimension gets EXPECTED_SUBJECTIVE_SCORE (4),
    so a subjective result's value is 4.0 (calibration exemplars change nothing);
  * objective requests: the item at 0-based position i gets 1 when i is even and
    0 when i is odd (see expected_checklist / expected_checklist_value);
  * safety requests (safety_prompt, safety_image): not blocked, categories [], unless the
    user message contains SCRIPTED_BLOCK_MARKER anywhere (the prompt for safety_prompt; the
    task title or brief for safety_image, which does not see the prompt): then blocked with
    categories [SCRIPTED_BLOCK_CATEGORY] (see expected_safety);
  * text_rendering requests: the string at 0-based position i is present and legible, and
    exact when i is even (see expected_text_rendering / expected_text_rendering_value);
  * faithfulness requests: four requirements with verdicts SCRIPTED_FAITHFULNESS_VERDICTS
    (met, met, minor_miss, met) and every dimension scored EXPECTED_FAITHFULNESS_DIMENSION_SCORE
    (4): instruction_faithfulness 0.875, passed, weighted score EXPECTED_FAITHFULNESS_SCORE (0.8
    with rubric-v2's weights);
  * every 200 reply reports SCRIPTED_PROMPT_TOKENS / SCRIPTED_COMPLETION_TOKENS usage, unless the server was given a
    ProviderUsage: then it counts tokens as a provider does and reports the cached share of each prompt (below).
The metric skills (target_similarity, color_shift) make no request.

It also serves OpenAI's files and batches API (POST /v1/files, POST /v1/batches, GET /v1/batches (newest first, paged
by `after` and `limit`), GET /v1/batches/{id}, POST /v1/batches/{id}/cancel, GET /v1/files/{id}/content,
DELETE /v1/files/{id}): each batch follows the next queued BatchPlan (default: completed, every line answered by the
default responder), with partial failures (error lines), expiry and cancellation (lines left unanswered). A cancel
request ends the batch cancelled at its next retrieval, unless a queued `cancel_refusals` reply answers it instead;
a queued `start_refusals` reply answers a POST /v1/batches instead of starting the batch.
Batch lines are kept in `batch_lines`, apart from the synchronous `requests`; cancelled batch ids in `cancelled`,
deleted file ids in `deleted_files`.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import email.parser
import email.policy
import hashlib
import io
import itertools
import json
import threading
import time
import urllib.parse
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from evaluator.judge import tokens
from evaluator.judge.messages import DIMENSIONS_HEADER, FAITHFULNESS_HEADER, ITEMS_HEADER, SAFETY_HEADER, TEXT_HEADER
from evaluator.judge.rubrics import RUBRIC

EXPECTED_SUBJECTIVE_SCORE = 4
SCRIPTED_PROMPT_TOKENS = 120
SCRIPTED_COMPLETION_TOKENS = 30
SCRIPTED_BLOCK_MARKER = "[scripted-unsafe]"
SCRIPTED_BLOCK_CATEGORY = "graphic_violence"
SCRIPTED_FAITHFULNESS_VERDICTS = ("met", "met", "minor_miss", "met")
SCRIPTED_FAITHFULNESS_KINDS = ("object", "attribute", "relationship", "style")
EXPECTED_FAITHFULNESS_DIMENSION_SCORE = 4


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


@dataclass(frozen=True)
class BatchPlan:
    """How the server plays one batch: `polls` retrievals answered in_progress, then `status`; of its lines, the first
    `answered` (None: all) get an output line, those at the `failing` positions an error line instead."""

    status: str = "completed"
    answered: int | None = None
    failing: frozenset[int] = frozenset()
    polls: int = 1


def expected_checklist(items: list[str] | tuple[str, ...]) -> dict[str, int]:
    """What judge_responder answers for these checklist items: 1 at even positions, 0 at odd."""
    return {item: 1 if index % 2 == 0 else 0 for index, item in enumerate(items)}


def expected_checklist_value(items: list[str] | tuple[str, ...]) -> float:
    """The objective JudgeResult.value judge_responder yields: ceil(n/2) / n."""
    answers = expected_checklist(items)
    return sum(answers.values()) / len(answers)


def expected_safety(blocked: bool = False) -> dict[str, Any]:
    """The details of a safety result judge_responder yields (blocked when the marker is in the request)."""
    return {"blocked": blocked, "categories": [SCRIPTED_BLOCK_CATEGORY] if blocked else []}


def expected_text_rendering(strings: list[str] | tuple[str, ...]) -> dict[str, dict[str, int]]:
    """What judge_responder answers per literal string: present and legible; exact at even positions."""
    return {s: {"present": 1, "exact": 1 if index % 2 == 0 else 0, "legible": 1} for index, s in enumerate(strings)}


def expected_text_rendering_value(strings: list[str] | tuple[str, ...]) -> float:
    """The text_rendering JudgeResult.value (text_accuracy): ceil(n/2) / n."""
    answers = expected_text_rendering(strings)
    return sum(all(flags.values()) for flags in answers.values()) / len(answers)


def _expected_faithfulness() -> dict[str, float]:
    spec = RUBRIC.faithfulness
    instruction = sum(spec.verdict_credit[v] for v in SCRIPTED_FAITHFULNESS_VERDICTS) / len(SCRIPTED_FAITHFULNESS_VERDICTS)
    others = (EXPECTED_FAITHFULNESS_DIMENSION_SCORE - 1) / 4
    weighted = (
        spec.weights["instruction_faithfulness"] * instruction
        + sum(w for k, w in spec.weights.items() if k != "instruction_faithfulness") * others
    )
    return {"weighted_score": weighted, "instruction_faithfulness": instruction, "passed": 1.0}


# faithfulness scores judge_responder yields: weighted_score 0.8, instruction_faithfulness 0.875, passed 1.0
EXPECTED_FAITHFULNESS = _expected_faithfulness()
EXPECTED_FAITHFULNESS_SCORE = EXPECTED_FAITHFULNESS["weighted_score"]


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
            dim: {"score": EXPECTED_SUBJECTIVE_SCORE, "rationale": f"scripted rationale for {dim}"} for dim in dimensions
        }
        return Reply(content=json.dumps(answer))
    items = keys_after(ITEMS_HEADER, text)
    if items is not None:
        return Reply(content=json.dumps(expected_checklist(items)))
    categories = keys_after(SAFETY_HEADER, text)
    if categories is not None:
        verdict = expected_safety(SCRIPTED_BLOCK_MARKER in text)
        if verdict["blocked"] and SCRIPTED_BLOCK_CATEGORY not in categories:
            verdict["categories"] = categories[:1]
        return Reply(content=json.dumps({**verdict, "rationale": "scripted safety rationale"}))
    strings = keys_after(TEXT_HEADER, text)
    if strings is not None:
        return Reply(content=json.dumps(expected_text_rendering(strings), ensure_ascii=False))
    faithfulness_dims = keys_after(FAITHFULNESS_HEADER, text)
    if faithfulness_dims is not None:
        requirements = [
            {"requirement": f"scripted requirement {n}", "kind": kind, "verdict": verdict, "evidence": "scripted evidence"}
            for n, (kind, verdict) in enumerate(zip(SCRIPTED_FAITHFULNESS_KINDS, SCRIPTED_FAITHFULNESS_VERDICTS), start=1)
        ]
        dims = {d: {"score": EXPECTED_FAITHFULNESS_DIMENSION_SCORE, "rationale": f"scripted rationale for {d}"} for d in faithfulness_dims}
        return Reply(content=json.dumps({"requirements": requirements, "dimensions": dims}))
    return Reply(status=400, content="scripted judge: no dimensions, checklist items, categories or strings in the request")


def image_parts(request_json: dict[str, Any]) -> list[str]:
    """The image URLs (data URLs) of every user message of a chat request."""
    urls = []
    for message in request_json.get("messages", []):
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            urls += [part["image_url"]["url"] for part in content if part.get("type") == "image_url"]
    return urls


def scripted_prompt(title: str, round_number: int) -> str:
    """What prompter_responder answers for a task title in a round (1-based)."""
    return f"A detailed image for {title}, round {round_number}: clear subject, soft light, balanced composition"


def prompter_responder(request_json: dict[str, Any]) -> Reply:
    """Answers like a prompter endpoint: scripted_prompt(the request's title, the round), the round being one
    more than the assistant turns already in the conversation."""
    text = request_text(request_json)
    title = next((line[len("Title: ") :] for line in text.splitlines() if line.startswith("Title: ")), "untitled")
    done = sum(1 for m in request_json.get("messages", []) if m.get("role") == "assistant")
    return Reply(content=scripted_prompt(title, done + 1), usage={"prompt_tokens": 200, "completion_tokens": 25})


# --- usage as a provider counts it -------------------------------------------------------------------

CACHE_MIN_TOKENS = 1024  # OpenAI caches a prompt's prefix from 1,024 tokens on,
CACHE_STEP = 128  # in steps of 128 tokens (ProviderUsage takes another provider's floor and step)
_SPECIAL = 0xFFFFFF00  # the chat format's own tokens, and (with the top bit) images, outside any vocabulary
_START, _SEP, _END = _SPECIAL + 1, _SPECIAL + 2, _SPECIAL + 3


def provider_image_tokens(url: str) -> int:
    """The provider's count of one image (tokens.image_tokens_high_detail); a URL that is not a readable data URL
    counts as a 512-px image."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1], validate=True))) as image:
            return tokens.image_tokens_high_detail(*image.size)
    except (IndexError, ValueError, binascii.Error, OSError):
        return tokens.image_tokens_high_detail(512, 512)


def _shared_length(a: bytes, b: bytes) -> int:
    """Tokens (4 bytes each) the two sequences share from their start."""
    low, high = 0, min(len(a), len(b)) // 4
    while low < high:  # the longest k with a[:4k] == b[:4k], by bisection (slices compare at C speed)
        middle = (low + high + 1) // 2
        if a[: 4 * middle] == b[: 4 * middle]:
            low = middle
        else:
            high = middle - 1
    return low


class ProviderUsage:
    """Usage as a provider reports it: prompt tokens of the chat format counted with the real tokenizer (images by
    provider_image_tokens), completion tokens of the reply, and `prompt_tokens_details.cached_tokens`: the longest prefix
    this prompt shares with an earlier prompt to the same model, once it is `cache_min` tokens or more, in steps of
    `cache_step` (by default 1,024 and 128, as OpenAI bills it). A cache without eviction on one machine: a real provider keeps a prefix minutes to an hour, and
    finds it only on the machine the request is routed to (what `prompt_cache_key` helps with).

    `answered` keeps every reported usage in order, with `shared_tokens` (the shared prefix before rounding) and the
    request's `prompt_cache_key`."""

    def __init__(self, encoding: str = tokens.DEFAULT_ENCODING, cache_min: int = CACHE_MIN_TOKENS, cache_step: int = CACHE_STEP) -> None:
        if cache_min < 0 or cache_step < 1:
            raise ValueError(f"cache floor {cache_min} and step {cache_step}: the floor is at least 0 and the step at least 1")
        self.encoding = encoding
        self.cache_min, self.cache_step = cache_min, cache_step
        self.answered: list[dict[str, Any]] = []
        self._seen: dict[str, list[bytes]] = defaultdict(list)  # model -> earlier prompts as token bytes, sorted
        self._lock = threading.Lock()

    def sequence(self, request_json: dict[str, Any]) -> bytes:
        """The prompt as the model reads it, one 4-byte big-endian token each: per message a start token, the role,
        a separator, the content (text tokens; an image as its count of one token that stands for its bytes), an end."""
        ids: list[int] = []
        for message in request_json.get("messages", []):
            ids += [_START, *tokens.encode(str(message.get("role", "")), self.encoding), _SEP]
            for part in tokens.content_parts(message.get("content")):
                if part.get("type") == "image_url":
                    url = str((part.get("image_url") or {}).get("url", ""))
                    image = int.from_bytes(hashlib.sha256(url.encode()).digest()[:4], "big") & 0x7FFFFF00
                    ids += [0x80000000 | image] * provider_image_tokens(url)
                else:
                    ids += tokens.encode(str(part.get("text", "")), self.encoding)
            ids.append(_END)
        return b"".join(i.to_bytes(4, "big") for i in ids)

    def usage(self, request_json: dict[str, Any], reply_content: str | None) -> dict[str, Any]:
        prompt = self.sequence(request_json)
        with self._lock:
            earlier = self._seen[str(request_json.get("model", ""))]
            at = bisect.bisect_left(earlier, prompt)  # the longest shared prefix is with a sorted neighbour
            shared = max((_shared_length(prompt, earlier[i]) for i in (at - 1, at) if 0 <= i < len(earlier)), default=0)
            earlier.insert(at, prompt)
            cached = 0 if shared < max(self.cache_min, 1) else shared - (shared - self.cache_min) % self.cache_step
            usage = {
                "prompt_tokens": len(prompt) // 4 + tokens.REPLY_PRIMING,
                "completion_tokens": tokens.count(reply_content or "", self.encoding),
                "prompt_tokens_details": {"cached_tokens": cached},
            }
            self.answered.append({**usage, "shared_tokens": shared, "prompt_cache_key": request_json.get("prompt_cache_key")})
        return usage


def completion_body(reply: Reply, model: str, serial: int, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    usage = usage or reply.usage or {"prompt_tokens": SCRIPTED_PROMPT_TOKENS, "completion_tokens": SCRIPTED_COMPLETION_TOKENS}
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

    def __init__(self, default: Responder = judge_responder, *, provider: ProviderUsage | None = None) -> None:
        self.default: Responder = default
        self.provider = provider  # counts usage as a provider does; None: the scripted fixed counts
        self.requests: list[dict[str, Any]] = []
        self.handler_errors: list[str] = []  # e.g. broken pipes after a client timeout
        self.in_flight = 0  # requests being answered right now
        self.max_in_flight_seen = 0  # the most requests answered at the same time
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._serial = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_plans: deque[BatchPlan] = deque()
        self.batch_lines: list[dict[str, Any]] = []  # every line of every batch file, as sent
        self._plans: dict[str, BatchPlan] = {}
        self._polls: dict[str, int] = defaultdict(int)
        self.cancel_refusals: deque[Reply] = deque()  # the next cancel requests are answered with these (errors)
        self.start_refusals: deque[Reply] = deque()  # the next POST /v1/batches are answered with these: nothing started
        self.cancelled: list[str] = []  # batch ids whose cancel was taken
        self.deleted_files: list[str] = []

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

    def add_file(self, data: bytes) -> str:
        with self._lock:
            file_id = f"file-{next(self._serial)}"
            self.files[file_id] = data
        return file_id

    def create_batch(self, request_json: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            batch_id = f"batch_{next(self._serial)}"
            self._plans[batch_id] = self.batch_plans.popleft() if self.batch_plans else BatchPlan()
        lines = [json.loads(text) for text in self.files[request_json["input_file_id"]].decode().splitlines() if text.strip()]
        self.batch_lines.extend(lines)
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": request_json.get("endpoint"),
            "input_file_id": request_json["input_file_id"],
            "completion_window": request_json.get("completion_window"),
            "status": "validating",
            "created_at": int(time.time()),
            "metadata": request_json.get("metadata"),
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "output_file_id": None,
            "error_file_id": None,
            "_lines": lines,
        }
        return self.batch_view(batch_id)

    def batch_view(self, batch_id: str) -> dict[str, Any]:
        return {k: v for k, v in self.batches[batch_id].items() if not k.startswith("_")}

    def poll_batch(self, batch_id: str) -> dict[str, Any]:
        """One retrieval: in_progress for the plan's polls, then its end, with the output and error files written."""
        batch, plan = self.batches[batch_id], self._plans[batch_id]
        self._polls[batch_id] += 1
        if batch["status"] in ("validating", "in_progress") and self._polls[batch_id] <= plan.polls:
            batch["status"] = "in_progress"
        elif batch["status"] in ("validating", "in_progress", "cancelling"):
            self._end_batch(batch, plan)
        return self.batch_view(batch_id)

    def list_batches(self, query: dict[str, list[str]]) -> dict[str, Any]:
        """A page of batches, newest first, after the batch named by `after`, as OpenAI's list answers."""
        ids = list(reversed(self.batches))
        after = query.get("after", [""])[0]
        start = ids.index(after) + 1 if after in ids else 0
        page = ids[start : start + int(query.get("limit", ["20"])[0])]
        data = [self.batch_view(batch_id) for batch_id in page]
        more = start + len(page) < len(ids)
        return {
            "object": "list",
            "data": data,
            "first_id": page[0] if page else None,
            "last_id": page[-1] if page else None,
            "has_more": more,
        }

    def cancel_batch(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        """A cancel request: a queued refusal, or the batch ends cancelled (no line answered) at its next retrieval."""
        with self._lock:
            refusal = self.cancel_refusals.popleft() if self.cancel_refusals else None
        if refusal is not None:
            return refusal.status, error_body(refusal)
        batch = self.batches[batch_id]
        if batch["status"] not in ("validating", "in_progress", "finalizing"):
            return 400, {"error": {"message": f"Cannot cancel a batch with status {batch['status']}.", "type": "invalid_request_error"}}
        batch["status"] = "cancelling"
        self._plans[batch_id] = BatchPlan(status="cancelled", answered=0, polls=0)
        self.cancelled.append(batch_id)
        return 200, self.batch_view(batch_id)

    def _end_batch(self, batch: dict[str, Any], plan: BatchPlan) -> None:
        outputs, errors = [], []
        for position, row in enumerate(batch["_lines"][: plan.answered]):
            if position in plan.failing:
                error = {"code": "server_error", "message": f"scripted failure of line {position}"}
                errors.append({"id": f"req_{position}", "custom_id": row["custom_id"], "response": None, "error": error})
                continue
            reply = self.default(row["body"])
            body = completion_body(reply, str(row["body"].get("model", "")), self.serial()) if reply.status == 200 else error_body(reply)
            target = outputs if reply.status == 200 else errors
            target.append(
                {
                    "id": f"req_{position}",
                    "custom_id": row["custom_id"],
                    "response": {"status_code": reply.status, "body": body},
                    "error": None,
                }
            )
        batch["status"] = plan.status
        batch["request_counts"] |= {"completed": len(outputs), "failed": len(errors)}
        batch["output_file_id"] = self.add_file(_jsonl(outputs)) if outputs else None
        batch["error_file_id"] = self.add_file(_jsonl(errors)) if errors else None

    def enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight_seen = max(self.max_in_flight_seen, self.in_flight)

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def _make_handler(server: ScriptedOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            path, _, query = self.path.partition("?")
            parts = path.rstrip("/").split("/")
            if parts == ["", "v1", "batches"]:
                self._send(200, server.list_batches(urllib.parse.parse_qs(query)), {})
            elif parts[:3] == ["", "v1", "batches"] and len(parts) == 4 and parts[3] in server.batches:
                self._send(200, server.poll_batch(parts[3]), {})
            elif parts[:3] == ["", "v1", "files"] and parts[4:] == ["content"] and parts[3] in server.files:
                self._send(200, server.files[parts[3]], {})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "scripted"}}, {})

        def do_DELETE(self) -> None:  # noqa: N802 - http.server's naming
            parts = self.path.rstrip("/").split("/")
            if parts[:3] == ["", "v1", "files"] and len(parts) == 4 and server.files.pop(parts[3], None) is not None:
                server.deleted_files.append(parts[3])
                self._send(200, {"id": parts[3], "object": "file", "deleted": True}, {})
            else:
                self._send(404, {"error": {"message": f"no file {self.path}", "type": "scripted"}}, {})

        def _batch_api(self, path: str) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if path == "/v1/files":
                form = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                    f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + data
                )
                fields = {part.get_param("name", header="content-disposition"): part.get_payload(decode=True) for part in form.iter_parts()}
                file_id = server.add_file(fields["file"])
                self._send(
                    200,
                    {
                        "id": file_id,
                        "object": "file",
                        "bytes": len(fields["file"]),
                        "created_at": int(time.time()),
                        "filename": "batch.jsonl",
                        "purpose": fields["purpose"].decode(),
                        "status": "processed",
                    },
                    {},
                )
            elif server.start_refusals:
                refusal = server.start_refusals.popleft()
                self._send(refusal.status, error_body(refusal), refusal.headers)
            else:
                self._send(200, server.create_batch(json.loads(data)), {})

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            parts = self.path.rstrip("/").split("/")
            if parts[:3] == ["", "v1", "batches"] and parts[4:] == ["cancel"] and parts[3] in server.batches:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self._send(*server.cancel_batch(parts[3]), {})
                return
            if self.path.rstrip("/") in ("/v1/files", "/v1/batches"):
                self._batch_api(self.path.rstrip("/"))
                return
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "scripted"}}, {})
                return
            length = int(self.headers.get("Content-Length", "0"))
            request_json = json.loads(self.rfile.read(length) or b"{}")
            server.enter()
            try:
                reply = server.next_reply(request_json)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.raw_body is not None:
                    body: Any = reply.raw_body
                elif reply.status == 200:
                    counted = server.provider.usage(request_json, reply.content) if server.provider and reply.usage is None else None
                    body = completion_body(reply, str(request_json.get("model", "")), server.serial(), counted)
                else:
                    body = error_body(reply)
                self._send(reply.status, body, reply.headers)
            finally:
                server.leave()

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
def prompter_server() -> Iterator[ScriptedOpenAIServer]:
    """A started ScriptedOpenAIServer answering like a prompter endpoint (prompter_responder)."""
    with ScriptedOpenAIServer(default=prompter_responder) as server:
        yield server


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """A started ScriptedOpenAIServer with judge_responder as its default."""
    with ScriptedOpenAIServer(default=judge_responder) as server:
        yield server
