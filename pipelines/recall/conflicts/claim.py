"""What the rule reads of one item (`Claim`): its subject words and values, read once per item version."""

from __future__ import annotations

import pickle
import re
from dataclasses import dataclass, fields, replace

import msgspec

from pipelines.first_person import of_the_writer
from pipelines.records import RETIRED_BY_USER, MemoryItem

from ..lexical import SMALL_TALK, normalise_label, words
from .patterns import (
    _ABBREVIATED,
    _ADDS,
    _APPOSED,
    _CHANGED,
    _CLAUSE,
    _CODE,
    _CODE_SPAN,
    _CONJOINED,
    _DIGIT,
    _ENDED,
    _ENDED_TIME_WORDS,
    _ENDED_WHEN,
    _FIRST_PERSON,
    _LIGHT_VERBS,
    _NAME,
    _NAMED_FORM,
    _NOT_NEGATING,
    _NUMBER_WORDS,
    _OWNER,
    _POSSESSIVE,
    _RETIRED,
    _RETIRING_WORDS,
    _SENTENCE_START,
    _STEMS,
    _WHEN_NAMES,
    ABSENCES,
    CLAIM_STOPWORDS,
    CORRECTING,
    NEGATION,
    TIME_WORDS,
    _common_words,
    _first_names,
)
from .values import (
    _date_words,
    _measured,
    _stance,
    _unit_words,
    _units,
    _value_words,
    _values,
    absent,
    identifiers,
    retired_values,
    stated_values,
)

# Types whose title names a claim, so two of them can disagree.
CLAIM_TYPES = frozenset({"fact", "decision", "definition", "constraint", "preference",
                         "pattern", "note"})
# A to-do is no claim (two to-dos do not disagree: "buy milk" / "buy bread"), but an
# appointment kept as one can move: a claim or a to-do saying its time changed ("Dentist
# moved to Thursday") corrects the earlier one of its subject as a claim saying so does
# (`CHANGED`).
DATED_TYPES = frozenset({"todo"})
ENDED_MIN_WORDS = 2  # what ended is named by two words at least ("staging environment", "Dana ... payments")


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
    # it speaks of its writer alone (`first_person.of_the_writer`: "I work from home on Fridays",
    # not "our release day"): said by two people, two subjects (`rule.own_words_apart`)
    of_writer: bool = False
    ended: frozenset[str] = frozenset()  # the words of what it says ended (`_ENDED`), of `words`
    ended_values: frozenset[str] = frozenset()  # and the values that clause states, of values | retired
    # where it says its one is back, and where away from (indices of `ABSENCES`: "I'm back in
    # the office" / "I work remotely": at work)
    returns: frozenset[int] = frozenset()
    away: frozenset[int] = frozenset()
    negated: bool = False  # it denies what it says ("I'm not allergic to penicillin"; `_denies`)
    denied: frozenset[str] = frozenset()  # the words of what it denies (`_denied`), of `words`
    contradicts: frozenset[str] = frozenset()  # ids this item links to with `contradicts`
    supersedes: frozenset[str] = frozenset()  # ids it replaces (its `supersedes` links)


def authors(item: MemoryItem) -> frozenset[str]:
    """Who said a claim: its owner, or for a claim consolidation merged, the author of every
    member (`metadata["authors"]`; the merged item is filed under one member's owner)."""
    named = item.metadata.get("authors")
    if isinstance(named, list) and named and all(isinstance(a, str) for a in named):
        return frozenset(named)
    return frozenset((item.scope.user_id,))


def speaker(item: MemoryItem) -> str | None:
    """The one person who said a claim (`authors`); None for a claim merged from several
    people's, or one whose author is not known (a proposal checked without one)."""
    (one, *more) = authors(item)
    return one if one and not more else None


