"""The conflict rule shared by recall and /v1/conflicts: detection under any title,
resolution by scope, confidence and recency, corrections of one's own claims."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import msgspec
import numpy as np
import pytest

from pipelines.recall import conflicts
from pipelines.recall.conflicts import (
    MAX_BUCKET,
    REASONS,
    ClaimTable,
    _cosine,
    _pairs,
    authors,
    conflict_reason,
    corrected_by,
    find_conflicts,
    groups,
    groups_in,
    groups_with_pairs,
    is_claim,
    of_two_people,
    read_claim,
    resolve,
    stated_values,
    supersedes,
)
from pipelines.recall.lexical import lemma
from pipelines.records import Identity, Link, MemoryItem, Scope

ME = Identity(user_id="u1", project_id="p1", session_id="s1", org_id="o1")


def claim(id_: str, title: str, content: str, *, kind: str = "project", type_: str = "fact",
          confidence: float = 0.9, updated: str = "2026-01-01T00:00:00+00:00", **kw) -> MemoryItem:
    return MemoryItem(id=id_, tier="stm", type=type_, title=title, content=content,  # type: ignore[arg-type]
                      scope=Scope.for_identity(kind, ME), confidence=confidence,  # type: ignore[arg-type]
                      updated_at=updated, **kw)


def pairs(items) -> set[frozenset[str]]:
    return {frozenset((a.id, b.id)) for a, b, _ in find_conflicts(items)}


def test_values_are_numbers_with_units_times_dates_and_names():
    assert stated_values("Telemetry retention is 30 days.") == {"2592000 second"}  # a duration, in seconds
    assert stated_values("Standup is at 09:30.") == stated_values("Standup is at 9:30.") == {"9:30"}  # one time
    # a day of a year states that day of its month too (what "January 2nd", said without a year, states)
    assert stated_values("We met Caroline in Paris on 2024-01-02.") == {"2024-01-02", "2 januari", "caroline", "paris"}
    assert stated_values("Orion telemetry is stored in TimescaleDB.") == {"timescaledb"}
    assert stated_values("The cluster runs in eu-central-1.") == {"eu-central-1"}  # a code, one value


def test_a_function_word_after_a_number_is_not_its_unit():
    assert stated_values("Standup is at 9:30 every weekday.") == stated_values("Standup is at 9:30 on weekdays.")
    assert stated_values("Port 8080 is used.") == {"8080"}
    assert stated_values("The budget is 50ms.") == stated_values("The budget is 50 ms.") == {"0.05 second"}
    agree = [claim("a", "Standup time", "The team standup is at 9:30 every weekday."),
             claim("b", "Standup time weekday", "Team standup is at 9:30 on every weekday.")]
    assert pairs(agree) == set()
    assert pairs([*agree, claim("c", "Standup moved", "The team standup is at 10:00 every weekday.")]) == {
        frozenset("ac"), frozenset("bc")}


def test_same_subject_with_different_values_conflicts_under_any_title():
    items = [claim("a", "Telemetry retention", "Telemetry retention is 30 days for this experiment."),
             claim("b", "Company retention standard", "Telemetry retention is 7 days across the company."),
             claim("c", "Orion telemetry store", "Orion telemetry is stored in TimescaleDB."),
             claim("d", "Telemetry backend", "Orion telemetry is stored in InfluxDB.")]
    assert pairs(items) == {frozenset("ab"), frozenset("cd")}
    reasons = {why for _, _, why in find_conflicts(items)}
    assert reasons == {"same subject, different values"}


def test_a_date_written_with_its_month_is_one_value_equal_to_its_iso_form():
    assert stated_values("Orion v2 ships on March 3, 2027.") == {"2027-03-03", "3 march"}
    assert stated_values("Orion v2 ships on 3rd March 2027.") == stated_values("Orion v2 ships on 2027-03-03.")
    assert stated_values("The audit is in June 2027.") == {"2027-06"}
    same = [claim("a", "Ship date", "Orion v2 ships on March 3, 2027."),
            claim("b", "Release", "Orion v2 ships on 2027-03-03.")]
    assert pairs(same) == set()
    assert pairs([*same, claim("c", "Ship date moved", "Orion v2 ships on April 14, 2027.")]) == {
        frozenset("ac"), frozenset("bc")}
    # which part of a month ("at the end of June 2026") is a word of the date, not of the subject
    assert read_claim(claim("d", "", "The audit is due at the end of June 2027.")).words == {"audit", "due"}
    assert pairs([claim("e", "Contract renewal", "The lease renews on 2026-01-31."),
                  claim("f", "Lease", "The lease renews at the end of June 2026.")]) == {frozenset("ef")}


def test_no_denies_what_follows():
    assert conflicts.retired_values("The public API is REST with JSON; no GraphQL.") == {"graphql"}
    assert conflicts.retired_values("No, the API is REST.") == frozenset()
    assert pairs([claim("a", "Friday deploys", "Deploys happen on Fridays at the Orion office."),
                  claim("b", "Deploy days", "No deploys on Fridays at the Orion office; Tuesdays instead.")]) == {
        frozenset("ab")}


def test_an_opener_or_whom_a_turn_answers_is_neither_subject_nor_value():
    """Chat turns open with thanks or an exclamation and answer someone by name: the words of
    an opener alone name no subject ("Thanks! The Nike and Gatorade deals ..." / "Thanks!
    The Wolves are my team ..."), whom a turn answers is no value even after a "No" ("No
    problem, John!"), and a function word capitalised after a comma is no name ("..., It
    means a lot")."""
    assert read_claim(claim("a", "", "Thanks! The Nike and Gatorade deals have me stoked!")).subject == ()
    assert pairs([claim("a", "", "Thanks! The Nike and Gatorade deals have me stoked!"),
                  claim("b", "", "Thanks! The Wolves are my team for sure, and LeBron is the man.")]) == set()
    assert pairs([claim("a", "", "Wow, Chicago sounds great!"), claim("b", "", "Wow, Gondor sounds great!")]
                 ) == {frozenset("ab")}  # the words after the opener still make one subject
    assert stated_values("No problem, John! It's great to feel this sense of community.") == set()
    assert stated_values("I really appreciate your support, It means a lot to me.") == set()
    assert stated_values("We moved it to the US, It was cheaper.") == {"us"}  # an acronym is still a name


def test_one_subject_worded_differently_under_other_titles_conflicts():
    """Titles name the subject too, words compare as stems, and a claim retiring a value the
    other states, or saying that what the other names changed, needs only half the words shared."""
    assert pairs([claim("a", "Release date", "Orion v2 ships on March 3, 2027."),
                  claim("b", "Ship date", "Orion v2 release slipped to April 14, 2027.")]) == {frozenset("ab")}
    assert pairs([claim("a", "Orders database", "The orders service uses PostgreSQL 16."),
                  claim("b", "DB engine for orders", "Orders service moves to MySQL 8, replacing PostgreSQL 16.")]
                 ) == {frozenset("ab")}
    # Half the words shared and different dates, nothing retired: two events, not one claim.
    assert pairs([claim("a", "Beta review", "Orion v2 beta review is on March 3, 2027."),
                  claim("b", "Launch party", "Orion v2 launch party is on April 14, 2027.")]) == set()
    # One saying what it names moved (or slipped, was pushed back) needs only half the words too;
    # not when what it says moved is something the other never names.
    assert pairs([claim("a", "Standup time", "Daily standup is at 9:30."),
                  claim("b", "Daily sync", "Standup moved to 10:15 starting next week.")]) == {frozenset("ab")}
    assert pairs([claim("a", "", "I'm meeting Priya for dinner on Thursday."),
                  claim("b", "", "Dinner with Priya got pushed back to Friday.")]) == {frozenset("ab")}
    assert pairs([claim("a", "", "Orion v2 beta review is on March 3, 2027."),
                  claim("b", "", "Orion v2 launch party moved to April 14, 2027.")]) == set()
    # A retired value on another subject is no correction of it.
    assert pairs([claim("a", "Dashboard port", "The dashboard listens on port 8080."),
                  claim("b", "API port", "The API no longer uses port 8080; it uses 9090.")]) == set()


def test_a_name_both_say_is_their_subject_and_one_unit_counted_differently_needs_half_the_words():
    """A name said by both ("Python", "the API") counts as a shared subject word; two numbers
    in one unit ("4 spaces" / "2-space", units compared as stems) say, like a retired value,
    that the claims are about one thing, so half their words shared is enough."""
    assert stated_values("We indent with 2-space tabs.") == stated_values("We indent with 2 spaces.") == {"2 space"}
    assert pairs([claim("a", "Indentation", "Python files use 4 spaces for indentation."),
                  claim("b", "Style", "We indent Python with 2 spaces.")]) == {frozenset("ab")}
    assert pairs([claim("a", "Editor", "I use vim with 2-space indentation.", kind="user", type_="preference"),
                  claim("b", "Atlas style", "The atlas codebase uses 4-space indentation.", type_="constraint")]
                 ) == {frozenset("ab")}
    # Each names as replaced what the other states, and both say "API": one argument.
    assert pairs([claim("a", "API style", "The public API is REST; no GraphQL."),
                  claim("b", "API", "We expose a GraphQL API instead of REST.")]) == {frozenset("ab")}
    assert stated_values("Dependencies are managed with Poetry in place of Pipenv.") == {"poetry"}
    # One unit, different numbers, but only the unit and one word in common: two things.
    assert pairs([claim("a", "Retention", "Telemetry is kept 30 days."),
                  claim("b", "Backups", "Backups are kept 90 days.")]) == set()
    # Different units and the one name only one of them says: still two rules.
    assert pairs([claim("a", "Tile cache policy", "Cache policy: tiles are cached for one hour."),
                  claim("b", "CDN cache policy", "Cache policy for tiles at the CDN: one day.")]) == set()


def test_durations_and_sizes_compare_in_their_base_unit():
    """"200 ms" and "0.2 seconds", "6 months" and "180 days", "10 MB" and "10 megabytes" are
    one value each; "30 minutes" and "2 hours" count in one unit, so half the words shared
    make them one subject; the unit a number takes is not a subject word ("seven days a
    week": "days" is the unit, "week" is not)."""
    assert stated_values("p99 stays under 200 ms.") == stated_values("p99 stays under 0.2 seconds.")
    assert stated_values("Kept 6 months.") == stated_values("Kept 180 days.") == {"15552000 second"}
    assert stated_values("Uploads up to 10 megabytes.") <= stated_values("Uploads up to 10 MB.")
    assert pairs([claim("a", "Session timeout", "User sessions expire after 30 minutes of inactivity."),
                  claim("b", "Idle timeout", "Idle sessions are logged out after 2 hours.")]) == {frozenset("ab")}
    assert pairs([claim("c", "Session timeout", "User sessions expire after 30 minutes of inactivity."),
                  claim("d", "Idle timeout", "Idle sessions are logged out after half an hour (30 minutes).")]) == set()
    assert pairs([claim("e", "Support hours", "Support is staffed seven days a week."),
                  claim("f", "Support coverage", "Support runs 5 days a week, weekends are uncovered.")]) == {
        frozenset("ef")}


def test_a_name_right_before_a_number_is_what_the_number_counts():
    """"Python 3.11" is a version: the number counts in the unit "python", so "Python 3.12"
    differs from it in one unit and half the words shared make one subject; at a sentence
    start a capital word is no name, and a number with its own unit keeps it."""
    assert "3.11 python" in stated_values("The backend runs on Python 3.11.")
    assert not any(" " in v for v in stated_values("Room 5 is booked."))
    assert "2 time" in stated_values("We met Acme 2 times.") and "2 acme" not in stated_values("We met Acme 2 times.")
    assert pairs([claim("a", "Python version", "The backend runs on Python 3.11."),
                  claim("b", "Runtime", "Backend is on Python 3.12 since the last upgrade.")]) == {frozenset("ab")}
    # the same version restated is no conflict; "since" is no unit
    assert pairs([claim("a", "Python version", "The backend runs on Python 3.11."),
                  claim("b", "Runtime", "Backend is on Python 3.11 since the last upgrade.")]) == set()


def test_a_light_verb_before_the_value_is_not_the_subject():
    """"I take 50 mg of sertraline" / "I take 1000 IU of vitamin D": the words before the
    first value are only "take", which names no subject (what is taken follows the value),
    so the two are not one subject stated twice; a real subject before the value still is."""
    assert read_claim(claim("a", "Medication", "I take 50 mg of sertraline every morning.")).subject == ()
    assert pairs([claim("a", "Medication", "I take 50 mg of sertraline every morning.", kind="user"),
                  claim("b", "Vitamins", "I take 1000 IU of vitamin D every morning.", kind="user")]) == set()
    assert pairs([claim("a", "Standup time", "Standup is at 9:30."),
                  claim("b", "Daily sync", "Standup is at 10:15.")]) == {frozenset("ab")}


def test_numbers_that_measure_different_things_are_two_subjects():
    """"Mum takes 5 mg of amlodipine" / "Mum takes 20 mg of atorvastatin": the word after
    "<number> <unit> of" is what is measured; two claims measuring different things do not
    conflict by their numbers (the same thing measured differently still does)."""
    assert read_claim(claim("a", "Meds", "Mum takes 5 mg of amlodipine every morning.")).measured == {"amlodipin"}
    assert pairs([claim("a", "Mum's meds", "Mum takes 5 mg of amlodipine every morning.", kind="user"),
                  claim("b", "Mum's statin", "Mum takes 20 mg of atorvastatin every night.", kind="user")]) == set()
    assert pairs([claim("a", "Mum's meds", "Mum takes 5 mg of amlodipine every morning.", kind="user"),
                  claim("b", "Amlodipine dose", "Mum takes 10 mg of amlodipine every morning now.", kind="user")]
                 ) == {frozenset("ab")}


def test_a_claim_that_says_it_adds_neither_corrects_nor_contradicts():
    """"Allergies: I am allergic to penicillin" / "Allergies: I'm also allergic to shellfish":
    one title, different contents, but the second says it adds ("also", "as well", "too" at a
    clause end): no conflict, so a write does not take it for a correction. A value it
    names as replaced still conflicts."""
    assert pairs([claim("a", "Allergies", "I am allergic to penicillin.", kind="user"),
                  claim("b", "Allergies", "I'm also allergic to shellfish.", kind="user")]) == set()
    assert pairs([claim("a", "Allergies", "I am allergic to penicillin.", kind="user"),
                  claim("b", "Allergies", "I am allergic to shellfish.", kind="user")]) == {frozenset("ab")}
    assert pairs([claim("a", "CI", "CI runs on GitHub Actions."),
                  claim("b", "Nightly suite", "GitHub Actions runs the nightly suite at 2 am, CircleCI too.")]) == set()
    assert pairs([claim("a", "Database", "The orders service uses PostgreSQL 16."),
                  claim("b", "Orders DB", "The orders service also moves to MySQL 8, replacing PostgreSQL 16.")]
                 ) == {frozenset("ab")}
    assert read_claim(claim("a", "Heat", "The office is too cold in winter.")).adds is False


def test_a_claim_that_something_ended_conflicts_with_one_stating_it():
    """"We no longer have a staging environment" / "the newsletter was discontinued last
    month" say that what the other claim states is over, though neither states a value: a
    conflict when the other names every word (and value) of what ended and does not say it
    ended too; time words are not what ended, and "dropped to" is a change."""
    keep = claim("a", "Staging environment", "We keep a staging environment that mirrors prod.")
    gone = claim("b", "Staging", "We no longer have a staging environment; preview deploys replaced it.")
    assert pairs([keep, gone]) == {frozenset("ab")}
    assert conflict_reason(read_claim(keep), read_claim(gone)) == "same subject, one says it ended"
    assert pairs([claim("a", "Weekly newsletter", "Marketing sends a customer newsletter every Tuesday."),
                  claim("b", "Newsletter", "The customer newsletter was discontinued last month.")]
                 ) == {frozenset("ab")}
    # both say (some of) it ended: they agree
    assert pairs([gone, claim("c", "Previews", "Staging environment was retired for preview deploys.")]) == set()
    # the other does not name all of it: another thing ended
    assert pairs([keep, claim("c", "Friday deploys", "We stopped deploying to staging on Fridays.")]) == set()
    # a value in what ended must be the one the other states
    assert pairs([claim("a", "Python", "The service supports Python 3.11."),
                  claim("b", "Old Python", "Support for Python 3.8 was dropped.")]) == set()
    assert pairs([claim("a", "Python", "The service supports Python 3.8."),
                  claim("b", "Old Python", "Support for Python 3.8 was dropped.")]) == {frozenset("ab")}
    # a number or a date that says when it ended is no part of what ended
    assert pairs([claim("a", "Python", "The service supports Python 3.8."),
                  claim("b", "Old Python", "Support for Python 3.8 was dropped in the 2.0 release.")]
                 ) == {frozenset("ab")}
    assert pairs([claim("a", "Staging", "The staging cluster runs on Kubernetes."),
                  claim("b", "Clusters", "The staging cluster was shut down on March 3, 2026.")]) == {frozenset("ab")}
    assert pairs([claim("a", "Python", "The service supports Python 3.11."),
                  claim("b", "Old Python", "Support for Python 3.8 was dropped in the 2.0 release.")]) == set()
    # one word is too little to know what ended; "dropped to" is a new value, not an end
    assert pairs([claim("a", "Offsite", "The offsite is in Lisbon."),
                  claim("b", "Plans", "Offsite cancelled.")]) == set()
    assert read_claim(claim("a", "Signups", "Weekly signups dropped to 50 users.")).ended == frozenset()


def test_titles_that_each_name_what_the_other_never_says_are_two_things_of_one_kind():
    """"Auth service timeout: the auth service ..." / "Billing service timeout: the billing
    service ...": each title names, and its content repeats, a word the other claim never
    says, so the claims are about two things, however many other words they share. One
    side alone qualifying is not enough (an exception to a standard still conflicts), nor
    does it hold across scope kinds, where one retires the other's value, or inside a
    cluster (one subject)."""
    auth = claim("a", "Auth service timeout", "The auth service times out requests after 5 seconds.")
    billing = claim("b", "Billing service timeout", "The billing service times out requests after 30 seconds.")
    assert pairs([auth, billing]) == set()
    assert pairs([claim("c", "Mobile team size", "The mobile team is four engineers."),
                  claim("d", "Web team size", "The web team is nine engineers.")]) == set()
    general = claim("e", "Service timeout", "Every service times out requests after 10 seconds.")
    assert pairs([auth, general]) == {frozenset("ae")}
    moved = claim("f", "Billing service timeout", "The auth service times out after 30 seconds, not 5 seconds.")
    assert pairs([auth, moved]) == {frozenset("af")}
    assert conflict_reason(read_claim(auth), read_claim(billing), one_subject=True) is not None
    # Across scopes the qualifier is mostly the scope ("for my data" / "in orion"): one subject.
    mine = claim("g", "My retention default", "Telemetry retention is 365 days for my data.", kind="user")
    orion = claim("h", "Orion retention policy", "Telemetry retention is 90 days in orion.")
    assert pairs([mine, orion]) == {frozenset("gh")}


def test_sentences_that_each_start_with_another_name_are_about_two_subjects():
    """"Leo goes to bed at 8pm" / "Mia goes to bed at 9pm": two children, not one whose
    bedtime changed, though the claims share every other word and count in one unit. A
    sentence that starts with a name (a capitalised word that is not a common English
    word, or that the content capitalises inside a sentence too) names its subject; each
    claim naming one the other never says are about two things, like qualifying titles. The
    same name with another value still conflicts, and a common word starting a sentence
    ("Production deploys ...") names nothing."""
    assert pairs([claim("a", "Kids bedtime", "Leo goes to bed at 8pm.", kind="user"),
                  claim("b", "Kids bedtimes", "Mia goes to bed at 9pm.", kind="user")]) == set()
    assert pairs([claim("a", "Dog food", "Biscuit eats 200 g a day.", kind="user"),
                  claim("b", "Dog food portions", "Pepper eats 150 g a day.", kind="user")]) == set()
    assert pairs([claim("a", "Leo bedtime", "Leo goes to bed at 8pm.", kind="user"),
                  claim("b", "Leo's bedtime", "Leo goes to bed at 8:30pm now.", kind="user")]) == {frozenset("ab")}
    assert pairs([claim("a", "Deploy window", "Production deploys happen between 14:00 and 16:00 UTC."),
                  claim("b", "When we ship to prod", "Prod deploy window is 08:00-10:00 UTC.")]) == {frozenset("ab")}
    assert read_claim(claim("a", "Kids", "Leo goes to bed at 8pm.")).named == {"leo"}
    assert read_claim(claim("a", "Deploys", "Production deploys happen at 14:00.")).named == frozenset()
    assert read_claim(claim("a", "Chores", "Chloe walks the dog; the dog adores Chloe.")).named == {"chloe"}
    assert read_claim(claim("a", "Birthdays", "Mom's birthday is on March 14.")).named == {"mom"}  # an owner
    assert pairs([claim("a", "Birthday dinners", "Mom's birthday dinner is at 7pm on Friday.", kind="user"),
                  claim("b", "Birthday dinner", "Dad's birthday dinner is at 8pm on Friday.", kind="user")]) == set()
    assert read_claim(claim("a", "Plans", "Let's meet at 5pm.")).named == frozenset()  # "let us"
    assert read_claim(claim("a", "Doctor", "Our family doctor is Dr. Patel.")).named == frozenset()  # not a start
    assert read_claim(claim("a", "Pets", "We adopted Max. Max eats 200 g a day.")).named == {"max"}
    assert read_claim(claim("a", "Builds", "CI runs on GitHub Actions.")).named == frozenset()  # not written as a name


def test_an_owner_or_a_name_beside_the_writer_is_another_subject():
    """"The design team's daily standup" names its owner before its value; "Our daily
    standup" speaks of the writer: two standups, as "I go to bed at 11pm" / "Leo goes to bed
    at 8pm" are two bedtimes. Either claim naming someone (an owner, a first name) the other
    never says while the other speaks of the writer (I, my, we, our) tells them apart; a
    named thing does not ("Jenkins runs ..." / "We run ..."); the same owner with a new value
    still conflicts, as does the writer's own claim corrected."""
    assert pairs([claim("a", "Standup", "Our daily standup is at 9:30."),
                  claim("b", "Standups", "The design team's daily standup is at 10:15.")]) == set()
    assert read_claim(claim("b", "Standups", "The design team's daily standup is at 10:15.")).named == {"team"}
    mine = claim("c", "Bedtime", "I go to bed at 11pm.", kind="user")
    assert read_claim(mine).first_person
    assert not read_claim(claim("d", "Bedtime", "Leo goes to bed at 8pm.")).first_person
    assert pairs([mine, claim("d", "Bedtimes", "Leo goes to bed at 8pm.", kind="user")]) == set()
    assert pairs([mine, claim("e", "My bedtime", "I go to bed at 10pm now.", kind="user")]) == {frozenset("ce")}
    # a named thing is no one: "Jenkins runs ..." / "We run ..." is one build, its time corrected
    jenkins = read_claim(claim("h", "Nightly build", "Jenkins runs the nightly build at 2am."))
    assert jenkins.named == {"jenkin"} and jenkins.persons == frozenset()
    we = claim("i", "Nightly builds", "We run the nightly build at 3am now.")
    assert pairs([jenkins.item, we]) == {frozenset("hi")}
    assert pairs([claim("f", "Ben's passport", "Ben's passport expires in August 2031.", kind="user"),
                  claim("g", "Passports", "Ben's passport now expires in May 2033.", kind="user")]) == {frozenset("fg")}


def test_words_compare_as_the_stems_of_their_lemmas():
    """"kept" and "keep" are one word, as "ships" and "ship" are (simplemma's lemma, then
    Snowball's stem), so "Nightly snapshots are kept for 30 days" and a title "How long we keep
    snapshots" share what they are about; a short word keeps its own ("am" is no "be")."""
    assert "keep" in read_claim(claim("a", "", "Snapshots are kept for 30 days.")).words
    assert "go" in read_claim(claim("a", "", "Sam went to the canteen at noon.")).words
    assert lemma("am") == "am" and lemma("children") == "child"
    assert pairs([claim("a", "Snapshot retention", "Nightly snapshots are kept for 30 days."),
                  claim("b", "How long we keep snapshots", "Snapshots are held for 6 months.")]) == {frozenset("ab")}


def test_a_name_beside_what_a_possessive_names_is_a_subject_word_not_a_value():
    """"My sister Lena is vegan": Lena is whom the claim is about, as "sister" is, not a value
    it states, so "Lena isn't vegan" denies it (a value only one states would tell them
    apart); and she is someone, so "My sister Mia is vegan" is about another sister. A day
    beside a possessive ("our standup Tuesday") stays a value."""
    lena = read_claim(claim("a", "", "My sister Lena is vegan.", kind="user"))
    assert "tom" not in read_claim(claim("h", "", "His brother Tom is vegan.")).values
    assert "lena" not in lena.values and {"lena", "sister"} <= lena.words and "lena" in lena.persons
    assert pairs([lena.item, claim("b", "", "Lena isn't vegan.", kind="user")]) == {frozenset("ab")}
    # "anymore" says when, as the "longer" of "no longer" does: no word of what it denies
    assert pairs([lena.item, claim("b", "", "Lena is not vegan anymore.", kind="user")]) == {frozenset("ab")}
    assert pairs([lena.item, claim("c", "", "My sister Mia is vegan.", kind="user")]) == set()
    assert read_claim(claim("d", "", "Our dog Biscuit's food is 200 g a day.")).named == {"biscuit"}
    assert "tuesday" in read_claim(claim("e", "", "We moved our standup Tuesday to 10:00.")).values
    # so is a name the possessive names itself: "Our CI is CircleCI" is about CI, as "CI runs on ..." is
    assert pairs([claim("f", "CI", "CI runs on Jenkins."), claim("g", "Builds", "Our CI is Buildkite.")]
                 ) == {frozenset("fg")}


def test_a_day_of_a_month_is_not_a_count_in_one_unit():
    """"leaves on 14 March" / "back from Tokyo on 28 March": two days (without a year, read as
    "14 march"), not two counts of one unit, so sharing half their words does not make the
    flight out and the flight back one subject. The same flight moved still conflicts."""
    out = claim("a", "Flight to Tokyo", "Our flight to Tokyo leaves on 14 March.", kind="user")
    assert read_claim(out).values == {"14 march", "tokyo"} and read_claim(out).units == frozenset()
    assert pairs([out, claim("b", "Return flight", "We fly back from Tokyo on 28 March.", kind="user")]) == set()
    assert pairs([out, claim("c", "Tokyo flight", "Our flight to Tokyo leaves on 21 March now.", kind="user")]
                 ) == {frozenset("ac")}


def test_a_number_glued_to_its_unit_is_a_value_not_a_subject_word():
    """"100mg", "8pm": one word, but a value ("100 mg", "8 pm"), so not a word of the subject
    that the other claim lacks: "I take 50 mg of sertraline" / "My sertraline dose is 100mg
    a day" share their subject words all the same."""
    dose = read_claim(claim("b", "Medication", "My sertraline dose is 100mg a day.", kind="user"))
    assert dose.values == {"100 mg"} and "100mg" not in dose.words
    assert read_claim(claim("a", "Kids", "Leo goes to bed at 8pm.")).subject == ("leo", "bed")  # "goes": a light verb
    assert pairs([claim("a", "Sertraline dose", "I take 50 mg of sertraline every morning.", kind="user"),
                  dose.item]) == {frozenset("ab")}


def test_a_write_in_a_user_scope_tells_two_things_of_one_kind_apart_as_recall_does():
    """A write checks its claim in the scope kind it is written in: two things of one kind
    (named first, or by qualifying titles) are told apart within one kind, so a note in a
    user's own scope on another child or another service is no correction of the first
    (before, the proposed claim was read as a project-scope one, and nothing told them apart)."""
    leo = claim("a", "Bedtime", "Leo goes to bed at 8pm.", kind="user")
    assert corrected_by("Kids bedtime", "Mia goes to bed at 9pm.", "fact", "user", "u1", [leo]) == []
    assert corrected_by("Bedtime", "Leo goes to bed at 8:30pm now.", "fact", "user", "u1", [leo]) == ["a"]
    auth = claim("b", "Auth service timeout", "The auth service times out requests after 5 seconds.", kind="user")
    assert corrected_by("Billing service timeout", "The billing service times out requests after 30 seconds.",
                        "fact", "user", "u1", [auth]) == []


def test_different_subjects_same_values_or_no_values_do_not_conflict():
    items = [claim("a", "Port of service 0", "Service number 0 listens on port 9000."),
             claim("b", "Port of service 1", "Service number 1 listens on port 9001."),
             claim("c", "Staging", "The staging cluster runs in eu-central-1."),
             claim("d", "Frontend", "The frontend is written in Svelte."),
             claim("e", "Release cadence", "Orion ships a release every 2 weeks."),
             claim("f", "Cadence", "Orion ships a release every 2 weeks, on Mondays.")]
    assert pairs(items) == set()


def test_same_title_links_and_non_claims():
    items = [claim("a", "Standup time", "Standup is at 09:30."),
             claim("b", "Standup time", "Standup is at 10:15."),
             claim("c", "Cache", "Tiles are cached.", links=[Link(rel="contradicts", to="d")]),
             claim("d", "Tile cache", "Nothing is cached."),
             claim("e", "Team rituals", "Retros are held in the big room."),
             claim("f", "Team rituals", "Demos happen on the last day of the sprint."),
             claim("m1", "dana", "Standup is at 11:00.", type_="message")]
    found = {frozenset((a.id, b.id)): why for a, b, why in find_conflicts(items)}
    # Under one title the contents decide; contents that do not compare are only flagged.
    assert found == {frozenset("ab"): "same subject, different values",
                     frozenset("cd"): "linked: contradicts",
                     frozenset("ef"): "same title, may add or update"}


def test_resolution_scope_then_confidence_then_recency():
    items = [claim("org", "Org retention", "Telemetry retention is 7 days.", kind="org"),
             claim("ses", "Session retention", "Telemetry retention is 30 days.", kind="session"),
             claim("p1", "Project retention", "Telemetry retention is 90 days.", confidence=0.95),
             claim("p2", "Project retention", "Telemetry retention is 60 days.", confidence=0.8)]
    (group,) = groups(items)
    out = resolve(group)
    assert out["p2"].suppressed and out["p2"].resolution == "confidence" and out["p2"].winner == "p1"
    assert out["org"].resolution == "scope" and not out["org"].suppressed
    assert out["p1"].resolution == "scope" and out["org"].conflict_with[0] == "ses"
    assert not out["ses"].suppressed
    newer = claim("n", "Project retention", "Telemetry retention is 45 days.", confidence=0.95,
                  updated="2026-02-01T00:00:00+00:00")
    out = resolve([items[2], newer])
    assert out["p1"].suppressed and out["p1"].resolution == "recency"
    tie = claim("t", "Project retention", "Telemetry retention is 15 days.", confidence=0.95)
    out = resolve([items[2], tie])
    assert {o.resolution for o in out.values()} == {"ambiguous"}
    assert not any(o.suppressed for o in out.values())


def test_two_claims_that_agree_both_stand_beside_the_third_that_contradicts_them():
    """A member loses only to one it conflicts with: "Tuesdays" said twice (the newer a
    note) and "Thursdays" at a lower confidence are one group, through "Thursdays"; the
    older "Tuesdays" never lost to the newer one, which says the same."""
    items = [claim("rule", "Deploy day", "Atlas deploys go out on Tuesdays."),
             claim("note", "Deploy routine", "Atlas deploys go out on Tuesdays, after the standup.",
                   type_="note", updated="2026-02-01T00:00:00+00:00"),
             claim("held", "Deploy day", "Atlas deploys go out on Thursdays.", confidence=0.5)]
    ((group, joined),) = groups_with_pairs(ClaimTable.read(items))
    assert frozenset(("rule", "note")) not in joined and frozenset(("rule", "held")) in joined
    out = resolve(group, pairs=joined)
    assert not out["rule"].suppressed and not out["note"].suppressed
    assert out["held"].suppressed and out["held"].resolution == "confidence"
    assert out["held"].winner in ("rule", "note") and "held" in out[out["held"].winner].conflict_with
    everyone = resolve(group)  # without the pairs, every two members are taken to disagree
    assert everyone["rule"].suppressed and everyone["rule"].resolution == "recency"


def test_a_superseded_claim_drops_out_and_is_not_reported():
    old = claim("old", "Standup time", "Standup is at 09:30.", confidence=0.95)
    new = claim("new", "Standup time", "Standup is at 10:15.", confidence=0.5,
                links=[Link(rel="supersedes", to="old")])
    assert find_conflicts([old, new]) == []
    out = resolve([old, new])
    assert out["old"].suppressed and out["old"].resolution == "superseded"
    assert not out["new"].suppressed


def test_corrections_are_only_of_the_authors_own_claims_in_the_same_scope():
    mine = claim("mine", "Standup time", "Standup is at 09:30.", kind="user")
    theirs = MemoryItem(id="theirs", tier="stm", type="fact", title="Standup time",
                        content="Standup is at 09:15.",
                        scope=Scope(kind="user", user_id="u2"))
    project = claim("proj", "Standup time", "Standup is at 09:45.", kind="project")
    found = [mine, theirs, project]
    assert corrected_by("Standup time", "Standup is at 10:15.", "fact", "user", "u1", found) == ["mine"]
    assert corrected_by("Standup time", "Standup is at 09:30.", "fact", "user", "u1", found) == []
    assert corrected_by("Standup time", "Standup is at 10:15.", "message", "user", "u1", found) == []


def test_a_plan_whose_time_moved_corrects_the_earlier_one_of_its_subject():
    """A to-do is no claim, but an appointment kept as one moves: "Dentist moved to Thursday"
    replaces "Dentist appointment next Tuesday at 3pm" (a to-do or a fact saying so, `CHANGED`);
    a to-do that says nothing moved, or moves something else, replaces nothing."""
    tuesday = claim("tue", "Dentist", "Dentist appointment next Tuesday at 3pm.", type_="todo")
    milk = claim("milk", "Shopping", "Buy milk on Tuesday.", type_="todo")
    for type_ in ("todo", "fact"):
        assert corrected_by("Dentist", "Dentist moved to Thursday.", type_, "project", "u1", [tuesday, milk]) == ["tue"]
    assert corrected_by("Dentist", "Dentist on Thursday at 4pm.", "todo", "project", "u1", [tuesday]) == []
    assert corrected_by("Haircut", "Haircut moved to Thursday.", "todo", "project", "u1", [tuesday]) == []
    assert corrected_by("Shopping", "Buy bread on Tuesday.", "todo", "project", "u1", [milk]) == []
    assert conflicts.reschedules("The review was pushed back to May 3.") and not conflicts.reschedules("Buy milk.")
    # a stand-in at another hour for one week is no move of the habit (no time left unsaid)
    gym = claim("gym", "Gym", "I go to the gym at 6am on weekdays.")
    assert corrected_by("Gym", "This week I'm going at 7pm instead because of the early shifts.", "fact",
                        "project", "u1", [gym]) == []


@pytest.mark.parametrize(("text", "moves"), [
    ("The offsite is now on Thursday.", True), ("Standup is now at 10:15.", True),
    ("The call is now on the 5th.", True), ("Dinner is now for next Tuesday.", True),
    ("From now on I work from Lisbon.", False), ("Standup is on Thursday from now on.", False),
    ("I'm now on call on Fridays.", False), ("We are now on version 3.", False),
    ("Right now on my desk is a plant.", False), ("From now on Thursdays are for reviews.", False),
    ("Dentist moved to Thursday.", True), ("We moved the standup to 10:15.", True), ("The launch moved up.", True),
    ("Dana moved our 1:1s to thursday afternoons.", True), ("Standup moved from 9:30 to 10:15.", True),
    ("Offsite got moved to October.", True), ("I moved to Berlin on Friday.", False),
    ("We moved to York in the summer.", False), ("We moved the family passwords to 1password.", False),
])
def test_moved_or_now_on_says_a_time_moved_only_before_a_time(text: str, moves: bool) -> None:
    """"moved" and "now on/at/for" are a move when a time follows; "from now on" is a
    standing change, "now on call" / "now on version 3" say what someone or something is
    now, and "moved to Berlin" / "to 1password" move someone or something, not a time."""
    assert conflicts.reschedules(text) is moves


def test_a_move_names_its_plan_short_under_another_title():
    """"The dentist got moved to Thursday" ("Dentist") moves "Dentist appointment on Tuesday
    at 3pm": one word names what moved when both say a day or a time, whatever the other's
    title adds; found alike by a write (`corrected_by`) and by recall's pair table
    (`find_conflicts`). A move of something the other never names, or a value that is no
    time ("Lunch budget is 20 euros"), moves nothing."""
    appointment = claim("appt", "Dentist appointment", "Dentist appointment on Tuesday at 3pm.", type_="todo")
    budget = claim("budget", "Lunch budget", "Lunch budget is 20 euros.")
    moved = claim("moved", "Dentist", "The dentist got moved to Thursday.", type_="todo")
    assert corrected_by("Dentist", moved.content, "todo", "project", "u1", [appointment, budget]) == ["appt"]
    assert corrected_by("Lunch", "Lunch moved to 1pm.", "fact", "project", "u1", [budget]) == []
    assert corrected_by("Haircut", "Haircut moved to Thursday.", "todo", "project", "u1", [appointment]) == []
    # kept as facts (a to-do is no claim recall compares)
    said = [claim(c.id, c.title, c.content) for c in (appointment, budget, moved)]
    assert pairs([*said, claim("lunch", "Lunch", "Lunch moved to 1pm.")]) == {frozenset(("appt", "moved"))}


def test_two_scopes_counting_one_thing_in_one_unit_are_one_subject():
    """"The atlas codebase uses 4-space indentation" (project) / "Ben prefers 2-space
    indentation" (user): one subject, which scope priority orders, however few words the two
    share; in one scope kind two such counts may be two things, so the count alone does not
    make one subject there."""
    rule = claim("rule", "Atlas indentation", "The atlas codebase uses 4-space indentation.")
    habit = claim("habit", "Indentation", "Ben prefers 2-space indentation.", kind="user", type_="preference")
    assert conflicts.conflict_reason(read_claim(rule), read_claim(habit)) == conflicts.SAME_SUBJECT
    assert pairs([rule, habit]) == {frozenset(("rule", "habit"))}
    planning = claim("plan", "Planning", "Mondays we hold a 2-hour planning meeting.")
    retro = claim("retro", "Retro", "Fridays the team has a 1-hour retro meeting.")
    assert pairs([planning, retro]) == set()


def test_a_merged_claim_is_its_authors_own_only_when_every_member_was():
    """Consolidation files a merged claim under one member's owner; `authors` names them all."""
    ours = claim("ours", "Standup time", "Standup is at 09:30.", metadata={"authors": ["u1", "u2"]})
    mine = claim("mine", "Standup place", "Standup is at 09:30 in room 4.", metadata={"authors": ["u1"]})
    assert authors(ours) == {"u1", "u2"} and authors(mine) == {"u1"} and authors(claim("x", "T", "c.")) == {"u1"}
    assert corrected_by("Standup time", "Standup is at 10:15.", "fact", "project", "u1", [ours]) == []
    assert corrected_by("Standup place", "Standup is at 10:15 in room 4.", "fact", "project", "u1", [mine]) == ["mine"]


def test_a_captured_correction_supersedes_through_the_fold(tmp_path):
    """Capture records which own claims a proposal corrects; the fold (shared by the delta
    and the pipeline) links it and reports the supersede, so consolidation deactivates the
    old claim."""
    import json

    from pipelines.capture import capture_turn
    from pipelines.inbox import Inbox
    from pipelines.materialize import fold_events
    from pipelines.policy import Policy
    from pipelines.settings import Settings

    policy = Policy(Settings())

    def propose(inbox, content, existing=()):
        block = json.dumps([{"type": "fact", "title": "Standup time", "content": content,
                             "scope": "user", "why_store": "said by the user"}])
        return capture_turn(inbox, policy, ME, "assistant",
                            f"<MEMORY_PROPOSALS_JSON>{block}</MEMORY_PROPOSALS_JSON>",
                            existing=lambda _p: list(existing))

    with Inbox(tmp_path / "inbox.sqlite3") as inbox:
        first = propose(inbox, "Standup is at 09:30.")
        old = fold_events(inbox.read_after(0)).items[first.proposals[0].item_id]
        second = propose(inbox, "Standup is at 10:15.", existing=[old])
        assert second.proposals[0].action == "accept"
        overlay = fold_events(inbox.read_after(0))
    new_id = second.proposals[0].item_id
    assert (new_id, old.id, "supersedes") in overlay.links
    assert [(link.rel, link.to) for link in overlay.items[new_id].links] == [("supersedes", old.id)]


def test_a_claim_read_before_is_read_again_with_its_current_links():
    """Claims are cached per item version, links are not: an item that gains a
    `contradicts` or `supersedes` link is judged with it, and a new version afresh."""
    a = claim("a", "Cache", "Tiles are cached.")
    d = claim("d", "Tile cache", "Tiles are cached in Redis.")  # adds a value: no conflict
    assert pairs([a, d]) == set()
    linked = claim("a", "Cache", "Tiles are cached.", links=[Link(rel="contradicts", to="d")])
    assert pairs([linked, d]) == {frozenset("ad")}
    replacing = claim("a", "Cache", "Tiles are cached.", links=[Link(rel="supersedes", to="d")])
    assert pairs([replacing, d]) == set() and groups([replacing, d]) == [[replacing, d]]
    edited = claim("d", "Tile cache", "Tiles are cached for 5 minutes.", updated="2026-02-01T00:00:00+00:00")
    other = claim("e", "Tile cache TTL", "Tiles are cached for 9 minutes.")
    assert pairs([edited, other]) == {frozenset("de")}


# -- all pairs at once = the rule pair by pair ---------------------------------------------------


def _pairwise_reference(claims, vector_of):
    """The rule applied one pair at a time (how recall judged pairs before): every pair that
    shares a title, a link or a content word held by at most MAX_BUCKET claims, judged by
    `conflict_reason`, plus whether one replaces the other."""
    buckets: dict[str, list[int]] = {}
    for i, c in enumerate(claims):
        keys = ({f"w:{w}" for w in c.words} | ({f"t:{c.title}"} if c.title else set())
                | {f"id:{link.to}" for link in c.item.links} | {f"id:{c.item.id}"})
        for key in keys:
            buckets.setdefault(key, []).append(i)
    pairs = {(i, j) for key, members in buckets.items()
             if not (len(members) > MAX_BUCKET and key.startswith("w:"))
             for x, i in enumerate(members) for j in members[x + 1:]}
    out = {}
    for i, j in pairs:
        a, b = claims[i], claims[j]
        replaces = any(x.item.id in y.supersedes or x.item.superseded_by == y.item.id for x, y in ((a, b), (b, a)))
        out[(i, j)] = (replaces, conflict_reason(a, b, lambda a=a, b=b: _cosine(vector_of, a.item, b.item)))
    return out


def _random_claims(rng: random.Random, n: int, common_word: bool, subjects: Sequence[str] = ()) -> list[MemoryItem]:
    """Claims built to hit every branch: shared titles, subjects and values, numbers in
    titles, links both ways, superseded_by, and (optionally) one word in every claim."""
    subjects = list(subjects) or ["Telemetry retention is", "The standup is at", "Orion telemetry is stored in",
                "Billing telemetry is stored in",
                "Service number 1 listens on port", "The deploy window opens", "Tiles are cached for",
                "The staging environment runs on", "Orion telemetry retention after the incident is"]
    values = ["30 days", "7 days", "09:30", "10:15", "TimescaleDB", "InfluxDB", "9000", "9001", "2024-01-02",
              "2025-03-04", "Paris", "5 minutes", "March 4, 2025", "2 January 2024", "Python 3.11", "Python 3.12",
              "5 mg of sertraline", "20 mg of sertraline", "20 mg of atorvastatin"]  # what a number measures
    # clauses saying something ended (`_ENDED`), with and without a value
    endings = [" We no longer have the staging environment.", " The staging environment was discontinued last month.",
               " Staging environment on port 9000 was removed.", " Telemetry retention stopped."]
    titles = ["Retention", "Standup time", "Port of service 0", "Port of service 1", "Cache", "Deploy", "",
              "Orion telemetry store", "Billing telemetry store"]  # qualified apart (`_qualified_apart`)
    items = []
    for x in range(n):
        stated = " and ".join(rng.sample(values, rng.choice([0, 1, 1, 2])))
        content = f"{rng.choice(subjects)} {stated}{' for the orion team' if rng.random() < 0.3 else ''}."
        if rng.random() < 0.2:  # a value named only to retire it
            content = content[:-1] + f", {rng.choice(['replacing', 'not', 'instead of'])} {rng.choice(values)}."
        if rng.random() < 0.15:
            content += rng.choice(endings)
        title = rng.choice(titles)
        if items and rng.random() < 0.1:  # one that denies (`_denies`) what another says
            twin = rng.choice(items)
            title, content = twin.title, re.sub(r"\b(is|are|opens|listens|runs)\b", r"\1 never", twin.content, count=1)
        elif rng.random() < 0.1:  # or says one thing and denies another
            content += rng.choice([" Telemetry retention is not kept.", " We never use the staging environment."])
        if rng.random() < 0.1:  # a sentence that only weighs an option (`_TENTATIVE`)
            content += rng.choice([" We might move it to InfluxDB.",
                                   " Maybe we no longer need the staging environment."])
        if rng.random() < 0.1:  # one that says it adds (`_ADDS`)
            content += rng.choice([" It also runs on Fridays.", " Paris too.", " That applies as well."])
        if rng.random() < 0.15:  # one that says something changed, with no value (`CHANGED_CLOSE` by the cosine)
            content = rng.choice(["We switched the staging environment.", "Telemetry retention changed for the team."])
        if common_word:
            content += " Shared note."
        links = [Link(rel=rng.choice(["contradicts", "supersedes", "related"]), to=f"c{rng.randrange(n):03d}")
                 for _ in range(rng.choice([0, 0, 0, 1]))]
        superseded_by = f"c{rng.randrange(n):03d}" if rng.random() < 0.05 else None
        items.append(claim(f"c{x:03d}", title, content, links=links, superseded_by=superseded_by,
                           kind=rng.choice(["project", "user", "session"])))
    return items


@pytest.mark.parametrize(("block", "gram", "dense", "few"), [
    (conflicts.PAIR_BLOCK, conflicts.GRAM_MAX_ROWS, 10**12, conflicts.FEW_PAIRS), (37, 0, 0, 0),
    (conflicts.PAIR_BLOCK, 0, 0, 10**9)])
def test_all_pairs_at_once_match_the_rule_pair_by_pair(block, gram, dense, few, monkeypatch):
    """`_pairs` (dense products over the shared columns, or sparse products a block of rows
    at a time) finds the same
    pairs, the same replacements and the same reasons as the rule applied to each pair
    sharing a key, including the embedding cosine (all at once or pair by pair) and the
    MAX_BUCKET cut of over-common words."""
    monkeypatch.setattr(conflicts.pairs, "PAIR_BLOCK", block)
    monkeypatch.setattr(conflicts.pairs, "GRAM_MAX_ROWS", gram)
    monkeypatch.setattr(conflicts.pairs, "DENSE_MAX_WORK", dense)
    monkeypatch.setattr(conflicts.pairs, "FEW_PAIRS", few)
    for seed, n, common in ((1, 40, False), (2, 120, False), (3, 260, True), (4, 2, False), (5, 1, False)):
        rng = random.Random(seed)
        items = _random_claims(rng, n, common)
        gen = np.random.default_rng(seed)
        base = gen.normal(size=(4, 16))
        vectors = {it.id: v / np.linalg.norm(v) for it in items  # every 9th claim without a vector
                   for v in [base[int(it.id[1:]) % 4] + gen.normal(scale=0.35, size=16)] if int(it.id[1:]) % 9}
        vector_of = (lambda it, vectors=vectors: vectors.get(it.id)) if seed % 2 else None
        claims = [read_claim(it) for it in items]
        found = _pairs(ClaimTable.of(items, claims), vector_of)
        got = {(int(i), int(j)): (bool(r), REASONS[int(c)])
               for i, j, r, c in zip(found.i, found.j, found.replaces, found.reason)}
        expected = _pairwise_reference(claims, vector_of)
        assert got == expected, seed
        if vector_of is not None:  # the rows' vectors gathered at once (recall's way) decide alike

            def vectors_of(rows, items=items, vectors=vectors):
                has = np.array([items[r].id in vectors for r in rows.tolist()], bool)
                out = np.zeros((len(rows), 16), np.float32)
                for k in np.flatnonzero(has).tolist():
                    out[k] = vectors[items[int(rows[k])].id]
                return (out if has.any() else None), has

            gathered = _pairs(ClaimTable.of(items, claims), vector_of, vectors_of)
            assert (gathered.reason == found.reason).all() and (gathered.i == found.i).all(), seed
        reasons = {why for _, why in expected.values()}
        if n >= 40:  # the generator reaches every branch of the rule, the cosine included
            reachable = set(REASONS) - (set() if vector_of is not None else {conflicts.CHANGED_CLOSE})  # cosine only
            assert reachable <= reasons and any(r for r, _ in expected.values()), reasons
            if vector_of is not None:
                assert (found.reason != _pairs(ClaimTable.of(items, claims), None).reason).any()


def test_the_words_made_dense_once_give_the_pairs_they_give_made_per_product(monkeypatch):
    """`_pairs` on a recall-sized table makes its words dense once (`_Lacking.words`), over
    all their columns: the same pairs and reasons as each product making only the columns
    it needs (`DENSE_WORDS_MAX_CELLS` 0)."""
    items = _random_claims(random.Random(7), 60, False)
    claims = [read_claim(it) for it in items]
    table = ClaimTable.of(items, claims)
    columns = np.zeros(table.words.shape[1], bool)
    columns[::3] = True
    assert (conflicts._Lacking(table).words(columns) == table.words.toarray()).all()
    assert (conflicts._dense_columns([table.words], columns)[0] == table.words.toarray()[:, columns]).all()
    once = _pairs(table, None)
    monkeypatch.setattr(conflicts.pairs, "DENSE_WORDS_MAX_CELLS", 0)
    apart = _pairs(ClaimTable.of(items, claims), None)
    assert set(REASONS[1:]) & {REASONS[int(r)] for r in once.reason}
    for field in ("i", "j", "replaces", "reason"):
        assert (getattr(once, field) == getattr(apart, field)).all(), field


@pytest.mark.parametrize(("dense", "few"), [(10**12, conflicts.FEW_PAIRS), (0, 0), (0, 10**9)])
def test_all_pairs_at_once_tell_named_subjects_apart_as_the_rule_does(dense, few, monkeypatch):
    """`_pairs` tells two named subjects, an owner and the writer apart (`_qualified_apart`:
    `Claim.named`, `Claim.first_person`) as the rule does pair by pair, dense or sparse."""
    monkeypatch.setattr(conflicts.pairs, "DENSE_MAX_WORK", dense)
    monkeypatch.setattr(conflicts.pairs, "FEW_PAIRS", few)
    named = ["Leo goes to bed at", "Mia goes to bed at", "Ben's bedtime is at", "My bedtime is at",
             "The bedtime is at", "I go to bed at"]
    for seed in (1, 2):
        items = _random_claims(random.Random(seed), 80, False, named)
        claims = [read_claim(it) for it in items]
        found = _pairs(ClaimTable.of(items, claims), None)
        got = {(int(i), int(j)): (bool(r), REASONS[int(c)])
               for i, j, r, c in zip(found.i, found.j, found.replaces, found.reason)}
        assert got == _pairwise_reference(claims, None), seed
    leo, mia, ben, mine = (read_claim(claim(x, "", f"{s} 8pm.")) for x, s in zip("abcd", named))
    assert conflicts._qualified_apart(leo, mia) and conflicts._qualified_apart(ben, mine)


def test_no_claims_or_one_claim_has_no_conflicts():
    lone = claim("a", "Standup time", "Standup is at 09:30.")
    assert find_conflicts([]) == [] and find_conflicts([lone]) == [] and groups([]) == [] and groups([lone]) == []


def test_groups_are_the_connected_pairs():
    """groups(): connected components of conflicting or replacing pairs, in the order of
    their first member, members sorted by id; find_conflicts() leaves replacements out."""
    rng = random.Random(7)
    items = _random_claims(rng, 120, False)
    claims = [read_claim(it) for it in items]
    joined = {pair for pair, (replaces, why) in _pairwise_reference(claims, None).items() if replaces or why}
    parent = list(range(len(items)))

    def root(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for i, j in joined:
        parent[max(root(i), root(j))] = min(root(i), root(j))
    expected: dict[int, list[str]] = {}
    for x, it in enumerate(items):
        expected.setdefault(root(x), []).append(it.id)
    assert [[it.id for it in g] for g in groups(items)] == [sorted(g) for g in expected.values() if len(g) > 1]
    active = [read_claim(it) for it in items if it.active]  # superseded claims are never reported
    reported = {(a.id, b.id, why) for a, b, why in find_conflicts(items)}
    assert reported == {(active[i].item.id, active[j].item.id, why)
                        for (i, j), (replaces, why) in _pairwise_reference(active, None).items()
                        if why and not replaces}
    assert len(reported) > 10


def test_a_corpus_table_gives_the_same_groups_as_reading_the_items():
    """Recall takes its candidates' rows from a table read once for the whole corpus (non-claims
    included, rows in any order); the groups and their resolution are those of the items read
    afresh, and a superseded member names the first member that supersedes it."""
    rng = random.Random(11)
    items = _random_claims(rng, 150, False)
    items[::7] = [MemoryItem(id=it.id, tier="stm", type="message", title=it.title, content=it.content,
                             scope=it.scope) for it in items[::7]]  # turns are not claims
    table = ClaimTable.read(items)
    rows = sorted((r for r in range(len(items)) if is_claim(items[r])), key=lambda r: items[r].id)[5:120]
    taken = groups_in(table.take(rows))
    assert taken == groups([items[r] for r in rows]) and taken
    outcomes = [(group, item_id, outcome) for group in taken for item_id, outcome in resolve(group).items()]
    assert any(o.resolution == "superseded" for _, _, o in outcomes)
    for group, item_id, outcome in outcomes:
        m = next(g for g in group if g.id == item_id)
        by = next((o for o in group if o.id != m.id and supersedes(o, m)), None)
        assert (outcome.resolution == "superseded") == (by is not None)
        assert by is None or outcome.winner == by.id


def test_a_snapshot_table_keeps_its_claims_so_resolving_a_recall_reads_none_again(monkeypatch):
    """A table read without the per-version cache (a snapshot's) keeps each row's claim
    packed: a recall's taken rows give the claims of their items, links read afresh, and
    resolving its groups with them reads no claim again, with the outcomes of reading them."""
    rng = random.Random(13)
    items = _random_claims(rng, 150, False)
    items[::7] = [MemoryItem(id=it.id, tier="stm", type="message", title=it.title, content=it.content,
                             scope=it.scope) for it in items[::7]]  # turns are not claims
    table = ClaimTable.read(items)
    rows = sorted((r for r in range(len(items)) if r % 5), key=lambda r: items[r].id)
    taken = table.take(rows)
    want = [read_claim(it) if is_claim(it) else None for it in taken.items]
    found = groups_with_pairs(taken)
    resolved = [resolve(group, pairs=joined) for group, joined in found]
    assert any(w is not None and w.supersedes for w in want) and found

    def read_again(item):
        raise AssertionError(f"{item.id} read again")

    monkeypatch.setattr(conflicts.claim, "_read_claim", read_again)
    monkeypatch.setattr(conflicts.claim, "_CLAIMS", {})
    assert [taken.claim(row) for row in range(len(taken))] == want
    row_of = {it.id: row for row, it in enumerate(taken.items)}
    assert [resolve(group, pairs=joined, claims=lambda it: taken.claim(row_of[it.id]))
            for group, joined in found] == resolved


def test_table_codes_carry_each_items_scope_kind_id_and_links():
    """A recall's table reads its rows' scope kinds, ids and whether they link anywhere with
    the rows (`ClaimTable.codes`), not from the items: equal codes for equal kinds and ids,
    a non-claim row included, and a taken table's codes are the same rows'."""
    items = [claim("a", "Standup", "The standup is at 09:30.", kind="project"),
             claim("b", "Standup", "The standup is at 10:15.", kind="user", superseded_by="a"),
             claim("c", "Standup", "The standup is at 11:00.", kind="project",
                   links=[Link(rel="contradicts", to="a")]),
             MemoryItem(id="d", tier="stm", type="message", title="x", content="hi there",
                        scope=Scope.for_identity("user", ME))]
    table = ClaimTable.read(items)
    kind, ids, linked = (table.codes[:, c] for c in (conflicts.KIND, conflicts.ID, conflicts.LINKED))
    assert kind[0] == kind[2] != kind[1] == kind[3]
    assert len(set(ids.tolist())) == 4
    assert linked.tolist() == [0, 1, 1, 0]
    taken = table.take([2, 0, 2])
    assert (taken.codes == table.codes[[2, 0, 2]]).all()
    node = conflicts._pairs(taken, None).ids.tolist()  # one node per id, numbered from 0
    assert node[0] == node[2] != node[1] and sorted(set(node)) == [0, 1]


def test_only_pairs_with_a_claim_that_says_something_changed_are_asked_whether_it_did(monkeypatch):
    """`_says_changed_rows` asks `_says_changed` only of the pairs where a row says something
    changed of a subject it names (`ClaimTable.codes`, CHANGES), and answers every pair as
    asking each would."""
    items = [*_random_claims(random.Random(11), 60, False),
             claim("m1", "Daily sync", "Standup moved to 10:15 starting next week."),
             claim("m2", "Standup time", "The team standup is at 09:30."),
             claim("m3", "", "Dinner with Priya got pushed back to Friday."),
             claim("m4", "Dinner", "Dinner with Priya is on Thursday.")]
    claims = [read_claim(it) for it in items]
    table = ClaimTable.of(items, claims)
    changes = table.codes[:, conflicts.CHANGES] > 0
    assert changes.tolist() == [c.changes is not None and bool(c.subject) for c in claims]
    assert 0 < changes.sum() < len(items)
    i, j = (np.array(x, np.int64) for x in zip(*((x, y) for x in range(len(items)) for y in range(x + 1, len(items)))))
    expected = [conflicts._says_changed(claims[x], claims[y]) for x, y in zip(i.tolist(), j.tolist())]
    asked = []
    says_changed = conflicts._says_changed
    monkeypatch.setattr(conflicts.pairs, "_says_changed", lambda a, b: asked.append(1) or says_changed(a, b))
    assert conflicts._says_changed_rows(table, i, j).tolist() == expected
    assert any(expected) and len(asked) == int((changes[i] | changes[j]).sum()) < len(i)


def test_taken_rows_are_the_tables_rows_over_the_columns_they_use():
    """`take` gathers rows straight from the CSR arrays: the same matrices (words, values,
    retired values, keys) as scipy's row indexing with unused columns dropped (values and
    retired values sharing columns), rows in the order asked, repeats and non-claims included."""
    from scipy import sparse

    rng = random.Random(12)
    items = _random_claims(rng, 120, False)
    items[5] = claim("r005", "Database", "We run MySQL 8, replacing Postgres 16 on port 5432.")
    items[6] = claim("r006", "Staging", "The staging environment on port 9000 was removed last month.")
    items[::9] = [MemoryItem(id=it.id, tier="stm", type="message", title=it.title, content=it.content,
                             scope=it.scope) for it in items[::9]]
    table = ClaimTable.read(items)
    assert table.retired.nnz and table.values.nnz and table.ended.nnz and table.ended_values.nnz

    def dense_columns(m):
        used, columns = np.unique(m.indices, return_inverse=True)
        return sparse.csr_matrix((m.data, columns, m.indptr), shape=(m.shape[0], len(used)))

    for rows in ([5, 3, 90, 5, 0, 9], list(range(119, -1, -3)), [9], []):
        # a taken table gives each matrix's arrays before making the matrix
        counts = {name: np.diff(table.take(rows).rows(name).indptr)
                  for name in ("retired", "units", "qualifiers", "ended", "persons", "subjects")}
        taken = table.take(rows)
        assert all((np.diff(getattr(taken, name).indptr) == n).all() for name, n in counts.items())
        both = dense_columns(sparse.vstack([table.values[rows], table.retired[rows]], format="csr"))
        for got, want in ((taken.words, dense_columns(table.words[rows])), (taken.values, both[: len(rows)]),
                          (taken.retired, both[len(rows):]), (taken.keys, dense_columns(table.keys[rows])),
                          (taken.units, dense_columns(table.units[rows]))):
            assert got.shape == want.shape
            assert (got.indptr == want.indptr).all() and (got.indices == want.indices).all()
            assert (got.data == want.data).all()
        # what ended, over the columns of the words and of the values the rows use
        words_used = np.unique(np.concatenate([table.words[rows].indices, table.qualifiers[rows].indices]))
        values_used = np.flatnonzero(np.asarray((table.values[rows].sum(axis=0)
                                                 + table.retired[rows].sum(axis=0))).ravel())
        assert (taken.ended.toarray() == table.ended[rows][:, words_used].toarray()).all()
        assert (taken.ended_values.toarray() == table.ended_values[rows][:, values_used].toarray()).all()
        assert [it.id for it in taken.items] == [items[r].id for r in rows]
        assert (taken.codes == table.codes[rows]).all()
        # which columns are numbers with a unit, renumbered with the values' columns
        used = np.flatnonzero(np.asarray((table.values[rows].sum(axis=0) + table.retired[rows].sum(axis=0))).ravel())
        assert (taken.measures == table.measures[used]).all()


def _plain_stated_values(text, number, name):
    """stated_values as written before its shortcuts (no digit: no number; no name: no sentence starts)."""
    text = conflicts._RETIRED.sub(lambda m: " " * len(m.group(0)), text)
    text = conflicts._VOCATIVE.sub(conflicts._blank_vocative, text)
    days = {conflicts._day_of_month(m) for m in conflicts._YEARLESS_DATE.finditer(text)}
    text = conflicts._YEARLESS_DATE.sub(lambda m: " " * len(m.group(0)), text)
    text = conflicts._NUMBER_WORD.sub(lambda m: conflicts._NUMBER_WORDS[m.group(0).lower()], text)
    text = conflicts._CLOCK_RANGE.sub(r"\1 and ", conflicts._CLOCK.sub(conflicts._clock_time, text))
    found = set(conflicts._DATE.findall(text)) | {m.group(0).lower() for m in conflicts._CODE.finditer(text)}
    rest = conflicts._RANGE.sub(r"\1 \3, \2 \3", conflicts._DATE.sub(" ", text))
    numbers = list(number.finditer(rest))
    found |= {conflicts._number_with_unit(m.group(0), conflicts._counted_noun(rest, m)) for m in numbers}
    found |= days | {conflicts._month_day(v) for v in found if conflicts._DATE.fullmatch(v)}
    starts = {m.group(1) for m in conflicts._SENTENCE_START.finditer(text)}
    named = {m.group(0) for m in name.finditer(text) if m.group(0) not in starts}
    found |= {n.lower() for n in named}
    found |= {f"{n} {conflicts._STEMS([nm.lower()])[0]}" for n, nm in conflicts._named_numbers(rest, numbers, named)}
    return frozenset(v.strip() for v in found if v.strip())


def test_value_patterns_only_skip_positions_where_no_value_starts():
    """_NUMBER and _NAME carry a leading lookahead (a digit, a capital) so the scan skips
    cheaply: they find exactly what the patterns without it find."""
    plain_number = re.compile(r"(?<![\w.:-])\d+(?:[.,:]\d+)*(?:(?:\s*|-)(?:%|[a-z]+))?", re.IGNORECASE)
    plain_name = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w-]*[A-Z0-9][\w-]*\b|(?<=[a-z,;:]\s)[A-Z][\w-]+")
    texts = ["We met Caroline in Paris on 2024-01-02.", "Standup is at 09:30, not 10:15 PM.", "x-1 1,5 kg 3:4 12%",
             "NASA and GPT-4 run on eu-central-1; Bob said ok. Then Eve left", "Ünïcode Ölaf met Zoë, then ÅSA",
             "retention is 30 days\nOrion stores 2 TB in TimescaleDB", "", "no values at all here"]
    rng = random.Random(0)
    alphabet = "aZ9 .,:;-!?%\nÄ0Tb2024-01-02"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(40))) for _ in range(3000)]
    for text in texts:
        for fast, plain in ((conflicts._NUMBER, plain_number), (conflicts._NAME, plain_name)):
            assert [m.group(0) for m in fast.finditer(text)] == [m.group(0) for m in plain.finditer(text)], text
        assert stated_values(text) == _plain_stated_values(text, plain_number, plain_name), text


