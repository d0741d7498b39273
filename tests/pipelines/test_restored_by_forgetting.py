"""`materialize.restored_by_forgetting`: what a forgotten correction had replaced stands again,
unless it was forgotten itself or something else still standing replaces it."""

from __future__ import annotations

import msgspec

from pipelines.materialize import RESTORED, restored_by_forgetting, standing_replacer, supersedes_now
from pipelines.records import Link, MemoryItem, Scope

LEA = Scope(kind="user", user_id="lea")


def claim(item_id: str, content: str, **kw) -> MemoryItem:
    return MemoryItem(id=item_id, tier="stm", type="fact", title="Leo's allergy", content=content, scope=LEA, **kw)


OLD = claim("old", "Leo is allergic to peanuts.", superseded_by="new")
NEW = claim("new", "Leo is allergic to sesame.", links=[Link(rel="supersedes", to="old")], validation="retracted")


def test_the_replaced_claim_stands_again_saying_why() -> None:
    (back,) = restored_by_forgetting(NEW, {"old": OLD}.get, "lea", "2026-11-29T10:00:00+00:00")
    assert back.superseded_by is None and back.active and back.content == OLD.content
    assert back.metadata[RESTORED]["because"] == "new" and "forgotten by lea" in back.metadata[RESTORED]["note"]


def test_nothing_stands_again_that_was_forgotten_or_is_replaced_by_another() -> None:
    forgotten = msgspec.structs.replace(OLD, validation="retracted")
    by_another = msgspec.structs.replace(OLD, superseded_by="third")
    at = "2026-11-29T10:00:00+00:00"
    assert restored_by_forgetting(NEW, {"old": forgotten}.get, "lea", at) == []
    assert restored_by_forgetting(NEW, {"old": by_another}.get, "lea", at) == []
    assert restored_by_forgetting(NEW, {"old": OLD}.get, "lea", at, [("third", "old", "supersedes")]) == []
    assert restored_by_forgetting(NEW, {}.get, "lea", at) == []  # not found: nothing to bring back


def test_a_forgotten_claim_supersedes_nothing() -> None:
    assert not supersedes_now(NEW) and supersedes_now(OLD)


# A chain of corrections: A, B correcting A, C correcting B (as consolidation marks them).
A = claim("a", "Leo is allergic to peanuts.", superseded_by="b")
B = claim("b", "Leo is allergic to sesame.", superseded_by="c", links=[Link(rel="supersedes", to="a")])
C = claim("c", "Leo is allergic to kiwi.", links=[Link(rel="supersedes", to="b")])
AT = "2026-11-29T10:00:00+00:00"


def forgot(item: MemoryItem) -> MemoryItem:
    return msgspec.structs.replace(item, validation="retracted")


def test_forgetting_the_middle_of_a_chain_leaves_the_first_replaced_while_the_last_stands() -> None:
    assert restored_by_forgetting(forgot(B), {"a": A, "c": C}.get, "lea", AT) == []
    # the same before consolidation marked B: C's link says it
    unmarked = msgspec.structs.replace(B, superseded_by=None)
    assert restored_by_forgetting(forgot(unmarked), {"a": A, "c": C}.get, "lea", AT, [("c", "b", "supersedes")]) == []


def test_forgetting_the_last_of_a_chain_brings_back_the_latest_not_forgotten() -> None:
    (back,) = restored_by_forgetting(forgot(C), {"a": A, "b": B}.get, "lea", AT)
    assert back.id == "b"
    (back,) = restored_by_forgetting(forgot(C), {"a": A, "b": forgot(B)}.get, "lea", AT)  # B forgotten before
    assert back.id == "a" and back.metadata[RESTORED]["because"] == "c"


def test_the_standing_replacer_walks_up_through_forgotten_corrections_only() -> None:
    correctors = {"a": ["b"], "b": ["c"]}.get
    for forgotten, expected in (({"b"}, "c"), ({"b", "c"}, None), (set(), "b")):
        got = standing_replacer("a", lambda i: correctors(i) or (), lambda i, f=forgotten: i not in f,
                                forgotten.__contains__)
        assert got == expected, forgotten
