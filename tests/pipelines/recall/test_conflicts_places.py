"""Places that exclude each other across titles, and negations that agree with what the
other note says. "All customer data stays in the EU" / "Customer data for the analytics
replica is stored in the US (us-east-1)": one thing (customer data) in two places, whatever
the titles ("residency" / "location" say where, not what). "EU customer data ..." / "US
customer data ...": the place names the data, two things. "Leo is allergic to nuts: nothing
with nuts for him" asks what the allergy asks; "Leo's allergies: none" denies it."""

from __future__ import annotations

import pytest

from pipelines.recall.conflicts import DENIES, SAME_SUBJECT, conflict_reason, find_conflicts, read_claim
from pipelines.recall.conflicts.rule import _placed_apart
from pipelines.records import MemoryItem, Scope


def item(id_: str, title: str, content: str, kind: str = "project", user: str = "tom") -> MemoryItem:
    return MemoryItem(id=id_, tier="stm", type="fact", title=title, content=content,  # type: ignore[arg-type]
                      scope=Scope(kind=kind, user_id=user, project_id="analytics", org_id="acme"))  # type: ignore[arg-type]


RESIDENCY = item("org", "Customer data residency", "All customer data stays in the EU.", kind="org", user="olga")
STORED_US = item("us", "Analytics replica data location",
                 "Customer data for the analytics replica is stored in the US (us-east-1).")
REPLICA_EU = item("eu", "Analytics replica region", "Use eu-central-1 for the analytics replica.")
REPLICA_US = item("west", "Replica location for analytics", "The analytics replica goes to us-west-2.", user="raj")


@pytest.mark.parametrize(("a", "b"), [(RESIDENCY, STORED_US), (REPLICA_EU, REPLICA_US)])
def test_one_thing_in_two_exclusive_places_under_two_titles_conflicts(a: MemoryItem, b: MemoryItem) -> None:
    assert conflict_reason(read_claim(a), read_claim(b)) == SAME_SUBJECT
    assert [(x.id, y.id, why) for x, y, why in find_conflicts([a, b])] == [(*sorted((a.id, b.id)), SAME_SUBJECT)]


@pytest.mark.parametrize(("a", "b"), [
    # the place names what is placed: two things
    (item("e", "EU data location", "EU customer data is hosted in eu-west-1."),
     item("u", "US data hosting", "US customer data is hosted in us-east-1.")),
    # two things placed, one word shared
    (REPLICA_US, item("b", "Billing database region", "The billing database runs in eu-central-1.")),
    # one place and a region inside it
    (RESIDENCY, item("c", "Analytics replica data location", "Customer data for the analytics replica is in "
                                                              "eu-central-1.")),
])
def test_two_things_or_one_place_are_no_conflict(a: MemoryItem, b: MemoryItem) -> None:
    assert conflict_reason(read_claim(a), read_claim(b)) is None
    assert find_conflicts([a, b]) == []


def test_a_negation_that_asks_what_the_claim_says_denies_nothing_of_it() -> None:
    severe = read_claim(item("s", "Leo's nut allergy", "Leo is severely allergic to peanuts and tree nuts: nothing "
                                                       "with nuts for him, and his EpiPen goes wherever he goes."))
    school = read_claim(item("k", "Leo's allergy at school",
                             "Leo is allergic to peanuts and tree nuts; his EpiPen is in his school bag."))
    assert conflict_reason(severe, school) is None
    none = read_claim(item("n", "Leo's allergies", "Leo's allergies: none."))
    nuts = read_claim(item("a", "Leo's allergies", "Leo is allergic to nuts."))
    assert conflict_reason(none, nuts) is not None
    denied = read_claim(item("d", "Leo's nut allergy", "Leo is not allergic to peanuts and tree nuts."))
    assert conflict_reason(denied, school) == DENIES


def test_recall_finds_a_change_to_a_count_of_what_the_other_counts() -> None:
    """`_changed_count_of` is one subject in `find_conflicts` (recall, /v1/conflicts) as at write."""
    moved = item("a", "Sprint cadence", "We moved to 3-week sprints.")
    length = item("b", "Sprint length", "Sprints are two weeks long.")
    assert conflict_reason(read_claim(moved), read_claim(length)) == SAME_SUBJECT
    assert [why for *_, why in find_conflicts([moved, length])] == [SAME_SUBJECT]


def test_where_a_thing_reaches_is_no_place_it_is_kept() -> None:
    eu = item("e", "Shipping", "Orders ship to customers in the EU.")
    us = item("u", "International shipping", "Orders ship to customers in the US.")
    assert not _placed_apart(read_claim(eu), read_claim(us))  # (one subject all the same: its words before the value)
