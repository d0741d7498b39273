"""Segmented snapshots (`publish_next`): a version shares the previous item table and history
and adds a delta segment; it must serve exactly what a full build of the same state serves,
compact past its fraction, load format-1 snapshots, and fail loudly on a damaged segment."""

from __future__ import annotations

import os
from pathlib import Path

import faiss
import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipelines.item_history import HISTORY_SCHEMA, split_history
from pipelines.recall import MemoryCorpus
from pipelines.records import utcnow
from pipelines.snapshot import (
    HISTORY_DELTA_FILE,
    HISTORY_FILE,
    INDEX_DELTA_FILE,
    INDEX_FILE,
    INDEX_LABELS_FILE,
    ITEMS_DELTA_FILE,
    ITEMS_FILE,
    ITEMS_REMOVED_FILE,
    MANIFEST_FILE,
    SnapshotError,
    build_snapshot,
    items_to_table,
    load_latest_good,
    load_snapshot,
    publish_next,
    read_published,
)
from tests.pipelines.test_snapshot import DIM, make_item, unit_vectors

pytestmark = pytest.mark.slow  # one of the longest files: scheduled first (tests/conftest.py)

EMBEDDER = "hash-32"


class Store:
    """The state a warehouse would hold: active items, their vectors and their history
    (one revision per write, stamped with the time it was written), changed round by round."""

    def __init__(self, n: int) -> None:
        self.items = {f"mem_{i:05d}": make_item(i, tier=("stm", "mtm", "ltm")[i % 3]) for i in range(n)}
        self.vectors = dict(zip(self.items, unit_vectors(n, seed=1)))
        self.revisions = {item_id: [utcnow()] for item_id in self.items}
        self.next_id = n

    def history(self, since: str | None = None) -> pa.Table:
        rows = [{"item_id": item_id, "kind": "revision", "ord": n, "at": at,
                 "action": "update" if n > 1 else "create",
                 "data": msgspec.json.encode({"id": item_id, "n": n}).decode(), "content_sha256": None,
                 "actor": "dana", "inbox_seq": n, "requested_at": None}
                for item_id in sorted(self.items) for n, at in enumerate(self.revisions[item_id], 1)
                if since is None or at >= since]
        return pa.Table.from_pylist(rows, schema=HISTORY_SCHEMA)

    def change(self, seed: int, *, updated: int, removed: int, added: int) -> list[str]:
        """Re-embed and revise `updated` items, remove `removed`, add `added`; the ids written."""
        rng = np.random.default_rng(seed)
        ids = sorted(self.items)
        picked = rng.choice(len(ids), size=updated + removed, replace=False)
        written = []
        for k, row in enumerate(picked):
            item_id = ids[row]
            if k < updated:
                self.items[item_id] = msgspec.structs.replace(self.items[item_id], title=f"changed {seed}")
                self.vectors[item_id] = unit_vectors(1, seed=seed * 1000 + k)[0]
                self.revisions[item_id].append(utcnow())
                written.append(item_id)
            else:
                del self.items[item_id], self.vectors[item_id], self.revisions[item_id]
        for k in range(added):
            item = make_item(self.next_id, tier="stm")
            self.next_id += 1
            self.items[item.id] = item
            self.vectors[item.id] = unit_vectors(1, seed=seed * 1000 + 500 + k)[0]
            self.revisions[item.id] = [utcnow()]
            written.append(item.id)
        return written

    def full(self, root: Path, watermark: int, **kw):
        ids = sorted(self.items)
        return build_snapshot(root, [self.items[i] for i in ids], np.stack([self.vectors[i] for i in ids]),
                              embedder_name=EMBEDDER, dim=DIM, watermark=watermark, history=self.history(), **kw)

    def next(self, root: Path, written: list[str], watermark: int, **kw):
        previous = read_published(root, load_snapshot(root).version)
        return publish_next(root, previous, items_to_table([self.items[i] for i in written]),
                            np.stack([self.vectors[i] for i in written]) if written else np.zeros((0, DIM)),
                            set(self.items), watermark=watermark, history=self.history, **kw)


