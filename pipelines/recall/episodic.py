"""Raw chat turns (`message` items) in recall: evidence of what was said, not governed facts.

- Some turns carry nothing to recall: acknowledgements and greetings ("ok", "thanks!",
  "hello!"), promises to comply that name nothing ("Sure, I'll use that!"), turns without
  a single content word, and earlier copies of the question being asked now. They are
  never recall candidates (`CandidateSearch.not_admitted`).
- A turn that limits itself to the chat it was said in ("for this chat, answer in French")
  is not a candidate in another chat (`for_another_chat`).
- A turn said in another project than the one asking (a second book, another repository)
  is not a candidate there either (`for_another_project`): a turn is its speaker's, in
  every project, but it is evidence of the work it was said about. Curated user-scope
  memory (preferences) still holds in every project; turns captured before turns recorded
  their project count everywhere, as before.
- The turn a `memory.propose` call lands to carry its proposals (`proposal_carrier_text`:
  "[memory.propose] 2 item(s) proposed through the tool API") records that a tool was
  called, not anything said: it is never a candidate (an MCP agent's every proposal made
  one, listed as evidence beside what the user said).
- Of several turns with the same text, only the best-ranked one is kept.
- A turn that only asks states nothing: it may be catalogued, never injected. Nor is a turn
  whose own words share none with the query: it was found through its retrieval context.
- Asked what is known about them ("what do you know about me?"), the caller is shown, after
  their curated memories and when those are few, the turns in their own voice that state
  something of themselves (`said_by_the_user`, `stated_of_self`): the most telling few,
  the latest first, as what was said. A clause whose secret was masked when the turn was
  stored ("my wifi password is [REDACTED]") states nothing that may be shown (`unmasked`).
- How much a turn states (`stated_words`) can lift it a little (`RecallOptions.w_stated`,
  off: measured on LoCoMo, it does not carry over to conversations it was not tuned on).
- A turn is shown with a real title: who said it, when, and the gist of what was said.
- Of two turns of one speaker that the conflict rule reads as saying different things of
  one subject (`says_otherwise`), the later is shown first and the earlier marked as said
  earlier (`recall.deliver`): "the release slipped to Tuesday" said a week after "the
  release is on Friday". Both stay shown, each with its date: two events of one subject
  ("hiking on Saturday" / "hiking on Sunday") read alike, and each is still evidence.
- A turn a claim was said in (the turn that proposed it and the user turn it answered) that
  a curated correction replaced since is marked as said earlier, naming the correction, and
  shown after it (`replaced_by`): "We decided: Porto for the offsite" once "Change of plan:
  Lisbon" was kept. The conflict rule need not read the two alike: the correction says
  which claims it replaced, and each claim where it was said.
- A curated claim its own author (or the one who approved it) said otherwise of in a later
  turn no memory was kept from ("Actually swim is back to Tuesdays", weeks after "Swim is on
  Thursdays" was stored) is marked as said otherwise later, quoting that turn, not yet
  confirmed (`said_later_otherwise`): the claim still leads, as curated, but no longer reads
  as unchallenged. A question ("is swim still on Thursdays?"), an assistant's guess or a turn
  said before the claim marks nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime, tzinfo
from functools import lru_cache
from typing import Any
from weakref import WeakKeyDictionary

import msgspec
import numpy as np

from pipelines.first_person import FIRST_PERSON_SINGULAR
from pipelines.materialize import in_quarantine, replaced_turns, said_in
from pipelines.policy_rules.findings import REDACTED, REDACTION_MARKER
from pipelines.records import MemoryItem, parse_time

from .conflicts import DENIES, MAY_UPDATE, MONTH_STEMS, Claim, authors, conflict_reason, read_claim, restates
from .conflicts.patterns import _HABIT
from .conflicts.patterns import _STEMS as _CLAIM_STEMS
from .conflicts.rule import _values_disagree, reschedules, stands_in
from .dates import MONTHS, WEEKDAYS
from .lexical import SMALL_TALK, STOPWORDS, Stems, tokenize, words

GIST_CHARS = 60
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+")
_BRACKETED = re.compile(r"\[[^\]]*\]")


def is_message(item: MemoryItem) -> bool:
    return item.type == "message"


_CARRIER = re.compile(r"\[memory\.propose\] \d+ item\(s\) proposed through the tool API")


def proposal_carrier_text(count: int) -> str:
    """The text of the system turn a `memory.propose` call lands with its proposals."""
    return f"[memory.propose] {count} item(s) proposed through the tool API"


def is_proposal_carrier(item: MemoryItem) -> bool:
    """A `memory.propose` call's carrier turn (`proposal_carrier_text`), not conversation."""
    return (is_message(item) and item.metadata.get("role") == "system"
            and _CARRIER.fullmatch(item.content) is not None)


