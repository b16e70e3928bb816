"""OfficialJudge: AtelierEval's released judge, reproduced from a checkout (route "official").

Per task category the route runs what the release's router runs: OE and CO the prompt and image rubrics
and checklists, IM the prompt rubric and both checklists (no image rubric, and none of our own skills:
no target similarity, no safety gate, no text rendering, no faithfulness). Rubric requests carry the
top_k (3, the release's default) exemplars of the same category and side most similar to the item by
cosine, ties broken by the release's key, the item's own task not excluded (the release does not
exclude it); the exemplars handed in by the platform (our own memory) are not used.

Retrieval embeds with an Embedder. The release embeds prompts with nomic-embed-text-v1.5 (first 512
dimensions) and images with DINOv2-giant; neither is available here, so the default LocalEmbedder uses
the judge's own encoders (all-MiniLM-L6-v2, CLIP) and its identity is part of the judge spec.

Each request is sent with the release's options (temperature, top_p, max_tokens from its runtime
configs), without a JSON response format and without repair turns: a rubric reply that does not parse
fails the skill, a checklist reply that does not parse is asked for again, up to the release's
retry.max_attempts replies. Scores are stored under our dimension keys; the judge id is
"official:<model>" and the version "ateliereval-release+<fingerprint>", the fingerprint covering every
file read from the checkout, so no result of this route is ever mixed with, or reused for, another.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlparse

import numpy as np
import openai

from evaluator import failures
from evaluator.failures import exception_reason, remote_text, scrub
from evaluator.http_count import RequestCounter

from ..config import OFFICIAL_ROUTE, JudgeConfig
from ..encoders import clip_identity, image_embeddings, text_embeddings, text_model_identity
from ..memory import cosine_similarities
from ..openai_judge import EndpointResponseError, endpoint_client, one_model, usage_counts
from ..parsing import ReplyFormatError
from ..routes import route_skip_reason
from ..skills import Verdict, fill, get_skill
from ..spec import JudgeSpec, clip_spec, endpoint_host
from ..throughput import call_slot, set_max_in_flight
from ..types import Exemplar, JudgeResult, Kind, Side, Status, TargetInput, TaskInput, skipped
from .release import MemoryItem, OfficialRelease, our_keys
from .replies import parse_checks, parse_dimensions
from .requests import Message, check_messages, image_subjective_messages, prompt_subjective_messages

if TYPE_CHECKING:
    from PIL.Image import Image

log = logging.getLogger(__name__)
ROUTE = OFFICIAL_ROUTE
BASE_VERSION = "ateliereval-release"
TOP_K = 3  # the release's run_evaluator.py --top-k default
RAW_SEPARATOR = "\n----- next reply -----\n"


class Embedder(Protocol):
    """Unit vectors for retrieval; `identity` names the models (it is part of the judge spec)."""

    identity: str

    def texts(self, texts: list[str]) -> np.ndarray: ...

    def images(self, images: list[Image]) -> np.ndarray: ...


class LocalEmbedder:
    """The judge's own encoders: all-MiniLM-L6-v2 for prompts, the configured CLIP model for images."""

    def __init__(self, clip_model: str, clip_pretrained: str | None) -> None:
        self.clip_model, self.clip_pretrained = clip_model, clip_pretrained
        self.identity = f"{text_model_identity()} + {clip_identity(clip_model, clip_pretrained)}"

    def texts(self, texts: list[str]) -> np.ndarray:
        return np.asarray(text_embeddings(texts))

    def images(self, images: list[Image]) -> np.ndarray:
        return np.asarray(image_embeddings(images, self.clip_model, self.clip_pretrained))


def ranked(query: np.ndarray, pool: Sequence[tuple[MemoryItem, np.ndarray]], k: int) -> list[tuple[MemoryItem, float]]:
    """The k most similar exemplars, ties broken by the release's key (task id, image path, position)."""
    if k <= 0 or not pool:
        return []
    sims = cosine_similarities(query, np.stack([vec for _, vec in pool]))
    keys = [f"{ex.task_id}|{ex.image_path}|{i:06d}" if ex.side == Side.IMAGE else f"{ex.task_id}|{i:06d}" for i, (ex, _) in enumerate(pool)]
    order = sorted(range(len(pool)), key=lambda i: (-float(sims[i]), keys[i]))
    return [(pool[i][0], float(sims[i])) for i in order[:k]]


def fallback_record(task: TaskInput) -> dict[str, Any]:
    """Our task as a dataset record, for a task the release's dataset does not have (IM: no image path)."""
    return {"task_id": task.task_id, "title": task.title, "task": task.brief, **task.constraints}


