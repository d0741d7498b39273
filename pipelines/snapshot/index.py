"""A version's FAISS index: built, carried over from the previous version, read back.

Index choice: exact inner product (`IndexFlatIP`) below `hnsw_threshold` items, HNSW above
(M=32, efConstruction=128, efSearch=64). Measured at 100k x 384 on 2 shared cores, one
query, k=10: flat 8.8 ms p50; HNSW 1.3 ms p50 (efSearch 64: 0.7 ms), recall@10 vs flat
1.00 on clustered data; HNSW build ~170 s (flat: 3 s). Single queries are several times
faster with one OpenMP thread than with two (flat 8.8 vs 40 ms, HNSW 1.3 vs 8 ms), so
loading sets FAISS to one thread by default; building uses all cores.

Vectors are not stored twice: flat and HNSW-flat indexes keep the exact float32 rows, and
the index checksum covers them. Loading memory-maps the index (read-only) and serves the
vectors as a view of it (`stored_rows`), so every worker process serving one version
shares one copy in the page cache instead of holding its own.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import faiss
import numpy as np
import pyarrow as pa

from pipelines.snapshot.files import checked_path, read_index_checked, read_manifest
from pipelines.snapshot.layout import (
    INDEX_DELTA_FILE,
    INDEX_FILE,
    INDEX_LABELS_FILE,
    IndexKind,
    SnapshotError,
    SnapshotManifest,
)
from pipelines.snapshot.segments import served_table

if TYPE_CHECKING:
    from pipelines.snapshot.publish import PublishedVersion

HNSW_M = 32
HNSW_EF_CONSTRUCTION = 128  # build quality; build time grows about linearly with it
# Recall/latency trade-off at query time (stored in the manifest; recall widens it for
# filtered searches). 64 is the value the service's latency and recall were measured with.
HNSW_EF_SEARCH = 64
# Flat codes (the vectors of flat and HNSW-flat indexes) are memory-mapped, read-only.
INDEX_READ_FLAGS = faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY
SEARCH_THREADS = 1  # single queries: one OpenMP thread is fastest (see module docstring)
# Past this many delta vectors per graph slot a run folds them into the graph (extends it and
# rewrites the file). Exact search over 5k x 384 floats (the bound at 100k) costs ~0.2-0.4 ms
# per query next to the graph's ~1 ms; a fold adds ~1 ms per vector plus the whole rewrite
# (200 MB at 100k), paid once per ~5 runs of +1k turns instead of every run.
INDEX_DELTA_FRACTION = 0.05


@contextlib.contextmanager
def faiss_threads(n: int) -> Iterator[None]:
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(max(1, n))
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)


def set_search_threads(n: int = SEARCH_THREADS) -> None:
    """FAISS OpenMP threads for this process (global)."""
    faiss.omp_set_num_threads(max(1, n))


@dataclass(frozen=True)
class BuiltIndex:
    index: Any  # None: the previous graph file is kept (a segmented index, see `labels` and `delta`)
    kind: IndexKind
    params: dict[str, int]
    dead: int  # slots of removed items still in a reused HNSW graph
    labels: np.ndarray | None = None  # the kept graph's slot labels in the new rows
    delta: Any = None  # exact IndexIDMap2 of the rows the kept graph does not hold


# -- build ----------------------------------------------------------------------------------


def _make_index(vectors: np.ndarray, dim: int, hnsw_threshold: int) -> BuiltIndex:
    n = vectors.shape[0]
    if n >= hnsw_threshold and n > 0:
        inner = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        inner.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        inner.hnsw.efSearch = HNSW_EF_SEARCH
        kind: IndexKind = "hnsw"
        params = {"m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION, "ef_search": HNSW_EF_SEARCH}
    else:
        inner = faiss.IndexFlatIP(dim)
        kind, params = "flat-ip", {}
    index = faiss.IndexIDMap2(inner)
    if n:
        with faiss_threads(os.cpu_count() or 1):
            index.add_with_ids(vectors, np.arange(n, dtype=np.int64))
    return BuiltIndex(index=index, kind=kind, params=params, dead=0)


def build_index(
    kept: list[str],
    vecs: np.ndarray,
    dim: int,
    hnsw_threshold: int,
    reuse: Path | None,
    reuse_max_dead: float,
) -> BuiltIndex:
    # Extending the previous HNSW graph saves minutes of build; it only applies when this
    # snapshot is HNSW too, and `_reuse_hnsw` declines (None) when too much of it is dead.
    if reuse is not None and len(kept) >= hnsw_threshold and len(kept) > 0:
        reused = _reuse_hnsw(Path(reuse), kept, vecs, dim, reuse_max_dead)
        if reused is not None:
            index, params, dead = reused
            return BuiltIndex(index=index, kind="hnsw", params=params, dead=dead)
    return _make_index(vecs, dim, hnsw_threshold)


def _reuse_hnsw(
    previous: Path, kept: Sequence[str], vecs: np.ndarray, dim: int, max_dead: float
) -> tuple[Any, dict[str, int], int] | None:
    """The previous snapshot's HNSW graph relabelled for the new rows, plus the vectors of
    new or re-embedded items: building a 100k graph costs ~20 s on 2 cores, adding 1k to it
    a fraction of a second. Slots whose item left or changed vector stay in the graph with
    labels >= len(kept) (searches drop them). None when it cannot or should not be reused
    (another kind or shape, unreadable, too many dead slots)."""
    try:
        manifest = read_manifest(previous, previous.name)
        if manifest.index_kind != "hnsw" or manifest.dim != dim:
            return None
        if manifest.index_params.get("m") != HNSW_M:
            return None
        index = read_index_checked(previous, INDEX_FILE, manifest.files[INDEX_FILE])
        table = served_table(previous, manifest, ["id"])
        if not isinstance(index, faiss.IndexIDMap2):
            return None
        # A segmented index: the graph's slots in that version's rows; its delta rows are
        # not in the graph, so they are added below like new ones.
        labels = graph_labels(previous, manifest, index)
    except (SnapshotError, RuntimeError, OSError, pa.ArrowException, KeyError):
        return None
    if index.ntotal + manifest.index_delta_count != manifest.count + manifest.index_dead:
        return None
    prev_ids = table.column("id").to_pylist()
    n = len(kept)
    live_slots, new_rows = _slot_rows(labels, prev_ids, {item_id: row for row, item_id in enumerate(kept)})
    carried = new_rows >= 0
    if carried.any():  # an item whose vector changed is re-added, its old slot dead
        old_vecs = index.reconstruct_batch(labels[live_slots[carried]])
        same = np.all(old_vecs == vecs[new_rows[carried]], axis=1)
        idx = np.flatnonzero(carried)
        new_rows[idx[~same]] = -1
    missing = np.setdiff1d(np.arange(n, dtype=np.int64), new_rows[new_rows >= 0])
    dead = _relabel_and_extend(index, labels, live_slots, new_rows, n, missing, vecs[missing], max_dead)
    if dead is None:
        return None
    return index, _reused_hnsw_params(index, manifest), dead


def _reused_hnsw_params(index: Any, manifest: SnapshotManifest) -> dict[str, int]:
    """The index parameters of a published HNSW graph carried into the next snapshot."""
    inner = faiss.downcast_index(index.index)
    return {"m": HNSW_M, "ef_construction": int(inner.hnsw.efConstruction),
            "ef_search": int(manifest.index_params.get("ef_search", HNSW_EF_SEARCH))}


def _slot_rows(labels: np.ndarray, prev_ids: Sequence[str], row_of: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """The live slots of a published graph (its slot labels < len(prev_ids)) and, per slot,
    the row its item keeps in the next snapshot (`row_of`), or -1 when it does not carry over."""
    live_slots = np.flatnonzero(labels < len(prev_ids))
    new_rows = np.fromiter((row_of.get(prev_ids[labels[s]], -1) for s in live_slots), dtype=np.int64,
                           count=len(live_slots))
    return live_slots, new_rows


def _relabel_and_extend(index: Any, labels: np.ndarray, live_slots: np.ndarray, new_rows: np.ndarray, n: int,
                        add_rows: np.ndarray, add_vecs: np.ndarray, max_dead: float) -> int | None:
    """Relabel a graph in place for the next snapshot's n rows (`_relabelled`) and add
    `add_vecs` as rows `add_rows`. Returns the dead slots, or None (index untouched) when more
    than `max_dead` of them would be dead."""
    got = _relabelled(labels, live_slots, new_rows, n, len(add_rows), max_dead)
    if got is None:
        return None
    _extend(index, got[0], add_rows, add_vecs)
    return got[1]


def _relabelled(labels: np.ndarray, live_slots: np.ndarray, new_rows: np.ndarray, n: int, n_add: int,
                max_dead: float) -> tuple[np.ndarray, int] | None:
    """The labels of a graph's slots in the next snapshot's n rows (slot -> `new_rows`, -1:
    dead, relabelled >= n so searches drop it) and the number of dead slots, or None when more
    than `max_dead` of the slots (`n_add` more to come) would be dead."""
    relabelled = np.full(len(labels), -1, dtype=np.int64)
    relabelled[live_slots] = new_rows
    dead_slots = np.flatnonzero(relabelled < 0)
    total = len(labels) + n_add
    if total and len(dead_slots) / total > max_dead:
        return None
    relabelled[dead_slots] = np.arange(n, n + len(dead_slots), dtype=np.int64)
    return relabelled, len(dead_slots)


def apply_labels(index: Any, labels: np.ndarray) -> None:
    """Give an IndexIDMap2's slots `labels` (in memory; a memory-mapped index too)."""
    faiss.copy_array_to_vector(np.ascontiguousarray(labels, dtype=np.int64), index.id_map)
    index.construct_rev_map()


