"""Retrieval context of message items: built from the same session's neighbours, stored in
metadata, used for vectors and BM25 only, and refreshed (with a new vector) when the turn
answering the last stored turn arrives in a later run."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np

from pipelines.consolidate import consolidate_once
from pipelines.embedders import HashEmbedder
from pipelines.message_context import (
    COMPOSITION,
    CONTEXT_KEY,
    CONTEXT_TURNS_KEY,
    ContextWindow,
    VectorComposition,
    bare_text,
    build_context,
    context_without,
    contextualise,
    embedding_hash,
    embedding_text,
    item_vectors,
    lexical_text,
    with_context,
)
from pipelines.records import Identity, MemoryItem, Scope, sha256_text
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
    window = ContextWindow(previous=2, following=1, date=False, composed=True)
    out, changed = contextualise(new, stored, window)
    assert out["msg_dana_s1_004"].metadata[CONTEXT_KEY] == "(in reply to Dana: second / Dana: third)"
    assert CONTEXT_KEY not in out["msg_dana_s2_005"].metadata  # alone in its session, no date
    assert CONTEXT_KEY not in out["msg_erin_s1_006"].metadata
    assert out["msg_dana_s1_004"].metadata[CONTEXT_TURNS_KEY] == {
        "previous": ["msg_dana_s1_002", "msg_dana_s1_003"], "following": []}
    assert changed == {"msg_dana_s1_003": {
        CONTEXT_KEY: "(in reply to Dana: first / Dana: second)\n(answered by Dana: fourth)",
        CONTEXT_TURNS_KEY: {"previous": ["msg_dana_s1_001", "msg_dana_s1_002"], "following": ["msg_dana_s1_004"]}}}
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
    # The first turn's context text is the same, but its pooled window (turns 0-4) gained the new turn.
    assert vectors[msgs[0].id] != first_vectors[msgs[0].id]
    assert reasons[-1] == "message_context" and second["embed"].embedded == 3  # the new turn and the refreshed ones


# -- composed vectors ------------------------------------------------------------------------


def session_with_context(n: int, window: ContextWindow = ContextWindow(composed=True)) -> list[MemoryItem]:
    """n turns of one session, contextualised as governance does."""
    turns = [turn(k + 1, text) for k, text in enumerate(
        ["Where did you go?", "To the lake.", "Yes, last Tuesday!", "Lovely.", "We swam.", "Cold?"][:n])]
    out, _ = contextualise({t.id: t for t in turns}, [], window)
    return [out[t.id] for t in turns]


class CountingEmbedder:
    """A hash embedder that records every text it is asked to embed."""

    def __init__(self) -> None:
        self.inner = HashEmbedder(64)
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return self.inner.embed(texts)


def test_composition_is_own_plus_weighted_neighbour_means_at_unit_length() -> None:
    own, prev, foll = np.eye(4, dtype=np.float32)[:3]
    composition = VectorComposition(previous=0.5, following=0.25)
    got = composition.compose(own, np.stack([prev, foll]), foll[None, :])
    expected = own + 0.5 * (prev + foll) / 2 + 0.25 * foll
    np.testing.assert_allclose(got, expected / np.linalg.norm(expected), rtol=1e-6)
    assert got.dtype == np.float32 and abs(float(np.linalg.norm(got)) - 1.0) < 1e-6
    # Without neighbours the vector is the turn's own.
    np.testing.assert_allclose(composition.compose(own, np.zeros((0, 4)), np.zeros((0, 4))), own)
    assert VectorComposition(0.5, 0.25).recipe != VectorComposition(0.5, 0.5).recipe


def test_each_turn_is_embedded_once_and_a_message_vector_composes_its_neighbours() -> None:
    turns = session_with_context(4)
    assert turns[2].metadata[CONTEXT_TURNS_KEY] == {"previous": [turns[0].id, turns[1].id],
                                                     "following": [turns[3].id]}
    embed = CountingEmbedder()
    by_id = {t.id: t for t in turns}
    vectors = item_vectors(turns, embed, by_id.get)
    # Four bare texts, one model call each, none with its neighbours' words in it.
    assert sorted(embed.texts) == sorted(bare_text(t) for t in turns)
    assert all("in reply to" not in text for text in embed.texts)
    bare = {t.id: embed.inner.embed([bare_text(t)])[0] for t in turns}
    expected = COMPOSITION.compose(bare[turns[2].id], np.stack([bare[turns[0].id], bare[turns[1].id]]),
                                   bare[turns[3].id][None, :])
    np.testing.assert_allclose(vectors[2], expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(vectors[2], bare[turns[2].id])
    # A neighbour that is gone is left out; the others still count.
    without_first = item_vectors([turns[2]], CountingEmbedder(), {t.id: t for t in turns[1:]}.get)
    expected = COMPOSITION.compose(bare[turns[2].id], bare[turns[1].id][None, :], bare[turns[3].id][None, :])
    np.testing.assert_allclose(without_first[0], expected, rtol=1e-5, atol=1e-6)


def test_a_message_contextualised_before_its_turns_were_recorded_keeps_its_full_text_vector() -> None:
    legacy = msgspec.structs.replace(turn(3, "Yes, last Tuesday!"),
                                     metadata={"session_id": "s1", "inbox_seq": 3, CONTEXT_KEY: "(in reply to x)"})
    embed = CountingEmbedder()
    vectors = item_vectors([legacy], embed, lambda _id: None)
    assert embed.texts == [embedding_text(legacy)] and embedding_text(legacy).endswith("(in reply to x)")
    np.testing.assert_allclose(vectors[0], embed.inner.embed([embedding_text(legacy)])[0])
    assert embedding_hash(legacy) == sha256_text(f"{legacy.content_hash}\n(in reply to x)")
    composed = session_with_context(3)[2]
    assert embedding_hash(composed) == sha256_text(
        f"{composed.content_hash}\n{composed.metadata[CONTEXT_KEY]}\n{COMPOSITION.recipe}")


def test_stored_hashes_of_plain_legacy_and_composed_vectors_agree_with_sql(tmp_path: Path) -> None:
    composed = session_with_context(3)
    legacy = msgspec.structs.replace(turn(9, "Old turn", session="s9"),
                                     metadata={"session_id": "s9", "inbox_seq": 9, CONTEXT_KEY: "(said on x)"})
    note = MemoryItem(id="mem_note", tier="stm", type="note", title="t", content="a note",
                      scope=composed[0].scope, metadata={CONTEXT_TURNS_KEY: {"previous": [], "following": []}})
    items = [*composed, legacy, note]
    with Warehouse(tmp_path / "w.duckdb") as wh:
        wh.put_items(items)
        assert len(wh.stale_embedding_ids("hash-64")) == len(items)
        vectors = item_vectors(items, HashEmbedder(64).embed, {i.id: i for i in items}.get)
        wh.put_embeddings([(i.id, embedding_hash(i), v) for i, v in zip(items, vectors)], model_name="hash-64", dim=64)
        assert wh.stale_embedding_ids("hash-64") == []


def conversation(settings) -> None:
    ingest(settings, [dana("Where did Caroline go last week?", role="user"),
                      dana("She went to the support group on Tuesday."),
                      dana("Did she like it?", role="user"),
                      dana("Yes, she felt accepted there.")], name="conv.jsonl")


def stored_message_vectors(settings, model: str) -> tuple[list[MemoryItem], np.ndarray]:
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        msgs = sorted(wh.active_items(types=["message"]), key=lambda i: i.metadata["inbox_seq"])
        return msgs, wh.embedding_matrix(model, [m.id for m in msgs])


def test_reembed_recomposes_the_same_vectors_and_composes_with_a_new_embedder(tmp_path: Path) -> None:
    from pipelines.consolidate import reembed_all

    settings = make_settings(tmp_path, message_context_composed=True)
    conversation(settings)
    consolidate_once(settings)
    msgs, stored = stored_message_vectors(settings, "hash-384")
    assert all(CONTEXT_TURNS_KEY in m.metadata for m in msgs)

    again = reembed_all(settings)  # the same embedder: the same vectors
    assert again["embedded"] >= len(msgs)
    np.testing.assert_allclose(stored_message_vectors(settings, "hash-384")[1], stored, atol=1e-6)

    # Another model: the same composition, in its space.
    other = make_settings(tmp_path, embedder_dim=64, message_context_composed=True)
    reembed_all(other)
    _, vectors = stored_message_vectors(other, "hash-64")
    bare = HashEmbedder(64).embed([bare_text(m) for m in msgs])
    expected = COMPOSITION.compose(bare[1], bare[0][None, :], bare[2][None, :])  # turn 2: one before, one after
    np.testing.assert_allclose(vectors[1], expected, rtol=1e-5, atol=1e-6)
    assert consolidate_once(other)["embed"].embedded == 0  # nothing left stale


def test_the_service_delta_composes_a_message_vector_as_the_pipeline_does(tmp_path: Path) -> None:
    from online.state import MemoryService
    from online.tools import ToolDispatcher

    settings = make_settings(tmp_path, message_context_composed=True)
    conversation(settings)
    consolidate_once(settings)
    msgs, stored = stored_message_vectors(settings, "hash-384")
    svc = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    try:
        svc.reload()
        who = Identity(user_id="dana", project_id="atlas", session_id="s1")
        # A turn moved in the palace: a new version in the delta, embedded by the service.
        ToolDispatcher(svc).dispatch("memory.palace.assign", {"id": msgs[1].id, "location": "people/caroline/visits"},
                                     who)
        (segment,) = [c for c in svc.view().corpora if c.source == "delta"]
        delta_vector = segment.vectors[[it.id for it in segment.items].index(msgs[1].id)]
    finally:
        svc.close()
    # The same inputs, the same vector as the pipeline's: composed with the snapshot's neighbours.
    np.testing.assert_allclose(delta_vector, stored[1], rtol=1e-5, atol=1e-6)
    bare = HashEmbedder(settings.embedder_dim).embed([bare_text(m) for m in msgs[:3]])
    np.testing.assert_allclose(delta_vector, COMPOSITION.compose(bare[1], bare[:1], bare[2:]), rtol=1e-5, atol=1e-6)


def test_by_default_a_message_is_embedded_with_its_context_in_one_text(tmp_path: Path) -> None:
    turns = session_with_context(3, ContextWindow())
    assert all(CONTEXT_TURNS_KEY not in t.metadata for t in turns)
    embed = CountingEmbedder()
    vectors = item_vectors(turns, embed, {t.id: t for t in turns}.get)
    assert embed.texts == [embedding_text(t) for t in turns] and "in reply to" in embed.texts[2]
    np.testing.assert_allclose(vectors, embed.inner.embed(embed.texts))
    # Switching composition off again: a refreshed context drops the recorded turns.
    composed = session_with_context(3)[2]
    later = turn(4, "later")
    _, changed = contextualise({later.id: later}, [composed], ContextWindow())
    refreshed = msgspec.structs.replace(composed, metadata=with_context(composed.metadata, changed[composed.id]))
    assert CONTEXT_TURNS_KEY not in refreshed.metadata
    assert embedding_text(refreshed).endswith("(answered by Dana: later)\n(said on 8 May 2023)")


def test_a_forgotten_turn_leaves_a_stored_context_as_a_new_read_of_the_session_leaves_it_out() -> None:
    """`context_without` (what forgetting does to the contexts already stored) and a session
    read again with the turn retracted (`build_context`: later turns, `loci reembed`) agree,
    for each way a message vector is made: the forgotten words are in neither."""
    for window in (ContextWindow(), ContextWindow(composed=True), ContextWindow(pooled=True)):
        stored = session_with_context(6, window)
        gone = msgspec.structs.replace(stored[2], validation="retracted")
        reread = session_with_context(6, window)[:2] + [gone] + session_with_context(6, window)[3:]
        again, _ = contextualise({t.id: msgspec.structs.replace(t, metadata={
            k: v for k, v in t.metadata.items() if k in ("session_id", "inbox_seq")}) for t in reread}, [], window)
        for k in (0, 1, 3, 4, 5):
            fields = context_without(stored[k], [gone])
            if fields is None:  # its context never named the forgotten turn
                assert stored[k].metadata == again[stored[k].id].metadata, (window, k)
                continue
            assert "last Tuesday" not in fields.get(CONTEXT_KEY, ""), (window, k)
            assert with_context(stored[k].metadata, fields) == again[stored[k].id].metadata, (window, k)
