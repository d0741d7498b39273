"""The conflict rule: which claims disagree, and which of them a caller should be given.

Used by recall (at query time, over the candidates) and by `/v1/conflicts` (over everything
a caller may see), so both answer the same question the same way.

Two claims (types whose title names something asserted: fact, decision, preference, ...;
raw chat turns, summaries, pointers and todos are not claims) **conflict** when:

- one links to the other with `contradicts`; or
- they have the same normalised title and different content (`MAY_UPDATE`): one title may
  hold several notes ("Pepper: weighs 6 kg" / "Pepper: scared of thunder"), so unless the
  contents conflict by the rules below, neither is taken to correct the other: recall shows
  both, flagged, and a write replaces an older note under its title only when the new one
  says what changed (`CHANGED`: "ci moved to github actions, jenkins is gone"); or
- they are about the same subject and state different values. Same subject: the words
  before the first stated value agree ("Telemetry retention is 30 days" / "Telemetry
  retention is 90 days in orion"; an opener alone, "Thanks!", "Wow,", names none), or
  most of their non-value words are shared (the overlap coefficient of the smaller set,
  at least two words), or half of them when one names as replaced a value the other
  states, or says that what the other names changed ("Dinner with Priya got pushed back
  to Friday" / "I'm meeting Priya for dinner on Thursday"), or both count in one unit
  with different numbers ("4 spaces" / "2-space indentation"), or their embeddings are
  very close and half their words shared. Words are Snowball stems of their lemmas
  (simplemma: "ships" / "ship", "kept" / "keep") of
  the content and the title (the title names the subject: "Ship date" / "Release date");
  a name is a word too ("the API", "Python"). Values: numbers and times (with their unit word, as a stem: "4
  spaces" is "4-space"; a duration or a size in its base unit: "30 minutes" and "0.5 hours"
  are one value, "30 minutes" and "2 hours" count in one unit), dates (ISO, or with their month: "March 3, 2027" is
  2027-03-03), and capitalised names inside a sentence ("two" is 2);
  not those the claim says it replaces or denies ("MySQL 8, replacing Postgres 16",
  "instead of", "no longer", "not", "no GraphQL"). Different values: both state some,
  and neither set contains the other (a claim that adds a value refines, not contradicts).
  Values stated in the titles name the subject: claims whose titles both state values,
  and different ones, are about different things; so are claims whose titles each name,
  and whose contents repeat, a word the other never says ("Auth service timeout: the auth
  service ..." / "Billing service timeout: the billing service ...").

- one denies what the other says (`DENIES`): "I'm not allergic to penicillin" / "I'm
  allergic to penicillin", "We don't deploy on Fridays" / "We deploy on Fridays": the same
  values (or none), most words shared, one negated ("not", "n't", "never", "no", "nobody",
  "nothing", ..., or saying it ended) and the other not, and what it negates is what the other says (most words of
  its clauses that negate, and of its title, are the other's: "Long time no see!" in a
  long chat turn denies nothing of "Good to see you!"); a negation that only retires a
  value ("REST, not GraphQL") denies nothing.

A `supersedes` link is not a conflict but an answer to one: the superseded claim is never
given when the superseding one is visible. Nor is a `refines` link, a correction of one
detail of a note that says more (`corrects_in_part`): the note stays, marked `CORRECTED`,
shown after its correction.

**Resolution** of a group of conflicting claims:

1. Superseded members drop out; members a visible member corrects in part stay, `CORRECTED`.
2. Across scopes, the more specific scope applies (session > project > user > org): the
   broader members stay, ordered after it and marked as overridden (`scope`).
3. Within one scope: the higher confidence wins, then the newer (updated_at); members equal
   on both are ambiguous and all stay, flagged. A member competes only with those it
   conflicts with: two that agree, each contradicted by a third, both stand. Notes under one
   title that neither corrects (`MAY_UPDATE`) both stand, marked `related` (recall lists
   the newer first); a wish the newer restates (`_revises`) is corrected by it.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import date
from functools import cache, lru_cache
from typing import NamedTuple

import msgspec
import numpy as np
from scipy import sparse

from pipelines.records import RETIRED_BY_USER, SCOPE_RANK, MemoryItem, Scope, timestamp

from .dates import MONTHS, written_dates
from .lexical import SMALL_TALK, STOPWORDS, Stems, normalise_label, words

# Two claims under one title whose contents do not compare: one may add to or update the
# other. Recall shows both, flagged; a write neither corrects nor holds the older for it.
MAY_UPDATE = "same title, may add or update"
# ... unless the newer one says something changed: then it updates the older.
CHANGED = "same title, the newer says it changed"
# A note a newer claim corrects in part (its `refines` link): shown, after the correction.
CORRECTED = "corrected"

# Types whose title names a claim, so two of them can disagree.
CLAIM_TYPES = frozenset({"fact", "decision", "definition", "constraint", "preference",
                         "pattern", "note"})
SUBJECT_OVERLAP = 0.75  # overlap coefficient of the non-value words
SUBJECT_COSINE = 0.85  # embedding similarity that, with half the words shared, is one subject
MAX_BUCKET = 200  # a word shared by more claims than this does not propose pairs
# One claim naming as replaced a value the other states ("MySQL 8, replacing PostgreSQL 16")
# says itself that they are about one thing: half the words shared suffices then.
RETIRED_SUBJECT_OVERLAP = 0.5
# Naming as replaced the very value the other states ("We use MkDocs rather than Sphinx" /
# "Documentation is built with Sphinx") is most of the evidence: a third of the words will do.
RETIRING_SUBJECT_OVERLAP = 1 / 3
MONTH_DATE_PATTERNS = 2  # `dates.written_dates`: a day or a month of a year, named with its month

# The leading lookaheads only skip, cheaply, positions where no value can start.
_NUMBER = re.compile(r"(?=\d)(?<![\w-])\d+(?:[.,:]\d+)*(?:(?:\s*|-)(?:%|[a-z]+))?", re.IGNORECASE)
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_NAME = re.compile(r"(?=[A-Z])(?:(?<![.!?]\s)(?<!^)\b[A-Z][\w-]*[A-Z0-9][\w-]*\b|(?<=[a-z,;:]\s)[A-Z][\w-]+)")
_DIGIT = re.compile(r"\d")
_RANGE = re.compile(r"(?<![\w.:-])(\d+(?:[.,]\d+)?)\s*(?:-|–|to)\s*(\d+(?:[.,]\d+)?)\s*(%|[a-z]+\b)", re.IGNORECASE)
_CLOCK_UNITS = frozenset({"am", "pm", "o'clock", "h"})  # "8 pm" is a time, as "20:00" is
_UNIT_SPLIT = re.compile(r"([\d.:]+)[\s-]*(.*)")  # "2-space" is "2 space"
_NOT_UNITS = STOPWORDS | {"every", "per", "than", "more", "less", "or", "instead", "rather", "replacing", "since",
                          "till", "unless", "via", "without", "yet", "still", "already"}
# A name right before a bare number is what the number counts ("Python 3.11", "Node 18"): a
# version, read as a number with a unit, so "Python 3.12" differs from it in one unit.
_NAMED_NUMBER = re.compile(r"\b([A-Z][\w-]*)\s+v?$")
# A clause saying something ended ("we no longer have a staging environment", "the newsletter
# was discontinued"): what it names ended, and a claim stating that thing as current conflicts
# with it though neither states a value. "dropped to 50%" is a change, not an end.
_ENDED = re.compile(r"\b(?:no\s+longer|discontinued|stopped|removed|cancell?ed|retired|abandoned|"
                    r"(?:shut|turned|switched)\s+(?:down|off)|decommissioned|deprecated|closed|sold|"
                    r"sunsetted|got\s+rid\s+of|dropped(?!\s+(?:to|by|from)\b))\b", re.IGNORECASE)
_CLAUSE = re.compile(r"(?:[^.;!?]|\.(?=\w))+")  # "3.8" and "node.js" do not end a clause
# Whom a sentence greets, thanks or answers ("Hey Gina, I had to shut down my bank account",
# "Thanks, Jon!", "Wow, Caroline, ...", "Sounds great, Mel!", "Glad I could help, Maria."): no
# value it states.
_VOCATIVE = re.compile(
    r"(?:^|(?<=[.!?]\s))(?:(?i:hey|hi|hello|thanks|thank\s+you|congrats|congratulations|dear|sorry|wow|whoa|yeah|"
    r"yes|yep|oh|ah|aw+|haha|omg|ok|okay|well|hmm|sure|cool|nice|awesome|great|bye|good\s+(?:morning|night|luck)|"
    r"see\s+ya)[\s,]+(?P<to>)|[A-Za-z][\w'’]*(?:\s+(?:I|[a-z][\w'’]*)){0,4},\s*)"
    r"(?P<name>(?:[A-Z][\w'’-]*\s*)+)(?=[,!.?]|$)")
# After the word that says it ended, a number or a date a preposition brings in says when
# ("IE11 support was dropped in the 5.0 release", "discontinued on March 3, 2026", "since v2").
_ENDED_WHEN = re.compile(r"\b(?:in|on|since|as\s+of|after|during|by)\s+(?:the\s+)?(?=v?\d|[A-Z][a-z]+\.?\s+\d)",
                         re.IGNORECASE)
# Words of such a clause that say when, not what ("discontinued last month").
_ENDED_TIME_WORDS = frozenset({"last", "month", "week", "year", "day", "ago", "recent", "recently", "yesterday",
                               "today", "now", "anymore", "ever", "earlier", "since", "already"})
# Verbs that say little before a value ("I take 50 mg of X", "we pay 40 euros for Y", "I
# have 2 cats"): words before the first value that are only these do not name the subject.
_LIGHT_VERBS = frozenset({"take", "takes", "took", "taking", "use", "uses", "used", "using", "pay", "pays", "paid",
                          "paying", "get", "gets", "got", "getting", "need", "needs", "needed", "want", "wants",
                          "eat", "eats", "drink", "drinks", "spend", "spends", "spent", "buy", "buys", "bought",
                          "keep", "keeps", "kept", "run", "runs", "ran", "like", "likes", "love", "loves", "make",
                          "makes", "made", "go", "goes", "went", "see", "sees", "saw", "give", "gives", "gave",
                          "put", "puts", "set", "sets", "add", "adds", "added"})
# A claim that says it adds ("I'm also allergic to shellfish", "GitHub Actions also runs the
# nightly suite", "... as well") is more of the subject, not a correction of what was said of it.
_ADDS = re.compile(r"\b(?:also|as\s+well|additionally|in\s+addition|besides)\b|\btoo(?=\s*(?:[.,;!?]|$))",
                   re.IGNORECASE)
# A claim that says something changed ("ci moved to github actions, jenkins is gone",
# "stopped drinking coffee"), under the title of an older claim whose content the value rule
# cannot compare with it, updates that claim rather than adding to it when it names
# something the older one said beyond the title (`Claim.changes`).
# A date or a time that changed: "slipped to Tuesday", "pushed back a week", "moved up",
# "is now on Thursday".
_MOVED_IN_TIME = (r"moved|slipped|slid|postponed|delayed|rescheduled|bumped|brought\s+forward|put\s+off|"
                  r"pulled\s+(?:in|forward)|pushed\s+(?:back|out|up|forward|to)|now\s+(?:on|at|for)")
_RESCHEDULED = re.compile(rf"\b(?:{_MOVED_IN_TIME})\b", re.IGNORECASE)
_CHANGED = re.compile(
    r"\b(?:now|any\s*more|no\s+(?:longer|more)|stopped|quit|gave\s+up|given\s+up|switched|changed|"
    r"migrated|replaced|renamed|upgraded|downgraded|sold|retired|dropped|(?:is|are)\s+gone|instead|"
    r"went\s+(?:up|down)|raised|lowered|increased|decreased|upped|reduced|expired|cancell?ed|ended|became|"
    rf"{_MOVED_IN_TIME})\b",
    re.IGNORECASE)
# A to-do is no claim (two to-dos do not disagree: "buy milk" / "buy bread"), but an
# appointment kept as one can move: a claim or a to-do saying its time changed ("Dentist
# moved to Thursday") corrects the earlier one of its subject as a claim saying so does
# (`CHANGED`).
DATED_TYPES = frozenset({"todo"})
# "50 mg of sertraline", "200 grams of kibble", "two cups of coffee": the word after "of"
# is what the number measures, so a claim measuring another thing is about another subject.
_MEASURED = re.compile(r"(?<![\w.])\d[\d.,:]*(?:\s*|-)[a-z%$€£]+\s+of\s+(?:(?:the|my|our|his|her|their|your)\s+)?"
                       r"([a-z][\w-]*)", re.IGNORECASE)
ENDED_MIN_WORDS = 2  # what ended is named by two words at least ("staging environment", "Dana ... payments")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)([A-Z][\w-]*)")
# An honorific's full stop ends no sentence ("Dr. Patel"); a short name's does ("We adopted Max. Max eats ...").
_ABBREVIATED = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Mx|Prof|St|Jr|Sr|Rev|Sgt|Capt|Lt|Col|Gen)\.\s+$")
_POSSESSIVE = re.compile(r"['’]s\b")  # "Mom's birthday"
_OWNER = re.compile(r"\b([A-Za-z][\w-]*)['’]s\b")  # "the design team's standup"
_FIRST_PERSON = frozenset({"i", "my", "me", "mine", "we", "our", "us"})
# A name a possessive names, or sets beside what it names ("Our CI is CircleCI", "My sister
# Lena is vegan", "our dog Biscuit's food", "my friend, Tom,"): what the claim is about, a
# subject word as "sister" is, not a value it states ("Lena is not vegan" denies it). Not a
# day or a month ("our standup Tuesday").
_APPOSED = re.compile(r"\b(?i:my|our|his|her|their|your)\s+(?:([a-z][\w-]*),?\s+)?([A-Z][\w-]*)\b")
_NAMED_FORM = re.compile(r"[A-Z][a-z]+")  # a name as a sentence starts with it: "Leo", not "CI", "GitHub"
# "two approvals" states the value "3 approvals" contradicts ("one" is left out: mostly a
# pronoun, and "cached for one hour" / "at the CDN: one day" read as two rules, not one).
_NUMBER_WORDS = {w: str(n) for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split()) if w != "one"}
_NUMBER_WORD = re.compile(r"(?<!-)\b(?:" + "|".join(_NUMBER_WORDS) + r")\b(?!-)", re.IGNORECASE)
# A negation ("I'm not allergic to penicillin", "we don't deploy on Fridays", "no force
# pushes"): a claim that says it of what another states without it denies it (`_denies`). One
# that only retires a value ("REST, not GraphQL") states the rest, and denies nothing.
NEGATION = re.compile(r"\b(?:not|never|no|cannot|nobody|none|nothing|neither|nor)\b|n[’']t\b", re.IGNORECASE)
DENIES = "same subject, one denies it"
# What negates nothing though it holds a negation word (NegEx's pseudo-negations): a tag
# question ("Nature is amazing, isn't it?"), an idiom ("can't wait for", "no matter what",
# "not only", "no doubt", "no problem").
_NOT_NEGATING = re.compile(
    r",\s*\w+n[’']t\s+(?:it|he|she|they|we|you|i|there|that|this)\s*\?|"
    r"\b(?:(?:cannot|can[’']t|couldn[’']t)\s+wait|no\s+(?:matter|doubt|problem|worries)|not\s+only|never\s+mind)\b",
    re.IGNORECASE)
SAME_SUBJECT = "same subject, different values"
# "and" / "but" right before a negation ("... and don't quit", "but we never"): what comes before is not denied.
_CONJOINED = re.compile(r"\b(?:and|but|or)\s+(?:(?:i|we|you|they|he|she|it)\s+)?\w*$", re.IGNORECASE)
# Words that only say a value is retired ("instead of", "replacing"): not the subject.
_RETIRING_WORDS = frozenset({"replacing", "replaces", "replaced", "instead", "rather", "longer", "formerly",
                             "previously", "anymore"})  # "not ... anymore" says "no longer"
# "replacing Postgres 16", "instead of 9:30", "no longer on port 8080": values a claim names
# only to retire them, up to the end of the clause (or "to" in "moved from 9:30 to 10:00",
# "we moved the orders service from PostgreSQL to CockroachDB": what moved may stand between).
_RETIRED = re.compile(
    r"\b(?:replac(?:ing|es|ed)|instead\s+of|in\s+place\s+of|rather\s+than|no(?:\s+longer)?|not|formerly|previously|"
    r"(?:moved|switched|migrated|changed|converted|ported|went)(?:\s+(?!to\b|from\b)[\w'’-]+){0,4}?\s+from)\b(?:[^.;,!?()]|[.,:]\d)*?(?=\s+to\s|[.,](?!\d)|[;!?()]|$)",
    re.IGNORECASE)

# A sentence that weighs an option states no value: "We're evaluating a move of the ledger
# service to Postgres, nothing decided" neither corrects nor contradicts "runs on MySQL 5.7".
_TENTATIVE = re.compile(
    r"(?:^|(?<=[.;!?]\s)|(?<=\n))[^.;!?\n]*\b(?:evaluating|considering|thinking\s+(?:about|of)|might|maybe|perhaps|"
    r"possibly|proposal|proposed|undecided|tentative(?:ly)?|nothing\s+(?:is\s+)?decided|not\s+(?:yet\s+)?decided)\b"
    r"[^.;!?\n]*(?:[.;!?]|$)", re.IGNORECASE)


@dataclass(frozen=True)
class Claim:
    """What the rule reads of one item: its subject words and the values it states."""

    item: MemoryItem
    title: str
    content: str
    subject: tuple[str, ...]
    words: frozenset[str]
    values: frozenset[str]
    title_values: frozenset[str]
    retired: frozenset[str] = frozenset()  # values it names as replaced or denied
    units: frozenset[str] = frozenset()  # the units of the numbers it states ("4 space": "space")
    qualifiers: frozenset[str] = frozenset()  # words its title names and its content repeats
    adds: bool = False  # it says it adds to the subject (`_ADDS`)
    # Its content words beyond its title's, when it says something changed (`_CHANGED`); else None.
    changes: frozenset[str] | None = None
    measured: frozenset[str] = frozenset()  # what its numbers measure (`_MEASURED`: "of sertraline")
    named: frozenset[str] = frozenset()  # who or what it names as its subject (`_named`: "Leo"), of `words`
    persons: frozenset[str] = frozenset()  # of `named`, those who are someone (`_named`: "Leo", "Ben's")
    first_person: bool = False  # it speaks of the writer before its first value ("My passport", "I go")
    ended: frozenset[str] = frozenset()  # the words of what it says ended (`_ENDED`), of `words`
    ended_values: frozenset[str] = frozenset()  # and the values that clause states, of values | retired
    negated: bool = False  # it denies what it says ("I'm not allergic to penicillin"; `_denies`)
    denied: frozenset[str] = frozenset()  # the words of what it denies (`_denied`), of `words`
    contradicts: frozenset[str] = frozenset()  # ids this item links to with `contradicts`
    supersedes: frozenset[str] = frozenset()  # ids it replaces (its `supersedes` links)


def is_claim(item: MemoryItem) -> bool:
    return item.type in CLAIM_TYPES and item.validation != "retracted"


def reschedules(text: str) -> bool:
    """It says that the date or time of what it names changed ("moved to Thursday")."""
    return _RESCHEDULED.search(_stance(text or "")) is not None


def _moves(new: Claim, old: MemoryItem) -> bool:
    """`new` says the time of what `old`, a to-do, is about changed (`DATED_TYPES`)."""
    return old.type in DATED_TYPES and old.validation != "retracted" and reschedules(new.item.content)


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
    dates = written_dates(text, patterns=MONTH_DATE_PATTERNS)
    if dates:  # "March 3, 2027" is the value 2027-03-03, not the name "march" and two numbers
        found |= {_iso(first, last) for _, _, (first, last) in dates}
        for start, end, _ in dates:
            text = text[:start] + " " * (end - start) + text[end:]
    if _NUMBER_WORD.search(text):
        text = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(0).lower()], text)
    if _DIGIT.search(text):
        found.update(_DATE.findall(text))
        rest = _DATE.sub(" ", text) if found else text
        if "-" in rest or "–" in rest or " to " in rest:  # "200-300 ms": both ends, each in its unit
            rest = _RANGE.sub(r"\1 \3, \2 \3", rest)
        numbers = list(_NUMBER.finditer(rest))
        found |= {_number_with_unit(m.group(0)) for m in numbers}
    else:
        rest, numbers = text, []
    names = [m.group(0) for m in _NAME.finditer(text)]
    if names:
        starts = {m.group(1) for m in _SENTENCE_START.finditer(text)}
        # not a function word capitalised after a comma ("I appreciate your support, It means a lot")
        named = {name for name in names if name not in starts
                 and not (name.lower() in STOPWORDS and _NAMED_FORM.fullmatch(name))}
        found |= {name.lower() for name in named}
        found |= {f"{number} {_STEMS([name.lower()])[0]}" for number, name in _named_numbers(rest, numbers, named)}
    return frozenset(v.strip() for v in found if v.strip())


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


def _number_with_unit(match: str) -> str:
    """"30 days" and "30days" are "30 days"; "9:30 on" and "8080 is" are "9:30" and "8080":
    the word after a number is its unit only when it is not a function word. A duration or a
    size is one value in its base unit ("30 minutes" and "0.5 hours" are "1800 second")."""
    number, unit = _UNIT_SPLIT.match(match.lower().replace(",", ".")).groups()
    if not unit or unit in _NOT_UNITS:
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
    out = set()
    for m in _NUMBER.finditer(text):
        unit = _UNIT_SPLIT.match(m.group(0).lower().replace(",", ".")).group(2)
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
    return out


# "the end of", "early", "mid-" before a date: which part of it, a word of the date
_PART_OF = re.compile(r"\b(?:(?:the\s+)?(?:end|start|beginning|middle)\s+of|early|late|mid)[\s-]*$", re.IGNORECASE)


# Words compare as the stems of their lemmas ("kept" / "keep", "ships" / "ship"); units are
# stems too: "4 spaces" is "4 space"
_STEMS = Stems(max_memo=200_000, lemmas=True)


@cache
def _not_qualifiers() -> frozenset[str]:
    """Words that date a claim, not qualify its subject (`names_a_case`); read at first use,
    as the lemmas' dictionary loads then (not when a command that reads no claim starts)."""
    return frozenset(_STEMS("new newer updated update current revised latest corrected correct actual "
                            "final now today old previous official".split()))


