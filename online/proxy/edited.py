"""A chat UI's edit of an earlier user message: the chat's next request carries the same
conversation up to that message, and other words in its place. The turn the proxy landed
there (and the answers to it) is retracted as edited by the user before recall runs:
recalled, the replaced words would come back as something she still says.

The proxy's turn ids derive from the words (a regenerated answer lands nothing twice), so
the place a user turn was said at is kept beside them (`PlacedTurns`): the chat (identity,
dialect), the message's index and a digest of the conversation before it. Conservative: a
place counts only when the conversation before it is unchanged and holds an earlier user
message (a client that trims the history from the front puts another message first, which
is no edit); a message missing (trimmed, summarised) changes the conversation before every
later place, so nothing is retracted. Kept in memory for the most recent chats (after a
restart an edit lands as a new turn, as before)."""

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

    before: str  # digest of the conversation before it
    said: str  # sha256 of its text
    turn_id: str
    answers: list[str] = field(default_factory=list)


class PlacedTurns:
    """chat -> {message index -> the user turns landed there}, the most recent `MAX_CHATS` chats."""

    def __init__(self, max_chats: int = MAX_CHATS) -> None:
        self.max_chats = max_chats
        self._chats: OrderedDict[str, dict[int, dict[str, Placed]]] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, chat: str, index: int, before: str, text: str, turn_id: str, answer_id: str | None) -> None:
        with self._lock:
            places = self._chats.setdefault(chat, {})
            self._chats.move_to_end(chat)
            placed = places.setdefault(index, {}).setdefault(turn_id, Placed(before, sha256_text(text), turn_id))
            if answer_id and answer_id not in placed.answers:
                placed.answers.append(answer_id)
            while len(self._chats) > self.max_chats:
                self._chats.popitem(last=False)

    def replaced(self, chat: str, texts: dict[int, str], digest_before: Callable[[int], str]
                 ) -> list[tuple[int, Placed]]:
        """The turns landed at the user messages' places (`texts`: index -> the text there
        now) whose words differ, the conversation before them unchanged (`digest_before(index)`,
        asked only where the words differ)."""
        with self._lock:
            places = {i: list(self._chats.get(chat, {}).get(i, {}).values()) for i in texts}
        out = []
        for index, landed in places.items():
            said = sha256_text(texts[index])
            changed = [p for p in landed if p.said != said]
            if changed:
                now = digest_before(index)
                out += [(index, p) for p in changed if p.before == now]
        return out

    def forget(self, chat: str, index: int, turn_id: str) -> None:
        with self._lock:
            self._chats.get(chat, {}).get(index, {}).pop(turn_id, None)


def retract_edited(service: MemoryService, who: Identity, replaced: list[tuple[Placed, str]]) -> list[str]:
    """Retract each replaced user turn and the answers landed to it (`replaced`: (the turn,
    the turn now at its place)), in one inbox batch, as `memory.forget`'s `turn_ids` are:
    `memory.update` events setting `retracted`, the verdict giving the reason. The ids of
    the message entries retracted (those already retracted, or gone, are passed over)."""
    view = service.view()
    at = utcnow()
    events, ids = [], []
    for placed, now in replaced:
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
