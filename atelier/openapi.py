"""The OpenAPI 3.0 description of the REST API (/api/v1/), served at /api/v1/openapi.json so teams can generate clients
in other languages. Generated, not written out: every request input comes from the declaration its view validates
with, so no parameter name, enum, length or pattern is typed twice.

- paths and path parameters: the URLconf (each /api/v1/ route's converters; a route without an entry in OPERATIONS
  is an error, so a new route cannot go undescribed);
- query parameters, headers and prompter-card bodies: the pydantic models the views validate with (teams/schemas.py,
  submissions/schemas.py, leaderboard/filters.py's FilterQuery, atelier/team_api.py's BoardsQuery), printed with
  model_json_schema;
- upload, endpoint, test-call and run bodies: the Django forms the views validate them with (their fields' types,
  lengths, bounds and choices);
- answers (components/schemas): the pydantic models the views build their JSON through (teams/schemas.py's Answer:
  Submission, Calls and Endpoint in submissions/schemas.py, Error and the prompter cards in teams/schemas.py, Board in
  atelier/team_api.py), printed with models_json_schema in OpenAPI 3.0's dialect; their enums are the models'
  TextChoices and the scoring's constants.

What is written here is what only the document says: summaries, the lists that wrap answers, the two answers still
described loosely (FIELDS: a cancel, a test call) and which statuses each route answers. tests/test_cli.py validates the result and compares its paths
with the URLconf; tests/test_api_declarations.py checks it against the declarations."""

from __future__ import annotations

import re

from django import forms
from django.http import HttpRequest, JsonResponse
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.converters import IntConverter
from django.views.decorators.http import require_safe
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from leaderboard.downloads import BREAKDOWN_FORMATS, BreakdownQuery
from submissions import schemas as answers
from submissions.api import RUN_DEFAULTS, ApiRunForm, ApiSubmitForm, ApiTestForm
from submissions.forms import EndpointForm
from submissions.schemas import CallsQuery, Idempotency
from teams.schemas import CardChange, CardNew, Error, Prompter, PrompterHistory

from .team_api import Board, BoardsQuery

ID = {"type": "integer"}
ERROR = {"$ref": "#/components/schemas/Error"}
API = "api/v1/"


