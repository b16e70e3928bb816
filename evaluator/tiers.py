"""The human study's tiers, defined once for the library, the apps and the board download.

A participant is placed in a participant tier (novice or skilled) by the study's tier rule; a human baseline row pools
one tier's participants, or all of them (ALL). studies.models.Tier (a participant's) and evaluation.models.HumanRow.tier
(a row's) take their choices from here, and evaluator.metrics.humans pools rows by them for the site and the recompute alike.
"""

from __future__ import annotations

from enum import StrEnum


class Tier(StrEnum):
    NOVICE = "novice"
    SKILLED = "skilled"
    ALL = "all"  # a human row pooling every tier's participants: never a participant's own tier


PARTICIPANT_TIERS: tuple[Tier, ...] = (Tier.NOVICE, Tier.SKILLED)
ROW_TIERS: tuple[Tier, ...] = (*PARTICIPANT_TIERS, Tier.ALL)  # the order human rows are listed and pooled in
