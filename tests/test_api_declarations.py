"""The API contract has one source (issue 43): /api/v1/openapi.json is generated from the declarations the views
validate with (pydantic models, the API's forms, the URLconf and the models' TextChoices), and the views refuse what
those declarations refuse, with a 400 naming the field."""

from __future__ import annotations

import json

import pytest
from django.test import RequestFactory
from pydantic import ValidationError

from atelier import openapi
from atelier.team_api import BOARD_ROWS_MAX, BoardsQuery
from evaluation.models import CallStatus, Origin, Status, Submission
from leaderboard.filters import FILTER_PARAMS, FilterQuery
from submissions.api import ApiRunForm, ApiSubmitForm
from submissions.forms import EndpointForm
from submissions.services import token_create
from teams.forms import PrompterForm
from teams.models import CARD_FIELDS, Prompter, PrompterKind, Weights
from teams.schemas import CardNew, choice


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
    assert schemas["Calls"]["properties"]["calls"]["items"]["properties"]["status"]["enum"] == list(CallStatus.values)
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
    endpoint = doc["paths"]["/api/v1/endpoints"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert list(endpoint["properties"]) == list(EndpointForm.base_fields) and endpoint["properties"]["top_p"]["maximum"] == 1
    run = doc["paths"]["/api/v1/endpoints/{endpoint_id}/runs"]["post"]
    assert list(run["requestBody"]["content"]["application/json"]["schema"]["properties"]) == list(ApiRunForm.base_fields)
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
