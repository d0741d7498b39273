"""The one-off backfill's filling (`consolidate.replaced_turns.filled_replaced_turns`): a
correction names the turns of what it superseded, theirs before included; a merge carries
only what its members had replaced (a restatement replaces nothing); a link cycle ends."""

from __future__ import annotations

from pipelines.consolidate.replaced_turns import filled_replaced_turns
from pipelines.materialize import message_item_id, replaced_turns
from pipelines.records import MemoryItem, Provenance, Scope


def said(item_id: str, turn: str) -> MemoryItem:
    return MemoryItem(id=item_id, tier="stm", type="decision", title="Team offsite", content=f"{item_id} holds",
                      scope=Scope(kind="project", user_id="dana", project_id="atlas"),
                      provenance=Provenance(source_kind="chat", source_id=turn))


def test_a_correction_names_the_turns_of_the_chain_it_ends_and_a_merge_only_what_was_replaced() -> None:
    items = {i.id: i for i in (said("porto", "t1"), said("lisbon", "t2"), said("braga", "t3"),
                               said("braga again", "t4"), said("merged", "t3"))}
    chains = [("lisbon", "porto", False), ("braga", "lisbon", False),
              ("merged", "braga", True), ("merged", "braga again", True)]
    filled = filled_replaced_turns(items, chains)
    turn = message_item_id
    assert replaced_turns(filled["lisbon"]) == [turn("t1")]
    assert replaced_turns(filled["braga"]) == [turn("t2"), turn("t1")]
    # t4 ("braga again") restated Braga: not a replaced turn of the merged decision
    assert replaced_turns(filled["merged"]) == [turn("t2"), turn("t1")]
    assert "porto" not in filled and replaced_turns(items["lisbon"]) == []  # the inputs are left as read


def test_a_link_cycle_is_cut_where_met() -> None:
    items = {i.id: i for i in (said("a", "t1"), said("b", "t2"))}
    filled = filled_replaced_turns(items, [("a", "b", False), ("b", "a", False)])
    assert set(filled) == {"a", "b"}
    assert turn_named(filled["a"], "t2") and turn_named(filled["b"], "t1")


def turn_named(item: MemoryItem, turn: str) -> bool:
    return message_item_id(turn) in replaced_turns(item)
