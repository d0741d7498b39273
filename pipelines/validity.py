"""When a claim holds, read from what it says and when it was said.

A chat model proposes "Maya is in Lisbon from Monday to Thursday next week" or "Until
Friday, reports go to Ana" without a date: it is not told today's, and the words only mean
something against the day they were said, in the speaker's time zone. Read a week later,
"next week" is another week. So capture reads the claim's time words against the turn's
time (`anchor`) and keeps what they meant:

- its validity window (`valid_from` / `valid_to`), when the words bound it: "until
  Friday" (a near day: "the lease runs until 31 October" states the lease's end, not the
  claim's), "from December 1", "as of last Friday", "from Monday to Thursday next week",
  "between X and Y", "moved to X to Y", a claim about "this week" / "next week" as a whole,
  and an event on a day surely coming ("the dentist is next Tuesday at 3", "tomorrow": over
  after that day; a bare weekday may be a habit or past: "the Friday babysitter", "passed
  away on Sunday");
- each relative or yearless time word with the day it meant ("next Tuesday" = Tue
  2026-12-01, "in March" = March 2027), shown under the claim (`recall.render.said_dates_note`).

A recurring schedule ("standup every weekday at 9:30", "gym on Mondays and Thursdays") names
no date and gets no window, nor does a birthday or an anniversary ("Anna's birthday is
tomorrow": every year's, `dates.is_yearly`), nor the bare weekday of a standing change
("standup is on Thursday from now on", "going forward", "henceforth"). Calendar dates without a year are the
nearest such date to the day said ("from December 1" said in late November; "since October
3" said in November), a month "since" names the latest one begun ("since March" said in
November is this March, not the next); they get a window only after a bounding word (a birthday "on March 3"
does not end on March 3), or told as the day a thing is due or set for, as a weekday told so
is ("due Friday, November 20", "due November 20", "the deadline moved to 20 Nov": over
after that day, the next such date from the day said; "was due November 2": the last, no
window). English only; a claim the words do not bound keeps no window.
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from datetime import date, datetime, time, timedelta
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

import msgspec

from pipelines.first_person import reported_clauses
from pipelines.materialize import SAID_DATES
from pipelines.recall.conflicts import DATED_TYPES, _first_names, reschedules
from pipelines.recall.dates import MONTHS, WEEKDAYS, is_yearly
from pipelines.recall.lexical import lemma, words
from pipelines.records import UNTIL, ProposedItem, parse_time, time_zone

_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
# One time expression. Weekday plurals ("on Mondays") and "every/each ..." are recurrences,
# told apart by `_RECURRING`, not read as a date.
_WHEN = (
    r"(?P<iso>(?:19|20)\d\d-[01]\d-[0-3]\d)"
    r"|(?P<rel>today|tonight|tomorrow)"
    r"|(?P<wk>(?:this|next|the\s+coming|coming)\s+week(?:end)?)"
    rf"|(?:(?P<wd_mod>this|next|coming|last|on)\s+)?(?P<wd>{_WEEKDAY})(?!s)"
    rf"|(?P<md_m>{_MONTH})\.?\s+(?P<md_d>[0-3]?\d)(?:st|nd|rd|th)?\b(?:,?\s+(?P<md_y>(?:19|20)\d\d))?"
    rf"|(?P<dm_d>[0-3]?\d)(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<dm_m>{_MONTH})\b\.?(?:,?\s+(?P<dm_y>(?:19|20)\d\d))?"
    rf"|(?P<mo_pre>in|by|from|until|till|since|early|late|mid|end\s+of)[\s-]+(?P<mo>{_MONTH})\b(?!\.?\s+[0-3]?\d\b)"
    r"(?:\s+(?P<mo_y>(?:19|20)\d\d))?"
)
_WHEN_RE = re.compile(rf"\b(?:{_WHEN})", re.IGNORECASE)
_START = r"(?:from|starting(?:\s+(?:on|from))?|as\s+of|beginning|effective|after)"
_END = r"(?:until|till|til|through|thru|up\s+to|to|-|–)"
# A plan moved to a range of days: "the trip moved to Friday, December 4 to Sunday, December 6".
# a date moved in time, as the conflict rule's `patterns._MOVED_IN_TIME` reads one: a correction
# "slipped to April 14, 2027" is dated as the claim it corrects ("ships on March 3, 2027"), so
# the two are not set apart in time (`records.apart_in_time`, a one-sided window)
_MOVED_TO = r"(?:moved|pushed(?:\s+back)?|postponed|rescheduled|shifted|changed|slipped|slid|delayed|bumped)\s+to"
_BOUNDED = re.compile(rf"\b(?:{_START}|{_END}|by|since)\s*$", re.IGNORECASE)  # a cue that bounds what follows
_DATED = re.compile(rf"\b(?:(?:{_START}|{_END}|on|since|by)\s+)?(?:{_WHEN})", re.IGNORECASE)  # `undated`
_RECURRING = re.compile(
    rf"\b(?:every|each|daily|weekly|monthly|weekdays|weekends|{_WEEKDAY}s"
    rf"|{_WEEKDAY}\s+(?:mornings|afternoons|evenings|nights)|of\s+(?:the|each|every)\s+month)\b", re.IGNORECASE)


class Span(NamedTuple):
    """A time expression: where it is in the text, what it said, and the days it meant."""

    start: int
    end: int
    said: str
    first: date
    last: date
    relative: bool  # it needed the day it was said to mean anything (or a year to be placed)
    one_near_day: bool  # a relative single day ("tomorrow", "next Tuesday"): an event's day


class Anchored(NamedTuple):
    """What a claim's time words meant on the day they were said (`anchor`)."""

    valid_from: str | None
    valid_to: str | None
    dates: dict[str, str]  # a relative or yearless time word -> the day(s) it meant


