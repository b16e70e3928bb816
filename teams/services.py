"""Prompter cards: made for a submission's prompter name, described and edited by the team, every change a version."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from django.db import IntegrityError, transaction

from .models import CARD_FIELDS, ApiToken, Prompter, PrompterVersion, Team

UNITS = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}
MAX_PARAMETERS = 10**16


class CardRefused(ValueError):
    """A card change that was refused: nothing was saved. The message names the field."""


def parameters_parse(text: str | int | None) -> int | None:
    """'7B', '350M', '1.5T', '7000000000' or an int → a parameter count; blank → None. ValueError names what is wrong."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    if isinstance(text, bool):
        raise ValueError("parameters: a count such as 7B, 350M or 7000000000")
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMBT]?)\s*", str(text), flags=re.IGNORECASE)
    if match is None:
        raise ValueError("parameters: a count such as 7B, 350M or 7000000000")
    try:
        count = int(Decimal(match.group(1)) * UNITS[match.group(2).upper()])
    except InvalidOperation as exc:
        raise ValueError("parameters: a count such as 7B, 350M or 7000000000") from exc
    if not 0 < count <= MAX_PARAMETERS:
        raise ValueError("parameters: between 1 and 10 quadrillion")
    return count


def parameters_label(count: int | None) -> str:
    """7000000000 → '7B', 350000000 → '350M', 1500000000000 → '1.5T'; None → ''."""
    if not count:
        return ""
    for unit in ("T", "B", "M", "K"):
        if count >= UNITS[unit]:
            return f"{count / UNITS[unit]:.3g}{unit}"
    return str(count)


def card_for(*, team: Team, name: str, kind: str = "") -> Prompter:
    """The team's card for a prompter name, made (with its first version) the first time the name is used."""
    card = Prompter.objects.filter(team=team, name=name).first()
    if card is not None:
        return card
    try:
        with transaction.atomic():
            card = Prompter.objects.create(team=team, name=name, kind=kind)
            PrompterVersion.objects.create(prompter=card, number=1, values=card.values(), changed=["made from a submission"])
            return card
    except IntegrityError:  # made by a concurrent submission under the same name
        return Prompter.objects.get(team=team, name=name)


def card_save(
    *, team: Team, user, values: dict, card: Prompter | None = None, token: ApiToken | None = None
) -> tuple[Prompter, PrompterVersion | None]:
    """Make a card (card=None) or change one; `values` are cleaned form values (teams.forms.PrompterForm); `user` or
    `token` (an API change) is who asked, recorded on the version. Returns the card and the version this call made (None
    when nothing changed). CardRefused: the name is another card's."""
    with transaction.atomic():
        if card is None:
            card = Prompter(team=team)
            before = card.values()
        else:
            card = Prompter.objects.select_for_update().get(pk=card.pk, team=team)
            before = card.values()
        changed = [name for name in CARD_FIELDS if name in values and values[name] != before.get(name)]
        if not changed:
            return card, None
        for name in changed:
            setattr(card, name, values[name])
        if Prompter.objects.filter(team=team, name=card.name).exclude(pk=card.pk).exists():
            raise CardRefused(f"name: the team already has a prompter called {card.name!r}")
        card.save()
        number = (card.versions.order_by("-number").values_list("number", flat=True).first() or 0) + 1
        version = PrompterVersion.objects.create(
            prompter=card, number=number, values=card.values(), changed=changed, user=user, token=token
        )
    return card, version


def card_latest_version(card_id: int) -> PrompterVersion | None:
    return PrompterVersion.objects.filter(prompter_id=card_id).order_by("-number").first()
