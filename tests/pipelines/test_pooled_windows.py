"""Pooled message windows (setting `message_context_pooled`): windows of 5 turns at every
third turn index, each read once; a turn's vector pools its own tokens over the windows holding
it. The windows are recorded on the items, so the pipeline, reembed and the service's
delta make the same vector, and a window that changes re-embeds its turns. A stand-in
encoder (word hashes, each token attending its window by a mean) replaces MiniLM."""

from __future__ import annotations

import logging
import threading
import zlib
from pathlib import Path
from types import SimpleNamespace

import msgspec
import numpy as np
import pytest

from pipelines.consolidate import consolidate_once
from pipelines.embedders import HashEmbedder, MiniLMRunner
from pipelines.message_context import (
    CONTEXT_WINDOWS_KEY,
    TURN_INDEX_KEY,
    ContextWindow,
    contextualise,
    embedding_hash,
    embedding_text,
    item_vectors,
    with_context,
)
from pipelines.records import Identity
from tests.assets.support import dana, ingest, make_settings
from tests.pipelines.test_message_context import stored_message_vectors, turn

pytestmark = pytest.mark.slow  # one of the longest files: scheduled first (tests/conftest.py)

POOLED = ContextWindow(pooled=True)
TEXTS = ["Where did you go?", "To the lake.", "Yes, last Tuesday!", "Lovely.", "We swam.", "Cold?", "Very."]


class _WordTokenizer:
    def token_to_id(self, token: str) -> int:
        return {"[CLS]": 1, "[SEP]": 2}[token]

    def encode_batch(self, texts: list[str], add_special_tokens: bool = False) -> list[SimpleNamespace]:
        return [SimpleNamespace(ids=[3 + zlib.crc32(w.encode()) % 997 for w in t.split()]) for t in texts]


