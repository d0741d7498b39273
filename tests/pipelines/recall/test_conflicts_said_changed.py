"""How the conflict rule's reading (`conflicts.Claim`) hears that something changed or ended:
a move "off" one thing "onto" another, an ending in a clause after a semicolon, and a
sentence that opens by correcting what was said."""

from __future__ import annotations

import pytest

from pipelines.recall.conflicts import read_claim, stated_values
from pipelines.records import Identity, MemoryItem, Scope

ME = Identity(user_id="u1", project_id="p1", session_id="s1", org_id="o1")


def claim(title: str, content: str) -> MemoryItem:
    return MemoryItem(id="c", tier="stm", type="fact", title=title, content=content,
                      scope=Scope.for_identity("project", ME), confidence=0.9)


def test_a_move_off_one_thing_onto_another_retires_the_first():
    read = read_claim(claim("Hosting", "We moved the marketing site off Netlify onto Vercel last spring."))
    assert "netlify" in read.retired and "netlify" not in read.values
    assert "vercel" in read.values
    assert stated_values("The team switched away from Trello to Linear.") == {"linear"}


def test_an_ending_after_a_semicolon_retires_the_name_it_ends():
    # the name starts its clause, not a sentence: read as the whole content reads it
    read = read_claim(claim("Chat", "Slack handles team chat; Zulip was shut down."))
    assert "zulip" in read.retired and "zulip" not in read.values


def test_a_new_sentence_after_an_ending_is_still_no_name():
    assert read_claim(claim("Chat", "We chat in rooms. Archive was removed.")).retired == frozenset()


@pytest.mark.parametrize("content", [
    "Actually the staging database is Postgres 15.",
    "I was wrong yesterday - the standup is in room 4B.",
    "Correction: the invoice goes to Priya.",
    "Scratch that, the offsite is in Lisbon.",
    "My mistake, the quarterly review is on Tuesday.",
])
def test_a_sentence_opening_with_a_correction_says_something_changed(content):
    assert read_claim(claim("Note", content)).changes is not None


@pytest.mark.parametrize("content", [
    "I actually enjoy the standup in room 4B.",  # not an opener
    "The offsite is in Lisbon.",
    "Priya was wrong about nothing.",
])
def test_a_claim_without_a_correcting_opener_says_nothing_changed(content):
    assert read_claim(claim("Note", content)).changes is None