def _extend(index: Any, labels: np.ndarray, add_rows: np.ndarray, add_vecs: np.ndarray) -> None:
    """Relabel a graph in place and add `add_vecs` as rows `add_rows` (all cores)."""
    apply_labels(index, labels)
    if len(add_rows):
        with faiss_threads(os.cpu_count() or 1):
            index.add_with_ids(np.ascontiguousarray(add_vecs, dtype=np.float32), np.asarray(add_rows, np.int64))


def labels_npy(labels: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(labels, dtype=np.int64), allow_pickle=False)
    return buf.getvalue()


# -- the next version's index from a published one (`publish_next`) ---------------------------


def _same_vector_rows(previous: PublishedVersion, fresh_ids: Sequence[str], fresh_vecs: np.ndarray,
                      first_row: int) -> list[tuple[int, int]]:
    """(previous row, row in the next snapshot) of the fresh rows whose item the previous
    version serves with exactly the same vector (fresh row i is row `first_row + i`)."""
    prev_row = {item_id: r for r, item_id in enumerate(previous.ids)}
    pairs = [(i, prev_row[item_id]) for i, item_id in enumerate(fresh_ids) if item_id in prev_row]
    if not pairs:
        return []
    old = previous.vectors_of([r for _, r in pairs])
    same = np.all(old == fresh_vecs[[i for i, _ in pairs]], axis=1)
    return [(r, first_row + i) for (i, r), keep in zip(pairs, same) if keep]