def is_claim(item: MemoryItem) -> bool:
    return item.type in CLAIM_TYPES and item.validation != "retracted"


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
    # A code is one word ("eu-west-1": "euwest1"): its parts are no words of the subject, nor
    # do they take the subject's ("EU customer data is hosted in eu-west-1": "EU" names it).
    codes = {v for v in values | retired if _CODE.fullmatch(v)}
    # Code ("`pytest -m slow`") is one value, one word as a code is: its program and flags are
    # no words of the subject, nor do they take the subject's ("Run the slow tests with ...").
    spans = {v for v in values | retired if v[:1] == "`"}
    skip = (_value_words((values | retired) - codes - spans) | _date_words(item.content)
            | {_joined(c) for c in codes} | {_span_word(v) for v in spans})
    # the words that say it corrects ("Turns out", "Oops", "is actually") name nothing of the subject
    text = CORRECTING.sub(" ", item.content) if CORRECTING.search(item.content) else item.content
    if spans:
        text = _CODE_SPAN.sub(lambda m: f" {_span_word(m.group(0))} ", text)
    # a number that says which one is one word with its noun ("the 4.2 release": "release42"),
    # what the claim names as its subject (`Claim.named`), the noun a word of it too
    # Opening its sentence it names the subject ("The 4.2 release ships Friday"); elsewhere it is
    # a value ("SSO lands in the 4.2 release").
    identified = identifiers(text)
    said_values = {word for start, _, _, word in identified if not _OPENS.search(text, 0, start)}
    values |= said_values
    for start, end, noun, word in reversed(identified):
        text = f"{text[:start]}{word if word in said_values else f'{noun} {word}'}{text[end:]}"
    said = words(_CODE.sub(lambda m: _joined(m.group(0)), text) if codes else text)
    # A number is a value, never the subject, however it was read ("two", "30" of "30 minutes": "1800 second"),
    # also glued to its unit ("100mg", "8pm")
    skip |= {w for w in said if w in _NUMBER_WORDS or w in TIME_WORDS or w[:1].isdigit()} | said_values
    skip |= _unit_words(item.content)  # "30 minutes" states "1800 second": "minutes" is its unit
    toks = [w for w in said if w not in CLAIM_STOPWORDS]
    first_value = next((i for i, w in enumerate(toks) if w in skip), len(toks))
    before = said[:next((i for i, w in enumerate(said) if w in skip and w not in CLAIM_STOPWORDS), len(said))]
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
    title_words = [w for w in words(item.title) if w not in CLAIM_STOPWORDS and w not in title_skip]
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
    if identified:
        named |= frozenset(_STEMS(sorted({word for _, _, _, word in identified} - said_values)))
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
    returns = frozenset(n for n, (back, _, _) in enumerate(ABSENCES) if back.search(stated))
    # A code states the family its first part names too ("eu-central-1": "eu"), so it refines
    # a claim naming only that ("Customer data stays in the EU region"), as a value added does.
    families = {c.split("-", 1)[0] for c in codes & values}
    values |= {f for f in families if len(f) > 1 and f.isalpha()}
    return Claim(item=item, title=title, content=" ".join(said),  # normalise_label, its words read once
                 subject=tuple(stemmed_subject) if values else (), words=word_set,
                 values=values, retired=retired, title_values=title_values, units=_units(values),
                 qualifiers=qualifiers, ended=frozenset(ended), ended_values=frozenset(ended_values),
                 adds=bool(_ADDS.search(item.content)), measured=_measured(item.content),
                 changes=(word_set - frozenset(stemmed_title)
                          if _CHANGED.search(stated) or CORRECTING.search(stated) else None),
                 named=named & word_set, persons=persons & word_set,
                 first_person=_speaks_of_writer(before, item.content),
                 of_writer=of_the_writer(item.content),
                 returns=returns, away=absent(stated),
                 negated=negated,
                 denied=_denied(denying or stated, word_set, frozenset(stemmed_title)) if negated else frozenset())


# "us" as a word of the writer's, not "US" the country ("Our US customers pay in dollars")
_US_WRITTEN = re.compile(r"\b(?:us|Us)\b")


def _speaks_of_writer(before: list[str], content: str) -> bool:
    """The words before a claim's first value (`before`, lower-case) speak of its writer
    (`_FIRST_PERSON`: "My passport", "We go"); "US" is a country, "us" only as written so."""
    said = _FIRST_PERSON.intersection(before)
    return bool(said) and (said != {"us"} or _US_WRITTEN.search(content) is not None)


def _identified(text: str) -> set[str]:
    """The words of the numbers that say which one in `text` (`identifiers`: "release42")."""
    return {word for _, _, _, word in identifiers(text)}


# A sentence's start up to the word that picks one before a number, or up to the noun before
# one (`values.identifiers`).
_OPENS = re.compile(r"(?:^|[.!?;:]\s+|\n)\s*(?:(?:the|this|that|our|my|your|their|its|his|her)\s+v?)?$",
                    re.IGNORECASE)


def _span_word(span: str) -> str:
    """Code as one word ("`pytest -n auto`": "pytestnauto")."""
    return re.sub(r"\W|_", "", span.lower()) or "code"


def _joined(code: str) -> str:
    """A code as one word (`_CODE`: "eu-west-1" is "euwest1", "ubuntu-22.04" "ubuntu2204")."""
    return code.replace("-", "").replace(".", "").lower()


def _apposed(content: str) -> frozenset[str]:
    """The names (lower-case) `content` sets beside what a possessive names (`_APPOSED`)."""
    return frozenset(m.group(2).lower() for m in _APPOSED.finditer(content)
                     if m.group(1) not in CLAIM_STOPWORDS and m.group(2).lower() not in _WHEN_NAMES)


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
            # one in a part after a colon or a comma that names something of its own denies that
            # part, not what the clause stated before it: "Leo is allergic to nuts: nothing with
            # nuts for him" (what the allergy asks); a bare one answers what precedes it and
            # denies that ("Leo's allergies: none", "squash merging: no, we keep every commit")
            part = _PART_START.search(text, 0, negation.start())
            if part and not conjoined and _names_more(text[negation.end():]):
                found += words(text[part.end():])
                continue
            found += words(text[conjoined.start():] if conjoined else text)
    return (frozenset(_STEMS([w for w in found if w not in CLAIM_STOPWORDS])) | title_words) & own_words


