"""What a claim's time words meant when said (`pipelines.validity`), and when two claims
hold at different times (`records.apart_in_time`, `MemoryItem.window_state`)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import msgspec
import pytest

from pipelines.capture import takes_over
from pipelines.recall.conflicts import Corrections, corrections
from pipelines.recall.dates import coming_dates
from pipelines.records import MemoryItem, ProposedItem, Scope, apart_in_time
from pipelines.validity import anchor, reread, undated, with_window

SAO_PAULO = ZoneInfo("America/Sao_Paulo")  # UTC-3 all year
SUNDAY_EVENING = datetime(2026, 11, 15, 21, 30, tzinfo=SAO_PAULO)  # Monday 00:30 in UTC


def window(text: str, at: datetime = SUNDAY_EVENING, zone: ZoneInfo = SAO_PAULO) -> tuple:
    got = anchor(text, at, zone)
    return (got.valid_from or "")[:10], (got.valid_to or "")[:10]


@pytest.mark.parametrize(("text", "wanted"), [
    ("Maya is in Lisbon from Monday to Thursday next week.", ("2026-11-16", "2026-11-19")),
    ("Until Friday, reports go to Ana instead of Maya.", ("", "2026-11-20")),
    ("Maya is on call this week.", ("2026-11-09", "2026-11-15")),
    ("I am away next week.", ("2026-11-16", "2026-11-22")),
    ("The Melbourne trip moved to Friday, December 4 to Sunday, December 6.", ("2026-12-04", "2026-12-06")),
    ("Dentist appointment next Tuesday at 3pm.", ("", "2026-11-17")),
    ("We meet tomorrow.", ("", "2026-11-16")),
    ("From December 1, the address is Rua Nova 5.", ("2026-12-01", "")),
    ("Between May 3 and May 9 the office is closed.", ("2027-05-03", "2027-05-09")),
    ("All card payments go through Stripe as of last Friday.", ("2026-11-13", "")),
    # a standing change still takes the days a cue bounds it with
    ("From now on, until Friday, reports go to Ana.", ("", "2026-11-20")),
    ("Going forward, starting next Monday, the standup is on Thursday.", ("2026-11-16", "")),
    # done once on a birthday or an anniversary: that day's
    ("Anna's birthday party is tomorrow.", ("", "2026-11-16")),
    ("I'm off next Friday for our anniversary.", ("", "2026-11-20")),
])
def test_the_words_bound_a_window_read_on_the_day_said_in_the_speakers_zone(text: str, wanted: tuple) -> None:
    assert window(text) == wanted


def test_the_day_said_is_the_speakers_not_utcs() -> None:
    # Sunday 21:30 in Sao Paulo is Monday in UTC: there "next week" is the week after
    assert window("in Lisbon from Monday to Thursday next week", zone=ZoneInfo("UTC")) == ("2026-11-23", "2026-11-26")
    bound = anchor("until Friday", SUNDAY_EVENING, SAO_PAULO).valid_to
    assert bound == "2026-11-20T23:59:59-03:00"  # the end of her Friday, in her offset


@pytest.mark.parametrize("text", [
    "Standup every weekday at 9:30.", "Gym on Mondays and Thursdays.", "My birthday is on March 3.",
    "Maya's passport expires in March.", "Rua Velha 12 is the address.", "I may go in May or march on.",
    "The apartment lease runs until 31 October.", "The report was due November 2.", "Biscuit passed away on Sunday.",
    "My blood group is A+, the GP letter came today.", "Deploying on a Friday is fine now.",
    "Book club meets on the first Monday of the month.", "Got the raise, 58k from April.",
    "Leo's swimming lesson moved to sunday mornings at 10.", "The Friday babysitter is Hannah.",
    "Standup is on Thursday from now on.", "Going forward, the design review is on Wednesday.",
    "Henceforth payroll runs on Friday.", "Standup is on Thursday until further notice.",
    "Anna's birthday is tomorrow.", "Our anniversary is next Friday.",  # every year's
])
def test_a_recurrence_a_yearly_date_a_past_or_habitual_day_or_a_stated_end_bounds_nothing(text: str) -> None:
    # (the conflict pairs' corrections among them: a window there would keep a correction
    # from replacing what it corrects, `records.apart_in_time`)
    assert window(text) == ("", "")


def test_a_to_dos_weekday_and_the_day_a_plan_moved_to_are_coming_days() -> None:
    # said on Sunday 2026-11-15: a bare weekday told as one thing to come is that coming day
    assert window("Dentist appointment on Tuesday at 3pm.") == ("", "2026-11-17")
    got = anchor("Dentist appointment on Tuesday at 3pm.", SUNDAY_EVENING, SAO_PAULO, plan=True)
    assert (got.valid_from, (got.valid_to or "")[:10]) == (None, "2026-11-17")
    assert window("The dentist got moved to Thursday.") == ("", "2026-11-19")  # "moved": a move, not the past
    assert window("Dinner with Priya got pushed back to Friday.") == ("", "2026-11-20")
    for kind in ("todo", "note"):
        item, _ = with_window(ProposedItem(type=kind, content="Call the bank on Wednesday."),
                              SUNDAY_EVENING.isoformat(), "America/Sao_Paulo")
        assert (item.valid_to or "")[:10] == "2026-11-18", kind


@pytest.mark.parametrize(("text", "wanted", "meant"), [
    ("I'm off on Friday.", ("", "2026-11-20"), "Fri 2026-11-20"),
    ("The demo is on Wednesday.", ("", "2026-11-18"), "Wed 2026-11-18"),
    ("Maria is off on Friday.", ("", "2026-11-20"), "Fri 2026-11-20"),  # a name is no past verb ("mare")
    ("The meeting is scheduled for Thursday.", ("", "2026-11-19"), "Thu 2026-11-19"),
    ("We met on Thursday.", ("", ""), "Thu 2026-11-12"),  # the past: the latest Thursday
    ("The party on Saturday was fun.", ("", ""), "Sat 2026-11-14"),
    ("Lena's Monday class is yoga.", ("", ""), "Mon 2026-11-16"),  # a kind of day, no window
])
def test_a_bare_weekday_is_the_coming_day_unless_told_in_the_past_or_naming_a_kind_of_day(
        text: str, wanted: tuple, meant: str) -> None:
    assert window(text) == wanted
    assert list(anchor(text, SUNDAY_EVENING, SAO_PAULO).dates.values()) == [meant]


@pytest.mark.parametrize(("text", "wanted", "meant"), [
    ("We've added Tom to the rota from Monday.", ("2026-11-16", ""), "Mon 2026-11-16"),
    ("We've just added Tom to the rota from Monday.", ("2026-11-16", ""), "Mon 2026-11-16"),
    ("He's added Tom to the rota from Monday.", ("2026-11-16", ""), "Mon 2026-11-16"),
    ("We have finally booked the room for the offsite on Monday.", ("", "2026-11-16"), "Mon 2026-11-16"),
    ("We've added Tom and moved Ana to the rota from Monday.", ("2026-11-16", ""), "Mon 2026-11-16"),
    # the simple past with a plain day: the day gone by
    ("I was off on Monday.", ("", ""), "Mon 2026-11-09"),
    ("We added Tom on Monday.", ("", ""), "Mon 2026-11-09"),
    # a past told after a present perfect, not joined to it: still the past
    ("I've told him I met Ana on Monday.", ("", ""), "Mon 2026-11-09"),
    ("We have an intern who started on Monday.", ("", ""), "Mon 2026-11-09"),  # "have" owns, no perfect
    # "since" a day: the day gone by, whatever the tense
    ("I've been off since Monday.", ("", ""), "Mon 2026-11-09"),
])
def test_a_present_perfect_sets_up_the_coming_day_and_a_simple_past_the_day_gone_by(
        text: str, wanted: tuple, meant: str) -> None:
    """The present perfect tells what is set up now (`validity._PERFECT`), never a day gone
    by, an adverb between or a participle joined to it ("we've just added ... and moved"); "since"
    a day is the day gone by."""
    assert window(text) == wanted
    assert list(anchor(text, SUNDAY_EVENING, SAO_PAULO).dates.values()) == [meant]


def test_relative_words_say_what_they_meant_and_a_recurrence_none() -> None:
    assert anchor("Dentist next Tuesday at 3pm, passport expires in March.", SUNDAY_EVENING, SAO_PAULO).dates == {
        "next Tuesday": "Tue 2026-11-17", "March": "March 2027"}
    assert anchor("Standup every Monday at 9:30.", SUNDAY_EVENING, SAO_PAULO).dates == {}
    assert anchor("My birthday is on March 3.", SUNDAY_EVENING, SAO_PAULO).dates == {}
    assert anchor("Book club is the first Monday of the month.", SUNDAY_EVENING, SAO_PAULO).dates == {}
    assert anchor("Stripe since last Friday.", SUNDAY_EVENING, SAO_PAULO).dates == {"last Friday": "Fri 2026-11-13"}


@pytest.mark.parametrize(("text", "wanted", "meant"), [
    ("Ana said she'd be off on Friday.", ("", ""), "Fri 2026-11-20"),
    ("He told me he would be away next week.", ("", ""), "2026-11-16 to 2026-11-22"),
    ("Tom mentioned that Ana is moving to Berlin from December 1.", ("", ""), None),
    ("She said she met Tom on Friday.", ("", ""), "Fri 2026-11-13"),  # the report tells the past
    # the writer's own plan, or a thing's time, reported: still bound
    ("My manager said I can work remotely from Monday.", ("2026-11-16", ""), "Mon 2026-11-16"),
    ("Tom said the office is closed on Friday.", ("", "2026-11-20"), "Fri 2026-11-20"),
    ("We've added Tom to the rota from Monday.", ("2026-11-16", ""), "Mon 2026-11-16"),  # no one's words
])
def test_someone_elses_words_about_someone_else_bound_no_window_and_a_report_is_read_in_its_clause(
        text: str, wanted: tuple, meant: str | None) -> None:
    """Reported speech (`first_person.reported_clauses`): what someone said of someone else
    is no window of the writer's claim nor a plan of theirs, the days it meant noted; the
    past of "said" tells when it was said, not when the reported clause holds."""
    assert window(text) == wanted
    assert list(anchor(text, SUNDAY_EVENING, SAO_PAULO).dates.values()) == ([meant] if meant else [])


def test_a_month_since_which_something_holds_has_begun() -> None:
    # said in November: "since March" is the March just gone, not the one coming (as "in March" is)
    assert anchor("I eat fish again since March.", SUNDAY_EVENING, SAO_PAULO).dates == {"March": "March 2026"}
    assert anchor("I have lived here since December.", SUNDAY_EVENING, SAO_PAULO).dates == {"December": "December 2025"}
    assert anchor("I've worked here since November.", SUNDAY_EVENING, SAO_PAULO).dates == {"November": "November 2026"}


@pytest.mark.parametrize(("text", "meant"), [
    # a plan for a month gone by this year is next year's, though last year's is nearer
    ("We're going to Lisbon in June for the family holiday.", "June 2027"),
    ("The family holiday in June is in Lisbon.", "June 2027"),
    ("Passport renewal by June.", "June 2027"),
    ("The school concert is in November.", "November 2026"),  # this month: not over yet
    ("The harvest fair is in October.", "October 2026"),  # just gone: the one meant, not next year's
    # told in the past: the latest begun
    ("We went to Lisbon in May.", "May 2026"),
    ("We moved in in December.", "December 2025"),
])
def test_a_month_without_a_year_is_the_coming_one_unless_told_in_the_past(text: str, meant: str) -> None:
    """A month named without a year (said on November 15): broken, "in June" was the nearest
    June, last June, so "we're going to Lisbon in June" read as a trip months gone."""
    assert list(anchor(text, SUNDAY_EVENING, SAO_PAULO).dates.values()) == [meant]


@pytest.mark.parametrize(("text", "wanted"), [
    ("The API freeze deadline is Friday December 11.", ("", "2026-12-11")),
    ("The API freeze deadline is Friday, 11 December.", ("", "2026-12-11")),
    ("From Friday December 4, the office is in Lyon.", ("2026-12-04", "")),
])
def test_a_weekday_naming_the_calendar_date_after_it_is_that_date_not_the_coming_one(text, wanted) -> None:
    """"Friday December 11" said on a Sunday in November is December 11, not the Friday
    after the day said (which a note under the claim then contradicted)."""
    assert window(text) == wanted
    assert anchor(text, SUNDAY_EVENING, SAO_PAULO).dates == {}


MONDAY = datetime(2026, 11, 16, 9, 0, tzinfo=SAO_PAULO)


@pytest.mark.parametrize("text", [
    "The checkout redesign is due Friday.",  # the weekday alone: the window the others match
    "The checkout redesign is due Friday, November 20.", "The checkout redesign is due November 20.",
    "The checkout redesign is due 20 November.", "The checkout redesign is due Nov. 20th.",
    "The checkout redesign is due by November 20.", "The checkout redesign is due on 2026-11-20.",
    "Promised to Acme: the checkout redesign deadline moved to Friday, November 20.",
    "The invoice deadline is November 20.", "Deadline: 20 Nov.", "Tom covers for Maya until Friday, November 20.",
    "I'm off on Friday, November 20.",
])
def test_a_calendar_date_told_as_a_due_day_gets_the_window_its_weekday_gets(text: str) -> None:
    assert window(text, MONDAY) == ("", "2026-11-20")
    assert anchor(text, MONDAY, SAO_PAULO).dates == ({"Friday": "Fri 2026-11-20"} if text.endswith("Friday.") else {})


def test_a_due_date_said_on_monday_falls_in_this_week_asked_on_tuesday() -> None:
    # what "What's due this week?" asks for (`dates.coming_dates`) meets the claim's window
    (first, last), = coming_dates("What's due this week?", MONDAY.date() + timedelta(days=1))
    for text in ("The checkout redesign deadline moved to Friday, November 20.", "Due November 22."):
        assert first.isoformat() <= window(text, MONDAY)[1] <= last.isoformat(), text
    assert window("Due November 23.", MONDAY)[1] > last.isoformat()  # next week's


@pytest.mark.parametrize(("text", "wanted"), [
    # a weekday and a date that disagree (the 21st is a Saturday): the date
    ("The checkout redesign is due Friday, November 21.", ("", "2026-11-21")),
    # no year: the next such date on or after the day said, not the one long gone (a month at most: overdue) ...
    ("The report is due on November 2.", ("", "")),  # just gone: overdue, no window (not next year's)
    ("The report is due on October 2.", ("", "2027-10-02")),
    ("The report is due November 16.", ("", "2026-11-16")),
    ("The 2027 plan is due by January 15.", ("", "2027-01-15")),
    # ... unless told in the past (no window, as "was due Friday"), or a date said with its year
    ("The report was due November 2.", ("", "")), ("The report was due Friday, November 13.", ("", "")),
    ("The report is due on 3 March 2028.", ("", "2028-03-03")),
    # a start may have begun: the nearest date, its weekday or not
    ("As of Monday, October 5, card payments go through Stripe.", ("2026-10-05", "")),
    ("Starting Thursday, November 12 the gym opens at 6.", ("2026-11-12", "")),
    # no cue, or one that states another thing's end, bounds nothing (as before); nor a date that is no day
    ("The report covers November 20.", ("", "")), ("The lease runs until 20 November.", ("", "")),
    ("The report is due February 29.", ("", "")), ("Due November 31.", ("", "")),
])
def test_a_due_dates_year_and_its_weekday(text: str, wanted: tuple) -> None:
    assert window(text, MONDAY) == wanted


def test_a_window_the_proposal_names_is_kept_and_the_day_said_is_recorded() -> None:
    said = SUNDAY_EVENING.astimezone(timezone.utc).isoformat()
    named = ProposedItem(content="On call until Friday.", valid_to="2026-12-31")
    kept, meant = with_window(named, said, "America/Sao_Paulo")
    assert kept.valid_to == "2026-12-31" and meant == {"on": "Sun 2026-11-15", "meant": {"Friday": "Fri 2026-11-20"}}
    plain, meant = with_window(ProposedItem(content="Standup every weekday."), said, "America/Sao_Paulo")
    assert plain.valid_from is None and plain.valid_to is None and meant is None


def claim(valid_from: str | None = None, valid_to: str | None = None) -> MemoryItem:
    return MemoryItem(id="m", tier="stm", type="fact", title="t", content="c", scope=Scope(kind="user", user_id="u"),
                      valid_from=valid_from, valid_to=valid_to)


def test_claims_for_different_times_are_apart_and_windows_are_read_against_now() -> None:
    standing, stand_in = claim(), claim(valid_to="2026-11-20T23:59:59-03:00")
    assert apart_in_time(standing, stand_in) and apart_in_time(stand_in, standing)
    assert not apart_in_time(standing, claim(valid_from="2026-12-01"))  # a move: the old address until then
    lisbon, porto = claim("2026-11-16", "2026-11-19T23:59:59"), claim("2026-12-01", "2026-12-04T23:59:59")
    assert apart_in_time(lisbon, porto)
    assert not apart_in_time(lisbon, claim("2026-11-18", "2026-11-20"))  # overlapping plans do disagree
    now = datetime(2026, 11, 28, 12, tzinfo=timezone.utc)
    assert (lisbon.window_state(now), porto.window_state(now), standing.window_state(now)) == ("ENDED", "UPCOMING", "")
    assert lisbon.window_state(None) == ""


def test_a_deadline_is_not_apart_from_an_undated_claim_of_another_day_for_it() -> None:
    """A deadline's window is the day it states ("due Friday, November 20": over after it), so
    a claim of no window on its subject ("was due November 13", said after it) is another
    value of it, not a claim for another time; a stand-in "until Friday" stays apart."""
    said = MONDAY.astimezone(timezone.utc).isoformat()

    def read(text: str) -> ProposedItem:
        return with_window(ProposedItem(type="fact", title="Permission slip", content=text), said,
                           "America/Sao_Paulo")[0]

    due = read("The permission slip is due Friday, November 20.")
    late = read("The permission slip was due November 13.")
    assert due.valid_to and late.valid_to is None
    assert not apart_in_time(due, late) and not apart_in_time(late, due)
    stand_in = read("Until Friday, November 20, the permission slips go to Ana.")
    assert stand_in.valid_to and apart_in_time(stand_in, read("The permission slips go to Maya."))
    assert apart_in_time(read("The demo is on Wednesday."), read("The demo is on the big screen."))


def test_an_edit_reads_its_new_time_words_on_the_day_of_the_edit() -> None:
    """`reread`: new words bounding a window set it, read when edited; new words bounding none
    drop the window the old words had set, and keep one set otherwise (named with the item)."""
    first = SUNDAY_EVENING.astimezone(timezone.utc).isoformat()
    edited = datetime(2026, 11, 18, 9, tzinfo=SAO_PAULO).isoformat()  # a Wednesday
    old = with_window(ProposedItem(content="Call the bank next Monday."), first, "America/Sao_Paulo")[0]
    stored = (old.valid_from, old.valid_to)
    patch, meant = reread("Call the bank next Monday.", "Call the bank next Friday.", stored, first, edited,
                          "America/Sao_Paulo")
    assert patch == {"valid_from": None, "valid_to": "2026-11-20T23:59:59-03:00"}
    assert meant == {"on": "Wed 2026-11-18", "meant": {"next Friday": "Fri 2026-11-20"}}
    assert reread("Call the bank next Monday.", "Call the bank.", stored, first, edited, "America/Sao_Paulo") == (
        {"valid_from": None, "valid_to": None}, None)
    named = (None, "2031-01-31T00:00:00+00:00")
    assert reread("Call the bank next Monday.", "Call the bank.", named, first, edited, "America/Sao_Paulo") == (
        {}, None)


def test_a_claim_from_a_day_on_takes_over_then() -> None:
    """`capture.takes_over`: "From December 1, ..." ends the address it corrects, or may update
    under its title, the second before that day, instead of replacing it now; one that holds
    for a while, or starts later than it, or is someone else's, is left as it was."""
    year = datetime.now(timezone.utc).year + 1  # a day still to come whenever the test runs
    def item(id_: str, content: str, user: str = "u", **kw) -> MemoryItem:
        return MemoryItem(id=id_, tier="stm", type="fact", title="Home address", content=content,
                          scope=Scope(kind="user", user_id=user), **kw)
    old, theirs = item("old", "Maya lives at Rua Velha 12."), item("theirs", "Maya lives at Rua Velha 12.", "v")
    later = item("later", "Maya lives at Rua Alta 3.", valid_from=f"{year + 1}-01-01T00:00:00-03:00")
    moved = ProposedItem(type="fact", title="Home address", content="From December 1, Maya's address is Rua Nova 5.",
                         valid_from=f"{year}-12-01T00:00:00-03:00")
    # what the write's check corrects of what holds now (the address: one subject, other values), then what takes over
    fixes = corrections(moved.title, moved.content, moved.type, "user", "u", [old, theirs])
    got = takes_over(moved, fixes, [old, theirs, later], "user", "u")
    assert got.ends == (("old", f"{year}-11-30T23:59:59-03:00"),) and got.replaced == []
    assert takes_over(moved, Corrections(["old"], [], []), [old], "user", "u") == Corrections([], [], [], got.ends)
    for_a_while = msgspec.structs.replace(moved, valid_to=f"{year}-12-24T23:59:59-03:00")
    assert takes_over(for_a_while, Corrections([], [], []), [old], "user", "u").ends == ()


