"""Calendar dates named in a question, and the window a turn must be said in."""

from __future__ import annotations

from datetime import date

import pytest

from pipelines.recall.dates import (
    MAX_DATES,
    asks_when,
    coming_dates,
    days_of_year,
    is_yearly,
    next_yearly_dates,
    next_yearly_note,
    question_dates,
    said_dates,
    said_within,
    states_time,
    weekdays_of,
    weekly_days,
    yearly_days,
)
from pipelines.recall.query import asks_what_was_said, subject_text


@pytest.mark.parametrize(("question", "expected"), [
    ("What movie did Joanna watch on 1 May, 2022?", [(date(2022, 5, 1), date(2022, 5, 1))]),
    ("What did she do on May 1st 2022?", [(date(2022, 5, 1), date(2022, 5, 1))]),
    ("the week before 3June, 2022", [(date(2022, 6, 3), date(2022, 6, 3))]),
    ("Where did Joanna travel to in July 2022?", [(date(2022, 7, 1), date(2022, 7, 31))]),
    ("Anything in Sept. 2021?", [(date(2021, 9, 1), date(2021, 9, 30))]),
    ("What state did she visit in summer 2021?", [(date(2021, 6, 1), date(2021, 8, 31))]),
    ("Plans for winter 2022?", [(date(2022, 12, 1), date(2023, 2, 28))]),
    ("Which performances did John achieve in 2023?", [(date(2023, 1, 1), date(2023, 12, 31))]),
    ("Where was John between August 11 and August 15 2023?", [(date(2023, 8, 11), date(2023, 8, 15))]),
    ("What happened on 31 February 2023?", [(date(2023, 2, 1), date(2023, 2, 28))]),  # no such day: the month
    ("On 1 May 2022 and on June 3 2022", [(date(2022, 5, 1), date(2022, 5, 1)),
                                          (date(2022, 6, 3), date(2022, 6, 3))]),
])
def test_absolute_dates_become_day_ranges(question, expected):
    assert question_dates(question) == expected


@pytest.mark.parametrize("question", [
    "What did she do in May?",  # no year: any May
    "What did he do on May 7?",
    "What happened recently?",
    "Did he score 2023 points?",  # a number, not a date
])
def test_no_absolute_date_no_range(question):
    assert question_dates(question) == []


def test_said_within_widens_the_range_by_days_before_and_after():
    may_first = [(date(2022, 5, 1), date(2022, 5, 1))]
    assert said_within(date(2022, 5, 2), may_first, 7, 30)  # "last night"
    assert said_within(date(2022, 4, 24), may_first, 7, 30)
    assert said_within(date(2022, 5, 31), may_first, 7, 30)
    assert not said_within(date(2022, 4, 23), may_first, 7, 30)
    assert not said_within(date(2022, 6, 1), may_first, 7, 30)
    assert not said_within(date(2022, 5, 2), may_first, 0, 0)


def test_a_long_text_yields_at_most_max_dates():
    text = " ".join(f"on {day} May 2022" for day in range(1, 21))
    found = question_dates(text)
    assert len(found) == MAX_DATES and found[0] == (date(2022, 5, 1), date(2022, 5, 1))


@pytest.mark.parametrize("text", [
    "We ship v2 on March 3rd.", "Heads up: the release goes out on Tuesday", "I went there last week",
    "two days ago we met", "see you at 5pm", "the deadline is 2023-05-01", "in May we moved",
    "It opened in 2019.", "Let's meet tomorrow", "We had fun this weekend",
])
def test_a_text_that_states_a_time(text):
    assert states_time(text)


@pytest.mark.parametrize("text", [
    "Honestly the release is fun to work on", "I may come along", "the march was long", "it was great",
    "I have 3 cats", "Version 2.0 is out",
])
def test_a_text_that_states_no_time(text):
    assert not states_time(text)


@pytest.mark.parametrize(("question", "asks"), [
    ("When is the release?", True), ("How long has she painted?", True), ("What year did he move?", True),
    ("What is the release?", False), ("Where did they go?", False),
])
def test_questions_that_ask_when(question, asks):
    assert asks_when(question) is asks


SATURDAY = date(2026, 11, 28)