# Units of one dimension, by stem, as (base unit, factor): durations and sizes compare as one
# value ("200 ms" / "0.2 seconds"), and two of one dimension count in one unit ("30 minutes"
# / "2 hours"). Months and years are 30 and 365 days.
_DAY = 86_400
UNIT_SCALE = {
    **{u: ("second", f) for u, f in (("ms", 0.001), ("millisecond", 0.001), ("s", 1), ("sec", 1), ("second", 1),
                                      ("min", 60), ("minut", 60), ("h", 3600), ("hr", 3600), ("hrs", 3600),
                                      ("hour", 3600), ("day", _DAY), ("week", 7 * _DAY), ("month", 30 * _DAY),
                                      ("year", 365 * _DAY))},
    **{u: ("byte", f) for u, f in (("byte", 1), ("kb", 1e3), ("kilobyt", 1e3), ("kib", 2**10), ("mb", 1e6),
                                    ("megabyt", 1e6), ("mib", 2**20), ("gb", 1e9), ("gigabyt", 1e9),
                                    ("gib", 2**30), ("tb", 1e12), ("terabyt", 1e12), ("tib", 2**40))},
}
_PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# "14 March" without a year reads as "14 march" (a month's lemma is a month: "sept" is "september")
MONTH_STEMS = frozenset(Stems()(sorted(MONTHS)))
_WHEN_NAMES = frozenset(MONTHS) | {f"{d}day" for d in ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")}
_CLAIMS: dict[tuple[str, str, str, str], Claim] = {}
_CLAIMS_MAX = 100_000


def read_claim(item: MemoryItem) -> Claim:
    """The claim of `item`, read once per item version: recall meets the same items request
    after request, and reading is regex work. Links are read afresh each time."""
    key = (item.id, item.updated_at, item.title, item.content)
    cached = _CLAIMS.get(key)
    if cached is None:
        if len(_CLAIMS) >= _CLAIMS_MAX:
            _CLAIMS.clear()
        cached = _CLAIMS[key] = _read_claim(item)
    return replace(cached, item=item, **_links(item))


def _links(item: MemoryItem) -> dict[str, frozenset[str]]:
    """The claim's fields `item`'s links give, read afresh with each item version's links."""
    return {"contradicts": frozenset(link.to for link in item.links if link.rel == "contradicts"),
            "supersedes": frozenset(link.to for link in item.links if link.rel == "supersedes")}


# What a packed claim keeps (`_pack`): every field but the item and what its links give.
_PACKED = tuple(f.name for f in fields(Claim) if f.name not in ("item", "contradicts", "supersedes"))


def _pack(claim: Claim) -> bytes:
    """A claim as a few hundred bytes, unpacked (`_unpack`) in microseconds where reading it
    again is regex work (~0.3 ms): what a snapshot's table keeps per row for the members
    of a recall's conflict groups, and for recalls over several corpora."""
    return pickle.dumps(tuple(getattr(claim, name) for name in _PACKED), protocol=pickle.HIGHEST_PROTOCOL)


def _unpack(data: bytes, item: MemoryItem) -> Claim:
    return Claim(item=item, **dict(zip(_PACKED, pickle.loads(data))), **_links(item))




def _read_claim(item: MemoryItem) -> Claim:
    retiring = item.metadata.get(RETIRED_BY_USER) if item.metadata else None
    if retiring and isinstance(retiring, list):
        item = msgspec.structs.replace(item, content=f"{item.content.rstrip(' .;')}; {'; '.join(map(str, retiring))}")
    stated = _stance(item.content)
    values, retired = stated_values(stated), retired_values(stated)
    apposed = _apposed(item.content) & values
    values -= apposed
    skip = _value_words(values | retired) | _date_words(item.content)
    said = words(item.content)
    # A number is a value, never the subject, however it was read ("two", "30" of "30 minutes": "1800 second"),
    # also glued to its unit ("100mg", "8pm")
    skip |= {w for w in said if w in _NUMBER_WORDS or w[:1].isdigit()}
    skip |= _unit_words(item.content)  # "30 minutes" states "1800 second": "minutes" is its unit
    toks = [w for w in said if w not in STOPWORDS]
    first_value = next((i for i, w in enumerate(toks) if w in skip), len(toks))
    before = said[:next((i for i, w in enumerate(said) if w in skip and w not in STOPWORDS), len(said))]
    # Light verbs say nothing of the subject ("the orders service uses PostgreSQL" / "the orders
    # service runs on CockroachDB"); only they: "I take 50 mg of sertraline", the subject follows.
    subject = [w for w in toks[:first_value] if w not in skip and w not in _LIGHT_VERBS]
    if SMALL_TALK.issuperset(subject):  # "Thanks! The Wolves ...", "Wow, Chicago ...": an opener names no subject
        subject = []
    title_values = stated_values(item.title)
    title_skip = _value_words(title_values) | _date_words(item.title)
    # The title names the subject too ("Ship date" / "Release date"), and words compare as
    # stems ("ships" / "ship"), so one subject worded twice is still one; a unit is not
    # the subject in the title either ("2 approvals" / title "PR approvals").
    # A name is a subject word too: "Python" or "the API" said by both is what they are about
    # (a name one states and the other does not is a value that differs, all the same).
    names = {w for v in values | retired if not _DIGIT.search(v) for w in words(v)}
    content_words = [w for w in toks if (w not in skip or w in names) and w not in _RETIRING_WORDS]
    title_words = [w for w in words(item.title) if w not in STOPWORDS and w not in title_skip]
    stemmed_subject, stemmed_content, stemmed_title, stemmed_skip, stemmed_names = _STEMS.many(
        [subject, content_words, title_words, sorted(skip), sorted(names)])
    skipped = set(stemmed_skip)  # units are stems in values ("4 space"), words in the text ("spaces")
    said_words = [w for w in stemmed_content if w not in skipped or w in stemmed_names]  # "Jenkins": "jenkin"
    stemmed_words = said_words + [w for w in stemmed_title if w not in skipped]
    title = normalise_label(item.title)
    word_set = frozenset(stemmed_words)
    qualifiers = frozenset(stemmed_title) & frozenset(said_words)
    ended, ended_values, ended_names = (_ended(stated, word_set, values | retired)
                                        if _ENDED.search(stated) else ((), (), ()))
    named, persons = _named(item.content, set(before))
    if apposed:
        named |= frozenset(_STEMS(sorted(apposed)))
        persons |= frozenset(_STEMS(sorted(apposed & _first_names())))
    if ended_values or ended_names:  # "port 9000 was removed": named as over, like a retired value
        values, retired = values - ended_values - ended_names, retired | ended_values | ended_names
    # saying something ended denies it too ("Staging was retired" agrees with "We no longer have staging")
    # (the retiring clauses are blanked only in the few contents that hold a negation at all:
    # every claim of a snapshot is read when it loads)
    denying = (_RETIRED.sub(lambda m: " " if _values(m.group(0)) else m.group(0), _NOT_NEGATING.sub(" ", stated))
               if NEGATION.search(stated) else "")
    negated = bool(ended) or (bool(denying) and NEGATION.search(denying) is not None)
    return Claim(item=item, title=title, content=" ".join(said),  # normalise_label, its words read once
                 subject=tuple(stemmed_subject) if values else (), words=word_set,
                 values=values, retired=retired, title_values=title_values, units=_units(values),
                 qualifiers=qualifiers, ended=frozenset(ended), ended_values=frozenset(ended_values),
                 adds=bool(_ADDS.search(item.content)), measured=_measured(item.content),
                 changes=word_set - frozenset(stemmed_title) if _CHANGED.search(stated) else None,
                 named=named & word_set, persons=persons & word_set, first_person=not _FIRST_PERSON.isdisjoint(before),
                 negated=negated,
                 denied=_denied(denying or stated, word_set, frozenset(stemmed_title)) if negated else frozenset())


def _apposed(content: str) -> frozenset[str]:
    """The names (lower-case) `content` sets beside what a possessive names (`_APPOSED`)."""
    return frozenset(m.group(2).lower() for m in _APPOSED.finditer(content)
                     if m.group(1) not in STOPWORDS and m.group(2).lower() not in _WHEN_NAMES)


def _denied(content: str, own_words: frozenset[str], title_words: frozenset[str]) -> frozenset[str]:
    """The words (stems, of `own_words`) of the clauses of `content` that negate or say
    something ended, and of the title, which names what they speak of: what the claim
    denies. "Thanks! I won't give up on it. What got you into books?" denies giving up,
    not books."""
    found: list[str] = []
    for clause in _CLAUSE.finditer(content):
        text = clause.group(0)
        negation = NEGATION.search(text)
        if _ENDED.search(text):
            found += words(text)
        elif negation:
            # a negation after "and" / "but" denies what follows it: "Keep going and don't quit" denies quitting
            conjoined = _CONJOINED.search(text, 0, negation.start())
            found += words(text[conjoined.start():] if conjoined else text)
    return (frozenset(_STEMS([w for w in found if w not in STOPWORDS])) | title_words) & own_words


def _named(content: str, before: set[str]) -> tuple[frozenset[str], frozenset[str]]:
    """The stems of the names `content`'s sentences start with ("Leo goes to bed at 8pm",
    "Biscuit eats 200 g"): a word written as a name ("Leo"; not "CI" or "GitHub") that is not
    a common English word (`_common_words`: "Our", "Daily", "Production" start sentences
    too), unless the content capitalises it inside a sentence as well ("Chloe ... with
    Chloe") or it owns what the sentence is about ("Mom's birthday", "Dad's car"); and of
    the owners it names before its first value (`before`, its words up to there: "The design
    team's standup is at 10:15"). And which of them are someone: an owner, or a first name
    (zxcvbn's lists of first names: "Leo", "Ben"; not "Prod" or "Jenkins")."""
    owners = [m.group(1).lower() for m in _OWNER.finditer(content)] if "'" in content or "’" in content else []
    owners = [w for w in owners if w in before and w not in STOPWORDS and w != "let"]
    # not a name after an abbreviation ("Our doctor is Dr. Patel": inside the sentence)
    starts = [m for m in _SENTENCE_START.finditer(content)
              if _NAMED_FORM.fullmatch(m.group(1)) and not _ABBREVIATED.search(content, 0, m.start(1))]
    if not starts and not owners:
        return frozenset(), frozenset()
    common, inside = _common_words(), None
    found, persons = list(owners), list(owners)
    for m in starts:
        w = m.group(1).lower()
        if w in STOPWORDS:
            continue
        owns = w != "let" and _POSSESSIVE.match(content, m.end(1))  # "Let's": "let us"
        if w in common and not owns:
            if inside is None:
                inside = {n.group(0) for n in _NAME.finditer(content)}  # never a sentence start (`_NAME`)
            if m.group(1) not in inside:
                continue
        found.append(w)
        if owns or w in _first_names():
            persons.append(w)
    return frozenset(_STEMS(found)), frozenset(_STEMS(persons))


@cache
def _first_names() -> frozenset[str]:
    """zxcvbn's lists of first names (~4,700, lower-case)."""
    from zxcvbn.frequency_lists import FREQUENCY_LISTS
    return frozenset(FREQUENCY_LISTS["male_names"]) | frozenset(FREQUENCY_LISTS["female_names"])


@cache
def _common_words() -> frozenset[str]:
    """Common English words: zxcvbn's frequency lists of English Wikipedia and of US film and
    TV (~49,000 words, lower-case). zxcvbn keeps a word in one of its lists only, so some
    common words sit in its list of passwords instead ("coffee", "love") and read as names
    here, as pets' names do ("Pepper", "Biscuit")."""
    from zxcvbn.frequency_lists import FREQUENCY_LISTS
    return frozenset(FREQUENCY_LISTS["english_wikipedia"]) | frozenset(FREQUENCY_LISTS["us_tv_and_film"])


def _measured(content: str) -> frozenset[str]:
    """The stems of what `content`'s numbers measure ("50 mg of sertraline": "sertralin")."""
    if " of " not in content:
        return frozenset()
    if _NUMBER_WORD.search(content):  # "two cups of coffee"
        content = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(0).lower()], content)
    found = [m.group(1).lower() for m in _MEASURED.finditer(content)]
    return frozenset(_STEMS(found)) if found else frozenset()


