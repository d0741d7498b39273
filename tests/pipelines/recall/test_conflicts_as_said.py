"""Values as people say them: a time of day as a word ("noon", "midnight"), a number that
says which one ("the 4.2 release", "release 4.2": no count), "after noon" as the afternoon,
a reschedule in any tense ("is moving to Thursday"), a move "from X to Y" as a change, a command written as code
("`pytest -n auto`"), a move said in the present ("moves from Postgres to SQLite"), and
where someone works said with no word in common ("I work remotely now" / "I commute to the
office"), found by the claim table's pairs (recall, `/v1/conflicts`) as by the rule on one pair."""

from __future__ import annotations

import pytest

from pipelines.recall.conflicts import (
    SAME_SUBJECT,
    conflict_reason,
    find_conflicts,
    read_claim,
    reschedules,
    retired_values,
    stated_values,
)
from pipelines.recall.conflicts.correcting import corrections
from pipelines.records import MemoryItem, Scope


def item(id_: str, title: str, content: str) -> MemoryItem:
    return MemoryItem(id=id_, tier="stm", type="fact", title=title, content=content,  # type: ignore[arg-type]
                      scope=Scope(kind="user", user_id="maya", project_id="home"))


@pytest.mark.parametrize(("text", "values"), [
    ("Our standup is at noon.", {"12:00"}),
    ("at 12 noon", {"12:00"}),
    ("Nightly deploys run at Midnight.", {"0:00"}),
    ("Lunch is at midday.", {"12:00"}),
    ("afternoon tea", set()),
    ("I nap in the after noon.", set()),  # the afternoon, no clock time
    ("Deploys stop after noon.", {"12:00"}),  # a bound, as "after 5pm"
    ("Release 4.2 ships on Friday.", {"friday"}),  # which release, noun first: no count of "ships"
    ("I weigh 72.5 kg.", {"72.5 kg"}),  # a unit after it: a measure
    ("We ship the 4.2 release on Friday.", {"friday"}),  # which release, no count
    ("our 2027 budget is 3 million", {"3 million"}),
    ("the 100 ms budget", {"0.1 second"}),  # a unit after the number: a count still
    ("the 3 engineers", {"3 engin"}),  # one digit, no dot: a count
    ("We ship 2 releases a month.", {"2 releas"}),
    ("The api tests now run with `pytest -n 4`.", {"`pytest -n 4`"}),  # one value, no count in it
    ("We switched the api tests to `pytest  -n auto` instead of `pytest -q`.", {"`pytest -n auto`"}),
])
def test_what_a_text_states(text: str, values: set[str]) -> None:
    assert stated_values(text) == values


@pytest.mark.parametrize(("a", "b", "conflict"), [
    (("Team standup", "The team standup is at noon."), ("Standup time", "The team standup is at 10am."), True),
    (("Team lunch", "Team lunch is every Friday at noon."), ("Deploy cutoff", "No prod deploys after noon on Fridays."),
     False),
    (("Q", "The 4.2 release ships on Friday."), ("R", "The 4.2 release now ships on Monday."), True),
    (("Q", "The 4.2 release ships on Friday."), ("R", "The 4.3 release ships on Monday."), False),  # two releases
    (("Q", "SSO lands in the 4.2 release."), ("R", "SSO lands in the 4.3 release."), True),  # which release: a value
    (("Q", "Release 4.2 ships on Friday."), ("R", "Release 4.3 ships on Monday."), False),  # noun first too
    (("Q", "SSO lands in release 4.2."), ("R", "SSO lands in release 4.3."), True),
    (("Launch", "The launch is on May 3."), ("Launch plan", "The launch slips to May 10."), True),
    (("Release cadence", "We ship 2 releases a month."),
     ("Release notes", "We ship release notes with the 4.2 release."), False),
    # a move said in the present or as under way replaces as one said in the past does
    (("CLI storage", "The CLI stores its data in Postgres."), ("CLI storage", "The CLI moves from Postgres to SQLite."),
     True),
    (("Storage", "The CLI stores its data in Postgres."), ("Storage", "The CLI is moving from Postgres to SQLite."),
     True),
    (("CI", "Our CI runs on Jenkins."), ("CI", "We're switching our CI off Jenkins onto GitHub Actions."), True),
    # code is one value: another command under one title is another value; under two, the
    # program and its flags make no subject of two notes ("slow" is no flag here)
    (("Deploys", "We deploy with `make deploy`."), ("Deploys", "Deploys now go through `./deploy.sh prod`."), True),
    (("Test command", "Run the test suite with `pytest -q`."),
     ("Slow tests", "Run the slow tests with `pytest -m slow`."), False),
    (("Web tests", "Run the web tests with `npm test`."), ("Api tests", "Run the api tests with `pytest -q`."), False),
    (("Users", "User rows live in the `users` table."), ("Orders", "Order rows live in the `orders` table."), False),
])
def test_pairs(a: tuple[str, str], b: tuple[str, str], conflict: bool) -> None:
    x, y = item("a", *a), item("b", *b)
    assert (conflict_reason(read_claim(x), read_claim(y)) == SAME_SUBJECT) is conflict
    assert bool(find_conflicts([x, y])) is conflict


