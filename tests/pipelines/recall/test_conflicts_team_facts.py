"""Two conflicts a team meets, in write and recall modes alike: a standing schedule moved to
another day ("We moved the weekly sync to Thursdays at 2pm" / "The weekly sync is on
Tuesdays at 11am": a plural weekday is a time, and what moved is the subject, not a word of
the change), and two teammates stating different codes of one thing ("Atlas customer data
lives in eu-central-1" / "... us-east-1": a hyphenated code is a value, and the "us" of
"us-east-1" is no first person)."""

from __future__ import annotations

import pytest

from pipelines.recall.conflicts import (
    SAME_SUBJECT,
    conflict_reason,
    contradicted,
    corrected_by,
    find_conflicts,
    proposed_claim,
    read_claim,
    reschedules,
    stated_values,
)
from pipelines.records import Identity, MemoryItem, Scope

LENA = Identity(user_id="lena", project_id="atlas", session_id="s1", org_id="o1")
OMAR = Identity(user_id="omar", project_id="atlas", session_id="s2", org_id="o1")

SYNC = ("Weekly sync", "The weekly sync is on Tuesdays at 11am.")
SYNC_MOVED = ("Weekly sync", "We moved the weekly sync to Thursdays at 2pm.")
REGION_EU = ("Atlas data region", "Atlas customer data lives in eu-central-1.")
REGION_US = ("Atlas data region", "Atlas customer data lives in us-east-1.")


def item(id_: str, said: tuple[str, str], who: Identity = LENA,
         updated: str = "2026-01-01T00:00:00+00:00") -> MemoryItem:
    title, content = said
    return MemoryItem(id=id_, tier="stm", type="fact", title=title, content=content,  # type: ignore[arg-type]
                      scope=Scope.for_identity("project", who), confidence=0.9,  # type: ignore[arg-type]
                      updated_at=updated)


def test_a_hyphenated_code_with_a_number_is_one_value():
    assert stated_values("Atlas customer data lives in us-east-1.") == {"us-east-1"}
    assert stated_values("Workers run on n2-standard-4 machines.") == {"n2-standard-4"}
    assert stated_values("We use 2-space indentation.") == {"2 space"}  # a count, as before
    assert not read_claim(item("us", REGION_US)).first_person  # "us" of "us-east-1" is nobody


def test_a_codes_parts_are_no_words_so_what_names_the_subject_still_does():
    eu = read_claim(item("eu", ("EU region", "EU customer data is hosted in eu-west-1.")))
    us = read_claim(item("us", ("US region", "US customer data is hosted in us-east-1.")))
    assert "eu" in eu.words and "us" in us.words  # "EU" / "US" name two things, the codes aside
    assert conflict_reason(eu, us) is None


def test_a_move_to_a_standing_day_is_a_reschedule_and_names_what_moved():
    assert reschedules("We moved the weekly sync to Thursdays at 2pm.")
    moved = read_claim(item("b", SYNC_MOVED))
    assert moved.changes is not None


@pytest.mark.parametrize(("older", "newer", "other_title"), [
    (SYNC, SYNC_MOVED, "Team meetings"), (REGION_EU, REGION_US, "Where Atlas data is stored")])
def test_the_pairs_conflict_under_one_title_or_two_and_across_authors(older, newer, other_title):
    a = read_claim(item("a", older, LENA))
    for title in (newer[0], other_title):
        b = read_claim(item("b", (title, newer[1]), OMAR, updated="2026-02-01T00:00:00+00:00"))
        assert conflict_reason(a, b) == SAME_SUBJECT, title
        assert conflict_reason(b, a) == SAME_SUBJECT, title


@pytest.mark.parametrize(("older", "newer"), [(SYNC, SYNC_MOVED), (REGION_EU, REGION_US)])
def test_recall_finds_the_pair_and_a_write_by_a_teammate_is_held_against_it(older, newer):
    old = item("old", older, LENA)
    new = item("new", newer, OMAR, updated="2026-02-01T00:00:00+00:00")
    assert {frozenset((a.id, b.id)) for a, b, _ in find_conflicts([old, new])} == {frozenset(("old", "new"))}
    proposal = proposed_claim(newer[0], newer[1], "fact", "project", author="omar")
    assert [(o.id, why) for o, why in contradicted(proposal, [old])] == [("old", SAME_SUBJECT)]


def test_the_writer_moving_their_own_schedule_replaces_it():
    old = item("old", SYNC, LENA)
    assert corrected_by(*SYNC_MOVED, "fact", "project", "lena", [old]) == ["old"]


def test_first_person_claims_of_two_writers_still_stand_apart():
    a = read_claim(item("a", ("My region", "I work from eu-central-1."), LENA))
    b = read_claim(item("b", ("My region", "I work from us-east-1."), OMAR))
    assert conflict_reason(a, b) is None


def test_a_code_refines_the_family_its_first_part_names():
    broad = read_claim(item("broad", ("Data residency", "Customer data stays in the EU region.")))
    for content, conflicts in (("Customer data stays in eu-central-1.", False),
                               ("Customer data stays in us-east-1.", True)):
        narrow = read_claim(item("narrow", ("Data residency", content)))
        assert (conflict_reason(broad, narrow) == SAME_SUBJECT) is conflicts, content
