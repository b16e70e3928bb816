"""AtelierJudge served by any OpenAI-compatible chat-completions endpoint."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import urlparse

import openai

from .messages import Message, build_messages, repair_messages
from .parsing import ReplyFormatError, parse_objective, parse_subjective
from .rubrics import RUBRIC_VERSION
from .types import (
    STATUS_FAILED,
    STATUS_OK,
    JudgeResult,
    TaskInput,
    check_skill,
    checklist_for,
    dimensions_for,
    is_image_skill,
    is_subjective,
    route_for_category,
    skipped,
)

if TYPE_CHECKING:
    from PIL.Image import Image

# Separates successive raw replies (first answer, repair answers) in JudgeResult.raw.
RAW_SEPARATOR = "\n----- next reply -----\n"


@dataclass(frozen=True)
class _Reply:
    content: str
    refusal: str  # "" unless the model refused
    prompt_tokens: int
    completion_tokens: int


class EndpointResponseError(Exception):
    """The endpoint answered 200 but not with a chat completion we can read."""


def _exception_reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _refusal_of(message: Any, finish_reason: str | None) -> str:
    refusal = getattr(message, "refusal", None)
    if refusal:
        return str(refusal)
    if finish_reason == "content_filter":
        return "finish_reason content_filter"
    return ""


class OpenAIJudge:
    """Runs each skill as one JSON-mode chat completion, with a bounded repair loop."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 60.0,
        max_retries: int = 2,
        image_max_side: int = 512,
        repair_attempts: int = 1,
    ) -> None:
        if not base_url or not model:
            raise ValueError("OpenAIJudge needs both base_url and model")
        # Local OpenAI-compatible servers usually need no key, but the client
        # insists on one; "none" is the conventional placeholder.
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "none", timeout=timeout, max_retries=max_retries
        )
        self.model = model
        self.image_max_side = image_max_side
        self.repair_attempts = repair_attempts
        self.judge_id = f"openai:{model}"
        self.label = f"AtelierJudge via {model} at {urlparse(base_url).netloc or base_url}"
        self.version = RUBRIC_VERSION

    def run(self, skill: str, task: TaskInput, prompt: str, image: Image | None = None) -> JudgeResult:
        check_skill(skill)
        if skill not in route_for_category(task.category):
            return skipped(skill, f"{task.category} tasks are not judged on {skill}")
        if is_image_skill(skill) and image is None:
            return skipped(skill, "no image was provided")
        if not is_subjective(skill) and not checklist_for(skill, task):
            return skipped(skill, "task has no checklist items")
        messages = build_messages(skill, task, prompt, image, self.image_max_side)
        return self._judge(skill, messages, self._parser_for(skill, task))

    def _parser_for(self, skill: str, task: TaskInput) -> Callable[[str, JudgeResult], None]:
        """A function that fills the result from a reply text or raises ReplyFormatError."""
        if is_subjective(skill):
            dims = dimensions_for(skill)

            def fill_scores(text: str, result: JudgeResult) -> None:
                result.scores, result.rationales = parse_subjective(text, dims)

            return fill_scores
        items = checklist_for(skill, task)

        def fill_checklist(text: str, result: JudgeResult) -> None:
            result.checklist = parse_objective(text, items)

        return fill_checklist

    def _judge(self, skill: str, messages: list[Message], fill: Callable[[str, JudgeResult], None]) -> JudgeResult:
        result = JudgeResult(skill=skill, status=STATUS_FAILED)
        raws: list[str] = []
        for attempt in range(1 + self.repair_attempts):
            result.calls += 1
            try:
                reply = self._complete(messages)
            except (openai.OpenAIError, EndpointResponseError, json.JSONDecodeError) as exc:
                # OpenAIError comes only after the client's own retries (429 / 5xx /
                # timeouts) are spent; the client lets a 200 whose body is not JSON
                # escape as JSONDecodeError.
                return self._fail(result, raws, _exception_reason(exc))
            result.prompt_tokens += reply.prompt_tokens
            result.completion_tokens += reply.completion_tokens
            raws.append(reply.content or (f"[refusal] {reply.refusal}" if reply.refusal else ""))
            if reply.refusal:
                return self._fail(result, raws, f"refusal: {reply.refusal}")
            try:
                fill(reply.content, result)
            except ReplyFormatError as exc:
                if attempt == self.repair_attempts:
                    return self._fail(result, raws, f"invalid reply after {attempt + 1} attempt(s): {exc}")
                messages = messages + repair_messages(reply.content, str(exc))
                continue
            result.status, result.raw = STATUS_OK, RAW_SEPARATOR.join(raws)
            return result
        raise AssertionError("unreachable: the loop always returns")

    @staticmethod
    def _fail(result: JudgeResult, raws: list[str], reason: str) -> JudgeResult:
        result.status, result.reason, result.raw = STATUS_FAILED, reason, RAW_SEPARATOR.join(raws)
        result.scores, result.checklist, result.rationales = {}, {}, {}
        return result

    def _complete(self, messages: list[Message]) -> _Reply:
        completion = self._client.chat.completions.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]  # plain dicts are what the API takes
            temperature=0,
            response_format={"type": "json_object"},
        )
        if not getattr(completion, "choices", None):
            raise EndpointResponseError(f"response has no choices: {str(completion)[:200]!r}")
        choice = completion.choices[0]
        if getattr(choice, "message", None) is None:
            raise EndpointResponseError("response choice has no message")
        usage = completion.usage
        # Compatible servers may omit usage; the client does not validate shapes, so guard None too.
        return _Reply(
            content=choice.message.content or "",
            refusal=_refusal_of(choice.message, choice.finish_reason),
            prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
            completion_tokens=(usage.completion_tokens or 0) if usage else 0,
        )
