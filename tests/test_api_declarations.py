"""The API contract has one source (issue 43): /api/v1/openapi.json is generated from the declarations the views
validate with (pydantic models, the API's forms, the URLconf and the models' TextChoices), and the views refuse what
those declarations refuse, with a 400 naming the field."""

from __future__ import annotations

import json

import pytest
from django.test import RequestFactory
from pydantic import Field, ValidationError

from atelier import openapi
from atelier.team_api import BOARD_ROWS_MAX, Board, BoardCell, BoardRow, BoardsQuery
from evaluation.models import CallStatus, JudgeRoute, Origin, Status, Submission, UnitStatus
from leaderboard.filters import FILTER_PARAMS, FilterQuery
from submissions import schemas as answers
from submissions.api import ApiRunForm, ApiSubmitForm
from submissions.forms import EndpointForm
from submissions.services import token_create
from teams.forms import PrompterForm
from teams.models import CARD_FIELDS, Prompter, PrompterKind, Weights
from teams.schemas import CardNew, PrompterHistory, PrompterVersion, choice
from teams.schemas import Prompter as CardAnswer


def document() -> dict:
    return json.loads(openapi.description(RequestFactory().get("/api/v1/openapi.json")).content)


def parameters(doc: dict, path: str, method: str = "get") -> dict[str, dict]:
    return {p["name"]: p for p in doc["paths"][path][method].get("parameters", [])}


@pytest.fixture
def token(team) -> str:
    return token_create(team=team, name="declarations")[1]


