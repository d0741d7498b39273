"""The values a text states (numbers with their units, dates, names) and those it names as replaced."""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from datetime import date

from ..dates import MONTHS, written_dates
from ..lexical import STOPWORDS, lemma, words
from .patterns import (
    _CHANGED,
    _CLOCK,
    _CLOCK_RANGE,
    _CLOCK_UNITS,
    _CODE,
    _CODE_SPAN,
    _COUNTED,
    _DATE,
    _DIGIT,
    _HONORIFIC,
    _IDENTIFIER,
    _LIGHT_VERBS,
    _MAGNITUDES,
    _MEASURED,
    _MODIFIED_COUNT,
    _NAME,
    _NAMED_FORM,
    _NAMED_NUMBER,
    _NOT_UNITS,
    _NUMBER,
    _NUMBER_WORD,
    _NUMBER_WORDS,
    _NUMBERED,
    _PART_OF,
    _PLAIN_NUMBER,
    _RANGE,
    _RESCHEDULED,
    _RETIRED,
    _SENTENCE_START,
    _STEMS,
    _TENTATIVE,
    _TIME_WORD,
    _TIME_ZONES,
    _UNIT_SPLIT,
    _VOCATIVE,
    _WHEN_NAMES,
    _YEARLESS_DATE,
    ABSENCES,
    AFTER_NOON_AS_A_NOUN,
    MONTH_STEMS,
    PRESENCES,
    TIME_WORDS,
    UNIT_SCALE,
    _common_words,
    _first_names,
)

MONTH_DATE_PATTERNS = 2  # `dates.written_dates`: a day or a month of a year, named with its month


def reschedules(text: str) -> bool:
    """It says that the date or time of what it names changed ("moved to Thursday")."""
    return _RESCHEDULED.search(_stance(text or "")) is not None


def absences_ended(text: str) -> str:
    """The words of the absences a return in `text` ends (`ABSENCES`: "I'm back in the
    office" -> "remote remotely home ..."), and of the presences an absence it says began
    ends (`PRESENCES`: "I work remotely now" -> "office commute ..."), to find the stored
    claims that say them: "" when it says no one is back nor now away."""
    stated = _stance(text or "")
    ended = [said for back, _, said in ABSENCES if back.search(stated)]
    if _CHANGED.search(stated):
        ended += [PRESENCES[n][1] for n in absent(stated) if PRESENCES[n] is not None]
    return " ".join(ended)


def absent(stated: str) -> frozenset[int]:
    """Where (indices of `ABSENCES`) `stated` says its one is away from, not back at."""
    return frozenset(n for n, (back, away, _) in enumerate(ABSENCES) if not back.search(stated) and away.search(stated))


def present(stated: str) -> frozenset[int]:
    """Where (indices of `PRESENCES`) `stated` says its one is, and not away from."""
    return frozenset(n for n, there in enumerate(PRESENCES)
                     if there is not None and there[0].search(stated) and not ABSENCES[n][1].search(stated))


def stated_values(text: str) -> frozenset[str]:
    """Numbers and times with their unit (also written as words: "two" is 2), ISO dates, and
    names capitalised mid-sentence, except those named only as replaced or denied."""
    # whom it answers first: "No problem, John!" names no value, nor retires "problem, John"
    return _unaddressed_values(_RETIRED.sub(lambda m: " " * len(m.group(0)), _unaddressed(text)))


def retired_values(text: str) -> frozenset[str]:
    """The values `text` names as replaced or denied ("MySQL 8, replacing Postgres 16")."""
    return _values(text) - stated_values(text) if _RETIRED.search(text) else frozenset()


def _stance(text: str) -> str:
    """`text` without its sentences that only weigh an option (`_TENTATIVE`): what it
    states as so, the part whose values, denials and endings the rule reads."""
    return _TENTATIVE.sub(lambda m: " " * len(m.group(0)), text) if _TENTATIVE.search(text) else text


def _values(text: str) -> frozenset[str]:
    return _unaddressed_values(_unaddressed(text))