class StandInEncoder(HashEmbedder):
    """HashEmbedder text vectors, plus `pool_windows` through `MiniLMRunner`'s own code with
    a word tokenizer and a made-up encoder: a token's state is its id's row of a fixed table
    plus the mean of its input's real tokens (so a turn's state depends on its window)."""

    def __init__(self, dim: int = 384) -> None:
        super().__init__(dim)
        table = np.random.default_rng(7).standard_normal((1000, dim)).astype(np.float32)

        def hidden(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
            rows = table[ids] * mask[..., None]
            context = rows.sum(axis=1, keepdims=True) / mask.sum(axis=1)[:, None, None]
            return rows + context

        runner = object.__new__(MiniLMRunner)
        runner.tokenizer, runner.hidden, runner.max_tokens = _WordTokenizer(), hidden, 256
        runner._tokenizer_lock = threading.Lock()
        self.runner_ = runner
        self.windows_read = 0

    def pool_windows(self, windows: list[list[str]]) -> list[tuple[np.ndarray, list[np.ndarray]]]:
        self.windows_read += len(windows)
        return self.runner_.pool_windows(windows, parallel=2)


def session(n: int = len(TEXTS)) -> list:
    turns = [turn(k + 1, text) for k, text in enumerate(TEXTS[:n])]
    out, _ = contextualise({t.id: t for t in turns}, [], POOLED)
    return [out[t.id] for t in turns]


def test_windows_of_five_at_every_third_turn_are_recorded_on_each_turn() -> None:
    turns = session()
    ids = [t.id for t in turns]
    assert [t.metadata[TURN_INDEX_KEY] for t in turns] == list(range(7))
    assert turns[0].metadata[CONTEXT_WINDOWS_KEY] == [ids[0:5]]
    assert turns[2].metadata[CONTEXT_WINDOWS_KEY] == [ids[0:5]]
    assert turns[3].metadata[CONTEXT_WINDOWS_KEY] == [ids[0:5], ids[3:8]]
    assert turns[6].metadata[CONTEXT_WINDOWS_KEY] == [ids[3:8], ids[6:7]]  # the last ones shorter


def test_a_session_arriving_turn_by_turn_gets_the_windows_of_one_batch() -> None:
    whole = {t.id: t for t in session()}
    stored: dict = {}
    for t in [turn(k + 1, text) for k, text in enumerate(TEXTS)]:
        out, changed = contextualise({t.id: t}, list(stored.values()), POOLED)
        for i, fields in changed.items():
            stored[i] = msgspec.structs.replace(stored[i], metadata=with_context(stored[i].metadata, fields))
        stored.update(out)
    assert {i: t.metadata for i, t in stored.items()} == {i: t.metadata for i, t in whole.items()}


def test_a_session_arriving_in_batches_gets_the_windows_of_one_batch() -> None:
    """Every stored turn whose window a new batch reaches is cut again, also when fewer
    turns are stored than a window reaches back (two stored, then five: turn 0's window
    [0, 5) gains three; it was once left with its window of two)."""
    whole = {t.id: t for t in session()}
    turns = [turn(k + 1, text) for k, text in enumerate(TEXTS)]
    for first in (1, 2, 3, 4):
        stored, _ = contextualise({t.id: t for t in turns[:first]}, [], POOLED)
        out, changed = contextualise({t.id: t for t in turns[first:]}, list(stored.values()), POOLED)
        for i, fields in changed.items():
            stored[i] = msgspec.structs.replace(stored[i], metadata=with_context(stored[i].metadata, fields))
        stored.update(out)
        assert {i: t.metadata for i, t in stored.items()} == {i: t.metadata for i, t in whole.items()}, first


def test_the_pooled_vector_is_the_prototypes_own_tokens_vector() -> None:
    from bench.message_vectors import _POOLED, pooled_windows

    turns = session()
    encoder = StandInEncoder(64)
    product = item_vectors(turns, encoder.embed, {t.id: t for t in turns}.get, pool=encoder.pool_windows)
    assert encoder.windows_read == 3  # windows at turns 0, 3, 6, each read once
    _POOLED.clear()
    prototype = pooled_windows(turns, encoder.embed, encoder, size=5, stride=3, own=None, aligned=True)
    np.testing.assert_allclose(product, prototype, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(product, axis=1), 1.0, rtol=1e-5)
    # Not the default text vector, and an embedder without token states falls back to it.
    assert not np.allclose(product[2], encoder.embed([embedding_text(turns[2])])[0])
    fallback = item_vectors(turns, encoder.embed, {t.id: t for t in turns}.get)
    np.testing.assert_allclose(fallback, encoder.embed([embedding_text(t) for t in turns]))


def test_the_hash_changes_when_a_window_gains_a_turn() -> None:
    turns = session(3)
    later = turn(4, "Lovely.")
    _, changed = contextualise({later.id: later}, turns, POOLED)
    # Turn 2's context text (one before, one after) is unchanged; its window [0, 5) gained turn 4.
    assert turns[1].id in changed and changed[turns[1].id]["context"] == turns[1].metadata["context"]
    refreshed = msgspec.structs.replace(turns[1], metadata=with_context(turns[1].metadata, changed[turns[1].id]))
    assert embedding_hash(refreshed) != embedding_hash(turns[1])
    plain = msgspec.structs.replace(turns[1], metadata=with_context(turns[1].metadata,
                                                                     {"context": turns[1].metadata["context"]}))
    assert embedding_hash(turns[1]) != embedding_hash(plain)


def conversation(settings, texts: list[str], name: str) -> None:
    ingest(settings, [dana(t, role="user" if k % 2 == 0 else "assistant") for k, t in enumerate(texts)], name=name)


def test_pipeline_reembed_and_delta_make_the_same_pooled_vector(tmp_path: Path) -> None:
    from online.state import MemoryService
    from online.tools import ToolDispatcher
    from pipelines.consolidate import reembed_all

    settings = make_settings(tmp_path, message_context_pooled=True)
    encoder = StandInEncoder(settings.embedder_dim)
    conversation(settings, TEXTS[:3], "one.jsonl")
    consolidate_once(settings, embedder=encoder)
    conversation(settings, TEXTS[3:], "two.jsonl")  # a later run: stored windows grow
    consolidate_once(settings, embedder=encoder)
    assert consolidate_once(settings, embedder=encoder)["embed"].embedded == 0  # SQL hash == Python hash
    msgs, stored = stored_message_vectors(settings, encoder.name)
    assert [m.metadata[TURN_INDEX_KEY] for m in msgs] == list(range(7))
    by_id = {m.id: m for m in msgs}
    expected = item_vectors(msgs, encoder.embed, by_id.get, pool=encoder.pool_windows)
    np.testing.assert_allclose(stored, expected, rtol=1e-5, atol=1e-6)

    reembed_all(settings, embedder=encoder)
    np.testing.assert_allclose(stored_message_vectors(settings, encoder.name)[1], stored, rtol=1e-5, atol=1e-6)

    svc = MemoryService(settings, embedder=encoder, check_interval_ms=0)
    try:
        svc.reload()
        who = Identity(user_id="dana", project_id="atlas", session_id="s1")
        before = encoder.windows_read
        ToolDispatcher(svc).dispatch("memory.palace.assign", {"id": msgs[3].id, "location": "people/caroline/visits"},
                                     who)
        svc.view()
        assert encoder.windows_read - before == 2  # its two windows, read once for the write and its fold
        (segment,) = [c for c in svc.view().corpora if c.source == "delta"]
        delta_vector = segment.vectors[[it.id for it in segment.items].index(msgs[3].id)]
    finally:
        svc.close()
    np.testing.assert_allclose(delta_vector, stored[3], rtol=1e-5, atol=1e-6)


def test_a_change_of_message_vectors_is_refused_until_reembed_reads_every_session_again(tmp_path: Path) -> None:
    import pytest

    from pipelines.consolidate import MessageVectorsChanged, reembed_all
    from pipelines.message_context import vector_scheme
    from pipelines.warehouse import Warehouse

    text = make_settings(tmp_path, message_context_pooled=False)
    encoder = StandInEncoder(text.embedder_dim)
    conversation(text, TEXTS[:5], "one.jsonl")
    consolidate_once(text, embedder=encoder)
    pooled = make_settings(tmp_path, message_context_pooled=True)
    conversation(pooled, TEXTS[5:], "two.jsonl")
    with pytest.raises(MessageVectorsChanged, match="loci reembed") as refused:
        consolidate_once(pooled, embedder=encoder)  # never a store of two meanings
    assert refused.value.stored == {"text": 5}
    with Warehouse(pooled.warehouse_path, read_only=True) as wh:
        assert wh.count_items() == 5  # nothing of the refused run was stored

    report = reembed_all(pooled, embedder=encoder)
    assert (report["messages_read_again"], report["previous_message_vectors"]) == (5, {"text": 5})
    msgs, stored = stored_message_vectors(pooled, encoder.name)
    assert [vector_scheme(m) for m in msgs] == ["pooled"] * 5
    assert [m.metadata[TURN_INDEX_KEY] for m in msgs] == list(range(5))
    expected = item_vectors(msgs, encoder.embed, {m.id: m for m in msgs}.get, pool=encoder.pool_windows)
    np.testing.assert_allclose(stored, expected, rtol=1e-5, atol=1e-6)

    out = consolidate_once(pooled, embedder=encoder)  # the waiting turns continue the cut
    assert out["govern"].message_vectors == "pooled"
    msgs, stored = stored_message_vectors(pooled, encoder.name)
    whole, at, at_whole = session(), {m.id: k for k, m in enumerate(msgs)}, {t.id: k for k, t in enumerate(session())}
    assert ([[[at[i] for i in w] for w in m.metadata[CONTEXT_WINDOWS_KEY]] for m in msgs]
            == [[[at_whole[i] for i in w] for w in t.metadata[CONTEXT_WINDOWS_KEY]] for t in whole])
    with Warehouse(pooled.warehouse_path, read_only=True) as wh:
        assert wh.vector_schemes() == {"pooled": 7}  # SQL agrees with vector_scheme
    with pytest.raises(MessageVectorsChanged):  # and back: the same rule
        consolidate_once(text, embedder=encoder)


def test_the_run_record_spares_the_scan_of_every_message(tmp_path: Path, monkeypatch) -> None:
    from pipelines.warehouse import Warehouse

    settings = make_settings(tmp_path, message_context_pooled=True)
    encoder = StandInEncoder(settings.embedder_dim)
    conversation(settings, TEXTS[:3], "one.jsonl")
    consolidate_once(settings, embedder=encoder)  # no pooled record yet: scanned
    scans: list[int] = []
    original = Warehouse.vector_schemes
    monkeypatch.setattr(Warehouse, "vector_schemes", lambda self: scans.append(1) or original(self))
    conversation(settings, TEXTS[3:], "two.jsonl")
    assert consolidate_once(settings, embedder=encoder)["govern"].message_vectors == "pooled"
    assert scans == []


def test_pooled_windows_are_the_default_and_composed_wins_when_asked_for() -> None:
    from pipelines.message_context import CONTEXT_TURNS_KEY, vector_scheme
    from pipelines.settings import Settings

    assert ContextWindow.of(Settings()).vectors == "pooled"
    both = ContextWindow.of(Settings(message_context_composed=True))
    assert both.vectors == "composed"
    turns = [turn(k + 1, text) for k, text in enumerate(TEXTS)]
    out, _ = contextualise({t.id: t for t in turns}, [], both)
    assert {vector_scheme(t) for t in out.values()} == {"composed"}
    assert all(CONTEXT_TURNS_KEY in t.metadata and CONTEXT_WINDOWS_KEY not in t.metadata for t in out.values())
    assert ContextWindow.of(Settings(message_context_pooled=False)).vectors == "text"


def test_auto_precision_stores_int8_in_a_new_store_and_keeps_a_float32_store_until_reembed(tmp_path, monkeypatch,
                                                                                          caplog):
    """MiniLM "auto" follows the store (`MiniLMEmbedder.for_store`): a new store gets int8
    vectors, named apart; a store holding float32 ones (made by "auto" before) keeps
    float32 — no `loci reembed` asked — until it is re-embedded, then int8 only; a store of
    int8 vectors made in batches is re-embedded by the next run; the service configured
    "auto" serves every such snapshot. The stand-in encoder replaces every model."""
    from online.state import MemoryService
    from pipelines.consolidate import EmbedderChanged, reembed_all
    from pipelines.embedders import MINILM_INT8_BATCHED, MINILM_NAME, MINILM_NAMES, MiniLMEmbedder
    from pipelines.warehouse import Warehouse
    from tests.pipelines.test_message_context import conversation

    stand_in = StandInEncoder().runner_
    ran: list[str] = []
    monkeypatch.setattr(MiniLMEmbedder, "_load_runner", lambda self, precision: ran.append(precision) or stand_in)
    int8 = MINILM_NAMES["int8"]

    def models(settings) -> list[str]:
        with Warehouse(settings.warehouse_path, read_only=True) as wh:
            return [m for m, _ in wh.stored_embedding_models()]

    def served(settings) -> str | None:
        svc = MemoryService(settings, embedder=MiniLMEmbedder(cache_size=0), check_interval_ms=0)
        try:
            snap = svc.view().snap
            return snap.loaded.manifest.embedder if snap.loaded else None
        finally:
            svc.close()

    new = make_settings(tmp_path / "new", embedder="minilm")
    conversation(new)
    assert consolidate_once(new, embedder=MiniLMEmbedder(cache_size=0))["snapshot"].embedder == int8
    assert models(new) == [int8] and ran == ["int8"]
    assert served(new) == int8

    old = make_settings(tmp_path / "old", embedder="minilm")
    conversation(old)
    consolidate_once(old, embedder=MiniLMEmbedder(cache_size=0, precision="float32"))  # as "auto" before
    ingest(old, [dana("And the week after?", role="user")], name="more.jsonl")
    ran.clear()
    run = consolidate_once(old, embedder=MiniLMEmbedder(cache_size=0))
    assert run["embed"].embedded > 0 and run["snapshot"].embedder == MINILM_NAME
    assert models(old) == [MINILM_NAME] and ran == ["float32"]
    assert served(old) == MINILM_NAME

    # `loci reembed` drops the float32 vectors in the transaction storing the int8 ones: a
    # failure before it commits leaves the float32 ones, never a store without vectors.
    def fails(self, names):
        raise RuntimeError("crash before commit")

    with monkeypatch.context() as crash:
        crash.setattr(Warehouse, "drop_embeddings", fails)
        with pytest.raises(RuntimeError, match="crash before commit"):
            reembed_all(old, embedder=MiniLMEmbedder(cache_size=0))
    assert models(old) == [MINILM_NAME]
    report = reembed_all(old, embedder=MiniLMEmbedder(cache_size=0))
    assert report["model"] == int8 and set(report["dropped_vectors"]) == {MINILM_NAME}
    assert models(old) == [int8]
    run = consolidate_once(old, embedder=MiniLMEmbedder(cache_size=0))
    assert run["embed"].embedded == 0 and run["snapshot"].embedder == int8
    assert served(old) == int8

    # int8 vectors made in batches (before 2026-11-29, `MINILM_INT8_BATCHED`) could not be
    # made again from their texts: the next run re-embeds every active item itself (no
    # `loci reembed` asked), says so, and drops them in the transaction storing the new
    # ones; a running service keeps serving their snapshot until the run publishes.
    batched = make_settings(tmp_path / "batched", embedder="minilm")
    conversation(batched)
    before = MiniLMEmbedder(cache_size=0, precision="int8")
    before.name = MINILM_INT8_BATCHED
    consolidate_once(batched, embedder=before)
    ingest(batched, [dana("And the week after?", role="user")], name="more.jsonl")
    service = MemoryService(batched, embedder=MiniLMEmbedder(cache_size=0), check_interval_ms=0)
    meanwhile: list[tuple[str, int]] = []

    def serving(point: str) -> None:
        if point == "embed:before_commit":
            view = service.view()
            hits = service.recall("the support group Caroline went to", Identity(user_id="dana", project_id="atlas"),
                                  view=view).hits
            meanwhile.append((view.snap.loaded.manifest.embedder, len(hits)))

    try:
        with caplog.at_level(logging.INFO, logger="loci.consolidate"):
            run = consolidate_once(batched, embedder=MiniLMEmbedder(cache_size=0), hook=serving)
        assert meanwhile and meanwhile[0][0] == MINILM_INT8_BATCHED and meanwhile[0][1] > 0
        service.reload()
        swapped = service.wait_for_swap()  # the run's snapshot, once published
        assert swapped.snap.loaded.manifest.embedder == int8
    finally:
        service.close()
    assert run["embed"].embedded == run["embed"].current and run["snapshot"].embedder == int8
    assert set(run["embed"].replaced) == {MINILM_INT8_BATCHED}
    assert "re-embedding every active item" in caplog.text and MINILM_INT8_BATCHED in caplog.text
    assert models(batched) == [int8] and served(batched) == int8
    assert consolidate_once(batched, embedder=MiniLMEmbedder(cache_size=0))["embed"].embedded == 0

    # Another model's vectors are a change the user asks for (`loci reembed`), not a run's.
    with pytest.raises(EmbedderChanged, match="loci reembed"):
        consolidate_once(batched, embedder=MiniLMEmbedder(cache_size=0, precision="float32"))


def test_each_distinct_window_part_is_tokenized_once_and_windows_pool_as_alone() -> None:
    encoder = StandInEncoder(16)
    calls: list[list[str]] = []
    tokenizer = encoder.runner_.tokenizer
    encode = tokenizer.encode_batch
    tokenizer.encode_batch = lambda texts, **kw: calls.append(list(texts)) or encode(texts, **kw)
    a, b, c, d = "a: hi there", "b: hello", "a: lunch?", "b: sure"
    windows = [[a, b, c, d, "(said on 1 May 2023)"], [c, d, "(said on 1 May 2023)"], [a, a, ""]]
    together = encoder.runner_.pool_windows(windows)
    assert calls == [[a, b, c, d, "(said on 1 May 2023)", ""]]  # one call, each part once
    for window, (whole, parts) in zip(windows, together):
        alone_whole, alone_parts = encoder.runner_.pool_windows([window])[0]
        np.testing.assert_array_equal(whole, alone_whole)
        assert len(parts) == len(alone_parts) == len(window) - 1
        for mine, alone in zip(parts, alone_parts):
            np.testing.assert_array_equal(mine, alone)


def test_a_prefetch_after_governance_is_what_the_embedding_stage_reads(tmp_path: Path, monkeypatch) -> None:
    """The Dagster job starts the embedding stage's model work as soon as governance has
    committed (`prefetch_item_vectors`, so the policy check runs beside the model); the
    stage then takes that result: the windows are read once, the vectors are the same."""
    from pipelines.consolidate import embed_items, govern_items, land_events, prefetch_item_vectors
    from pipelines.embedders import PREFETCH_CPU, MiniLMEmbedder
    from pipelines.inbox import open_inbox
    from pipelines.policy import Policy
    from pipelines.warehouse import Warehouse

    settings = make_settings(tmp_path, message_context_pooled=True)
    stand_in = StandInEncoder()
    reads: list[int] = []
    runner_pool = stand_in.runner_.pool_windows
    monkeypatch.setattr(stand_in.runner_, "pool_windows",
                        lambda windows, parallel=1, meter=None: reads.append(len(windows))
                        or runner_pool(windows, parallel, meter))
    model = MiniLMEmbedder(cache_size=0, precision="float32")
    monkeypatch.setattr(model, "runner", lambda precision: stand_in.runner_)
    conversation(settings, TEXTS, "one.jsonl")
    metered = PREFETCH_CPU.seconds
    with Warehouse(settings.warehouse_path) as wh, open_inbox(settings) as inbox:
        land_events(inbox, wh, run_id="r1")
        govern_items(inbox, wh, Policy(settings), settings=settings)
        assert prefetch_item_vectors(wh, model) == 3  # windows at turns 0, 3, 6
        assert embed_items(wh, model).embedded == len(TEXTS)
    assert reads == [3]  # the prefetch's, taken by the stage
    assert PREFETCH_CPU.seconds >= metered  # its CPU metered apart (the run gives it to the stage)
    msgs, stored = stored_message_vectors(settings, model.name)
    expected = item_vectors(msgs, stand_in.embed, {m.id: m for m in msgs}.get, pool=stand_in.pool_windows)
    np.testing.assert_array_equal(stored, expected)


def test_a_store_pooled_with_another_cut_is_refused_until_reembed(tmp_path: Path, monkeypatch) -> None:
    """A store whose messages were pooled before the cut was recorded on them (windows of 4
    every 2, no `pooling` field, a run record saying only "pooled") is another scheme:
    consolidation refuses it though the last run says "pooled", `loci reembed` cuts again."""
    import pytest

    from pipelines import message_context
    from pipelines.consolidate import MessageVectorsChanged, once, reembed_all
    from pipelines.message_context import POOLING, POOLING_KEY, UNMARKED_POOLING, WindowPooling, vector_scheme
    from pipelines.warehouse import Warehouse, embeddings

    settings = make_settings(tmp_path, message_context_pooled=True)
    encoder = StandInEncoder(settings.embedder_dim)
    unmarked = message_context.context_fields

    def old_fields(*args, **kwargs):
        return {k: v for k, v in unmarked(*args, **kwargs).items() if k != POOLING_KEY}

    before = WindowPooling(*map(int, UNMARKED_POOLING.split("/")))
    with monkeypatch.context() as old:  # the code of before: no cut recorded on items or runs
        old.setattr(message_context, "POOLING", before)
        hash_sql = embeddings.EMBEDDING_HASH_SQL.replace(POOLING.recipe, before.recipe)
        old.setattr(embeddings, "EMBEDDING_HASH_SQL", hash_sql)
        old.setattr(message_context, "context_fields", old_fields)
        old.setattr(once, "pooling_record", lambda scheme: "")
        conversation(settings, TEXTS[:5], "one.jsonl")
        consolidate_once(settings, embedder=encoder)
    msgs, _ = stored_message_vectors(settings, encoder.name)
    assert {vector_scheme(m) for m in msgs} == {"pooled" if POOLING.name == UNMARKED_POOLING else "pooled 4/2"}
    if POOLING.name == UNMARKED_POOLING:
        return  # the cut of before is the cut of now: nothing to refuse
    conversation(settings, TEXTS[5:], "two.jsonl")
    with pytest.raises(MessageVectorsChanged, match="loci reembed") as refused:
        consolidate_once(settings, embedder=encoder)
    assert refused.value.stored == {"pooled 4/2": 5}
    assert "has no setting to go back to: run `loci reembed`" in str(refused.value)
    reembed_all(settings, embedder=encoder)
    msgs, stored = stored_message_vectors(settings, encoder.name)
    assert [m.metadata[POOLING_KEY] for m in msgs] == [POOLING.name] * 5
    expected = item_vectors(msgs, encoder.embed, {m.id: m for m in msgs}.get, pool=encoder.pool_windows)
    np.testing.assert_allclose(stored, expected, rtol=1e-5, atol=1e-6)
    assert consolidate_once(settings, embedder=encoder)["govern"].message_vectors == "pooled"
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.vector_schemes() == {"pooled": 7}
