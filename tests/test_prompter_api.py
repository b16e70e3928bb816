"""Prompter cards through the API with a team's bearer token: make, list, change only what is given, the history
of every change, refusals that name the field, and other teams' cards as 404."""

from __future__ import annotations

import json

import pytest

from submissions.services import team_create, token_create
from teams.models import ApiToken, Prompter
from teams.services import card_for, card_save

CARD = {
    "name": "Qwen-prompter",
    "kind": "mllm",
    "family": "Qwen2.5-VL",
    "weights": "open",
    "parameters": "7B",
    "paper_url": "https://arxiv.org/abs/2501.00001",
    "code_url": "https://github.com/example/qwen-prompter",
    "licence": "Apache-2.0",
    "description": "Reads the brief, drafts a prompt, revises it once.",
    "contact": "team@example.org",
}


def auth(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


@pytest.fixture
def token(team) -> str:
    return token_create(team=team, name="ci")[1]


def post(client, token: str, data) -> object:
    return client.post("/api/v1/prompters", json.dumps(data), content_type="application/json", **auth(token))


def patch(client, token: str, card_id: int, data) -> object:
    return client.patch(f"/api/v1/prompters/{card_id}", json.dumps(data), content_type="application/json", **auth(token))


def test_create_then_list_shows_every_field_with_the_parameters_label(client, token):
    made = post(client, token, CARD)
    assert made.status_code == 201, made.content
    card = made.json()
    assert {k: card[k] for k in CARD if k != "parameters"} == {k: v for k, v in CARD.items() if k != "parameters"}
    assert (card["parameters"], card["parameters_label"], card["version"], card["described"]) == (7_000_000_000, "7B", 1, True)
    listed = client.get("/api/v1/prompters", **auth(token)).json()["prompters"]
    assert listed == [card] and listed[0]["contact"] == "team@example.org"  # the team's own card: the contact too


def test_patch_changes_only_the_given_fields_and_the_history_records_it(client, token, team, owner):
    card_id = post(client, token, CARD).json()["id"]
    changed = patch(client, token, card_id, {"parameters": 72_000_000_000, "family": "Qwen2.5-VL-Instruct"})
    assert changed.status_code == 200, changed.content
    body = changed.json()
    assert (body["parameters_label"], body["family"], body["version"]) == ("72B", "Qwen2.5-VL-Instruct", 2)
    assert body["description"] == CARD["description"] and body["kind"] == "mllm"  # untouched
    card_save(team=team, user=owner, values={"licence": "MIT"}, card=Prompter.objects.get(pk=card_id))  # on the team page
    assert patch(client, token, card_id, {"weights": "open"}).json()["version"] == 3  # nothing changed: no version
    history = client.get(f"/api/v1/prompters/{card_id}/versions", **auth(token)).json()["versions"]
    by_token = f"API token 'ci' ({token[:12]}…)"  # which token: its name and the prefix the team page shows
    assert ApiToken.objects.get(name="ci").prefix == token[:12]
    assert [(v["number"], v["by"], v["changed"]) for v in history] == [
        (1, by_token, list(CARD)),
        (2, by_token, ["family", "parameters"]),
        (3, owner.username, ["licence"]),
    ]
    assert history[1]["values"]["parameters"] == 72_000_000_000 and history[0]["when"] <= history[2]["when"]
    other = token_create(team=team, name="ci-2")[1]
    ApiToken.objects.filter(name="ci").delete()  # a deleted token's changes stay, said to be a token's
    history = client.get(f"/api/v1/prompters/{card_id}/versions", **auth(other)).json()["versions"]
    assert [v["by"] for v in history] == ["API token", "API token", owner.username]


def test_a_card_made_from_a_submission_is_listed_undescribed_and_described_by_patch(client, token, team):
    made = card_for(team=team, name="from-upload")
    listed = client.get("/api/v1/prompters", **auth(token)).json()["prompters"]
    assert [(c["name"], c["described"], c["kind"], c["parameters"]) for c in listed] == [("from-upload", False, "", None)]
    described = patch(client, token, made.pk, {"kind": "human"}).json()
    assert described["described"] and described["name"] == "from-upload"
    history = client.get(f"/api/v1/prompters/{made.pk}/versions", **auth(token)).json()["versions"]
    assert [v["by"] for v in history] == ["the platform", f"API token 'ci' ({token[:12]}…)"]


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("paper_url", "javascript:alert(1)", "Enter a valid URL"),
        ("code_url", "ftp://example.org/code", "Enter a valid URL"),
        ("parameters", "abc", "a count such as 7B"),
        ("parameters", 0, "between 1 and"),
        ("parameters", 7.5, "text such as 7B"),
        ("description", "x" * 601, "at most 600 characters"),
        ("kind", "wizard", "not one of the available choices"),
        ("weights", "half", "not one of the available choices"),
        ("name", "   ", "required"),
        ("family", 3, "text"),
        ("homepage", "https://example.org", "unknown field(s) 'homepage'"),
    ],
)
def test_refusals_are_400_naming_the_field_and_save_nothing(client, token, field, value, words):
    refused = post(client, token, {**CARD, field: value})
    assert refused.status_code == 400, refused.content
    body = refused.json()
    assert (
        body["field"] == field and body["error"].startswith(f"{field}: " if field != "homepage" else "unknown") and words in body["error"]
    )
    assert not Prompter.objects.exists()


