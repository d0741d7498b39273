"""A chat UI's edit of the user's last message, through the proxy's exchange engine (no
HTTP): the turn landed at its place and the answer to it are retracted as edited by the
user before the edit's own recall; a client that trims or summarises its history (messages
missing, none changed), a regenerated answer or another chat retracts nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from online.proxy.config import ProxyConfig
from online.proxy.dialects import CHAT
from online.proxy.edited import PlacedTurns
from online.proxy.exchange import Exchange
from online.state import MemoryService
from pipelines.materialize import message_item_id
from pipelines.records import Identity
from pipelines.settings import Settings

U1, U2, U2_EDITED = "Hi, I work on the billing service.", "We settled on Postgres 16.", "We settled on CockroachDB."
U3, U4 = "The deadline is in March.", "Which database did we settle on?"


@pytest.fixture()
def service(tmp_path: Path) -> Iterator[MemoryService]:
    svc = MemoryService(Settings(embedder="hash", data_dir=str(tmp_path)), check_interval_ms=0)
    yield svc
    svc.close()


def chat(*texts: str) -> list[dict[str, str]]:
    """User and assistant messages in turn."""
    return [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(texts)]


class Chat:
    def __init__(self, service: MemoryService, session: str = "s1") -> None:
        self.service, self.placed = service, PlacedTurns()
        self.who = Identity(user_id="lea", session_id=session)

    def say(self, messages: list[dict[str, str]], reply: str = "Noted.") -> tuple[dict, str]:
        """One exchange: (its `loci` field, the system text the model got)."""
        ex = Exchange(self.service, self.service.settings, ProxyConfig(), self.who, CHAT,
                      {"model": "m", "messages": messages}, placed=self.placed)
        sent = ex.prepare()
        ex.after_round(sent, reply, reply, [])
        system = "\n".join(m["content"] for m in sent["messages"] if m["role"] == "system")
        return ex.finish(reply), system

    def retracted(self) -> list[str]:
        return [e.payload["item_id"] for e in self.service.inbox.read_after(0)
                if e.kind == "memory.update" and e.payload.get("patch") == {"validation": "retracted"}]


def test_an_edited_last_message_retracts_the_turn_it_replaced_before_recall(service: MemoryService) -> None:
    lea = Chat(service)
    lea.say(chat(U1))
    first, _ = lea.say(chat(U1, "Noted.", U2), reply="Postgres 16 it is.")
    again, _ = lea.say(chat(U1, "Noted.", U2), reply="Postgres 16, noted.")  # regenerated: nothing retracted
    assert lea.retracted() == [] and "edited_away" not in again
    old = [message_item_id(first["turn_ids"][k]) for k in ("user", "assistant")] + \
        [message_item_id(again["turn_ids"]["assistant"])]
    edited, system = lea.say(chat(U1, "Noted.", U2_EDITED))
    assert sorted(edited["edited_away"]) == sorted(old)
    assert "Postgres 16" not in system  # the edit's own recall no longer finds the replaced words
    view = service.view()
    assert all(view.get(i).validation == "retracted" for i in old)
    assert view.get(message_item_id(edited["turn_ids"]["user"])).content == U2_EDITED
    reasons = [e.payload["verdict"]["reasons"] for e in service.inbox.read_after(0)
               if e.kind == "memory.update" and e.payload.get("edited")]
    assert len(reasons) == 3 and all("edited by the user" in r[0] for r in reasons)
    _, later = lea.say(chat(U1, "Noted.", U2_EDITED, "Noted.", U4))
    assert "Postgres 16" not in later
    assert len(lea.retracted()) == 3  # nothing more: the edit is the latest turn at its place now


@pytest.mark.parametrize("trimmed", [
    chat(U1, "Noted.", U3, "Noted.", U4),  # the middle exchange dropped, the first kept
    chat(U2, "Noted.", U3, "Noted.", U4),  # trimmed from the front
    chat(U1, "Noted.", U4),  # the first exchange and the last message kept
    [{"role": "system", "content": "Summary: Lea works on billing; Postgres 16."}, *chat(U3, "Noted.", U4)],
])
def test_a_client_trimming_or_summarising_its_history_retracts_nothing(service: MemoryService,
                                                                      trimmed: list[dict[str, str]]) -> None:
    lea = Chat(service)
    for n in (1, 3, 5):
        lea.say(chat(U1, "Noted.", U2, "Noted.", U3)[:n])
    loci, _ = lea.say(trimmed)
    assert "edited_away" not in loci and lea.retracted() == []


def test_another_chat_with_the_same_start_retracts_nothing(service: MemoryService) -> None:
    lea, other = Chat(service, "s1"), Chat(service, "s2")
    lea.say(chat(U1, "Noted.", U2))
    other.placed = lea.placed  # one proxy: its chats share the record, each under its own identity
    loci, _ = other.say(chat(U1, "Noted.", U2_EDITED))
    assert "edited_away" not in loci and lea.retracted() == []