@pytest.mark.parametrize(("question", "days"), [
    ("What did we decide yesterday?", [(date(2026, 11, 27), date(2026, 11, 27))]),
    ("what did I say this morning", [(SATURDAY, SATURDAY)]),
    ("the thing from two days ago", [(date(2026, 11, 26), date(2026, 11, 26))]),
    ("what did we discuss last week?", [(date(2026, 11, 16), date(2026, 11, 22))]),  # the calendar week
    ("anything new in the past week?", [(date(2026, 11, 21), SATURDAY)]),
    ("what did we do last weekend?", [(date(2026, 11, 21), date(2026, 11, 22))]),  # not this one
    ("what did Ann say last Friday?", [(date(2026, 11, 27), date(2026, 11, 27))]),
    ("what did Ann say last Saturday?", [(date(2026, 11, 21), date(2026, 11, 21))]),  # a week back
    ("what came up last month?", [(date(2026, 10, 1), date(2026, 10, 31))]),
    ("What did we talk about today?", [(SATURDAY, SATURDAY)]),  # about the past: today counts
    ("what did Ann say on Monday?", [(date(2026, 11, 23), date(2026, 11, 23))]),
    ("what did we decide on Saturday?", [(SATURDAY, SATURDAY)]),  # today is a Saturday
    ("What's on today?", []), ("What are we doing on Monday?", []),  # not about what was said
    ("What is on tomorrow?", []), ("What's the plan for next week?", []), ("What did she do in 2022?", []),
])
def test_said_dates_read_past_words_against_the_day_of_asking(question, days):
    assert said_dates(question, SATURDAY) == days


@pytest.mark.parametrize(("question", "days"), [
    ("anything I should remember for tomorrow?", [(date(2026, 11, 29), date(2026, 11, 29))]),
    ("what did I plan for next week?", [(date(2026, 11, 30), date(2026, 12, 6))]),  # the calendar week after
    ("anything on this week?", [(SATURDAY, date(2026, 11, 29))]),  # what is left of it
    ("plans for this weekend?", [(SATURDAY, date(2026, 11, 29))]),
    ("and next weekend?", [(date(2026, 12, 5), date(2026, 12, 6))]),
    ("what's happening next month?", [(date(2026, 12, 1), date(2026, 12, 31))]),
    ("what's on next Friday?", [(date(2026, 12, 4), date(2026, 12, 4))]),
    ("What's on today?", [(SATURDAY, SATURDAY)]),
    ("What did we decide today?", []),  # about the past: `said_dates` places it
    ("What did we decide yesterday?", []), ("when is mum's birthday?", []),
    ("whose birthday is soon?", [(SATURDAY, date(2026, 12, 28))]),  # no day named: the next 30
    ("anything coming up?", [(SATURDAY, date(2026, 12, 28))]),
    ("what's coming up next month?", [(date(2026, 12, 1), date(2026, 12, 31))]),  # the month named
    ("what did we say was coming up?", []),  # about the past
])
def test_coming_dates_read_days_to_come_against_the_day_of_asking(question, days):
    assert coming_dates(question, SATURDAY) == days


@pytest.mark.parametrize(("question", "asks"), [
    ("What did we talk about yesterday?", True), ("What did we decide last week?", True),
    ("what did I tell you this morning?", True),
    ("What did we decide about payments yesterday?", False),  # a subject: matched by its words
    ("What did we talk about?", False),  # no time
    ("What did we talk about today?", True), ("What's on the agenda today?", False),
])
def test_questions_that_ask_what_was_said_then(question, asks):
    assert asks_what_was_said(question) is asks


@pytest.mark.parametrize("question, searched", [
    ("What did I tell you about my sister last month?", "What did I tell you about my sister  ?"),
    ("what did we decide about the API yesterday?", "what did we decide about the API  ?"),
    # someone's doings at a time: a turn may say "last weekend" too
    ("What event did John volunteer at last weekend?", "What event did John volunteer at last weekend?"),
    ("What did I tell you about my sister?", "What did I tell you about my sister?"),
])
def test_a_question_about_our_conversation_searches_without_the_time_it_names(question, searched) -> None:
    assert subject_text(question) == searched


