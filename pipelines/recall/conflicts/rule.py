"""The pair rule: whether two claims conflict, and why (`conflict_reason`), and whether the newer updates the older."""

from __future__ import annotations

import re
from collections.abc import Callable

from pipelines.records import MemoryItem

from ..lexical import SMALL_TALK, STOPWORDS, words
from .claim import DATED_TYPES, Claim, _title_words, speaker
from .patterns import (
    _BEGAN,
    _CHANGED,
    _CLAUSE,
    _CLOCK_UNITS,
    _DATE,
    _DONE_AGAIN,
    _HABIT,
    _LIGHT_VERBS,
    _MOVED_TO,
    _NEGATED_BEFORE,
    _ONE_OCCASION,
    _PHRASE,
    _RESCHEDULED,
    _SINCE_WHEN,
    _STEMS,
    _WHEN_NAMES,
    _WRITTEN_WORD,
    CLAIM_STOPWORDS,
    CORRECTING,
    MONTH_STEMS,
    PRESENCES,
    _not_qualifiers,
)
from .reasons import CHANGED_CLOSE, DENIES, MAY_UPDATE, SAME_SUBJECT
from .values import (
    _counted,
    _measures,
    _stance,
    _times,
    _unaddressed,
    _value_kinds,
    _value_stems,
    names_only,
    numbers_only,
    places,
    present,
    reschedules,
    stated_values,
)

SUBJECT_OVERLAP = 0.75  # overlap coefficient of the non-value words
SUBJECT_COSINE = 0.85  # embedding similarity that, with half the words shared, is one subject
# One claim naming as replaced a value the other states ("MySQL 8, replacing PostgreSQL 16")
# says itself that they are about one thing: half the words shared suffices then.
RETIRED_SUBJECT_OVERLAP = 0.5
# Naming as replaced the very value the other states ("We use MkDocs rather than Sphinx" /
# "Documentation is built with Sphinx") is most of the evidence: a third of the words will do.
RETIRING_SUBJECT_OVERLAP = 1 / 3
# Embedding similarity (MiniLM) at which two claims, one saying something changed, are one
# subject whatever their words (`CHANGED_CLOSE`): set on the tuned pairs (bench/data/
# conflict_pairs.jsonl, the changed pairs the words missed: conflicts 0.52-0.66, a
# non-conflict 0.50), checked on the held-out and blind sets.
CHANGED_COSINE = 0.51


def _moves(new: Claim, old: MemoryItem) -> bool:
    """`new` says the time of what `old`, a to-do, is about changed (`DATED_TYPES`)."""
    return old.type in DATED_TYPES and old.validation != "retracted" and reschedules(new.item.content)


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
    if own_words_apart(a, b):
        return None
    if a.title and a.title == b.title:
        if a.content == b.content or a.adds or b.adds:  # one says it adds to the other
            return None
        # One title holds several notes ("Bedtimes: Leo goes to bed at 8" / "Mia goes to
        # bed at 9"): what the contents say decides; if they do not compare, the two are
        # only flagged (`MAY_UPDATE`), never taken as a correction.
        return _content_reason(a, b, cosine, one_subject) or MAY_UPDATE
    return _content_reason(a, b, cosine, one_subject)


def own_words_apart(a: Claim, b: Claim) -> bool:
    """Two people each speak of themselves (`Claim.of_writer`: "I work from home on
    Wednesdays" / "I work from home on Fridays", "My laptop is a ThinkPad" / "My laptop is a
    MacBook"): two subjects, never one, whatever the words share; at write time (a teammate's
    own words are not held against another's), at recall and in `/v1/conflicts` alike. What
    a group shares ("our release day") is one subject whoever says it; one person's own
    words, twice, are one subject too (a correction). Not when either's author is unknown or
    several people's (`claim.speaker`)."""
    if not (a.of_writer and b.of_writer):
        return False
    x, y = speaker(a.item), speaker(b.item)
    return x is not None and y is not None and x != y


