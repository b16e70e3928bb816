"""The token API's query parameters, headers and answers, declared once (pydantic): submissions/api.py validates with these
and atelier/openapi.py prints them (teams/schemas.py says how). Its bodies are declared by the forms the views
validate them with (submissions/api.py: ApiSubmitForm, ApiEndpointForm, ApiTestForm, ApiRunForm), read into the
document the same way."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from pydantic import BaseModel, ConfigDict, Field, create_model

from evaluation.models import CallStatus, JudgeRoute, Origin, Status, UnitStatus
from evaluator.judge.scales import SCALES
from teams.schemas import Answer, DateTime, Declared, Real, Whole, choice

IDEMPOTENCY_KEY_MAX = 200  # the stored key's length: a longer one is refused, not cut (cutting it could merge two)


class Idempotency(Declared):
    """The header of the routes that create a submission."""

    model_config = ConfigDict(extra="ignore")  # every other header a client sends

    key: str = Field(
        "",
        alias="Idempotency-Key",
        max_length=IDEMPOTENCY_KEY_MAX,
        description="a retry with the same key returns the same submission instead of a second one",
    )


class CallsQuery(Declared):
    """A page of a run's call log."""

    model_config = ConfigDict(extra="ignore")  # as before the declaration: other parameters are not this route's concern

    offset: Whole = Field(0, ge=0, le=999_999_999, description="the first call's position, from 0")


def headers(model: type[BaseModel], request: HttpRequest) -> BaseModel:
    """The request's headers that `model` declares (by their aliases), validated by it."""
    return model.model_validate(
        {field.alias: request.headers[field.alias] for field in model.model_fields.values() if field.alias in request.headers}
    )


# --- answers (teams/schemas.py's Answer: the views build their JSON through these, the document prints them) -----

SCALE_WORDS = "the value's scale: " + ", ".join(f"{name} ({scale.label})" for name, scale in SCALES.items())

Counts = create_model(  # evaluation.selectors._counts: one count per unit status, then the totals
    "Counts",
    __base__=Answer,
    __doc__="units of one kind (renders or judgements): how many are in each status, and in all",
    **dict.fromkeys(UnitStatus.values, (int, ...)),
    total=(int, ...),
    done=(int, Field(description="settled: every status but pending")),
    running=(int, Field(description="pending, and a worker has begun them")),
    waiting=(int, Field(description="pending, waiting for a worker")),
)


class Progress(Answer):
    renders: Counts
    judgements: Counts


class Eta(Answer):
    """Time left for an active submission, from its own pace (null figures until enough units settled)."""

    done: int
    remaining: int
    per_second: Real | None
    seconds_left: int | None
    finishes_at: DateTime | None


class Cost(Answer):
    """Judge calls and tokens spent, over every judge version that scored the submission."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached: int = Field(description="judgements answered from the judge's cache")


class Prices(Answer):
    """The deployer's prices, USD per million tokens."""

    input: Real
    cached_input: Real
    output: Real
    batch_discount: Real
    source: str


class JudgeCost(Answer):
    """Judge requests, the tokens the provider reported (cached_prompt_tokens: served by its prompt cache) and their cost
    in USD at the deployer's prices: usd as the synchronous route is billed, usd_batch on the batch route; both null and
    note 'no prices configured' without prices"""

    requests: int
    prompt_tokens: int
    cached_prompt_tokens: int
    completion_tokens: int
    cached_share: Real | None
    usd: Real | None
    usd_batch: Real | None
    prices: Prices | None
    note: str


class Coverage(Answer):
    scored: int
    planned: int


class Figure(Answer):
    """a figure with its 95 % interval: `low` and `high` on the figure's own scale, or both null and `interval_note`
    saying why there is none (e.g. no task has a score, or the figure is withheld)"""

    value: Real | None = Field(description="on the figure's scale; null when withheld or when no task has a score")
    scale: str = Field(description=SCALE_WORDS)
    low: Real | None = Field(description="the 95 % interval's lower end, on the figure's scale")
    high: Real | None = Field(description="the 95 % interval's upper end, on the figure's scale")
    interval_note: str | None = Field(description="why `low` and `high` are null, in words; null when the figure has an interval")
    partial: bool
    withheld: bool
    coverage: Coverage | None


class Submission(Answer):
    """A submission: its status, progress and figures."""

    id: int
    status: choice(*Status.values)
    error: str
    pack: str
    status_url: str
    page_url: str
    progress: Progress
    eta: Eta | None
    judge: str
    judge_version: str
    judge_route: choice(*JudgeRoute.values) = Field(
        description="how the judge's requests go out: sync, or batch (the provider's batch API: cheaper, scores within 24 h)"
    )
    cost: Cost
    judge_cost: JudgeCost
    figures: dict[str, Figure] = Field(description="'scope:key' (overall:overall, category:OE, ...) -> figure")
    prompter_card: int | None = Field(description="the id of the team's card for its prompter")
    origin: choice(*Origin.values)
    condition: str
    condition_version: str
    warnings: list[str]
    prompting: dict[str, Any] | None = Field(None, description="an endpoint run's prompting progress (endpoint runs only)")


class Call(Answer):
    """One call to the team's endpoint (no key, no image bytes)."""

    task: str
    category: str
    sample: int
    round: int = Field(description="from 1")
    status: choice(*CallStatus.values)
    temperature: Real | None
    seed: int | None
    http_status: int | None
    requests: int = Field(description="HTTP requests sent, retries included")
    latency: Real | None = Field(description="seconds")
    prompt_tokens: int
    completion_tokens: int
    error: str
    text: str = Field(description="the prompt taken from the reply")
    predicted_score: Real | None
    reply: str
    request: list[Any] = Field(description="the messages sent, images replaced by size and hash")
    feedback_score: Real | None
    started_at: DateTime | None
    finished_at: DateTime | None


class Calls(Answer):
    """A page of an endpoint run's call log."""

    id: int
    offset: int
    next_offset: int | None = Field(description="the next page's offset; null: this is the last")
    calls: list[Call]


class Endpoint(Answer):
    """A team's endpoint: never its key, only whether one is set."""

    id: int
    name: str
    model: str
    host: str
    has_key: bool
    parameters: dict[str, Any]
    max_in_flight: int
    archived: bool
    runs_url: str