def official_spec(
    *, model: str, endpoint: str, release: OfficialRelease, embedder: str, clip_model: str, clip_pretrained: str | None
) -> JudgeSpec:
    parameters = {
        "request": release.options,
        "compression": release.compression,
        "checklist_attempts": release.attempts,
        "top_k": TOP_K,
        "retrieval": embedder,
        "levels": {name: list(labels) for name, labels in release.levels.items()},
        "composite": "top1",
    }
    return JudgeSpec(
        engine="official",
        models=(model,),
        route=ROUTE,
        base_version=BASE_VERSION,
        clip=clip_spec(clip_model, clip_pretrained),
        parameters=parameters,
        templates=release.fingerprint,
        endpoint=endpoint_host(endpoint),
    )


class OfficialJudge:
    """The release's judge from its loaded checkout; endpoint, model, client limits and CLIP come from the config
    (its route and official_release are the factory's concern: this judge is on the official route whatever they say)."""

    def __init__(self, config: JudgeConfig, *, release: OfficialRelease, embedder: Embedder | None = None) -> None:
        self.model = one_model(config, "OfficialJudge")
        self.release, self.route, self._secret = release, ROUTE, config.api_key
        self._requests = RequestCounter()
        self._client = endpoint_client(config, self._requests)
        self.embedder = embedder or LocalEmbedder(config.clip_model, config.clip_pretrained)
        self._pools: dict[tuple[Side, str], list[tuple[MemoryItem, np.ndarray]]] = {}
        self._pool_lock = threading.Lock()
        if config.max_in_flight is not None:
            set_max_in_flight(config.max_in_flight)
        self.spec = official_spec(
            model=self.model,
            endpoint=urlparse(config.base_url).netloc or config.base_url,
            release=release,
            embedder=self.embedder.identity,
            clip_model=config.clip_model,
            clip_pretrained=config.clip_pretrained,
        )
        self.judge_id, self.label, self.version = self.spec.judge_id, self.spec.label, self.spec.version

    # --- what runs -------------------------------------------------------------------------------

    def checklist(self, side: Side, task: TaskInput) -> tuple[str, ...]:
        """The release's checklist of this side for the task ((): the release has none)."""
        return self.release.checklists.get(task.category, {}).get(task.task_id, {}).get(side, ())

    def skip_reason(self, skill: str, task: TaskInput) -> str | None:
        reason = route_skip_reason(skill, task, ROUTE)
        spec = get_skill(skill)
        if reason is None and spec.kind == Kind.CHECKLIST and not self.checklist(spec.side, task):
            reason = f"the official release has no {spec.side} checklist for task {task.task_id}"
        return reason

    def describe(self, task: TaskInput) -> str:
        """The task description the release's judge reads (its dataset's, else ours in its layout; "N/A" if empty)."""
        return self.release.describe(task.task_id, task.category, fallback_record(task)) or "N/A"

    def run(
        self,
        skill: str,
        task: TaskInput,
        prompt: str,
        image: Image | None = None,
        *,
        exemplars: Sequence[Exemplar] = (),
        target: TargetInput | None = None,
    ) -> JudgeResult:
        """One skill the release's way; `exemplars` (our memory) and `target` are not used by this route."""
        reason = self.skip_reason(skill, task)
        spec = get_skill(skill)
        if reason is None and spec.side == Side.IMAGE and image is None:
            reason = "no image was provided"
        if reason:
            return skipped(skill, reason)
        if spec.kind == Kind.RUBRIC:
            return self._rubric(skill, spec.side, task, prompt, image)
        items = self.checklist(spec.side, task)
        messages = check_messages(self.release, spec.side, prompt, items, image)
        return self._ask(skill, messages, lambda text: Verdict(checklist=parse_checks(text, items)), self.release.attempts, "objective")

    def _rubric(self, skill: str, side: Side, task: TaskInput, prompt: str, image: Image | None) -> JudgeResult:
        found = self.retrieve(side, task.category, prompt, image)
        items = [ex for ex, _ in found]
        if side == Side.PROMPT:
            messages = prompt_subjective_messages(self.release, self.describe(task), prompt, items)
        else:
            assert image is not None
            messages = image_subjective_messages(self.release, self.describe(task), prompt, image, items)
        names = self.release.dimension_names(side)
        keys = our_keys(names, side)

        def parse(text: str) -> Verdict:
            scores, rationales = parse_dimensions(text, names)
            retrieved = [{"task_id": ex.task_id, "similarity": round(sim, 6)} for ex, sim in found]
            return Verdict(
                scores={keys[n]: s for n, s in scores.items()},
                rationales={keys[n]: r for n, r in rationales.items()},
                details={"retrieved": retrieved},
            )

        return self._ask(skill, messages, parse, 1, "subjective")

    # --- retrieval -------------------------------------------------------------------------------

    def retrieve(self, side: Side, category: str, prompt: str, image: Image | None) -> list[tuple[MemoryItem, float]]:
        """The release's top-k exemplars for the item (none for a category without a memory bank of this side)."""
        pool = self._pool(side, category)
        if not pool:
            return []
        query = self.embedder.texts([prompt])[0] if side == Side.PROMPT else self.embedder.images([image])[0]  # type: ignore[list-item]
        return ranked(query, pool, TOP_K)

    def _pool(self, side: Side, category: str) -> list[tuple[MemoryItem, np.ndarray]]:
        with self._pool_lock:
            if (side, category) not in self._pools:
                self._pools[(side, category)] = self._embed_pool(self.release.memory.get((side, category), ()))
            return self._pools[(side, category)]

    def _embed_pool(self, items: Sequence[MemoryItem]) -> list[tuple[MemoryItem, np.ndarray]]:
        if not items:
            return []
        if items[0].side == Side.PROMPT:
            return list(zip(items, self.embedder.texts([ex.text for ex in items])))
        opened = [(ex, _open(ex.image_path)) for ex in items]
        kept = [(ex, img) for ex, img in opened if img is not None]
        return list(zip([ex for ex, _ in kept], self.embedder.images([img for _, img in kept]))) if kept else []

    # --- calls -----------------------------------------------------------------------------------

    def _ask(self, skill: str, messages: list[Message], parse: Callable[[str], Verdict], attempts: int, kind: str) -> JudgeResult:
        """Send the same request until a reply parses, at most `attempts` times (the release re-asks, it does not repair)."""
        result, raws = JudgeResult(skill=skill, status=Status.FAILED), []
        for attempt in range(1, attempts + 1):
            mark = self._requests.mark()
            try:
                content, refusal, usage = self._complete(messages, self.release.options[kind])
            except (openai.OpenAIError, EndpointResponseError, json.JSONDecodeError) as exc:
                return self._fail(result, raws, exception_reason(exc, self._requests.since(mark).sent), remote_text(exc))
            finally:
                spent = self._requests.since(mark)
                result.calls, result.throttled = result.calls + spent.sent, result.throttled + spent.throttled
            result.prompt_tokens, result.cached_prompt_tokens = result.prompt_tokens + usage[0], result.cached_prompt_tokens + usage[1]
            result.completion_tokens += usage[2]
            raws.append(content or (f"[refusal] {refusal}" if refusal else ""))
            if refusal:
                return self._fail(result, raws, failures.REFUSED, refusal)
            try:
                verdict = parse(content)
            except ReplyFormatError as exc:
                if attempt == attempts:
                    return self._fail(result, raws, failures.INVALID_REPLY.format(attempts=attempt), str(exc))
                continue
            fill(result, verdict)
            result.raw = scrub(RAW_SEPARATOR.join(raws), self._secret)
            return result
        raise AssertionError("unreachable: attempts is at least 1")

    def _fail(self, result: JudgeResult, raws: list[str], reason: str, remote: str) -> JudgeResult:
        result.status, result.reason, result.raw = Status.FAILED, reason, scrub(RAW_SEPARATOR.join(raws), self._secret)
        result.remote_text = scrub(remote, self._secret)
        return result

    def _complete(self, messages: list[Message], options: dict[str, Any]) -> tuple[str, str, tuple[int, int, int]]:
        """(content, refusal, (prompt, cached prompt, completion tokens)) of one chat completion. The request is the
        release's, byte for byte: no prompt_cache_key is added (docs/judge-vs-ateliereval.md says what it shares)."""
        with call_slot():
            completion = self._client.chat.completions.create(model=self.model, messages=messages, **options)  # type: ignore[arg-type, call-overload]
        choices = getattr(completion, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise EndpointResponseError(f"not a chat completion: {completion!r}")
        message, usage = choices[0].message, completion.usage
        refusal = getattr(message, "refusal", None) or (
            "finish_reason content_filter" if choices[0].finish_reason == "content_filter" else ""
        )
        return message.content or "", str(refusal), usage_counts(usage)


def _open(path: str) -> Image | None:
    """An exemplar image, or None when it cannot be read (the release skips an image it cannot embed)."""
    from PIL import Image as PILImage

    try:
        with PILImage.open(path) as handle:
            return handle.convert("RGB")
    except (OSError, ValueError) as exc:
        log.warning("official memory image %s skipped, as the release skips it: %s", path, exc)
        return None