def _nearest(day: date, month: int, dom: int | None = None) -> date | None:
    """The month (its first day) or the date nearest to `day`, the year unsaid."""
    best = None
    for year in (day.year - 1, day.year, day.year + 1):
        try:
            cand = date(year, month, dom or 1)
        except ValueError:
            continue
        mid = cand if dom else cand + timedelta(days=14)
        if best is None or abs((mid - day).days) < abs((best[1] - day).days):
            best = (cand, mid)
    return best[0] if best else None


def _same_day_of_year(d: date, year: int) -> date | None:
    try:
        return d.replace(year=year)
    except ValueError:  # February 29
        return None


def _month_end(first: date) -> date:
    return first.replace(day=calendar.monthrange(first.year, first.month)[1])


# A word that makes the noun after it: "the Friday babysitter", "Lena's Monday class".
_DETERMINED = re.compile(r"(?:\b(?:the|a|an|my|our|your|his|her|their|its|that|which)|['’]s)\s+$", re.IGNORECASE)
_PAST_AUXILIARIES = frozenset({"was", "were", "had", "did"})  # simplemma keeps them as they are
_FUTURE = frozenset({"will", "would", "ll", "d", "shall", "gonna"})  # "said she'd be off on Friday": to come
# Before a participle, these make it no past: "is booked", "have planned", "will be moved".
_PRESENT_BEFORE = frozenset({"is", "are", "am", "m", "re", "be", "been", "has", "have", "ve", "will", "ll"})
# The present perfect: an auxiliary ("we've", "has", "she's") before its participle, an
# adverb or two between ("we've just added", "has also booked"). It tells what is set up now,
# never a day gone by ("we've added Tom to the rota from Monday": the coming one), and so do
# the participles joined to it ("we've added Tom and moved Ana").
_PERFECT = frozenset({"have", "has", "ve", "s"})
_ADVERBS = frozenset({"just", "also", "now", "already", "all", "both", "since", "again", "then", "even"})
_JOINED = frozenset({"and", "or", "then", "also"})
_SENTENCE = re.compile(r"[^.!?;\n]+")
_WORD = re.compile(r"[^\W_]+")  # `lexical.words`' tokens, as written
# A standing change ("Standup is on Thursday from now on", "going forward", "henceforth"):
# a bare weekday it names is the day of each week it holds on, as "on Thursdays" is, not one
# coming day (nor is "from now on" a move: `conflicts.reschedules`).
_STANDING = re.compile(
    r"\b(?:from\s+(?:now|here|this\s+(?:day|point))\s+(?:on(?:wards?)?(?:\s+out)?|forward)|going\s+forward|"
    r"henceforth|hereafter|until\s+further\s+notice|for\s+the\s+foreseeable\s+future)\b", re.IGNORECASE)