def test_the_documents_enums_are_the_text_choices():
    doc = document()
    schemas = doc["components"]["schemas"]
    assert schemas["Submission"]["properties"]["status"]["enum"] == list(Status.values)
    assert schemas["Submission"]["properties"]["origin"]["enum"] == list(Origin.values)
    assert schemas["Submission"]["properties"]["judge_route"]["enum"] == list(JudgeRoute.values)
    assert schemas["Calls"]["properties"]["calls"]["items"] == {"$ref": "#/components/schemas/Call"}
    assert schemas["Call"]["properties"]["status"]["enum"] == list(CallStatus.values)
    assert list(schemas["Counts"]["properties"])[: len(UnitStatus.values)] == list(UnitStatus.values)
    assert schemas["BoardRow"]["properties"]["origin"]["enum"] == list(Origin.values)
    board = parameters(doc, "/api/v1/boards")
    for name, choices in (("kind", PrompterKind), ("weights", Weights), ("origin", Origin)):
        assert board[name]["schema"]["enum"] == ["", *choices.values], name
    card = doc["paths"]["/api/v1/prompters"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert card["properties"]["kind"]["enum"] == [*PrompterKind.values, ""]


def test_the_documents_parameters_and_bodies_are_the_declarations_fields():
    doc = document()
    assert list(parameters(doc, "/api/v1/boards")) == list(BoardsQuery.model_fields) and set(FILTER_PARAMS) < set(BoardsQuery.model_fields)
    assert parameters(doc, "/api/v1/boards")["per_page"]["schema"]["maximum"] == BOARD_ROWS_MAX
    card = doc["paths"]["/api/v1/prompters/{prompter_id}"]["patch"]["requestBody"]["content"]["application/json"]["schema"]
    assert list(card["properties"]) == list(CARD_FIELDS) and card["additionalProperties"] is False
    for name in set(CARD_FIELDS) - {"kind", "weights", "parameters"}:  # the lengths are the page form's (those three: enums, anyOf)
        assert card["properties"][name]["maxLength"] == PrompterForm.base_fields[name].max_length, name
    assert card["properties"]["parameters"]["anyOf"][0]["maxLength"] == PrompterForm.base_fields["parameters"].max_length
    upload = doc["paths"]["/api/v1/submissions"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert list(upload["properties"]) == list(ApiSubmitForm.base_fields) and upload["required"] == ["file", "prompter"]
    assert upload["properties"]["judge_by_batch"] == {
        "type": "boolean",
        "nullable": True,  # an optional form field takes null as left out (schemathesis sent it and flagged the 202)
        "description": ApiSubmitForm.base_fields["judge_by_batch"].help_text,
    }
    endpoint = doc["paths"]["/api/v1/endpoints"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert list(endpoint["properties"]) == list(EndpointForm.base_fields) and endpoint["properties"]["top_p"]["maximum"] == 1
    run = doc["paths"]["/api/v1/endpoints/{endpoint_id}/runs"]["post"]
    assert list(run["requestBody"]["content"]["application/json"]["schema"]["properties"]) == list(ApiRunForm.base_fields)
    assert "judge_by_batch" in ApiRunForm.base_fields  # the API's choice of route, whatever ATELIER_JUDGE_BATCH says
    assert "Idempotency-Key" in parameters(doc, "/api/v1/endpoints/{endpoint_id}/runs", "post")
    breakdown = parameters(doc, "/api/v1/submissions/{submission_id}/breakdown.{fmt}")
    assert breakdown["submission_id"]["schema"] == {"type": "integer"} and breakdown["fmt"]["schema"]["enum"] == ["csv", "jsonl"]


def test_a_new_filter_or_choice_reaches_the_document_without_editing_it(monkeypatch):
    class Widened(BoardsQuery):  # as if leaderboard/filters.py had gained a filter, and teams.models a kind
        licence: choice("", "apache-2.0", "mit") = ""
        kind: choice("", *PrompterKind.values, "ensemble") = ""

    monkeypatch.setattr(openapi, "BoardsQuery", Widened)
    board = parameters(document(), "/api/v1/boards")
    assert board["licence"]["schema"]["enum"] == ["", "apache-2.0", "mit"] and "ensemble" in board["kind"]["schema"]["enum"]


def test_every_api_route_needs_operations_and_every_operation_a_route(monkeypatch):
    described = openapi.operations()
    monkeypatch.setattr(openapi, "operations", lambda: {k: v for k, v in described.items() if k != "api-cancel"})
    with pytest.raises(LookupError, match=r"/api/v1/submissions/<int:submission_id>/cancel"):
        openapi.paths()
    monkeypatch.setattr(openapi, "operations", lambda: {**described, "api-gone": {"get": {}}})
    with pytest.raises(LookupError, match="api-gone"):
        openapi.paths()


def refused(model, data: dict) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return True
    return False


BOARD_QUERIES = [
    {"kind": "mllm"},
    {"kind": "wizard"},
    {"kind": ""},
    {"weights": "half"},
    {"origin": "endpoint"},
    {"origin": "File"},
    {"params_min": "7B"},
    {"params_min": "0"},
    {"params_max": "seven"},
    {"described": "1"},
    {"described": "yes"},
    {"page": "2"},
    {"page": "0"},
    {"page": "+2"},
    {"page": "1_0"},
    {"per_page": "500"},
    {"per_page": "501"},
    {"sort": "overall"},
    {"judge": "any"},
]


@pytest.mark.parametrize("query", BOARD_QUERIES, ids=lambda q: "&".join(f"{k}={v}" for k, v in q.items()))
def test_boards_refuses_exactly_what_its_declaration_refuses(db, client, query):
    """A pack with no board: a query the declaration takes is a 404 (nothing to show), one it refuses a 400."""
    sent = {"pack": "no-such-pack", **query}
    response = client.get("/api/v1/boards", sent)
    assert response.status_code == (400 if refused(BoardsQuery, sent) else 404), response.content
    if response.status_code == 400:
        assert response.json()["field"] == next(iter(query))
    assert refused(FilterQuery, {k: v for k, v in query.items() if k in FILTER_PARAMS}) == (
        response.status_code == 400 and next(iter(query)) in FILTER_PARAMS
    )


CARD_VALUES = [
    ("name", ""),
    ("name", " \t"),
    ("name", "x" * 201),
    ("kind", "wizard"),
    ("kind", ""),
    ("weights", "half"),
    ("family", 3),
    ("parameters", "7B"),
    ("parameters", 7.5),
    ("parameters", True),
    ("parameters", "x" * 21),
    ("paper_url", "javascript:alert(1)"),
    ("code_url", "https://example.org/code"),
    ("licence", "x" * 101),
    ("homepage", "https://example.org"),
]


@pytest.mark.parametrize("field, value", CARD_VALUES, ids=lambda v: repr(v)[:30])
def test_a_card_the_declaration_refuses_is_a_400_naming_the_field(db, client, token, field, value):
    card = {"name": "declared", **{field: value}}
    response = client.post("/api/v1/prompters", json.dumps(card), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    if refused(CardNew, card):
        assert response.status_code == 400 and response.json()["field"] == field, response.content
        assert not Prompter.objects.exists()
    else:
        assert response.status_code == 201, response.content


def test_headers_and_query_parameters_follow_their_declarations(db, client, token, team, sample_pack):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from submissions.schemas import IDEMPOTENCY_KEY_MAX

    upload = {"file": SimpleUploadedFile("p.jsonl", b'{"task_id": "oe-s01", "prompt": "a red sun"}\n'), "prompter": "p"}
    long = client.post(
        "/api/v1/submissions", upload, HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_IDEMPOTENCY_KEY="k" * (IDEMPOTENCY_KEY_MAX + 1)
    )
    assert long.status_code == 422 and long.json()["field"] == "Idempotency-Key"
    declared = parameters(document(), "/api/v1/submissions", "post")["Idempotency-Key"]
    assert declared["in"] == "header" and declared["schema"]["maxLength"] == IDEMPOTENCY_KEY_MAX
    offset = parameters(document(), "/api/v1/submissions/{submission_id}/calls")["offset"]["schema"]
    calls = f"/api/v1/submissions/{Submission.objects.create(team=team, pack=sample_pack, prompter='p', status='done').pk}/calls"
    for given, status in ((offset["maximum"], 200), (offset["maximum"] + 1, 400), (offset["minimum"] - 1, 400), ("1e3", 400)):
        answer = client.get(calls, {"offset": str(given)}, HTTP_AUTHORIZATION=f"Bearer {token}")
        assert answer.status_code == status and (status == 200 or answer.json()["field"] == "offset"), (given, answer.content)


# --- answers: declared once (pydantic), built through the declarations, printed from them ----------------------

ANSWER_MODELS = {  # every component of the document, by name: the answer models and the models they hold
    model.__name__: model
    for model in (
        *openapi.ANSWERS,
        answers.Figure,
        answers.Coverage,
        answers.Counts,
        answers.Progress,
        answers.Eta,
        answers.Cost,
        answers.JudgeCost,
        answers.Prices,
        answers.Call,
        PrompterVersion,
        BoardRow,
        BoardCell,
    )
}


def walk(schema):
    yield schema
    for value in schema.values() if isinstance(schema, dict) else schema if isinstance(schema, list) else ():
        yield from walk(value)


def test_the_documents_answer_schemas_are_the_answer_models_in_openapi_3_0():
    schemas = document()["components"]["schemas"]
    assert set(schemas) == set(ANSWER_MODELS)
    for name, model in ANSWER_MODELS.items():
        assert list(schemas[name]["properties"]) == list(model.model_fields), name
        required = [field for field, info in model.model_fields.items() if info.is_required()]
        assert schemas[name].get("required", []) == required, name
    nodes = list(walk(schemas))
    assert not [n for n in nodes if isinstance(n, dict) and ("anyOf" in n or "title" in n or "$defs" in n)]  # 3.0: no anyOf null
    assert not [n for n in nodes if isinstance(n, dict) and "$ref" in n and len(n) > 1]  # 3.0 ignores what stands beside a $ref
    figure = schemas["Figure"]["properties"]
    assert figure["value"] == {"type": "number", "nullable": True, "description": answers.Figure.model_fields["value"].description}
    assert figure["coverage"] == {"nullable": True, "allOf": [{"$ref": "#/components/schemas/Coverage"}]}
    assert schemas["Submission"]["properties"]["figures"]["additionalProperties"] == {"$ref": "#/components/schemas/Figure"}
    assert schemas["Call"]["properties"]["started_at"] == {"type": "string", "format": "date-time", "nullable": True}
    assert "prompting" not in schemas["Submission"]["required"] and "judge_route" in schemas["Submission"]["required"]


def test_a_field_added_to_an_answer_model_appears_in_the_document(monkeypatch):
    class Endpoint(answers.Endpoint):  # as if submissions/schemas.py's Endpoint had gained a field
        region: str | None = Field(description="where the endpoint answers from")

    monkeypatch.setattr(openapi, "ANSWERS", tuple(Endpoint if m is answers.Endpoint else m for m in openapi.ANSWERS))
    shown = document()["components"]["schemas"]["Endpoint"]
    assert shown["properties"]["region"] == {"type": "string", "nullable": True, "description": "where the endpoint answers from"}
    assert "region" in shown["required"]


def test_the_views_answers_are_the_models(db, client, token, team, sample_pack, example_prompts, settings):
    """Every answer the views send validates against its model (which refuses a key it does not declare), and the
    values keep the formats the API had before the models (dates as datetime.isoformat() writes them)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from submissions.services import submissions_publish

    def got(response, model):
        assert response.status_code in (200, 201), response.content
        body = response.json()
        model.model_validate(body)
        return body

    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    upload = {"file": SimpleUploadedFile("p.jsonl", example_prompts), "prompter": "m", "pack": "sample"}
    made = got(client.post("/api/v1/submissions", upload, **bearer), answers.Submission)
    status = got(client.get(made["status_url"], **bearer), answers.Submission)
    assert "prompting" not in status and status["figures"] and status["judge_route"] == "sync"
    got(client.get(f"/api/v1/submissions/{made['id']}/calls", **bearer), answers.Calls)
    card = got(client.get(f"/api/v1/prompters/{status['prompter_card']}", **bearer), CardAnswer)
    stored = Prompter.objects.get(pk=card["id"])
    assert (card["created"], card["updated"]) == (stored.created.isoformat(), stored.updated.isoformat())
    history = got(client.get(card["versions_url"], **bearer), PrompterHistory)
    assert history["versions"][0]["when"] == stored.versions.get(number=1).created.isoformat()
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)
    sent = {"name": "e", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    endpoint = got(client.post("/api/v1/endpoints", json.dumps(sent), content_type="application/json", **bearer), answers.Endpoint)
    assert client.get("/api/v1/endpoints", **bearer).json()["endpoints"] == [endpoint]
    submissions_publish(submissions=Submission.objects.filter(pk=made["id"]))
    board = got(client.get("/api/v1/boards", {"pack": "sample"}), Board)
    assert board["rows"][0]["submission"] == made["id"] and board["rows"][0]["overall"]["standing"] in ("full", "partial", "withheld")
