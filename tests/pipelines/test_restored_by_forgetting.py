"""`materialize.restored_by_forgetting`: what a forgotten correction had replaced stands again,
unless it was forgotten itself or something else still standing replaces it."""

from __future__ import annotations

import msgspec

from pipelines.materialize import RESTORED, restored_by_forgetting, supersedes_now
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
