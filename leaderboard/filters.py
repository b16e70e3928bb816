"""The board's filters on what its rows' prompter cards said when they were published (teams.PrompterVersion), on
the origin and a text search: one parse for the page, the API and their caches, so a shared URL shows the same rows.
Filters choose rows; they never re-rank: a row keeps its rank on the whole board."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from urllib.parse import urlencode

from django.db.models import BigIntegerField, Q, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from pydantic import Field

from evaluation.models import Origin
from teams.models import PrompterKind, Weights
from teams.schemas import COUNT_OR_BLANK, COUNT_WORDS, NO_NUL, Declared, choice
from teams.services import parameters_label, parameters_parse

DESCRIBED = ("1", "on", "true")  # what the page's checkbox and links send for "described only"


class FilterQuery(Declared):
    """The filters as query parameters, declared once: the API validates them with this (atelier/team_api.py) and the
    OpenAPI document prints it; BoardFilter.parse reads the same names, more leniently, for the pages. Each may be
    empty (no filter)."""

    kind: choice("", *PrompterKind.values) = ""
    weights: choice("", *Weights.values) = ""
    params_min: str = Field("", pattern=COUNT_OR_BLANK, description=f"at least this many parameters: {COUNT_WORDS}")
    params_max: str = Field("", pattern=COUNT_OR_BLANK, description="at most this many parameters")
    origin: choice("", *Origin.values) = ""
    q: str = Field("", pattern=NO_NUL, description="words to find in prompter names, families and teams")
    described: choice("", *DESCRIBED) = Field("", description="1: hide entries without a card")


FILTER_PARAMS = tuple(FilterQuery.model_fields)
CARD = "submission__card_version__values__"
VALUES = "submission__card_version__values"


def _card_text(key: str) -> KeyTextTransform:
    """A card value as text (KT() would read the path's relations as JSON keys)."""
    return KeyTextTransform(key, VALUES)


@dataclass(frozen=True)
class BoardFilter:
    kind: str = ""
    weights: str = ""
    params_min: int | None = None
    params_max: int | None = None
    origin: str = ""
    q: str = ""
    described: bool = False

    @classmethod
    def parse(cls, params) -> tuple[BoardFilter, list[str]]:
        """From query parameters: the filter, and what was refused (a value nobody could mean is dropped, and said)."""
        problems, found = [], {}
        for name, allowed in (("kind", PrompterKind.values), ("weights", Weights.values), ("origin", Origin.values)):
            value = params.get(name, "")
            if value and value not in allowed:
                problems.append(f"{name}: one of {', '.join(allowed)}")
            elif value:
                found[name] = value
        for name in ("params_min", "params_max"):
            try:
                found[name] = parameters_parse(params.get(name, ""))
            except ValueError:
                problems.append(f"{name}: {COUNT_WORDS}")
        found["q"] = " ".join(params.get("q", "").split())[:100]
        found["described"] = params.get("described", "") in DESCRIBED
        return cls(**found), problems

    @property
    def active(self) -> bool:
        return self != BoardFilter()

    def apply(self, rows: QuerySet) -> QuerySet:
        """Board rows (or anything with a `submission`) whose entry matches; an entry published before cards existed,
        or with an undescribed card, matches only the filters that need no card."""
        if self.kind:
            rows = rows.filter(**{f"{CARD}kind": self.kind})
        if self.weights:
            rows = rows.filter(**{f"{CARD}weights": self.weights})
        if self.described:
            rows = rows.filter(submission__card_version__isnull=False).exclude(**{f"{CARD}kind": ""})
        if self.params_min is not None or self.params_max is not None:
            rows = rows.annotate(card_parameters=Cast(_card_text("parameters"), BigIntegerField()))
            if self.params_min is not None:
                rows = rows.filter(card_parameters__gte=self.params_min)
            if self.params_max is not None:
                rows = rows.filter(card_parameters__lte=self.params_max)
        if self.origin:
            rows = rows.filter(submission__origin=self.origin)
        if self.q:
            rows = rows.annotate(card_name=_card_text("name"), card_family=_card_text("family"))
            for word in self.q.split():
                rows = rows.filter(
                    Q(submission__prompter__icontains=word)
                    | Q(card_name__icontains=word)
                    | Q(card_family__icontains=word)
                    | Q(submission__team__name__icontains=word)
                )
        return rows

    def answered(self) -> dict[str, str]:
        """The filter as query parameters, in one spelling (what links and the page cache use); empty ones left out."""
        shown = asdict(self)
        for name in ("params_min", "params_max"):
            shown[name] = parameters_label(shown[name])
        shown["described"] = "1" if self.described else ""
        return {name: str(value) for name, value in shown.items() if value}

    def query(self) -> str:
        """'&kind=mllm&…' for links that keep the filter ('' when there is none)."""
        answered = self.answered()
        return "&" + urlencode(answered) if answered else ""
