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
- enums of answers: the models' TextChoices and the scoring's constants.

What is written here is what only the document says: summaries, the answers' shapes (SCHEMAS: the views build
these dicts) and which statuses each route answers. tests/test_cli.py validates the result and compares its paths
with the URLconf; tests/test_api_declarations.py checks it against the declarations."""

from __future__ import annotations

import re

from django import forms
from django.http import HttpRequest, JsonResponse
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.converters import IntConverter
from django.views.decorators.http import require_safe
from pydantic import BaseModel

from evaluation.models import CallStatus, Origin, Status
from evaluator.judge.scales import SCALES
from evaluator.metrics.coverage import FULL, PARTIAL, WITHHELD
from leaderboard.downloads import BREAKDOWN_FORMATS, BreakdownQuery
from submissions.api import RUN_DEFAULTS, ApiRunForm, ApiSubmitForm, ApiTestForm
from submissions.forms import EndpointForm
from submissions.schemas import CallsQuery, Idempotency
from teams.models import PrompterKind, Weights
from teams.schemas import CardChange, CardNew

from .team_api import BoardsQuery

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
SCALE_WORDS = "the value's scale: " + ", ".join(f"{name} ({scale.label})" for name, scale in SCALES.items())


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
        name: _form_field(field) | ({"default": defaults[name]} if name in defaults else {}) for name, field in form.base_fields.items()
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


SCHEMAS = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {"type": "string"},
            "errors": {"type": "array", "items": {"type": "string"}, "description": "line-numbered problems of a rejected prompt file"},
            "field": {"type": "string", "nullable": True},
            "fields": {"type": "object", "additionalProperties": True},
            "problems": {"type": "integer"},
            "file": {"type": "string"},
        },
    },
    "Figure": {
        "type": "object",
        "description": "a figure with its 95 % interval: `low` and `high` on the figure's own scale, or both null and "
        "`interval_note` saying why there is none (e.g. no task has a score, or the figure is withheld)",
        "properties": {
            "value": {
                "type": "number",
                "nullable": True,
                "description": "on the figure's scale; null when withheld or when no task has a score",
            },
            "scale": {"type": "string", "description": SCALE_WORDS},
            "low": {"type": "number", "nullable": True, "description": "the 95 % interval's lower end, on the figure's scale"},
            "high": {"type": "number", "nullable": True, "description": "the 95 % interval's upper end, on the figure's scale"},
            "interval_note": {
                "type": "string",
                "nullable": True,
                "description": "why `low` and `high` are null, in words; null when the figure has an interval",
            },
            "partial": {"type": "boolean"},
            "withheld": {"type": "boolean"},
            "coverage": {"type": "object", "nullable": True, "properties": {"scored": ID, "planned": ID}},
        },
    },
    "Counts": {
        "type": "object",
        "properties": {"total": ID, "done": ID, "pending": ID, "running": ID, "waiting": ID},
        "additionalProperties": {"type": "integer"},
    },
    "Submission": {
        "type": "object",
        "required": ["id", "status"],
        "properties": {
            "id": ID,
            "status": {"type": "string", "enum": list(Status.values)},
            "error": {"type": "string"},
            "pack": {"type": "string"},
            "status_url": {"type": "string"},
            "page_url": {"type": "string"},
            "progress": {
                "type": "object",
                "properties": {"renders": {"$ref": "#/components/schemas/Counts"}, "judgements": {"$ref": "#/components/schemas/Counts"}},
            },
            "eta": {"type": "object", "nullable": True, "additionalProperties": True},
            "judge": {"type": "string"},
            "judge_version": {"type": "string"},
            "cost": {"type": "object", "additionalProperties": {"type": "integer"}},
            "judge_cost": {
                "type": "object",
                "description": "Judge requests, the tokens the provider reported (cached_prompt_tokens: served by its prompt cache) and "
                "their cost in USD at the deployer's prices: usd as the synchronous route is billed, usd_batch on the batch route; "
                "both null and note 'no prices configured' without prices",
                "properties": {
                    "requests": {"type": "integer"},
                    "prompt_tokens": {"type": "integer"},
                    "cached_prompt_tokens": {"type": "integer"},
                    "completion_tokens": {"type": "integer"},
                    "cached_share": {"type": "number", "nullable": True},
                    "usd": {"type": "number", "nullable": True},
                    "usd_batch": {"type": "number", "nullable": True},
                    "prices": {
                        "type": "object",
                        "nullable": True,
                        "properties": {
                            "input": {"type": "number"},
                            "cached_input": {"type": "number"},
                            "output": {"type": "number"},
                            "batch_discount": {"type": "number"},
                            "source": {"type": "string"},
                        },
                    },
                    "note": {"type": "string"},
                },
            },
            "figures": {
                "type": "object",
                "description": "'scope:key' (overall:overall, category:OE, ...) -> figure",
                "additionalProperties": {"$ref": "#/components/schemas/Figure"},
            },
            "prompter_card": {"type": "integer", "nullable": True, "description": "the id of the team's card for its prompter"},
            "origin": {"type": "string", "enum": list(Origin.values)},
            "condition": {"type": "string"},
            "condition_version": {"type": "string"},
            "warnings": {"type": "array", "items": {"type": "string"}},
            "prompting": {"type": "object", "nullable": True, "additionalProperties": True},
        },
    },
    "Calls": {
        "type": "object",
        "required": ["id", "offset", "next_offset", "calls"],
        "properties": {
            "id": ID,
            "offset": ID,
            "next_offset": {"type": "integer", "nullable": True, "description": "the next page's offset; null: this is the last"},
            "calls": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "task": {"type": "string"},
                        "category": {"type": "string"},
                        "sample": ID,
                        "round": {"type": "integer", "description": "from 1"},
                        "status": {"type": "string", "enum": list(CallStatus.values)},
                        "temperature": {"type": "number", "nullable": True},
                        "seed": {"type": "integer", "nullable": True},
                        "http_status": {"type": "integer", "nullable": True},
                        "requests": {"type": "integer", "description": "HTTP requests sent, retries included"},
                        "latency": {"type": "number", "nullable": True, "description": "seconds"},
                        "prompt_tokens": ID,
                        "completion_tokens": ID,
                        "error": {"type": "string"},
                        "text": {"type": "string", "description": "the prompt taken from the reply"},
                        "predicted_score": {"type": "number", "nullable": True},
                        "reply": {"type": "string"},
                        "request": {"type": "array", "items": {}, "description": "the messages sent, images replaced by size and hash"},
                        "feedback_score": {"type": "number", "nullable": True},
                        "started_at": {"type": "string", "format": "date-time", "nullable": True},
                        "finished_at": {"type": "string", "format": "date-time", "nullable": True},
                    },
                },
            },
        },
    },
    "Endpoint": {
        "type": "object",
        "properties": {
            "id": ID,
            "name": {"type": "string"},
            "model": {"type": "string"},
            "host": {"type": "string"},
            "has_key": {"type": "boolean"},
            "parameters": {"type": "object", "additionalProperties": True},
            "max_in_flight": ID,
            "archived": {"type": "boolean"},
            "runs_url": {"type": "string"},
        },
    },
    "Prompter": {
        "type": "object",
        "required": ["id", "name", "kind", "parameters", "parameters_label", "described", "version", "updated"],
        "properties": {
            "id": ID,
            "name": {"type": "string"},
            "kind": {"type": "string", "enum": [*PrompterKind.values, ""], "description": "'': not described yet"},
            "family": {"type": "string"},
            "weights": {"type": "string", "enum": [*Weights.values, ""]},
            "parameters": {"type": "integer", "nullable": True},
            "parameters_label": {"type": "string", "description": "the count with a unit, e.g. 7B ('' when none)"},
            "paper_url": {"type": "string"},
            "code_url": {"type": "string"},
            "licence": {"type": "string"},
            "description": {"type": "string"},
            "contact": {"type": "string"},
            "described": {"type": "boolean", "description": "false: a card made from a submission's prompter name alone"},
            "version": {"type": "integer", "nullable": True, "description": "the latest version's number"},
            "created": {"type": "string", "format": "date-time"},
            "updated": {"type": "string", "format": "date-time"},
            "versions_url": {"type": "string"},
        },
    },
    "PrompterHistory": {
        "type": "object",
        "required": ["id", "name", "versions"],
        "properties": {
            "id": ID,
            "name": {"type": "string"},
            "versions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["number", "by", "when", "changed", "values"],
                    "properties": {
                        "number": ID,
                        "by": {
                            "type": "string",
                            "description": "a member's name, the API token's name and prefix (\"API token 'ci' (atl_…)\"; 'API token' alone once it is deleted) or 'the platform'",
                        },
                        "when": {"type": "string", "format": "date-time"},
                        "changed": {"type": "array", "items": {"type": "string"}},
                        "values": {"type": "object", "additionalProperties": True, "description": "every field after the change"},
                    },
                },
            },
        },
    },
    "BoardCell": {
        "type": "object",
        "nullable": True,
        "properties": {
            "value": {"type": "number", "nullable": True},
            "scale": {"type": "string"},
            "ci_low": {"type": "number", "nullable": True, "description": "the 95 % interval's lower end, on the cell's scale"},
            "ci_high": {"type": "number", "nullable": True, "description": "the 95 % interval's upper end, on the cell's scale"},
            "standing": {"type": "string", "enum": [FULL, PARTIAL, WITHHELD]},
        },
    },
    "Board": {
        "type": "object",
        "properties": {
            "board": {"type": "string"},
            "pack": {"type": "string"},
            "judge": {"type": "string"},
            "rows": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "rank": {
                            "type": "integer",
                            "nullable": True,
                            "description": "the best place the board's head-to-head decisions allow (1 + the entries decided ahead); null: unranked",
                        },
                        "rank_high": {
                            "type": "integer",
                            "nullable": True,
                            "description": "the worst place they allow (the ranked entries less those it is decided ahead of); equal to rank when decided",
                        },
                        "win_rate": {
                            "type": "number",
                            "nullable": True,
                            "description": "the share of common tasks won against the other ranked entries, ties half (0-1)",
                        },
                        "win_low": {"type": "number", "nullable": True, "description": "the win rate's 95 % interval, lower end (0-1)"},
                        "win_high": {"type": "number", "nullable": True, "description": "the win rate's 95 % interval, upper end (0-1)"},
                        "submission": ID,
                        "prompter": {"type": "string"},
                        "team": {"type": "string"},
                        "condition": {"type": "string"},
                        "overall": {"$ref": "#/components/schemas/BoardCell"},
                        "tasks_covered": ID,
                        "categories": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/BoardCell"}},
                        "origin": {"type": "string", "enum": list(Origin.values)},
                        "card": {
                            "type": "object",
                            "nullable": True,
                            "description": "the entry's prompter card as it was when the entry was published (the contact left out)",
                            "additionalProperties": True,
                        },
                    },
                },
            },
            "filters": {"type": "object", "additionalProperties": {"type": "string"}, "description": "the filters applied"},
            "page": ID,
            "per_page": ID,
            "pages": {"type": "integer", "description": "pages of per_page rows"},
            "count": {"type": "integer", "description": "rows on every page together"},
            "next": {"type": "string", "nullable": True, "description": "the next page's URL (also in the Link header); null on the last"},
        },
    },
}

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
    "components": {"schemas": SCHEMAS, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "security": [{"bearer": []}],
}


@require_safe
def description(request: HttpRequest) -> JsonResponse:
    return JsonResponse({**DESCRIPTION, "paths": paths(), "servers": [{"url": request.build_absolute_uri("/")}]})
