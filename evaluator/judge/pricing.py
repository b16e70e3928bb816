"""What the judge's requests cost at the deployer's prices, with where those prices come from.

Prices are the deployer's, never ours: providers change them, and a compatible server may cost nothing. Settings read
them from the environment once (`prices_from_environ`):

    ATELIER_JUDGE_PRICE_INPUT          USD per 1M prompt tokens
    ATELIER_JUDGE_PRICE_CACHED_INPUT   USD per 1M cached prompt tokens (the provider's prompt cache); unset: the input price
    ATELIER_JUDGE_PRICE_OUTPUT         USD per 1M completion tokens
    ATELIER_JUDGE_BATCH_DISCOUNT       the batch route's discount on all of it, a fraction (0.5: half price); unset: 0
    ATELIER_JUDGE_PRICES_SOURCE        where the prices come from and when, e.g. "OpenAI pricing page, 2026-12-01"

Input and output go together, and with them a source: a figure whose origin nobody can check is not shown. With none
of the prices set every page shows tokens only and says "no prices configured". Prices change no verdict, so they are
in no judge spec. Kept free of Django and of the tokenizer, as settings import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .config import JudgeConfigError

NO_PRICES = "no prices configured"
PRICE_SETTINGS = {
    "input": "ATELIER_JUDGE_PRICE_INPUT",
    "cached_input": "ATELIER_JUDGE_PRICE_CACHED_INPUT",
    "output": "ATELIER_JUDGE_PRICE_OUTPUT",
    "batch_discount": "ATELIER_JUDGE_BATCH_DISCOUNT",
    "source": "ATELIER_JUDGE_PRICES_SOURCE",
}
PER_TOKENS = 1_000_000


@dataclass(frozen=True)
class Usage:
    """What the provider reported for some judge requests (cached prompt tokens are part of the prompt tokens)."""

    requests: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def cached_share(self) -> float | None:
        return self.cached_prompt_tokens / self.prompt_tokens if self.prompt_tokens else None

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(a + b for a, b in zip(asdict(self).values(), asdict(other).values(), strict=True)))


@dataclass(frozen=True)
class Prices:
    """USD per 1M tokens, the batch route's discount (a fraction) and the prices' source and date."""

    input: float
    cached_input: float
    output: float
    batch_discount: float
    source: str

    def usd(self, usage: Usage, *, cache: bool = True, batch: bool = False) -> float:
        """The cost of `usage`: cached prompt tokens at the cached price when `cache`, else all at the input price
        ("plain"); then less the batch discount when `batch`."""
        cached = usage.cached_prompt_tokens if cache else 0
        full = (usage.prompt_tokens - cached) * self.input + cached * self.cached_input + usage.completion_tokens * self.output
        return full / PER_TOKENS * ((1 - self.batch_discount) if batch else 1)


def _price(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise JudgeConfigError(f"{name}={text!r}: expected a number of US dollars per 1M tokens") from None
    if not 0 <= value < float("inf"):
        raise JudgeConfigError(f"{name}={text!r}: must be zero or more")
    return value


def _discount(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise JudgeConfigError(f"{name}={text!r}: expected a fraction, e.g. 0.5 for half price") from None
    if not 0 <= value < 1:
        raise JudgeConfigError(f"{name}={text!r}: must be at least 0 and below 1 (0.5 is half price)")
    return value


def prices_from_environ(environ: Mapping[str, str]) -> dict[str, Any]:
    """The price settings keyed by setting name (what Django's settings hold; `prices_from_settings` reads them back):
    None for a price not set. Text that does not read, or prices without their partners or source, raise
    JudgeConfigError naming the variable."""
    given = {field: environ[name].strip() for field, name in PRICE_SETTINGS.items() if environ.get(name, "").strip()}
    values: dict[str, Any] = dict.fromkeys(PRICE_SETTINGS.values())
    if not given:
        return values
    for field in ("input", "output"):
        if field not in given:
            raise JudgeConfigError(
                f"{PRICE_SETTINGS[field]} is unset but other judge prices are set ({', '.join(PRICE_SETTINGS[f] for f in given)}): "
                "set the input and output prices (USD per 1M tokens), or none of the price settings"
            )
    if "source" not in given:
        raise JudgeConfigError(
            f"{PRICE_SETTINGS['source']} is unset: name where the judge prices come from and when, e.g. 'OpenAI pricing page, 2026-12-01'"
        )
    for field in ("input", "cached_input", "output"):
        if field in given:
            values[PRICE_SETTINGS[field]] = _price(PRICE_SETTINGS[field], given[field])
    cached, full = values[PRICE_SETTINGS["cached_input"]], values[PRICE_SETTINGS["input"]]
    if cached is not None and cached > full:
        raise JudgeConfigError(f"{PRICE_SETTINGS['cached_input']}={cached:g}: more than {PRICE_SETTINGS['input']}={full:g}")
    values[PRICE_SETTINGS["batch_discount"]] = _discount(PRICE_SETTINGS["batch_discount"], given.get("batch_discount", "0"))
    values[PRICE_SETTINGS["source"]] = given["source"]
    return values


def prices_from_settings(values: Mapping[str, Any]) -> Prices | None:
    """The prices in settings keyed by setting name (as `prices_from_environ` wrote them), None when none is set."""
    read = {field: values.get(name) for field, name in PRICE_SETTINGS.items()}
    if read["input"] is None or read["output"] is None:
        return None
    cached = read["input"] if read["cached_input"] is None else read["cached_input"]
    return Prices(
        input=read["input"], cached_input=cached, output=read["output"], batch_discount=read["batch_discount"] or 0.0, source=read["source"]
    )


def cost_record(usage: Usage, prices: Prices | None) -> dict[str, Any]:
    """What the pages, the API and the bench show: requests, tokens, the cached share, and the cost at `prices`: `usd`
    as the synchronous route is billed (cached tokens at the cached price), `usd_batch` the same tokens on the batch
    route. Without prices both are None and `note` says so."""
    priced = prices is not None
    return {
        **asdict(usage),
        "cached_share": usage.cached_share,
        "usd": prices.usd(usage) if priced else None,
        "usd_batch": prices.usd(usage, batch=True) if priced else None,
        "prices": asdict(prices) if priced else None,
        "note": "" if priced else NO_PRICES,
    }
