"""Retrieval context of message items: built from the same session's neighbours, stored in
metadata, used for vectors and BM25 only, and refreshed (with a new vector) when the turn
answering the last stored turn arrives in a later run."""

from __future__ import annotations

from pathlib import Path

import msgspec

from pipelines.consolidate import consolidate_once
from pipelines.message_context import (
    CONTEXT_KEY,
    ContextWindow,
    build_context,
    contextualise,
    embedding_hash,
    embedding_text,
    lexical_text,
)
from pipelines.records import Identity, MemoryItem, Scope
from pipelines.warehouse import Warehouse
from tests.assets.support import dana, ingest, make_settings


def turn(n: int, text: str, *, session: str = "s1", user: str = "dana", speaker: str = "Dana",
         at: str = "2023-05-08T13:56:00+00:00") -> MemoryItem:
    return MemoryItem(
        id=f"msg_{user}_{session}_{n:03d}", tier="stm", type="message", title=speaker, content=text,
        scope=Scope.for_identity("user", Identity(user_id=user, session_id=session)),
        created_at=at, updated_at=at, metadata={"session_id": session, "inbox_seq": n},
    )


def test_context_holds_previous_and_following_turns_and_the_day() -> None:
    turns = [turn(1, "Where did you go?", speaker="Mel"), turn(2, "To the lake.", speaker="Caro"),
             turn(3, "Yes, last Tuesday!"), turn(4, "Lovely.", speaker="Mel")]
    context = build_context(turns, 2, ContextWindow(previous=2, following=1, date=True))
    assert context == ("(in reply to Mel: Where did you go? / Caro: To the lake.)\n"
                       "(answered by Mel: Lovely.)\n(said on 8 May 2023)")
    assert build_context(turns, 0, ContextWindow(previous=2, following=0, date=False)) == ""
    assert "answered by" not in build_context(turns, 3, ContextWindow())


def test_context_is_for_finding_only() -> None:
    item = turn(1, "Yes, last Tuesday!")
    with_context = msgspec.structs.replace(
        item, metadata={**item.metadata, CONTEXT_KEY: "(in reply to Mel: the lake trip)"})
    assert "lake trip" in embedding_text(with_context) and "lake trip" in lexical_text(with_context)
    assert with_context.content == item.content and with_context.content_hash == item.content_hash
    assert embedding_hash(with_context) != embedding_hash(item) == item.content_hash
    # Only messages carry a context: a note with the same metadata key is embedded as before.
    note = msgspec.structs.replace(with_context, type="note", id="mem_1")
    assert "lake trip" not in embedding_text(note) and embedding_hash(note) == note.content_hash


def test_contextualise_keeps_sessions_and_users_apart_and_refreshes_only_the_last_stored_turn() -> None:
    stored = [turn(1, "first"), turn(2, "second"), turn(3, "third")]
    stored[2] = msgspec.structs.replace(stored[2], metadata={**stored[2].metadata, CONTEXT_KEY: "old"})
    new = {t.id: t for t in [turn(4, "fourth"), turn(5, "other session", session="s2"),
                              turn(6, "other user", user="erin")]}
    window = ContextWindow(previous=2, following=1, date=False)
    out, changed = contextualise(new, stored, window)
    assert out["msg_dana_s1_004"].metadata[CONTEXT_KEY] == "(in reply to Dana: second / Dana: third)"
    assert CONTEXT_KEY not in out["msg_dana_s2_005"].metadata  # alone in its session, no date
    assert CONTEXT_KEY not in out["msg_erin_s1_006"].metadata
    assert changed == {"msg_dana_s1_003": "(in reply to Dana: first / Dana: second)\n(answered by Dana: fourth)"}
    # Switched off entirely: nothing changes.
    same, none = contextualise(new, stored, ContextWindow(0, 0, False))
    assert same == new and none == {}


def embedded_hashes(wh: Warehouse) -> dict[str, str]:
    """item id -> hash of the text its stored vector was made from."""
    return dict(wh.query("SELECT item_id, content_hash FROM embeddings WHERE model_name = 'hash-384'"))


def test_consolidation_stores_context_and_reembeds_a_turn_when_its_answer_arrives(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    ingest(settings, [dana("Where did Caroline go last week?", role="user"),
                      dana("She went to the support group on Tuesday.")], name="a.jsonl")
    consolidate_once(settings)
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        msgs = sorted(wh.active_items(types=["message"]), key=lambda i: i.metadata["inbox_seq"])
        first_vectors = embedded_hashes(wh)
    assert "answered by assistant: She went to the support group" in msgs[0].metadata[CONTEXT_KEY]
    assert "in reply to user: Where did Caroline go" in msgs[1].metadata[CONTEXT_KEY]

    ingest(settings, [dana("Did she like it?", role="user")], name="b.jsonl")
    second = consolidate_once(settings)
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        last_before = wh.get_item(msgs[1].id)
        assert wh.stale_embedding_ids("hash-384") == []
        vectors = embedded_hashes(wh)
        reasons = [r["reason"] for r in wh.revisions(msgs[1].id)]
    assert "answered by user: Did she like it?" in last_before.metadata[CONTEXT_KEY]
    assert last_before.content == msgs[1].content  # the turn itself is untouched
    assert vectors[msgs[1].id] == embedding_hash(last_before) != first_vectors[msgs[1].id]
    assert vectors[msgs[0].id] == first_vectors[msgs[0].id]  # older turns are not redone
    assert reasons[-1] == "message_context" and second["embed"].embedded == 2  # the new turn and the refreshed one