def test_patch_is_checked_whole_and_refusals_change_nothing(client, token):
    card_id = post(client, token, CARD).json()["id"]
    refused = patch(client, token, card_id, {"family": "Other", "paper_url": "javascript:alert(1)"})
    assert refused.status_code == 400 and refused.json()["field"] == "paper_url"
    assert Prompter.objects.get(pk=card_id).family == "Qwen2.5-VL" and Prompter.objects.get(pk=card_id).versions.count() == 1
    assert patch(client, token, card_id, ["not", "an", "object"]).status_code == 400


def test_a_name_the_team_already_uses_is_409_with_that_cards_id(client, token):
    first = post(client, token, CARD).json()["id"]
    again = post(client, token, {"name": CARD["name"], "kind": "human"})
    assert again.status_code == 409 and again.json()["field"] == "name" and again.json()["id"] == first
    second = post(client, token, {"name": "second"}).json()["id"]
    renamed = patch(client, token, second, {"name": CARD["name"]})
    assert renamed.status_code == 409 and "already has a prompter called 'Qwen-prompter'" in renamed.json()["error"]


def test_another_teams_card_is_404_and_no_token_is_401(client, token, team, stranger):
    theirs = card_for(team=team_create(user=stranger, name="Other Team"), name="theirs")
    assert patch(client, token, theirs.pk, {"kind": "human"}).status_code == 404
    assert client.get(f"/api/v1/prompters/{theirs.pk}", **auth(token)).status_code == 404
    assert client.get(f"/api/v1/prompters/{theirs.pk}/versions", **auth(token)).status_code == 404
    assert client.get("/api/v1/prompters", **auth(token)).json() == {"prompters": []}
    assert client.get("/api/v1/prompters").status_code == 401
    assert client.post("/api/v1/prompters", json.dumps(CARD), content_type="application/json").status_code == 401
    assert Prompter.objects.get(pk=theirs.pk).kind == ""


def test_a_submission_names_its_card(client, token, team, sample_pack, no_backends, example_prompts):
    from django.core.files.uploadedfile import SimpleUploadedFile

    file = SimpleUploadedFile("prompts.jsonl", example_prompts)
    body = client.post("/api/v1/submissions", {"file": file, "prompter": "Qwen-prompter", "pack": "sample"}, **auth(token)).json()
    card = Prompter.objects.get(team=team, name="Qwen-prompter")
    assert body["prompter_card"] == card.pk
    assert client.get(body["status_url"], **auth(token)).json()["prompter_card"] == card.pk