def test_the_day_of_asking_is_the_askers_day_with_their_offset() -> None:
    from datetime import datetime, timezone

    from pipelines.recall.dates import asking_day

    late_friday_utc = datetime(2026, 11, 27, 20, 0, tzinfo=timezone.utc).timestamp()  # Saturday 05:00 in Tokyo
    assert asking_day(late_friday_utc, "UTC") == (date(2026, 11, 27), 0)
    assert asking_day(late_friday_utc, "Asia/Tokyo") == (date(2026, 11, 28), 9 * 3600)
    assert asking_day(late_friday_utc, "America/Los_Angeles") == (date(2026, 11, 27), -8 * 3600)
    with pytest.raises(ValueError, match="time zone"):
        asking_day(late_friday_utc, "Nowhere/Special")


@pytest.mark.parametrize(("text", "days"), [
    ("Gym on Mondays, Wednesdays and Fridays at 7am.", 0b0010101), ("Team sync every Tuesday at 10am.", 0b10),
    ("Standup every weekday at 9:30.", 0b0011111), ("I walk the dog daily.", 0b1111111),
    ("Pizza on Friday evenings.", 0b10000), ("I fly to Perth on Monday.", 0), ("Mum's birthday is August 14.", 0),
])
def test_weekly_days_are_the_days_a_habit_recurs_on(text, days):
    assert weekly_days(text) == days


def test_only_a_day_or_two_asks_for_the_habits_of_its_weekdays():
    assert weekdays_of(coming_dates("anything for tomorrow?", SATURDAY)) == 1 << 6  # Sunday
    assert weekdays_of(coming_dates("plans this weekend?", SATURDAY)) == 0b1100000
    assert weekdays_of(coming_dates("what did I plan for next week?", SATURDAY)) == 0


@pytest.mark.parametrize(("text", "days"), [
    ("Mom's birthday. Ana's mom's birthday is March 3; she loves orchids.", {303}),
    ("Our wedding anniversary is the 14th of June.", {614}),
    ("Ben was born on 29 February 1992.", {229}),  # a leap day comes round too
    ("Birthdays: Lena on 5 May and Tom on May 21st.", {505, 521}),
    ("Dentist on March 3.", set()),  # a day, not one that comes round
    ("Mum's birthday is sometime in spring.", set()), ("birthday on March 32", set()),
])
def test_birthdays_and_anniversaries_name_days_of_every_year(text, days):
    assert yearly_days(text) == days


def test_a_month_or_the_coming_weeks_ask_which_days_of_the_year_fall_then():
    assert days_of_year(coming_dates("what's coming up next month?", SATURDAY)) == {1200 + d for d in range(1, 32)}
    assert 1228 in days_of_year(coming_dates("whose birthday is soon?", SATURDAY))
    assert days_of_year([(date(2026, 1, 1), date(2026, 12, 31))]) == set()  # a year names every day: none


@pytest.mark.parametrize(("text", "meant", "today", "coming"), [
    ("Anna's birthday: Anna's birthday is March 3.", (), date(2026, 11, 29), [date(2027, 3, 3)]),
    ("Birthday: March 3", (), date(2027, 3, 3), [date(2027, 3, 3)]),  # today's
    ("Eve was born on February 29, 1992.", (), date(2026, 11, 29), [date(2028, 2, 29)]),
    ("Leo's birthday: Leo's birthday is tomorrow.", ("Fri 2026-11-27",), date(2026, 11, 29), [date(2027, 11, 27)]),
    ("Anna's birthday party is on March 3.", (), date(2026, 11, 29), []),  # once, that year's
    ("Trip: back on March 3", (), date(2026, 11, 29), []),
])
def test_a_birthday_or_an_anniversary_comes_round_every_year(text, meant, today, coming) -> None:
    assert next_yearly_dates(text, today, meant) == coming
    assert is_yearly(text) == bool(coming)


def test_the_next_date_is_counted_in_days() -> None:
    assert next_yearly_note([date(2027, 3, 3)], date(2026, 11, 29)) == "(Next: 2027-03-03, in 94 days.)"
    assert next_yearly_note([date(2026, 11, 30)], date(2026, 11, 29)) == "(Next: 2026-11-30, in 1 day.)"
    assert next_yearly_note([date(2026, 11, 29)], date(2026, 11, 29)) == "(Next: 2026-11-29, today.)"
    assert next_yearly_note([], date(2026, 11, 29)) == ""