def test_union_find_components_partition_like_scipy():
    """`_components` (the groups' union-find) splits random graphs as scipy's
    connected_components does (labels may differ, the partition may not)."""
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components

    for seed in range(20):
        rng = random.Random(seed)
        nodes = rng.randrange(1, 60)
        edges = [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(rng.randrange(0, nodes))]
        a, b = [e[0] for e in edges], [e[1] for e in edges]
        ours = conflicts._components(nodes, a, b)
        graph = sparse.coo_matrix((np.ones(len(a)), (a, b)), shape=(nodes, nodes))
        _, theirs = connected_components(graph, directed=False)
        assert {(ours[x] == ours[y]) == (theirs[x] == theirs[y]) for x in range(nodes) for y in range(nodes)} == {True}
        assert all(ours[x] == ours[y] for x, y in edges)


@pytest.mark.parametrize("n_columns", [7, 300, 100_000])
def test_renumber_is_numpy_unique_with_inverse(n_columns):
    """A table's rows renumber their columns densely through a mark per column when the
    columns are few for the ids (else np.unique): the same columns and inverse either way."""
    gen = np.random.default_rng(n_columns)
    for size in (0, 1, 5, 200, 3000):
        columns = gen.integers(0, n_columns, size=size)
        used, inverse = conflicts._renumber(columns, n_columns)
        expected_used, expected_inverse = np.unique(columns, return_inverse=True)
        assert used.tolist() == expected_used.tolist() and inverse.tolist() == expected_inverse.tolist()