def _names_a_kind_of_day(text: str, start: int) -> bool:
    """The weekday at `start` follows a determiner: it names a kind of day, a habit ("the
    Friday babysitter"), not one day."""
    return _DETERMINED.search(text[:start]) is not None


def _told_as_past(text: str, start: int, end: int) -> bool:
    """The clause holding `text[start:end]` is told in the past: a past auxiliary, or a
    verb whose lemma is another word (simplemma: "passed" -> "pass", "met" -> "meet"),
    neither a plural nor an -ing form nor a name ("Maria", which simplemma reads as
    "mare"), not after an article ("the children") nor a present auxiliary ("is booked",
    "have planned", nor of a present perfect, an adverb between: "we've just added Tom from
    Monday", `_PERFECT`); and nothing in it to come ("said she would be off on Friday"). The
    clause is the sentence, or the reported clause that holds it: "My manager said I can
    work remotely from Monday" tells in the past what was said, not when."""
    sentence = next((m for m in _SENTENCE.finditer(text) if m.start() <= start and end <= m.end()), None)
    clause = text if sentence is None else sentence.group(0)
    clause = next((text[a:b] for a, b, _ in reported_clauses(text) if a <= start and end <= b), clause)
    said = words(clause)
    if _FUTURE.intersection(said):
        return False
    written = _WORD.findall(unicodedata.normalize("NFKC", clause))
    perfect = False  # a present perfect was told (`_PERFECT`)
    for n, word in enumerate(said):
        before = said[n - 1] if n else ""
        if word in _PAST_AUXILIARIES:
            return True
        if n < len(written) and written[n][:1].isupper() and (n > 0 or word in _first_names()):
            continue  # a name (a sentence's first word only when a first name: "Met Ana" is a verb)
        base = lemma(word)
        if base == word or not (word.endswith("ed") or not word.endswith(("s", "ing"))):
            continue
        helper = next((w for w in reversed(said[max(0, n - 3):n]) if w not in _ADVERBS and not w.endswith("ly")), "")
        if helper in _PERFECT or (perfect and helper in _JOINED):
            perfect = True  # "we've (just) added", "... and moved": no past
        elif before not in _PRESENT_BEFORE and not _DETERMINED.search(f"{before} "):
            return True
    return False


# "Friday December 11", "Friday, 11 December": a weekday just before a calendar date is that
# date's name, not a day of its own (read alone it would be the coming Friday).
_NAMES_THE_DATE = re.compile(rf"\b{_WEEKDAY},?\s+(?:the\s+)?$", re.IGNORECASE)


def _its_weekday(text: str, start: int, out: list[Span]) -> Span | None:
    """The span of the weekday that names the calendar date at `start` (the last of `out`),
    taken off `out`: the date is the day meant; None when no weekday names it."""
    named = _NAMES_THE_DATE.search(text, 0, start)
    if named is None or not out or not out[-1].start <= named.start() < out[-1].end:
        return None
    return out.pop()


# A calendar date told as the day a thing is due or set for ("due November 20", "by 20 Nov",
# "on Friday, November 20", "the deadline is November 20", "moved to November 20"): one
# coming day, as a weekday told so is. Not after "until": "the lease runs until 31 October"
# states the lease's end, not the claim's (a date its weekday names takes the weekday's reading).
_DUE_ON = re.compile(rf"\b(?:due|by|on|deadline(?:\s+is)?\s*:?|{_MOVED_TO})\s*$", re.IGNORECASE)


