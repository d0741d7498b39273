""""Last month" across a daylight-saving change (Europe/Berlin leaves summer time on the
last Sunday of October): each edge of the asked days is placed with the zone's offset then
(`dates.day_spans`), so no hour at an edge is lost or doubled. Before, what was said was
placed with the offset of the time of asking: asked in November (UTC+1), what was said in
the first hour of 1 October (UTC+2) fell on 30 September and out of "last month"."""

from __future__ import annotations

from datetime import date, datetime

from pipelines.recall.dates import day_spans
from tests.pipelines.recall.test_engine import ME, corpus, engine, ids, mem

BERLIN = "Europe/Berlin"


def posix(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_each_edge_of_the_asked_days_has_the_zones_offset_then() -> None:
    (october,) = day_spans([(date(2026, 10, 1), date(2026, 10, 31))], BERLIN)
    assert october == (posix("2026-09-30T22:00:00+00:00"), posix("2026-10-31T23:00:00+00:00"))  # CEST in, CET out
    (march,) = day_spans([(date(2026, 3, 1), date(2026, 3, 31))], BERLIN)
    assert march == (posix("2026-02-28T23:00:00+00:00"), posix("2026-03-31T22:00:00+00:00"))  # CET in, CEST out
    (sunday,) = day_spans([(date(2026, 10, 25), date(2026, 10, 25))], BERLIN)
    assert sunday[1] - sunday[0] == 25 * 3600  # the day the clocks go back has 25 hours
    assert day_spans([(date(2026, 10, 1), date(2026, 10, 1))], "UTC") == [
        (posix("2026-10-01T00:00:00+00:00"), posix("2026-10-02T00:00:00+00:00"))]


def said(id_: str, at: str, text: str):
    return mem(id_, "user", text, type="message", valid_from=at, created_at=at, updated_at=at)


def test_last_month_asked_in_winter_time_holds_the_first_hour_of_a_summer_time_october() -> None:
    turns = [said("before", "2026-09-30T23:30:00+02:00", "I paid the electricity bill."),
             said("first", "2026-10-01T00:30:00+02:00", "I booked the dentist for the kids."),
             said("last", "2026-10-31T23:30:00+01:00", "We carved the pumpkins."),
             said("after", "2026-11-01T00:30:00+01:00", "We watched the fireworks.")]
    found = set(ids(engine().recall("What did I tell you last month?", ME, [corpus(turns)],
                                    now="2026-11-10T12:00:00+00:00", tz=BERLIN, mode="catalog")))
    assert {"first", "last"} <= found, found  # before the fix: "first" fell on 30 September
    assert not {"before", "after"} & found, found
