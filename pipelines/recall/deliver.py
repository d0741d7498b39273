"""The last stage of recall: what is injected within the token budget, what is catalogued,
and the hits in the order the caller is shown them. Modes: `inject` (the block only),
`catalog` (the catalog only), `hybrid` (the block, and the rest catalogued) and `auto` (the
block when the query found a claim confident enough to inject, else the catalog).

Claims below `confidence_threshold` are never injected (they may be catalogued, flagged
`low_confidence`). Raw chat turns are evidence of what was said, not claims: they use
`message_confidence_threshold` and go in the block's own excerpts part, after the curated
memories. A turn that states nothing (it only asks, "What was my dentist's name again?", or
is small talk: `episodic.states_nothing`) is no hit at all, injected or catalogued; a turn
whose own words share none with the query is not injected (it was found through its
context, and alone it shows nothing). A curated memory stored twice in one scope with the
same title and content is shown once. Injected hits are listed in block order
(curated, then turns). A claim held in quarantine is never delivered (it waits for a reviewer),
nor named as a conflict: a delivered claim it contradicts says instead that a change to it
is awaiting review, as one with an edit held beside it does (`render.pending_note`: in
the block, the catalog and the hit, never what the change would say). A claim held for
contradicting a delivered one is found from it (`VisibleCorpora.held_against`), whatever
the query found. Of two injected turns of one speaker the later of which says otherwise
(`episodic.says_otherwise`), the later is shown first and the earlier marked as said
earlier (`later_first`). A turn a claim was said in that a curated correction replaced since
(`episodic.replaced_by`) is marked as said earlier, naming the correction, and comes after
it (`after_corrections`): the correction is what holds, the turn what was said then.
A curated claim its author said otherwise of in a later turn no memory was kept of
(`episodic.said_later_otherwise`: "Actually swim is back to Tuesdays") still leads, and is
marked SAID_LATER quoting that turn, in the block, the catalog and the hit (`said_later`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

import msgspec

from pipelines.materialize import in_quarantine, pending_changes
from pipelines.records import MemoryItem, parse_time

from .candidates import Candidate
from .conflicts import CORRECTED
from .episodic import (
    is_message,
    said_later_otherwise,
    said_otherwise_by,
    said_stems,
    said_time,
    says_something_asked,
    states_nothing,
)
from .lexical import normalise_label
from .render import (
    Deferred,
    Entry,
    catalog,
    catalog_entry,
    format_entry,
    format_turn,
    least_length,
    pack_injection,
    pending_note,
)
from .select import FLAGGED

# Words of a replaced claim the correction does not say that a turn must repeat to be marked
# as saying it (one shared word, a house number, is too little to tell).
RESTATED_WORDS = 2


class Hit(msgspec.Struct, kw_only=True):
    item: MemoryItem
    score: float
    components: dict[str, float]
    source: str  # "snapshot" / "delta" (the corpus' source label)
    conflict: bool = False
    conflict_with: list[str] = []
    same_title: list[str] = []  # notes under its title it neither corrects nor contradicts (`related`)
    # confidence | recency | scope | ambiguous | related | flagged | superseded | corrected
    resolution: str | None = None
    delivery: str = "catalog"  # inject | catalog
    always: bool = False  # always-inject (importance)
    low_confidence: bool = False
    pending_review: str = ""  # `render.pending_note`: a change to it held for review
    window: str = ""  # its validity window at the time of asking: ENDED / UPCOMING / "" (`MemoryItem.window_state`)
    # a raw turn a claim was said in that curated corrections replaced since: their ids (`episodic.replaced_by`)
    replaced_by: list[str] = []
    # a curated claim its author said otherwise of in later turns no memory was kept of:
    # their ids, the latest first (`episodic.said_later_otherwise`)
    said_later: list[str] = []


HeldAgainst = Callable[[MemoryItem], Iterable[MemoryItem]]  # `VisibleCorpora.held_against`
# raw turns -> {turn id: the corrections that replaced a claim said in it} (`episodic.replaced_by`)
ReplacedBy = Callable[[Sequence[MemoryItem]], dict[str, list[str]]]


class _Held:
    """The claims held in quarantine among a recall's candidates: never delivered, nor
    named as a conflict; the delivered claims they contradict say a change waits. Those
    held for contradicting a delivered claim (`held_against`: their link to it) say so too,
    though the query did not find them."""

    def __init__(self, cands: Sequence[Candidate],
                 held_against: HeldAgainst = lambda _item: ()) -> None:
        self.items = {c.id: c.item for c in cands if in_quarantine(c.item)}
        self.held_against = held_against
        self._pending: dict[str, str] = {}  # a claim is asked up to three times (block, hit, catalog)

    def shown(self, ids: Sequence[str]) -> list[str]:
        return [i for i in ids if i not in self.items]

    def pending(self, c: Candidate) -> str:
        note = self._pending.get(c.id)
        if note is None:
            rivals = {i: self.items[i] for i in c.conflict_with if i in self.items}
            rivals.update((it.id, it) for it in self.held_against(c.item) if it.id not in rivals)
            note = self._pending[c.id] = pending_note(pending_changes(c.item, rivals.values()))
        return note


def _flagged_with(c: Candidate, held: _Held) -> list[str]:
    return held.shown(c.conflict_with) if c.resolution in FLAGGED else []


def _entry(c: Candidate, held: _Held, said_otherwise_by: Sequence[str] = (), now: datetime | None = None,
           replaced_by: Sequence[str] = (), said_later: Sequence[MemoryItem] = ()) -> Entry:
    if is_message(c.item):
        return Entry(c.id, format_turn(c.item, said_otherwise_by, now.tzinfo if now else None, replaced_by),
                     False, True)
    pending = held.pending(c)
    if c.resolution == "related":  # notes under one title, neither correcting the other
        related = held.shown(c.conflict_with)
        return Entry(c.id, format_entry(c.item, same_title=related, pending=pending, now=now, said_later=said_later),
                     bool(related))
    if c.resolution == CORRECTED:  # a note a correction of one detail left standing
        return Entry(c.id, format_entry(c.item, corrected_by=c.conflict_with, pending=pending, now=now,
                                        said_later=said_later), True)
    flagged = _flagged_with(c, held)
    scoped = c.resolution == "scope"
    return Entry(c.id, format_entry(c.item, flagged, scope=scoped, pending=pending, now=now, said_later=said_later),
                 bool(flagged) or scoped)


def _deferred(c: Candidate, held: _Held, said_otherwise_by: Sequence[str] = (), now: datetime | None = None,
              replaced_by: Sequence[str] = (), said_later: Sequence[MemoryItem] = ()) -> Deferred:
    """`_entry`, formatted only if packing tries it (about half a recall's shown candidates
    come after the block is full)."""
    return Deferred(lambda: _entry(c, held, said_otherwise_by, now, replaced_by, said_later),
                    least_length(c.item, is_message(c.item)), is_message(c.item))


def current_first(ordered: list[Candidate], now: datetime | None) -> list[Candidate]:
    """`ordered` with the claims whose validity window closed before `now` (a trip that is
    over, "until Friday" past Friday) after the rest, in their order: kept as history, they
    no longer answer before what holds now."""
    if now is None:
        return ordered
    state = {c.id: "" if is_message(c.item) else c.item.window_state(now) for c in ordered}
    out = [c for c in ordered if state[c.id] != "ENDED"]
    for later in [c for c in out if state[c.id] == "UPCOMING"]:
        # what holds now comes before what takes it over later on (the address until
        # November 30 before the one from December 1)
        at = out.index(later)
        holding = [n for n, c in enumerate(out) if n > at and state[c.id] == "" and not is_message(c.item)
                   and _taken_over(c.item, later.item)]
        if holding:
            out.insert(holding[-1], out.pop(at))
    return out + [c for c in ordered if state[c.id] == "ENDED"]


def _taken_over(now_item: MemoryItem, later: MemoryItem) -> bool:
    """`later` (holding from a day on) is on `now_item`'s subject: the same title, or
    `now_item` ends when it begins."""
    ends, starts = parse_time(now_item.valid_to), parse_time(later.valid_from)
    return (normalise_label(now_item.title) == normalise_label(later.title)
            or (ends is not None and starts is not None and timedelta(0) < starts - ends <= timedelta(seconds=1)))


def _hit(c: Candidate, delivery: str, low: bool, held: _Held, now: datetime | None = None,
         replaced_by: Sequence[str] = (), said_later: Sequence[MemoryItem] = ()) -> Hit:
    # A hit (for programs) names every claim contesting it, the held ones too.
    related = c.resolution == "related"
    return Hit(item=c.item, score=round(c.score, 6), components=c.components, source=c.source,
               conflict=bool(c.conflict_with) and not related, conflict_with=[] if related else list(c.conflict_with),
               same_title=list(c.conflict_with) if related else [],
               resolution=c.resolution, delivery=delivery, always=c.always, low_confidence=low,
               pending_review="" if is_message(c.item) else held.pending(c), window=c.item.window_state(now),
               replaced_by=list(replaced_by), said_later=[t.id for t in said_later])


def _once_each(ordered: list[Candidate]) -> list[Candidate]:
    """A curated memory stored twice in one scope with the same title and content (a model
    that repeats a proposal, before consolidation merges them) is shown once: the better
    ranked copy (the caller sees one scope of each kind, so the kind names it). Raw turns are
    left alone: the same words said on two dates are two pieces of evidence; so are the
    same words holding in two windows ("on call this week", said in two weeks)."""
    seen: set[tuple[str, str, str | None, str | None]] = set()
    out = []
    for c in ordered:
        key = (c.item.content_hash, c.item.scope.kind, c.item.valid_from, c.item.valid_to)
        if is_message(c.item) or key not in seen:
            seen.add(key)
            out.append(c)
    return out


def later_first(shown: list[Candidate], turn_ids: Iterable[str]) -> tuple[list[Candidate], dict[str, list[str]]]:
    """`shown` with each of the turns `turn_ids` (those injected) preceded by the injected
    turns that say otherwise of it, later said (`episodic.said_otherwise_by`), the latest
    first; and those turns' ids by the id of the earlier one. Only injected turns are
    compared (a handful): a turn left out cannot be pointed to."""
    by_id = {c.id: c for c in shown}
    later = said_otherwise_by([by_id[i].item for i in turn_ids if i in by_id and is_message(by_id[i].item)])
    if not later:
        return shown, {}
    out: list[Candidate] = []
    placed: set[str] = set()
    for c in shown:
        for first in [*(by_id[i] for i in later.get(c.id, ())), c]:
            if first.id not in placed:
                placed.add(first.id)
                out.append(first)
    return out, later


def after_corrections(ordered: list[Candidate], replaced: dict[str, list[str]]) -> list[Candidate]:
    """`ordered` with each turn `replaced` names (a claim said in it replaced since) placed
    right after the last of its corrections ranked after it: curated first, the turn as
    what was said."""
    if not replaced:
        return ordered
    out = list(ordered)
    for c in ordered:
        at = out.index(c)
        fixes = [n for n, other in enumerate(out) if n > at and other.id in replaced.get(c.id, ())]
        if fixes:
            out.insert(fixes[-1], out.pop(at))
    return out


def restating_replaced(ordered: Sequence[Candidate], pool: Iterable[Candidate]) -> dict[str, list[str]]:
    """The raw turns of `ordered` said before a curated correction among them that say what
    the claim it replaced said, in at least `RESTATED_WORDS` words the correction does not,
    and none of those the correction says anew ("regarding the flat at Rua Augusta 12",
    once the address is Rua das Flores 3): each
    turn's corrections, by turn id. The replaced claim is a conflict loser of the recall
    (`pool`). A turn it was proposed in is found by `episodic.replaced_by`; this finds the
    others that repeat it, which would otherwise show the old value unmarked."""
    replaced = [old for old in pool if old.suppressed == "superseded" and not is_message(old.item)]
    if not replaced:  # most recalls: nothing was read only to be found replaced
        return {}
    shown = {c.id: c for c in ordered if not is_message(c.item)}
    turns = [(c.id, said_stems(c.item.content), said_time(c.item)) for c in ordered if is_message(c.item)]
    out: dict[str, list[str]] = {}
    for old in replaced:
        for fix in (shown[i] for i in old.conflict_with if i in shown):
            since = parse_time(fix.item.created_at)
            was, now = said_stems(old.item.content), said_stems(f"{fix.item.title} {fix.item.content}")
            for turn_id, stems, said in turns:
                # one naming the new value ("the offsite moves to Lisbon, the Ribeira hotel is
                # fully booked") tells of the change: it is the correction's evidence
                if (since is not None and said is not None and said < since and stems.isdisjoint(now - was)
                        and len(stems & (was - now)) >= RESTATED_WORDS and fix.id not in out.get(turn_id, ())):
                    out.setdefault(turn_id, []).append(fix.id)
    return out


def shows_nothing_asked(item: MemoryItem, opts: Any, query_terms: Sequence[str], as_listed: bool = False) -> bool:
    """A raw turn that states nothing (`episodic.states_nothing`), or whose own words share
    none with the query (unless a channel listing answers lists it,
    `Candidate.answers_as_listed`): never injected."""
    return bool(opts.episodic) and (states_nothing(item)
                                    or not (as_listed or says_something_asked(item, query_terms)))


def deliver(ordered: list[Candidate], mode: str, opts: Any, settings: Any, query_terms: Sequence[str] = (),
            pool: Iterable[Candidate] = (), held_against: HeldAgainst = lambda _item: (),
            now: datetime | None = None, replaced_by: ReplacedBy = lambda _turns: {},
            ) -> tuple[list[Hit], str, dict[str, Any]]:
    """`pool`: every candidate of the search, those a conflict put out too (a held claim
    loses on confidence: it is looked up there to say what waits beside a delivered one);
    `held_against`: the held claims naming a claim as the one they contradict, candidates or not
    (`VisibleCorpora.held_against`); `now`: the time of asking, against which validity
    windows are read (`current_first`, `MemoryItem.window_state`); `replaced_by`: the
    corrections that replaced a claim said in each of some turns (`episodic.replaced_by`)."""
    # A claim held in quarantine waits for a reviewer: it may flag the claims it contests
    # (it took part in the conflict stage), but recall never returns it, injected, catalogued
    # or as a hit (`pipelines.materialize.recall_state`).
    held = _Held([*ordered, *pool], held_against)
    # A turn that states nothing is no evidence of anything: no hit, in any mode.
    ordered = [c for c in ordered if not (in_quarantine(c.item) or (opts.episodic and states_nothing(c.item)))]
    ordered = current_first(_once_each(ordered), now)
    replaced = replaced_by([c.item for c in ordered if is_message(c.item)])
    for turn_id, fixes in restating_replaced(ordered, pool).items():
        replaced[turn_id] = [*replaced.get(turn_id, ()), *(f for f in fixes if f not in replaced.get(turn_id, ()))]
    ordered = after_corrections(ordered, replaced)
    # curated claims said otherwise of later, in turns found with them (`said_later_otherwise`)
    later = said_later_otherwise([c.item for c in ordered if not is_message(c.item)],
                                 [c.item for c in ordered if is_message(c.item)], (c.item for c in pool))

    def injectable(c: Candidate) -> bool:
        floor = (opts.message_confidence_threshold if is_message(c.item)
                 else settings.confidence_threshold)
        return c.item.confidence >= floor and c.item.validation != "retracted"

    injected: list[str] = []
    injection = ""
    if mode in ("inject", "hybrid", "auto"):
        shown = [c for c in ordered
                 if injectable(c) and not shows_nothing_asked(c.item, opts, query_terms, c.answers_as_listed)]
        injection, injected = pack_injection([_deferred(c, held, now=now, replaced_by=replaced.get(c.id, ()),
                                                        said_later=later.get(c.id, ()))
                                              for c in shown], settings.inject_budget_tokens)
        shown, said_otherwise_by = later_first(shown, injected)
        if said_otherwise_by:  # packed again: the earlier turns' marks take room
            injection, injected = pack_injection([_deferred(c, held, said_otherwise_by.get(c.id, ()), now,
                                                            replaced.get(c.id, ()), later.get(c.id, ()))
                                                  for c in shown],
                                                 settings.inject_budget_tokens)
    by_id = {c.id: c for c in ordered}
    if mode == "auto":
        # Q*'s "inject memory or return a catalog": the block when the search found a claim
        # confident enough for it (the rule above, inject mode's), the catalog otherwise. An
        # always-on memory alone is no answer to the query (`RecallEngine._result`).
        mode = "inject" if any(not by_id[i].always or by_id[i].ranks for i in injected) else "catalog"
        if mode == "catalog":
            injection, injected = "", []
    chosen = set(injected)
    in_block = ([by_id[i] for i in injected if not is_message(by_id[i].item)]
                + [by_id[i] for i in injected if is_message(by_id[i].item)])
    hits = [_hit(c, "inject", False, held, now, replaced.get(c.id, ()), later.get(c.id, ())) for c in in_block]
    entries: list[dict[str, Any]] = []
    if mode != "inject":
        for c in ordered:
            if c.id in chosen or len(entries) >= settings.catalog_k:
                continue
            low = not injectable(c)
            hits.append(_hit(c, "catalog", low, held, now, replaced.get(c.id, ()), later.get(c.id, ())))
            entries.append(catalog_entry(c.item, c.score, _flagged_with(c, held), low,
                                         same_title=held.shown(c.conflict_with) if c.resolution == "related" else (),
                                         corrected_by=(replaced.get(c.id, ()) if is_message(c.item) else
                                                       c.conflict_with if c.resolution == CORRECTED else ()),
                                         pending="" if is_message(c.item) else held.pending(c), now=now,
                                         said_later=later.get(c.id, ())))
    return hits, injection, catalog(entries)


__all__ = ["Hit", "after_corrections", "deliver", "shows_nothing_asked"]