def full_build_histories(full) -> dict[str, tuple]:
    """`full.history(id)` of every item of a full build (one file, no delta), read in one
    pass: the reference side of `assert_same_service` (a read per item costs seconds)."""
    assert HISTORY_DELTA_FILE not in full.manifest.files
    table = pq.read_table(full.path / HISTORY_FILE, schema=HISTORY_SCHEMA)
    return {item.id: split_history(table.filter(pc.field("item_id") == item.id)) for item in full.items}


def assert_same_service(segmented, full) -> None:
    """Same items, vectors, histories and nearest neighbours, whatever the row order."""
    assert sorted(segmented.items, key=lambda i: i.id) == sorted(full.items, key=lambda i: i.id)
    assert segmented.manifest.tier_counts == full.manifest.tier_counts
    expected_history = full_build_histories(full)
    for item in full.items:
        row, ref = segmented.row_of[item.id], full.row_of[item.id]
        np.testing.assert_array_equal(segmented.vectors[row], full.vectors[ref])
        assert segmented.history(item.id) == expected_history[item.id]
        assert segmented.items[segmented.search(full.vectors[ref], 1)[0][0][0]].id == item.id


@pytest.mark.parametrize("hnsw_threshold", [1_000_000, 300], ids=["flat", "hnsw"])
def test_segmented_versions_serve_what_a_full_build_serves(tmp_path, hnsw_threshold):
    store = Store(400)
    root, ref_root = tmp_path / "seg", tmp_path / "full"
    first = store.full(root, 1, hnsw_threshold=hnsw_threshold)
    assert first.delta_count == 0 and first.base == ""
    for rnd in range(1, 4):
        written = store.change(rnd, updated=5, removed=4, added=8)
        manifest = store.next(root, written, rnd + 1, hnsw_threshold=hnsw_threshold, keep=2)
        # The base files are the first version's (hard links), only a delta was written.
        assert manifest.base == first.version and ITEMS_DELTA_FILE in manifest.files
        assert manifest.files[ITEMS_FILE] == first.files[ITEMS_FILE]
        assert manifest.files[HISTORY_FILE] == first.files[HISTORY_FILE]
        # The delta holds every item written since the base (13 a round, some written twice).
        assert 13 <= manifest.delta_count <= 13 * rnd and manifest.removed_count >= 9
        folder = root / manifest.version
        assert os.stat(folder / ITEMS_FILE).st_nlink >= 2
        assert manifest.index_kind == ("hnsw" if hnsw_threshold == 300 else "flat-ip")
        segmented = load_snapshot(root)
        store.full(ref_root, rnd + 1, hnsw_threshold=hnsw_threshold)
        assert_same_service(segmented, load_snapshot(ref_root))
    # The first version is pruned (keep=2): its files live on through the links.
    assert not (root / first.version).exists()
    # Past the fraction the next version rewrites the base: a self-contained version again.
    written = store.change(9, updated=60, removed=30, added=40)
    compacted = store.next(root, written, 9, hnsw_threshold=hnsw_threshold, compact_fraction=0.25)
    assert compacted.base == "" and compacted.delta_count == compacted.removed_count == 0
    assert not {ITEMS_DELTA_FILE, ITEMS_REMOVED_FILE, HISTORY_DELTA_FILE} & set(compacted.files)
    store.full(ref_root, 9, hnsw_threshold=hnsw_threshold)
    assert_same_service(load_snapshot(root), load_snapshot(ref_root))