def _content_reason(a: Claim, b: Claim, cosine: Cosine, one_subject: bool) -> str | None:
    """`conflict_reason` from what the two claims say (their titles' words included)."""
    if _ends(a, b) or _ends(b, a) or _back_from(a, b) or _back_from(b, a) or _left(a, b) or _left(b, a):
        return "same subject, one says it ended"
    if _denies(a, b):
        return DENIES
    if _values_disagree(a, b, one_subject) and not ((a.adds or b.adds) and not _retires(a, b)):
        if one_subject or _same_subject(a, b, cosine, _retires(a, b) or _unit_differs(a, b)):
            return SAME_SUBJECT
    if _may_have_changed(a, b):
        if callable(cosine):
            cosine = cosine()
        if cosine is not None and cosine >= CHANGED_COSINE:
            return CHANGED_CLOSE
    return None


def _may_have_changed(a: Claim, b: Claim) -> bool:
    """What the words allow of `CHANGED_CLOSE`, asked before the cosine: one says something
    changed (`Claim.changes`), neither adds, their contents differ, and they say different
    things (not both values with one set holding the other's, unless one retires the other's
    value), not of two things (values in the titles, what they measure, `_qualified_apart`)."""
    if (a.changes is None and b.changes is None) or a.adds or b.adds or a.content == b.content:
        return False
    if a.title_values and b.title_values and a.title_values != b.title_values:
        return False
    if a.measured and b.measured and a.measured != b.measured:
        return False
    if a.values and b.values and (a.values <= b.values or b.values <= a.values) and not _retires(a, b):
        return False
    return not _qualified_apart(a, b)


def says_it_changed(new: Claim, old: Claim) -> bool:
    """`new` states that something `old` states changed, in a phrase of its own (`_PHRASE`:
    "Offsite got moved to October", "cancelled netflix, we only have disney+ now"): one
    that says something changed (`_CHANGED`) and does not deny it ("I won't quit"), and
    names, the words of the change, small talk, light verbs ("get", "made") and whom it
    addresses left out, a word or value `old` says; both in statements, not questions
    (`_statements`: "Are you only trying dairy-free options?" states nothing that could
    change). A phrase whose only change word is "now" says when, not that anything changed
    ("I feel like a different person now"): it counts when its sentence states a value `old`
    does not ("Dr. Okafor is our family doctor now"). A sentence that says it corrects
    (`CORRECTING`: "Turns out ...", "Scratch that, ...", "is actually") is one phrase, its
    every word said of the change."""
    if new.changes is None:
        return False
    old_said = frozenset(_STEMS(words(" ".join([old.item.title, *_statements(old.item.content)]))))
    old_words = (old.words | _value_stems(old.values) | _value_stems(old.retired)) & old_said
    for sentence in _statements(new.item.content):
        # a sentence that says it corrects ("Scratch that, retro is on Thursday", "the
        # deadline is actually Friday") says so of all it names: one phrase of it
        correcting = CORRECTING.search(sentence)
        phrases = [sentence] if correcting else [m.group(0) for m in _PHRASE.finditer(sentence)]
        for text in phrases:
            changes = [m for m in _CHANGED.finditer(text) if not _denied_change(text, m)]
            if not changes and not correcting:
                continue
            moved = [w for m in changes for w in words(_change_said(m))]
            named = set(_STEMS([w for w in words(text) if w not in CLAIM_STOPWORDS and w not in SMALL_TALK
                                and w not in _LIGHT_VERBS]))
            if not (named - set(_STEMS(moved))) & old_words:
                continue
            # "now" alone counts with a value `old` does not state, in the phrase or the
            # sentence ("We moved to York and live there now" / "We live in Leeds")
            if correcting or set(moved) != {"now"} or stated_values(sentence) - old.values:
                return True
    return False


def _statements(content: str) -> list[str]:
    """The sentences of `content` that state something (`_stance`), not questions, with
    whom they address left out."""
    stated = _unaddressed(_stance(content))
    return [m.group(0) for m in _CLAUSE.finditer(stated) if not stated.startswith("?", m.end())]