def _json(description: str, schema: dict) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _retry(description: str) -> dict:
    return {
        **_json(description, ERROR),
        "headers": {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait before retrying"}},
    }


CHALLENGE = {
    "WWW-Authenticate": {
        "schema": {"type": "string"},
        "description": 'Bearer realm="AtelierEval API", with error="invalid_token" when a token was sent (RFC 6750)',
    }
}
TOO_LONG = {"414": _json("the path and query are over 4,096 bytes", ERROR)}
UNSTORABLE = {"400": _json("text the site cannot store (NUL, an unpaired surrogate) in the address or a parameter", ERROR)}
VALIDATORS = {  # a public board's answer, and its 304
    "ETag": {"schema": {"type": "string"}},
    "Cache-Control": {"schema": {"type": "string"}, "description": "public, max-age=ATELIER_BOARD_MAX_AGE"},
}
ERRORS = {
    **UNSTORABLE,  # on every route (atelier/unstorable.py); a route's own 400 says what else it refuses
    "401": {**_json("missing or invalid token", ERROR), "headers": CHALLENGE},
    "429": _retry("an invalid token, after too many invalid tokens from this address"),
    "404": _json("not found (or not the token's team's)", ERROR),
    "405": {**_json("method not allowed on this route", ERROR), "headers": {"Allow": {"schema": {"type": "string"}}}},
    **TOO_LONG,
}
CREATES = {  # routes that create a submission
    "422": _json("Idempotency-Key too long, or reused for a different request", ERROR),
    "429": _retry("the team's daily submission cap (or an invalid token, after too many from this address)"),
}
QUEUE_DOWN = {"503": _retry("the work queue is unavailable; nothing was stored")}
FIELDS = {"type": "object", "additionalProperties": True}


def _op(summary: str, responses: dict, **extra) -> dict:
    return {"summary": summary, "responses": {**ERRORS, **responses}, **extra}


# --- request inputs, from their declarations ------------------------------------------------------------------


def declared_schema(model: type[BaseModel]) -> dict:
    """A pydantic declaration's JSON schema as a request may send it, less pydantic's titles (the names say it)."""
    schema = model.model_json_schema(mode="validation")
    if "$defs" in schema:  # the declarations inline their enums (Literal), so the document needs no components of theirs
        raise ValueError(f"{model.__name__}: nested models are not printed; inline the field's schema")
    return _untitled(schema)


def _untitled(schema: dict) -> dict:
    shown = {key: value for key, value in schema.items() if key != "title"}
    if "properties" in shown:
        shown["properties"] = {name: _untitled(field) for name, field in shown["properties"].items()}
    return shown


def parameters(model: type[BaseModel], where: str) -> list[dict]:
    """OpenAPI parameters (in the query, or headers) from a declaration: one per field, by the name it is sent as."""
    schema = declared_schema(model)
    required = set(schema.get("required", ()))
    found = []
    for name, field in schema["properties"].items():
        words = field.pop("description", None)
        found.append(
            {"name": name, "in": where, "required": name in required, "schema": field, **({"description": words} if words else {})}
        )
    return found


def form_schema(form: type[forms.Form], defaults: dict | None = None) -> dict:
    """A form's fields as a JSON object schema: what the form requires (less what `defaults` fills in), each field's
    type, length, bounds and choices."""
    defaults = defaults or {}
    properties = {
        # an optional field takes JSON null as left out (a form field's empty value), so null is declared too
        name: _form_field(field)
        | ({"default": defaults[name]} if name in defaults else {})
        | ({} if field.required else {"nullable": True})
        for name, field in form.base_fields.items()
    }
    required = [name for name, field in form.base_fields.items() if field.required and name not in defaults]
    return {"type": "object", **({"required": required} if required else {}), "properties": properties}


def _form_field(field: forms.Field) -> dict:
    if isinstance(field, forms.FileField):
        schema: dict = {"type": "string", "format": "binary"}
    elif isinstance(field, forms.IntegerField):  # FloatField is one too
        schema = {"type": "number" if isinstance(field, forms.FloatField) else "integer"}
        schema |= {k: v for k, v in (("minimum", field.min_value), ("maximum", field.max_value)) if v is not None}
    elif isinstance(field, forms.BooleanField):  # a form post's checkbox: on, true or 1
        schema = {"type": "boolean"}
    elif isinstance(field, forms.ChoiceField):  # the choices as the site has them now (conditions, backends)
        schema = {"type": "string", "enum": [str(value) for value, _ in field.choices]}
    elif isinstance(field, forms.CharField):
        schema = {
            "type": "string",
            **({"minLength": 1} if field.required else {}),
            **({"maxLength": field.max_length} if field.max_length else {}),
        }
    else:
        raise TypeError(f"no JSON schema for a {type(field).__name__}: add its type to atelier/openapi.py's _form_field")
    return schema | ({"description": str(field.help_text)} if field.help_text else {})


def _form_body(form: type[forms.Form], required: bool = True, defaults: dict | None = None) -> dict:
    """A JSON object or form fields (as on the pages), either way the form's fields."""
    schema = form_schema(form, defaults)
    return {
        "required": required,
        "content": {kind: {"schema": schema} for kind in ("application/json", "application/x-www-form-urlencoded")},
    }


def _json_body(model: type[BaseModel]) -> dict:
    return {"required": True, "content": {"application/json": {"schema": declared_schema(model)}}}


def _path_parameters(pattern) -> list[dict]:
    """A route's path parameters from its converters (<int:…>: a whole number; others text)."""
    found = []
    for name, converter in pattern.converters.items():
        schema = ID if isinstance(converter, IntConverter) else {"type": "string", **({"enum": list(ENUMS[name])} if name in ENUMS else {})}
        found.append({"name": name, "in": "path", "required": True, "schema": schema})
    return found


ENUMS = {"fmt": BREAKDOWN_FORMATS}  # path parameters the view takes from a fixed list


ANSWERS = (  # the answers' declarations; the models they hold (Figure, Counts, BoardCell, ...) come with them
    Error,
    answers.Submission,
    answers.Calls,
    answers.Endpoint,
    Prompter,
    PrompterHistory,
    Board,
)
REF = "#/components/schemas/{model}"


def answer_schemas() -> dict[str, dict]:
    """components/schemas: each answer model's JSON schema (and each model it holds, by its name), as OpenAPI 3.0
    writes it (openapi_schema)."""
    _, found = models_json_schema([(model, "serialization") for model in ANSWERS], ref_template=REF)
    return {name: openapi_schema(schema) for name, schema in found["$defs"].items()}


def openapi_schema(schema: dict) -> dict:
    """A pydantic JSON schema in OpenAPI 3.0's dialect: `anyOf [X, null]` as X with nullable: true (a reference in an
    allOf: 3.0 ignores what stands beside a $ref), no titles, no defaults (they describe inputs), and no
    `additionalProperties: false` (a client must take an answer with a key added later)."""
    shown = {
        key: value
        for key, value in schema.items()
        if key not in ("title", "default") and not (key == "additionalProperties" and value is False)
    }
    if "properties" in shown:
        shown["properties"] = {name: openapi_schema(field) for name, field in shown["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(shown.get(key), dict):
            shown[key] = openapi_schema(shown[key])
    if "anyOf" in shown:
        kinds = [openapi_schema(kind) for kind in shown.pop("anyOf") if kind != {"type": "null"}]
        nullable = len(kinds) < len(schema["anyOf"])
        if len(kinds) != 1:
            raise ValueError(f"no OpenAPI 3.0 schema for anyOf {schema['anyOf']}: declare one type (or it and None)")
        shown = {**shown, **kinds[0], **({"nullable": True} if nullable else {})}
    if "$ref" in shown and len(shown) > 1:
        shown = {**{k: v for k, v in shown.items() if k != "$ref"}, "allOf": [{"$ref": shown["$ref"]}]}
    return shown


# Patterns spell their classes out: `\s` means one set in Python (what the server strips), another in ECMA-262 and
# ASCII alone in some generators (schemathesis reads patterns with re.ASCII).

SUBMISSION = {"$ref": "#/components/schemas/Submission"}
CARD = {"$ref": "#/components/schemas/Prompter"}
CARD_REFUSED = {
    "400": _json("a field refused (named in 'field')", ERROR),
    "409": _json("the team already has a card with that name", ERROR),
}
CARD_LINKS = {  # for schemathesis's stateful phase (and generated clients): a made card's id is the path's prompter_id
    name: {"operationId": operation, "parameters": {"prompter_id": "$response.body#/id"}}
    for name, operation in (("GetCard", "prompterGet"), ("ChangeCard", "prompterChange"), ("CardHistory", "prompterVersions"))
}


def operations() -> dict[str, dict]:
    """Each /api/v1/ route's operations, by the route's name in the URLconf (its path and path parameters come from
    there). Built per request: the forms' choices are the site's conditions and backends as they are now."""
    idempotency = parameters(Idempotency, "header")
    return {
        "api-submit": {
            "post": _op(
                "Upload a prompt file",
                {
                    "201": _json("stored and queued", SUBMISSION),
                    "400": _json("bad fields or a rejected file", ERROR),
                    "413": _json("the file is over the upload limit", ERROR),
                    **CREATES,
                    **QUEUE_DOWN,
                },
                parameters=idempotency,
                requestBody={"required": True, "content": {"multipart/form-data": {"schema": form_schema(ApiSubmitForm)}}},
            )
        },
        "api-status": {"get": _op("A submission's status, progress and figures", {"200": _json("the submission", SUBMISSION)})},
        "api-calls": {
            "get": _op(
                "An endpoint run's call log, 1000 calls a page",
                {
                    "200": _json("a page of calls", {"$ref": "#/components/schemas/Calls"}),
                    "400": _json("offset is not a whole number", ERROR),
                },
                parameters=parameters(CallsQuery, "query"),
            )
        },
        "api-cancel": {"post": _op("Cancel a run under way", {"200": _json("cancelled", FIELDS), "409": _json("already ended", FIELDS)})},
        "api-breakdown": {
            "get": _op(
                "Per-task breakdown (CSV or JSON Lines)",
                {
                    "200": {
                        "description": "the breakdown",
                        "content": {"text/csv": {"schema": {"type": "string"}}, "application/x-ndjson": {"schema": {"type": "string"}}},
                    }
                },
                parameters=parameters(BreakdownQuery, "query"),
            )
        },
        "api-endpoints": {
            "get": _op(
                "The team's endpoints",
                {
                    "200": _json(
                        "endpoints",
                        {
                            "type": "object",
                            "properties": {"endpoints": {"type": "array", "items": {"$ref": "#/components/schemas/Endpoint"}}},
                        },
                    )
                },
            ),
            "post": _op(
                "Register an endpoint",
                {"201": _json("registered", {"$ref": "#/components/schemas/Endpoint"}), "400": _json("refused", ERROR)},
                requestBody=_form_body(EndpointForm),
            ),
        },
        "api-endpoint-test": {
            "post": _op(
                "One test call; nothing stored",
                {"200": _json("the call", FIELDS), "400": _json("refused", ERROR)},
                requestBody=_form_body(ApiTestForm, required=False),
            )
        },
        "api-endpoint-runs": {
            "post": _op(
                "Start a run",
                {"202": _json("started", SUBMISSION), "400": _json("refused", ERROR), **CREATES, **QUEUE_DOWN},
                parameters=idempotency,
                requestBody=_form_body(ApiRunForm, required=False, defaults=RUN_DEFAULTS),
            )
        },
        "api-prompters": {
            "get": _op(
                "The team's prompter cards (the contact included)",
                {
                    "200": _json(
                        "cards",
                        {"type": "object", "required": ["prompters"], "properties": {"prompters": {"type": "array", "items": CARD}}},
                    )
                },
                operationId="prompterList",
            ),
            "post": _op(
                "Describe a prompter (a new card, version 1)",
                {"201": {**_json("made", CARD), "links": CARD_LINKS}, **CARD_REFUSED},
                operationId="prompterCreate",
                requestBody=_json_body(CardNew),
            ),
        },
        "api-prompter": {
            "get": _op("A prompter card", {"200": _json("the card", CARD)}, operationId="prompterGet"),
            "patch": _op(
                "Change a card: only the fields given (a new version when anything changed)",
                {"200": _json("the card after the change", CARD), **CARD_REFUSED},
                operationId="prompterChange",
                requestBody=_json_body(CardChange),
            ),
        },
        "api-prompter-versions": {
            "get": _op(
                "A card's history, oldest first",
                {"200": _json("the versions", {"$ref": "#/components/schemas/PrompterHistory"})},
                operationId="prompterVersions",
            )
        },
        "api-boards": {
            "get": {
                "summary": "A pack's board (public)",
                "security": [],
                "parameters": parameters(BoardsQuery, "query"),
                "responses": {
                    "200": {
                        **_json(
                            "a page of the board's rows (ETag and Last-Modified: send If-None-Match or If-Modified-Since)",
                            {"$ref": "#/components/schemas/Board"},
                        ),
                        "headers": {
                            **VALIDATORS,
                            "Link": {"schema": {"type": "string"}, "description": '<next page URL>; rel="next", unless this is the last'},
                        },
                    },
                    "304": {"description": "unchanged since the ETag or date sent", "headers": VALIDATORS},
                    "400": _json("an unknown query parameter, or a filter or page value nobody could mean", ERROR),
                    "404": _json("no board, or no such page", ERROR),
                    "405": ERRORS["405"],
                    **TOO_LONG,
                },
            }
        },
        "api-openapi": {
            "get": {
                "summary": "This description",
                "security": [],
                "responses": {"200": _json("OpenAPI 3.0", {"type": "object"}), **UNSTORABLE, **TOO_LONG},
            }
        },
    }


def api_routes(patterns: list | None = None, prefix: str = "") -> list[tuple[str, URLPattern]]:
    """(route as written in the URLconf, its pattern) for every route under /api/v1/, includes followed."""
    found = []
    for p in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            found += api_routes(p.url_patterns, route)
        elif isinstance(p, URLPattern) and route.startswith(API):
            found.append((route, p))
    return found


def paths() -> dict[str, dict]:
    """Every /api/v1/ route, as OpenAPI writes paths ({name} for <converter:name>), with its operations."""
    described, found = operations(), {}
    for route, pattern in api_routes():
        if pattern.name not in described:
            raise LookupError(f"/{route} (URL name {pattern.name!r}) has no operations in atelier/openapi.py's operations()")
        path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        in_path = _path_parameters(pattern.pattern)
        found[path] = {
            method: {**operation, "parameters": in_path + operation.get("parameters", [])}
            if in_path or "parameters" in operation
            else operation
            for method, operation in described.pop(pattern.name).items()
        }
    if described:
        raise LookupError(f"operations() describes routes the URLconf lacks: {', '.join(sorted(described))}")
    return found


DESCRIPTION = {
    "openapi": "3.0.3",
    "info": {
        "title": "AtelierEval API",
        "version": "1",
        "description": "Submit prompt files or endpoint runs and follow them. Send 'Authorization: Bearer <token>'; "
        "retry 503 and 429 after Retry-After seconds (send an Idempotency-Key so a retried submit cannot duplicate). "
        "Answers are gzipped for clients that send Accept-Encoding: gzip. docs/api.md has the conventions.",
    },
    "security": [{"bearer": []}],
}
SECURITY = {"bearer": {"type": "http", "scheme": "bearer"}}


@require_safe
def description(request: HttpRequest) -> JsonResponse:
    components = {"schemas": answer_schemas(), "securitySchemes": SECURITY}
    return JsonResponse({**DESCRIPTION, "components": components, "paths": paths(), "servers": [{"url": request.build_absolute_uri("/")}]})