@pytest.mark.parametrize(("title", "old", "new", "replaces"), [
    # added detail, a goal, another thing named as changed: not corrections
    ("Pepper", "Pepper weighs 6 kg.", "Pepper is scared of thunder.", False),
    ("Pepper", "Pepper is scared of thunder.", "Pepper stopped eating kibble.", False),  # only the title's word
    ("Diet", "I'm pescatarian.", "I eat red meat on weekends.", False),
    ("Pepper", "Pepper eats 200 g a day.", "Pepper weighs 5 kg now.", False),  # a change in another unit
    # a value of the same kind, or something the older note said, named as changed
    ("Standup", "Daily standup is at 9:30.", "standup is at 10am now", True),
    ("ci", "we run ci on jenkins", "ci moved to github actions, jenkins is gone", True),
    ("Pets' food", "Milo eats dry kibble twice a day.", "Milo switched to a raw diet, no more kibble.", True),
    ("Pets' food", "Luna eats kibble, like Milo.", "Milo switched to a raw diet, no more kibble.", False),
    ("Pepper", "Pepper weighs 6 kg.", "Pepper weighs 5 kg.", True),  # the value rule, as under any title
])
def test_a_note_under_the_title_of_another_replaces_it_only_when_it_says_so(title, old, new, replaces):
    found = [claim("old", title, old, kind="user")]
    assert corrected_by(title, new, "fact", "user", "u1", found) == (["old"] if replaces else [])


