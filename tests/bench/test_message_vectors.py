"""bench.message_vectors: the message-vector prototypes replace message vectors only, by
session, at unit length. Tiny hand-made items, the hash embedder; no model."""

from __future__ import annotations

import numpy as np

from bench.locomo import _parse
from bench.message_vectors import bare, composed_with_date, own_previous_date, sessions_of
from pipelines.embedders import HashEmbedder
from pipelines.message_context import bare_text
from pipelines.records import Identity, MemoryItem, Scope


def _turn(n: int, text: str, session: str) -> MemoryItem:
    return MemoryItem(id=f"msg_{session}_{n}", tier="stm", type="message", title="Ann", content=text,
                      scope=Scope.for_identity("user", Identity(user_id="ann", session_id=session)),
                      created_at="2023-05-08T13:56:00+00:00", metadata={"session_id": session, "inbox_seq": n})


def _items() -> list[MemoryItem]:
    note = MemoryItem(id="mem_1", tier="ltm", type="note", title="Dog", content="Rex is a beagle.",
                      scope=Scope.for_identity("user", Identity(user_id="ann")))
    return [_turn(2, "A beagle?", "s1"), note, _turn(1, "I adopted a dog.", "s1"), _turn(3, "Hello", "s2")]


def test_sessions_are_grouped_and_ordered_by_turn() -> None:
    assert [[t.id for t in s] for s in sessions_of(_items())] == [["msg_s1_1", "msg_s1_2"], ["msg_s2_3"]]


def test_vector_variants_change_messages_by_their_session_and_keep_other_items() -> None:
    items, embed = _items(), HashEmbedder(64).embed
    plain = embed([bare_text(it) for it in items])
    np.testing.assert_allclose(bare(items, embed, None), plain)
    for variant in (composed_with_date, own_previous_date):
        vectors = variant(items, embed, None)
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
        np.testing.assert_allclose(vectors[1], plain[1])  # the note keeps its own vector
        assert not np.allclose(vectors[0], plain[0])  # a turn with a neighbour changes
        assert float(vectors[0] @ vectors[2]) > float(plain[0] @ plain[2])  # and moves towards it


def test_vector_prototypes_are_known_to_the_locomo_options() -> None:
    assert _parse(["--prototypes", "vec_bare,vec_late_chunk,ctx_prev"]).prototypes == "vec_bare,vec_late_chunk,ctx_prev"
