"""The token API's query parameters and headers, declared once (pydantic): submissions/api.py validates with these
and atelier/openapi.py prints them (teams/schemas.py says how). Its bodies are declared by the forms the views
validate them with (submissions/api.py: ApiSubmitForm, ApiEndpointForm, ApiTestForm, ApiRunForm), read into the
document the same way."""

from __future__ import annotations

from django.http import HttpRequest
from pydantic import BaseModel, ConfigDict, Field

from teams.schemas import Declared, Whole

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