def test_an_item_rewritten_with_the_same_vector_keeps_its_graph_node(tmp_path):
    """Promotion, palace placement and usage rewrite an item without changing its vector:
    the next version relabels its HNSW node instead of adding a copy and leaving a dead one,
    and serves what a full build serves."""
    store = Store(400)
    root, ref_root = tmp_path / "seg", tmp_path / "full"
    store.full(root, 1, hnsw_threshold=300)
    before = load_snapshot(root)
    promoted = sorted(store.items)[:30]
    for item_id in promoted:  # same vector, new tier
        store.items[item_id] = msgspec.structs.replace(store.items[item_id], tier="ltm")
    written = promoted + store.change(2, updated=5, removed=0, added=8)
    manifest = store.next(root, written, 2, hnsw_threshold=300)
    assert manifest.index_kind == "hnsw"
    # Only the 5 re-embedded items leave dead nodes; 5 + 8 vectors are added, not 30 more
    # (to the delta index: the graph file is kept).
    assert manifest.index_dead == before.manifest.index_dead + 5
    after = load_snapshot(root)
    assert after.index.ntotal == before.index.ntotal and len(after.exact_rows) == 5 + 8
    store.full(ref_root, 2, hnsw_threshold=300)
    assert_same_service(load_snapshot(root), load_snapshot(ref_root))


def test_a_format_1_snapshot_loads_and_becomes_the_base_of_the_next(tmp_path):
    """Snapshots published before segments (format 1, no segment fields) keep loading and
    are the base the next incremental version shares."""
    store = Store(50)
    first = store.full(tmp_path, 1)
    path = tmp_path / first.version / MANIFEST_FILE
    old = msgspec.json.decode(path.read_bytes())
    for key in ("base", "delta_count", "removed_count"):
        old.pop(key)
    path.write_bytes(msgspec.json.encode({**old, "format": 1}))
    assert load_snapshot(tmp_path).manifest.format == 1
    written = store.change(1, updated=2, removed=2, added=3)
    second = store.next(tmp_path, written, 2)
    assert second.base == first.version and second.delta_count == 5 and second.removed_count == 4
    store.full(tmp_path / "full", 2)
    assert_same_service(load_snapshot(tmp_path), load_snapshot(tmp_path / "full"))


@pytest.mark.parametrize("damaged", [ITEMS_DELTA_FILE, ITEMS_REMOVED_FILE, HISTORY_DELTA_FILE])
def test_a_damaged_segment_is_caught(tmp_path, damaged):
    """Every segment is checksummed: a damaged item segment makes the version unloadable (the
    service falls back to the previous one); a damaged history segment costs the history only."""
    store = Store(30)
    first = store.full(tmp_path, 1)
    second = store.next(tmp_path, store.change(1, updated=1, removed=1, added=1), 2)
    _flip_one_byte(tmp_path / second.version / damaged)
    if damaged == HISTORY_DELTA_FILE:
        snap = load_snapshot(tmp_path)
        assert snap.version == second.version and snap.history(snap.items[0].id) is None
        return
    _assert_refused_for_the_previous(tmp_path, first.version, second.version)