def _unaddressed_values(text: str) -> frozenset[str]:
    """`_values` of a text whose vocatives are blanked already (`_unaddressed`)."""
    found: set[str] = set()
    if "`" in text:  # code ("`pytest -n auto`"): one value as written, no numbers or names in it
        found |= {"`" + " ".join(m.group(1).lower().split()) + "`" for m in _CODE_SPAN.finditer(text)}
        text = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)
    dates = written_dates(text, patterns=MONTH_DATE_PATTERNS)
    if dates:  # "March 3, 2027" is the value 2027-03-03, not the name "march" and two numbers
        found |= {_iso(first, last) for _, _, (first, last) in dates}
        for start, end, _ in dates:
            text = text[:start] + " " * (end - start) + text[end:]
    if _DIGIT.search(text) and _YEARLESS_DATE.search(text):  # "Dec 24" is "24 December" is "24 decemb"
        found |= {_day_of_month(m) for m in _YEARLESS_DATE.finditer(text)}
        text = _YEARLESS_DATE.sub(lambda m: " " * len(m.group(0)), text)
    if _NUMBER_WORD.search(text):
        text = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(0).lower()], text)
    if _TIME_WORD.search(text):  # "at noon" is "at 12:00"
        text = _TIME_WORD.sub(lambda m: m.group(0) if AFTER_NOON_AS_A_NOUN.search(m.string, 0, m.start())
                              else TIME_WORDS[m.group(1).lower()], text)
    text = _without_identifiers(text)  # "the 4.2 release" says which, no count
    if _DIGIT.search(text):
        text = _CLOCK_RANGE.sub(r"\1 and ", _CLOCK.sub(_clock_time, text))
        found.update(_DATE.findall(text))
        if "-" in text:
            found.update(m.group(0).lower() for m in _CODE.finditer(text))
        rest = _DATE.sub(" ", text) if found else text
        if "-" in rest or "–" in rest or " to " in rest:  # "200-300 ms": both ends, each in its unit
            rest = _RANGE.sub(r"\1 \3, \2 \3", rest)
        numbers = list(_NUMBER.finditer(rest))
        found |= {_number_with_unit(m.group(0), _counted_noun(rest, m)) for m in numbers}
    else:
        rest, numbers = text, []
    if _HONORIFIC.search(text):  # "Dr. Okafor": the name, read as one mid-sentence ("dr Okafor")
        text = _HONORIFIC.sub(lambda m: m.group(1).lower() + " ", text)
    names = [m.group(0) for m in _NAME.finditer(text)]
    if names:
        starts = {m.group(1) for m in _SENTENCE_START.finditer(text)}
        # not a function word capitalised after a comma ("I appreciate your support, It means a lot")
        named = {name for name in names if name not in starts
                 and not (name.lower() in STOPWORDS and _NAMED_FORM.fullmatch(name))}
        found |= {name.lower() for name in named}
        found |= {f"{number} {_STEMS([name.lower()])[0]}" for number, name in _named_numbers(rest, numbers, named)}
    # a day of a year is that day of its month too ("3 March 2027" states "March 3rd")
    found |= {_month_day(v) for v in found if _DATE.fullmatch(v)}
    return frozenset(v.strip() for v in found if v.strip())


_VERSION = re.compile(r"\d\.\d")  # what `_NUMBERED` needs: asked first, as most texts hold none
_SENTENCE_OPENS = re.compile(r"(?:^|[.!?;:]\s+|\n)\s*$")


