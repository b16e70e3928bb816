"""The study protocol as data: consent text, questionnaire, tier rule and module introductions.

Plain functions (no database): reading and checking the protocol files, checking a participant's
answers, scoring them with the tier rule, and drawing a participant's plan of tasks.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import jsonschema

from evaluator.categories import CATEGORIES
from evaluator.tiers import Tier

FOLDER = Path(__file__).resolve().parent / "protocol"
BASE_VERSION = "human-1"
TEXT_LIMIT = 300  # characters of a free-text answer

_OPTION = {
    "type": "object",
    "required": ["key", "label"],
    "properties": {"key": {"type": "string", "minLength": 1}, "label": {"type": "string", "minLength": 1}},
}
QUESTIONNAIRE_SCHEMA = {
    "type": "object",
    "required": ["questions"],
    "properties": {
        "questions": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["key", "kind", "text"],
                "properties": {
                    "key": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
                    "kind": {"enum": ["single", "multi", "text"]},
                    "text": {"type": "string", "minLength": 1},
                    "required": {"type": "boolean"},
                    "options": {"type": "array", "items": _OPTION},
                },
            },
        }
    },
}
TIER_RULE_SCHEMA = {
    "type": "object",
    "required": ["points", "skilled_at"],
    "properties": {
        "points": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": {"type": "number"}}},
        "skilled_at": {"type": "number"},
        "require": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["question", "min_points"],
                "properties": {"question": {"type": "string"}, "min_points": {"type": "number"}},
            },
        },
    },
}
MODULES_SCHEMA = {
    "type": "object",
    "required": list(CATEGORIES),
    "properties": {
        c: {"type": "object", "required": ["title", "intro"], "properties": {"title": {"type": "string"}, "intro": {"type": "string"}}}
        for c in CATEGORIES
    },
}


class ProtocolError(ValueError):
    """A protocol that cannot be used; the message names the part and the field."""


def defaults() -> dict:
    """The shipped protocol: consent text, questionnaire, tier rule, module introductions."""
    return {
        "consent_text": (FOLDER / "consent.md").read_text(encoding="utf-8"),
        "questionnaire": json.loads((FOLDER / "questionnaire.json").read_text(encoding="utf-8")),
        "tier_rule": json.loads((FOLDER / "tier_rule.json").read_text(encoding="utf-8")),
        "modules": json.loads((FOLDER / "modules.json").read_text(encoding="utf-8")),
    }


def check(questionnaire: dict, tier_rule: dict, modules: dict) -> None:
    """Raise ProtocolError naming the first problem: schema, duplicate keys, or a rule naming unknown answers."""
    for name, value, schema in (
        ("questionnaire", questionnaire, QUESTIONNAIRE_SCHEMA),
        ("tier rule", tier_rule, TIER_RULE_SCHEMA),
        ("modules", modules, MODULES_SCHEMA),
    ):
        try:
            jsonschema.validate(value, schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
            raise ProtocolError(f"{name}: {where}: {exc.message}") from None
    questions = {q["key"]: q for q in questionnaire["questions"]}
    if len(questions) != len(questionnaire["questions"]):
        raise ProtocolError("questionnaire: two questions share a key")
    for q in questions.values():
        if q["kind"] != "text" and not q.get("options"):
            raise ProtocolError(f"questionnaire: {q['key']}: a {q['kind']} question needs options")
    for key, points in tier_rule["points"].items():
        options = {o["key"] for o in questions.get(key, {}).get("options", [])}
        if key not in questions or not set(points) <= options:
            raise ProtocolError(f"tier rule: points: {key}: names a question or option the questionnaire does not have")
    for need in tier_rule.get("require", []):
        if need["question"] not in tier_rule["points"]:
            raise ProtocolError(f"tier rule: require: {need['question']} has no points")


def version(protocol: dict, design: Iterable) -> str:
    """'human-1+<8 hex>' over everything a participant is shown or scored by, so an edit is a new version."""
    blob = json.dumps(
        [protocol["consent_text"], protocol["questionnaire"], protocol["tier_rule"], protocol["modules"], list(design)], sort_keys=True
    )
    return f"{BASE_VERSION}+{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


def answer_problems(questionnaire: dict, answers: dict) -> dict[str, str]:
    """{question key: what is wrong} for a posted form (values: a str for single/text, a list for multi)."""
    problems = {}
    for q in questionnaire["questions"]:
        value, options = answers.get(q["key"]), {o["key"] for o in q.get("options", [])}
        empty = value in (None, "", [])
        if empty:
            if q.get("required"):
                problems[q["key"]] = "Please answer this question."
        elif q["kind"] == "single" and value not in options:
            problems[q["key"]] = "Choose one of the options."
        elif q["kind"] == "multi" and not (isinstance(value, list) and set(value) <= options):
            problems[q["key"]] = "Choose among the options shown."
        elif q["kind"] == "text" and len(value) > TEXT_LIMIT:
            problems[q["key"]] = f"At most {TEXT_LIMIT} characters, please."
    return problems


@dataclass(frozen=True)
class Placement:
    tier: Tier  # a participant tier (evaluator.tiers.PARTICIPANT_TIERS)
    points: float
    by_question: dict[str, float]


def place(tier_rule: dict, answers: dict) -> Placement:
    """The tier rule applied to checked answers (see tier_rule.json's 'about')."""
    by_question = {}
    for key, table in tier_rule["points"].items():
        chosen = answers.get(key)
        chosen = chosen if isinstance(chosen, list) else [chosen] if chosen else []
        by_question[key] = float(sum(table.get(option, 0) for option in chosen))
    total = sum(by_question.values())
    required = all(by_question.get(n["question"], 0) >= n["min_points"] for n in tier_rule.get("require", []))
    return Placement(Tier.SKILLED if total >= tier_rule["skilled_at"] and required else Tier.NOVICE, total, by_question)


def draw_plan(tasks: dict[str, list[str]], taken: dict[str, int], rounds: int, per_category: int, seed: str) -> list[tuple[int, str, str]]:
    """A participant's tasks as (round, category, task_id) in the order shown. Within a round the categories
    come in a random order; each category's tasks are the least-taken so far across the study (ties at random),
    never the same task twice for one participant, so participants spread over the pack's tasks."""
    rng = random.Random(seed)
    plan = []
    chosen = {c: sorted(ids, key=lambda t: (taken.get(t, 0), rng.random()))[: rounds * per_category] for c, ids in tasks.items()}
    for c, ids in chosen.items():
        if len(ids) < rounds * per_category:
            raise ProtocolError(f"{c}: {len(ids)} task(s) available, {rounds} round(s) × {per_category} need {rounds * per_category}")
    for r in range(rounds):
        order = sorted(chosen)
        rng.shuffle(order)
        plan += [(r, c, t) for c in order for t in chosen[c][r * per_category : (r + 1) * per_category]]
    return plan
