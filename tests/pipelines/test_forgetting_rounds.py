"""The turns of a round that forgot something (`pipelines.forgetting.kept_part`), and a forget
held for review as the fold decides it (`materialize.held_by_edit`, `review_item`)."""

from __future__ import annotations

import pytest

from pipelines.forgetting import kept_part
from pipelines.materialize import FORGOT_TURNS, RETRACTION_RULE, fold_events, held_edit
from pipelines.records import Event, Identity, MemoryItem, Scope

DENTIST = MemoryItem(id="mem_dentist", tier="stm", type="fact", title="Dentist appointment",
                     content="Sam's dentist appointment is on Tuesday at 3pm.", scope=Scope(kind="user", user_id="sam"))


@pytest.mark.parametrize(("said", "kept"), [
    ("Please forget my dentist appointment, and remind me my passport expires in March.",
     "remind me my passport expires in March."),
    ("forget my dentist appointment and remind me that Tom and Jerry visit in March",
     "remind me that Tom and Jerry visit in March"),  # an "and" inside what is kept stays
    ("Forget the dentist thing. It is at 3pm on Tuesday. Also my passport expires in March!",
     "Also my passport expires in March!"),  # a clause naming it without asking to forget goes too
    ("Please forget my dentist appointment, that's private.", ""),  # nothing worth a turn of its own
    ("Done, it's forgotten.", ""),
])
def test_kept_part_is_what_else_the_turn_said(said: str, kept: str) -> None:
    assert kept_part(said, [DENTIST]) == kept


def _event(seq: int, kind: str, user: str, payload: dict) -> Event:
    return Event(event_id=f"evt_{seq}", kind=kind, identity=Identity(user_id=user), payload=payload, seq=seq)


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_a_held_forget_keeps_its_turns_and_an_approval_forgets_the_memory(decision: str) -> None:
    """Jon's forget of Maya's note waits beside it with his round's turns; approved, the note is
    retracted (it was verified instead: the forget undone by its approval); rejected, it stays."""
    note = MemoryItem(id="mem_note", tier="stm", type="fact", title="Printer", content="The printer is upstairs.",
                      scope=Scope(kind="project", user_id="maya"), validation="verified")
    held = _event(1, "memory.update", "jon", {
        "item_id": note.id, "patch": {"validation": "retracted"}, FORGOT_TURNS: ["msg_jon"],
        "verdict": {"action": "quarantine", "rule_ids": [RETRACTION_RULE]}})
    waiting = fold_events([held], base={note.id: note}.get).items[note.id]
    assert waiting.validation == "verified" and held_edit(waiting)[FORGOT_TURNS] == ["msg_jon"]
    review = _event(2, "memory.review", "maya", {"item_id": note.id, "decision": decision, "verdict": {}})
    decided = fold_events([held, review], base={note.id: note}.get).items[note.id]
    assert decided.validation == ("retracted" if decision == "approve" else "verified")