def identifiers(text: str) -> list[tuple[int, int, str, str]]:
    """The spans of the numbers in `text` that say which one (`_IDENTIFIER`: "the 4.2 release")
    with its noun and the one word each makes of it ("release", "release42"): the noun after the number is singular
    and no unit ("the 100 ms budget", "our 2027 months" count). A noun before a version says which one too
    (`_NUMBERED`: "release 4.2"), a light verb or a plural no noun ("we run 3.11"), a unit after it a measure."""
    out = []
    for m in _IDENTIFIER.finditer(text):
        number, noun = m.group(1), m.group(2).lower()
        if (noun in _NOT_UNITS or noun in _MAGNITUDES or noun in _TIME_ZONES or noun in _CLOCK_UNITS
                or noun in MONTHS or _plural(noun) or _STEMS([noun])[0] in UNIT_SCALE):
            continue
        out.append((m.start(1), m.end(2), noun, noun + number.replace(".", "")))
    for m in _NUMBERED.finditer(text) if _VERSION.search(text) else ():  # "release 4.2": the noun first
        noun, number, unit = m.group(1).lower(), m.group(2), (m.group(3) or "").lower()
        if unit and unit not in _NOT_UNITS and (len(unit) <= 3 or _STEMS([unit])[0] in UNIT_SCALE):
            continue
        if (noun in _NOT_UNITS or noun in _LIGHT_VERBS or noun in MONTHS or _plural(noun)
                or (m.group(1)[0].isupper() and not (_SENTENCE_OPENS.search(text, 0, m.start())
                                                      and noun in _common_words()))):
            continue
        out.append((m.start(1), m.end(2), noun, noun + number.replace(".", "")))
    return sorted(out)


def _without_identifiers(text: str) -> str:
    """`text` with its identifiers (`identifiers`) blanked."""
    if _DIGIT.search(text) and (_IDENTIFIER.search(text) or _NUMBERED.search(text)):
        for start, end, _, _ in identifiers(text):
            text = text[:start] + " " * (end - start) + text[end:]
    return text


def _month_day(iso: str) -> str:
    """An ISO day ("2027-03-03") as the day of its month `_day_of_month` reads ("3 march")."""
    return f"{int(iso[8:])} {_STEMS([calendar.month_name[int(iso[5:7])].lower()])[0]}"


def _day_of_month(m: re.Match[str]) -> str:
    """A day of a month without a year (`_YEARLESS_DATE`) as its day and its month's full
    name, stemmed as a unit is ("Dec 24", "the 24th of December": "24 decemb")."""
    g = m.groupdict()
    month = calendar.month_name[MONTHS[(g["m1"] or g["m2"]).lower()]].lower()
    return f"{int(g['d1'] or g['d2'])} {_STEMS([month])[0]}"


def _counted_noun(text: str, m: re.Match[str]) -> str | None:
    """The noun a whole number (`m`, a match of `_NUMBER` in `text`) counts when a singular
    word between them says which kind (`_MODIFIED_COUNT`: "8 ingest workers": "workers",
    not "ingest"); None when the word after the number is its unit, or none follows."""
    number, unit = _UNIT_SPLIT.match(m.group(0).lower()).groups()
    # "2-space tabs", "3-week sprints": joined to its number, the word is the unit
    if not unit or not unit.isalpha() or not number.isdigit() or number in ("0", "1") or "-" in m.group(0):
        return None
    if unit in _NOT_UNITS or unit in _MAGNITUDES or unit in _TIME_ZONES or _plural(unit):
        return None
    if _STEMS([unit])[0] in UNIT_SCALE or unit in MONTHS:
        return None
    after = _MODIFIED_COUNT.match(text, m.end())
    noun = after.group(1).lower() if after else ""
    return noun if noun not in STOPWORDS and _plural(noun) else None


def _plural(word: str) -> bool:
    """A plural noun, by its lemma ("workers": "worker"; not "ingest", "status", "bus")."""
    return word.endswith("s") and not word.endswith("ss") and lemma(word) != word


def _clock_time(m: re.Match[str]) -> str:
    """A time of day with its half of the day (`_CLOCK`) as its 24-hour time ("2:30 PM":
    "14:30"; "9-11am": "9:00 and 11:00"; "11 o'clock": "11:00")."""
    half = (m.group(6) or "").lower()
    said = f"{_hour(int(m.group(4)), half)}:{m.group(5) or '00'}"
    if m.group(1) is None:
        return said
    start = int(m.group(1))
    # its own half of the day ("8am-8pm"), or the end's ("9-11am"; "11-1pm": the other half)
    start_half = (m.group(3) or "").lower() or (
        half if start <= int(m.group(4)) or not half else {"a": "p", "p": "a"}[half])
    return f"{_hour(start, start_half)}:{m.group(2) or '00'} and {said}"


