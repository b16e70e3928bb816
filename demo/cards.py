"""The demo team's prompter cards: what each of its prompters is, said once, before the demo publishes its entries
(so the board shows and filters by them). Every demo prompter is a rule or hand-written text: none is a model, and
the cards say so. Saving the same values again makes no new version, so a second demo run changes nothing."""

from __future__ import annotations

from collections.abc import Callable

from teams.models import Prompter, PrompterKind, Team
from teams.services import card_save

RULE = "a rule in demo/original.py or demo/showcase.py: it rewrites each task's brief the same way every time; no model"
CARDS = {
    "Example prompter (hand-written)": {
        "kind": PrompterKind.HUMAN,
        "description": "One developer's hand-written prompts for the sample pack (examples/demo_prompts.jsonl), shipped as the demo's example upload.",
        "licence": "same as this repository",
    },
    "Rule: brief + quality tags": {
        "kind": PrompterKind.RULE,
        "family": "demo rules",
        "description": RULE + " (the brief, then quality tags).",
    },
    "Rule: first sentence": {"kind": PrompterKind.RULE, "family": "demo rules", "description": RULE + " (the brief's first sentence)."},
    "Rule: brief verbatim": {"kind": PrompterKind.RULE, "family": "demo rules", "description": RULE + " (the brief as it is)."},
    "scripted rule (no model) (scripted-demo)": {
        "kind": PrompterKind.RULE,
        "family": "demo rules",
        "description": "The demo's scripted endpoint (demo/prompter.py): an OpenAI-compatible server answering with a rule; "
        "in feedback rounds it adds what the feedback asked for. No model.",
    },
}


def demo_cards(team: Team, user, say: Callable[[str], None]) -> int:
    """Describe the demo team's prompters that exist, as `user` (the demo's member: each version names who made it);
    returns how many cards this call changed."""
    changed = 0
    for card in Prompter.objects.filter(team=team, name__in=CARDS):
        _, version = card_save(team=team, user=user, values=CARDS[card.name], card=card)
        changed += version is not None
    say(f"Prompter cards: {changed} described or updated ({len(CARDS)} demo prompters, all rules or hand-written; see /teams/demo-team/).")
    return changed