# How many of the session's user turns before a proposal the exchange rule looks back over.
ANSWER_LOOKBACK = 3


def answered_turn(said: MemoryItem, claim: MemoryItem, items: Iterable[MemoryItem]) -> MemoryItem | None:
    """The user turn the proposal `claim`, made in the assistant (or tool-call carrier) turn
    `said`, came from: among `items`, of the same session's last ANSWER_LOOKBACK user turns
    before `said` (by inbox sequence), the latest sharing a word (as stems) with the claim,
    however differently worded otherwise ("Note this: the key's under the flowerpot" for
    "Spare key: The spare key is under the blue flowerpot"). A user turn in between that
    shares none ("what's the weather?") is another subject, and is not hidden with it. When
    none shares a word ("yes, save that"), privacy first: the latest user turn before it,
    as the proposal answered it. None without a user turn before it."""
    session, seq = said.metadata.get("session_id"), said.metadata.get("inbox_seq")
    if not isinstance(seq, int):
        return None
    before = sorted((it for it in items
                     if isinstance(it.metadata.get("inbox_seq"), int) and it.metadata["inbox_seq"] < seq
                     and it.type == "message" and it.metadata.get("role") == "user"
                     and it.metadata.get("session_id") == session),
                    key=lambda it: it.metadata["inbox_seq"], reverse=True)[:ANSWER_LOOKBACK]
    claimed = said_stems(f"{claim.title} {claim.content}")
    return next((t for t in before if not said_stems(t.content).isdisjoint(claimed)),
                before[0] if before else None)


def is_small_talk(text: str) -> bool:
    """Only acknowledgement, greeting and filler words (or no word at all)."""
    toks = words(text)
    return all(t in SMALL_TALK or t in STOPWORDS for t in toks)


def _sentences(text: str) -> list[str]:
    return [p.strip() for p in _SENTENCE_END.split(text.strip()) if p.strip()]


def only_asks(item: MemoryItem) -> bool:
    """A raw turn that only asks (every sentence a question, or small talk around one:
    "Thanks! And when is Anna's birthday again?"): it shows what someone wanted to know, not
    anything that was said to be so, so it is no evidence."""
    return is_message(item) and _asks_only(item.content)


# Kept per text: every recall asks it of each raw turn among its candidates, and the same
# turns come back recall after recall (a few MB at most).
@lru_cache(maxsize=1 << 16)
def _asks_only(text: str) -> bool:
    sentences = _sentences(text)
    return (any(p.endswith("?") for p in sentences)
            and all(p.endswith("?") or is_small_talk(p) for p in sentences))


@lru_cache(maxsize=1 << 16)
def _states_nothing(text: str) -> bool:
    return _asks_only(text) or is_small_talk(text)


def states_nothing(item: MemoryItem) -> bool:
    """A raw turn that states nothing: it only asks ("What was my dentist's name again?")
    or is small talk ("ok thanks"). It is no evidence of anything: recall gives it as no hit,
    in the block or the catalog (`deliver`), nor `memory.search`, which gives recall's hits."""
    return is_message(item) and _states_nothing(item.content)


_STEMS = Stems()


def says_something_asked(item: MemoryItem, query_terms: Sequence[str]) -> bool:
    """Whether a raw turn's own words (not its retrieval context) include a word of the
    query (compared as stems). A turn found only through its context ("Understood.", "Doing
    well, thanks!" next to the turn that matters) shows nothing when injected on its own:
    its neighbour, which says it, is the evidence."""
    if not is_message(item) or not query_terms:
        return True
    return not said_stems(item.content).isdisjoint(_STEMS(query_terms))