def _hour(hour: int, half: str) -> int:
    """The 24-hour hour of `hour` in the half of the day `half` ("a", "p", "" unsaid)."""
    if not half or hour > 12:
        return hour
    return hour % 12 + (12 if half == "p" else 0)


def _unaddressed(text: str) -> str:
    """`text` with whom it greets, thanks or answers blanked (`_VOCATIVE`)."""
    return _VOCATIVE.sub(_blank_vocative, text) if _VOCATIVE.search(text) else text


def _blank_vocative(m: re.Match[str]) -> str:
    """A greeting with whom it greets, or a short answer with a first name after it
    ("Sounds great, Mel!", not "the api uses json, Protobuf."), blanked."""
    if m.group("to") is not None or m.group("name").split()[0].lower() in _first_names():
        return " " * len(m.group(0))
    return m.group(0)


def _named_numbers(text: str, numbers: Iterable[re.Match[str]], names: set[str]) -> Iterable[tuple[str, str]]:
    """(number, name) for each bare number right after a name mid-sentence ("on Python 3.11")."""
    for m in numbers:
        number = _number_with_unit(m.group(0))
        if " " in number:
            continue
        before = _NAMED_NUMBER.search(text, 0, m.start())
        if before and before.group(1) in names:
            yield number, before.group(1)


def _iso(first: date, last: date) -> str:
    """A day as 2027-03-03, a month as 2027-03 (what ISO dates in the text read as too)."""
    if first == last:
        return first.isoformat()
    return first.isoformat()[:7] if first.day == 1 and first.month == last.month else f"{first}..{last}"


def _number_with_unit(match: str, counted: str | None = None) -> str:
    """"30 days" and "30days" are "30 days"; "9:30 on" and "8080 is" are "9:30" and "8080":
    the word after a number is its unit only when it is not a function word. A duration or a
    size is one value in its base unit ("30 minutes" and "0.5 hours" are "1800 second").
    `counted`: the noun counted beyond the word after the number (`_counted_noun`), its unit."""
    number, unit = _UNIT_SPLIT.match(match.lower().replace(",", ".")).groups()
    if counted:
        unit = counted
    if len(number) == 5 and number[0] == "0" and number[2] == ":":  # "09:30" is "9:30"
        number = number[1:]
    if not unit or unit in _NOT_UNITS or (":" in number and unit not in _TIME_ZONES):
        return number
    stem = _STEMS([unit])[0]
    scale = UNIT_SCALE.get(stem)
    if scale is not None and _PLAIN_NUMBER.fullmatch(number):
        return f"{float(number) * scale[1]:.12g} {scale[0]}"
    return f"{number} {stem}"


def _unit_words(text: str) -> set[str]:
    """The words `text` uses as the unit of a number ("minutes" in "30 minutes", "days" in
    "seven days a week"; not "week")."""
    if _NUMBER_WORD.search(text):
        text = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(0).lower()], text)
    text = _without_identifiers(text)
    out = set()
    for m in _NUMBER.finditer(text):
        unit = _counted_noun(text, m) or _UNIT_SPLIT.match(m.group(0).lower().replace(",", ".")).group(2)
        if unit and unit not in _NOT_UNITS:
            out.add(unit)
    return out


def _value_words(values: Iterable[str]) -> set[str]:
    return {w for v in values for w in words(v)}


def _date_words(text: str) -> set[str]:
    """The words of the dates `text` names with their month ("march", "3", "2027"), and of
    what places a day in one ("at the end of June 2026", "early March 2027")."""
    out: set[str] = set()
    for start, end, _ in written_dates(text, patterns=MONTH_DATE_PATTERNS):
        part = _PART_OF.search(text, 0, start)
        out.update(words(text[part.start() if part else start:end]))
    if _DIGIT.search(text):
        out.update(w for m in _YEARLESS_DATE.finditer(text) for w in words(m.group(0)))
    return out


