"""Which preferences, proposed with no scope, are their writer's alone (user scope), as
capture keeps them (`capture.scoped_by_its_words`)."""

from __future__ import annotations

import pytest

from pipelines.capture import scoped_by_its_words
from pipelines.records import ProposedItem


def scope_of(content: str, author: str = "kai", kind: str = "preference", scope: str | None = None) -> str | None:
    item = ProposedItem(type=kind, title="Style", content=content, scope=scope)
    return scoped_by_its_words(item, "project", author).scope


@pytest.mark.parametrize("content", [
    "I prefer tabs for indentation.",
    "Kai prefers tabs for indentation.",      # as a chat model reports the writer's words
    "Kai's editor of choice is Vim.",
    "The user prefers concise answers with the code first.",
])
def test_the_writers_own_wish_is_theirs(content: str) -> None:
    assert scope_of(content) == "user"


@pytest.mark.parametrize("content", [
    "We prefer squash merges.",                 # the team's
    "The team prefers squash merges.",
    "I prefer our standup at 10.",              # names what the group shares
    "Kai prefers 4 spaces in this repo.",       # the repo's, where it was said
    "Ana prefers Kai to review her PRs.",       # a teammate's wish
    "I think we should use tabs.",              # vouching, not of the writer
    "Prefers concise answers.",                 # no one named: left where it was proposed
])
def test_a_wish_of_others_or_of_the_place_stays_put(content: str) -> None:
    assert scope_of(content) is None


def test_only_an_unscoped_preference_moves() -> None:
    assert scope_of("I prefer tabs.", scope="project") == "project"  # the model named it
    assert scope_of("I use tabs everywhere.", kind="fact") is None
    assert scope_of("Default prefers tabs.", author="default") is None  # the single-user id names no one