def next_index(previous: PublishedVersion, carried: list[int], fresh_ids: Sequence[str], fresh_vecs: np.ndarray,
               n: int, hnsw_threshold: int, max_dead: float, delta_fraction: float) -> BuiltIndex:
    """The index of `publish_next`'s rows (the `carried` previous rows, then the fresh ones).
    When both are HNSW and not too much of the previous graph would be dead, the graph is
    kept, relabelled: the rows it does not hold (new and re-embedded items, the previous delta
    index's carried rows) go to an exact delta index while they are at most `delta_fraction`
    of its slots (the graph file is linked, not rewritten), else into the graph (a fold: read,
    extended, rewritten). Otherwise the index is built anew from the previous vectors and
    the fresh ones."""
    manifest = previous.manifest
    if (n >= hnsw_threshold and n and manifest.index_kind == "hnsw"
            and manifest.index_params.get("m") == HNSW_M):
        new_of_prev = np.full(len(previous.ids), -1, dtype=np.int64)  # previous row -> next row, -1: gone
        new_of_prev[np.asarray(carried, dtype=np.int64)] = np.arange(len(carried), dtype=np.int64)
        # An item rewritten with the same vector (promoted, placed, used) keeps its graph node:
        # re-adding it would leave a dead node behind and bring the next full rebuild closer.
        for prev_row, new_row in _same_vector_rows(previous, fresh_ids, fresh_vecs, len(carried)):
            new_of_prev[prev_row] = new_row
        live_slots = np.flatnonzero(previous.labels < len(previous.ids))
        new_rows = new_of_prev[previous.labels[live_slots]]
        unheld = np.ones(n, dtype=bool)  # rows no live graph slot holds (setdiff1d sorts 100k rows)
        unheld[new_rows[new_rows >= 0]] = False
        outside = np.flatnonzero(unheld).astype(np.int64)
        got = _relabelled(previous.labels, live_slots, new_rows, n, len(outside), max_dead)
        if got is not None:
            labels, dead = got
            # Rows outside the graph: carried ones (from the previous delta index) or fresh.
            from_prev = outside < len(carried)
            vecs = np.empty((len(outside), manifest.dim), dtype=np.float32)
            vecs[from_prev] = previous.vectors_of(np.asarray(carried, dtype=np.int64)[outside[from_prev]])
            vecs[~from_prev] = fresh_vecs[outside[~from_prev] - len(carried)]
            params = _reused_hnsw_params(previous.index, manifest)
            if len(outside) <= delta_fraction * len(labels):
                delta = faiss.IndexIDMap2(faiss.IndexFlatIP(manifest.dim))
                if len(outside):
                    delta.add_with_ids(vecs, outside)
                return BuiltIndex(index=None, kind="hnsw", params=params, dead=dead, labels=labels, delta=delta)
            graph = previous.writable_graph()
            _extend(graph, labels, outside, vecs)
            return BuiltIndex(index=graph, kind="hnsw", params=params, dead=dead)
    old = (previous.vectors_of(carried) if carried else np.zeros((0, manifest.dim), np.float32))
    vecs = np.ascontiguousarray(np.vstack([old, fresh_vecs]), dtype=np.float32)
    return _make_index(vecs, manifest.dim, hnsw_threshold)