def test_notes_under_one_title_whose_contents_do_not_compare_are_both_shown_as_related():
    a = claim("a", "Pepper", "Pepper weighs 6 kg.", updated="2026-01-01T00:00:00+00:00")
    b = claim("b", "Pepper", "Pepper is scared of thunder.", updated="2026-02-01T00:00:00+00:00")
    c = claim("c", "Pepper", "Pepper gets 1 walk a day.", updated="2026-03-01T00:00:00+00:00")
    assert {frozenset((x.id, y.id)): why for x, y, why in find_conflicts([a, b, c])} == {
        frozenset("ab"): "same title, may add or update", frozenset("ac"): "same title, may add or update",
        frozenset("bc"): "same title, may add or update"}
    (group,) = groups([a, b, c])
    outcomes = resolve(group)
    assert {i: (o.resolution, o.suppressed) for i, o in outcomes.items()} == {
        "a": ("related", False), "b": ("related", False), "c": ("related", False)}
    # beside a real tie (equal confidence and time, values that differ) the tie stays ambiguous
    d = claim("d", "Pepper", "Pepper gets two walks a day.", updated="2026-03-01T00:00:00+00:00")
    (group,) = groups([a, b, c, d])
    outcomes = resolve(group)
    assert {i: o.resolution for i, o in outcomes.items()} == {
        "a": "related", "b": "related", "c": "ambiguous", "d": "ambiguous"}


