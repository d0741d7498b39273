"""A chat UI's edit of the user's last message: the chat's next request carries the same
conversation up to that message, and other words in its place. The turn the proxy landed
there (and the answers landed to it) is retracted as edited by the user before recall runs:
recalled, the replaced words would come back as something she still says.

The proxy's turn ids derive from the words (a regenerated answer lands nothing twice), so
the place each chat's latest user turn was landed at is kept beside them (`PlacedTurns`):
the message's index and a digest of the conversation before it. Conservative: only the
chat's latest user turn is read (a client that trims or summarises keeps the latest
messages; one keeping the first exchange and the last few would otherwise put a later
message at an earlier one's place, the conversation before it unchanged), only when the
conversation before it is unchanged and holds an earlier user message (a client trimming
from the front puts another message first). An edit of an older message, or after a
restart (kept in memory for the most recent chats), lands as a new turn, as before.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from online.state import MemoryService
from online.tools.shaping import verdict_out
from pipelines.materialize import message_item_id
from pipelines.records import Event, Identity, Verdict, sha256_text, stable_id, utcnow

MAX_CHATS = 10_000  # chats whose places are kept (as `online.state.ANSWERED_CHATS`)
EDITED_REASON = "edited by the user: the chat now says other words in this turn's place ({turn})"


@dataclass
class Placed:
    """A user turn landed at one place of a chat, and the answers landed to it."""

    index: int  # the message's index in the chat
    before: str  # digest of the conversation before it
    said: str  # sha256 of its text
    turn_id: str
    answers: list[str] = field(default_factory=list)


class PlacedTurns:
    """chat -> where its latest user turn was landed, the most recent `MAX_CHATS` chats."""

    def __init__(self, max_chats: int = MAX_CHATS) -> None:
        self.max_chats = max_chats
        self._chats: OrderedDict[str, Placed] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, chat: str, index: int, before: str, text: str, turn_id: str, answer_id: str | None) -> None:
        with self._lock:
            placed = self._chats.get(chat)
            if placed is None or placed.turn_id != turn_id:  # a regenerated answer: the same turn
                placed = self._chats[chat] = Placed(index, before, sha256_text(text), turn_id)
            self._chats.move_to_end(chat)
            if answer_id and answer_id not in placed.answers:
                placed.answers.append(answer_id)
            while len(self._chats) > self.max_chats:
                self._chats.popitem(last=False)

    def replaced(self, chat: str, messages: list[list[str]], digest_before: Callable[[int], str]) -> Placed | None:
        """The chat's latest user turn when `messages` ([role, text]) hold other words at its
        place, the conversation before it unchanged (`digest_before(index)`) and holding an
        earlier user message; else None."""
        with self._lock:
            placed = self._chats.get(chat)
        if placed is None or placed.index >= len(messages) or messages[placed.index][0] != "user":
            return None
        if sha256_text(messages[placed.index][1]) == placed.said:
            return None
        if not any(role == "user" for role, _ in messages[:placed.index]):
            return None
        return placed if digest_before(placed.index) == placed.before else None

    def forget(self, chat: str, turn_id: str) -> None:
        with self._lock:
            if chat in self._chats and self._chats[chat].turn_id == turn_id:
                del self._chats[chat]


def retract_edited(service: MemoryService, who: Identity, placed: Placed, now: str) -> list[str]:
    """Retract the replaced user turn and the answers landed to it (`now`: the turn id of
    the words at its place now), in one inbox batch, as `memory.forget`'s `turn_ids` are:
    `memory.update` events setting `retracted`, the verdict giving the reason. The ids of
    the message entries retracted (those already retracted, or gone, are passed over)."""
    view = service.view()
    at = utcnow()
    events, ids = [], []
    for turn_id in (placed.turn_id, *placed.answers):
        item = view.get(message_item_id(turn_id))
        if item is None or item.type != "message" or item.validation == "retracted" \
                or item.scope.user_id != who.user_id or item.id in ids:
            continue
        ids.append(item.id)
        events.append(Event(
            event_id=stable_id("evt", "memory.update", uuid.uuid4().hex), kind="memory.update",
            identity=who, at=at,
            payload={"item_id": item.id, "patch": {"validation": "retracted"}, "at": at,
                     "edited": {"turn_id": placed.turn_id, "replaced_by": now},
                     "verdict": verdict_out(Verdict(action="accept", reasons=[EDITED_REASON.format(turn=now)]))}))
    if events:
        service.append(events)
    return ids