def _denied_change(text: str, change: re.Match[str]) -> bool:
    """A negation right before the change word, or one word before it, denies the change
    ("I won't quit", "Don't ever quit", "didn't change"); not one that "any more" needs to say
    the change ("I don't smoke anymore")."""
    return (_NEGATED_BEFORE.search(text, 0, change.start()) is not None
            and not words(change.group(0))[0].startswith("any"))


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


def _back_from(a: Claim, b: Claim) -> bool:
    """`a` says its one is back where `b` says the same one is away from (`ABSENCES`: "I'm
    back in the office from Monday" / "I work remotely", "I'm on parental leave"): the
    absence `b` states ended, under any title. The same one: both speak of the writer
    alone, or both name the same person and nobody else; neither denies what it says."""
    if not a.returns & b.away or a.negated or b.negated:
        return False
    return (a.of_writer and b.of_writer) or (bool(a.persons) and a.persons == b.persons)


def _left(a: Claim, b: Claim) -> bool:
    """`a` says its one is now away from where `b` says the same one is (`PRESENCES`: "I
    work remotely now" / "I commute to the office daily"): the presence `b` states ended, as
    a return ends an absence (`_back_from`); `a` must say it changed (`Claim.changes`: a
    standing "I work remotely" beside "I'm in the office on Tuesdays" may be a mix)."""
    if a.changes is None or not a.away or a.negated or b.negated:
        return False
    left = a.away & present(_stance(b.item.content))
    # not a mix: "I work from home now, except Tuesdays when I go into the office"
    if not left or any(PRESENCES[n][0].search(a.item.content) for n in left):
        return False
    return (a.of_writer and b.of_writer) or (bool(a.persons) and a.persons == b.persons)


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
    if names_only(a.values) and numbers_only(b.values) or names_only(b.values) and numbers_only(a.values):
        return False  # "Acme's account manager" / "card 4111 1111 ...": two sorts of thing said
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
    other never says while the other speaks of the writer (`of_two_people`: "My passport expires in 2029" /
    "Ben's passport expires in 2031"; not "Prod runs ..." / "We run ..."). Across scopes
    the qualifier is mostly the scope itself ("for this experiment" / "in orion" / "across
    the company"): one subject, which scope priority orders (the broader stay shown)."""
    if a.item.scope.kind != b.item.scope.kind:
        return False
    return (bool((a.qualifiers | a.named) - b.words) and bool((b.qualifiers | b.named) - a.words)
            or _two_items(a, b)
            or of_two_people(a, b))


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
    if _changed_count_of(a, b) or _changed_count_of(b, a):
        return True
    if _placed_apart(a, b):
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
        moved = _change_words(_CHANGED, c.item.content)
        named = set(c.subject) - moved
        if moved and named and named <= other.words:
            return True
    return False


def _change_words(pattern: re.Pattern[str], content: str) -> set[str]:
    """The stems of the words saying that something changed (`_CHANGED`, `_RESCHEDULED`), what
    moved left out ("moved the weekly sync to Thursdays": "moved", "to", "Thursdays"; the
    sync is what the claim names)."""
    return set(_STEMS([w for m in pattern.finditer(_stance(content)) for w in words(_change_said(m))]))


def _change_said(m: re.Match[str]) -> str:
    """The words of a match of `_CHANGED` or `_RESCHEDULED` that say the change, without what
    moved (its group "moved": "moved the weekly sync to Thursdays": "moved to Thursdays")."""
    if not m.group("moved"):
        return m.group(0)
    return m.string[m.start():m.start("moved")] + " " + m.string[m.end("moved"):m.end()]


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


def _moved_within(a: Claim, b: Claim) -> bool:
    """Under two titles, `a` says that the time of what `b` names moved ("Dentist moved to
    Thursday" / "Dentist appointment on Tuesday at 3pm"): the words before its first value,
    those of the move left out, are among `b`'s (one is enough: a move names its subject
    short), and both state a day or a time. A move states only the new time, so the word
    count of `_subject_within` would never find its subject."""
    if a.title == b.title or not reschedules(a.content) or not (_times(a.values) and _times(b.values)):
        return False
    named = set(a.subject) - _change_words(_RESCHEDULED, a.content) - _MOVED_TO
    return bool(named) and named <= b.words and not (_title_words(a) - b.words and _title_words(b) - a.words)


# Words that say where a thing is, not what it is ("stays in", "is stored in", "goes to",
# titles "residency", "location", "region"): two claims placing one thing may word them apart.
_WHERE = frozenset(_STEMS(["stay", "stays", "stored", "store", "hosted", "host", "located", "location", "region",
                           "regions", "residency", "resides", "lives", "live", "goes", "go", "runs", "run",
                           "deployed", "deploy", "kept", "keep", "held", "hosting", "placed", "place", "where",
                           "zone", "moved", "move", "sits", "use", "uses", "used"]))


def _states_a_place(c: Claim) -> bool:
    """What `_placed_apart` needs of each claim alone: it names a place (`places`) and says
    where something is (`_WHERE`). Recall asks it once a claim, not once a pair."""
    return bool(c.words & _WHERE) and bool(places(c.values))


def _placed_apart(a: Claim, b: Claim) -> bool:
    """Under two titles, both put one thing in places that exclude each other (`places`: "All
    customer data stays in the EU" / "Customer data for the analytics replica is stored in
    the US (us-east-1)", "Use eu-central-1 for the analytics replica" / "The analytics
    replica goes to us-west-2"): both say where it is (`_WHERE`; a thing may reach or sell to
    many places), and what one names (two words at least, the words saying where left out)
    the other names too. Not when a place names what is placed ("EU customer data
    is hosted in eu-west-1" / "US customer data ...": two things, each in its place)."""
    a_places, b_places = places(a.values), places(b.values)
    if not a_places or not b_places or a_places & b_places or a.title == b.title:
        return False
    if not (a.words & _WHERE and b.words & _WHERE):  # where it is, not where it reaches ("We ship to the EU")
        return False
    if _place_qualifies(a, a_places) or _place_qualifies(b, b_places):
        return False
    a_named = a.words - _WHERE - _value_stems(a_places)
    b_named = b.words - _WHERE - _value_stems(b_places)
    least = min(a_named, b_named, key=len)
    return len(least) >= 2 and (a_named <= b_named or b_named <= a_named)


def _place_qualifies(c: Claim, placed: frozenset[str]) -> bool:
    """A place of `c` is written right before a word that is no stopword ("EU customers")."""
    for place in placed:
        for m in re.finditer(rf"(?<![\w-]){re.escape(place)}\s+([A-Za-z]+)", c.item.content, re.IGNORECASE):
            if m.group(0)[:len(place)] != "us" and m.group(1).lower() not in CLAIM_STOPWORDS:
                return True
    return False


def _changed_count_of(a: Claim, b: Claim) -> bool:
    """`a` says it changed to a count of what `b` names before its value, in `b`'s unit ("We
    moved to 3-week sprints" / "Sprints are two weeks long"): a change names what it changed
    short, as a move does (`_moved_within`), the words of the change left out; and both
    count in one unit, as "sprints" is counted in weeks by both."""
    if a.changes is None or not b.subject or not a.units & b.units:
        return False
    counted = {thing for _, thing in _counted(a.item.content)}
    return bool(counted & set(b.subject))


def _counted_alike_across_scopes(a: Claim, b: Claim) -> bool:
    """In two scope kinds, both count the same thing in one unit, differently ("The atlas
    codebase uses 4-space indentation" / "Priya prefers 2-space indentation"): one subject,
    which scope priority orders (each scope's own words, "atlas codebase", "Priya prefers",
    are mostly the scope). In one scope kind, two counts may be two things ("a 2-hour
    planning meeting" / "a 1-hour retro meeting"), so this does not make one subject there."""
    return (a.item.scope.kind != b.item.scope.kind and _unit_differs(a, b)
            and bool(_counted(a.item.content) & _counted(b.item.content)))


def says_the_same(a: Claim, b: Claim) -> bool:
    """Two claims say one thing: the same values (or none), most of their words alike (two
    at least), neither denying what the other says ("I work remotely" / "Actually, I work
    remotely"), of one person (`of_two_people`). What tells two plans with no value apart
    from one plan said twice for different days (`capture.takes_over`, their time words left out)."""
    shared, overlap = _overlap(a.words, b.words)
    return (a.values == b.values and a.negated == b.negated and shared >= 2 and overlap >= SUBJECT_OVERLAP
            and not of_two_people(a, b))


def of_two_people(a: Claim, b: Claim) -> bool:
    """One names someone the other never says, while the other speaks of the writer or names
    someone else ("Tom works remotely from Wednesday" / "I work remotely"): two people's, the
    one neither a plan nor an update of the other's (`capture.takes_over`)."""
    return any(x.persons - y.words and (y.first_person or y.of_writer or y.persons - x.words)
               for x, y in ((a, b), (b, a)))


def supersedes(a: MemoryItem, b: MemoryItem) -> bool:
    """`a` declares that it replaces `b`."""
    return any(link.rel == "supersedes" and link.to == b.id for link in a.links) or b.superseded_by == a.id


def _updates(new: Claim, old: Claim) -> bool:
    """Under one title, `new` says something changed and what: a value of the kind `old`
    states, or (stating none) something `old` said beyond the title ("ci moved to github
    actions, jenkins is gone" / "we run ci on jenkins"); not when each names whom it is about
    and they name nobody in common (`Claim.named`). Or it restates a wish in other terms
    (`_revises`)."""
    changes = new.changes if new.changes is not None else _began(new)
    if changes is None:
        return _revises(new, old)
    if new.named and old.named and not new.named & old.named:  # "Milo switched ..." / "Luna eats ..."
        return False
    if stands_in(new, old):
        return False
    # "standup is at 10am now" / "Daily standup is at 9:30"; not 5 kg / 200 g
    if new.values and (old.values or stated_values(_SINCE_WHEN.sub(" ", _stance(new.item.content)))):
        # A version counts in its name's unit ("PostgreSQL 16"): a name, for this test
        # ("now runs on CockroachDB" / "uses PostgreSQL 16").
        new_units, old_units = new.units - new.values, old.units - old.values
        # a day the time of which is left unsaid moves it ("moved to Thursday" / "Tuesday at 3pm")
        return (bool(old.values) and _values_disagree(new, old, one_subject=True)
                and (bool(new_units & old_units) or not (new_units or old_units - _CLOCK_UNITS)))
    # Stating none, or only when it began ("Priya eats fish again since March" / "Priya is
    # vegetarian": a standing state changed; not "Priya ate fish on Monday", one day's event,
    # whose day is a value the older, stating none, does not compare with)
    return bool(changes & old.words)


def stands_in(new: Claim, old: Claim) -> bool:
    """`new` holds for one occasion ("This week I'm going at 7pm instead", "On Dec 24 support
    closes at 2pm") where `old` states a habit or a standing rule, naming no occasion nor
    date ("I go to the gym at 6am on weekdays", "Support covers 8am-8pm"): a stand-in beside
    it, which does not correct it (a write neither replaces nor holds it; recall shows both,
    flagged). Not a move ("Dentist moved to the 12th of May": `reschedules`)."""
    if _ONE_OCCASION.search(_stance(new.item.content)) is None or _ONE_OCCASION.search(old.item.content):
        return False
    if reschedules(new.item.content) or _HABIT.search(new.item.content):
        return False
    return _HABIT.search(old.item.content) is not None or not _dated(old)


def _dated(c: Claim) -> bool:
    """`c` states a date or a day ("2026-12-24", "14 march", "tuesday")."""
    return any(_DATE.fullmatch(v) or v in _WHEN_NAMES or v.split(" ", 1)[-1] in MONTH_STEMS
               for v in c.values | c.retired)


def _began(new: Claim) -> frozenset[str] | None:
    """Like `Claim.changes`, for a claim that says a state began, or began anew (`_BEGAN`:
    "again", "started", "since March"): its words beyond its title's; else None."""
    return new.words - _title_words(new) if _BEGAN.search(_DONE_AGAIN.sub(" ", _stance(new.item.content))) else None


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