def test_a_turn_said_before_a_correction_that_states_the_replaced_value():
    """The raw turns recall leaves out beside a correction: said before it, and stating
    what it replaced; not a turn on another subject, nor one said after it."""
    fix = claim("c", "Amlodipine dose", "Sam takes amlodipine 10 mg every morning.",
                created_at="2026-03-02T00:00:00+00:00", links=[Link(rel="supersedes", to="a")])

    def turn(text: str, at: str = "2026-03-01T00:00:00+00:00") -> MemoryItem:
        return claim(text[:8], "sam", text, kind="user", type_="message", created_at=at)

    assert conflicts.states_what_was_corrected(turn("My doctor put me on amlodipine 5 mg every morning."), fix)
    assert not conflicts.states_what_was_corrected(turn("My doctor raised my amlodipine to 10 mg every morning."), fix)
    assert not conflicts.states_what_was_corrected(turn("My cardiologist is Dr. Okafor at Riverside clinic."), fix)
    assert not conflicts.states_what_was_corrected(
        turn("Back to amlodipine 5 mg every morning.", at="2026-03-03T00:00:00+00:00"), fix)
    stopped = claim("s", "Amlodipine", "u1 no longer takes amlodipine.", created_at="2026-03-02T00:00:00+00:00",
                    links=[Link(rel="supersedes", to="a")])
    said = turn("I take amlodipine 10 mg every morning.")
    said.metadata["role"] = "user"  # a user's "I" is that user (u1): the name is no subject word
    assert conflicts.states_what_was_corrected(said, stopped)
    said.metadata["role"] = "assistant"
    assert not conflicts.states_what_was_corrected(said, stopped)
    goal = claim("g", "Savings goal", "u1 saves 400 euros a month.", created_at="2026-03-02T00:00:00+00:00",
                 links=[Link(rel="supersedes", to="a")])
    spent = turn("I spend 200 euros a month on groceries.")
    spent.metadata["role"] = "user"
    assert not conflicts.states_what_was_corrected(spent, goal)  # another thing counted in euros
    rent = claim("r", "Rent", "u1 pays 1350 euros a month in rent.", created_at="2026-03-02T00:00:00+00:00",
                 links=[Link(rel="supersedes", to="a")])
    gym, old_rent = turn("I pay 60 euros a month for the gym."), turn("My rent is 1200 euros a month.")
    gym.metadata["role"] = old_rent.metadata["role"] = "user"
    assert conflicts.states_what_was_corrected(old_rent, rent)
    assert not conflicts.states_what_was_corrected(gym, rent)  # only "pay" and "month" in common