def states_the_new_value(turn: MemoryItem, correction: MemoryItem) -> bool:
    """Whether the raw `turn` states the value the claim `correction` holds now: it affirms
    a value, and every value it affirms the correction affirms too (as stems: "Actually the
    team meeting moved to Thursday" for "The team meeting is on Thursdays now, not
    Tuesdays"). Such a turn is evidence of the correction, never what it replaced."""
    said, fix = read_claim(turn), read_claim(correction)
    affirmed = frozenset(_STEMS(sorted(said.values - said.retired)))
    return bool(affirmed) and affirmed <= frozenset(_STEMS(sorted(fix.values - fix.retired)))


@lru_cache(maxsize=65536)
def said_stems(text: str) -> frozenset[str]:
    """Stems of a turn's words, read once: a recall asks of each turn it delivers twice (what
    is injected, and what counts as withheld)."""
    return frozenset(_STEMS(tokenize(text)))


@lru_cache(maxsize=65536)
def stated_words(text: str) -> int:
    """How many words the text states: the words of its sentences that are not questions."""
    return sum(len(p.split()) for p in _sentences(text) if not p.endswith("?"))


@lru_cache(maxsize=65536)
def stated_of_self(text: str) -> int:
    """How many words the text states of its writer: the words of its sentences that are not
    questions and speak in the first person singular ("I'm allergic to penicillin", "My
    sister Lena moved to Porto"), less their clauses that held a secret (`unmasked`); 0: it
    says nothing of the writer."""
    stated = 0
    for sentence in _sentences(text):
        if not sentence.endswith("?"):
            said = unmasked(sentence)
            if not FIRST_PERSON_SINGULAR.isdisjoint(words(said)):
                stated += len(said.split())
    return stated


_CLAUSE_BREAK = re.compile(r"(?<=[,;:])\s+|\s+(?=(?:and|but|so|because)\s)", re.IGNORECASE)


def unmasked(sentence: str) -> str:
    """The sentence without its clauses that held a secret, masked when the turn was stored
    ("My wifi password is [REDACTED] by the way" leaves nothing): what such a clause states is
    the secret, which is never shown, so it tells nothing of its writer."""
    if REDACTION_MARKER.search(sentence) is None:
        return sentence
    clauses = _CLAUSE_BREAK.split(REDACTION_MARKER.sub(REDACTED, sentence))  # (a marker's own commas)
    return " ".join(c for c in clauses if REDACTED not in c)


@lru_cache(maxsize=65536)
def named_words(text: str) -> frozenset[str]:
    """The capitalised words inside the sentences the text states (lower-cased): the names
    it gives ("We watched Little Women", "I finally beat Valorant", "Thanks, Mel!"). A
    sentence's first word, questions ("Do you play, Melanie?") and bracketed text (a shared
    photo's caption) are left out."""
    names = set()
    for sentence in _sentences(_BRACKETED.sub(" ", text)):
        if not sentence.endswith("?"):
            names.update(m.group().lower() for m in _CAPITALISED.finditer(sentence) if m.start() > 0)
    return frozenset(names)


_THIS_CHAT = re.compile(r"\b(?:(?:for|in|during)\s+(?:this|the\s+current)\s+(?:chat|conversation|thread|session)"
                        r"|(?:this|the\s+current)\s+(?:chat|conversation|thread|session)\s+only)\b", re.IGNORECASE)


@lru_cache(maxsize=65536)
def limits_to_its_chat(text: str) -> bool:
    """The text says it holds for the chat it is said in ("for this chat", "in this
    conversation", "this thread only")."""
    return _THIS_CHAT.search(text) is not None


def for_another_chat(item: MemoryItem, session_id: str) -> bool:
    """A raw turn that limits what it says to the chat it was said in ("For this chat,
    answer in French"), said in another chat than `session_id`: not evidence there."""
    said_in = item.metadata.get("session_id")
    return (is_message(item) and isinstance(said_in, str) and said_in != session_id
            and limits_to_its_chat(item.content))


def for_another_project(item: MemoryItem, project_id: str) -> bool:
    """A raw turn said in another project than `project_id`: not evidence there."""
    said_in = item.metadata.get("project_id")
    return is_message(item) and isinstance(said_in, str) and said_in != project_id


def speaker_of(item: MemoryItem) -> str:
    role = str(item.metadata.get("role") or "")
    speaker = item.title.strip() or role or "someone"
    if role and speaker.lower() != role.lower() and role != "user":
        return f"{speaker} ({role})"
    return speaker


