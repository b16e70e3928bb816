"""AtelierJudge served by any OpenAI-compatible chat-completions endpoint."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import openai

from evaluator import failures
from evaluator.failures import exception_reason, remote_text, scrub
from evaluator.http_count import RequestCounter

from .budget import shared_budget
from .config import JudgeConfig
from .encoders import open_clip_pretrained
from .messages import Message, repair_messages
from .parsing import ReplyFormatError
from .routes import route_skip_reason
from .rubrics import RUBRIC, Rubric
from .skills import SkillInput, Verdict, check_exemplars, fill, get_skill, input_skip_reason, run_metric
from .spec import clip_spec, openai_spec
from .throughput import call_slot, set_max_in_flight
from .types import Exemplar, JudgeResult, Kind, Status, TargetInput, TaskInput, skipped

if TYPE_CHECKING:
    from PIL.Image import Image

# Separates successive raw replies (first answer, repair answers) in JudgeResult.raw.
RAW_SEPARATOR = "\n----- next reply -----\n"
# Sent with every request; part of the judge spec, since they change the answers.
REQUEST_OPTIONS = {"temperature": 0, "response_format": {"type": "json_object"}}


@dataclass(frozen=True)
class _Asked:
    """One LLM skill's question: its messages, how its reply is read, and the provider's cache key."""

    skill: str
    messages: list[Message]
    parse: Callable[[str], Verdict]
    cache_key: str | None


@dataclass(frozen=True)
class _Reply:
    content: str
    refusal: str  # "" unless the model refused
    prompt_tokens: int
    cached_prompt_tokens: int  # of the prompt tokens, how many the provider's prompt cache served
    completion_tokens: int


def prompt_cache_key(skill: str, task: TaskInput) -> str:
    """The provider's cache key of a request (OpenAI's `prompt_cache_key`): the requests of one skill on one task share
    their prefix up to the item (messages.py), in every submission, so they share a key, which routes them to where
    that prefix is cached. Few requests share a key at once (one per image of a prompt), as the provider advises."""
    return f"atelier:{task.task_id}:{skill}"


def request_body(model: str, messages: list[Message], cache_key: str | None) -> dict[str, Any]:
    """One chat-completions request body: what the synchronous route sends (and what a batch file's line would
    carry). The cache key is no part of the judge spec: it decides where the provider looks, not what it answers."""
    body: dict[str, Any] = {"model": model, "messages": messages, **REQUEST_OPTIONS}
    if cache_key:
        body["prompt_cache_key"] = cache_key
    return body


def _tokens(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def usage_counts(usage: Any) -> tuple[int, int, int]:
    """(prompt, cached prompt, completion) tokens of a reply's usage. Compatible servers may omit usage or its details,
    and the client does not validate shapes: anything but a count is 0, and no more prompt tokens are cached than
    were sent."""
    details = getattr(usage, "prompt_tokens_details", None)
    prompt = _tokens(getattr(usage, "prompt_tokens", None))
    return prompt, min(prompt, _tokens(getattr(details, "cached_tokens", None))), _tokens(getattr(usage, "completion_tokens", None))


class EndpointResponseError(Exception):
    """The endpoint answered 200 but not with a chat completion we can read."""


def _refusal_of(message: Any, finish_reason: str | None) -> str:
    refusal = getattr(message, "refusal", None)
    if refusal:
        return str(refusal)
    if finish_reason == "content_filter":
        return "finish_reason content_filter"
    return ""


def one_model(config: JudgeConfig, judge: str) -> str:
    """The one model a single-endpoint judge asks (the factory builds one judge per model of an ensemble)."""
    models = config.judge_models
    if not config.base_url or len(models) != 1:
        raise ValueError(f"{judge} needs a base_url and exactly one model, got {config.base_url!r} and {list(models)}")
    return models[0]


def endpoint_client(config: JudgeConfig, requests: RequestCounter) -> openai.OpenAI:
    """The client of the config's endpoint, counting each HTTP request it sends (retries included) in `requests`.
    With ATELIER_JUDGE_RPM or _TPM set, each of those requests first takes from the budget every judge worker shares,
    and a 429 pauses them all (budget.py): at the HTTP level, so the client's own retries take from it too.
    Local OpenAI-compatible servers usually need no key, but the client insists on one: "none" is the placeholder."""
    budget = shared_budget(config)
    hooks = budget.hooks() if budget is not None else {"request": [], "response": []}
    hooks["request"].append(requests)  # after the budget: a request counts once it is let through
    hooks["response"].append(requests.response)
    return openai.OpenAI(
        base_url=config.base_url,
        api_key=config.api_key or "none",
        timeout=config.timeout,
        max_retries=config.max_retries,
        http_client=openai.DefaultHttpxClient(event_hooks=hooks),
    )


class OpenAIJudge:
    """Runs each LLM skill as one JSON-mode chat completion, with a bounded repair loop.

    Metric skills (target_similarity, color_shift) are computed locally with the
    configured CLIP model, exactly as the offline judge computes them. clip_pretrained
    "random" means random weights, and the judge's label then says "smoke (random weights)".
    """

    def __init__(self, config: JudgeConfig, *, rubric: Rubric = RUBRIC) -> None:
        self.model = one_model(config, "OpenAIJudge")
        self._requests = RequestCounter()
        self._client = endpoint_client(config, self._requests)
        self._secret = config.api_key  # taken out of every raw reply and remote text the judge keeps
        self.image_max_side = config.image_max_side
        self.repair_attempts = config.repair_attempts
        self.route = config.route
        self.send_cache_key = config.prompt_cache_key
        self.rubric = rubric
        self.clip_model = config.clip_model
        self.clip_pretrained = open_clip_pretrained(config.clip_pretrained)
        if config.max_in_flight is not None:
            set_max_in_flight(config.max_in_flight)
        self.spec = openai_spec(
            model=self.model,
            endpoint=urlparse(config.base_url).netloc or config.base_url,
            route=self.route,
            rubric=rubric,
            clip=clip_spec(config.clip_model, config.clip_pretrained),
            image_max_side=self.image_max_side,
            repair_attempts=self.repair_attempts,
            request=REQUEST_OPTIONS,
        )
        self.judge_id, self.label, self.version = self.spec.judge_id, self.spec.label, self.spec.version

    def _ask(
        self,
        skill: str,
        task: TaskInput,
        prompt: str,
        image: Image | None = None,
        *,
        exemplars: Sequence[Exemplar] = (),
        target: TargetInput | None = None,
    ) -> _Asked | JudgeResult:
        """What run() asks the endpoint (messages, parser, cache key), or the result when it asks nothing."""
        spec = get_skill(skill)
        used = check_exemplars(skill, exemplars)
        reason = route_skip_reason(skill, task, self.route) or input_skip_reason(skill, task, image, target)
        if reason:
            return skipped(skill, reason)
        inp = SkillInput(task, prompt, image, used, target, self.rubric, image_max_side=self.image_max_side)
        if spec.kind == Kind.METRIC:
            return run_metric(skill, inp, self.clip_model, self.clip_pretrained)
        messages = spec.build(inp)  # type: ignore[attr-defined]
        cache_key = prompt_cache_key(skill, task) if self.send_cache_key else None
        return _Asked(skill, messages, lambda text: spec.parse(text, inp), cache_key)  # type: ignore[attr-defined]

    def run(self, skill: str, task: TaskInput, prompt: str, image: Image | None = None, **inputs: Any) -> JudgeResult:
        asked = self._ask(skill, task, prompt, image, **inputs)
        return asked if isinstance(asked, JudgeResult) else self._judge(asked)

    def batch_body(self, skill: str, task: TaskInput, prompt: str, image: Image | None = None, **inputs: Any) -> dict | JudgeResult:
        """The request body run() would send first (a batch file's line carries it), or the result when it sends none."""
        asked = self._ask(skill, task, prompt, image, **inputs)
        return asked if isinstance(asked, JudgeResult) else request_body(self.model, asked.messages, asked.cache_key)

    def run_reply(self, skill: str, task: TaskInput, prompt: str, image: Image | None = None, *, reply: dict, **inputs: Any) -> JudgeResult:
        """run() with its first request already answered (a batch output line's chat-completion body): the same parsing
        and checks; a reply that needs repair is repaired by synchronous requests, as run() would."""
        asked = self._ask(skill, task, prompt, image, **inputs)
        return asked if isinstance(asked, JudgeResult) else self._judge(asked, first=reply)

    def _judge(self, asked: _Asked, first: dict | None = None) -> JudgeResult:
        result = JudgeResult(skill=asked.skill, status=Status.FAILED)
        raws: list[str] = []
        messages = asked.messages
        for attempt in range(1 + self.repair_attempts):
            mark = self._requests.mark()
            answered = attempt == 0 and first is not None  # a batch line was this request: one call, sent already
            try:
                reply = _batch_reply(first) if answered else self._complete(request_body(self.model, messages, asked.cache_key))
            except (openai.OpenAIError, EndpointResponseError, json.JSONDecodeError) as exc:
                # OpenAIError comes only after the client's own retries (429 / 5xx /
                # timeouts) are spent; the client lets a 200 whose body is not JSON
                # escape as JSONDecodeError.
                return self._fail(result, raws, exception_reason(exc, self._requests.since(mark).sent + int(answered)), remote_text(exc))
            finally:
                spent = self._requests.since(mark)
                result.calls, result.throttled = result.calls + spent.sent + int(answered), result.throttled + spent.throttled
            result.prompt_tokens += reply.prompt_tokens
            result.cached_prompt_tokens += reply.cached_prompt_tokens
            result.completion_tokens += reply.completion_tokens
            raws.append(reply.content or (f"[refusal] {reply.refusal}" if reply.refusal else ""))
            if reply.refusal:
                return self._fail(result, raws, failures.REFUSED, reply.refusal)
            try:
                verdict = asked.parse(reply.content)
            except ReplyFormatError as exc:
                if attempt == self.repair_attempts:
                    return self._fail(result, raws, failures.INVALID_REPLY.format(attempts=attempt + 1), str(exc))
                messages = messages + repair_messages(reply.content, str(exc))
                continue
            fill(result, verdict)
            result.raw = scrub(RAW_SEPARATOR.join(raws), self._secret)
            return result
        raise AssertionError("unreachable: the loop always returns")

    def _fail(self, result: JudgeResult, raws: list[str], reason: str, remote: str) -> JudgeResult:
        """`reason` is ours (evaluator.failures); what the endpoint said goes to `remote_text`, for staff only."""
        result.status, result.reason, result.raw = Status.FAILED, reason, scrub(RAW_SEPARATOR.join(raws), self._secret)
        result.remote_text = scrub(remote, self._secret)
        result.scores, result.checklist, result.rationales, result.details, result.value = {}, {}, {}, {}, None
        return result

    def _complete(self, body: dict[str, Any]) -> _Reply:
        with call_slot():  # the process-wide bound on calls in flight, if one is set
            completion = self._client.chat.completions.create(**body)  # plain dicts are what the API takes
        return _reply_of(completion)


def _batch_reply(body: Any) -> _Reply:
    if not isinstance(body, dict):
        raise EndpointResponseError(f"batch line's response body is not an object: {body!r}")
    return _reply_of(openai.types.chat.ChatCompletion.construct(**body))


def _reply_of(completion: Any) -> _Reply:
    """A chat completion as the judge reads it, from the client (synchronous) or a batch output line (built with
    construct, which validates no more than the client does)."""
    if not getattr(completion, "choices", None):
        raise EndpointResponseError(f"response has no choices: {completion!r}")
    choice = completion.choices[0]
    if getattr(choice, "message", None) is None:
        raise EndpointResponseError("response choice has no message")
    prompt_tokens, cached_prompt_tokens, completion_tokens = usage_counts(completion.usage)
    return _Reply(
        content=choice.message.content or "",
        refusal=_refusal_of(choice.message, choice.finish_reason),
        prompt_tokens=prompt_tokens,
        cached_prompt_tokens=cached_prompt_tokens,
        completion_tokens=completion_tokens,
    )