# The last colon, comma or dash before a negation in its clause (`_denied`).
_PART_START = re.compile(r"[:,–—](?=[^:,–—]*$)")
_PART_END = re.compile(r"[:,–—]")


def _names_more(text: str) -> bool:
    """The words after a negation, up to the next colon or comma, name something (a word not
    a stopword): "nothing with nuts for him", not "none" or "no, ..."."""
    return any(w not in CLAIM_STOPWORDS for w in words(_PART_END.split(text, maxsplit=1)[0]))


def _named(content: str, before: set[str]) -> tuple[frozenset[str], frozenset[str]]:
    """The stems of the names `content`'s sentences start with ("Leo goes to bed at 8pm",
    "Biscuit eats 200 g"): a word written as a name ("Leo"; not "CI" or "GitHub") that is not
    a common English word (`_common_words`: "Our", "Daily", "Production" start sentences
    too), unless the content capitalises it inside a sentence as well ("Chloe ... with
    Chloe") or it owns what the sentence is about ("Mom's birthday", "Dad's car"); and of
    the owners it names before its first value (`before`, its words up to there: "The design
    team's standup is at 10:15"). And which of them are someone: a first name (zxcvbn's lists
    of first names: "Leo", "Ben"; not "Prod" or "Jenkins"), or an owner that is one or a word
    ("Mom's"; not "Acme's")."""
    owners = [m.group(1).lower() for m in _OWNER.finditer(content)] if "'" in content or "’" in content else []
    owners = [w for w in owners if w in before and w not in CLAIM_STOPWORDS and w != "let"]
    # not a name after an abbreviation ("Our doctor is Dr. Patel": inside the sentence)
    starts = [m for m in _SENTENCE_START.finditer(content)
              if _NAMED_FORM.fullmatch(m.group(1)) and not _ABBREVIATED.search(content, 0, m.start(1))]
    if not starts and not owners:
        return frozenset(), frozenset()
    common, inside = _common_words(), None
    # an owner is someone when a first name or a word ("Ben's", "Mom's", "the team's"); an
    # unknown name may be a company's ("Acme's contact person is John Smith")
    found, persons = list(owners), [w for w in owners if w in common or w in _first_names()]
    for m in starts:
        w = m.group(1).lower()
        if w in CLAIM_STOPWORDS:
            continue
        owns = w != "let" and _POSSESSIVE.match(content, m.end(1))  # "Let's": "let us"
        if w in common and not owns:
            if inside is None:
                inside = {n.group(0) for n in _NAME.finditer(content)}  # never a sentence start (`_NAME`)
            if m.group(1) not in inside:
                continue
        found.append(w)
        if owns and w in common or w in _first_names():
            persons.append(w)
    return frozenset(_STEMS(found)), frozenset(_STEMS(persons))


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
        # with the mark that ends the clause before it, a name is read as in the whole content
        # ("PagerDuty handles paging; Opsgenie was turned off": "Opsgenie" starts no sentence)
        rest = content[clause.start() - 1:clause.start()] + _ENDED.sub(" ", text)
        # numbers and dates; a name in it is a word of what ended ("Dana is no longer on payments")
        named = (_values(rest) | _identified(rest)) & own_values
        clause_values = {v for v in named if _DIGIT.search(v)}
        when = _ENDED_WHEN.search(text, _ENDED.search(text).end())
        if when:  # "dropped in the 5.0 release", "shut down on March 3, 2026": when it ended, not what
            when_values = named & (_values(text[when.start():]) | _identified(text[when.start():]))
            named -= when_values
            clause_values -= when_values
            found_names |= when_values  # stated of the ending, not of the subject: like a name in it
        # a name that counts a number of it ended only in that version ("Python 3.8 was dropped")
        versioned = {v.split(" ", 1)[1] for v in clause_values if " " in v}
        found_names |= {v for v in named - clause_values if v not in versioned and _STEMS([v])[0] not in versioned}
        # the numbers are values; a unit that is a name ("3.8 python") stays a word of it
        skip = _value_words(v.split(" ", 1)[0] for v in clause_values) | _ENDED_TIME_WORDS
        found_values |= clause_values
        found_words |= {w for w in _STEMS.many([[w for w in words(rest) if w not in CLAIM_STOPWORDS and w not in skip
                                                 and w not in _RETIRING_WORDS]])[0]} & own_words
    if len(found_words) < ENDED_MIN_WORDS:
        return frozenset(), frozenset(), frozenset(found_names)
    return frozenset(found_words), frozenset(found_values), frozenset(found_names)


def _title_words(c: Claim) -> frozenset[str]:
    """The claim's words its title says (no value: those are not words of a claim)."""
    return frozenset(_STEMS([w for w in words(c.title) if w not in CLAIM_STOPWORDS])) & c.words


def replace_content(item: MemoryItem, content: str) -> MemoryItem:
    return msgspec.structs.replace(item, id="\x00detail", title="", content=content, links=[])