def said_by_the_user(item: MemoryItem) -> bool:
    """A raw turn in the caller's own voice: the user role under no other speaker's name (an
    imported conversation names its other speakers; `loci import --speaker` leaves the
    importer's own turns unnamed)."""
    return is_message(item) and item.metadata.get("role") == "user" and speaker_of(item) == "user"


def said_time(item: MemoryItem) -> datetime | None:
    """When a turn was said (its validity start, else its provenance's or its own time)."""
    return parse_time(item.valid_from) or parse_time(item.provenance.created_at) or parse_time(item.created_at)


def said_date(item: MemoryItem, zone: tzinfo | None = None) -> date | None:
    """The day a turn was said (`said_time`), on the calendar of `zone` (else UTC's)."""
    when = said_time(item)
    return (when.astimezone(zone) if zone else when).date() if when else None


def said_otherwise_by(turns: Sequence[MemoryItem]) -> dict[str, list[str]]:
    """For each raw turn of `turns` that a later one of its speaker among them says
    otherwise of (`says_otherwise`), the ids of those later turns, the latest first. Each
    turn's claim is read once: a recall asks this of every pair of the turns it injects."""
    said = [(t, speaker_of(t), when) for t in turns if is_message(t) and (when := said_time(t)) is not None]
    claims: dict[str, Claim] = {}

    def claim(turn: MemoryItem) -> Claim:
        if turn.id not in claims:  # a turn's title is its speaker, not a subject
            claims[turn.id] = read_claim(msgspec.structs.replace(turn, title=""))
        return claims[turn.id]

    out: dict[str, list[str]] = {}
    for earlier, speaker, at in said:
        later = sorted(((when, t.id) for t, who, when in said
                        if who == speaker and when > at and _otherwise(claim(t), claim(earlier))), reverse=True)
        if later:
            out[earlier.id] = [i for _, i in later]
    return out


class _Replaced:
    """One corpus's corrections naming the turns the claims they replaced were said in
    (`materialize.REPLACED_TURNS`), read once per corpus (`replaced_in`): `named`, each
    proposing turn -> the correction rows; `resolved()`, those turns and the user turns they
    answered among this corpus's own (complete for the oldest corpus, the snapshot: what a
    consolidated correction replaced was said before it, and consolidated with it); the
    user turns by chat, read when first asked for."""

    def __init__(self, corpus: Any) -> None:
        self.corpus = corpus
        self.named: dict[str, list[int]] = {}
        for row in corpus.correction_rows().tolist():
            for turn_id in replaced_turns(corpus.items[row]):
                self.named.setdefault(turn_id, []).append(row)
        self._resolved: dict[str, list[int]] | None = None
        self._chats: dict[tuple[tuple[str, ...], str], list[MemoryItem]] | None = None

    def resolved(self) -> dict[str, list[int]]:
        if self._resolved is None:
            out = {turn_id: list(rows) for turn_id, rows in self.named.items()}
            for turn_id, rows in self.named.items():
                row = self.corpus.row_of.get(turn_id)
                for fix in rows if row is not None else ():
                    answered = answered_by(self.corpus.items[row], self.corpus.items[fix], [self])
                    if answered is not None:
                        out.setdefault(answered.id, []).append(fix)
            self._resolved = out
        return self._resolved

    def chat(self, said: MemoryItem) -> list[MemoryItem]:
        """The user turns of this corpus said in the chat of `said`."""
        if self._chats is None:
            chats: dict[tuple[tuple[str, ...], str], list[MemoryItem]] = {}
            for row in np.flatnonzero(self.corpus.active).tolist():
                it = self.corpus.items[row]
                if is_message(it) and it.metadata.get("role") == "user":
                    chats.setdefault((it.scope.audience_key(), str(it.metadata.get("session_id"))), []).append(it)
            self._chats = chats
        return self._chats.get((said.scope.audience_key(), str(said.metadata.get("session_id"))), [])


def answered_by(said: MemoryItem, fix: MemoryItem, corpora: Iterable[_Replaced]) -> MemoryItem | None:
    """The user turn, among those of `corpora`, the proposing turn `said` answered
    (`answered_turn`, read against the correction `fix`); None when `said` is the user's own."""
    if not is_message(said) or said.metadata.get("role") == "user":
        return None
    return answered_turn(said, fix, [t for c in corpora for t in c.chat(said)])