def test_a_move_names_what_moved_before_from_and_retires_the_old_value():
    # "moved the orders service from PostgreSQL to CockroachDB": the thing moved stands between
    # the verb and "from"; PostgreSQL is retired, so the older claim is corrected, under any title.
    assert stated_values("We moved the orders service from PostgreSQL to CockroachDB.") == {"cockroachdb"}
    old = claim("a", "Orders database", "The orders service uses PostgreSQL 16.")
    assert corrected_by("Orders DB migration", "We moved the orders service from PostgreSQL to CockroachDB.",
                        "decision", "project", "u1", [old]) == ["a"]
    # "moved to" before "from" names no retired value: the sentence is read as it stands.
    assert stated_values("We moved to Berlin from Paris.") == {"berlin", "paris"}


def test_light_verbs_do_not_make_two_subjects():
    # "uses" / "runs on" say nothing of what the claim is about: the orders service is.
    old = claim("a", "Orders database", "The orders service uses PostgreSQL 16.")
    new = claim("b", "Orders DB", "The orders service runs on CockroachDB.")
    assert pairs([old, new]) == {frozenset("ab")}
    assert read_claim(old).subject == read_claim(new).subject == ("order", "servic")


def test_a_version_is_a_name_when_a_note_under_its_title_says_what_changed():
    old = claim("a", "Orders database", "The orders service uses PostgreSQL 16.")
    assert corrected_by("Orders database", "The orders service now runs on CockroachDB.", "decision",
                        "project", "u1", [old]) == ["a"]
    # what changed must be of the older note's subject, not only under its title
    pet = claim("p", "Pepper", "Pepper weighs 6 kg.")
    assert corrected_by("Pepper", "Pepper now eats 200 g of kibble a day.", "fact", "project", "u1", [pet]) == []


def test_a_state_that_began_again_or_since_a_time_updates_an_undated_one_under_its_title():
    # trial22: "Priya eats fish again since March" was shown beside "Priya is vegetarian",
    # as if both held: "since March" is when the change began, not a value "vegetarian" lacks
    veg = claim("v", "Diet", "Priya is vegetarian.", kind="user", type_="preference")
    for changed in ("Priya eats fish again since March.", "Priya eats fish since March 2026.",
                    "Priya has eaten fish since the 3rd of March.", "Priya started eating fish.",
                    "Priya eats fish again."):
        assert corrected_by("Diet", changed, "preference", "user", "u1", [veg]) == ["v"], changed
    # one day's event, dated, ends no standing state, "again" or not; nor does a note saying nothing changed
    for event in ("Priya ate fish on Monday.", "Priya ate fish again on Monday.", "Priya eats fish."):
        assert corrected_by("Diet", event, "preference", "user", "u1", [veg]) == [], event
    # a past event done again, or something started that is no doing, changes no habit
    gym = claim("g", "Gym", "Priya goes to the gym.", kind="user")
    for event in ("Priya went to the gym again.", "Priya started a gym diary."):
        assert corrected_by("Gym", event, "fact", "user", "u1", [gym]) == [], event
    assert corrected_by("Gym", "Priya goes to the gym again.", "fact", "user", "u1", [gym]) == ["g"]
    # at recall, the newer is the diet now; the older is beaten, not shown beside it
    fish = claim("f", "Diet", "Priya eats fish again since March.", kind="user", type_="preference",
                 updated="2026-02-01T00:00:00+00:00")
    assert resolve([veg, fish])["v"] == conflicts.Outcome("recency", ["f"], suppressed=True, winner="f")
    monday = claim("m", "Diet", "Priya ate fish again on Monday.", kind="user", type_="preference",
                   updated="2026-02-01T00:00:00+00:00")
    assert not resolve([veg, monday])["v"].suppressed


def test_a_name_is_a_word_of_the_claim_whatever_its_stem():
    # "Jenkins" stems to "jenkin", "Maple" to "mapl": the name is a subject word either way.
    assert {"jenkin", "mapl"} <= read_claim(claim("a", "CI", "Our CI runs on Jenkins in the Maple room.")).words
    old = claim("a", "Standup time", "Daily standup is at 9:30 in the Maple room.")
    assert corrected_by("Standup", "Standup moved from 9:30 to 10:15, still in Maple.", "fact", "project", "u1",
                        [old]) == ["a"]


def test_a_name_said_to_be_shut_down_or_closed_is_retired():
    old = claim("a", "Search backend", "Product search is powered by Elasticsearch 7.")
    new = "Product search runs on OpenSearch 2.11; the Elasticsearch cluster was shut down."
    assert "elasticsearch" in read_claim(claim("b", "OpenSearch cutover", new)).retired
    assert corrected_by("OpenSearch cutover", new, "fact", "project", "u1", [old]) == ["a"]
    bank = claim("k", "Bank", "My checking account is with Chase.")
    assert corrected_by("Banking", "Closed the Chase account, checking is at Ally Bank.", "fact", "project",
                        "u1", [bank]) == ["k"]
    # a clause that ends something else leaves the name standing
    assert "chase" in read_claim(claim("c", "Bank", "My bank is Chase; the old savings plan was closed.")).values


