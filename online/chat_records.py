"""What a chat door keeps about a chat in the inbox, so every process (a restart, another
`loci serve` worker, another proxy replica) reads the same: `audit` events under ids derived
from the chat (ids and hashes, never content), at numbered slots, read back by id
(`InboxBackend.get`). Slots fill in order, none skipped: the n-th record at one place is slot
n, and a writer that lost a slot to another process takes the next one.

Used by the proxy's chat rounds (`online.proxy.rounds`: edits, regenerations) and by the
service's capture (`MemoryService.capture`: the user turn an assistant turn answers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pipelines.records import Event, Identity, sha256_text, stable_id

if TYPE_CHECKING:
    from online.state import MemoryService

MAX_VERSIONS = 64  # records scanned from where a write starts looking: past that, none are kept

Slot = tuple[str, Callable[[int], tuple[str, ...]], dict, Callable[[dict], bool]]


def event_id(kind: str, *parts: str) -> str:
    return stable_id("evt", "audit", f"chat.{kind}", *parts)


def _slot(service: MemoryService, who: Identity, kind: str, parts: Callable[[int], tuple[str, ...]],
          payload: dict, same: Callable[[dict], bool], start: int = 0) -> tuple[Event, Callable[[dict], bool]] | None:
    """The record at the first free slot `n` from `start` (`parts(n)` its id's parts), and how
    to tell it stored; None when one `same` as it is stored already (a retry), or every slot is
    taken."""
    for n in range(start, start + MAX_VERSIONS):
        stored = service.inbox.get(event_id(kind, *parts(n)))
        if stored is None:
            return _event(who, kind, parts(n), payload), same
        if same(stored.payload):
            return None
    return None


def _event(who: Identity, kind: str, parts: tuple[str, ...], payload: dict) -> Event:
    ids = payload.get("result_ids", [])
    return Event(event_id=event_id(kind, *parts), kind="audit", identity=who,
                 payload={"action": f"chat.{kind}", "args_sha256": sha256_text("|".join(parts)),
                          "result_ids": ids, "result_count": len(ids), **payload})


def record(service: MemoryService, who: Identity, slots: list[Slot],
           start: Callable[[Slot], int] = lambda _: 0) -> None:
    """Append the records in one batch (each looked for from slot `start(spec)`); one whose slot
    another process took meanwhile (it comes back as stored, not as ours) is appended again at
    the next free slot."""
    for _ in range(MAX_VERSIONS):
        found = [(spec, got) for spec in slots if (got := _slot(service, who, *spec, start(spec))) is not None]
        if not found:
            return
        landed = service.append([event for _, (event, _) in found])
        slots = [spec for (spec, (_, same)), stored in zip(found, landed, strict=True) if not same(stored.payload)]


def versions(service: MemoryService, kind: str, *parts: str) -> list[dict]:
    """The records at one place (slots `parts` + n), oldest first, up to `MAX_VERSIONS`."""
    out = []
    for n in range(MAX_VERSIONS):
        stored = service.inbox.get(event_id(kind, *parts, str(n)))
        if stored is None:
            break
        out.append(stored.payload)
    return out


# Where each place's count was last seen (this process): only where to start reading, the
# inbox says whether it still holds (another process may have added records since).
_SEEN: dict[tuple[str, ...], int] = {}
SEEN_PLACES = 10_000


def newest(service: MemoryService, kind: str, *parts: str) -> tuple[int, dict | None]:
    """How many slots at one place hold a record, however many, and the newest record: two
    reads where this process saw it last, else doubling, then halving (about 2 log2 n reads)."""
    read: dict[int, dict] = {}

    def held(n: int) -> bool:
        stored = service.inbox.get(event_id(kind, *parts, str(n)))
        if stored is not None:
            read[n] = stored.payload
        return stored is not None

    place = (kind, *parts)
    seen = _SEEN.get(place, 0)
    if seen and held(seen - 1) and not held(seen):
        return seen, read[seen - 1]
    low = seen - 1 if seen and held(seen - 1) else -1
    if low < 0 and not held(0):
        return 0, None
    low, step = max(low, 0), 1
    high = low + step
    while held(high):
        low, step = high, step * 2
        high = low + step
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if held(mid) else (low, mid)
    _SEEN.pop(place, None)
    _SEEN[place] = high
    while len(_SEEN) > SEEN_PLACES:
        del _SEEN[next(iter(_SEEN))]
    return high, read[low]


def filled(service: MemoryService, kind: str, *parts: str) -> int:
    """How many slots at one place hold a record."""
    return newest(service, kind, *parts)[0]


# -- the user turn an assistant turn answers ----------------------------------------------------------


def _chat(who: Identity) -> tuple[str, str, str]:
    return who.user_id, who.project_id, who.session_id


def _asked(service: MemoryService, who: Identity, turn_id: str) -> tuple[Slot, int, bool]:
    """The record that `turn_id` is the chat's latest user turn (the chat: `who`'s user,
    project, session), the first free slot, and whether the newest record says it already
    (a retry)."""
    chat = _chat(who)
    count, last = newest(service, "asked", *chat)
    return (("asked", lambda n: (*chat, str(n)), {"result_ids": [turn_id], "turn_id": turn_id},
             lambda p: p.get("turn_id") == turn_id), count, last is not None and last.get("turn_id") == turn_id)


def _one_more(who: Identity) -> None:
    place = ("asked", *_chat(who))
    _SEEN[place] = _SEEN.get(place, 0) + 1  # where to start reading next: the inbox says


def record_asked(service: MemoryService, who: Identity, turn_id: str) -> None:
    """Record that `turn_id` is the chat's latest user turn."""
    spec, free, said = _asked(service, who, turn_id)
    if not said:
        record(service, who, [spec], start=lambda _: free)
        _one_more(who)


def appending_asked(service: MemoryService, who: Identity,
                    append: Callable[..., list[Event]]) -> Callable[..., list[Event]]:
    """`append` for a user turn's events (the turn event first) that lands, in the same
    transaction, the record that it is its chat's latest user turn."""
    def landing(events: list[Event], **kw: object) -> list[Event]:
        turn_id = str(events[0].payload["turn_id"])
        (kind, parts, payload, same), free, said = _asked(service, who, turn_id)
        if said:  # a retry: the newest record says it already
            return append(events, **kw)
        landed = append([*events, _event(who, kind, parts(free), payload)], **kw)
        if same(landed[-1].payload):
            _one_more(who)
        else:  # another process took the slot meanwhile: the next one
            record_asked(service, who, turn_id)
        return landed[: len(events)]
    return landing


def last_asked(service: MemoryService, who: Identity) -> str | None:
    """The id of the chat's latest user turn, or None."""
    found = newest(service, "asked", *_chat(who))[1]
    return str(found["turn_id"]) if found is not None else None