def _calendar_day(text: str, m: re.Match[str], day: date, out: list[Span], plan: bool, year: str | None,
                  month: int, dom: int) -> Span | None:
    """The span of a calendar date (`month`, `dom`, `year` if said) matched at `m`, with the
    weekday that names it ("Friday, November 20": the date wins where they disagree). Told
    as a coming day (`_DUE_ON`, or its weekday read as one), it is an event's day, and
    without a year the next such date on or after `day`; told in the past ("was due
    November 2", "since October 3"), the latest on or before; else, and after a start ("as
    of Monday, October 5" may have begun), the nearest."""
    named = _its_weekday(text, m.start(), out)
    start = named.start if named is not None else m.start()
    past = re.search(r"\bsince\s*$", text[:start], re.IGNORECASE) is not None or (
        not plan and _told_as_past(text, start, m.end()))
    coming = not past and (named.one_near_day if named is not None else _DUE_ON.search(text[:start]) is not None)
    if year:
        try:
            d = date(int(year), month, dom)
        except ValueError:
            return None
    elif past or (coming and not re.search(rf"\b{_START}\s*$", text[:start], re.IGNORECASE)):
        d = _nearest(day, month, dom)
        if d is not None and (d > day if past else d < day - JUST_GONE):
            d = _same_day_of_year(d, d.year + (-1 if past else 1))
    else:
        d = _nearest(day, month, dom)
    if d is None:
        return None
    # not `relative`: a date said means it whatever the day said (no note under the claim)
    return Span(start, m.end(), " ".join(text[start:m.end()].split()), d, d, False, coming)


# A day or month just gone (its end at most this long before the day said) that is told as
# coming ("the report is due on November 2" said on November 16) is that one, overdue, not
# next year's.
JUST_GONE = timedelta(days=31)


def _month_meant(text: str, m: re.Match[str], day: date, month: int, plan: bool, since: bool) -> date:
    """The first day of the month `month` named at `m` without a year, said on `day`: after
    "since", or told in the past (not in a `plan`), the latest begun ("since March", "we went
    in May"); else the next one not yet over, or just gone (`JUST_GONE`): "we're going to
    Lisbon in May" said in November is next May, though last May is nearer."""
    this_year = date(day.year, month, 1)
    if since or (not plan and _told_as_past(text, m.start("mo"), m.end())):
        return this_year if this_year <= day else this_year.replace(year=day.year - 1)
    return this_year if _month_end(this_year) >= day - JUST_GONE else this_year.replace(year=day.year + 1)