def _flip_one_byte(path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one byte flipped: only the checksum can tell
    path.write_bytes(bytes(data))


def _assert_refused_for_the_previous(root, previous: str, damaged: str) -> None:
    """The damaged version does not load, the previous one serves, and no run builds on it."""
    with pytest.raises(SnapshotError, match="checksum"):
        load_snapshot(root, damaged)
    snap, problems = load_latest_good(root)
    assert snap is not None and snap.version == previous and problems
    with pytest.raises(SnapshotError):
        read_published(root, damaged)


def _dense(corpus: MemoryCorpus, query: np.ndarray, k: int) -> list[str]:
    rows, _ = corpus.dense_search(query, corpus.active.copy(), k)
    return [corpus.ids[r] for r in rows]


def test_a_run_adding_few_vectors_keeps_the_graph_file_and_recall_finds_them(tmp_path):
    """A run whose new vectors are few next to the graph links the published graph file
    and writes its labels and an exact delta index: recall (the service's corpus, through the
    FAISS path) finds the new and re-embedded items, never a removed or superseded one, and
    ranks every item as over a flat index of the same vectors. Past the fraction the delta is
    folded into the graph, which is rewritten."""
    store = Store(400)
    root = tmp_path / "seg"
    first = store.full(root, 1, hnsw_threshold=300)
    removed_before = set(store.items)
    written = store.change(1, updated=5, removed=4, added=8)
    removed = removed_before - set(store.items)
    second = store.next(root, written, 2, hnsw_threshold=300, index_delta_fraction=0.05)
    folder = root / second.version
    assert second.files[INDEX_FILE] == first.files[INDEX_FILE] and second.index_base == first.version
    assert os.stat(folder / INDEX_FILE).st_ino == os.stat(root / first.version / INDEX_FILE).st_ino
    assert {INDEX_DELTA_FILE, INDEX_LABELS_FILE} <= set(second.files) and second.index_delta_count == 13
    snap = load_snapshot(root)
    corpus = MemoryCorpus(snap.items, snap.vectors, snap.index, exact_rows=snap.exact_rows, exact_max_rows=0,
                          hnsw_ef_search=400)
    flat = faiss.IndexIDMap2(faiss.IndexFlatIP(DIM))
    flat.add_with_ids(np.ascontiguousarray(snap.vectors), np.arange(len(snap.items), dtype=np.int64))
    reference = MemoryCorpus(snap.items, snap.vectors, flat, exact_max_rows=0)
    for item_id in written:  # new and re-embedded: found first by their own vector
        assert _dense(corpus, store.vectors[item_id], 1) == [item_id]
    for item_id in removed:  # gone from the snapshot: its old vector finds something else
        assert item_id not in snap.row_of
        assert item_id not in _dense(corpus, first_vectors(root, first.version, item_id), 10)
    for q in unit_vectors(30, seed=77):
        assert _dense(corpus, q, 10) == _dense(reference, q, 10)
    # The next run folds once the delta passes the fraction: the graph holds every row again.
    written = store.change(2, updated=5, removed=4, added=8)
    third = store.next(root, written, 3, hnsw_threshold=300, index_delta_fraction=0.05)
    assert third.index_base == "" and third.index_delta_count == 0
    assert third.files[INDEX_FILE] != first.files[INDEX_FILE]
    assert not {INDEX_DELTA_FILE, INDEX_LABELS_FILE} & set(third.files)
    store.full(tmp_path / "full", 3, hnsw_threshold=300)
    assert_same_service(load_snapshot(root), load_snapshot(tmp_path / "full"))


def first_vectors(root: Path, version: str, item_id: str) -> np.ndarray:
    snap = load_snapshot(root, version)
    return np.asarray(snap.vectors[snap.row_of[item_id]])


@pytest.mark.parametrize("damaged", [INDEX_DELTA_FILE, INDEX_LABELS_FILE])
def test_a_damaged_index_segment_is_caught(tmp_path, damaged):
    """The delta index and the graph's labels are checksummed like every file: the version
    does not load (the previous one serves) and the next run cannot build on it."""
    store = Store(400)
    first = store.full(tmp_path, 1, hnsw_threshold=300)
    second = store.next(tmp_path, store.change(1, updated=2, removed=2, added=3), 2, hnsw_threshold=300)
    assert damaged in second.files
    _flip_one_byte(tmp_path / second.version / damaged)
    _assert_refused_for_the_previous(tmp_path, first.version, second.version)


def test_a_full_build_reusing_a_segmented_index_serves_what_a_fresh_one_serves(tmp_path):
    """`build_snapshot(reuse=...)` over a version whose graph file is shared: the graph is
    read with that version's labels and its delta rows are added, not lost or mislabelled."""
    store = Store(400)
    root = tmp_path / "seg"
    store.full(root, 1, hnsw_threshold=300)
    second = store.next(root, store.change(1, updated=5, removed=4, added=8), 2, hnsw_threshold=300)
    assert second.index_delta_count == 13
    store.change(2, updated=3, removed=2, added=4)
    rebuilt = store.full(root, 3, hnsw_threshold=300, reuse=root / second.version)
    assert rebuilt.index_kind == "hnsw" and rebuilt.index_delta_count == 0 and rebuilt.index_dead > 0
    store.full(tmp_path / "full", 3, hnsw_threshold=300)
    assert_same_service(load_snapshot(root), load_snapshot(tmp_path / "full"))