def test_a_plan_said_from_another_day_is_corrected_and_what_it_ended_holds_until_then() -> None:
    """`capture.takes_over`: the same values said from another day correct a plan not begun
    yet, and what the plan ended the second before its start is ended before the new one's
    (read among `seen`, before claims apart in time are left out); another plan stays."""
    def day(n: int) -> datetime:
        return datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=n)

    def item(id_: str, content: str, **kw) -> MemoryItem:
        return MemoryItem(id=id_, tier="stm", type="fact", title="Home address", content=content,
                          scope=Scope(kind="user", user_id="u"), **kw)
    old = item("old", "Maya lives at Rua Velha 12.", valid_to=(day(3) - timedelta(seconds=1)).isoformat())
    plan = item("plan", "From December 1, Maya's address is Rua Nova 5.", valid_from=day(3).isoformat())
    other = item("other", "Maya lives at Rua Alta 3.", valid_from=day(9).isoformat())
    moved = ProposedItem(type="fact", title="Home address", content="Maya moves to Rua Nova 5 on December 5.",
                         valid_from=day(5).isoformat())
    # ended the same instant but not what the plan takes over: another title, no conflict
    gym = msgspec.structs.replace(item("gym", "Maya's gym costs 30 euros."), title="Gym", valid_to=old.valid_to)
    got = takes_over(moved, Corrections([], [], []), [plan, other], "user", "u", [old, gym, plan, other])
    assert got.replaced == ["plan"] and got.ends == (("old", (day(5) - timedelta(seconds=1)).isoformat()),), got
    assert got.moved_from == (plan.valid_from,), got
    assert undated("From 3 December, the rent is 900 euros.").split() == [",", "the", "rent", "is", "900", "euros."]