def _spans(text: str, day: date, plan: bool = False) -> list[Span]:
    monday = day - timedelta(days=day.weekday())
    # "from Monday to Thursday next week": the weekdays of a text that says "next week" are
    # those of next week.
    week_of_weekdays = monday + timedelta(days=7) if re.search(r"\bnext\s+week\b", text, re.I) else None
    standing = _STANDING.search(text) is not None
    out: list[Span] = []
    for m in _WHEN_RE.finditer(text):
        g = {k: (v.lower() if isinstance(v, str) else v) for k, v in m.groupdict().items()}
        said = " ".join(m.group(0).split())
        if g["iso"]:
            got = _calendar_day(text, m, day, out, plan, g["iso"][:4], int(g["iso"][5:7]), int(g["iso"][8:]))
            if got is not None:
                out.append(got)
        elif g["rel"]:
            d = day + timedelta(days=1 if g["rel"] == "tomorrow" else 0)
            # "today" dates what is said, it does not end it ("the GP letter came today")
            out.append(Span(m.start(), m.end(), said, d, d, True, g["rel"] != "today"))
        elif g["wk"]:
            nxt = not g["wk"].startswith("this")
            if g["wk"].endswith("weekend"):  # the coming Saturday and Sunday (today's on a Sunday)
                saturday = day + timedelta(days=(5 - day.weekday()) % 7 if day.weekday() < 6 else -1)
                if g["wk"].startswith("next") and day.weekday() >= 5:
                    saturday += timedelta(days=7)  # "next weekend" said on one: the one after
                out.append(Span(m.start(), m.end(), said, saturday, saturday + timedelta(days=1), True, False))
            else:
                first = monday + timedelta(days=7 if nxt else 0)
                out.append(Span(m.start(), m.end(), said, first, first + timedelta(days=6), True, False))
        elif g["wd"]:
            index, mod = WEEKDAYS.index(g["wd"]), g["wd_mod"]
            if standing and week_of_weekdays is None and mod in (None, "on") and not _BOUNDED.search(text[:m.start()]):
                continue  # each week's, no date ("until Friday" still bounds)
            if mod == "last":  # the latest such day before the day said
                d = day - timedelta(days=(day.weekday() - index) % 7 or 7)
            elif week_of_weekdays is not None and mod in (None, "on"):
                d = week_of_weekdays + timedelta(days=index)
            else:  # the first such day after the day said ("this", "on" and bare: that day too)
                ahead = (index - day.weekday()) % 7
                if mod == "next" and ahead == 0:
                    ahead = 7
                d = day + timedelta(days=ahead)
            # "next Tuesday", "this Friday" name one coming day, and so does a bare weekday in a
            # `plan` (a to-do's or a move's day: "moved to Thursday") or told as one coming
            # thing ("I'm off on Friday"), unless it names a kind of day ("the Friday
            # babysitter") or is told in the past ("passed away on Sunday": the latest one; and
            # "since Monday", whatever the tense: "I've been off since Monday").
            if mod is None and re.search(r"\bsince\s*$", text[:m.start()], re.IGNORECASE) or (
                    mod in (None, "on") and not plan and _told_as_past(text, m.start("wd"), m.end())):
                d = day - timedelta(days=(day.weekday() - index) % 7)
                one_day = False
            else:
                one_day = mod in ("next", "this", "coming") or (
                    mod != "last" and (plan or not _names_a_kind_of_day(text, m.start("wd"))))
            out.append(Span(m.start(), m.end(), said, d, d, True, one_day))
        elif g["md_m"] or g["dm_m"]:
            got = _calendar_day(text, m, day, out, plan, g["md_y"] or g["dm_y"], MONTHS[g["md_m"] or g["dm_m"]],
                                int(g["md_d"] or g["dm_d"]))
            if got is not None:
                out.append(got)
        elif g["mo"]:
            month = MONTHS[g["mo"]]
            first = date(int(g["mo_y"]), month, 1) if g["mo_y"] else _month_meant(
                text, m, day, month, plan, g["mo_pre"].lower() == "since")
            if first is not None:
                start = m.start("mo")  # the preposition is a cue word, not part of the date
                out.append(Span(start, m.end(), text[start:m.end()], first, _month_end(first), not g["mo_y"], False))
    return out


def _before(text: str, span: Span, cue: str) -> bool:
    """`span` directly follows the cue words (`cue`, a pattern)."""
    return re.search(rf"\b{cue}\s*$", text[:span.start], re.IGNORECASE) is not None


def _local_bound(d: date, zone: ZoneInfo, end: bool) -> str:
    """The first (or last) instant of day `d` in `zone`, as ISO-8601 with that zone's offset
    (its first ten characters are the day as the speaker said it)."""
    return datetime.combine(d, time.max if end else time.min, zone).isoformat(timespec="seconds")


def _meaning(span: Span) -> str:
    if span.first == span.last:
        return f"{WEEKDAYS[span.first.weekday()].capitalize()[:3]} {span.first.isoformat()}"
    if span.first.day == 1 and span.last == _month_end(span.first):
        return f"{calendar.month_name[span.first.month]} {span.first.year}"
    return f"{span.first.isoformat()} to {span.last.isoformat()}"


