"""Corrections at write time: which of the author's own claims a new claim replaces or corrects in part."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import NamedTuple

from pipelines.records import RETIRED_BY_USER, MemoryItem, Scope

from .claim import CLAIM_TYPES, DATED_TYPES, Claim, _read_claim, authors, is_claim, read_claim, replace_content
from .patterns import _MONTH_NAMES, _RETIRED
from .reasons import CHANGED, MAY_UPDATE, SAME_SUBJECT
from .rule import (
    Cosine,
    _may_have_changed,
    _moves,
    _updates,
    conflict_reason,
    names_a_case,
    says_it_changed,
    stands_in,
)
from .values import _stance, _value_stems, _value_words, _values, reschedules, stated_values


def proposed_claim(title: str, content: str, item_type: str, scope_kind: str = "project",
                   retiring: Sequence[str] = (), author: str = "") -> Claim | None:
    """The claim a proposal would make (None when its type is not a claim), to check it
    against stored claims before it is written; in the scope kind it will be written in
    (what tells two things of one kind apart holds within one kind, `_qualified_apart`).
    `retiring`: the clauses of the user's words it records that retire a value
    (`retired_by_evidence`, kept with the item as RETIRED_BY_USER). `author`: who proposes
    it (what they say of themselves is about them, `rule.own_words_apart`); "" when not known."""
    if item_type not in CLAIM_TYPES and not (item_type in DATED_TYPES and reschedules(content)):
        return None
    return read_claim(MemoryItem(id="\x00proposed", tier="stm", type=item_type,  # type: ignore[arg-type]
                                 title=title, content=content,
                                 scope=Scope(kind=scope_kind, user_id=author),  # type: ignore[arg-type]
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


# The cosine of a proposal's vector with a stored item's, None when either has none
# (`online.state.MemoryService.cosine_to`). Recall reads the cosine of two stored claims'
# vectors (`pairs._close`); a write, of the proposal's with each stored claim's: the rule
# (`conflict_reason`) takes either the same way, asked only when the words leave it open.
CosineTo = Callable[[MemoryItem], "float | None"]


def contradicted(new: Claim, existing: Iterable[MemoryItem],
                 cosine_to: CosineTo | None = None) -> Iterable[tuple[MemoryItem, str]]:
    """The active stored claims `new` conflicts with, and why; not one beside which it names
    a case, or that names one beside it (`names_a_case`), or stands in for one occasion
    (`stands_in`: "On Dec 24 support closes at 2pm"), nor one under the same title whose
    content it does not contradict (`MAY_UPDATE`) unless it says something changed
    (`CHANGED`, `Claim.changes`): neither corrects the other, nor is held for contradicting it
    (recall shows both, flagged). `cosine_to`: the cosine of `new`'s vector with a stored
    claim's, when there are vectors: the signals recall reads of it apply
    (`CHANGED_CLOSE`, `SUBJECT_COSINE`)."""
    for old in existing:
        if isinstance(old, MemoryItem) and old.active and (is_claim(old) or _moves(new, old)):
            claim = read_claim(old)
            reason = conflict_reason(new, claim, _cosine_asked(new, claim, old, cosine_to))
            if reason == MAY_UPDATE:
                if _updates(new, claim):
                    yield old, CHANGED
            elif reason and (not names_a_case(new, claim) or _moves(new, old)) and not stands_in(new, claim):
                # a plan's title names no case of it: "Dentist" moved "Dentist appointment"
                yield old, reason


def _cosine_asked(new: Claim, claim: Claim, old: MemoryItem, cosine_to: CosineTo | None) -> Cosine:
    """The cosine a write gives the rule for `old`: only when `new` itself states that
    something `old` states changed (`says_it_changed`: in a phrase naming it, not denied,
    not asked) and the rule may read one (`_may_have_changed`), and not under one title (the
    title says they are one subject; whether `new` replaces `old` is `_updates`'s call, as
    without vectors). A write replaces or holds, where recall only flags: closeness in
    meaning joins a proposal to what it corrects only on what the proposal says of it (on
    LoCoMo turns read as proposals against their speaker's nearest five turns, `bench
    conflicts --locomo`: 242 matches when any change word anywhere in the proposal counted,
    12 so; the labelled pairs' tp the same)."""
    if cosine_to is None or new.changes is None or (new.title and new.title == claim.title):
        return None
    return partial(cosine_to, old) if _may_have_changed(new, claim) and says_it_changed(new, claim) else None


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
                existing: Iterable[MemoryItem], evidence: Sequence[str] = (),
                cosine_to: CosineTo | None = None) -> Corrections:
    """The author's own claims (same user, same scope kind) that a new claim with this
    title and content conflicts with: the new claim corrects them and supersedes them, or,
    when it corrects a detail of a note that says more (`corrects_in_part`), links to them
    with `refines` and leaves them standing, where a contradiction of someone else's claim
    is left to the write policy. A merged claim is the author's own only when every member
    was (`authors`). `evidence`: what the user said that the claim records
    (`retired_by_evidence`). `cosine_to`: as `contradicted` takes it."""
    new = proposed_claim(title, content, item_type, scope_kind)
    if new is None:
        return Corrections([], [], [])
    retiring = retired_by_evidence(new, evidence)
    if retiring:
        new = proposed_claim(title, content, item_type, scope_kind, retiring)
    own = [old for old in existing if authors(old) == {author_user_id} and old.scope.kind == scope_kind]
    replaced, in_part = corrected(new, own, cosine_to)
    return Corrections(replaced, in_part, retiring)


def corrected(new: Claim, existing: Iterable[MemoryItem],
              cosine_to: CosineTo | None = None) -> tuple[list[str], list[str]]:
    """Ids of the claims among `existing` (those `new` may correct) that it replaces whole
    and those it corrects a detail of (`corrects_in_part`: linked with `refines`, they
    stay). The one place every door that corrects decides it: a write, a turn's proposal,
    an edit of what an item says, a reviewer's approval of a held claim or edit.
    `cosine_to`: as `contradicted` takes it."""
    replaced, in_part = [], []
    for old, reason in contradicted(new, existing, cosine_to):
        (in_part if reason == SAME_SUBJECT and corrects_in_part(new, read_claim(old)) else replaced).append(old.id)
    return sorted(replaced), sorted(in_part)


def corrected_by(title: str, content: str, item_type: str, scope_kind: str, author_user_id: str,
                 existing: Iterable[MemoryItem]) -> list[str]:
    """Ids of the author's own claims a new claim supersedes (`corrections`)."""
    return corrections(title, content, item_type, scope_kind, author_user_id, existing).replaced


# A clause or an apposition of a note: "The protagonist is Mara Quinn, a 29-year-old marine
# biologist" says two things ("3.11", "14:00" and "1,000" end none, nor does the comma of a
# date: "Friday, November 13", "March 3, 2027").
_DETAIL = re.compile(rf"(?:[^.,;:!?()]|[.,:](?=\d)|,(?=\s*(?:\d{{4}}\b|(?:{_MONTH_NAMES})\.?\s+\d)))+", re.IGNORECASE)


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