_REPLACED: WeakKeyDictionary[Any, _Replaced] = WeakKeyDictionary()


def replaced_in(corpus: Any) -> _Replaced:
    found = _REPLACED.get(corpus)
    if found is None:
        found = _REPLACED[corpus] = _Replaced(corpus)
    return found


def replaced_by(view: Any, turns: Iterable[MemoryItem]) -> dict[str, list[str]]:
    """For each raw turn of `turns` that a claim a curated correction replaced since was said
    in (`materialize.REPLACED_TURNS`: the turn that proposed it, and the user turn that one
    answered), the ids of the corrections the caller may see, the latest first. `view`: the
    recall's `candidates.VisibleCorpora` (oldest corpus first: the snapshot, then the delta's).
    Read once per corpus (`replaced_in`); on asking, a lookup per turn in the snapshot, and the
    delta's few corrections, whose turns an older corpus may hold."""
    shown = {t.id: t for t in turns if is_message(t)}
    if not shown:
        return {}
    out: dict[str, dict[str, MemoryItem]] = {}

    def mark(turn_id: str, ci: int, rows: Iterable[int]) -> None:
        c = view.corpora[ci]
        fixes = [c.items[row] for row in rows if view.allowed[ci][row]]
        fixes = [f for f in fixes if f.validation != "retracted" and not in_quarantine(f)]
        if fixes:
            out.setdefault(turn_id, {}).update((f.id, f) for f in fixes)

    for ci, c in enumerate(view.corpora):
        replaced = replaced_in(c)
        if ci == 0:
            resolved = replaced.resolved()
            for turn_id in shown.keys() & resolved.keys():
                mark(turn_id, ci, resolved[turn_id])
            continue
        older = [replaced_in(view.corpora[j]) for j in range(ci + 1)]
        for turn_id, rows in replaced.named.items():
            if turn_id in shown:
                mark(turn_id, ci, rows)
            said = next((o.corpus.items[row] for o in reversed(older)
                         if (row := o.corpus.row_of.get(turn_id)) is not None), None)
            if said is None or not any(_said_before_in_its_chat(t, said) for t in shown.values()):
                continue
            for row in rows:
                answered = answered_by(said, c.items[row], older)
                if answered is not None and answered.id in shown:
                    mark(answered.id, ci, [row])
    return {turn_id: [f.id for f in sorted(fixes.values(), key=lambda f: f.created_at, reverse=True)]
            for turn_id, fixes in out.items()}


def _said_before_in_its_chat(turn: MemoryItem, said: MemoryItem) -> bool:
    seq, before = said.metadata.get("inbox_seq"), turn.metadata.get("inbox_seq")
    return (turn.metadata.get("role") == "user" and turn.metadata.get("session_id") == said.metadata.get("session_id")
            and isinstance(seq, int) and isinstance(before, int) and before < seq)


def _otherwise(new: Claim, old: Claim) -> bool:
    reason = conflict_reason(new, old)
    if reason == DENIES:
        # Only a later denial takes back what was said ("I'm not going after all"): a
        # negation in an earlier, chattier turn is often about something else ("dairy-free
        # for people who can't have lactose" / "I made it lactose-free", on LoCoMo).
        return new.negated
    if reason is None or reason == MAY_UPDATE:
        return False
    return not _another_time(new, old)


# When a thing happens: a weekday, a month, a date, a time of day, a day of a month.
_WHEN_UNITS = frozenset({"am", "pm", "th", "st", "nd", "rd", "h", "oclock"}) | MONTH_STEMS
_WEEKDAYS = frozenset(WEEKDAYS)
_WHEN_WORD = re.compile(
    r"\b(?:(?:mon|tues|wednes|thurs|fri|satur|sun)days?|"
    + "|".join(sorted((m for m in MONTHS if len(m) > 3), key=len, reverse=True))
    + r"|\d{4}-\d\d|\d{1,2}(?::\d\d|\s*(?:am|pm)\b|st|nd|rd|th))", re.IGNORECASE)
_ISO_DAY = re.compile(r"\d{4}-\d\d")
_WRITER_ACTS = re.compile(r"\b(?:i|we)\b", re.IGNORECASE)  # "I'm going hiking", "we met Sam"
_DEFINITE = re.compile(r"\b(?:the|my|our|his|her|their|your|this|that)\b", re.IGNORECASE)  # "the release", "my flight"


