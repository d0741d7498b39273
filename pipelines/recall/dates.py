"""Dates and times in questions and turns, for date-aware recall.

Two uses. A question that asks *when* ("When is the release?", "How long has she
painted?") is answered by a turn that states a time: a day, a date, a clock time, or a
relative one ("last week", "two days ago", "tomorrow"). On `locomo_dev`, 80% of the evidence
of the questions that ask when states one, against 11% of all turns; recall lifts such turns
(`RecallOptions.w_when`), so "we ship v2 on March 3rd" is not outranked by "release, release,
so tired of releases" for "when is the release?".

The second: calendar dates a question names.

"What movie did Joanna watch on 1 May, 2022?", "Where did she travel in July 2022?",
"between August 11 and August 15 2023", "in summer 2021": each absolute mention becomes a
day range. A raw turn said within a range, or some days after it (what happened on 1 May is told
"last night" on 2 May, "last week" or "last month"), is what the question is about, so recall
lifts it (`RecallOptions.w_date`); a few days before count too ("the weekend before
10 April" is told on 7 April). Only absolute dates count: without a year a month could be
any year's, and relative words ("recently", "last year") need a "now" the question does not
carry. Nothing here looks at stored text; the turn's own date is its `created_at`.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime, timedelta
from functools import lru_cache

from ..records import time_zone

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
MONTHS = _MONTHS  # month names and abbreviations, lower-case, to their number
# Season -> (first month, number of months); winter runs into the next year.
_SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3), "winter": (12, 3)}

_MONTH = r"(?P<{name}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{name}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
# One or two days around one month ("1 May", "May 1st", "August 11 and August 15"), then a year.
_DAY_MONTH = (rf"(?:{_DAY.format(name='d1')}\s*(?:of\s+)?{_MONTH.format(name='m1')}"
              rf"|{_MONTH.format(name='m2')}\s+{_DAY.format(name='d2')})")
_PATTERNS = [
    re.compile(rf"\b{_DAY_MONTH},?\s+{_YEAR}\b", re.I),
    re.compile(rf"\b{_MONTH.format(name='m3')},?\s+(?:of\s+)?{_YEAR}\b", re.I),
    re.compile(rf"\b(?P<season>{'|'.join(_SEASONS)})\s+(?:of\s+)?{_YEAR}\b", re.I),
    re.compile(rf"\b(?:in|of|during|since|by|from)\s+{_YEAR}\b", re.I),
]
# "between August 11 and August 15 2023": the year written once, after the second day.
_YEARLESS_DAY = re.compile(rf"\b{_DAY_MONTH}\s+(?:and|to|until|-)\s+", re.I)
_ANY_YEAR = re.compile(r"(?:19|20)\d\d")  # every pattern needs a year: most questions stop here
MAX_DATES = 8  # a question names a few dates; a long text costs one pass, not a pass per date

DateRange = tuple[date, date]


def _day(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _month_range(year: int, month: int, months: int = 1) -> DateRange:
    start = date(year, month, 1)
    end_month = month + months - 1
    end_year = year + (end_month - 1) // 12
    end_month = (end_month - 1) % 12 + 1
    return start, date(end_year, end_month, calendar.monthrange(end_year, end_month)[1])


def _from_match(m: re.Match[str]) -> DateRange | None:
    g = m.groupdict()
    year = int(g["year"])
    month_name = g.get("m1") or g.get("m2") or g.get("m3")
    if g.get("season"):
        first, months = _SEASONS[g["season"].lower()]
        return _month_range(year, first, months)
    if month_name is None:
        return date(year, 1, 1), date(year, 12, 31)
    month = _MONTHS[month_name.lower()]
    day_text = g.get("d1") or g.get("d2")
    if day_text is None:
        return _month_range(year, month)
    day = _day(year, month, int(day_text))
    return (day, day) if day else None


def written_dates(text: str, patterns: int = len(_PATTERNS)) -> list[tuple[int, int, DateRange]]:
    """Where `text` names absolute dates (at most `MAX_DATES`): (start offset, end offset,
    range) in order of mention, each span read by the most precise pattern that matches it.
    `patterns` limits the reading to the first few (2: dates that name a month)."""
    if not _ANY_YEAR.search(text):
        return []
    found: list[tuple[int, int, DateRange]] = []
    for pattern in _PATTERNS[:patterns]:
        for m in pattern.finditer(text):
            if len(found) >= MAX_DATES:
                break
            if any(s <= m.start() < e or s < m.end() <= e for s, e, _ in found):
                continue  # already read as part of a more precise mention
            got = _from_match(m)
            if got is not None:
                found.append((m.start(), m.end(), got))
    found.sort()
    return found


def question_dates(text: str) -> list[DateRange]:
    """The absolute dates `text` names (at most `MAX_DATES`), as (first day, last day) ranges
    in order of mention; a span "between A and B YEAR" becomes one range from A to B."""
    found = written_dates(text)
    if not found:
        return []
    ranges = [r for _, _, r in found]
    for n, m in enumerate(_YEARLESS_DAY.finditer(text)):
        if n >= MAX_DATES:
            break
        after = [(s, r) for s, _, r in found if s >= m.end()]
        if not after or after[0][0] != m.end():
            continue
        later = after[0][1]
        g = m.groupdict()
        month = _MONTHS[(g.get("m1") or g.get("m2")).lower()]
        first = _day(later[0].year, month, int(g.get("d1") or g.get("d2")))
        if first is not None and first <= later[0]:
            ranges[ranges.index(later)] = (first, later[1])
    return ranges


WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")  # by date.weekday()
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
# Words that place what was said relative to the time of asking, in the past only: "what
# did we decide yesterday?" asks about what was said then; "what's on tomorrow?" or "on
# Monday" (past or coming?) do not say when it was said.
_SAID_WHEN = re.compile(
    r"\b(?:(?P<yesterday>yesterday|last\s+night)"
    r"|(?P<today>earlier\s+today|this\s+(?:morning|afternoon))"
    r"|(?P<n>an?|one|two|three|four|five|six|\d)\s+(?P<unit>days?|weeks?)\s+ago"
    r"|(?P<few>a\s+few|a\s+couple\s+of|couple\s+of)\s+days\s+ago"
    r"|(?P<past>past|last)\s+(?P<span>\d|two|three|few)?\s*(?P<period>days?|weeks?|month|weekend"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day))\b",
    re.IGNORECASE,
)


# "today" and "on Monday" place what was said only in a question about the past ("what did
# we decide today?", "what did Ann say on Monday?"; not "what's on today?").
_SAID_WHEN_IN_PAST = re.compile(
    r"\b(?:(?P<today>today)|on\s+(?P<weekday>(?:mon|tues|wednes|thurs|fri|satur|sun)day))\b", re.IGNORECASE)
_PAST = re.compile(r"\b(?:did|was|were|said|told|decided|discussed|talked|agreed|mentioned|asked|chatted)\b",
                   re.IGNORECASE)


def _said_when_matches(text: str) -> list[re.Match[str]]:
    found = list(_SAID_WHEN.finditer(text))
    if _PAST.search(text):
        found += _SAID_WHEN_IN_PAST.finditer(text)
    return sorted(found, key=lambda m: m.start())


def without_said_when(text: str) -> str:
    """`text` without the words that place what was said in time (`said_dates`)."""
    for m in reversed(_said_when_matches(text)):
        text = text[:m.start()] + " " + text[m.end():]
    return text


def asking_day(now_ts: float, zone: str) -> tuple[date, int]:
    """(the day it is at `now_ts` in `zone`, that zone's offset from UTC in seconds then).
    "Yesterday" is the asker's yesterday; whether what was said falls on the days a
    question names is read with `day_spans` (each edge with its own offset); the offset
    of the time of asking only orders what was said by day."""
    local = datetime.fromtimestamp(now_ts, time_zone(zone))
    offset = local.utcoffset()
    return local.date(), int(offset.total_seconds()) if offset is not None else 0


def day_spans(ranges: list[DateRange], zone: str) -> list[tuple[float, float]]:
    """Each range of days on the asker's calendar as POSIX seconds, from its first midnight
    up to (not including) the midnight after its last, in `zone`, each edge with that
    zone's offset then: "last month" across a daylight-saving change (Europe/Berlin's last
    Sunday of October) loses and doubles no hour at its edges."""
    tz = time_zone(zone)

    def midnight(day: date) -> float:
        return datetime(day.year, day.month, day.day, tzinfo=tz).timestamp()

    return [(midnight(first), midnight(last + timedelta(days=1))) for first, last in ranges]


def said_dates(text: str, today: date) -> list[DateRange]:
    """The days a question places what was said in, relative to `today` (the day it is
    asked): "yesterday", "this morning", "two days ago", "last week" (the calendar week
    before this one), "the past few days", "last Friday" (the latest Friday before today),
    "last month", "last weekend"; in a question about the past ("did", "said", ...) also
    "today" and "on Monday". Past words only; absolute dates are `question_dates`."""
    found: list[DateRange] = []
    for m in _said_when_matches(text):
        if len(found) >= MAX_DATES:
            break
        g = {k: (v.lower() if v else v) for k, v in m.groupdict().items()}
        if g.get("weekday"):  # "on Monday" in a question about the past: the latest Monday, today included
            back = (today.weekday() - WEEKDAYS.index(g["weekday"])) % 7
            found.append((today - timedelta(days=back), today - timedelta(days=back)))
        elif g.get("yesterday"):
            found.append((today - timedelta(days=1), today - timedelta(days=1)))
        elif g["today"]:
            found.append((today, today))
        elif g["n"]:
            n = _COUNTS.get(g["n"]) or int(g["n"])
            if g["unit"].startswith("day"):
                found.append((today - timedelta(days=n), today - timedelta(days=n)))
            else:  # "two weeks ago": that week, give or take a few days
                found.append((today - timedelta(days=7 * n + 3), today - timedelta(days=max(7 * n - 3, 1))))
        elif g["few"]:
            found.append((today - timedelta(days=5), today - timedelta(days=2)))
        elif g["period"]:
            period, span = g["period"].rstrip("s") if g["period"] != "days" else "day", g["span"]
            if period == "day":
                n = _COUNTS.get(span or "", 0) or (int(span) if span and span.isdigit() else 4)
                found.append((today - timedelta(days=n), today))
            elif period == "week" and (g["past"] == "past" or span):
                n = _COUNTS.get(span or "", 0) or (int(span) if span and span.isdigit() else 1)
                found.append((today - timedelta(days=7 * n), today))
            elif period == "week":
                monday = today - timedelta(days=today.weekday() + 7)
                found.append((monday, monday + timedelta(days=6)))
            elif period == "weekend":
                saturday = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
                if saturday + timedelta(days=1) >= today:
                    saturday -= timedelta(days=7)
                found.append((saturday, saturday + timedelta(days=1)))
            elif period == "month":
                last = today.replace(day=1) - timedelta(days=1)
                found.append((last.replace(day=1), last))
            else:  # a weekday: the latest one before today
                back = (today.weekday() - WEEKDAYS.index(period)) % 7 or 7
                found.append((today - timedelta(days=back), today - timedelta(days=back)))
    return found


# Words that name a time to come relative to the time of asking: "what's on tomorrow?", "what
# did I plan for next week?", "anything for this weekend?". "today" / "tonight" only in a
# question not about the past ("what did we decide today?" places what was said).
_COMING = re.compile(
    r"\b(?:(?P<tomorrow>tomorrow)|(?P<today>today|tonight)"
    r"|(?P<which>this|next|coming)\s+(?P<period>week(?:end)?|month"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day))\b",
    re.IGNORECASE,
)
# "Whose birthday is soon?", "anything coming up?": the coming weeks, when no day is named.
_SOON = re.compile(r"\b(?:soon|coming\s+up|upcoming)\b", re.IGNORECASE)
SOON_DAYS = 30


def coming_dates(text: str, today: date) -> list[DateRange]:
    """The days to come a question names, relative to `today` (the asker's): "tomorrow",
    "this week" (today to Sunday), "next week" (the calendar week after this one), "this" /
    "next weekend", "next month", "next Friday" (the first Friday after today); "today" and
    "tonight" when the question is not about the past; "soon", "coming up" and "upcoming"
    alone, the next `SOON_DAYS` days. The claims that hold then answer it
    (`candidates`' "held_then" channel)."""
    found: list[DateRange] = []
    past = _PAST.search(text) is not None
    for m in _COMING.finditer(text):
        if len(found) >= MAX_DATES:
            break
        g = {k: (v.lower() if v else v) for k, v in m.groupdict().items()}
        if g["tomorrow"]:
            found.append((today + timedelta(days=1), today + timedelta(days=1)))
        elif g["today"]:
            if not past:
                found.append((today, today))
        elif g["period"] == "week":
            monday = today - timedelta(days=today.weekday()) + timedelta(days=7 if g["which"] == "next" else 0)
            found.append((max(monday, today), monday + timedelta(days=6)))
        elif g["period"] == "weekend":
            saturday = today + timedelta(days=(5 - today.weekday()) % 7)
            if today.weekday() == 6:  # on a Sunday "this weekend" is today's
                saturday -= timedelta(days=7)
            if g["which"] == "next":
                saturday += timedelta(days=7)
            found.append((max(saturday, today), saturday + timedelta(days=1)))
        elif g["period"] == "month":
            if g["which"] == "this":
                found.append((today, today.replace(day=calendar.monthrange(today.year, today.month)[1])))
            else:
                first = (today.replace(day=1) + timedelta(days=32)).replace(day=1)
                found.append((first, first.replace(day=calendar.monthrange(first.year, first.month)[1])))
        else:  # a weekday: the first one after today
            ahead = (WEEKDAYS.index(g["period"]) - today.weekday()) % 7 or 7
            found.append((today + timedelta(days=ahead), today + timedelta(days=ahead)))
    if not found and _SOON.search(text) and not past:
        found.append((today, today + timedelta(days=SOON_DAYS)))
    return found


# A day that comes round every year: a birthday or an anniversary on a calendar day ("Mom's
# birthday is March 3", "our anniversary is the 14th of June"), whatever year was said.
_YEARLY = re.compile(r"\b(?:birthdays?|b-?days?|anniversar(?:y|ies)|born)\b", re.IGNORECASE)
_YEARLY_DAY = re.compile(rf"\b(?:{_DAY_MONTH}|(?:the\s+)?{_DAY.format(name='d3')}\s+of\s+{_MONTH.format(name='m3')})",
                         re.IGNORECASE)


# A birthday or an anniversary said to be on a day ("Anna's birthday is tomorrow", "our
# anniversary's on the 14th", "I was born on 29 February"), not something done on one once
# ("her birthday party is on Saturday", "I'm off on Friday for our anniversary").
_YEARLY_DAY_SAID = re.compile(r"\b(?:birthdays?|b-?days?|anniversar(?:y|ies))(?:'s\b|\s*:|\s+(?:is|was|are|falls)\b)"
                              r"|\bborn\b", re.IGNORECASE)


@lru_cache(maxsize=65536)  # asked of each curated memory shown, every recall (`render.next_comes`)
def is_yearly(text: str) -> bool:
    """The text says when a birthday or an anniversary is, a day that comes round every
    year, whatever year was said."""
    return _YEARLY_DAY_SAID.search(text) is not None


def yearly_days(text: str) -> frozenset[int]:
    """The calendar days (`month * 100 + day`) a text about a birthday or an anniversary
    names, which come round every year: none for any other text. A claim "Mom's birthday
    is March 3" said in March answers "what's coming up next month?" asked the next
    February (`days_of_year`), with no validity window of its own."""
    if _YEARLY.search(text) is None:
        return frozenset()
    found = set()
    for m in _YEARLY_DAY.finditer(text):
        g = m.groupdict()
        month, day = _MONTHS[(g["m1"] or g["m2"] or g["m3"]).lower()], int(g["d1"] or g["d2"] or g["d3"])
        if _day(2024, month, day) is not None:  # a leap year: February 29 is a birthday too
            found.add(month * 100 + day)
    return frozenset(found)


def next_yearly(day_of_year: int, today: date) -> date:
    """The next date, from `today` on, of a calendar day (`month * 100 + day`) that comes
    round every year; February 29 in the next leap year."""
    month, day = divmod(day_of_year, 100)
    year = today.year
    while (when := _day(year, month, day)) is None or when < today:
        year += 1
    return when


_MEANT_DAY = re.compile(r"[A-Z][a-z]{2} (\d{4}-\d\d-\d\d)")  # one day as `validity.anchor` says it meant


def next_yearly_dates(text: str, today: date, meant: Iterable[str] = ()) -> list[date]:
    """When a birthday or an anniversary next comes, from `today` on (the asker's); [] for
    any other text. Its day is the one it names (`yearly_days`), or the day a relative word
    meant when it was said (`meant`, as `validity.anchor` gives them: "Fri 2026-11-27" for
    "tomorrow")."""
    if not is_yearly(text):
        return []
    days = set(yearly_days(text))
    if not days:
        for meaning in meant:
            if (m := _MEANT_DAY.fullmatch(meaning)) is not None:
                said = date.fromisoformat(m.group(1))
                days.add(said.month * 100 + said.day)
    return sorted(next_yearly(d, today) for d in days)


def next_yearly_note(coming: Sequence[date], today: date) -> str:
    """The line under a birthday or an anniversary: when it next comes (`coming`,
    `next_yearly_dates`) and in how many days from `today`: "(Next: 2027-03-03, in 94 days.)"."""
    if not coming:
        return ""
    def ahead(when: date) -> str:
        n = (when - today).days
        return "today" if n == 0 else f"in {n} day{'s' * (n != 1)}"

    return "(Next: " + "; ".join(f"{when.isoformat()}, {ahead(when)}" for when in coming) + ".)"


def days_of_year(ranges: list[DateRange], longest: int = 62) -> frozenset[int]:
    """The calendar days (`month * 100 + day`) of the ranges no longer than `longest` days:
    "next month" or "soon" asks which birthdays fall then, "this year" not."""
    found: set[int] = set()
    for first, last in ranges:
        if (last - first).days < longest:
            day = first
            while day <= last:
                found.add(day.month * 100 + day.day)
                day += timedelta(days=1)
    return frozenset(found)


# A weekly habit's days: "on Mondays and Thursdays", "every Tuesday", "Friday evenings",
# "every weekday", "daily" / "every day".
_EVERY = re.compile(
    r"\b(?:(?P<every>every|each)\s+(?P<one>(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b"
    r"|(?P<plural>(?:mon|tues|wednes|thurs|fri|satur|sun)day)s\b"
    r"|(?P<evening>(?:mon|tues|wednes|thurs|fri|satur|sun)day)\s+(?:mornings|afternoons|evenings|nights)\b"
    r"|(?P<workdays>(?:every\s+)?weekdays?\b)|(?P<daily>daily|every\s+day)\b)",
    re.IGNORECASE,
)


def weekly_days(text: str) -> int:
    """The days of the week a recurring schedule names, as a bit mask (bit 0 = Monday): 0
    when it names none. "every weekday" is Monday to Friday, "daily" every day."""
    mask = 0
    for m in _EVERY.finditer(text):
        day = m.group("one") or m.group("plural") or m.group("evening")
        if day:
            mask |= 1 << WEEKDAYS.index(day.lower())
        elif m.group("workdays"):
            mask |= 0b0011111
        else:
            mask |= 0b1111111
    return mask


def weekdays_of(ranges: list[DateRange], longest: int = 2) -> int:
    """The days of the week (bit mask, bit 0 = Monday) of the ranges no longer than
    `longest` days: "tomorrow" or "this weekend" asks what recurs on them, "next week" not."""
    mask = 0
    for first, last in ranges:
        if (last - first).days < longest:
            day = first
            while day <= last:
                mask |= 1 << day.weekday()
                day += timedelta(days=1)
    return mask


_WHEN = re.compile(r"\b(?:when|how\s+long|(?:what|which)\s+(?:year|month|week|day|date|time))\b", re.IGNORECASE)
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_PERIOD = rf"(?:night|morning|evening|afternoon|week|weekend|month|year|summer|winter|spring|fall|autumn|{_WEEKDAY})"
# "May" and "March" are words too: as months they come with a day or after "in"/"of"/"by".
_CLEAR_MONTHS = "|".join(n.lower() for n in calendar.month_name if n and n not in ("May", "March"))
_TIME = re.compile(
    rf"\b(?:{_WEEKDAY}s?|yesterday|today|tonight|tomorrow|weekends?|{_CLEAR_MONTHS}"
    rf"|(?:last|next|this|past|coming|previous)\s+{_PERIOD}s?"
    r"|(?:a|an|one|two|three|four|five|six|few|several|couple\s+of)\s+(?:days?|weeks?|months?|years?)\s+ago"
    r"|(?:in|of|by|until|since|early|late|mid)[\s-]+(?:may|march)|(?:may|march)\s+\d"
    r"|(?:19|20)\d\d|\d{1,2}(?:st|nd|rd|th)|\d{1,2}(?::\d\d)?\s*(?:am|pm)|\d{1,2}:\d\d"
    r"|\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4})\b",
    re.IGNORECASE,
)


def asks_when(question: str) -> bool:
    """The question asks for a time ("When did ...", "How long ...", "What year ...")."""
    return _WHEN.search(question) is not None


@lru_cache(maxsize=65536)
def states_time(text: str) -> bool:
    """The text states a time: a weekday, a month, a date, a year, a clock time, or a
    relative time ("yesterday", "last week", "two days ago")."""
    return _TIME.search(text) is not None


def said_within(said: date, ranges: list[DateRange], before_days: int, after_days: int) -> bool:
    """The turn's day falls in one of the ranges widened by `before_days` before its start
    and `after_days` after its end."""
    return any(start - timedelta(days=before_days) <= said <= end + timedelta(days=after_days)
               for start, end in ranges)


__all__ = ["DateRange", "asking_day", "asks_when", "day_spans", "days_of_year", "is_yearly", "next_yearly",
           "next_yearly_dates", "next_yearly_note", "question_dates", "said_dates", "said_within", "states_time",
           "without_said_when", "yearly_days"]
