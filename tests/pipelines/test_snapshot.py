"""Snapshot store: build/load round trip, atomic publication, pruning, corruption handling,
embedder mismatch, HNSW above the threshold, empty snapshots."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import faiss
import msgspec
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.records import Link, MemoryItem, Provenance, Scope
from pipelines.snapshot import (
    CURRENT_FILE,
    HNSW_EF_SEARCH,
    INDEX_FILE,
    ITEMS_FILE,
    MANIFEST_FILE,
    EmbedderMismatch,
    SnapshotError,
    build_snapshot,
    current_version,
    items_to_table,
    list_versions,
    load_latest_good,
    load_snapshot,
    prune,
    table_to_items,
)

DIM = 32
EMBEDDER = "hash-32"


def make_item(i: int, *, tier: str = "stm", **kw) -> MemoryItem:
    base = dict(
        id=f"mem_{i:05d}",
        tier=tier,
        type="fact",
        title=f"title {i}",
        content=f"content number {i} — ünïcode ✓",
        scope=Scope(kind="project", project_id="p1", user_id="u1"),
        tags=["alpha", f"t{i % 3}"],
        entities=["Loci"],
        links=[Link(rel="supports", to=f"mem_{i + 1:05d}")],
        provenance=Provenance(source_id=f"turn-{i}", turn_refs=[f"D1:{i}"], event_ids=[f"ev{i}"]),
        confidence=0.1 + (i % 9) / 10,
        importance=1 + i % 10,
        valid_from="2026-01-01T00:00:00+00:00" if i % 2 else None,
        metadata={"merger": "extractive-fallback", "n": i, "ratio": 1 / 3, "nested": {"x": [1, None]}},
    )
    base.update(kw)
    return MemoryItem(**base)


def unit_vectors(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def build(root: Path, n: int = 10, *, watermark: int = 1, seed: int = 0, **kw):
    items = [make_item(i, tier=("stm", "mtm", "ltm")[i % 3]) for i in range(n)]
    kw.setdefault("embedder_name", EMBEDDER)
    return build_snapshot(root, items, unit_vectors(n, seed=seed), dim=DIM, watermark=watermark, **kw), items


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- round trip ----------------------------------------------------------------------------------


def test_build_load_round_trip(tmp_path):
    items = [make_item(i, tier=("stm", "mtm", "ltm")[i % 3]) for i in range(12)]
    vectors = unit_vectors(12)
    manifest = build_snapshot(
        tmp_path, items, vectors, embedder_name=EMBEDDER, dim=DIM, watermark=41, extra={"run_id": "r1"}
    )
    assert current_version(tmp_path) == manifest.version
    snap = load_snapshot(tmp_path, expected_embedder=EMBEDDER)
    assert snap.version == manifest.version and snap.path == tmp_path / manifest.version
    assert snap.items == items  # every field, nested ones included
    np.testing.assert_array_equal(snap.vectors, vectors)
    assert snap.vectors.dtype == np.float32
    m = snap.manifest
    assert (m.watermark, m.embedder, m.dim, m.count, m.index_kind) == (41, EMBEDDER, DIM, 12, "flat-ip")
    assert m.tier_counts == {"ltm": 4, "mtm": 4, "stm": 4}
    assert m.extra == {"run_id": "r1"}
    for name in (INDEX_FILE, ITEMS_FILE):
        assert m.files[name].sha256 == sha256_file(snap.path / name)
    for row, vec in enumerate(vectors):
        hits = snap.search(vec, k=3)[0]
        assert hits[0][0] == row and hits[0][1] == pytest.approx(1.0, abs=1e-5)
        assert snap.items[hits[0][0]].id == items[row].id
    assert snap.row_of[items[5].id] == 5


def test_only_active_items_are_published(tmp_path):
    items = [make_item(0), make_item(1, archived=True), make_item(2, superseded_by="mem_00009"), make_item(3)]
    vectors = unit_vectors(4)
    manifest = build_snapshot(tmp_path, items, vectors, embedder_name=EMBEDDER, dim=DIM, watermark=1)
    snap = load_snapshot(tmp_path)
    assert manifest.count == 2
    assert [i.id for i in snap.items] == ["mem_00000", "mem_00003"]
    np.testing.assert_array_equal(snap.vectors, vectors[[0, 3]])  # vectors follow their items


@pytest.mark.parametrize(
    ("n_items", "vectors", "kw", "needle"),
    [
        (3, unit_vectors(2), {}, "3 items but 2 vectors"),
        (2, unit_vectors(2, dim=16), {}, "dim 16, expected 32"),
        (2, np.full((2, DIM), np.nan, dtype=np.float32), {}, "NaN"),
        (2, unit_vectors(2), {"keep": 0}, "keep"),
        (2, unit_vectors(2), {"watermark": -1}, "watermark"),
        (2, unit_vectors(2), {"embedder_name": ""}, "embedder_name"),
    ],
)
def test_bad_input_raises_value_error(tmp_path, n_items, vectors, kw, needle):
    items = [make_item(i) for i in range(n_items)]
    args = {"embedder_name": EMBEDDER, "dim": DIM, "watermark": 1, **kw}
    with pytest.raises(ValueError, match=needle):
        build_snapshot(tmp_path, items, vectors, **args)
    assert list_versions(tmp_path) == []


def test_duplicate_ids_rejected(tmp_path):
    with pytest.raises(ValueError, match="duplicate"):
        build_snapshot(tmp_path, [make_item(1), make_item(1)], unit_vectors(2), embedder_name=EMBEDDER, dim=DIM,
                       watermark=0)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    title=st.text(max_size=40),
    content=st.text(max_size=200),
    tags=st.lists(st.text(max_size=10), max_size=4),
    metadata=st.dictionaries(
        st.text(max_size=8),
        st.one_of(st.none(), st.booleans(), st.integers(-(2**62), 2**62), st.floats(allow_nan=False),
                  st.text(max_size=10)),
        max_size=4,
    ),
    confidence=st.floats(0, 1),
    expires_at=st.one_of(st.none(), st.text(max_size=30)),
)
def test_parquet_round_trip_is_exact(title, content, tags, metadata, confidence, expires_at):
    item = make_item(7, title=title, content=content, tags=tags, metadata=metadata,
                     confidence=confidence, expires_at=expires_at)
    back = table_to_items(items_to_table([item]))
    assert back == [item]
    assert msgspec.json.encode(back[0]) == msgspec.json.encode(item)


# -- versions, CURRENT, pruning -------------------------------------------------------------------


def test_versions_sort_in_build_order_and_are_unique(tmp_path):
    built = [build(tmp_path, 3, watermark=w)[0].version for w in range(4)]  # same content twice is fine too
    assert built == sorted(built) and len(set(built)) == 4
    assert list_versions(tmp_path) == built[-3:]  # keep=3 by default
    assert current_version(tmp_path) == built[-1]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith((".tmp-", ".trash-", "CURRENT.tmp"))]


def test_keep_last_n(tmp_path):
    built = [build(tmp_path, 2, watermark=w, keep=2)[0].version for w in range(5)]
    assert list_versions(tmp_path) == built[-2:]


def test_prune_never_removes_current(tmp_path):
    built = [build(tmp_path, 2, watermark=w, keep=5)[0].version for w in range(4)]
    (tmp_path / CURRENT_FILE).write_text(built[0] + "\n")  # e.g. an operator rolled back
    removed = prune(tmp_path, keep=1)
    assert sorted(removed) == built[1:3]
    assert list_versions(tmp_path) == [built[0], built[-1]]
    assert load_snapshot(tmp_path).version == built[0]


def test_readers_never_see_a_half_written_snapshot(tmp_path):
    build(tmp_path, 5, watermark=0)
    stop = threading.Event()
    errors: list[BaseException] = []
    loads: list[tuple[int, int]] = []

    def builder() -> None:
        try:
            for w in range(1, 31):
                n = 1 + w % 7  # item count tied to the watermark, to check consistency
                items = [make_item(i) for i in range(n)]
                build_snapshot(tmp_path, items, unit_vectors(n, seed=w), embedder_name=EMBEDDER,
                               dim=DIM, watermark=w, keep=2)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            stop.set()

    def reader() -> None:
        while not stop.is_set():
            try:
                snap = load_snapshot(tmp_path)
                loads.append((snap.manifest.watermark, len(snap.items)))
            except BaseException as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=builder), threading.Thread(target=reader), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert len(loads) > 10
    assert all(n == (5 if w == 0 else 1 + w % 7) for w, n in loads)
    assert load_snapshot(tmp_path).manifest.watermark == 30


# -- damage and fallback ----------------------------------------------------------------------


def test_flipped_bytes_in_index_detected_and_fallback(tmp_path):
    good, _ = build(tmp_path, 6, watermark=1)
    bad, _ = build(tmp_path, 6, watermark=2, seed=1)
    path = tmp_path / bad.version / INDEX_FILE
    data = bytearray(path.read_bytes())
    for pos in range(len(data) // 2, len(data) // 2 + 8):
        data[pos] ^= 0xFF
    path.write_bytes(bytes(data))

    with pytest.raises(SnapshotError, match="checksum mismatch"):
        load_snapshot(tmp_path)
    snap, problems = load_latest_good(tmp_path)
    assert snap is not None and snap.version == good.version
    assert len(problems) == 1 and bad.version in problems[0] and "checksum mismatch" in problems[0]


def test_truncated_items_detected_and_fallback(tmp_path):
    good, _ = build(tmp_path, 6, watermark=1)
    bad, _ = build(tmp_path, 6, watermark=2)
    path = tmp_path / bad.version / ITEMS_FILE
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(SnapshotError, match="truncated"):
        load_snapshot(tmp_path, bad.version)
    snap, problems = load_latest_good(tmp_path)
    assert snap.version == good.version
    assert "truncated" in problems[0]


def test_garbled_manifest_and_missing_folder(tmp_path):
    good, _ = build(tmp_path, 3, watermark=1)
    bad, _ = build(tmp_path, 3, watermark=2)
    (tmp_path / bad.version / MANIFEST_FILE).write_text("{not json")
    with pytest.raises(SnapshotError, match="corrupt"):
        load_snapshot(tmp_path)
    (tmp_path / CURRENT_FILE).write_text("29990101T000000000000Z-deadbeefdead\n")
    with pytest.raises(SnapshotError, match="missing"):
        load_snapshot(tmp_path)
    snap, problems = load_latest_good(tmp_path)
    assert snap.version == good.version
    assert any("missing" in p for p in problems) and any("corrupt" in p for p in problems)


def test_garbage_current_and_bad_version_names(tmp_path):
    good, _ = build(tmp_path, 3, watermark=1)
    (tmp_path / CURRENT_FILE).write_text("../../etc\n")
    with pytest.raises(SnapshotError, match="does not name a snapshot version"):
        current_version(tmp_path)
    with pytest.raises(SnapshotError, match="not a snapshot version name"):
        load_snapshot(tmp_path, "../elsewhere")
    snap, problems = load_latest_good(tmp_path)
    assert snap.version == good.version and "does not name" in problems[0]


def test_nothing_published_yet(tmp_path):
    assert current_version(tmp_path / "absent") is None
    assert list_versions(tmp_path / "absent") == []
    assert load_latest_good(tmp_path / "absent") == (None, [])
    with pytest.raises(SnapshotError, match="no snapshot published"):
        load_snapshot(tmp_path)


def test_embedder_mismatch(tmp_path):
    build(tmp_path, 3, watermark=1)
    with pytest.raises(EmbedderMismatch, match="'hash-32'.*'all-MiniLM-L6-v2'"):
        load_snapshot(tmp_path, expected_embedder="all-MiniLM-L6-v2")
    assert issubclass(EmbedderMismatch, SnapshotError)
    snap, problems = load_latest_good(tmp_path, expected_embedder="all-MiniLM-L6-v2")
    assert snap is None and "built with embedder" in problems[0]
    assert load_snapshot(tmp_path, expected_embedder=EMBEDDER).manifest.count == 3


# -- index kinds -------------------------------------------------------------------------------


def test_hnsw_above_threshold_with_good_recall(tmp_path):
    n, dim, k = 2000, 384, 10
    vectors = unit_vectors(n, dim=dim, seed=3)
    items = [make_item(i) for i in range(n)]
    manifest = build_snapshot(tmp_path, items, vectors, embedder_name="x", dim=dim, watermark=1, hnsw_threshold=1000)
    assert manifest.index_kind == "hnsw"
    assert manifest.index_params["ef_search"] == HNSW_EF_SEARCH
    snap = load_snapshot(tmp_path)
    inner = faiss.downcast_index(snap.index.index)
    assert isinstance(inner, faiss.IndexHNSWFlat) and inner.hnsw.efSearch == HNSW_EF_SEARCH
    np.testing.assert_array_equal(snap.vectors, vectors)

    queries = unit_vectors(200, dim=dim, seed=4)
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :k]
    _, approx = snap.index.search(queries, k)
    recall = np.mean([len(set(e) & set(a)) / k for e, a in zip(exact, approx)])
    assert recall >= 0.95

    below = build_snapshot(tmp_path, items[:999], vectors[:999], embedder_name="x", dim=dim, watermark=2,
                           hnsw_threshold=1000)
    assert below.index_kind == "flat-ip"
    assert isinstance(faiss.downcast_index(load_snapshot(tmp_path).index.index), faiss.IndexFlatIP)


def test_empty_snapshot(tmp_path):
    empty = np.zeros((0, DIM), dtype=np.float32)
    manifest = build_snapshot(tmp_path, [], empty, embedder_name=EMBEDDER, dim=DIM, watermark=0)
    snap = load_snapshot(tmp_path)
    assert manifest.count == 0 and manifest.tier_counts == {}
    assert snap.items == [] and snap.vectors.shape == (0, DIM) and snap.index.ntotal == 0
    assert snap.search(unit_vectors(2), k=5) == [[], []]
    _, rows = snap.index.search(unit_vectors(1), 3)
    assert (rows == -1).all()


def test_load_current_follows_current_when_it_moves_mid_read(tmp_path, monkeypatch):
    import pipelines.snapshot.load as snapshot_module

    good, _ = build(tmp_path, 3, watermark=7)
    answers = iter(["20000101T000000000000Z-0000000000aa", good.version, good.version, good.version])
    monkeypatch.setattr(snapshot_module, "current_version", lambda root: next(answers))
    snap = load_snapshot(tmp_path)  # the first name was pruned before we read it
    assert snap.version == good.version and snap.manifest.watermark == 7


def test_hnsw_graph_is_extended_not_rebuilt_and_dead_slots_never_surface(tmp_path):
    """The next HNSW snapshot reuses the previous graph: removed and re-embedded items
    leave dead slots (labels >= count) that no search returns; new items are added. Past
    `reuse_max_dead` the graph is rebuilt."""
    from pipelines.recall.corpus import MemoryCorpus

    n, dim, k = 1200, 64, 10
    vectors = unit_vectors(n + 100, dim=dim, seed=5)
    items = [make_item(i) for i in range(n + 100)]
    first = build_snapshot(tmp_path, items[:n], vectors[:n], embedder_name="x", dim=dim, watermark=1,
                           hnsw_threshold=1000)
    assert first.index_kind == "hnsw" and first.index_dead == 0
    # Next: 50 removed, 30 re-embedded, 100 new; order shuffled.
    changed = vectors[:n].copy()
    changed[100:130] = unit_vectors(30, dim=dim, seed=6)
    keep_rows = list(range(50, n)) + list(range(n, n + 100))
    rng = np.random.default_rng(0)
    rng.shuffle(keep_rows)
    all_vecs = np.vstack([changed, vectors[n:]])
    new_items = [items[r] for r in keep_rows]
    new_vecs = all_vecs[keep_rows]
    second = build_snapshot(tmp_path, new_items, new_vecs, embedder_name="x", dim=dim, watermark=2,
                            hnsw_threshold=1000, reuse=tmp_path / first.version)
    assert second.index_kind == "hnsw" and second.count == n + 50
    assert second.index_dead == 80  # 50 removed + 30 re-embedded
    snap = load_snapshot(tmp_path)
    assert snap.version == second.version and snap.index.ntotal == n + 50 + 80
    assert [it.id for it in snap.items] == [it.id for it in new_items]
    np.testing.assert_array_equal(snap.vectors, new_vecs)  # row i is item i's current vector
    # Every item is its own nearest neighbour, through the snapshot and through the corpus
    # (FAISS path with a selector); dead labels never come back.
    for row in range(0, len(new_items), 37):
        hits = snap.search(new_vecs[row], k)[0]
        assert hits[0][0] == row and all(0 <= r < snap.manifest.count for r, _ in hits)
    corpus = MemoryCorpus(snap.items, snap.vectors, snap.index, exact_max_rows=10)
    allowed = np.ones(corpus.n, dtype=bool)
    allowed[::2] = False
    for row in range(1, corpus.n, 42):  # odd rows: allowed
        rows, _ = corpus.dense_search(new_vecs[row], allowed, k)
        assert rows[0] == row and allowed[rows].all() and (rows < corpus.n).all()
    # Too many dead slots: a fresh graph.
    third = build_snapshot(tmp_path, new_items[:1000], new_vecs[:1000], embedder_name="x", dim=dim,
                           watermark=3, hnsw_threshold=1000, reuse=tmp_path / second.version,
                           reuse_max_dead=0.1)
    assert third.index_dead == 0 and load_snapshot(tmp_path).index.ntotal == 1000
    # A corrupt previous snapshot is not reused (full build instead).
    (tmp_path / third.version / INDEX_FILE).write_bytes(b"garbage")
    fourth = build_snapshot(tmp_path, new_items[:1001], new_vecs[:1001], embedder_name="x", dim=dim,
                            watermark=4, hnsw_threshold=1000, reuse=tmp_path / third.version)
    assert fourth.index_dead == 0 and load_snapshot(tmp_path).index.ntotal == 1001


def history_rows(item_ids: list[str], per_item: int) -> pa.Table:
    from pipelines.item_history import HISTORY_SCHEMA

    rows = []
    for item_id in item_ids:
        for n in range(1, per_item + 1):
            rows.append({"item_id": item_id, "kind": "revision", "ord": n, "at": f"2026-01-0{n}", "action": "create",
                         "data": msgspec.json.encode({"id": item_id, "n": n}).decode(), "content_sha256": None,
                         "actor": "dana", "inbox_seq": n, "requested_at": None})
            rows.append({"item_id": item_id, "kind": "event", "ord": 1000 + n, "at": f"2026-01-0{n}",
                         "action": "update", "data": '{"reason": "x"}', "content_sha256": "h", "actor": None,
                         "inbox_seq": None, "requested_at": None})
    return pa.Table.from_pylist(list(reversed(rows)), schema=HISTORY_SCHEMA)  # unsorted on purpose


def test_history_is_published_checksummed_and_read_one_item_at_a_time(tmp_path):
    from pipelines.snapshot import HISTORY_FILE

    ids = [f"mem_{i:05d}" for i in range(10)]
    manifest, _ = build(tmp_path, history=history_rows(ids, per_item=3))
    assert HISTORY_FILE in manifest.files
    loaded = load_snapshot(tmp_path)
    revisions, events = loaded.history("mem_00004")
    assert [r["revision_num"] for r in revisions] == [1, 2, 3]  # sorted on the way in
    assert revisions[0]["snapshot"] == {"id": "mem_00004", "n": 1} and revisions[0]["actor"] == "dana"
    assert [e["id"] for e in events] == [1001, 1002, 1003] and events[0]["details"] == {"reason": "x"}
    assert loaded.history("mem_99999") == ([], [])
    # A snapshot built without history says so (None), and a damaged file costs only the history.
    build(tmp_path / "plain")
    assert load_snapshot(tmp_path / "plain").history("mem_00001") is None
    (tmp_path / manifest.version / HISTORY_FILE).write_bytes(b"garbage")
    assert load_snapshot(tmp_path).history("mem_00004") is None


def test_loaded_vectors_are_a_read_only_view_of_the_mapped_index(tmp_path):
    """Workers serving one version share its vectors through the page cache: the loaded
    matrix is a view into the memory-mapped index (no private copy), read-only, and it
    keeps the index alive after the snapshot object is gone."""
    manifest, items = build(tmp_path, 40)
    snap = load_snapshot(tmp_path)
    expected = unit_vectors(40)
    np.testing.assert_array_equal(snap.vectors, expected)
    assert not snap.vectors.flags.owndata and not snap.vectors.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        snap.vectors[0, 0] = 1.0
    vectors = snap.vectors
    del snap
    import gc

    gc.collect()
    np.testing.assert_array_equal(vectors, expected)  # the mapping is still there


def test_reused_graph_with_only_new_items_keeps_rows_aligned(tmp_path):
    """Items added between existing ones (ids sort in between) with no dead slot: the
    graph's slots are not in row order, and every row must still be its own item's vector."""
    n, dim = 1100, 32
    vectors = unit_vectors(n, dim=dim, seed=9)
    items = [make_item(i) for i in range(n)]
    odd = list(range(1, n, 2))
    first = build_snapshot(tmp_path, [items[i] for i in odd], vectors[odd], embedder_name="x", dim=dim,
                           watermark=1, hnsw_threshold=500)
    second = build_snapshot(tmp_path, items, vectors, embedder_name="x", dim=dim, watermark=2,
                            hnsw_threshold=500, reuse=tmp_path / first.version)
    assert second.index_kind == "hnsw" and second.index_dead == 0
    snap = load_snapshot(tmp_path)
    assert [it.id for it in snap.items] == [it.id for it in items]
    np.testing.assert_array_equal(snap.vectors, vectors)
    assert snap.search(vectors[10], 1)[0][0][0] == 10
