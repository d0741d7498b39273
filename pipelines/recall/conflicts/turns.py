"""What was said in raw chat turns of a claim that was retracted or corrected."""

from __future__ import annotations

import re
from functools import lru_cache

import msgspec

from pipelines.records import MemoryItem, timestamp

from .claim import read_claim
from .patterns import _LIGHT_VERBS, _STEMS
from .rule import SUBJECT_OVERLAP, _overlap, conflict_reason


def restates(turn: MemoryItem, claim: MemoryItem) -> bool:
    """Whether the raw chat `turn` says what `claim` says (before the claim was last changed,
    as a retraction changes it): every value the claim states is stated in the turn, and
    most of the claim's words (its title's too) are the turn's, half of them when values
    pin it down. "Our deploy window is Tuesdays at 14:00 UTC." restates "Deploy window: The
    deploy window is Tuesdays at 14:00 UTC."; "The deploy window moved to Thursdays, not
    Tuesdays" does not (it states another value and retires that one)."""
    if timestamp(turn.created_at, 0.0) > timestamp(claim.updated_at, float("inf")):
        return False  # said after the claim was retracted: said again, on purpose
    said, c = read_claim(turn), read_claim(claim)
    if not c.values <= said.values:
        return False
    shared, overlap = _overlap(c.words, said.words)
    return shared >= 2 and overlap >= (0.5 if c.values else SUBJECT_OVERLAP)


@lru_cache(maxsize=1024)
def _user_named(user_id: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(user_id)}\b(?:'s)?", re.IGNORECASE)


def states_what_was_corrected(turn: MemoryItem, correction: MemoryItem) -> bool:
    """Whether the raw chat `turn`, said before `correction` (a claim that replaced another:
    its `supersedes` links) was made, conflicts with it by this rule: it states the value
    the correction replaced ("My doctor put me on amlodipine 5 mg every morning" before
    "Amlodipine dose: Sam takes amlodipine 10 mg every morning"). Said after the
    correction, it is said again, on purpose."""
    if timestamp(turn.created_at, float("inf")) >= timestamp(correction.created_at, 0.0):
        return False
    if turn.metadata.get("role") == "user" and turn.scope.user_id:
        # The user says "I" where the claim names them ("I take amlodipine" / "Sam no longer
        # takes amlodipine"): their name is no subject word between the two.
        correction = msgspec.structs.replace(
            correction, content=_user_named(turn.scope.user_id).sub("", correction.content))
    said, fix = read_claim(turn), read_claim(correction)
    if not (said.words & fix.words) - _light_or_period():
        return False  # only "pay" and "month" in common: two things paid monthly, not one corrected
    return conflict_reason(said, fix) is not None


@lru_cache(maxsize=1)
def _light_or_period() -> frozenset[str]:
    """Stems of the light verbs and the words of a period ("every morning", "a month"):
    shared alone, they make no subject of a turn and a correction."""
    return frozenset(_STEMS(sorted(_LIGHT_VERBS | {
        "every", "each", "day", "days", "daily", "week", "weeks", "weekly", "month", "months", "monthly",
        "year", "years", "yearly", "morning", "mornings", "evening", "evenings", "night", "nights"})))