def _when(value: str) -> bool:
    head, _, unit = value.partition(" ")
    return (value in _WEEKDAYS or value in MONTH_STEMS or value in MONTHS or _ISO_DAY.match(value) is not None
            or (head[:1].isdigit() and (":" in head or unit in _WHEN_UNITS)))


def _another_time(new: Claim, old: Claim) -> bool:
    """Two turns that differ only in when (a day, a date, a time; a bare number counts as
    the day of a month either names) tell of two events, not a correction, unless the
    later says something changed (`Claim.changes`: "slipped", "moved", "now"), names the
    earlier time as replaced ("not Saturday"), or the earlier speaks of one definite thing
    and not of what the speaker does: "The billing-api release is on Friday" then "... on
    Tuesday" corrects it; "I'm going hiking on Saturday" then "... on Sunday" are two
    hikes, as are "I met Sam for lunch on Tuesday" and "... for coffee on Thursday"."""
    if new.changes is not None or new.retired & old.values:
        return False
    differ = new.values ^ old.values
    if not differ:
        return False
    dated = any(_when(v) and not v.isdigit() for v in new.values | old.values)
    if not all(_when(v) or (dated and v.isdigit()) for v in differ):
        return False
    head = _WHEN_WORD.split(old.item.content, 1)[0]
    return _WRITER_ACTS.search(head) is not None or _DEFINITE.search(head) is None


def says_otherwise(later: MemoryItem, earlier: MemoryItem) -> bool:
    """Whether the raw turn `later`, said after `earlier` by the same speaker, says of one
    subject something else by the conflict rule (`conflicts.conflict_reason`: different
    values, an ending, or a denial when the later one denies). The two are compared without
    their titles: a turn's title is its speaker, and two turns of one speaker would
    otherwise share a title, every pair "may update" each other."""
    return later.id in said_otherwise_by([earlier, later]).get(earlier.id, ())


def said_later_otherwise(claims: Sequence[MemoryItem], turns: Sequence[MemoryItem],
                         curated: Iterable[MemoryItem] = ()) -> dict[str, list[MemoryItem]]:
    """For each curated claim of `claims`, the raw turns of `turns` (the latest first) in
    which, after it was stored, its author or its approver said otherwise of it in the user's
    own voice (`said_by_the_user`) and no memory was kept of it: not a turn a curated item of
    `claims` or `curated` was said in (`materialize.said_in`), nor one restating a curated item
    stored after it (`conflicts.restates`). Only what the turn states counts (its questions
    are left out: "is swim still on Thursdays?" asks, it says nothing). Otherwise: the
    conflict rule reads the two as saying different things of one subject (`_otherwise`),
    or, a short turn naming little of the subject, it says that something changed or
    corrects ("Actually swim is back to Tuesdays"), states a value the claim's disagrees
    with, and shares with it a word of the subject that is no name (`_elliptic_otherwise`)."""
    said = [(t, when) for t in turns if said_by_the_user(t) and not in_quarantine(t) and t.validation != "retracted"
            and (when := said_time(t)) is not None and not _states_nothing(t.content)]
    kept = [c for c in claims if not is_message(c) and c.validation != "retracted"]
    if not said or not kept:  # most recalls (LoCoMo's every one): no curated claim, or no turn
        return {}
    every = [*kept, *(c for c in curated if not is_message(c))]
    evidence = {t for c in every for t in said_in(c)}
    out: dict[str, list[MemoryItem]] = {}
    for claim in kept:
        stored = parse_time(claim.created_at)
        who = authors(claim) | _approver(claim)
        if stored is None:
            continue
        later = [(when, t) for t, when in said if when > stored and t.scope.user_id in who
                 and t.id not in evidence and _says_otherwise_of(t, claim)
                 and not any(restates(t, c) for c in every
                             if c.id != claim.id and (at := parse_time(c.created_at)) is not None and at >= when)]
        if later:
            out[claim.id] = [t for _, t in sorted(later, key=lambda p: p[0], reverse=True)]
    return out


def _approver(claim: MemoryItem) -> frozenset[str]:
    review = claim.metadata.get("review")
    by = review.get("by") if isinstance(review, dict) and review.get("decision") == "approve" else None
    return frozenset((str(by),)) if by else frozenset()


