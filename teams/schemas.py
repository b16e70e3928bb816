"""The API's input declarations, one each: pydantic models that the views validate their query parameters, headers
and JSON bodies with, and that the OpenAPI document (atelier/openapi.py) prints as their JSON schemas. Here: what
every declaration shares (the text patterns, the base model, the refusal in the API's words) and a prompter card as
the API takes it. The other routes' models sit beside their views (submissions/schemas.py, leaderboard/filters.py,
atelier/team_api.py).

The models keep to the JSON Schema that OpenAPI 3.0 takes (no `null` type, no `const`), which
tests/test_cli.py checks by validating the document."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, WithJsonSchema
from pydantic_core import PydanticCustomError

from .forms import PrompterForm
from .models import PrompterKind, Weights
from .services import parameters_parse

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
COUNT_OR_BLANK = rf"^{WS}$|{COUNT}"
NO_NUL = r"^[^\u0000]*$"  # text may not hold NUL (atelier/unstorable.py refuses it, 400)
NAME = rf"^[^\u0000]*{VISIBLE}[^\u0000]*$"  # something besides spaces (text is trimmed)
LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"  # a host name's label, as URLValidator reads it
# http(s) with a host name (Django's URLValidator takes more, e.g. IP addresses; these are the usual ones)
HTTP_URL = rf"^$|^https?://(?:{LABEL}\.){{1,3}}[a-zA-Z]{{2,24}}(?::[0-9]{{1,5}})?(?:[/?#]{VISIBLE}*)?$"
COUNT_WORDS = "a count such as 7B, 350M or 7000000000"
PATTERN_WORDS = {  # a refused pattern, in the API's words
    NO_NUL: "text without NUL characters",
    NAME: "required: something besides spaces",
    COUNT_OR_BLANK: COUNT_WORDS,
    HTTP_URL: "Enter a valid URL. (http or https, with a host name; '' for none)",
}
WHOLE_DIGITS = 9  # a whole number in a query parameter: at most 999,999,999


class Declared(BaseModel):
    """An API input: unknown names refused; patterns read by Python's re, as the server's own checks read text."""

    model_config = ConfigDict(extra="forbid", regex_engine="python-re", frozen=True)


def _whole(value: Any) -> Any:
    """A query parameter's whole number as written: ASCII digits only (no sign, blank or '_', which int() takes)."""
    if isinstance(value, str) and not (value.isascii() and value.isdigit() and len(value) <= WHOLE_DIGITS):
        raise PydanticCustomError("whole", "a whole number of at most {digits} digits", {"digits": WHOLE_DIGITS})
    return value


Whole = Annotated[int, BeforeValidator(_whole)]


def choice(*values: str) -> Any:
    """Literal[values]: one of these strings (the TextChoices' values, spread in by the caller)."""
    return Literal[values]