def anchor(text: str, said_at: datetime, zone: ZoneInfo, plan: bool = False) -> Anchored:
    """What the time words of `text` meant when said at `said_at` (aware) in `zone` (whose
    calendar "tomorrow" and "next week" are read on): its validity window, if they bound
    one, and each relative word's day. A recurring schedule names no window. `plan`: the
    text is a to-do, whose weekday is a coming day ("Dentist on Tuesday at 3pm")."""
    day = said_at.astimezone(zone).date()
    spans = [] if not text else _spans(text, day, plan or reschedules(text))
    dates = {s.said: _meaning(s) for s in spans if s.relative}
    # Someone else's words about someone else ("Maria said she'd be off Friday", "he told me
    # he would be away next week") bound no window of the writer's claim, nor make it a plan
    # of theirs (`capture.takes_over`): the days they meant are noted all the same.
    reports = [(a, b) for a, b, someone in reported_clauses(text) if someone]
    spans = [s for s in spans if not any(a <= s.start < b for a, b in reports)]
    if not spans or _RECURRING.search(text):
        return Anchored(None, None, {} if _RECURRING.search(text) else dates)
    if is_yearly(text):  # "Anna's birthday is tomorrow": every year's, it ends on no day
        return Anchored(None, None, dates)
    first = last = None
    for n, span in enumerate(spans):
        nxt = spans[n + 1] if n + 1 < len(spans) else None
        joined = nxt is not None and re.fullmatch(rf"\s*(?:{_END}|and)\s*", text[span.end:nxt.start], re.I)
        if (_before(text, span, _START) or (n == 0 and _before(text, span, r"between"))
                or (joined and _before(text, span, _MOVED_TO))):
            if joined:  # "from Monday to Thursday", "between May 3 and May 9": a range said as one
                first, last = span.first, nxt.last
            elif span.first == span.last or (span.relative and span.last - span.first <= timedelta(days=6)):
                # "from December 1", "as of last Friday", "starting next week"; not "from April"
                # (of which year? a raise "from April" said in November may be last April's)
                first = span.first
            break
        if (span.relative or span.one_near_day) and _before(text, span, UNTIL):
            # a stand-in for a while ("until Friday"); "the lease runs until 31 October" states
            # the lease's end, not the claim's
            last = span.last
            break
    if first is None and last is None and len(spans) == 1 and spans[0].first >= day - timedelta(days=7):
        (span,) = spans
        if span.relative and span.first != span.last and span.last - span.first <= timedelta(days=6):
            first, last = span.first, span.last  # "on call this week": the week is its window
        elif span.one_near_day:
            last = span.last  # "the dentist is next Tuesday": over after that day
    return Anchored(_local_bound(first, zone, False) if first else None,
                    _local_bound(last, zone, True) if last else None, dates)


def undated(text: str) -> str:
    """`text` without its time expressions and the cue words before them ("From December 1,
    Maya's address is Rua Nova 5" -> ", Maya's address is Rua Nova 5"): what it says
    whatever the day, to compare two claims said for different days."""
    return _DATED.sub(" ", text)


def with_window(proposal: ProposedItem, said_at: str, zone: str) -> tuple[ProposedItem, dict[str, Any] | None]:
    """`proposal` with the validity window its words bound when said at `said_at` (ISO-8601)
    in `zone`, unless it names one itself; and what its relative time words meant then
    (`SAID_DATES`), or None when it has none."""
    at, tz = parse_time(said_at), time_zone(zone)
    if at is None:
        return proposal, None
    got = anchor(proposal.content, at, tz, proposal.type in DATED_TYPES)
    if proposal.valid_from is None and proposal.valid_to is None and (got.valid_from or got.valid_to):
        proposal = msgspec.structs.replace(proposal, valid_from=got.valid_from, valid_to=got.valid_to)
    if not got.dates:
        return proposal, None
    local = at.astimezone(tz)
    return proposal, {"on": f"{local:%a} {local.date().isoformat()}", "meant": got.dates}


def reread(before: str, after: str, window: tuple[str | None, str | None], first_said: str, said_at: str,
           zone: str, item_type: str = "note") -> tuple[dict[str, str | None], dict[str, Any] | None]:
    """An edit of what a claim says (`before` -> `after`) read as said at `said_at` (ISO-8601)
    in `zone`, as a new claim's words are (`with_window`): the window to store (as patch
    fields; empty when the stored `window` stays) and what its time words meant then
    (`SAID_DATES`, None when it has none). New words that bound no window keep the stored
    one, unless it is the one `before` bound when first said (`first_said`): that window
    was those words' and goes with them. `item_type`: the item's (a to-do's weekday is a coming day)."""
    edited, said_dates = with_window(ProposedItem(type=item_type, content=after), said_at, zone)
    if edited.valid_from or edited.valid_to:
        got = (edited.valid_from, edited.valid_to)
    else:
        old, _ = with_window(ProposedItem(type=item_type, content=before), first_said, zone)
        got = (None, None) if (old.valid_from, old.valid_to) == window and any(window) else window
    return ({} if got == window else {"valid_from": got[0], "valid_to": got[1]}), said_dates


__all__ = ["SAID_DATES", "Anchored", "anchor", "reread", "undated", "with_window"]
