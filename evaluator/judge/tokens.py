"""Token counts with OpenAI's own tokenizer tables, offline: bpe-openai ships o200k_base and cl100k_base in its package.

A chat request is counted as OpenAI's cookbook counts one (its "How to count tokens with tiktoken"): 3 tokens per
message plus its role and its content, and 3 that prime the reply. An image is counted by the caller's number: a
provider counts images by its own rule (size, detail, model), which no tokenizer knows.

The tables load on first use (about 2 s on a 2-core machine: bpe-openai reads all of them as it is imported), never at
import: settings and the web process import the judge's light modules, and Django's start-up must not pay for them
(tests/test_startup.py).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bpe_openai import Encoding

DEFAULT_ENCODING = "o200k_base"  # gpt-4o, gpt-4.1, gpt-5 and the o-series; models bpe-openai does not know get it too
TOKENS_PER_MESSAGE = 3  # <|im_start|>, <|im_sep|> (after the role) and <|im_end|>
REPLY_PRIMING = 3  # <|im_start|>assistant<|im_sep|>, which every reply starts with


@functools.cache
def _package() -> ModuleType:
    """bpe_openai, imported on first use: its import reads the tables (what start-up must not pay for), with an
    importlib.resources call deprecated since Python 3.11 that says so once per table."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "open_binary is deprecated", DeprecationWarning)
        import bpe_openai
    return bpe_openai


@functools.cache
def encoding(name: str = DEFAULT_ENCODING) -> Encoding:
    return _package().get_encoding(name)


@functools.cache
def encoding_name(model: str) -> str:
    """The tokenizer of an OpenAI model bpe-openai knows (gpt-4 and gpt-3.5: cl100k_base), else DEFAULT_ENCODING."""
    try:
        return _package().encoding_name_for_model(model)
    except KeyError:
        return DEFAULT_ENCODING


def encode(text: str, name: str = DEFAULT_ENCODING) -> list[int]:
    """The token ids of a text, special-token look-alikes counted as the text they are (a prompt may contain them)."""
    return encoding(name).encode_ordinary(text)


def count(text: str, name: str = DEFAULT_ENCODING) -> int:
    return len(encode(text, name)) if text else 0


def content_parts(content: Any) -> Iterable[Mapping[str, Any]]:
    """A message's content as parts: a string is one text part; anything else that is not a list, none."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [part for part in content if isinstance(part, Mapping)] if isinstance(content, list) else []


def image_tokens_high_detail(width: int, height: int) -> int:
    """OpenAI's count of one image for gpt-4o and gpt-4.1 at detail high: 85 + 170 per 512-px tile, after the image is
    scaled to fit 2,048 px and then its short side to at most 768 px (a 512-px image: 255)."""
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        w, h = w * 2048 / max(w, h), h * 2048 / max(w, h)
    if min(w, h) > 768:
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def chat_tokens(messages: Iterable[Any], *, image_tokens: int, name: str = DEFAULT_ENCODING) -> int:
    """The prompt tokens of a chat request's messages: text counted by the tokenizer, each image as image_tokens."""
    total = REPLY_PRIMING
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        total += TOKENS_PER_MESSAGE + count(str(message.get("role") or ""), name)
        for part in content_parts(message.get("content")):
            if part.get("type") == "image_url":
                total += image_tokens
            elif isinstance(part.get("text"), str):
                total += count(part["text"], name)
    return total