def test_a_claim_that_denies_what_another_says_conflicts_with_it():
    # "not", "n't", "never", "no": the same words and values, one denying them
    allergic = claim("a", "Allergies", "I'm allergic to penicillin.")
    denied = claim("b", "Penicillin", "Allergy test came back negative - I'm not actually allergic to penicillin.")
    assert read_claim(denied).negated and not read_claim(allergic).negated
    assert conflict_reason(read_claim(allergic), read_claim(denied)) == conflicts.DENIES
    assert pairs([allergic, denied]) == {frozenset("ab")}
    assert corrected_by("Deploys", "We don't deploy on Fridays.", "fact", "project", "u1",
                        [claim("f", "Friday deploys", "We deploy on Fridays.")]) == ["f"]
    allowed = claim("f", "Force pushes", "Force-pushing to main is allowed for maintainers.")
    assert corrected_by("Main branch protection", "Nobody may force-push to main, maintainers included.", "fact",
                        "project", "u1", [allowed]) == ["f"]  # "nobody", "none", "nothing", "neither", "nor" negate
    # both deny: they agree; a negation that only retires a value states the rest
    assert pairs([denied, claim("c", "Allergy", "Not allergic to penicillin after all.")]) == set()
    assert not read_claim(claim("d", "API", "The public API is REST, not GraphQL.")).negated
    assert pairs([claim("d", "API", "The public API is REST, not GraphQL."),
                  claim("e", "Public API", "The public API is REST.")]) == set()
    # two people, one of them denied: two subjects
    assert pairs([claim("l", "Dinner", "Leo eats meat at dinner."),
                  claim("m", "Meat at dinner", "Mia does not eat meat at dinner.")]) == set()
    # other values, or a claim that adds: the value and adding rules decide, not the negation
    assert conflict_reason(read_claim(claim("s", "Standup", "Standup is not at 9:30.")),
                           read_claim(claim("t", "Standup", "Standup is at 10:00."))) != conflicts.DENIES
    # a negation in another clause denies something else: what it negates is not what the other says
    fun = claim("g", "", "Camping at the lake with the kids was so much fun!")
    fishing = claim("h", "", "We went camping at the lake with the kids again, so fun. "
                             "Didn't expect them to love fishing that much.")
    assert read_claim(fishing).negated and conflict_reason(read_claim(fishing), read_claim(fun)) is None
    assert pairs([fun, fishing]) == set()
    # a negation after "and" denies what follows it; a tag question or an idiom denies nothing
    assert pairs([claim("g", "", "I'm gonna keep going after my dreams."),
                  claim("h", "", "Keep going after your dreams and never quit!")]) == set()
    assert pairs([claim("g", "", "Force pushes are allowed on main."),
                  claim("h", "", "Force pushes and rebases are never allowed on main.")]) == {frozenset("gh")}
    assert not read_claim(claim("i", "", "The lake is so calm in the morning, isn't it?")).negated
    assert not read_claim(claim("j", "", "Can't wait for the grand opening tomorrow!")).negated


@pytest.mark.parametrize(("old", "new", "replaces"), [
    ("Nightly invoice export runs at 02:00 UTC.", "Weekly cleanup of temp files runs Sundays at 04:00 UTC.", False),
    ("Prod api runs 6 replicas.", "Staging api runs 1 replica.", False),
    ("Python code uses 4-space indentation.", "YAML files use 2-space indentation.", False),
    # one item said again with another value, or named as changed: a correction
    ("Prod api runs 6 replicas.", "Prod api runs 8 replicas.", True),
    ("Leo has swimming on saturdays at 9.", "Leo's swimming lesson moved to sunday mornings at 10.", True),
])
def test_notes_naming_two_items_under_one_title_stand_side_by_side(old, new, replaces):
    found = [claim("old", "List", old)]
    assert corrected_by("List", new, "fact", "project", "u1", found) == (["old"] if replaces else [])
    if not replaces:  # both shown, marked as notes under one title, not a conflict
        assert conflict_reason(read_claim(found[0]), read_claim(claim("new", "List", new))) == conflicts.MAY_UPDATE


@pytest.mark.parametrize(("a", "b", "conflict"), [
    (("Retry policy", "Failed webhooks are retried 3 times before we give up."),
     ("Webhook retries", "Webhooks get retried five times, then dropped to the dead-letter queue."), True),
    (("Babysitter", "The Friday babysitter is Hannah."), ("Friday babysitter", "Friday babysitter: Chloe"), True),
    # titles that each name what the other never says: two attributes of one thing
    (("Staging database", "Helios staging runs on PostgreSQL 16."),
     ("Staging resets", "Helios staging is reset every Monday at 06:00."), False),
    # values of two kinds (a name, a duration): two things said of one subject
    (("Orion telemetry store", "Orion telemetry uses InfluxDB."),
     ("Orion retention", "Orion keeps raw telemetry 30 days."), False),
    (("p99 latency SLO", "p99 latency target for checkout is 200-300 ms."),
     ("checkout SLO", "Checkout p99 SLO is 150 ms."), True),  # a range: both ends, in its unit
    # what one says before its value is not all in the other: two subjects
    (("Retry policy", "Failed webhooks are retried 3 times before we give up."),
     ("Job retries", "Failed jobs get retried five times, then dropped to the dead-letter queue."), False),
])
def test_a_subject_said_whole_in_a_longer_claim_under_another_title_is_one_subject(a, b, conflict):
    reason = conflict_reason(read_claim(claim("a", *a)), read_claim(claim("b", *b)))
    assert (reason == "same subject, different values") == conflict
    found = conflicts.find_conflicts([claim("a", *a), claim("b", *b)])
    assert bool(found) == conflict  # the all-pairs engine reads it alike


@pytest.mark.parametrize(("title", "old", "new", "decided"), [
    ("Ledger DB plans", "The ledger service runs on MySQL 5.7.",
     "We're evaluating a move of the ledger service to Postgres sometime next year, nothing decided.",
     "We moved the ledger service from MySQL to Postgres."),
    ("Ledger database", "The ledger service runs on MySQL 5.7.", "We might switch the ledger service to Postgres.",
     "We switched the ledger service to Postgres."),
    ("Ledger database", "We have a staging environment for the ledger.",
     "Maybe we no longer need the staging environment for the ledger.",
     "We no longer have a staging environment for the ledger."),
])
def test_a_sentence_that_only_weighs_an_option_corrects_and_denies_nothing(title, old, new, decided):
    found = [claim("old", "Ledger database", old)]
    assert corrected_by(title, new, "fact", "project", "u1", found) == []
    assert conflict_reason(read_claim(found[0]), read_claim(claim("new", title, new))) in (None, conflicts.MAY_UPDATE)
    assert corrected_by(title, decided, "fact", "project", "u1", found) == ["old"]  # said as done, it corrects


@pytest.mark.parametrize(("old", "new"), [
    (("Docs site", "Documentation is built with Sphinx."),
     ("Docs tooling", "We use MkDocs rather than Sphinx for the docs.")),
    (("Setting", "The story is set in the coastal town of Ashford."),
     ("Town name", "The town is now called Greyhaven, not Ashford.")),
])
def test_naming_as_replaced_the_value_another_states_needs_only_a_third_of_the_words(old, new):
    assert corrected_by(*new, "decision", "project", "u1", [claim("old", *old)]) == ["old"]
    assert conflicts.find_conflicts([claim("old", *old), claim("new", *new)])  # both engines


def test_whom_a_sentence_greets_thanks_or_answers_is_no_value():
    assert conflicts.stated_values("Hey Gina, I had to shut down my bank account.") == frozenset()
    assert conflicts.stated_values("Thanks, Jon! We moved to Berlin.") == {"berlin"}
    assert conflicts.stated_values("Sounds great, Mel! Glad I could help, Maria. Wow, Caro, it's great!") == frozenset()
    # a short answer before a first name only: not a name after a comma
    assert conflicts.stated_values("the api uses json, Protobuf.") == {"protobuf"}
    assert conflicts.stated_values("We moved to Leeds, Yorkshire.") == {"leeds", "yorkshire"}
    greeted = [claim(f"t{n}", "", text, type_="fact") for n, text in enumerate([
        "Hey Gina, I had to shut down my bank account. It was tough, but I needed to do it for my biz.",
        "Hey Jon! Long time no talk! How's the dance studio and the biz?"])]
    assert conflicts.find_conflicts(greeted) == []


# -- corrections of one detail, the user's retired values, revised wishes ---------------------


@pytest.mark.parametrize(("old", "new", "in_part"), [
    # the note says more than the detail corrected: it stays
    (("Protagonist", "The protagonist is Mara Quinn, a 29-year-old marine biologist."),
     ("Mara's age", "Mara Quinn is 34 years old, not 29."), True),
    (("Our doctor", "Our doctor is Dr. Patel at Riverside clinic; appointments are at 9am."),
     ("Appointments", "Appointments with Dr. Patel at Riverside clinic are at 10am now."), True),
    # what the note is about is what was corrected: it is replaced whole
    (("Protagonist's age", "Mara Quinn is 29 years old."),
     ("Mara's age", "Mara Quinn is 34 years old, not 29."), False),
    (("Orders database", "The orders service uses PostgreSQL 16."),
     ("Orders DB migration", "We moved the orders service from PostgreSQL to CockroachDB."), False),
    (("Search backend", "Product search is powered by Elasticsearch 7."),
     ("OpenSearch cutover", "Product search runs on OpenSearch 2.11; the Elasticsearch cluster was shut down."), False),
    (("Amlodipine dose", "Sam takes amlodipine 5 mg every morning."),
     ("Amlodipine dose", "Sam takes amlodipine 10 mg every morning."), False),
    (("Deploy window", "Our deploy window is Tuesdays at 14:00 UTC."),
     ("Deploy window", "The deploy window moved to Thursdays at 14:00 UTC."), False),
])
def test_a_correction_of_one_detail_corrects_the_note_in_part(old, new, in_part):
    fixes = conflicts.corrections(*new, "fact", "project", "u1", [claim("old", *old)])
    assert (fixes.in_part, fixes.replaced) == ((["old"], []) if in_part else ([], ["old"]))
    assert corrected_by(*new, "fact", "project", "u1", [claim("old", *old)]) == fixes.replaced


def test_a_note_corrected_in_part_stands_marked_after_its_correction():
    old = claim("old", "Protagonist", "The protagonist is Mara Quinn, a 29-year-old marine biologist.",
                updated="2026-01-01T00:00:00+00:00")
    new = claim("new", "Mara's age", "Mara Quinn is 34 years old, not 29.", updated="2026-02-01T00:00:00+00:00",
                links=[Link(rel="refines", to="old")])
    assert conflicts.find_conflicts([old, new]) == []  # an answer to the conflict, not one (both engines)
    (group,) = conflicts.groups([old, new])
    out = conflicts.resolve(group)
    assert out["old"].resolution == conflicts.CORRECTED and not out["old"].suppressed and out["old"].winner == "new"
    assert out["new"].resolution == "winner"
    # without the link the older loses on recency, as before
    plain = msgspec.structs.replace(new, links=[])
    assert conflicts.resolve([old, plain])["old"].suppressed


def test_the_user_s_retired_values_count_for_the_proposal_that_records_them():
    setting = [claim("old", "Setting", "The story is set in the coastal town of Ashford.")]
    said = "Change of plan: the town is Greyhaven now, not Ashford."
    fixes = conflicts.corrections("Town name", "The town is called Greyhaven.", "fact", "project", "u1", setting,
                                  evidence=[said])
    assert fixes.replaced == ["old"] and fixes.retiring == ["not Ashford"]
    assert conflicts.corrections("Town name", "The town is called Greyhaven.", "fact", "project", "u1",
                                 setting).replaced == []
    # a turn about something else, or one retiring the very value proposed, says nothing of it
    for other in ("The harbour is Saltby now, not Ashford.", "The town is Ashford, not Greyhaven."):
        assert conflicts.corrections("Town name", "The town is called Greyhaven.", "fact", "project", "u1",
                                     setting, evidence=[other]).retiring == []
    # kept with the stored claim, the retired value is read as the claim's own
    stored = claim("new", "Town name", "The town is called Greyhaven.",
                   metadata={conflicts.RETIRED_BY_USER: ["not Ashford"]})
    assert read_claim(stored).retired == {"ashford"} and read_claim(stored).item.content == stored.content
    assert conflict_reason(read_claim(stored), read_claim(setting[0])) is not None


@pytest.mark.parametrize(("old", "new", "revised"), [
    ("Answer Maya in short bullet points.", "Answer Maya in numbered steps.", True),
    ("Reply to me in a formal tone.", "Reply to me in a casual, friendly tone.", True),
    ("Use type hints everywhere.", "Prefer f-strings over format().", False),  # two items of one list
    ("Don't use emojis.", "Don't use jargon.", False),
    ("Answer Maya in short bullet points.", "Answer Maya in French.", False),  # names what the other does not
    ("Answer Maya in short bullet points.", "Also answer Maya with a summary first.", False),  # says it adds
])
def test_a_wish_restated_under_its_title_replaces_the_old_one(old, new, revised):
    found = [claim("old", "Answers", old, type_="preference")]
    assert corrected_by("Answers", new, "preference", "project", "u1", found) == (["old"] if revised else [])
    assert corrected_by("Answers", new, "fact", "project", "u1",  # a fact under one title may add to another
                        [claim("old", "Answers", old)]) == []


