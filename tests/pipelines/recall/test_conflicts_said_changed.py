"""How the conflict rule's reading (`conflicts.Claim`) hears that something changed or ended:
a move "off" one thing "onto" another, an ending in a clause after a semicolon, and a
sentence that opens by correcting what was said."""

from __future__ import annotations

import pytest

from pipelines.recall.conflicts import conflict_reason, read_claim, stated_values
from pipelines.records import Identity, MemoryItem, Scope

ME = Identity(user_id="u1", project_id="p1", session_id="s1", org_id="o1")


def claim(title: str, content: str, item_id: str = "c") -> MemoryItem:
    return MemoryItem(id=item_id, tier="stm", type="fact", title=title, content=content,
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


@pytest.mark.parametrize("content", [
    "Turns out the standup is in room 4B.",
    "It turned out the invoice goes to Priya.",
    "Oops, the offsite is in Lisbon.",
    "The quarterly review is actually on Tuesday.",
    "The venue was actually the Old Mill.",
])
def test_turns_out_oops_and_is_actually_say_something_changed_and_name_no_subject(content):
    read = read_claim(claim("Note", content))
    assert read.changes is not None
    assert not {"turn", "oop", "actual"} & read.words


def test_intensifiers_are_no_words_of_the_subject():
    assert read_claim(claim("Tea", "I really drink a lot of green tea.")).words == {"tea", "drink", "green"}


@pytest.mark.parametrize("content", [
    "The v1 search API was archived.", "The legacy billing portal was deprecated.",
    "The old mobile app was sunset in June.", "The old mobile app has been sunset."])
def test_archived_deprecated_and_sunset_say_it_ended(content):
    assert len(read_claim(claim("Note", content)).ended) >= 2


def test_a_sunset_that_is_no_verb_ends_nothing():
    assert read_claim(claim("Photos", "We took beach photos at sunset.")).ended == frozenset()


def test_a_move_off_something_says_it_changed_without_saying_onto_what():
    read = read_claim(claim("Builds", "We moved the nightly builds off Jenkins last week."))
    assert read.changes is not None and "jenkins" in read.retired
    assert read_claim(claim("Hosting", "The team migrated away from Heroku.")).changes is not None
    assert read_claim(claim("Office", "I took the day off.")).changes is None


@pytest.mark.parametrize("said", ["11am", "11 AM", "11 a.m.", "11:00", "11.00am", "11 o'clock"])
def test_a_clock_time_is_one_value_however_written(said):
    assert stated_values(f"Standup is at {said} on weekdays.") == {"11:00"}


def test_clock_times_that_differ_conflict_and_one_written_twice_does_not():
    eleven, two, again = (read_claim(claim(title, f"Standup is at {t}.", t))
                          for title, t in (("Standup", "11am"), ("Daily standup", "2pm"), ("Standup time", "11:00")))
    assert conflict_reason(eleven, two) is not None
    assert conflict_reason(eleven, again) is None


def test_clock_times_read_in_24_hours():
    assert stated_values("The call is at 2:30 PM.") == stated_values("The call is at 14:30.") == {"14:30"}
    assert stated_values("Quiet hours are 12am to 6am.") == {"0:00", "6:00"}
    assert stated_values("Office hours 9-11am.") == {"9:00", "11:00"}
    assert stated_values("Support covers 8am-8pm.") == stated_values("Support covers 08:00-20:00.") == {"8:00", "20:00"}
    assert stated_values("Standup is at 09:30.") == {"9:30"}
    assert "11:00 utc" in stated_values("The deploy is at 11:00 UTC.")  # a time zone stays


def test_codes_with_dotted_numbers_compare_as_values():
    old, new = (read_claim(claim(title, f"CI runs on ubuntu-{v}.", v))
                for title, v in (("CI image", "22.04"), ("Build image", "24.04")))
    assert "ubuntu-22.04" in old.values and "04" not in old.values and "ubuntu22" not in old.words
    assert conflict_reason(old, new) == "same subject, different values"


def test_a_stand_in_for_one_occasion_does_not_move_a_habit():
    from pipelines.recall.conflicts import corrected_by
    gym = claim("Gym", "I go to the gym at 6pm on weekdays.", "gym")
    assert corrected_by("Gym", "Today I'm going at 8pm instead.", "fact", "project", "u1", [gym]) == []
    assert corrected_by("Gym", "I go at 8pm on weekdays now instead.", "fact", "project", "u1", [gym]) == ["gym"]
    # a dated day beside a standing rule: an exception, shown beside it, not a correction
    hours = claim("Support hours", "Support team covers 8am-8pm ET.", "hours")
    assert corrected_by("Support hours", "On Dec 24 support closes at 2pm ET.", "fact", "project", "u1", [hours]) == []
    assert corrected_by("Support hours", "Support team covers 9am-5pm ET now.", "fact", "project", "u1",
                        [hours]) == ["hours"]