def _ended(content: str, own_words: frozenset[str],
           own_values: frozenset[str]) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The words (stems, of `own_words`) and values of the clauses of `content` that say
    something ended, the ending words and time words left out (nothing when they name fewer
    than ENDED_MIN_WORDS words), and the names in them ("the Elasticsearch cluster was shut
    down", "Opsgenie was turned off") and the values that say when (`_ENDED_WHEN`): named as
    over, like a retired value."""
    found_words: set[str] = set()
    found_values: set[str] = set()
    found_names: set[str] = set()
    for clause in _CLAUSE.finditer(content):
        text = clause.group(0)
        if not _ENDED.search(text):
            continue
        rest = _ENDED.sub(" ", text)
        # numbers and dates; a name in it is a word of what ended ("Dana is no longer on payments")
        named = _values(rest) & own_values
        clause_values = {v for v in named if _DIGIT.search(v)}
        when = _ENDED_WHEN.search(text, _ENDED.search(text).end())
        if when:  # "dropped in the 5.0 release", "shut down on March 3, 2026": when it ended, not what
            when_values = named & _values(text[when.start():])
            named -= when_values
            clause_values -= when_values
            found_names |= when_values  # stated of the ending, not of the subject: like a name in it
        # a name that counts a number of it ended only in that version ("Python 3.8 was dropped")
        versioned = {v.split(" ", 1)[1] for v in clause_values if " " in v}
        found_names |= {v for v in named - clause_values if v not in versioned and _STEMS([v])[0] not in versioned}
        # the numbers are values; a unit that is a name ("3.8 python") stays a word of it
        skip = _value_words(v.split(" ", 1)[0] for v in clause_values) | _ENDED_TIME_WORDS
        found_values |= clause_values
        found_words |= {w for w in _STEMS.many([[w for w in words(rest) if w not in STOPWORDS and w not in skip
                                                 and w not in _RETIRING_WORDS]])[0]} & own_words
    if len(found_words) < ENDED_MIN_WORDS:
        return frozenset(), frozenset(), frozenset(found_names)
    return frozenset(found_words), frozenset(found_values), frozenset(found_names)



def _overlap(a: frozenset[str], b: frozenset[str]) -> tuple[int, float]:
    shared = len(a & b)
    return shared, shared / max(1, min(len(a), len(b)))


Cosine = float | None | Callable[[], float | None]


def conflict_reason(a: Claim, b: Claim, cosine: Cosine = None, *, one_subject: bool = False) -> str | None:
    """Why two claims conflict, or None. Symmetric. `cosine` may be a function: it is
    called only for the few pairs whose values disagree. `one_subject`: the caller already
    knows the two are about one thing (consolidation's clusters), so values that disagree
    are a conflict without the subject test."""
    if a.item.id == b.item.id:
        return None
    if b.item.id in a.contradicts or a.item.id in b.contradicts:
        return "linked: contradicts"
    if a.title and a.title == b.title:
        if a.content == b.content or a.adds or b.adds:  # one says it adds to the other
            return None
        # One title holds several notes ("Bedtimes: Leo goes to bed at 8" / "Mia goes to
        # bed at 9"): what the contents say decides; if they do not compare, the two are
        # only flagged (`MAY_UPDATE`), never taken as a correction.
        return _content_reason(a, b, cosine, one_subject) or MAY_UPDATE
    return _content_reason(a, b, cosine, one_subject)


def _content_reason(a: Claim, b: Claim, cosine: Cosine, one_subject: bool) -> str | None:
    """`conflict_reason` from what the two claims say (their titles' words included)."""
    if _ends(a, b) or _ends(b, a):
        return "same subject, one says it ended"
    if _denies(a, b):
        return DENIES
    if not _values_disagree(a, b, one_subject) or ((a.adds or b.adds) and not _retires(a, b)):
        return None
    if one_subject or _same_subject(a, b, cosine, _retires(a, b) or _unit_differs(a, b)):
        return SAME_SUBJECT
    return None


def _denies(a: Claim, b: Claim) -> bool:
    """One negates what the other says: the same values (or none), most words shared, one
    negated and not the other, neither adding, not two things of one kind."""
    if a.negated == b.negated or a.values != b.values or a.adds or b.adds:
        return False
    shared, overlap = _overlap(a.words, b.words)
    return (shared >= 2 and overlap >= SUBJECT_OVERLAP and _denies_said(a, b) and _denies_said(b, a)
            and not _qualified_apart(a, b))


def _denies_said(a: Claim, b: Claim) -> bool:
    """If `a` is the negated one, what it denies (`Claim.denied`) is what `b` says: two
    words at least, most of them shared ("Long time no see!" in a long turn denies nothing
    of "Good to see you!")."""
    if not a.negated:
        return True
    shared, overlap = _overlap(a.denied, b.words)
    return shared >= 2 and overlap >= SUBJECT_OVERLAP


def _retires(a: Claim, b: Claim) -> bool:
    """One names as replaced or denied a value the other states."""
    return bool(a.retired & b.values or b.retired & a.values)


def _ends(a: Claim, b: Claim) -> bool:
    """`a` says something ended that `b` names (every word and value of it), and `b` says
    none of it ended."""
    return bool(a.ended) and a.ended <= b.words and a.ended_values <= b.values and not a.ended & b.ended


def _measures(values: Iterable[str]) -> frozenset[str]:
    """The values that are numbers with a unit ("4 space"); not a day of a month ("14
    march": "14 March" and "28 March" are two days, not two counts in one unit)."""
    return frozenset(v for v in values if " " in v and _DIGIT.match(v) and v.split(" ", 1)[1] not in MONTH_STEMS)


def _units(values: Iterable[str]) -> frozenset[str]:
    """The unit words of numbers stated with one ("4 space" -> "space"; not dates, times)."""
    return frozenset(v.split(" ", 1)[1] for v in _measures(values))


def _unit_differs(a: Claim, b: Claim) -> bool:
    """Both count something in the same unit, with different numbers ("4 spaces" / "2-space"):
    like a retired value, it says they are about one thing (counted once per shared unit)."""
    return len(a.units & b.units) > len(_measures(a.values) & _measures(b.values))



def _values_disagree(a: Claim, b: Claim, one_subject: bool = False) -> bool:
    """Both state values, neither set contains the other, and the titles do not tell them
    apart (by their values, or by qualifiers, `_qualified_apart`, unless the caller knows
    them to be about `one_subject`); or one states a value the other names as replaced or
    denied."""
    if _retires(a, b):
        return True
    if not a.values or not b.values or a.values <= b.values or b.values <= a.values:
        return False  # nothing stated, or one adds detail to the other
    if a.title_values and b.title_values and a.title_values != b.title_values:
        return False  # "Port of service 0" / "Port of service 1": the values name the subject
    if a.measured and b.measured and a.measured != b.measured:
        return False  # "50 mg of sertraline" / "5 mg of amlodipine": two things measured
    return one_subject or not _qualified_apart(a, b)


def _two_items(a: Claim, b: Claim) -> bool:
    """Under one title, each names in the words before its value something the other never
    says: two items of one list ("Cron job: Nightly invoice export runs at 02:00 UTC" /
    "Weekly cleanup of temp files runs Sundays at 04:00 UTC", "Replicas: Prod api runs 6
    replicas" / "Staging api runs 1 replica"), shown side by side, not one corrected."""
    return (bool(a.title) and a.title == b.title and bool(a.subject) and bool(b.subject)
            and not set(a.subject) <= b.words and not set(b.subject) <= a.words)


def _qualified_apart(a: Claim, b: Claim) -> bool:
    """In one scope kind, each names in its title, and says again, a word the other never
    says: two things of one kind ("Auth service timeout: the auth service ..." / "Billing
    service timeout: the billing service ..."), not one thing stated twice; or starts a
    sentence with a name the other never says (`_named`: "Leo goes to bed at 8pm" / "Mia
    goes to bed at 9pm", two children, not one whose bedtime changed), or names someone the
    other never says while the other speaks of the writer ("My passport expires in 2029" /
    "Ben's passport expires in 2031"; not "Prod runs ..." / "We run ..."). Across scopes
    the qualifier is mostly the scope itself ("for this experiment" / "in orion" / "across
    the company"): one subject, which scope priority orders (the broader stay shown)."""
    if a.item.scope.kind != b.item.scope.kind:
        return False
    return (bool((a.qualifiers | a.named) - b.words) and bool((b.qualifiers | b.named) - a.words)
            or _two_items(a, b)
            or (b.first_person and bool(a.persons - b.words)) or (a.first_person and bool(b.persons - a.words)))


def names_a_case(a: Claim, b: Claim) -> bool:
    """One of two claims names a case of the other's subject: in one scope kind, its title is
    the other's title and more ("Deploy window" / "Hotfix deploy window"), and a word it adds
    is one its content repeats and the other never says ("hotfixes may deploy ..."), and
    neither names the other's value as replaced. Such a pair may still conflict (a case
    beside a rule, or the rule restated: the words cannot tell), but neither is taken to
    correct the other: a write does not supersede or hold it, recall shows both, flagged. A
    word that only dates a claim ("New deploy window: the new window is ...") names no case;
    titles that merely differ ("Session timeout" / "Idle timeout") are one subject worded twice."""
    if a.item.scope.kind != b.item.scope.kind or _retires(a, b):
        return False
    a_title, b_title = set(a.title.split()), set(b.title.split())
    if a_title < b_title:
        return bool(b.qualifiers - _not_qualifiers() - a.words)
    if b_title < a_title:
        return bool(a.qualifiers - _not_qualifiers() - b.words)
    return False


def _same_subject(a: Claim, b: Claim, cosine: Cosine, retiring: bool = False) -> bool:
    """Same words before the first value, most non-value words shared, half of them when
    one retires a value the other states (`retiring`: or both count in one unit, differently),
    or very close embeddings with half the words shared."""
    shared, overlap = _overlap(a.words, b.words)
    if (a.subject and a.subject == b.subject) or (shared >= 2 and overlap >= SUBJECT_OVERLAP):
        return True
    if (_subject_within(a, b) or _subject_within(b, a)) and _comparable(a, b):
        return True
    if _moved_within(a, b) or _moved_within(b, a) or _counted_alike_across_scopes(a, b):
        return True
    if shared >= 2 and overlap >= RETIRING_SUBJECT_OVERLAP and _retires(a, b):
        return True
    if shared < 2 or overlap < 0.5:
        return False
    if (retiring or _says_changed(a, b)) and overlap >= RETIRED_SUBJECT_OVERLAP:
        return True
    if callable(cosine):
        cosine = cosine()
    return cosine is not None and cosine >= SUBJECT_COSINE


def _says_changed(a: Claim, b: Claim) -> bool:
    """One says the value of what the other names changed: it says something changed
    (`_CHANGED`: "Dinner with Priya got pushed back to Friday", "Standup moved to 10:15"),
    and what it names before its first value, the words of the change left out, the other
    says ("dinner", "standup"; not "Orion v2 launch party moved to April 14" / "Orion v2
    beta review is on March 3", nor "I've had them for 3 years now" / "... bring joy"):
    like naming the old value as replaced, it says it is about what the other states."""
    for c, other in ((a, b), (b, a)):
        if c.changes is None or not c.subject:
            continue
        moved = [w for m in _CHANGED.finditer(_stance(c.item.content)) for w in words(m.group(0))]
        named = set(c.subject) - set(_STEMS(moved))
        if moved and named and named <= other.words:
            return True
    return False


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


def _comparable(a: Claim, b: Claim) -> bool:
    """The two state values of one kind: names, plain numbers or times, or numbers in one unit
    ("Orion telemetry uses InfluxDB" / "Orion keeps raw telemetry 30 days": a name and a
    duration, two things said of one subject)."""
    return bool(_value_kinds(a.values) & _value_kinds(b.values) or a.units & b.units)


def _subject_within(a: Claim, b: Claim) -> bool:
    """Under two titles, every word before `a`'s first value (two at least) is among `b`'s
    words: "Failed webhooks are retried 3 times" / "Webhooks get retried five times, then
    dropped to the dead-letter queue" are one subject however much more `b` says."""
    subject = set(a.subject)
    if not (a.title != b.title and len(subject) >= 2 and subject <= b.words):
        return False
    # titles that each name what the other never says name two attributes of one thing
    # ("Staging database: Helios staging runs on PostgreSQL 16" / "Staging resets: Helios
    # staging is reset every Monday at 06:00")
    return not (_title_words(a) - b.words and _title_words(b) - a.words)


_MOVED_TO = frozenset(_STEMS(["next", "this", "coming", "following", "back", "forward", "out", "up", "now"]))


def _moved_within(a: Claim, b: Claim) -> bool:
    """Under two titles, `a` says that the time of what `b` names moved ("Dentist moved to
    Thursday" / "Dentist appointment on Tuesday at 3pm"): the words before its first value,
    those of the move left out, are among `b`'s (one is enough: a move names its subject
    short), and both state a day or a time. A move states only the new time, so the word
    count of `_subject_within` would never find its subject."""
    if a.title == b.title or not reschedules(a.content) or not (_times(a.values) and _times(b.values)):
        return False
    moved = {w for m in _RESCHEDULED.finditer(_stance(a.content)) for w in _STEMS(words(m.group(0)))}
    named = set(a.subject) - moved - _MOVED_TO
    return bool(named) and named <= b.words and not (_title_words(a) - b.words and _title_words(b) - a.words)


# a count in a unit and what it counts, said as one: "2-space indentation", "30-day retention"
_COUNTED = re.compile(r"(?<![\w.])\d[\d.,]*[\s-]*([a-z]+)[\s-]+([a-z][\w-]*)", re.IGNORECASE)


def _counted(text: str) -> frozenset[tuple[str, str]]:
    return frozenset((unit.lower(), _STEMS([thing.lower()])[0]) for unit, thing in _COUNTED.findall(text))


def _counted_alike_across_scopes(a: Claim, b: Claim) -> bool:
    """In two scope kinds, both count the same thing in one unit, differently ("The atlas
    codebase uses 4-space indentation" / "Priya prefers 2-space indentation"): one subject,
    which scope priority orders (each scope's own words, "atlas codebase", "Priya prefers",
    are mostly the scope). In one scope kind, two counts may be two things ("a 2-hour
    planning meeting" / "a 1-hour retro meeting"), so this does not make one subject there."""
    return (a.item.scope.kind != b.item.scope.kind and _unit_differs(a, b)
            and bool(_counted(a.item.content) & _counted(b.item.content)))


def _times(values: Iterable[str]) -> bool:
    """Whether one of the values is a day or a time ("thursday", "8 decemb", "2026-12-03",
    "4:30 pm", "10:15")."""
    return any(v in _WHEN_NAMES or _DATE.fullmatch(v) or ":" in v
               or (" " in v and v.split(" ", 1)[1] in _CLOCK_UNITS | MONTH_STEMS) for v in values)


def _title_words(c: Claim) -> frozenset[str]:
    """The claim's words its title says (no value: those are not words of a claim)."""
    return frozenset(_STEMS([w for w in words(c.title) if w not in STOPWORDS])) & c.words


def supersedes(a: MemoryItem, b: MemoryItem) -> bool:
    """`a` declares that it replaces `b`."""
    return any(link.rel == "supersedes" and link.to == b.id for link in a.links) or b.superseded_by == a.id


# -- finding pairs --------------------------------------------------------------------------


VectorOf = Callable[[MemoryItem], "np.ndarray | None"]
# The vectors of these rows of a claim table in one go: (rows x dim float32, which rows have
# one), the other rows any filler; (None, ...) when none has one. Recall gathers its claims'
# vectors with one index per corpus instead of a call and a copy per claim.
VectorsOf = Callable[[np.ndarray], "tuple[np.ndarray | None, np.ndarray]"]
REASONS = (None, "linked: contradicts", MAY_UPDATE, SAME_SUBJECT,
           "same subject, one says it ended", DENIES)


class ClaimTable:
    """The claims of a list of items, read once and kept compact for the rule over many
    pairs: per row its content words and values (sparse rows of small integers) and codes
    for its title, content, subject and title values (-1: none). Rows that are not claims
    stay empty. A corpus reads its table once (`MemoryCorpus.claims`, when a snapshot
    loads), so a recall only takes the rows of its candidates (`take`)."""

    def __init__(self, items: Sequence[MemoryItem], words: sparse.csr_matrix, values: sparse.csr_matrix,
                 codes: np.ndarray, retired: sparse.csr_matrix, keys: sparse.csr_matrix,
                 units: sparse.csr_matrix, measures: np.ndarray, qualifiers: sparse.csr_matrix,
                 ended: sparse.csr_matrix, ended_values: sparse.csr_matrix, persons: sparse.csr_matrix,
                 subjects: sparse.csr_matrix, titles: sparse.csr_matrix,
                 kept: Sequence[bytes | Claim | None] | None = None):
        self.items = list(items)
        # Per row its claim (None: not a claim), packed (`_pack`) in a snapshot's table, as
        # read in a recall's table over several corpora: `claim` gives it without reading it again.
        self.kept = kept
        self.words = words
        self.values = values
        # Values a claim names as replaced or denied, over the same columns as `values`.
        self.retired = retired
        # rows x (title, content, subject, title values, adds: 1 or 0, what it measures, first person: 1 or 0,
        # negated: 1 or 0, the kinds of value it states: `_value_kinds`; and of every row's item: its
        # scope kind, its id, whether it links anywhere or is superseded: 1 or 0), so a recall's
        # table reads them with its rows instead of from each item
        self.codes = codes
        # What else proposes a pair (`_keys`: the title, its own id, the ids it links to), read
        # with the rest so a recall's table takes these rows too.
        self.keys = keys
        self.units = units  # rows x unit words (`Claim.units`)
        self.measures = measures  # per column of `values`: a number with a unit
        self.qualifiers = qualifiers  # rows x the columns of `words` (`Claim.qualifiers` | `Claim.named`)
        self.persons = persons  # rows x the columns of `words` (`Claim.persons`)
        self.subjects = subjects  # rows x the columns of `words` (`Claim.subject`)
        self.titles = titles  # rows x the columns of `words` (`_title_words`)
        self.ended = ended  # rows x the columns of `words` (`Claim.ended`)
        self.ended_values = ended_values  # rows x the columns of `values` (`Claim.ended_values`)
        self._gathered: _Gathered | None = None  # made by the first `take`

    @classmethod
    def read(cls, items: Sequence[MemoryItem], cached: bool = False) -> ClaimTable:
        """Every row of `items` (non-claims empty); `cached` reads through the per-version
        claim cache (small corpora that are rebuilt often), else keeping each claim packed
        (a snapshot's table: `claim`)."""
        read = read_claim if cached else _read_claim
        return cls.of(items, (read(it) if is_claim(it) else None for it in items), keep=None if cached else "packed")

    @classmethod
    def of(cls, items: Sequence[MemoryItem], claims: Iterable[Claim | None], keep: str | None = None) -> ClaimTable:
        """The table of `claims` (one per item, None for a non-claim), each claim dropped
        once its row is written: a snapshot's claims are never all alive at once. `keep`:
        "packed" keeps each packed, "claims" as given (`claim`)."""
        n = len(items)
        kept: list[bytes | Claim | None] | None = None if keep is None else []
        words, values, keys, units = _Columns(), _Columns(), _Columns(), _Columns()
        retired = _Columns(vocab=values.vocab)  # one value, one column in both
        qualifiers = _Columns(vocab=words.vocab)  # a qualifier is one of the row's words
        ended, ended_values = _Columns(vocab=words.vocab), _Columns(vocab=values.vocab)  # so is what ended
        persons = _Columns(vocab=words.vocab)  # and who it names
        subjects = _Columns(vocab=words.vocab)  # and the words before its first value
        titles = _Columns(vocab=words.vocab)  # and its title's (`_title_words`)
        tables: list[dict[Hashable, int]] = [{}, {}, {}, {}, {}, {}]  # title, content, subject, title values,
        # -, what it measures

        def code(field: int, key: Hashable) -> int:
            return tables[field].setdefault(key, len(tables[field]))

        codes = np.full((n, CODES), -1, np.int64)
        codes[:, KIND] = _codes((it.scope.kind for it in items), n)
        codes[:, ID] = _codes((it.id for it in items), n)
        codes[:, LINKED] = np.fromiter((bool(it.links or it.superseded_by) for it in items), bool, n)
        for row, c in enumerate(claims):
            words.add(c.words if c is not None else ())
            values.add(c.values if c is not None else ())
            retired.add(c.retired if c is not None else ())
            units.add(c.units if c is not None else ())
            qualifiers.add(c.qualifiers | c.named if c is not None else ())  # `_qualified_apart` asks both
            ended.add(c.ended if c is not None else ())
            ended_values.add(c.ended_values if c is not None else ())
            persons.add(c.persons if c is not None else ())
            subjects.add(c.subject if c is not None else ())
            titles.add(_title_words(c) if c is not None else ())
            if c is not None:
                codes[row, :KIND] = (code(0, c.title) if c.title else -1, code(1, c.content),
                              code(2, c.subject) if c.subject else -1,
                              code(3, c.title_values) if c.title_values else -1, int(c.adds),
                              code(5, c.measured) if c.measured else -1, int(c.first_person), int(c.negated),
                              _value_kinds(c.values))
                codes[row, CHANGES] = c.changes is not None and bool(c.subject)  # `_says_changed` may ask it
            keys.add(_keys(items[row], int(codes[row, 0])))
            if kept is not None:
                kept.append(_pack(c) if keep == "packed" and c is not None else c)
        measure_values = _measures(str(v) for v in values.vocab)
        measures = np.fromiter((v in measure_values for v in values.vocab), bool, len(values.vocab))
        return cls(items, words.matrix(), values.matrix(), codes, retired.matrix(), keys.matrix(),
                   units.matrix(), measures, _Columns.matrix_of(qualifiers, len(words.vocab)),
                   _Columns.matrix_of(ended, len(words.vocab)), _Columns.matrix_of(ended_values, len(values.vocab)),
                   _Columns.matrix_of(persons, len(words.vocab)), _Columns.matrix_of(subjects, len(words.vocab)),
                   _Columns.matrix_of(titles, len(words.vocab)), kept)

    def __len__(self) -> int:
        return len(self.items)

    def claim(self, row: int) -> Claim | None:
        """The claim of a row (None: not a claim): the one the table keeps, unpacked, else
        read through the per-version claim cache."""
        item = self.items[row]
        if self.kept is not None:
            kept = self.kept[row]
            return _unpack(kept, item) if isinstance(kept, bytes) else kept
        return read_claim(item) if is_claim(item) else None

    def ready_to_take(self) -> ClaimTable:
        """Lay the matrices end to end for `take` now (~40 ms at 100k claims) rather than in
        the first recall after a snapshot loads."""
        if self._gathered is None:  # a table taken from once is taken from again (a snapshot's, per recall)
            self._gathered = _Gathered(self)
        return self

    def take(self, rows: Sequence[int]) -> ClaimTable:
        """These rows, in this order (their columns renumbered densely)."""
        idx = np.asarray(rows, np.int64)
        self.ready_to_take()
        parts, used_values = self._gathered.take(idx)
        at = idx.tolist()
        taken = ClaimTable.__new__(ClaimTable)
        taken.items = list(map(self.items.__getitem__, at))
        taken.codes, taken.measures = self.codes[idx], self.measures[used_values]
        taken.kept = None if self.kept is None else list(map(self.kept.__getitem__, at))
        taken._gathered, taken._parts = None, parts
        return taken

    def __getattr__(self, name: str) -> sparse.csr_matrix:
        # A taken table makes each matrix the first time it is asked for (a recall asks for few of
        # them; scipy's constructor costs more than the gathering): its parts are kept (`take`).
        parts = self.__dict__.get("_parts")
        if parts is None or name not in parts:
            raise AttributeError(name)
        data, indices, indptr, n_columns = parts[name]
        matrix = sparse.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, n_columns))
        setattr(self, name, matrix)
        return matrix

    def rows(self, name: str) -> _Rows | sparse.csr_matrix:
        """The matrix `name` for a reader of its arrays only (entries per row, a dense copy): a
        taken table's parts as they are, without making the matrix; else the matrix."""
        parts = self.__dict__.get("_parts")
        if parts is None or name not in parts:
            return getattr(self, name)
        data, indices, indptr, n_columns = parts[name]
        return _Rows(data, indices, indptr, (len(indptr) - 1, n_columns))


class _Rows(NamedTuple):
    """A csr matrix's arrays and shape (`ClaimTable.rows`)."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]


class _Gathered:
    """A table's matrices that `take` reads (`_GATHERED`), laid end to end: the rows of all
    are gathered in one go rather than matrix by matrix."""

    def __init__(self, table: ClaimTable) -> None:
        matrices = [getattr(table, name) for family in _GATHERED for name in family]
        nnz = [int(m.indptr[-1]) for m in matrices]
        self.starts = np.concatenate([[0], np.cumsum(nnz)[:-1]]).astype(np.int64)  # of each matrix's entries
        small = np.int32 if sum(nnz) < 2**31 else np.int64
        self.offsets = np.stack([m.indptr.astype(np.int64) + start
                                 for m, start in zip(matrices, self.starts)]).astype(small)  # matrices x rows + 1
        self.indices = np.concatenate([m.indices[:k] for m, k in zip(matrices, nnz)]).astype(np.int32)
        ones = all(m.data.dtype == np.int32 and bool((m.data[:k] == 1).all()) for m, k in zip(matrices, nnz))
        self.data = None if ones else [m.data[:k] for m, k in zip(matrices, nnz)]  # `_Columns`' rows: all 1
        self.widths = [getattr(table, family[0]).shape[1] for family in _GATHERED]

    def take(self, idx: np.ndarray) -> tuple[dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, int]], np.ndarray]:
        """The matrices' rows `idx` by name, as csr parts (data, indices, indptr, columns), each
        family's columns renumbered densely (in column order); and the old column of each new
        column of the values."""
        k = len(idx)
        starts = self.offsets[:, idx].astype(np.int64)
        lengths = (self.offsets[:, idx + 1] - starts).ravel()
        indptr = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=indptr[1:])
        at = np.repeat(starts.ravel() - indptr[:-1], lengths) + np.arange(indptr[-1])
        indices = self.indices[at]
        ones = np.ones(len(at), np.int32) if self.data is None else None  # each matrix's data: a slice
        out, m, used_values = {}, 0, None
        for family, width in zip(_GATHERED, self.widths):
            lo, hi = int(indptr[m * k]), int(indptr[(m + len(family)) * k])
            used, columns = _renumber(indices[lo:hi], width)
            columns = columns.astype(np.int32)
            if family[0] == "values":
                used_values = used
            for name in family:
                start, stop = int(indptr[m * k]), int(indptr[(m + 1) * k])
                data = ones[start:stop] if ones is not None else self.data[m][at[start:stop] - self.starts[m]]
                rows = (indptr[m * k:(m + 1) * k + 1] - start).astype(np.int32)
                out[name] = (data, columns[start - lo:stop - lo], rows, len(used))
                m += 1
        return out, used_values


# The matrices `ClaimTable.take` gathers, by families of matrices over one set of columns.
_GATHERED = (("words", "qualifiers", "ended", "persons", "subjects", "titles"), ("values", "retired", "ended_values"),
             ("keys",), ("units",))


# `ClaimTable.codes` columns read by number elsewhere: the item's scope kind, id, and links;
# and whether the claim says something changed of a subject it names (1 or 0)
KIND, ID, LINKED, CHANGES, CODES = 9, 10, 11, 12, 13


class _Pairs(NamedTuple):
    """The pairs (i < j) of a claim table that share a title, a content word or a link,
    each with whether one replaces the other and the conflict (an index into REASONS, 0: none)."""

    i: np.ndarray
    j: np.ndarray
    replaces: np.ndarray
    reason: np.ndarray
    ids: np.ndarray  # per row, one code per distinct item id


def _codes(keys: Iterable[Hashable], n: int) -> np.ndarray:
    """One small integer per distinct key, so equality tests over many pairs are vector ops."""
    table: dict[Hashable, int] = {}
    return np.fromiter((table.setdefault(k, len(table)) for k in keys), np.int64, n)


class _Columns:
    """Rows x distinct keys, a row at a time: 1 where the row holds the key (no duplicates)."""

    def __init__(self, vocab: dict[Hashable, int] | None = None) -> None:
        self.vocab: dict[Hashable, int] = {} if vocab is None else vocab
        self.indices: list[int] = []
        self.indptr = [0]

    def add(self, keys: Iterable[Hashable]) -> None:
        vocab = self.vocab
        self.indices.extend(vocab.setdefault(k, len(vocab)) for k in keys)
        self.indptr.append(len(self.indices))

    def matrix(self) -> sparse.csr_matrix:
        return self.matrix_of(self, len(self.vocab))

    @staticmethod
    def matrix_of(columns: _Columns, n_columns: int) -> sparse.csr_matrix:
        """The rows over `n_columns` columns (a shared vocabulary may have grown since)."""
        return sparse.csr_matrix((np.ones(len(columns.indices), np.int32), np.asarray(columns.indices, np.int32),
                                  columns.indptr), shape=(len(columns.indptr) - 1, n_columns))


def _renumber(columns: np.ndarray, n_columns: int) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(columns, return_inverse=True)` for column ids below `n_columns`: through a
    mark per column when there are few columns for the ids (no sort), else np.unique."""
    if n_columns > 8 * len(columns) + 1024:
        return np.unique(columns, return_inverse=True)
    mark = np.zeros(n_columns, bool)
    mark[columns] = True
    used = np.flatnonzero(mark)
    at = np.empty(n_columns, np.int64)
    at[used] = np.arange(len(used))
    return used, at[columns]


def _linked(items: Sequence[MemoryItem], links: Callable[[MemoryItem], Iterable[str]]
            ) -> tuple[np.ndarray, np.ndarray]:
    """Row pairs (x, y), both ways round, where `links(items[x])` names items[y]."""
    rows_of: dict[str, list[int]] = {}
    for x, it in enumerate(items):
        rows_of.setdefault(it.id, []).append(x)
    found = {(a, b) for x, it in enumerate(items) for to in links(it) for y in rows_of.get(to, ()) if y != x
             for a, b in ((x, y), (y, x))}
    return np.array([p[0] for p in found], np.int64), np.array([p[1] for p in found], np.int64)


def _block(pairs: tuple[np.ndarray, np.ndarray], start: int, stop: int, n: int) -> np.ndarray:
    """The rows start..stop of the n x n matrix that is True at `pairs`."""
    out = np.zeros((stop - start, n), bool)
    x, y = pairs
    inside = (x >= start) & (x < stop)
    out[x[inside] - start, y[inside]] = True
    return out


PAIR_BLOCK = 512  # claims per block of rows: the pair matrices of one block stay small
# Dense products (`_shared_counts`) while rows x rows x shared columns stays below this (a
# recall's ~100 claims: a few million); past it scipy's sparse products cost less.
DENSE_MAX_WORK = 30_000_000
# `_qualified_apart_rows` on a table too big for one dense product (DENSE_MAX_WORK): pair by
# pair up to this many pairs, else as sparse products
FEW_PAIRS = 64
GRAM_MAX_ROWS = 1024  # `_close` multiplies all vectors at once up to this many claims
# `_Lacking.words` keeps a table's words as one dense matrix up to this many cells (a
# recall's ~90 claims x a few hundred words); past it each product makes its own columns
DENSE_WORDS_MAX_CELLS = 1_000_000


def _pairs(table: ClaimTable, vector_of: VectorOf | None, vectors_of: VectorsOf | None = None) -> _Pairs:
    """`conflict_reason`, and whether one replaces the other, for every pair that shares a
    title, a content word (held by at most MAX_BUCKET claims) or a link: the same rule,
    evaluated for all pairs at once (products of claims x words, x values and x keys, see
    `_shared_counts`), the embedding cosine computed only for pairs whose
    values disagree and whose words half match."""
    n, items = len(table), table.items
    # one code per distinct item id (`_components` makes a node per code: numbered from 0 here)
    ids = np.unique(table.codes[:, ID], return_inverse=True)[1].reshape(n).astype(np.int64)
    if n < 2:
        none = np.zeros(0, np.int64)
        return _Pairs(none, none, none.astype(bool), none.astype(np.int8), ids)
    words = table.rows("words")
    # What proposes a pair: a word held by at most MAX_BUCKET claims, the title, a link.
    big = np.bincount(words.indices, minlength=words.shape[1]) > MAX_BUCKET
    title, content, subject_code, title_values, adds, measured, _, negated, kinds = table.codes[:, :KIND].T
    n_values, n_words = np.diff(table.rows("values").indptr), np.diff(words.indptr)
    if table.codes[:, LINKED].any():
        replacing = _linked(items, _replaced)
        contradicting = _linked(items, lambda it: (lk.to for lk in it.links if lk.rel == "contradicts"))
    else:  # most recalls' claims link nowhere: no pair to look for
        replacing = contradicting = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    retired = table.rows("retired")
    retired = retired if retired.indptr[-1] else None
    parts = []
    lacking = _Lacking(table)  # shared by the products and questions below (each made once)
    for start, stop, counts in _shared_counts(table, big, retired, lacking.words):
        (shared_all, proposed_by_word, shared_key, shared_value, retires, retired_by, shared_unit,
         shared_measure) = counts
        proposed = (shared_all if proposed_by_word is None else proposed_by_word) > 0
        upper = np.arange(n)[None, :] > np.arange(start, stop)[:, None]
        bi, j = np.nonzero(upper & (proposed | (shared_key > 0)))
        # one names as replaced or denied a value the other states
        retiring = ((retires[bi, j] > 0) | (retired_by[bi, j] > 0) if retires is not None
                    else np.zeros(len(bi), bool))
        # or both count in one unit, differently (`_unit_differs`): half the words are enough
        relaxed = retiring | (shared_unit[bi, j] > shared_measure[bi, j]) if shared_unit is not None else retiring
        parts.append((bi + start, j, shared_all[bi, j], shared_value[bi, j],
                      _block(replacing, start, stop, n)[bi, j], _block(contradicting, start, stop, n)[bi, j],
                      retiring, relaxed))
    i, j, shared, shared_values, replaces, contradicts, retiring, relaxed = (np.concatenate(p) for p in zip(*parts))

    other = ids[i] != ids[j]
    same_title = (title[i] >= 0) & (title[i] == title[j])
    adding = (adds[i] > 0) | (adds[j] > 0)  # one says it adds to the subject (`_ADDS`)
    disagree = retiring | (
        (n_values[i] > 0) & (n_values[j] > 0) & (shared_values < n_values[i]) & (shared_values < n_values[j])
        & ~((title_values[i] >= 0) & (title_values[j] >= 0) & (title_values[i] != title_values[j]))
        & ~((measured[i] >= 0) & (measured[j] >= 0) & (measured[i] != measured[j]))  # two things measured
        & ~adding)
    overlap = shared / np.maximum(1, np.minimum(n_words[i], n_words[j]))
    subject = ((subject_code[i] >= 0) & (subject_code[i] == subject_code[j])) | (
        (shared >= 2) & (overlap >= SUBJECT_OVERLAP)) | (
        relaxed & (shared >= 2) & (overlap >= RETIRED_SUBJECT_OVERLAP)) | (
        retiring & (shared >= 2) & (overlap >= RETIRING_SUBJECT_OVERLAP))
    open_ = other & ~contradicts & disagree
    n_subject = np.diff(table.rows("subjects").indptr)
    ask = np.flatnonzero(open_ & ~subject & (title[i] != title[j]) & ((n_subject[i] >= 2) | (n_subject[j] >= 2)))
    if len(ask):  # one's subject among the other's words, under two titles (`_subject_within`), values
        x, y = i[ask], j[ask]  # of one kind (`_comparable`)
        comparable = (kinds[x] & kinds[y]) > 0
        if table.rows("units").indptr[-1]:
            comparable |= np.asarray(table.units[x].multiply(table.units[y]).sum(axis=1)).ravel() > 0
        within = (((n_subject[x] >= 2) & ~lacking("subjects", x, y))
                  | ((n_subject[y] >= 2) & ~lacking("subjects", y, x)))
        two_attributes = lacking("titles", x, y) & lacking("titles", y, x)
        subject[ask] = comparable & within & ~two_attributes
    ask = np.flatnonzero(open_ & ~subject & (title[i] != title[j])
                         & ((table.codes[i, CHANGES] > 0) | (table.codes[j, CHANGES] > 0)))
    if len(ask):  # one says the time of what the other names moved (`_moved_within`)
        claim = _claims_of(table)
        subject[ask] = np.fromiter((_moved_within(claim(x), claim(y)) or _moved_within(claim(y), claim(x))
                                    for x, y in zip(i[ask].tolist(), j[ask].tolist())), bool, len(ask))
    n_units = np.diff(table.rows("units").indptr)
    ask = np.flatnonzero(open_ & ~subject & (table.codes[i, KIND] != table.codes[j, KIND])
                         & (n_units[i] > 0) & (n_units[j] > 0))
    if len(ask):  # two scopes count one thing in one unit (`_counted_alike_across_scopes`)
        claim = _claims_of(table)
        subject[ask] = np.fromiter((_counted_alike_across_scopes(claim(x), claim(y))
                                    for x, y in zip(i[ask].tolist(), j[ask].tolist())), bool, len(ask))
    ask = np.flatnonzero(open_ & ~subject & (shared >= 2) & (overlap >= 0.5))
    if len(ask):  # one says it changed (`_says_changed`), else very close embeddings
        changed = _says_changed_rows(table, i[ask], j[ask])
        subject[ask[changed]] = True
        ask = ask[~changed]
    subject[ask] = _close(items, i[ask], j[ask], vector_of, vectors_of)
    if table.rows("qualifiers").indptr[-1]:  # titles that name two things of one kind (`_qualified_apart`):
        ask = np.flatnonzero(open_ & subject & ~retiring)  # asked of the pairs found only
        open_[ask[_qualified_apart_rows(table, i[ask], j[ask], lacking)]] = False
    reason = np.zeros(len(i), np.int8)
    reason[open_ & subject] = 3
    # one negates what the other says (`_denies`): same values, most words shared
    denies = np.flatnonzero(other & ~contradicts & (negated[i] != negated[j]) & ~adding
                            & (shared_values == n_values[i]) & (shared_values == n_values[j])
                            & (shared >= 2) & (overlap >= SUBJECT_OVERLAP))
    if len(denies) and table.rows("qualifiers").indptr[-1]:
        denies = denies[~_qualified_apart_rows(table, i[denies], j[denies], lacking)]
    if len(denies):  # what the negated one denies is what the other says (`_denies_said`), asked of the few
        denies = denies[_denies_said_rows(table, i[denies], j[denies])]
    reason[denies] = 5
    if table.rows("ended").indptr[-1]:  # one says something ended that the other names (`_ends`)
        reason[other & ~contradicts & _ended_rows(table, i, j)] = 4
    # Under one title, what the contents say decides; contents that do not compare are only
    # flagged (`MAY_UPDATE`); a note that says it adds is neither.
    reason[same_title & ((content[i] == content[j]) | adding)] = 0
    reason[other & ~contradicts & same_title & (content[i] != content[j]) & ~adding & (reason == 0)] = 2
    reason[other & contradicts] = 1
    return _Pairs(i, j, replaces, reason, ids)


def _claims_of(table: ClaimTable) -> Callable[[int], Claim]:
    """A row's claim, unpacked once (for the few pairs a question is asked of by claim)."""
    claims: dict[int, Claim] = {}

    def claim(row: int) -> Claim:
        if row not in claims:
            claims[row] = table.claim(row)  # type: ignore[assignment]
        return claims[row]

    return claim


def _denies_said_rows(table: ClaimTable, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """`_denies_said` both ways for the row pairs (i, j), from the rows' claims."""
    claim = _claims_of(table)
    return np.fromiter((_denies_said(claim(x), claim(y)) and _denies_said(claim(y), claim(x))
                        for x, y in zip(i.tolist(), j.tolist())), bool, len(i))


def _says_changed_rows(table: ClaimTable, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """`_says_changed` for the row pairs (i, j), from the rows' claims: asked only of the
    pairs where a row says something changed (`CHANGES`; a few of the hundreds asked)."""
    may = table.codes[:, CHANGES] > 0
    out = np.zeros(len(i), bool)
    ask = np.flatnonzero(may[i] | may[j])
    claim = _claims_of(table)
    out[ask] = np.fromiter((_says_changed(claim(x), claim(y)) for x, y in zip(i[ask].tolist(), j[ask].tolist())),
                           bool, len(ask))
    return out


def _ended_rows(table: ClaimTable, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """`_ends` either way for the row pairs (i, j), asked only of pairs where a row has ended words."""
    e = table.ended
    n_ended = np.diff(e.indptr)
    n_ended_values = np.diff(table.ended_values.indptr)
    out = np.zeros(len(i), bool)

    def ends(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        ask = np.flatnonzero(n_ended[x] > 0)
        if not len(ask):
            return np.zeros(len(x), bool)
        xa, ya = x[ask], y[ask]
        named = np.asarray(e[xa].multiply(table.words[ya]).sum(axis=1)).ravel() == n_ended[xa]
        stated = np.asarray(table.ended_values[xa].multiply(table.values[ya]).sum(axis=1)).ravel() == n_ended_values[xa]
        both = np.asarray(e[xa].multiply(e[ya]).sum(axis=1)).ravel() > 0
        hit = np.zeros(len(x), bool)
        hit[ask] = named & stated & ~both
        return hit

    out |= ends(i, j)
    out |= ends(j, i)
    return out


def _qualified_apart_rows(table: ClaimTable, i: np.ndarray, j: np.ndarray,
                          lacking: _Lacking | None = None) -> np.ndarray:
    """`_qualified_apart` for the row pairs (i, j): one scope kind, and each row has a
    qualifier (or a name) the other row's words lack, or one row names someone the other
    lacks and the other speaks of the writer. `lacking`: the table's `_Lacking`, shared by
    the calls of one `_pairs` (each product made once)."""
    lacks = lacking or _Lacking(table)
    kind = table.codes[:, KIND]
    same = kind[i] == kind[j]
    i, j = i[same], j[same]
    out = np.zeros(len(same), bool)
    if not len(i):
        return out
    apart = lacks("qualifiers", i, j) & lacks("qualifiers", j, i)
    title = table.codes[:, 0]
    n_subject = np.diff(table.rows("subjects").indptr)
    ask = np.flatnonzero(~apart & (title[i] >= 0) & (title[i] == title[j]) & (n_subject[i] > 0) & (n_subject[j] > 0))
    if len(ask):  # under one title, two items of the list (`_two_items`)
        apart[ask] = lacks("subjects", i[ask], j[ask]) & lacks("subjects", j[ask], i[ask])
    first_person = table.codes[:, 6] > 0
    # asked of the pairs where one names someone, the other the writer
    if table.rows("persons").indptr[-1] and first_person.any():
        n_persons = np.diff(table.rows("persons").indptr)
        for x, y in ((i, j), (j, i)):
            ask = np.flatnonzero(~apart & (n_persons[x] > 0) & first_person[y])
            if len(ask):
                apart[ask] = lacks("persons", x[ask], y[ask])
    out[same] = apart
    return out


class _Lacking:
    """`_lacks` of one table's qualifiers, subjects, titles or persons against its words, for the
    pairs of one `_pairs` call: a small table's dense product (rows x rows) is made once per
    matrix and read for every pair and both orders; the words as one dense matrix, once, read
    over the columns each product needs (a small table's: all of them, no copy)."""

    def __init__(self, table: ClaimTable) -> None:
        self.table = table
        self._matched: dict[str, np.ndarray | None] = {}
        self._words: np.ndarray | None = None
        self._words_t: np.ndarray | None = None

    def words(self, columns: np.ndarray) -> np.ndarray:
        """The table's words as dense float32 rows over the columns `columns` marks
        (`_dense_columns`); a small table's over all its columns (a column no row of the other
        side holds adds nothing to a product, and there are few)."""
        w = self.table.rows("words")
        if w.shape[0] * w.shape[1] > DENSE_WORDS_MAX_CELLS:
            return _dense_columns([w], columns)[0]
        if self._words is None:
            (self._words,) = _dense_columns([w], None)
        return self._words

    def __call__(self, name: str, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        q, w = self.table.rows(name), self.table.rows("words")
        if name not in self._matched:
            columns = np.zeros(w.shape[1], bool)
            columns[q.indices] = True  # a word no row of q holds matches nothing asked
            if q.shape[0] ** 2 * int(columns.sum()) <= DENSE_MAX_WORK:  # a recall's claims: one small product
                words = self.words(columns)
                if words.shape[1] == len(columns):  # all columns: q's rows over them too
                    if self._words_t is None:
                        self._words_t = np.ascontiguousarray(words.T)
                    (dense_q,) = _dense_columns([q], None)
                    product = dense_q @ self._words_t
                else:
                    (dense_q,) = _dense_columns([q], columns)
                    product = dense_q @ words.T
                # rows x rows: row x of q holds a column row y's words lack
                self._matched[name] = np.diff(q.indptr)[:, None] > product
            else:
                self._matched[name] = None
        lacks = self._matched[name]
        if lacks is None:
            return _lacks(getattr(self.table, name), self.table.words, i, j)
        return lacks[i, j]


def _lacks(q: sparse.csr_matrix, w: sparse.csr_matrix, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Per row pair (i, j): row i of `q` holds a column row j of `w` lacks (both over the
    columns of the words), on a table too big for one dense product (`_Lacking`)."""
    if len(i) <= FEW_PAIRS:  # few pairs: sets of column ids cost less than scipy's indexing

        def row(m: sparse.csr_matrix, x: int) -> set[int]:
            return set(m.indices[m.indptr[x]:m.indptr[x + 1]].tolist())

        return np.fromiter((bool(row(q, x) - row(w, y)) for x, y in zip(i.tolist(), j.tolist())), bool, len(i))
    return np.diff(q.indptr)[i] > np.asarray(q[i].multiply(w[j]).sum(axis=1)).ravel()


def _shared_counts(table: ClaimTable, big: np.ndarray, retired: sparse.csr_matrix | None,
                   dense_words: Callable[[np.ndarray], np.ndarray] | None = None):
    """Per block of rows (start, stop, counts): how many words, proposing words, keys and
    values each row of the block shares with every row, how many values it retires of
    each row's / each row retires of its (None without retired values), and how many
    units and numbers with a unit it shares with every row (None without units). A small table (a
    recall's claims, see DENSE_MAX_WORK) in one dense product each over only the columns
    two or more rows hold (a column one row holds adds to no pair), which costs less than
    scipy's per-call overhead; bigger tables as sparse products, a block of rows at a time.
    `dense_words`: the words as dense rows over the columns marked (`_Lacking.words`)."""
    # read as arrays (`ClaimTable.rows`) for the dense products, as scipy matrices for the sparse ones
    n, words, values, keys = len(table), table.rows("words"), table.rows("values"), table.rows("keys")
    units = table.rows("units")
    units = units if units.indptr[-1] else None
    held = np.bincount(words.indices, minlength=words.shape[1])
    held_keys = np.bincount(keys.indices, minlength=keys.shape[1])
    both = [values] + ([retired] if retired is not None else [])
    held_values = sum(np.bincount(m.indices, minlength=values.shape[1]) for m in both)
    shared_columns = int((held >= 2).sum() + (held_keys >= 2).sum() + (held_values >= 2).sum())
    if n * n * shared_columns <= DENSE_MAX_WORK:
        w = dense_words(held >= 2) if dense_words is not None else _dense_columns([words], held >= 2)[0]
        # (the dense words may hold every column: one held by a single row adds to no pair)
        common = big if w.shape[1] == len(held) else big[held >= 2]
        (dense_keys,) = _dense_columns([keys], held_keys >= 2)
        dense_values = _dense_columns(both, held_values >= 2)
        v = dense_values[0]
        shared_all = w @ w.T
        proposed = (w[:, ~common] @ w[:, ~common].T) if common.any() else None
        retires = retired_by = shared_units = shared_measures = None
        if retired is not None:
            r = dense_values[1]
            retires, retired_by = r @ v.T, v @ r.T
        if units is not None:
            (u,) = _dense_columns([units], None)
            m = v[:, table.measures[held_values >= 2]]
            shared_units, shared_measures = u @ u.T, m @ m.T
        yield 0, n, tuple(None if m is None else m.astype(np.int32)
                          for m in (shared_all, proposed, dense_keys @ dense_keys.T, v @ v.T, retires, retired_by,
                                    shared_units, shared_measures))
        return
    words, values, keys = table.words, table.values, table.keys
    retired, units = (None if retired is None else table.retired), (None if units is None else table.units)
    proposing = words[:, np.flatnonzero(~big)] if big.any() else None
    measures = values[:, np.flatnonzero(table.measures)] if units is not None else None
    # Each right-hand side is transposed once (values.T serves two products).
    transposed = {name: m.T.tocsr() for name, m in (("words", words), ("proposing", proposing), ("keys", keys),
                                                    ("values", values), ("retired", retired), ("units", units),
                                                    ("measures", measures))
                  if m is not None}
    products = ((words, "words"), (proposing, "proposing"), (keys, "keys"), (values, "values"),
                (retired, "values"), (values if retired is not None else None, "retired"), (units, "units"),
                (measures, "measures"))
    for start in range(0, n, PAIR_BLOCK):
        stop = min(n, start + PAIR_BLOCK)
        yield start, stop, tuple((m[start:stop] @ transposed[right]).toarray()
                                 if m is not None and right in transposed else None for m, right in products)


def _dense_columns(matrices: Sequence[sparse.csr_matrix], keep: np.ndarray | None) -> list[np.ndarray]:
    """These matrices (the same columns) as dense float32 rows over the columns `keep`
    marks (None: all; counts of shared 0/1 columns stay exact in float32)."""
    column = None if keep is None else np.cumsum(keep) - 1
    out = []
    for m in matrices:
        rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
        if keep is None:
            dense = np.zeros(m.shape, np.float32)
            dense[rows, m.indices] = m.data
        else:
            inside = keep[m.indices]
            dense = np.zeros((m.shape[0], int(keep.sum())), np.float32)
            dense[rows[inside], column[m.indices[inside]]] = m.data[inside]
        out.append(dense)
    return out


def _keys(it: MemoryItem, title: int) -> set[tuple[str, Hashable]]:
    """What proposes a pair besides a content word: the title, the item's id and the ids it links to."""
    return {("id", to) for to in {link.to for link in it.links} | {it.id}} | ({("t", title)} if title >= 0 else set())


def _replaced(it: MemoryItem) -> Iterable[str]:
    """Ids on the other end of a replacement: those `it` supersedes or corrects in part
    (`refines`: an answer to the conflict, like a replacement), and its `superseded_by`."""
    yield from (link.to for link in it.links if link.rel in ("supersedes", "refines"))
    if it.superseded_by:
        yield it.superseded_by


def _close(items: Sequence[MemoryItem], i: np.ndarray, j: np.ndarray, vector_of: VectorOf | None,
           vectors_of: VectorsOf | None = None) -> np.ndarray:
    """cosine >= SUBJECT_COSINE per pair (False without both vectors). Computed in one
    product; pairs within rounding of the threshold are decided by `_cosine` itself.
    `vectors_of` (optional) gathers the rows' vectors at once; `vector_of` still decides
    the pairs near the threshold."""
    out = np.zeros(len(i), bool)
    if vector_of is None or not len(i):
        return out
    # the rows asked, ascending, and each pair's positions among them (a mark per row: no sort)
    mark = np.zeros(max(int(i.max()), int(j.max())) + 1, bool)
    mark[i] = mark[j] = True
    rows = np.flatnonzero(mark)
    position = np.cumsum(mark) - 1
    if vectors_of is not None:
        matrix, has = vectors_of(rows)
        if matrix is None or not has.any():
            return out
    else:
        vectors = [vector_of(items[r]) for r in rows.tolist()]
        has = np.fromiter((v is not None for v in vectors), bool, len(rows))
        if not has.any():
            return out
        matrix = np.stack([v if v is not None else vectors[int(np.argmax(has))] for v in vectors]).astype(
            np.float32, copy=False)
    a, b = position[i], position[j]
    known = has[a] & has[b]
    if len(rows) <= GRAM_MAX_ROWS:  # a recall's few claims: all their cosines at once, no copied pair rows
        cosine = (matrix @ matrix.T)[a[known], b[known]]
    else:
        cosine = np.einsum("ij,ij->i", matrix[a[known]], matrix[b[known]])
    close = cosine >= SUBJECT_COSINE
    for x in np.flatnonzero(np.abs(cosine - SUBJECT_COSINE) < 1e-3).tolist():
        exact = _cosine(vector_of, items[int(i[known][x])], items[int(j[known][x])])
        close[x] = exact is not None and exact >= SUBJECT_COSINE
    out[known] = close
    return out


def _cosine(vector_of: VectorOf | None, a: MemoryItem, b: MemoryItem) -> float | None:
    if vector_of is None:
        return None
    va, vb = vector_of(a), vector_of(b)
    if va is None or vb is None:
        return None
    return float(np.dot(va, vb))


def _table(items: Iterable[MemoryItem]) -> ClaimTable:
    """The claims among `items`, in order."""
    return ClaimTable.read([it for it in items if is_claim(it)], cached=True)


def find_conflicts(items: Iterable[MemoryItem], vector_of: VectorOf | None = None
                   ) -> list[tuple[MemoryItem, MemoryItem, str]]:
    """Every conflicting pair among the claims of `items` as (a, b, reason), a.id < b.id,
    sorted by ids. A pair where one supersedes the other is not reported."""
    table = _table(it for it in sorted(items, key=lambda it: it.id) if it.active)
    found = _pairs(table, vector_of)
    shown = (found.reason > 0) & ~found.replaces
    out = [(table.items[i], table.items[j], REASONS[r])
           for i, j, r in zip(found.i[shown].tolist(), found.j[shown].tolist(), found.reason[shown].tolist())]
    return sorted(out, key=lambda p: (p[0].id, p[1].id))


# -- resolving groups -----------------------------------------------------------------------


@dataclass
class Outcome:
    """What happens to one member of a conflict group."""

    resolution: str  # superseded | corrected | confidence | recency | scope | ambiguous | related | flagged | winner
    conflict_with: list[str] = field(default_factory=list)
    suppressed: bool = False
    winner: str | None = None


def groups(items: Sequence[MemoryItem], vector_of: VectorOf | None = None) -> list[list[MemoryItem]]:
    """Connected groups (two or more members) of conflicting or superseding claims."""
    return groups_in(_table(items), vector_of)


def groups_in(table: ClaimTable, vector_of: VectorOf | None = None,
              vectors_of: VectorsOf | None = None) -> list[list[MemoryItem]]:
    """`groups` of the claims of a table (recall: its candidates' rows of the corpus' table;
    `vectors_of` gathers the vectors of several of its rows at once)."""
    return [group for group, _ in groups_with_pairs(table, vector_of, vectors_of)]


def groups_with_pairs(table: ClaimTable, vector_of: VectorOf | None = None, vectors_of: VectorsOf | None = None
                      ) -> list[tuple[list[MemoryItem], set[frozenset[str]]]]:
    """`groups_in`, each with the pairs of member ids that conflict or supersede (what
    joined them), for `resolve`: two members of one group need not disagree (two claims
    that agree, each contradicted by a third)."""
    n = len(table)
    if n < 2:
        return []
    found = _pairs(table, vector_of, vectors_of)
    joined = found.replaces | (found.reason > 0)
    ids = found.ids  # one node per id, as the items are keyed
    ji, jj = found.i[joined].tolist(), found.j[joined].tolist()
    label = _components(int(ids.max()) + 1, ids[found.i[joined]].tolist(), ids[found.j[joined]].tolist())
    row_label = [label[node] for node in ids.tolist()]  # per row, read as lists (no numpy scalar per pair)
    by_label: dict[int, list[MemoryItem]] = {}
    for it, key in zip(table.items, row_label):
        by_label.setdefault(key, []).append(it)
    item_ids = [it.id for it in table.items]
    pairs: dict[int, set[frozenset[str]]] = {}
    for a, b in zip(ji, jj):
        pairs.setdefault(row_label[a], set()).add(frozenset((item_ids[a], item_ids[b])))
    return [(sorted(g, key=lambda it: it.id), pairs.get(key, set())) for key, g in by_label.items() if len(g) > 1]


def _components(nodes: int, a: Sequence[int], b: Sequence[int]) -> list[int]:
    """A component label per node of the undirected graph with edges (a[k], b[k]): union-find
    in plain Python, as a recall's few edges cost less than building a scipy graph."""
    parent = list(range(nodes))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for x, y in zip(a, b):
        rx, ry = root(x), root(y)
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)
    return [root(x) for x in range(nodes)]


def titles_may_stand_apart(a: str, b: str) -> bool:
    """Whether claims titled `a` and `b` (normalised, `Claim.title`) may be shown side by
    side by `names_a_case` or `_beside_under_one_title`: one title, or one title's words
    within the other's. Asked first, so most rivals are ranked without reading a claim
    (unpacking the members' claims was a tenth of a recall's conflict stage)."""
    if a and a == b:
        return True
    a_words, b_words = set(a.split()), set(b.split())
    return a_words < b_words or b_words < a_words


def _beside_under_one_title(a: Claim, b: Claim) -> bool:
    """Two claims share a title, their contents do not compare, and `a` (the one that would
    win) does not say what changed: neither corrects the other."""
    return bool(a.title) and a.title == b.title and conflict_reason(a, b) == MAY_UPDATE and not _updates(a, b)


def _updates(new: Claim, old: Claim) -> bool:
    """Under one title, `new` says something changed and what: a value of the kind `old`
    states, or (stating none) something `old` said beyond the title ("ci moved to github
    actions, jenkins is gone" / "we run ci on jenkins"); not when each names whom it is about
    and they name nobody in common (`Claim.named`). Or it restates a wish in other terms
    (`_revises`)."""
    if new.changes is None:
        return _revises(new, old)
    if new.named and old.named and not new.named & old.named:  # "Milo switched ..." / "Luna eats ..."
        return False
    if new.values:  # "standup is at 10am now" / "Daily standup is at 9:30"; not 5 kg / 200 g
        # A version counts in its name's unit ("PostgreSQL 16"): a name, for this test
        # ("now runs on CockroachDB" / "uses PostgreSQL 16").
        new_units, old_units = new.units - new.values, old.units - old.values
        # a day the time of which is left unsaid moves it ("moved to Thursday" / "Tuesday at 3pm")
        return (bool(old.values) and _values_disagree(new, old, one_subject=True)
                and (bool(new_units & old_units) or not (new_units or old_units - _CLOCK_UNITS)))
    return bool(new.changes & old.words)


# How many words two wishes must open with alike to ask one thing ("Answer Maya in ...",
# "Reply to me in a ..."; not "Don't use ..." / "Avoid using ...": two items of a list).
WISH_HEAD = 3


def _revises(new: Claim, old: Claim) -> bool:
    """Under one title, the preference `new` asks in other terms what `old` asked: both open
    with the same words (WISH_HEAD of them at least, one not a function word: "Answer Maya
    in short bullet points" / "Answer Maya in numbered steps", "Reply to me in a formal
    tone" / "... in a casual tone"), then say different things, and state the same values (a
    wish that names a value the other does not, "Answer Maya in French", may hold beside
    it). The user revised the wish: the newer replaces it. Wishes that open otherwise ("Use
    type hints" / "Prefer f-strings", "Don't use emojis" / "Don't use jargon") are items of
    one list, kept side by side, as two notes whose subjects each name what the other never
    says are."""
    if new.item.type != "preference" or old.item.type != "preference" or new.values != old.values:
        return False
    if new.adds or old.adds or new.words <= old.words or old.words <= new.words:
        return False
    head = []  # the words as written ("don't" is one)
    for a, b in zip(_WRITTEN_WORD.findall(new.item.content.lower()), _WRITTEN_WORD.findall(old.item.content.lower())):
        if a != b:
            break
        head.append(a)
    return len(head) >= WISH_HEAD and not STOPWORDS.issuperset(head)


_WRITTEN_WORD = re.compile(r"[\w'’-]+")


def _resolve_one_scope(members: list[MemoryItem], mode: str, updated: Mapping[str, float] | None = None,
                       pairs: Collection[frozenset[str]] | None = None,
                       claims: Callable[[MemoryItem], Claim] = read_claim) -> dict[str, Outcome]:
    """Within one scope kind: by confidence, then the newer. A member is beaten only by one
    it conflicts with (`pairs`; None: every two members do): two claims that agree, each
    contradicted by a third, both stand when they beat it."""
    ids = [m.id for m in members]
    if len(members) == 1:
        return {ids[0]: Outcome("winner")}
    if mode == "flag":
        return {m.id: Outcome("flagged", [i for i in ids if i != m.id]) for m in members}
    # Each member's update time parsed once (not in every sort comparison and test), or
    # read from `updated`.
    when = {id(m): timestamp(m.updated_at, float("-inf")) if updated is None else updated[m.id] for m in members}
    members = sorted(members, key=lambda m: (-m.confidence, -when[id(m)], m.id))
    standing: list[MemoryItem] = []  # not beaten, best first
    beat: dict[str, list[str]] = {}  # standing id -> the ids it beat
    tied: dict[str, list[str]] = {}  # standing id -> the standing ids it stays beside, flagged
    related: dict[str, list[str]] = {}  # standing id -> the notes under its title it stays beside
    out: dict[str, Outcome] = {}
    claim: dict[str, Claim] = {}  # each member's claim read once, only when a rival asks
    title: dict[str, str] = {}  # each member's title as its claim has it (`Claim.title`)

    def claim_of(it: MemoryItem) -> Claim | None:
        if it.id not in claim:  # None: a turn, grouped only by a claim's "contradicts" link to it
            claim[it.id] = claims(it) if is_claim(it) else None
        return claim[it.id]

    def title_of(it: MemoryItem) -> str:
        if it.id not in title:
            title[it.id] = normalise_label(it.title)
        return title[it.id]

    def beside(s: MemoryItem, m: MemoryItem) -> bool:
        """Two notes under one title, each standing (`_beside_under_one_title`)."""
        if not title_of(s) or title_of(s) != title_of(m):
            return False  # told by the titles alone: no claim read
        a, b = claim_of(s), claim_of(m)
        return a is not None and b is not None and _beside_under_one_title(a, b)

    def beats(s: MemoryItem, m: MemoryItem) -> str | None:
        """Why the standing `s` (ranked above `m`) beats `m`, or None when both stay."""
        if titles_may_stand_apart(title_of(s), title_of(m)):
            a, b = claim_of(s), claim_of(m)
            if a is not None and b is not None and (names_a_case(a, b) or _beside_under_one_title(a, b)):
                return None  # a case beside the rule, or a note beside another: shown both
        if s.confidence > m.confidence + 1e-9:
            return "confidence"
        if when[id(s)] > when[id(m)]:  # the winner is newer
            return "recency"
        return None

    partners: dict[str, set[str]] = {}  # id -> the ids `pairs` pairs it with (looked up, not built per test)
    for pair in pairs or ():
        for a in pair:
            partners.setdefault(a, set()).update(pair - {a} or pair)
    for m in members:
        mine = partners.get(m.id, ())
        rivals = [s for s in standing if pairs is None or s.id in mine]
        if not rivals:
            standing.append(m)
            continue
        best = rivals[0]  # the best-ranked claim it disagrees with
        why = beats(best, m)
        if why is not None:
            out[m.id] = Outcome(why, [best.id], suppressed=True, winner=best.id)
            # every standing claim it disagrees with and would lose to has beaten it: each
            # is shown as the winner of a conflict, not only the best-ranked one
            for s in rivals:
                if s is best or beats(s, m) is not None:
                    beat.setdefault(s.id, []).append(m.id)
            continue
        standing.append(m)
        for s in rivals:
            next_to = related if beside(s, m) else tied
            next_to.setdefault(s.id, []).append(m.id)
            next_to.setdefault(m.id, []).append(s.id)
    for s in standing:
        if s.id in tied:
            out[s.id] = Outcome("ambiguous", [i for i in ids if i in tied[s.id]] if pairs is not None
                                else [k.id for k in standing if k.id != s.id and k.id not in related.get(s.id, ())])
        elif s.id in related:
            out[s.id] = Outcome("related", [i for i in ids if i in related[s.id]])
        elif s.id in beat:
            out[s.id] = Outcome(out[beat[s.id][0]].resolution, beat[s.id])
        else:
            out[s.id] = Outcome("winner")
    return out


def resolve(group: Sequence[MemoryItem], mode: str = "resolve", updated: Mapping[str, float] | None = None,
            pairs: Collection[frozenset[str]] | None = None,
            claims: Callable[[MemoryItem], Claim] = read_claim) -> dict[str, Outcome]:
    """Outcome per member id of one conflict group (see the module docstring). `updated`:
    each member's update time as `timestamp(updated_at, -inf)` gives it, already read (a
    recall takes them from its corpora's arrays), else parsed here. `pairs`: the member
    ids that conflict, as `groups_with_pairs` gives them (None: every two members do).
    `claims`: a member's claim (a recall unpacks it from its table, `ClaimTable.claim`)."""
    out: dict[str, Outcome] = {}
    live = []
    declared: dict[str, set[str]] = {}  # id -> members whose `supersedes` link names it
    refined: dict[str, set[str]] = {}  # id -> members whose `refines` link names it
    for o in group:
        for link in o.links:
            if link.rel == "supersedes":
                declared.setdefault(link.to, set()).add(o.id)
            elif link.rel == "refines":
                refined.setdefault(link.to, set()).add(o.id)
    for m in group:  # the first member that supersedes m (`supersedes(o, m)`), without asking every pair
        ids = declared.get(m.id, set()) | ({m.superseded_by} if m.superseded_by else set())
        ids.discard(m.id)
        by = next((o for o in group if o.id in ids), None) if ids else None
        if by is not None:
            out[m.id] = Outcome("superseded", [by.id], suppressed=True, winner=by.id)
        else:
            live.append(m)
    # A note a member corrects in part (its `refines` link) stays, for what the correction
    # did not touch: marked as corrected, shown after its correction (`CORRECTED`).
    by_ids = {m.id for m in live}
    for m in list(live):
        fixers = sorted(refined.get(m.id, set()) & by_ids - {m.id})
        if fixers:
            out[m.id] = Outcome(CORRECTED, fixers, winner=fixers[0])
            live.remove(m)
    by_scope: dict[str, list[MemoryItem]] = {}
    for m in live:
        by_scope.setdefault(m.scope.kind, []).append(m)
    kinds = sorted(by_scope, key=lambda k: SCOPE_RANK[k])
    applies: list[str] = []
    for kind in kinds:
        outcome = _resolve_one_scope(by_scope[kind], mode, updated, pairs, claims)
        out.update(outcome)
        applies.extend(i for i, o in outcome.items() if not o.suppressed)
    if len(kinds) > 1:
        specific = [m.id for m in by_scope[kinds[0]] if not out[m.id].suppressed]
        for kind in kinds[1:]:
            for m in by_scope[kind]:
                o = out[m.id]
                if not o.suppressed:
                    out[m.id] = Outcome("scope", [*specific, *o.conflict_with], winner=specific[0])
        for i in specific:
            o = out[i]
            named = set(o.conflict_with)  # a set: groups of dozens of members made this cubic
            others = [x for x in applies if x != i and x not in named]
            out[i] = Outcome(o.resolution if o.resolution != "winner" else "scope",
                             [*o.conflict_with, *others])
    return out




# -- what was said of a retracted claim -----------------------------------------------------


def restates(turn: MemoryItem, claim: MemoryItem) -> bool:
    """Whether the raw chat `turn` says what `claim` says (before the claim was last changed,
    as a retraction changes it): every value the claim states is stated in the turn, and
    most of the claim's words (its title's too) are the turn's, half of them when values
    pin it down. "Our deploy window is Tuesdays at 14:00 UTC." restates "Deploy window: The
    deploy window is Tuesdays at 14:00 UTC."; "The deploy window moved to Thursdays, not
    Tuesdays" does not (it states another value and retires that one)."""
    if timestamp(turn.created_at, 0.0) > timestamp(claim.updated_at, float("inf")):
        return False  # said after the claim was retracted: said again, on purpose
    said, c = read_claim(turn), read_claim(claim)
    if not c.values <= said.values:
        return False
    shared, overlap = _overlap(c.words, said.words)
    return shared >= 2 and overlap >= (0.5 if c.values else SUBJECT_OVERLAP)


@lru_cache(maxsize=1024)
def _user_named(user_id: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(user_id)}\b(?:'s)?", re.IGNORECASE)


def states_what_was_corrected(turn: MemoryItem, correction: MemoryItem) -> bool:
    """Whether the raw chat `turn`, said before `correction` (a claim that replaced another:
    its `supersedes` links) was made, conflicts with it by this rule: it states the value
    the correction replaced ("My doctor put me on amlodipine 5 mg every morning" before
    "Amlodipine dose: Sam takes amlodipine 10 mg every morning"). Said after the
    correction, it is said again, on purpose."""
    if timestamp(turn.created_at, float("inf")) >= timestamp(correction.created_at, 0.0):
        return False
    if turn.metadata.get("role") == "user" and turn.scope.user_id:
        # The user says "I" where the claim names them ("I take amlodipine" / "Sam no longer
        # takes amlodipine"): their name is no subject word between the two.
        correction = msgspec.structs.replace(
            correction, content=_user_named(turn.scope.user_id).sub("", correction.content))
    said, fix = read_claim(turn), read_claim(correction)
    if not (said.words & fix.words) - _light_or_period():
        return False  # only "pay" and "month" in common: two things paid monthly, not one corrected
    return conflict_reason(said, fix) is not None


@lru_cache(maxsize=1)
def _light_or_period() -> frozenset[str]:
    """Stems of the light verbs and the words of a period ("every morning", "a month"):
    shared alone, they make no subject of a turn and a correction."""
    return frozenset(_STEMS(sorted(_LIGHT_VERBS | {
        "every", "each", "day", "days", "daily", "week", "weeks", "weekly", "month", "months", "monthly",
        "year", "years", "yearly", "morning", "mornings", "evening", "evenings", "night", "nights"})))


# -- corrections at write time ----------------------------------------------------------------


def proposed_claim(title: str, content: str, item_type: str, scope_kind: str = "project",
                   retiring: Sequence[str] = ()) -> Claim | None:
    """The claim a proposal would make (None when its type is not a claim), to check it
    against stored claims before it is written; in the scope kind it will be written in
    (what tells two things of one kind apart holds within one kind, `_qualified_apart`).
    `retiring`: the clauses of the user's words it records that retire a value
    (`retired_by_evidence`, kept with the item as RETIRED_BY_USER)."""
    if item_type not in CLAIM_TYPES and not (item_type in DATED_TYPES and reschedules(content)):
        return None
    return read_claim(MemoryItem(id="\x00proposed", tier="stm", type=item_type,  # type: ignore[arg-type]
                                 title=title, content=content, scope=Scope(kind=scope_kind),  # type: ignore[arg-type]
                                 metadata={RETIRED_BY_USER: list(retiring)} if retiring else {}))


def retired_by_evidence(claim: Claim, evidence: Sequence[str]) -> list[str]:
    """The clauses of the user's own words (`evidence`: the turn a proposal records) that
    name as replaced a value the proposal leaves out: the user said "The town is Greyhaven
    now, not Ashford", the model proposed "The town is called Greyhaven". A clause counts
    when the turn states a value the proposal states (it is about what the proposal says)
    and the value it retires is not one the proposal states. The proposal is judged with
    them (what it replaces), and stored as the model wrote it."""
    out: list[str] = []
    for text in evidence:
        stated = _stance(text or "")
        if not _RETIRED.search(stated) or not (stated_values(stated) & claim.values):
            continue
        for m in _RETIRED.finditer(stated):
            named = _values(m.group(0))
            if named and not named & claim.values and named - claim.retired:
                out.append(m.group(0).strip())
    return out


def contradicted(new: Claim, existing: Iterable[MemoryItem]) -> Iterable[tuple[MemoryItem, str]]:
    """The active stored claims `new` conflicts with, and why; not one beside which it names
    a case, or that names one beside it (`names_a_case`), nor one under the same title whose
    content it does not contradict (`MAY_UPDATE`) unless it says something changed
    (`CHANGED`, `Claim.changes`): neither corrects the other, nor is held for contradicting it
    (recall shows both, flagged)."""
    for old in existing:
        if isinstance(old, MemoryItem) and old.active and (is_claim(old) or _moves(new, old)):
            claim = read_claim(old)
            reason = conflict_reason(new, claim)
            if reason == MAY_UPDATE:
                if _updates(new, claim):
                    yield old, CHANGED
            elif reason and (not names_a_case(new, claim) or _moves(new, old)):
                # a plan's title names no case of it: "Dentist" moved "Dentist appointment"
                yield old, reason



def authors(item: MemoryItem) -> frozenset[str]:
    """Who said a claim: its owner, or for a claim consolidation merged, the author of every
    member (`metadata["authors"]`; the merged item is filed under one member's owner)."""
    named = item.metadata.get("authors")
    if isinstance(named, list) and named and all(isinstance(a, str) for a in named):
        return frozenset(named)
    return frozenset((item.scope.user_id,))


class Corrections(NamedTuple):
    """What a new claim of an author corrects among their own claims (`corrections`)."""

    replaced: list[str]  # ids it supersedes: they leave recall (their history stays)
    in_part: list[str]  # ids it corrects in part: they stay, shown with it (`corrects_in_part`)
    retiring: list[str]  # what the user's words retired that it leaves out (`retired_by_evidence`)
    # (id, when it ends): claims it takes over from a day on, which hold until then
    # (`capture.takes_over`: "From December 1, my address is ...")
    ends: tuple[tuple[str, str], ...] = ()
    # the starts of the plans it moves to another day (`capture.takes_over`): a claim one of
    # them ended the instant before its start is among `ends`, ended anew
    moved_from: tuple[str, ...] = ()


def corrections(title: str, content: str, item_type: str, scope_kind: str, author_user_id: str,
                existing: Iterable[MemoryItem], evidence: Sequence[str] = ()) -> Corrections:
    """The author's own claims (same user, same scope kind) that a new claim with this
    title and content conflicts with: the new claim corrects them and supersedes them, or,
    when it corrects a detail of a note that says more (`corrects_in_part`), links to them
    with `refines` and leaves them standing, where a contradiction of someone else's claim
    is left to the write policy. A merged claim is the author's own only when every member
    was (`authors`). `evidence`: what the user said that the claim records
    (`retired_by_evidence`)."""
    new = proposed_claim(title, content, item_type, scope_kind)
    if new is None:
        return Corrections([], [], [])
    retiring = retired_by_evidence(new, evidence)
    if retiring:
        new = proposed_claim(title, content, item_type, scope_kind, retiring)
    own = [old for old in existing if authors(old) == {author_user_id} and old.scope.kind == scope_kind]
    replaced, in_part = corrected(new, own)
    return Corrections(replaced, in_part, retiring)


def corrected(new: Claim, existing: Iterable[MemoryItem]) -> tuple[list[str], list[str]]:
    """Ids of the claims among `existing` (those `new` may correct) that it replaces whole
    and those it corrects a detail of (`corrects_in_part`: linked with `refines`, they
    stay). The one place every door that corrects decides it: a write, a turn's proposal,
    an edit of what an item says, a reviewer's approval of a held claim or edit."""
    replaced, in_part = [], []
    for old, reason in contradicted(new, existing):
        (in_part if reason == SAME_SUBJECT and corrects_in_part(new, read_claim(old)) else replaced).append(old.id)
    return sorted(replaced), sorted(in_part)


def corrected_by(title: str, content: str, item_type: str, scope_kind: str, author_user_id: str,
                 existing: Iterable[MemoryItem]) -> list[str]:
    """Ids of the author's own claims a new claim supersedes (`corrections`)."""
    return corrections(title, content, item_type, scope_kind, author_user_id, existing).replaced


# A clause or an apposition of a note: "The protagonist is Mara Quinn, a 29-year-old marine
# biologist" says two things ("3.11", "14:00" and "1,000" end none).
_DETAIL = re.compile(r"(?:[^.,;:!?()]|[.,:](?=\d))+")


def corrects_in_part(new: Claim, old: Claim) -> bool:
    """`new` (values that disagree with `old`'s) corrects a detail of `old`, which says more
    than that detail: `old` has a clause or apposition the correction leaves untouched (none
    of the values it states is one the correction replaces) that says something the
    correction never says, and the clause that states what the note is about (its first
    value) is untouched. "Mara Quinn is 34 years old, not 29" corrects the age in "The
    protagonist is Mara Quinn, a 29-year-old marine biologist": Mara is still the
    protagonist and a marine biologist. "We moved the orders service from PostgreSQL to
    CockroachDB" replaces "The orders service uses PostgreSQL 16" whole: its one clause is
    what was corrected. Counting the words a correction leaves unsaid cannot tell these
    apart (true corrections leave words unsaid too: "powered by" / "runs on"); where the
    corrected value sits can."""
    replaced = {v for v in old.values - new.values
                if v in new.retired or not (_value_words((v,)) <= new.words)}
    if not replaced:
        return False
    details = [d.group(0) for d in _DETAIL.finditer(old.item.content) if d.group(0).strip()]
    first = True
    untouched_saying_more = False
    for detail in details:
        said = _read_claim(replace_content(old.item, detail))
        if not said.values and not said.words:
            continue
        touched = bool(said.values & replaced)
        if first and said.values:
            if touched:
                return False  # what the note is about is what was corrected: the whole of it
            first = False
        if not touched and said.words - new.words - _value_stems(said.values):
            untouched_saying_more = True
    return untouched_saying_more


def replace_content(item: MemoryItem, content: str) -> MemoryItem:
    return msgspec.structs.replace(item, id="\x00detail", title="", content=content, links=[])


def _value_stems(values: Iterable[str]) -> frozenset[str]:
    return frozenset(_STEMS(sorted(_value_words(values))))


__all__ = ["CLAIM_TYPES", "Claim", "Outcome", "conflict_reason", "contradicted", "corrected", "corrected_by",
           "find_conflicts", "groups", "groups_with_pairs", "is_claim", "names_a_case", "proposed_claim", "read_claim",
           "reschedules", "resolve", "restates", "stated_values", "states_what_was_corrected", "supersedes"]
