"""A turn a claim was said in, that claim replaced by a curated correction since: the
correction keeps the turns (`materialize.REPLACED_TURNS`), recall marks them (`REPLACED_SINCE`)."""

from __future__ import annotations

import json

import pytest

from pipelines.capture import capture_turn
from pipelines.inbox import Inbox
from pipelines.materialize import REPLACED_TURNS, fold_events, message_item_id
from pipelines.policy import Policy
from pipelines.recall import MemoryCorpus, RecallEngine
from pipelines.recall.render import REPLACED_SINCE, SAID_EARLIER, format_turn
from pipelines.records import Identity, MemoryItem, Scope
from pipelines.settings import Settings

DANA = Identity(user_id="dana", project_id="atlas", session_id="s1")


def proposing(content: str) -> str:
    item = {"type": "decision", "title": "Team offsite", "content": content, "why_store": "decided"}
    return "Noted. <MEMORY_PROPOSALS_JSON>" + json.dumps([item]) + "</MEMORY_PROPOSALS_JSON>"


@pytest.fixture(scope="module")
def said(tmp_path_factory: pytest.TempPathFactory) -> dict[str, MemoryItem]:
    """Porto decided in chat s1 (after a turn about the offsite's budget), Lisbon in s2, then
    Braga in s3, each correcting the one before; every item as the fold leaves it."""
    with Inbox(tmp_path_factory.mktemp("replaced") / "inbox.sqlite3") as inbox:
        def exchange(session: str, n: int, text: str, content: str, replaces: list[MemoryItem]) -> MemoryItem:
            who = Identity(user_id="dana", project_id="atlas", session_id=session)
            capture_turn(inbox, Policy(), who, "user", text, turn_id=f"u{n}", at=f"2026-11-{10 + n}T10:00:00+00:00")
            result = capture_turn(inbox, Policy(), who, "assistant", proposing(content), turn_id=f"a{n}",
                                  at=f"2026-11-{10 + n}T10:00:20+00:00", existing=lambda _p: replaces)
            return fold_events(inbox.read_after(0)).items[result.proposals[0].item_id]

        capture_turn(inbox, Policy(), DANA, "user", "The offsite budget is 5000 euros.", turn_id="u0",
                     at="2026-11-10T09:00:00+00:00")
        porto = exchange("s1", 1, "We decided: the team offsite will be in Porto, at the Ribeira hotel.",
                         "The team offsite will be held in Porto.", [])
        lisbon = exchange("s2", 2, "Change of plan: the offsite moves to Lisbon. Porto is off.",
                          "The team offsite will be held in Lisbon, not Porto.", [porto])
        braga = exchange("s3", 3, "Lisbon fell through too, so the offsite goes to Braga.",
                         "The team offsite will be held in Braga, not Lisbon.", [lisbon])
        items = fold_events(inbox.read_after(0)).items
    return {"porto": porto, "lisbon": lisbon, "braga": braga, **items}


def test_a_correction_keeps_the_turns_the_claims_it_replaced_were_said_in(said) -> None:
    assert REPLACED_TURNS not in said["porto"].metadata
    assert said["lisbon"].metadata[REPLACED_TURNS] == [message_item_id("a1")]
    # a correction of a correction: what each replaced before it too
    assert said["braga"].metadata[REPLACED_TURNS] == [message_item_id("a2"), message_item_id("a1")]


@pytest.mark.parametrize("where", ["consolidated", "correction in the delta"])
def test_recall_marks_the_turns_and_puts_them_after_the_correction(said, where) -> None:
    # the snapshot consolidation publishes: the replaced claims are gone
    items = [it for it in said.values() if it.id not in (said["porto"].id, said["lisbon"].id)]
    corpora = [MemoryCorpus(items)]
    if where == "correction in the delta":  # Braga's exchange not consolidated yet
        later = {said["braga"].id, message_item_id("u3"), message_item_id("a3")}
        corpora = [MemoryCorpus([it for it in items if it.id not in later]),
                   MemoryCorpus([it for it in items if it.id in later], source="delta")]
    engine = RecallEngine(Settings(), embedder=None)
    result = engine.recall("Where is the team offsite? Porto, Lisbon or Braga?", DANA, corpora, mode="inject")
    ids = [h.item.id for h in result.hits]
    braga, porto, lisbon = said["braga"].id, message_item_id("u1"), message_item_id("u2")
    assert ids[0] == braga and porto in ids, ids
    block = result.injection
    # the user turns those claims were said in, each in its own chat (Lisbon's, when the
    # conflict rule does not leave it out for stating what Braga replaced)
    for turn_id in (porto, *([lisbon] if lisbon in ids else [])):
        entry = block.split(f"[TURN: {turn_id}")[1].split("[/TURN]")[0]
        assert REPLACED_SINCE.format(braga) in entry, entry
    budget = block.split("The offsite budget is 5000 euros.")[1].split("[/TURN]")[0]
    assert REPLACED_SINCE.split(";")[0] not in budget  # said before, in that chat, of something else
    braga_turn = block.split("so the offsite goes to Braga.")[1].split("[/TURN]")[0]
    assert REPLACED_SINCE.split(";")[0] not in braga_turn  # what the correction was said in


def test_a_turn_marked_both_ways_says_both() -> None:
    turn = MemoryItem(id="msg_1", tier="stm", type="message", title="dana", content="Standup is at 9:30.",
                      scope=Scope(kind="user"), metadata={"role": "user"})
    shown = format_turn(turn, said_otherwise_by=["msg_2"], replaced_by=["mem_9"])
    assert shown.endswith(f"9:30.\n{REPLACED_SINCE.format('mem_9')}\n{SAID_EARLIER.format('msg_2')}\n[/TURN]")
