"""An OpenAPI 3.0 description of the REST API (/api/v1/), served at /api/v1/openapi.json so teams can generate clients
in other languages. Written out by hand; tests/test_cli.py validates it and checks every /api/v1/ route is described."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe

from evaluation.models import CallStatus, Origin, Status
from evaluator.judge.scales import SCALES
from teams.models import PrompterKind, Weights

ID = {"type": "integer"}
ERROR = {"$ref": "#/components/schemas/Error"}


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
    "422": _json("Idempotency-Key over 200 characters, or reused for a different request", ERROR),
    "429": _retry("the team's daily submission cap (or an invalid token, after too many from this address)"),
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
SCALE_WORDS = "the value's scale: " + ", ".join(f"{name} ({scale.label})" for name, scale in SCALES.items())


def _path_id(name: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": ID}


def _op(summary: str, responses: dict, **extra) -> dict:
    return {"summary": summary, "responses": {**ERRORS, **responses}, **extra}


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
                        "origin": {"type": "string"},
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
WS = r"[\t-\r ]*"  # blanks every reader agrees the server strips
SPACES = r"\t-\r\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"  # str.isspace(), and ECMA's BOM
VISIBLE = rf"[^\u0000{SPACES}]"  # neither blank nor NUL
# A parameter count from 1 to 10^16, as teams.services.parameters_parse reads it: a whole part from 1 with at most as
# many digits as its unit allows (16 plain, 13 K, 10 M, 7 B, 4 T), so 0 and counts over 10^16 (refused, 400) never match.
COUNT = (
    rf"^{WS}0*[1-9](?:[0-9]{{0,15}}(?:\.[0-9]+)?|[0-9]{{0,12}}(?:\.[0-9]+)?{WS}[Kk]|[0-9]{{0,9}}(?:\.[0-9]+)?{WS}[Mm]"
    rf"|[0-9]{{0,6}}(?:\.[0-9]+)?{WS}[Bb]|[0-9]{{0,3}}(?:\.[0-9]+)?{WS}[Tt]){WS}$"
)
NO_NUL = r"^[^\u0000]*$"  # text may not hold NUL (atelier/unstorable.py refuses it, 400)
BOARD_FILTERS = [
    {"name": "kind", "in": "query", "required": False, "schema": {"type": "string", "enum": ["mllm", "human", "rule", "agent", "other"]}},
    {"name": "weights", "in": "query", "required": False, "schema": {"type": "string", "enum": ["open", "closed"]}},
    {
        "name": "params_min",
        "in": "query",
        "required": False,
        "description": "at least this many parameters: a count such as 7B, 350M or 7000000000",
        "schema": {"type": "string", "pattern": COUNT},
    },
    {
        "name": "params_max",
        "in": "query",
        "required": False,
        "description": "at most this many parameters",
        "schema": {"type": "string", "pattern": COUNT},
    },
    {"name": "origin", "in": "query", "required": False, "schema": {"type": "string", "enum": ["file", "endpoint", "human"]}},
    {
        "name": "q",
        "in": "query",
        "required": False,
        "description": "words to find in prompter names, families and teams",
        "schema": {"type": "string", "pattern": NO_NUL},
    },
    {
        "name": "described",
        "in": "query",
        "required": False,
        "description": "1: hide entries without a card",
        "schema": {"type": "string", "enum": ["1"]},
    },
]

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
# A prompter card as the API takes it: the lengths are the form's (teams/forms.py, PrompterForm), counted before trimming;
# the patterns say the rest of what the form checks (each refused with a 400 naming the field): no NUL in any text, a
# name with something besides spaces (text is trimmed), parameters as a count (7B, 350M, 1.5T) or blank, and URLs that
# are http(s) with a host name (Django's URLValidator takes more, e.g. IP addresses; these are the usual ones).
CARD_TEXT = {"type": "string", "pattern": NO_NUL}
LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"  # a host name's label, as URLValidator reads it
HTTP_URL = rf"^$|^https?://(?:{LABEL}\.){{1,3}}[a-zA-Z]{{2,24}}(?::[0-9]{{1,5}})?(?:[/?#]{VISIBLE}*)?$"
CARD_INPUT = {
    "name": {
        "type": "string",
        "minLength": 1,
        "maxLength": 200,
        "pattern": rf"^[^\u0000]*{VISIBLE}[^\u0000]*$",
        "description": "the display name (not only spaces); submissions under it use the card",
    },
    "kind": {"type": "string", "enum": [*PrompterKind.values, ""], "description": "what writes the prompts ('': not said)"},
    "family": {**CARD_TEXT, "maxLength": 100, "description": "model family, e.g. Qwen2.5-VL"},
    "weights": {"type": "string", "enum": [*Weights.values, ""]},
    "parameters": {
        "anyOf": [
            {"type": "string", "maxLength": 20, "pattern": rf"^{WS}$|{COUNT}", "nullable": True},
            {"type": "integer", "minimum": 1, "maximum": 10**16},
        ],
        "description": "parameter count: a whole number, or text with a unit (7B, 350M, 1.5T); '' or null: none",
    },
    "paper_url": {"type": "string", "maxLength": 500, "pattern": HTTP_URL, "description": "an http(s) URL, or ''"},
    "code_url": {"type": "string", "maxLength": 500, "pattern": HTTP_URL, "description": "an http(s) URL, or ''"},
    "licence": {**CARD_TEXT, "maxLength": 100},
    "description": {**CARD_TEXT, "maxLength": 600, "description": "plain text (never shown as HTML)"},
    "contact": {**CARD_TEXT, "maxLength": 200, "description": "shown to the site's staff only"},
}
CARD_CHANGE = {"type": "object", "properties": CARD_INPUT, "additionalProperties": False}
CARD_NEW = {**CARD_CHANGE, "required": ["name"]}
PROMPTER_ID = [_path_id("prompter_id")]
CARD = {"$ref": "#/components/schemas/Prompter"}
CARD_REFUSED = {
    "400": _json("a field refused (named in 'field')", ERROR),
    "409": _json("the team already has a card with that name", ERROR),
}
CARD_LINKS = {  # for schemathesis's stateful phase (and generated clients): a made card's id is the path's prompter_id
    name: {"operationId": operation, "parameters": {"prompter_id": "$response.body#/id"}}
    for name, operation in (("GetCard", "prompterGet"), ("ChangeCard", "prompterChange"), ("CardHistory", "prompterVersions"))
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
            {"200": _json("a page of calls", {"$ref": "#/components/schemas/Calls"}), "400": _json("offset is not a whole number", ERROR)},
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
    "/api/v1/prompters": {
        "get": _op(
            "The team's prompter cards (the contact included)",
            {
                "200": _json(
                    "cards", {"type": "object", "required": ["prompters"], "properties": {"prompters": {"type": "array", "items": CARD}}}
                )
            },
            operationId="prompterList",
        ),
        "post": _op(
            "Describe a prompter (a new card, version 1)",
            {"201": {**_json("made", CARD), "links": CARD_LINKS}, **CARD_REFUSED},
            operationId="prompterCreate",
            requestBody={"required": True, "content": {"application/json": {"schema": CARD_NEW}}},
        ),
    },
    "/api/v1/prompters/{prompter_id}": {
        "get": _op("A prompter card", {"200": _json("the card", CARD)}, parameters=PROMPTER_ID, operationId="prompterGet"),
        "patch": _op(
            "Change a card: only the fields given (a new version when anything changed)",
            {"200": _json("the card after the change", CARD), **CARD_REFUSED},
            parameters=PROMPTER_ID,
            operationId="prompterChange",
            requestBody={"required": True, "content": {"application/json": {"schema": CARD_CHANGE}}},
        ),
    },
    "/api/v1/prompters/{prompter_id}/versions": {
        "get": _op(
            "A card's history, oldest first",
            {"200": _json("the versions", {"$ref": "#/components/schemas/PrompterHistory"})},
            parameters=PROMPTER_ID,
            operationId="prompterVersions",
        )
    },
    "/api/v1/boards": {
        "get": {
            "summary": "A pack's board (public)",
            "security": [],
            "parameters": [
                {"name": "pack", "in": "query", "required": True, "schema": {"type": "string", "pattern": NO_NUL}},
                {"name": "judge", "in": "query", "required": False, "schema": {"type": "string", "pattern": NO_NUL}},
                *BOARD_FILTERS,
                {"name": "page", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 999999999}},
                {
                    "name": "per_page",
                    "in": "query",
                    "required": False,
                    "description": "rows a page (default 500)",
                    "schema": {"type": "integer", "minimum": 1, "maximum": 500},
                },
            ],
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
    "/api/v1/openapi.json": {
        "get": {
            "summary": "This description",
            "security": [],
            "responses": {"200": _json("OpenAPI 3.0", {"type": "object"}), **UNSTORABLE, **TOO_LONG},
        }
    },
}

DESCRIPTION = {
    "openapi": "3.0.3",
    "info": {
        "title": "AtelierEval API",
        "version": "1",
        "description": "Submit prompt files or endpoint runs and follow them. Send 'Authorization: Bearer <token>'; "
        "retry 503 and 429 after Retry-After seconds (send an Idempotency-Key so a retried submit cannot duplicate). "
        "Answers are gzipped for clients that send Accept-Encoding: gzip. docs/api.md has the conventions.",
    },
    "paths": PATHS,
    "components": {"schemas": SCHEMAS, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "security": [{"bearer": []}],
}


@require_safe
def description(request: HttpRequest) -> JsonResponse:
    return JsonResponse({**DESCRIPTION, "servers": [{"url": request.build_absolute_uri("/")}]})
