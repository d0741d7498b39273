"""Two teammates in one project, each speaking of themselves, over HTTP (Litestar's
TestClient against `loci serve`'s app, hash embedder, a consolidation): what one says of
themselves ("I", "my", "me") is about them, what the other says of themselves is about the
other, so neither contradicts the other (broken: Rui's "My laptop is a MacBook" and "I'm not
on call this week" were held for review as contradicting Ines's "My laptop is a ThinkPad"
and "I'm on call this week", recall marked such pairs CONFLICT= and `/v1/conflicts` listed
them, "Work location" under one title too). Nor are the two merged into one item: it would
say both of one person. Kept: a claim of a subject they share ("our release day")
is still one subject whoever says it, and one person contradicting themselves still corrects
themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from online.app import create_app
from pipelines.embedders import HashEmbedder
from tests.assets.support import make_settings
from tests.e2e.chat import consolidate, curated_text, recall, team_fact, tool

INES = {"user_id": "ines", "project_id": "helios", "session_id": "i1", "org_id": "acme"}
RUI = {"user_id": "rui", "project_id": "helios", "session_id": "r1", "org_id": "acme"}
# (name, who, what they say = what the assistant proposes, title): each pair would conflict
# if one person said both
SAID = [
    ("ines remote", INES, "I work from home on Wednesdays", "Remote days"),
    ("rui remote", RUI, "I work from home on Fridays", "Remote days"),
    ("ines location", INES, "From Wednesday I work remotely", "Work location"),
    ("rui location", RUI, "I'm back in the office from Thursday", "Work location"),
    ("ines on call", INES, "I'm on call this week", "On call"),
    ("rui on call", RUI, "I'm not on call this week", "On call"),
    ("ines laptop", INES, "My laptop is a ThinkPad", "Laptop"),
    ("rui laptop", RUI, "My laptop is a MacBook", "Laptop"),
    ("ines release", INES, "Our release day is Friday", "Release day"),  # shared: one subject
    ("rui release", RUI, "Our release day is Monday", "Release day"),
    ("rui keyboard", RUI, "My keyboard layout is QWERTY", "Keyboard"),  # one person, corrected
    ("rui keyboard again", RUI, "My keyboard layout is Dvorak", "Keyboard"),
]
OWN_WORDS = ["remote", "location", "on call", "laptop"]


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("own-words"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with TestClient(app) as client:
        outcomes = {name: team_fact(client, who, said, title) for name, who, said, title in SAID}
        before = recall(client, RUI, "What laptop does everyone have?")  # from the inbox, not consolidated yet
        consolidate(client, settings)
        seen = {
            "outcomes": outcomes,
            "recall": {topic: recall(client, who, question) for topic, who, question in [
                ("remote", INES, "Who works from home on which days?"),
                ("location", INES, "Where does everyone work from Wednesday or Thursday?"),
                ("on call", RUI, "Who is on call this week?"),
                ("laptop", RUI, "What laptop does everyone have?"),
                ("release", INES, "What is our release day?"),
                ("keyboard", RUI, "What is my keyboard layout?")]},
            "conflicts": client.get("/v1/conflicts", params=INES).json(),
            "laptop before consolidation": before,
        }
        # Rui edits Ines's own words: they stay hers, so the edit contradicts what her item said
        seen["rui's edit"] = tool(client, RUI, "memory.update", {"id": outcomes["ines laptop"]["item_id"],
                                                                 "patch": {"content": "My laptop is a Dell."}})
        yield seen


def conflicting_pairs(team: dict) -> set[frozenset[str]]:
    return {frozenset((c["a"]["id"], c["b"]["id"])) for c in team["conflicts"]["conflicts"]}


def test_a_teammates_own_words_are_not_held_against_anothers(team) -> None:
    outcomes = team["outcomes"]
    for topic in OWN_WORDS:
        for name in (f"ines {topic}", f"rui {topic}"):
            assert outcomes[name]["action"] == "accept", (name, outcomes[name])


def test_a_teammates_own_words_are_neither_marked_nor_listed_as_a_conflict(team) -> None:
    ids = {name: outcome["item_id"] for name, outcome in team["outcomes"].items()}
    pairs = conflicting_pairs(team)
    for topic in OWN_WORDS:
        ines, rui = ids[f"ines {topic}"], ids[f"rui {topic}"]
        assert frozenset((ines, rui)) not in pairs, (topic, team["conflicts"])
        shown = curated_text(team["recall"][topic])
        assert ines in shown and rui in shown, (topic, shown)  # both kept, each their own (not merged)
        assert f"CONFLICT={ines}" not in shown and f"CONFLICT={rui}" not in shown, (topic, shown)
    shown = curated_text(team["laptop before consolidation"])
    assert ids["ines laptop"] in shown and ids["rui laptop"] in shown and "CONFLICT=" not in shown, shown


def test_a_shared_subject_is_still_one_subject_whoever_says_it(team) -> None:
    outcomes = team["outcomes"]
    assert outcomes["ines release"]["action"] == "accept"
    held = outcomes["rui release"]
    assert held["action"] == "quarantine" and "soft.contradiction" in held["rule_ids"], held
    assert frozenset((outcomes["ines release"]["item_id"], held["item_id"])) in conflicting_pairs(team)


def test_one_person_contradicting_themselves_still_corrects_themselves(team) -> None:
    outcomes = team["outcomes"]
    assert outcomes["rui keyboard again"]["action"] == "accept", outcomes["rui keyboard again"]
    shown = curated_text(team["recall"]["keyboard"])
    assert outcomes["rui keyboard again"]["item_id"] in shown and "Dvorak" in shown, shown
    assert outcomes["rui keyboard"]["item_id"] not in shown and "QWERTY" not in shown, shown


def test_an_edit_of_a_teammates_own_words_is_still_held_against_what_they_said(team) -> None:
    verdict = team["rui's edit"]["verdict"]
    assert verdict["action"] == "quarantine" and "soft.contradiction" in verdict["rule_ids"], verdict
