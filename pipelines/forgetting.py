"""What forgetting a memory does to the raw chat turns: the one rule the service's delta,
consolidation and `loci export` apply alike.

When a user forgets (retracts) a claim, the turns that said it are forgotten with it (set
`retracted`: kept with their history, never recalled, a tombstone in an export): the
exchange a chat proposal came from (`episodic.answered_turn`) and any turn said before the
retraction that states it (`conflicts.restates`). A turn is indexed with its neighbours as
retrieval context (`message_context`), so each neighbour quoting a forgotten turn (or a
turn its speaker forgot, `memory.forget` on the turn itself) gets its context without it
(`context_without`): else searching for the forgotten words still finds the neighbour (it
never showed them, but it was found by them). Later turns' contexts leave forgotten turns
out (`message_context.build_context`). The turns of a proxy round whose tool call forgot
something (the user's "please forget X", the model's "done") name what it forgot
(`materialize.FORGOT`) and land forgotten (`item_from_turn`, the fold every view shares):
a forgotten turn to this rule like any other. A chat loop forgetting through `memory.forget`
names its round's turns itself (`turn_ids`, `materialize.FORGOT_TURNS`): they are forgotten
with the memory once its forgetting holds (at once, or on a reviewer's approval), and what
else such a turn said (`kept_part`: "..., and remind me my passport expires in March") is
kept as a turn of its own.

Whatever shows the inbox folded over what is served (the service's delta; `loci stats` and
`loci list` while a run holds the warehouse; `loci show` of an item not consolidated yet)
folds it with `fold_served`, so a forgetting is applied there as in consolidation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import chain

import msgspec

from pipelines.materialize import WITHDRAWN, Overlay, fold_events, is_tombstone, message_item_id
from pipelines.message_context import context_without, with_context
from pipelines.recall.conflicts import CLAIM_TYPES, authors, restates
from pipelines.recall.episodic import answered_turn, said_stems
from pipelines.records import Event, MemoryItem, stable_id


def is_forgotten_claim(item: MemoryItem) -> bool:
    """A claim a user asked to forget (retracted), with its text (not an import's tombstone,
    nor a chat round's proposal withdrawn with its answer: `WITHDRAWN`)."""
    return (item.validation == "retracted" and item.type in CLAIM_TYPES and not is_tombstone(item)
            and not item.metadata.get(WITHDRAWN))


def is_forgotten_turn(item: MemoryItem) -> bool:
    """A raw chat turn its speaker forgot (retracted), with its text."""
    return item.validation == "retracted" and item.type == "message" and not is_tombstone(item)


def is_forgotten(item: MemoryItem) -> bool:
    """A claim or a raw turn a user asked to forget: what `forget_turns` reads."""
    return is_forgotten_claim(item) or is_forgotten_turn(item)


def newly_forgotten(after: Iterable[MemoryItem], before: Callable[[str], MemoryItem | None]) -> list[MemoryItem]:
    """The claims and turns among `after` (new versions) forgotten by them: their version
    `before` (by id; None when new) was not."""
    return [it for it in after if is_forgotten(it)
            and not ((old := before(it.id)) is not None and old.validation == "retracted")]


def owners(forgotten: Iterable[MemoryItem]) -> set[tuple[str, str]]:
    """(org, user) of whoever said the `forgotten` claims (`authors`) or turns: whose turns
    forgetting them reads. Another user's turns are their own record, never changed by
    someone's forgetting (recall still leaves out one of them that restates a forgotten
    claim it meets)."""
    return {(c.scope.org_id, who) for c in forgotten
            for who in ((c.scope.user_id,) if c.type == "message" else authors(c))}


def turns_saying(claims: Iterable[MemoryItem], turns: Iterable[MemoryItem]) -> set[str]:
    """Ids of the raw chat turns among `turns` (not yet forgotten) that said the forgotten
    `claims`, each among its `owners`' turns: the exchange a chat proposal came from (the
    turn that proposed it and the user turn it came from, `answered_turn`) and any turn said
    before the retraction that states it (`restates`): what recall never shows either."""
    every = [t for t in turns if t.type == "message" and t.validation != "retracted"]
    by_id = {t.id: t for t in every}
    hidden: set[str] = set()
    for claim in claims:
        mine = owners([claim])
        turns = [t for t in every if (t.scope.org_id, t.scope.user_id) in mine]
        said = by_id.get(message_item_id(claim.provenance.source_id))
        if said is not None and claim.provenance.source_kind == "chat":
            hidden.add(said.id)
            audience = said.scope.audience_key()
            answered = answered_turn(said, claim, (t for t in turns if t.scope.audience_key() == audience))
            if answered is not None:
                hidden.add(answered.id)
        # Only a turn sharing a word with it can restate it (reading a turn's claim is regex work).
        stems = said_stems(f"{claim.title} {claim.content}")
        hidden.update(t.id for t in turns if not stems.isdisjoint(said_stems(t.content) | said_stems(t.title))
                      and restates(t, claim))
    return hidden


def forget_turns(forgotten: Iterable[MemoryItem], turns: Iterable[MemoryItem]) -> dict[str, MemoryItem]:
    """What forgetting the `forgotten` claims and turns changes among the raw `turns` (their
    `owners`' messages; any other item is passed over): {id: its new version}, the turns
    that said the claims retracted (`turns_saying`) and each other turn whose retrieval
    context quoted a forgotten turn, without it."""
    forgotten = list(forgotten)
    claims = [c for c in forgotten if c.type != "message"]
    direct = {t.id: t for t in forgotten if t.type == "message"}
    mine = owners(forgotten)
    turns = [t for t in turns if t.type == "message" and (t.scope.org_id, t.scope.user_id) in mine]
    if not forgotten or not turns:
        return {}
    hidden = turns_saying(claims, turns) if claims else set()
    said = [t for t in turns if t.id in hidden and t.id not in direct]
    out = {t.id: msgspec.structs.replace(t, validation="retracted") for t in said}
    gone = [*said, *direct.values()]
    if gone:
        for turn in turns:
            fields = None if turn.id in hidden or turn.id in direct else context_without(turn, gone)
            if fields is not None:
                out[turn.id] = msgspec.structs.replace(turn, metadata=with_context(turn.metadata, fields))
    return out


def with_forgetting(made: Mapping[str, MemoryItem], before: Callable[[str], MemoryItem | None],
                    served: Callable[[set[tuple[str, str]]], Iterable[MemoryItem]]) -> Mapping[str, MemoryItem]:
    """Items an inbox fold `made` over what is served (the service's delta), with what the
    claims they forget change among the turns (`forget_turns`): `before` finds an item's
    served version by id, `served(owners)` the served turns of those (org, user)."""
    forgotten = newly_forgotten(made.values(), before)
    if not forgotten:
        return made
    return {**made, **forget_turns(forgotten, served(owners(forgotten)))}


def fold_served(events: Iterable[Event], base: Callable[[str], MemoryItem | None],
                served: Callable[[], Iterable[MemoryItem]],
                retired: Callable[[str], MemoryItem | None] = lambda _id: None,
                known_links: Callable[[], Iterable[tuple[str, str, str]]] = tuple,
                ) -> tuple[Overlay, Mapping[str, MemoryItem]]:
    """Inbox `events` folded over what is served, as every view of the inbox folds them: the
    overlay (`fold_events`) and the items it makes with what it forgets applied to the served
    turns (`with_forgetting`). `base` finds an item's served version by id; `served()` gives
    the served items, a later copy of an id winning (read only when the fold forgets);
    `retired(id)` an item no longer served, as last published, and `known_links()` the links
    made by what is served besides (`fold_events`)."""
    overlay = fold_events(events, base=base, retired=retired, known_links=known_links)

    def owned_turns(who: set[tuple[str, str]]) -> Iterable[MemoryItem]:
        turns: dict[str, MemoryItem] = {}
        for item in chain(served(), overlay.items.values()):
            if item.type == "message" and (item.scope.org_id, item.scope.user_id) in who:
                turns[item.id] = item
        return turns.values()

    return overlay, with_forgetting(overlay.items, base, owned_turns)


# The pieces a turn is read in for `kept_part`: sentences, and the clauses a comma, a
# semicolon or an "and"/"but" joins (kept pieces are joined back as said, so "Tom and Jerry"
# stays whole).
_PIECE_BREAK = re.compile(r"((?<=[.!?])\s+|\s*[,;]\s*(?:(?:and|but)\s+)?|\s+(?:and|but)\s+)", re.I)
_ASKS_TO_FORGET = re.compile(r"\b(?:forget|forgets|forgot|forgotten|delete|deleted|erase|erased|wipe|wiped)\b",
                             re.I)
# A request's own words ("please remind me", "note that"): shared with a forgotten memory,
# they do not make a clause speak of it.
_REQUEST_STEMS = frozenset({"pleas", "remind", "rememb", "note", "keep", "save", "also", "tell"})
KEPT_MIN_STEMS = 3  # fewer ("that's private", "Done") says nothing worth keeping on its own


def kept_part(text: str, forgotten: Iterable[MemoryItem]) -> str:
    """What a turn of a round that forgot `forgotten` said besides: its clauses that neither
    ask to forget nor share a word with what was forgotten, joined back as said ("" when
    what is left says fewer than `KEPT_MIN_STEMS` words worth a stem). "Forget my dentist
    appointment, and remind me my passport expires in March" keeps "remind me my passport
    expires in March"; "Please forget my dentist appointment, that's private." keeps nothing."""
    gone = frozenset().union(*(said_stems(f"{it.title} {it.content}") for it in forgotten)) - _REQUEST_STEMS
    parts = _PIECE_BREAK.split(text)
    runs: list[str] = []
    run = ""
    for index in range(0, len(parts), 2):
        piece = parts[index]
        dropped = bool(_ASKS_TO_FORGET.search(piece)) or not gone.isdisjoint(said_stems(piece))
        if dropped or not piece.strip():
            if run:
                runs.append(run)
            run = ""
            continue
        run = f"{run}{parts[index - 1]}{piece}" if run else piece
    if run:
        runs.append(run)
    kept = [r.strip(" ,;") for r in runs if len(said_stems(r)) >= KEPT_MIN_STEMS]
    return " ".join(kept)


# A user's request to forget something of their own, said in a chat ("please forget my ex's
# address", "can you delete what I told you about my salary"): an order, opening its clause
# or after "please", "can you"; the words after it, to the clause's end, name what. "Forget
# it" or "forget about the weather" names nothing of theirs; "don't forget my mom's
# birthday" and "I always forget my keys" ask for nothing to be forgotten.
_FORGET_MINE = re.compile(
    r"(?:^|[.!?;,:]\s*|\b(?:please|pls|kindly|just|and|(?:can|could|would|will)\s+you)\s+)"
    r"(?:forget|delete|erase|wipe)\s+(?:about\s+)?(?:(?:what|everything)\s+I\s+(?:said|told\s+you)\s+"
    r"(?:about\s+)?)?(?:my|me)\b([^.!?;,]*)", re.I)


def forget_request_subject(text: str) -> frozenset[str]:
    """The stems of what a user's turn asks to forget of their own (empty when it asks none):
    an imported chat's "please forget my ex's address" forgets the earlier turns and claims
    of the same user that say all of them (`ingest.ingest_chat_jsonl`)."""
    named = (said_stems(m.group(1)) for m in _FORGET_MINE.finditer(text))
    return frozenset().union(*named) - _REQUEST_STEMS


_JSON_OPEN = re.compile(r'\{\s*"')
_JSON = json.JSONDecoder()


def said_words(text: str) -> str:
    """A turn's words as a request to forget reads them (`forget_request_subject` against
    `said_stems`): a JSON object in it (a tool call an assistant's text shows, `{"name":
    "memory_search", "arguments": {"query": "my ex's address"}}`) counts by its string values
    alone, so "please forget my name" does not name every turn that shows a tool call."""
    out, pos = [], 0
    for m in _JSON_OPEN.finditer(text):
        if m.start() < pos:
            continue
        try:
            value, end = _JSON.raw_decode(text, m.start())
        except ValueError:
            continue
        out += [text[pos:m.start()], " ".join(_strings(value))]
        pos = end
    return "".join(out) + text[pos:] if out else text


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def kept_turn_id(turn_id: str) -> str:
    """The turn id of what turn `turn_id` said besides a forgetting (`kept_part`), one per
    turn: a second forget of its round reads that turn in its place."""
    return stable_id("turn", "kept", turn_id)