@pytest.mark.parametrize(("a", "b", "conflict"), [
    ("I work remotely now.", "I commute to the office every day.", True),
    ("I'm on parental leave until March.", "I'm back in the office from Monday.", True),
    ("I work remotely.", "I commute to the office every day.", False),  # a standing mix, nothing changed
    ("I commute to the office every day.", "I'm in the office on Tuesdays.", False),
])
def test_where_one_works_is_paired_with_no_word_shared(a: str, b: str, conflict: bool) -> None:
    x, y = item("a", "Work", a), item("b", "Commute", b)
    assert (conflict_reason(read_claim(x), read_claim(y)) is not None) is conflict
    assert [(p.id, q.id, why) for p, q, why in find_conflicts([x, y])] == (
        [("a", "b", "same subject, one says it ended")] if conflict else [])


@pytest.mark.parametrize(("text", "moved"), [
    ("Standup moves to 10:15.", True),
    ("The review is moving to Thursday.", True),
    ("We've pushed the demo to Friday.", True),
    ("The demo is rescheduling to May 3.", True),
    ("The launch slips to May 10.", True),
    ("They're delaying the launch until June.", True),
    ("We're moving to York.", False),  # a place, no time
    ("She pushes back on every estimate.", False),  # an objection
    ("Delays on the Northern line again.", False),
])
def test_a_reschedule_in_any_tense(text: str, moved: bool) -> None:
    assert reschedules(text) is moved


@pytest.mark.parametrize(("text", "changed"), [
    ("We moved from Leeds to York.", True),
    ("Our team is switching from sprints to kanban.", True),
    ("The CLI moves from Postgres to SQLite.", True),
    ("I moved here from Leeds as a kid.", False),  # where one came from, no change said
    ("The bus goes from Leeds to York.", False),  # a route
])
def test_a_move_from_one_thing_to_another_says_it_changed(text: str, changed: bool) -> None:
    assert (read_claim(item("a", "Note", text)).changes is not None) is changed


@pytest.mark.parametrize(("text", "retired"), [
    ("The CLI moves from Postgres to SQLite.", {"postgres"}),
    ("The CLI is moving from Postgres to SQLite.", {"postgres"}),
    ("We're switching log shipping off Papertrail onto Datadog.", {"papertrail"}),
    ("The team migrates away from Heroku this month.", {"heroku"}),
    ("The price goes from 10 to 12 dollars.", {"10 dollar"}),
    ("We switched to `pytest -n auto` instead of `pytest -q`.", {"`pytest -q`"}),
    ("The team moves fast and ships on Fridays.", set()),
])
def test_what_a_text_names_as_replaced(text: str, retired: set[str]) -> None:
    assert retired_values(text) == retired


@pytest.mark.parametrize(("text", "retired"), [
    ("Email Priya Patel at Acme now; John Smith has left Acme.", {"john", "smith"}),  # not Acme
    ("Our contact is Priya Patel; John Smith left the company.", {"john", "smith"}),
    ("I have left the keys with Priya.", set()),
])
def test_someone_named_as_gone_is_retired(text: str, retired: set[str]) -> None:
    assert retired_values(text) == retired


@pytest.mark.parametrize(("a", "b", "conflict"), [
    # a person-valued subject, another person named as its current one: a change
    (("Acme contact", "Acme's contact person is John Smith (john.smith@acme.example)."),
     ("Who to email at Acme", "Email Priya Patel (priya.patel@acme.example) at Acme now; John Smith has left Acme."),
     True),
    (("Acme contact", "The contact person at Acme is John Smith (john.smith@acme.example)."),
     ("Who to email at Acme", "The contact person at Acme is now Priya Patel instead of John Smith."), True),
    (("Acme contact", "Acme's contact person is John Smith."),
     ("Globex contact", "Globex's contact person is Maria Lopez."), False),  # two customers' contacts
    # names beside numbers only: two sorts of thing said, neither replaces the other
    (("Acme refund escalations", "Acme refund disputes go to Acme's account manager, not to engineering."),
     ("Acme refund card", "The refund goes to card 4111 1111 1111 1111."), False),
    (("Refund card", "Refunds for Acme go to the card ending 4242."),
     ("Acme refunds", "Refunds for Acme go to the card ending 1881 now."), True),  # numbers beside numbers
])
def test_who_holds_a_role_and_values_of_two_sorts(a: tuple[str, str], b: tuple[str, str], conflict: bool) -> None:
    x, y = item("a", *a), item("b", *b)
    assert (conflict_reason(read_claim(x), read_claim(y)) is not None) is conflict
    assert bool(find_conflicts([x, y])) is conflict


def test_a_company_owning_a_role_is_nobody() -> None:
    assert not read_claim(item("a", "Acme contact", "Acme's contact person is John Smith.")).persons
    assert read_claim(item("b", "Passport", "Ben's passport expires in 2031.")).persons == {"ben"}


def test_a_card_fact_does_not_replace_an_unrelated_decision() -> None:
    """Trial 32: a card number kept in a fact ("Acme refund card") superseded the author's
    decision on refund disputes: one word shared, the digits against "Acme"."""
    decision = MemoryItem(id="mem_decision", tier="stm", type="decision", title="Acme refund escalations",  # type: ignore[arg-type]
                          content="Decision: Acme refund disputes go to Acme's account manager, not to engineering.",
                          scope=Scope(kind="project", user_id="ana"), metadata={"author": "ana"})
    fixes = corrections("Acme refund card", "The refund goes to card 4111 1111 1111 1111.", "fact", "project",
                        "ana", [decision])
    assert fixes.replaced == [] and fixes.in_part == []