def _says_otherwise_of(turn: MemoryItem, claim: MemoryItem) -> bool:
    stated = " ".join(p for p in _sentences(turn.content) if not p.endswith("?"))
    if not stated:
        return False
    new, old = read_claim(msgspec.structs.replace(turn, title="", content=stated)), read_claim(claim)
    if stands_in(new, old) or _one_day_only(stated):
        return False  # "This week swim is on Friday instead", "No swim this Thursday": beside it
    return _otherwise(new, old) or _elliptic_otherwise(new, old)


# A day the turn speaks of alone ("this Thursday", "tomorrow", "tonight"): with no habit
# ("Tuesdays", "every week") and no move ("moved to"), it is one occasion, not a change.
_ONE_DAY = re.compile(
    r"\b(?:(?:this|next|coming)\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day|tomorrow|today|tonight)\b", re.IGNORECASE)


def _one_day_only(text: str) -> bool:
    return _ONE_DAY.search(text) is not None and not (reschedules(text) or _HABIT.search(text))


def _elliptic_otherwise(new: Claim, old: Claim) -> bool:
    """A short later turn that names little of what the claim is about: "Actually swim is
    back to Tuesdays" of "Swim schedule: Leo's swimming lessons are on Thursdays at 5pm". It
    says something changed or corrects (`Claim.changes`), or retires the claim's value; the
    two state values neither holds all of; and what it talks of besides its values, names and
    words of change is mostly the claim's: more words shared than not ("Leo has football on
    Tuesdays now", "Actually Leo's piano lessons are on Tuesdays" talk of another thing)."""
    if (new.changes is None and not new.retired & old.values) or not _values_disagree(new, old):
        return False
    valued = _CLAIM_STEMS(sorted(new.values | old.values))
    # (a name the claim says too is a word of what both talk of: "Swimming moved to Tuesdays")
    about = new.words - set(valued) - new.persons - (new.named - old.qualifiers) - _CHANGE_WORDS
    shared = about & old.words
    if not shared:
        return False
    if len(about - shared) < len(shared):
        return True
    # The thing the claim's title names, in other words ("his swim class" of "Swim schedule:
    # Leo's swimming lessons"): a word of the title its content repeats (`Claim.qualifiers`)
    # is shared, no more words are not, and the values that differ are of one sort, times
    # or not ("Leo's swim teacher is now Ana" tells another thing of it than when).
    return bool(shared & old.qualifiers) and len(about - shared) <= len(shared) and _one_sort(new, old)


def _one_sort(new: Claim, old: Claim) -> bool:
    """The values each states and the other does not are all times (`_when`), or none are."""
    sorts = {_when(v) or _when(v.removesuffix("s")) for v in new.values ^ old.values}  # "tuesdays": a habit's day
    return len(sorts) == 1


_CHANGE_WORDS = frozenset(_CLAIM_STEMS(["back", "actually", "again", "now", "instead", "moved", "changed", "still",
                                  "anymore", "longer", "switched"]))


def said_on(item: MemoryItem, zone: tzinfo | None = None) -> str:
    """The day a turn was said as the block and the catalog show it: the asker's (`zone`)."""
    day = said_date(item, zone)
    return day.isoformat() if day else "undated"


def gist(text: str, limit: int = GIST_CHARS) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] or flat[:limit]
    return cut + "…"


def turn_title(item: MemoryItem, zone: tzinfo | None = None) -> str:
    """`<speaker> on <date>: <gist>` for a raw turn (the day on `zone`'s calendar, else
    UTC's); a curated item keeps its own title."""
    if not is_message(item):
        return item.title
    return f"{speaker_of(item)} on {said_on(item, zone)}: {gist(item.content)}"


__all__ = ["SMALL_TALK", "for_another_chat", "gist", "is_message", "is_proposal_carrier",
           "is_small_talk", "limits_to_its_chat", "named_words", "said_later_otherwise",
           "only_asks", "proposal_carrier_text", "replaced_by",
           "said_by_the_user", "said_date", "said_on", "said_otherwise_by", "said_time", "says_otherwise",
           "says_something_asked", "speaker_of", "stated_of_self", "stated_words", "states_nothing",
           "states_the_new_value", "turn_title", "unmasked"]