def _measured(content: str) -> frozenset[str]:
    """The stems of what `content`'s numbers measure ("50 mg of sertraline": "sertralin")."""
    if " of " not in content:
        return frozenset()
    if _NUMBER_WORD.search(content):  # "two cups of coffee"
        content = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(0).lower()], content)
    found = [m.group(1).lower() for m in _MEASURED.finditer(content)]
    return frozenset(_STEMS(found)) if found else frozenset()


def _measures(values: Iterable[str]) -> frozenset[str]:
    """The values that are numbers with a unit ("4 space"); not a day of a month ("14
    march": "14 March" and "28 March" are two days, not two counts in one unit)."""
    return frozenset(v for v in values if " " in v and _DIGIT.match(v) and v.split(" ", 1)[1] not in MONTH_STEMS)


def _units(values: Iterable[str]) -> frozenset[str]:
    """The unit words of numbers stated with one ("4 space" -> "space"; not dates, times)."""
    return frozenset(v.split(" ", 1)[1] for v in _measures(values))


def _value_kinds(values: Iterable[str]) -> int:
    """What kinds of value a claim states, as bits: 1 a name ("InfluxDB", "Tuesdays"), 2 a
    number or time without a unit ("13", "9:30", "8 pm"); numbers with a unit are their units."""
    kinds = 0
    for v in values:
        if not _DIGIT.search(v):
            kinds |= 1
        elif v not in _measures((v,)) or ":" in v.split(" ", 1)[0] or v.split(" ", 1)[1] in _CLOCK_UNITS:
            kinds |= 2
    return kinds


def names_only(values: Iterable[str]) -> bool:
    """Only names, none a day ("acme"; not "tuesday"): beside only numbers (`numbers_only`:
    a card's "4111 1111 1111 1111"), another sort of thing said, no value that replaces it."""
    return not _times(values) and not any(_DIGIT.search(v) for v in values)


def numbers_only(values: Iterable[str]) -> bool:
    """Every value has a digit: a number, a time, a date, an identifier (`names_only`)."""
    return all(_DIGIT.search(v) for v in values)


def _counted(text: str) -> frozenset[tuple[str, str]]:
    return frozenset((unit.lower(), _STEMS([thing.lower()])[0]) for unit, thing in _COUNTED.findall(text))


def _times(values: Iterable[str]) -> bool:
    """Whether one of the values is a day or a time ("thursday", "8 decemb", "2026-12-03",
    "4:30 pm", "10:15")."""
    return any(v in _WHEN_NAMES or _DATE.fullmatch(v) or ":" in v
               or (" " in v and v.split(" ", 1)[1] in _CLOCK_UNITS | MONTH_STEMS) for v in values)


def _value_stems(values: Iterable[str]) -> frozenset[str]:
    return frozenset(_STEMS(sorted(_value_words(values))))


# Places that exclude one another as where a thing is kept: blocs of countries and cloud
# regions ("EU" / "US", "eu-central-1" / "us-west-2": a region's code states its family,
# `claim._read_claim`). Data kept in one is not kept in the other; a city, a country inside a
# bloc ("Germany" / "EU") is no such pair, and is not read as one.
_BLOCS = frozenset({"eu", "eea", "us", "usa", "uk", "emea", "apac", "latam", "americas"})
_REGION_FAMILIES = frozenset({"us", "eu", "ap", "ca", "sa", "me", "af", "il", "mx", "cn", "uk", "asia", "europe",
                              "australia", "northamerica", "southamerica", "westeurope", "northeurope"})


def places(values: Iterable[str]) -> frozenset[str]:
    """The values that are places of the kind `_BLOCS` holds, or cloud regions' codes."""
    return frozenset(v for v in values
                     if v in _BLOCS or (_CODE.fullmatch(v) and v.split("-", 1)[0] in _REGION_FAMILIES))