# -- read -----------------------------------------------------------------------------------


def read_indexes(folder: Path, manifest: SnapshotManifest, delta_flags: int) -> tuple[Any, np.ndarray, Any]:
    """(graph, its slot labels, delta index or None) of a version, checksums verified and the
    labels applied; the graph memory-mapped read-only, the delta read with `delta_flags`.
    Checks that the two hold every row once (labels >= count: dead graph slots)."""
    path = checked_path(folder, INDEX_FILE, manifest.files[INDEX_FILE])
    indexes = []
    for name, p, flags in ((INDEX_FILE, path, INDEX_READ_FLAGS), (INDEX_DELTA_FILE, None, delta_flags)):
        if name not in manifest.files:
            indexes.append(None)
            continue
        p = p or checked_path(folder, name, manifest.files[name])
        try:
            index = faiss.read_index(str(p), flags)
        except RuntimeError as exc:
            raise SnapshotError(f"{p} corrupt: {exc}") from exc
        if not isinstance(index, faiss.IndexIDMap2) or index.d != manifest.dim:
            raise SnapshotError(f"{p} is {type(index).__name__} of dim {index.d}, expected IndexIDMap2 of "
                                f"dim {manifest.dim}")
        indexes.append(index)
    index, delta = indexes
    labels = graph_labels(folder, manifest, index)
    n, dead = manifest.count, manifest.index_dead
    delta_labels = np.empty(0, np.int64) if delta is None else faiss.vector_to_array(delta.id_map)
    if (len(delta_labels) != manifest.index_delta_count or index.ntotal + len(delta_labels) != n + dead
            or (len(delta_labels) and delta_labels.max() >= n)):
        raise SnapshotError(f"snapshot {manifest.version} inconsistent: manifest count {n} (+{dead} dead, "
                            f"{manifest.index_delta_count} in the delta index), index {index.ntotal} + "
                            f"{len(delta_labels)}")
    if not np.array_equal(np.sort(np.concatenate([labels, delta_labels])), np.arange(n + dead, dtype=np.int64)):
        raise SnapshotError(f"snapshot {manifest.version} inconsistent: FAISS ids are not row positions")
    return index, labels, delta


def graph_labels(folder: Path, manifest: SnapshotManifest, index: Any) -> np.ndarray:
    """The slot labels of a version's graph: its own id map, or (a segmented index) the
    labels file, applied to `index`. Raises SnapshotError."""
    entry = manifest.files.get(INDEX_LABELS_FILE)
    if entry is None:
        return faiss.vector_to_array(index.id_map)
    path = checked_path(folder, INDEX_LABELS_FILE, entry)
    try:
        labels = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise SnapshotError(f"{path} corrupt: {exc}") from exc
    if labels.dtype != np.int64 or labels.shape != (index.ntotal,):
        raise SnapshotError(f"{path} holds {labels.shape} {labels.dtype} labels for {index.ntotal} slots")
    apply_labels(index, labels)
    return labels


def stored_rows(index: Any, inner: Any, n: int, dim: int) -> np.ndarray:
    """The first n stored vectors of a flat or HNSW-flat index as a read-only view of the
    index's (memory-mapped) storage, without copying. The view's buffer holds a reference
    to the index, so the mapping lives as long as any view of it."""
    storage = faiss.downcast_index(inner.storage) if hasattr(inner, "storage") else inner
    if not hasattr(storage, "get_xb") or storage.ntotal < n:
        return index.reconstruct_batch(np.arange(n, dtype=np.int64))
    address = faiss.rev_swig_ptr(storage.get_xb(), 1).__array_interface__["data"][0]
    buffer = (ctypes.c_float * (n * dim)).from_address(address)
    buffer._owner = index  # type: ignore[attr-defined]
    rows = np.frombuffer(buffer, dtype=np.float32).reshape(n, dim)
    rows.flags.writeable = False  # the mapping is read-only: writing would crash
    return rows