def refusal(exc: ValidationError, kind: str = "field", model: type[BaseModel] | None = None) -> tuple[str, str | None]:
    """(the message, the field named first) for a declaration's refusal: each problem as 'name: what is wanted, not
    what came' ('; ' between them); unknown names together, first, with the names `model` takes. `kind` says what the
    names are (field, query parameter, header)."""
    errors = exc.errors(include_url=False)
    unknown = sorted(str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden")
    problems = [_problem(e) for e in errors if e["type"] != "extra_forbidden"]
    if unknown:  # JSON names quoted (they may hold anything); query parameter names as they stand in the address
        names = ", ".join(map(repr, unknown)) if kind == "field" else ", ".join(unknown)
        takes = f": this route takes {', '.join(sorted(accepted_names(model)))}" if model else ""
        problems.insert(0, f"unknown {kind}(s) {names}{takes}")
    first = unknown[0] if unknown else next((str(e["loc"][0]) for e in errors if e["loc"]), None)
    return "; ".join(problems), first


def accepted_names(model: type[BaseModel]) -> list[str]:
    """The names a declaration takes, as sent (a header's alias)."""
    return [field.alias or name for name, field in model.model_fields.items()]


def _problem(error: dict) -> str:
    name, kind, ctx, given = ".".join(map(str, error["loc"])), error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "missing":
        return f"{name}: required"
    if kind == "string_too_long":
        return f"{name}: at most {ctx['max_length']:,} characters (it has {len(given):,} characters)"
    if kind == "string_pattern_mismatch":
        return f"{name}: {PATTERN_WORDS.get(ctx['pattern'], 'text matching ' + ctx['pattern'])}"
    if kind == "literal_error":
        return f"{name}: {_shown(given)} is not one of the available choices ({ctx['expected']})"
    if kind == "string_type":
        return f"{name}: text, not {_shown(given)}"
    if kind in ("greater_than_equal", "less_than_equal", "int_parsing", "int_type", "whole"):
        return f"{name}: {error['msg'] if kind == 'whole' else 'a whole number'}, not {_shown(given)}" + _bounds(ctx)
    return f"{name}: {error['msg']}"


def _bounds(ctx: dict) -> str:
    return f" (at least {ctx['ge']:,})" if "ge" in ctx else f" (at most {ctx['le']:,})" if "le" in ctx else ""


def _shown(value: Any) -> str:
    """A refused value, short: as JSON where it can be (what an API client sent), else as Python shows it."""
    try:
        return json.dumps(value)[:40]
    except (TypeError, ValueError):
        return repr(value)[:40]


# --- a prompter card, as the API takes it ----------------------------------------------------------------------
# Lengths are the form's (teams/forms.py, PrompterForm), counted before trimming; the patterns say the rest of what
# the form checks; PrompterForm then checks the card whole (as it would be after the change).


def _most(name: str) -> int:
    return PrompterForm.base_fields[name].max_length


PARAMETERS_MOST = _most("parameters")
PARAMETERS_SCHEMA = {
    "anyOf": [
        {"type": "string", "maxLength": PARAMETERS_MOST, "pattern": COUNT_OR_BLANK, "nullable": True},
        {"type": "integer", "minimum": 1, "maximum": 10**16},
    ],
    "description": "parameter count: a whole number, or text with a unit (7B, 350M, 1.5T); '' or null: none",
}


def _parameters(value: Any) -> str | int | None:
    """PARAMETERS_SCHEMA, checked: null, a whole number (not true/false) or text, each read by parameters_parse."""
    if value is not None and type(value) is not int and not isinstance(value, str):
        raise PydanticCustomError("count_type", "text such as 7B, a whole number or null, not {given}", {"given": _shown(value)})
    if isinstance(value, str) and len(value) > PARAMETERS_MOST:
        raise PydanticCustomError(
            "count_long", "at most {most} characters (it has {n} characters)", {"most": PARAMETERS_MOST, "n": len(value)}
        )
    try:
        parameters_parse(value)
    except ValueError as exc:
        raise PydanticCustomError("count", str(exc).removeprefix("parameters: ")) from exc
    return value


def _unsent(schema: dict) -> None:
    """An optional field's schema without pydantic's `"default": null` (absent means unchanged, not null)."""
    schema.pop("default", None)


def _text(name: str, pattern: str = NO_NUL, description: str | None = None, **extra: Any) -> Any:
    return Field(None, max_length=_most(name), pattern=pattern, description=description, json_schema_extra=_unsent, **extra)


class CardChange(Declared):
    """The fields a PATCH changes, and only those (every one optional)."""

    model_config = ConfigDict(strict=True)  # JSON bodies: text is text (no number read as text)

    name: str = _text("name", NAME, "the display name (not only spaces); submissions under it use the card", min_length=1)
    kind: choice(*PrompterKind.values, "") = Field(None, description="what writes the prompts ('': not said)", json_schema_extra=_unsent)
    family: str = _text("family", description="model family, e.g. Qwen2.5-VL")
    weights: choice(*Weights.values, "") = Field(None, json_schema_extra=_unsent)
    parameters: Annotated[str | int | None, BeforeValidator(_parameters), WithJsonSchema(PARAMETERS_SCHEMA)] = Field(
        None, json_schema_extra=_unsent
    )
    paper_url: str = _text("paper_url", HTTP_URL, "an http(s) URL, or ''")
    code_url: str = _text("code_url", HTTP_URL, "an http(s) URL, or ''")
    licence: str = _text("licence")
    description: str = _text("description", description="plain text (never shown as HTML)")
    contact: str = _text("contact", description="shown to the site's staff only")

    def given(self) -> dict[str, str]:
        """The fields sent, as PrompterForm reads them (a count as its digits, null as blank)."""
        sent = self.model_dump(exclude_unset=True)
        if "parameters" in sent:
            count = parameters_parse(sent["parameters"])
            sent["parameters"] = "" if count is None else str(count)
        return sent


class CardNew(CardChange):
    """A new card: `name` required."""

    name: str = Field(
        max_length=_most("name"),
        min_length=1,
        pattern=NAME,
        description="the display name (not only spaces); submissions under it use the card",
    )


# --- answers ---------------------------------------------------------------------------------------------------
# What the API answers, declared once: the views build their JSON through these models (answer()), and the OpenAPI
# document's components/schemas are their JSON schemas (atelier/openapi.py). Unknown keys are refused, so a view
# cannot answer a key the document does not describe. Values keep their Python types (the view's JSON encoder writes
# them as before): numbers stay as given (Real), dates are the views' ISO 8601 strings (DateTime).


class Answer(BaseModel):
    """An API answer (or part of one)."""

    model_config = ConfigDict(extra="forbid")

    def answer(self) -> dict[str, Any]:
        """The JSON object, as the view sends it: every field given (a field left out stays out, e.g. `prompting`)."""
        return self.model_dump(exclude_unset=True)


Real = Annotated[int | float, WithJsonSchema({"type": "number"})]  # a number as given (an int is not turned into 1.0)
DateTime = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]  # datetime.isoformat()