TITLED = [
    claim("a", "Deploy window", "Production deploys happen on Tuesdays at 14:00 UTC.", confidence=0.9),
    claim("b", "Hotfix deploy window", "Hotfixes may deploy on Fridays at 09:00 UTC.", confidence=0.8),
    claim("c", "Deploy window", "The deploy window moved to Thursdays at 14:00 UTC.", confidence=0.7),
    claim("d", "Release slot", "Releases ship on Mondays at 10:00 UTC.", confidence=0.6),
    claim("e", "", "Deploys happen on Wednesdays at 11:00 UTC.", confidence=0.5),
    claim("f", "Window deploy", "Deploys happen on Saturdays at 08:00 UTC.", confidence=0.4),
]


def test_titles_tell_which_rivals_may_stand_side_by_side_without_reading_claims():
    # The pre-filter `_resolve_one_scope` asks before reading claims: it never misses a case
    # beside its rule or two notes under one title.
    from pipelines.recall.conflicts import _beside_under_one_title, names_a_case, titles_may_stand_apart

    read = [read_claim(it) for it in TITLED]
    for a in read:
        for b in read:
            if a is not b and (names_a_case(a, b) or _beside_under_one_title(a, b)):
                assert titles_may_stand_apart(a.title, b.title), (a.item.id, b.item.id)
    assert titles_may_stand_apart("deploy window", "hotfix deploy window")
    assert titles_may_stand_apart("deploy window", "deploy window")
    assert not titles_may_stand_apart("deploy window", "release slot")
    assert not titles_may_stand_apart("deploy window", "window deploy")  # the same words: neither within
    assert titles_may_stand_apart("", "release slot") and not titles_may_stand_apart("", "")


def test_resolving_reads_a_claim_only_for_rivals_whose_titles_relate():
    asked: list[str] = []

    def counting(it: MemoryItem):
        asked.append(it.id)
        return read_claim(it)

    unrelated = [TITLED[0], TITLED[3], TITLED[5]]  # three titles, none within another
    assert resolve(unrelated, claims=counting) == resolve(unrelated)
    assert asked == []
    related = [TITLED[0], TITLED[1], TITLED[2]]
    assert resolve(related, claims=counting) == resolve(related)
    assert set(asked) == {"a", "b", "c"}


def test_one_thing_said_twice_with_no_value_is_told_from_two_things():
    """`says_the_same`: no value on either side, most words alike, neither denying the
    other (what tells one plan said for two days from two plans, `capture.takes_over`)."""
    def said(text: str):
        return read_claim(claim("x", "", text))

    assert conflicts.says_the_same(said("I work remotely."), said("Actually, I work remotely."))
    assert not conflicts.says_the_same(said("I work remotely."), said("I'm back in the office."))
    assert not conflicts.says_the_same(said("I work remotely."), said("I don't work remotely."))
    assert not conflicts.says_the_same(said("I work remotely in Porto."), said("I work remotely in Braga."))
    # two people's plans, however alike the words (`of_two_people`)
    assert not conflicts.says_the_same(said("Tom works remotely."), said("I work remotely."))
    assert not conflicts.says_the_same(said("Tom works remotely."), said("Ana works remotely."))
    assert conflicts.says_the_same(said("Tom works remotely."), said("Tom works remotely, he said."))


@pytest.mark.parametrize(("away", "back", "ends"), [
    ("From Monday I work remotely.", "I'm back in the office from Wednesday.", True),
    ("Tom is on parental leave.", "Tom is back at work from Monday.", True),
    ("I am on parental leave.", "I'm back from parental leave.", True),
    ("I am travelling in Japan.", "I'm back home from Monday.", True),
    ("I work remotely.", "I go back to the gym on Mondays.", False),  # back, but not where it was away from
    ("I work remotely.", "I'm back home from Monday.", False),
    ("I work remotely.", "I'm back on keto.", False),
    ("Tom is on parental leave.", "Ana is back at work from Monday.", False),  # someone else
    ("I work remotely.", "He told me he's back in the office from Wednesday.", False),  # the writer only told
    ("I work at the office.", "I'm back in the office from Wednesday.", False),  # no absence
    ("I work remotely.", "I'm not back in the office yet.", False),
])
def test_a_return_ends_an_absence_from_where_it_is_back_under_any_title(away: str, back: str, ends: bool) -> None:
    """`ABSENCES`: one says its one is back where the other says the same one is away from."""
    reason = conflict_reason(read_claim(claim("a", "Absence", away)), read_claim(claim("b", "Return", back)))
    assert (reason == "same subject, one says it ended") is ends, reason
    if ends:  # what to look for among stored claims: the absence's words
        assert set(conflicts.absences_ended(back).split()) & set(away.lower().rstrip(".").split())


@pytest.mark.parametrize(("there", "away", "ends"), [
    ("I commute to the office daily.", "I work remotely now.", True),
    ("I'm in the office four days a week.", "I switched to working from home.", True),
    ("I commute to the office daily.", "I work remotely.", False),  # says no change: may be a mix
    ("I'm in the office on Tuesdays.", "I work from home now, except Tuesdays when I go into the office.", False),
    ("Ben commutes to the office daily.", "I work remotely now.", False),  # someone else
    ("I commute to the office daily.", "I don't work remotely now.", False),
])
def test_now_away_from_where_one_was_ends_being_there(there: str, away: str, ends: bool) -> None:
    """`PRESENCES`: one says its one is now away from where the other says the same one is."""
    reason = conflict_reason(read_claim(claim("a", "Commute", there)), read_claim(claim("b", "Work setup", away)))
    assert (reason == "same subject, one says it ended") is ends, reason
    if ends:  # what to look for among stored claims: the presence's words
        assert set(conflicts.absences_ended(away).split()) & set(there.lower().rstrip(".").split())


@pytest.mark.parametrize(("text", "values"), [
    ("The launch is on Dec 24.", {"24 decemb"}),
    ("The launch is on 24 December.", {"24 decemb"}),
    ("The party is on the 24th of December.", {"24 decemb"}),
    ("Launch is Dec. 24th", {"24 decemb"}),
    ("Public launch is on 2026-12-24.", {"2026-12-24", "24 decemb"}),  # a day of a year is a day of its month
    ("We run 8 ingest workers in production.", {"8 worker"}),  # the noun counted, not the word naming its kind
    ("Production ingest has 12 workers now.", {"12 worker"}),
    ("We indent with 2-space tabs.", {"2 space"}),  # joined by a hyphen, the word is the unit
    ("We have 2 million users.", {"2 million"}),  # a magnitude counts nothing
    ("Each worker has a 2 gb memory limit.", {"2000000000 byte"}),  # a unit, not the noun after it
])
def test_yearless_days_and_counted_nouns(text: str, values: set[str]) -> None:
    assert stated_values(text) == values


def test_a_change_to_a_count_of_what_the_other_names_is_one_subject() -> None:
    old = read_claim(claim("a", "Sprint length", "Sprints are two weeks long."))
    assert conflict_reason(old, read_claim(claim("b", "Sprint cadence", "We moved to 3-week sprints."))) is not None
    # not a change: two counts under two titles
    assert conflict_reason(old, read_claim(claim("c", "Retro cadence", "We hold 3-week retros."))) is None


def test_us_the_country_is_not_the_writer() -> None:
    us = read_claim(claim("a", "Pricing", "US customers pay 20 dollars a month."))
    assert not us.first_person
    assert read_claim(claim("b", "Pricing", "Send us the invoice by 3 May.")).first_person
    assert not of_two_people(us, read_claim(claim("c", "Pricing", "Ben's customers pay 25 dollars a month.")))


def test_a_text_that_says_no_one_is_back_looks_for_no_absence():
    assert conflicts.absences_ended("I go back to the gym on Mondays.") == ""
    assert conflicts.absences_ended("I work remotely.") == ""


def test_someone_named_is_not_the_writer_whose_words_come_after_the_date():
    """`of_two_people`: "From December 2 I work remotely" speaks of the writer though the
    date comes first, so "Tom works remotely from December 4" corrects nothing of it."""
    mine = claim("mine", "Working remotely", "From December 2 I work remotely.")
    toms = "Tom works remotely from December 4."
    assert corrected_by("Working remotely", toms, "fact", "project", "u1", [mine]) == []
    assert corrected_by("Working remotely", "From December 4 I work remotely.", "fact", "project", "u1",
                        [mine]) == ["mine"]


def test_a_change_close_in_meaning_conflicts_only_with_the_cosine():
    """`CHANGED_CLOSE`: one says something changed, the embeddings are close (CHANGED_COSINE),
    whatever the words; not without the cosine (a write), not below it, not when one adds,
    not when they say the same values, not of two people."""
    latte = read_claim(claim("a", "Coffee", "My usual is an oat milk latte."))
    decaf = read_claim(claim("b", "Morning drink",
                             "Doctor told me to cut caffeine, so my usual is a decaf americano now."))
    close = conflicts.CHANGED_COSINE + 0.01
    assert conflict_reason(latte, decaf, close) == conflicts.CHANGED_CLOSE == conflict_reason(decaf, latte, close)
    assert conflict_reason(latte, decaf) is None and conflict_reason(latte, decaf, close - 0.02) is None
    also = read_claim(claim("c", "Morning drink", "I've also switched to decaf americanos."))
    assert conflict_reason(latte, also, close) is None
    same = read_claim(claim("d", "Standup", "The standup moved to 10:15."))
    assert conflict_reason(read_claim(claim("e", "Daily", "Standup is at 10:15.")), same, close) is None
    leo = read_claim(claim("f", "Bedtimes", "Leo goes to bed early."))
    mia = read_claim(claim("g", "Bedtimes", "Mia switched to a later bedtime."))
    assert conflict_reason(leo, mia, 0.99) == conflicts.MAY_UPDATE  # two children under one title: only flagged


def test_two_peoples_own_words_are_two_subjects_by_the_pair_rule_and_the_table_alike():
    def said(id_: str, user: str, content: str) -> MemoryItem:
        return MemoryItem(id=id_, tier="stm", type="fact", title="Laptop", content=content,
                          scope=Scope.for_identity("project", msgspec.structs.replace(ME, user_id=user)))

    ines, rui = said("a", "ines", "My laptop is a ThinkPad"), said("b", "rui", "My laptop is a MacBook")
    rui_again = said("c", "rui", "My laptop is a Dell")
    ours, theirs = said("d", "ines", "Our laptop is a ThinkPad"), said("e", "rui", "Our laptop is a MacBook")
    vouched = said("f", "rui", "I think the laptop is a MacBook")
    both = said("g", "rui", "My laptop is a Lenovo")
    both = msgspec.structs.replace(both, metadata={"authors": ["ines", "rui"]})  # merged: no one speaker
    reason = conflicts.conflict_reason
    assert reason(read_claim(ines), read_claim(rui)) is None
    assert reason(read_claim(rui), read_claim(rui_again))  # one person: one subject
    assert reason(read_claim(ours), read_claim(theirs))  # shared: one subject whoever says it
    assert reason(read_claim(ines), read_claim(vouched))  # "I think" vouches: not of the writer
    assert reason(read_claim(ines), read_claim(both))  # several people's words: compared as before
    # the table over many claims at once (recall, /v1/conflicts) answers as the pair rule does
    items = [ines, rui, rui_again, ours, theirs, vouched, both]
    assert pairs(items) == {frozenset((a.id, b.id)) for n, a in enumerate(items) for b in items[n + 1:]
                            if reason(read_claim(a), read_claim(b))}


def test_what_two_teammates_were_told_of_someone_else_is_compared():
    """"He told me he'd be away" is of him, not of its writer (`first_person.of_the_writer`): two
    teammates told different dates are not kept apart as each speaking of themselves."""
    def said(id_: str, user: str, content: str) -> MemoryItem:
        return MemoryItem(id=id_, tier="stm", type="fact", title="Tom away", content=content,
                          scope=Scope.for_identity("project", msgspec.structs.replace(ME, user_id=user)))

    ines = read_claim(said("a", "ines", "He told me he'd be away next week, back on the 12th."))
    rui = read_claim(said("b", "rui", "He told me he'd be away next week, back on the 19th."))
    assert not conflicts.own_words_apart(ines, rui)
    assert conflict_reason(ines, rui) == "same subject, different values"
    rests = read_claim(said("c", "rui", "He told me I should rest until the 19th."))  # of the writer
    assert rests.of_writer and not ines.of_writer


def test_a_held_claim_is_said_to_contradict_a_teammates_own_words_only_when_its_author_could():
    """Recall says why a held proposal waits (`_held_for`) by the write check that held it, as
    its author proposed it: held before two people's own words were two subjects, it is not
    shown as contradicting a teammate's."""
    from pipelines.recall.candidates import _held_for

    def said(id_: str, user: str, content: str) -> MemoryItem:
        return MemoryItem(id=id_, tier="stm", type="fact", title="Laptop", content=content,
                          scope=Scope.for_identity("project", msgspec.structs.replace(ME, user_id=user)))

    ines, rui = said("a", "ines", "My laptop is a ThinkPad"), said("b", "rui", "My laptop is a MacBook")
    assert not _held_for(rui, ines)
    assert _held_for(said("c", "ines", "My laptop is a Dell"), ines)  # her own words again: one subject
