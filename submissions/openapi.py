"""An OpenAPI 3.0 description of the REST API (/api/v1/), served at /api/v1/openapi.json so teams can generate clients
in other languages. Written out by hand; tests/test_cli.py validates it and checks every /api/v1/ route is described."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe

from evaluation.models import Origin, Status

ID = {"type": "integer"}
ERROR = {"$ref": "#/components/schemas/Error"}


def _json(description: str, schema: dict) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _retry(description: str) -> dict:
    return {
        **_json(description, ERROR),
        "headers": {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait before retrying"}},
    }


ERRORS = {
    "401": _json("missing or invalid token", ERROR),
    "429": _retry("too many invalid tokens from this address"),
    "404": _json("not found (or not the token's team's)", ERROR),
    "405": {**_json("method not allowed on this route", ERROR), "headers": {"Allow": {"schema": {"type": "string"}}}},
}
CREATES = {  # routes that create a submission
    "422": _json("Idempotency-Key over 200 characters, or reused for a different request", ERROR),
    "429": _retry("the team's daily submission cap (or too many invalid tokens from this address)"),
}
QUEUE_DOWN = {"503": _retry("the work queue is unavailable; nothing was stored")}
IDEMPOTENCY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "schema": {"type": "string", "maxLength": 200},
    "description": "a retry with the same key returns the same submission instead of a second one",
}
FIELDS = {"type": "object", "additionalProperties": True, "description": "JSON object (or form fields, as on the pages)"}


def _path_id(name: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": ID}


def _op(summary: str, responses: dict, **extra) -> dict:
    return {"summary": summary, "responses": {**responses, **ERRORS}, **extra}


SUBMISSION_ID = [_path_id("submission_id")]
ENDPOINT_ID = [_path_id("endpoint_id")]

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
        "properties": {
            "value": {"type": "number", "nullable": True},
            "scale": {"type": "string"},
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
            "figures": {
                "type": "object",
                "description": "'scope:key' (overall:overall, category:OE, ...) -> figure",
                "additionalProperties": {"$ref": "#/components/schemas/Figure"},
            },
            "origin": {"type": "string", "enum": list(Origin.values)},
            "condition": {"type": "string"},
            "condition_version": {"type": "string"},
            "warnings": {"type": "array", "items": {"type": "string"}},
            "prompting": {"type": "object", "nullable": True, "additionalProperties": True},
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
    "BoardCell": {
        "type": "object",
        "nullable": True,
        "properties": {
            "value": {"type": "number", "nullable": True},
            "scale": {"type": "string"},
            "ci_low": {"type": "number", "nullable": True},
            "ci_high": {"type": "number", "nullable": True},
            "standing": {"type": "string", "enum": ["full", "partial", "withheld"]},
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
                        "rank": {"type": "integer", "nullable": True},
                        "submission": ID,
                        "prompter": {"type": "string"},
                        "team": {"type": "string"},
                        "condition": {"type": "string"},
                        "overall": {"$ref": "#/components/schemas/BoardCell"},
                        "tasks_covered": ID,
                        "categories": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/BoardCell"}},
                    },
                },
            },
        },
    },
}

UPLOAD = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file", "prompter"],
                "properties": {
                    "file": {"type": "string", "format": "binary"},
                    "prompter": {"type": "string", "minLength": 1, "maxLength": 200},
                    "condition": {"type": "string"},
                    "pack": {"type": "string", "description": "name or name@version; default: the newest pack"},
                },
            }
        }
    },
}
BODY = {"required": False, "content": {"application/json": {"schema": FIELDS}, "application/x-www-form-urlencoded": {"schema": FIELDS}}}
SUBMISSION = {"$ref": "#/components/schemas/Submission"}
ENDPOINT_FIELDS = {
    "type": "object",
    "required": ["name", "base_url", "model"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "base_url": {"type": "string", "format": "uri", "description": "an OpenAI-compatible base URL (public address)"},
        "model": {"type": "string", "minLength": 1},
        "api_key": {"type": "string", "description": "stored encrypted, never shown again"},
    },
    "additionalProperties": True,
}
ENDPOINT_BODY = {
    "required": True,
    "content": {"application/json": {"schema": ENDPOINT_FIELDS}, "application/x-www-form-urlencoded": {"schema": ENDPOINT_FIELDS}},
}

PATHS = {
    "/api/v1/submissions": {
        "post": _op(
            "Upload a prompt file",
            {
                "201": _json("stored and queued", SUBMISSION),
                "400": _json("bad fields or a rejected file", ERROR),
                "413": _json("the file is over the upload limit", ERROR),
                **CREATES,
                **QUEUE_DOWN,
            },
            parameters=[IDEMPOTENCY],
            requestBody=UPLOAD,
        )
    },
    "/api/v1/submissions/{submission_id}": {
        "get": _op("A submission's status, progress and figures", {"200": _json("the submission", SUBMISSION)}, parameters=SUBMISSION_ID)
    },
    "/api/v1/submissions/{submission_id}/calls": {
        "get": _op(
            "An endpoint run's call log, 1000 calls a page",
            {
                "200": _json("a page of calls", {"type": "object", "additionalProperties": True}),
                "400": _json("offset is not a whole number", ERROR),
            },
            parameters=[
                *SUBMISSION_ID,
                {"name": "offset", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0, "maximum": 999999999}},
            ],
        )
    },
    "/api/v1/submissions/{submission_id}/cancel": {
        "post": _op(
            "Cancel a run under way", {"200": _json("cancelled", FIELDS), "409": _json("already ended", FIELDS)}, parameters=SUBMISSION_ID
        )
    },
    "/api/v1/submissions/{submission_id}/breakdown.{fmt}": {
        "get": _op(
            "Per-task breakdown (CSV or JSON Lines)",
            {
                "200": {
                    "description": "the breakdown",
                    "content": {"text/csv": {"schema": {"type": "string"}}, "application/x-ndjson": {"schema": {"type": "string"}}},
                }
            },
            parameters=[
                *SUBMISSION_ID,
                {"name": "fmt", "in": "path", "required": True, "schema": {"type": "string", "enum": ["csv", "jsonl"]}},
                {"name": "judge", "in": "query", "required": False, "schema": {"type": "string"}},
            ],
        )
    },
    "/api/v1/endpoints": {
        "get": _op(
            "The team's endpoints",
            {
                "200": _json(
                    "endpoints",
                    {"type": "object", "properties": {"endpoints": {"type": "array", "items": {"$ref": "#/components/schemas/Endpoint"}}}},
                )
            },
        ),
        "post": _op(
            "Register an endpoint",
            {"201": _json("registered", {"$ref": "#/components/schemas/Endpoint"}), "400": _json("refused", ERROR)},
            requestBody=ENDPOINT_BODY,
        ),
    },
    "/api/v1/endpoints/{endpoint_id}/test": {
        "post": _op(
            "One test call; nothing stored",
            {"200": _json("the call", FIELDS), "400": _json("refused", ERROR)},
            parameters=ENDPOINT_ID,
            requestBody=BODY,
        )
    },
    "/api/v1/endpoints/{endpoint_id}/runs": {
        "post": _op(
            "Start a run",
            {"202": _json("started", SUBMISSION), "400": _json("refused", ERROR), **CREATES, **QUEUE_DOWN},
            parameters=[*ENDPOINT_ID, IDEMPOTENCY],
            requestBody=BODY,
        )
    },
    "/api/v1/boards": {
        "get": {
            "summary": "A pack's board (public)",
            "security": [],
            "parameters": [
                {"name": "pack", "in": "query", "required": True, "schema": {"type": "string"}},
                {"name": "judge", "in": "query", "required": False, "schema": {"type": "string"}},
            ],
            "responses": {
                "200": _json(
                    "the board's rows (ETag and Last-Modified: send If-None-Match or If-Modified-Since)",
                    {"$ref": "#/components/schemas/Board"},
                ),
                "304": {"description": "unchanged since the ETag or date sent"},
                "400": _json("a query parameter other than pack and judge", ERROR),
                "404": _json("no board", ERROR),
                "405": ERRORS["405"],
            },
        }
    },
    "/api/v1/openapi.json": {
        "get": {"summary": "This description", "security": [], "responses": {"200": _json("OpenAPI 3.0", {"type": "object"})}}
    },
}

DESCRIPTION = {
    "openapi": "3.0.3",
    "info": {
        "title": "AtelierEval API",
        "version": "1",
        "description": "Submit prompt files or endpoint runs and follow them. Send 'Authorization: Bearer <token>'; "
        "retry 503 and 429 after Retry-After seconds (send an Idempotency-Key so a retried submit cannot duplicate).",
    },
    "paths": PATHS,
    "components": {"schemas": SCHEMAS, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "security": [{"bearer": []}],
}


@require_safe
def description(request: HttpRequest) -> JsonResponse:
    return JsonResponse({**DESCRIPTION, "servers": [{"url": request.build_absolute_uri("/")}]})