class Error(Answer):
    """A refusal (every 4xx and 5xx answer): `error` says what was wrong, in words."""

    model_config = ConfigDict(extra="allow")  # a route may add what it found (e.g. the id of the card with that name)

    error: str
    errors: list[str] = Field(None, description="line-numbered problems of a rejected prompt file")
    field: str | None = Field(None, description="the field (or parameter, or header) refused")
    fields: dict[str, Any] = Field(None, description="each refused field's problems")
    problems: int = Field(None, description="how many problems the prompt file has (more than `errors` lists)")
    file: str = Field(None, description="the rejected file's name")


class Prompter(Answer):
    """A prompter card as its own team sees it: every field, the contact included."""

    id: int
    name: str
    kind: choice(*PrompterKind.values, "") = Field(description="'': not described yet")
    family: str
    weights: choice(*Weights.values, "")
    parameters: int | None
    paper_url: str
    code_url: str
    licence: str
    description: str
    contact: str
    parameters_label: str = Field(description="the count with a unit, e.g. 7B ('' when none)")
    described: bool = Field(description="false: a card made from a submission's prompter name alone")
    version: int | None = Field(description="the latest version's number")
    created: DateTime
    updated: DateTime
    versions_url: str


class PrompterVersion(Answer):
    """One saved state of a card."""

    number: int
    by: str = Field(
        description="a member's name, the API token's name and prefix (\"API token 'ci' (atl_…)\"; 'API token' alone once it is "
        "deleted) or 'the platform'"
    )
    when: DateTime
    changed: list[str]
    values: dict[str, Any] = Field(description="every field after the change")


class PrompterHistory(Answer):
    """A card's history, oldest first."""

    id: int
    name: str
    versions: list[PrompterVersion]
