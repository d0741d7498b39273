"""The published FAISS snapshot: build, verify, load, fall back, prune.

Layout under the snapshots root:

    <root>/<version>/index.faiss     FAISS IndexIDMap2 (ids = positions of the served rows)
    <root>/<version>/items.parquet   one row per active MemoryItem (nested fields as JSON text)
    <root>/<version>/manifest.json   version, watermark, embedder, dim, counts, checksums
    <root>/<version>/history.parquet revisions and audit events of those items and of the
                                     items they replaced (optional; `pipelines.item_history`),
                                     read one item at a time
    <root>/<version>/items-delta.parquet, items-removed.parquet, history-delta.parquet
                                     a segmented version (format 2, `publish_next`): the two
                                     base files above are hard links to an earlier version's
    <root>/CURRENT                   name of the version the service should serve

A version folder is never modified after publication. A build writes everything to a
`<root>/.tmp-*` folder, fsyncs, renames the folder into place, then replaces `CURRENT`
atomically (write + fsync + os.replace), so a reader sees the old snapshot or the new one,
never half of one. Versions are `<UTC timestamp, µs>Z-<content hash>`: they sort by time.

Vectors are not stored twice: flat and HNSW-flat indexes keep the exact float32 rows, and
the index checksum covers them. `load_snapshot` memory-maps the index (read-only) and
serves the vectors as a view of it, so every worker process serving one version shares one
copy in the page cache instead of holding its own.

Index choice: exact inner product (`IndexFlatIP`) below `hnsw_threshold` items, HNSW above
(M=32, efConstruction=128, efSearch=64). Measured at 100k x 384 on 2 shared cores, one
query, k=10: flat 8.8 ms p50; HNSW 1.3 ms p50 (efSearch 64: 0.7 ms), recall@10 vs flat
1.00 on clustered data; HNSW build ~170 s (flat: 3 s). Single queries are several times
faster with one OpenMP thread than with two (flat 8.8 vs 40 ms, HNSW 1.3 vs 8 ms), so
loading sets FAISS to one thread by default; building uses all cores.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import io
import os
import re
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

import faiss
import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.item_history import HISTORY_SCHEMA, SORT_KEYS, split_history
from pipelines.item_rows import ItemRowCodec
from pipelines.records import MemoryItem, utcnow

FORMAT_VERSION = 2  # 2: items and history may be a shared base plus a delta segment
READABLE_FORMATS = (1, 2)  # a format-1 snapshot is a base without a delta
INDEX_FILE = "index.faiss"
ITEMS_FILE = "items.parquet"
MANIFEST_FILE = "manifest.json"
HISTORY_FILE = "history.parquet"
# A segmented snapshot serves the base rows (items.parquet) not listed in items-removed,
# then the rows of items-delta (items written since the base); history-delta holds the history
# rows written since the base (rows never change, so an item's history is both files' rows). The
# base files are hard links to the previous version's (a folder is never modified, so sharing
# the inode is safe).
ITEMS_DELTA_FILE = "items-delta.parquet"
ITEMS_REMOVED_FILE = "items-removed.parquet"
HISTORY_DELTA_FILE = "history-delta.parquet"
REMOVED_SCHEMA = pa.schema([("id", pa.string())])
# The vector index is segmented too: a run that adds few vectors keeps the published HNSW
# graph file as it is (a hard link, listed with its checksum) and writes the labels its slots
# carry in this version's rows (index-labels, int64 per slot: a run renumbers rows, the graph
# file cannot change) plus an exact inner-product index of the rows the graph does not hold
# (index-delta, labels = rows). Searches ask both and merge by score.
INDEX_LABELS_FILE = "index-labels.npy"
INDEX_DELTA_FILE = "index-delta.faiss"
# Past this many delta vectors per graph slot a run folds them into the graph (extends it and
# rewrites the file). Exact search over 5k x 384 floats (the bound at 100k) costs ~0.2-0.4 ms
# per query next to the graph's ~1 ms; a fold adds ~1 ms per vector plus the whole rewrite
# (200 MB at 100k), paid once per ~5 runs of +1k turns instead of every run.
INDEX_DELTA_FRACTION = 0.05
# Past this many delta and removed rows per base row a publish rewrites the base (compacts).
COMPACT_FRACTION = 0.25
# Small row groups sorted by item id: reading one item's history touches one or two groups.
HISTORY_ROW_GROUP = 4096
CURRENT_FILE = "CURRENT"

HNSW_M = 32
HNSW_EF_CONSTRUCTION = 128  # build quality; build time grows about linearly with it
# Recall/latency trade-off at query time (stored in the manifest; recall widens it for
# filtered searches). 64 is the value the service's latency and recall were measured with.
HNSW_EF_SEARCH = 64
# Flat codes (the vectors of flat and HNSW-flat indexes) are memory-mapped, read-only.
INDEX_READ_FLAGS = faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY
SEARCH_THREADS = 1  # single queries: one OpenMP thread is fastest (see module docstring)
IO_CHUNK = 1 << 22  # bytes per read/write call when an index is streamed through a hash
STALE_TMP_SECONDS = 3600  # an unfinished .tmp-* folder older than this is a crashed build

_TS_FORMAT = "%Y%m%dT%H%M%S%fZ"
_VERSION_RE = re.compile(r"^(\d{8}T\d{12}Z)-([0-9a-f]{8,64})$")

IndexKind = Literal["flat-ip", "hnsw"]


class SnapshotError(Exception):
    """A snapshot is missing, unreadable, corrupt, truncated or inconsistent."""


class EmbedderMismatch(SnapshotError):
    """The snapshot was built with a different embedder than the one in use."""


class FileEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    sha256: str
    bytes: int


class SnapshotManifest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    format: int = FORMAT_VERSION
    version: str
    created_at: str
    watermark: int  # highest inbox sequence number contained
    embedder: str
    dim: int
    count: int
    tier_counts: dict[str, int]
    index_kind: IndexKind
    index_params: dict[str, int] = {}
    # HNSW graphs are carried over between snapshots (a graph cannot drop a vector): slots
    # of items removed or re-embedded since stay in the graph under labels >= count.
    index_dead: int = 0
    files: dict[str, FileEntry]
    faiss_version: str = ""
    extra: dict[str, Any] = {}
    # Segmented layout (format 2): the version that wrote the shared base files ("" when this
    # version wrote its own), and the rows in items-delta / ids in items-removed.
    base: str = ""
    delta_count: int = 0
    removed_count: int = 0
    # Segmented index: the version that wrote index.faiss ("" when this one did) and the
    # vectors of index-delta (rows the graph does not hold).
    index_base: str = ""
    index_delta_count: int = 0


@dataclass
class LoadedSnapshot:
    manifest: SnapshotManifest
    items: list[MemoryItem]
    vectors: np.ndarray  # float32 (count, dim); row i is items[i] and FAISS id i
    index: Any  # faiss.Index (IndexIDMap2)
    version: str
    path: Path
    row_of: dict[str, int] = field(default_factory=dict)  # item id -> row

    history_checked: bool = False  # history.parquet's checksum verified (once, on first use)
    _replaced: dict[str, tuple[str, str]] | None = field(default=None, repr=False)
    # Rows `index` does not hold (a segmented index's delta: `INDEX_DELTA_FILE`): searched
    # exactly over `vectors` and merged by score.
    exact_rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def __post_init__(self) -> None:
        if not self.row_of:
            self.row_of = {item.id: row for row, item in enumerate(self.items)}

    @property
    def replaced(self) -> dict[str, tuple[str, str]]:
        """Item id -> (the served item that took its place, "merged" or "superseded"), for
        each item that left because consolidation merged it (the merged item's
        `merged_from`) or a correction superseded it (a `supersedes` link): it left
        recall, not its history."""
        if self._replaced is None:
            targets: dict[str, tuple[str, str]] = {}
            for it in self.items:
                for link in it.links:
                    if link.rel == "supersedes" and link.to not in self.row_of:
                        targets.setdefault(link.to, (it.id, "superseded"))
                for old in it.metadata.get("merged_from") or ():
                    if isinstance(old, str) and old not in self.row_of:
                        targets[old] = (it.id, "merged")
            self._replaced = targets
        return self._replaced

    def history(self, item_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """(revisions, audit events) of one item as published with this snapshot (a served
        item, one a served item `replaced`, or an archived one), or None when the snapshot carries no history
        (an older build) or a file is gone or corrupt. Read from disk on demand, one item's
        row groups only: the base file's rows and the delta segment's (rows written since
        the base) together."""
        names = [n for n in (HISTORY_FILE, HISTORY_DELTA_FILE) if n in self.manifest.files]
        if HISTORY_FILE not in names:
            return None
        try:
            if not self.history_checked:
                for name in names:
                    _checked_path(self.path, name, self.manifest.files[name])
                self.history_checked = True
            table = pa.concat_tables([pq.read_table(self.path / name, filters=[("item_id", "==", item_id)],
                                                    schema=HISTORY_SCHEMA) for name in names])
        except (SnapshotError, OSError, pa.ArrowException):
            return None
        return split_history(table)

    def search(self, queries: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """Top-k (row, inner product) per query row; fewer when the snapshot is smaller."""
        q = np.ascontiguousarray(np.atleast_2d(np.asarray(queries, dtype=np.float32)))
        if q.shape[1] != self.manifest.dim:
            raise ValueError(f"query dim {q.shape[1]} != snapshot dim {self.manifest.dim}")
        n = self.manifest.count
        if k <= 0 or n == 0:
            return [[] for _ in range(q.shape[0])]
        hits: list[list[tuple[int, float]]] = [[] for _ in range(q.shape[0])]
        if self.index.ntotal:
            dead = self.index.ntotal + len(self.exact_rows) - n
            scores, rows = self.index.search(q, min(k + dead, self.index.ntotal))
            hits = [[(int(r), float(s)) for r, s in zip(row_ids, row_scores) if 0 <= r < n]
                    for row_ids, row_scores in zip(rows, scores)]
        if len(self.exact_rows):
            exact = self.exact_rows.tolist()
            for found, sims in zip(hits, (q @ self.vectors[self.exact_rows].T).tolist()):
                found.extend(zip(exact, sims))
        return [sorted(found, key=lambda hit: -hit[1])[:k] for found in hits]


# -- version names and folders -------------------------------------------------------------


def is_version_name(name: str) -> bool:
    return bool(_VERSION_RE.match(name))


def list_versions(root: Path) -> list[str]:
    """Published version folders under root, oldest first (names sort by time)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and is_version_name(p.name))


def current_version(root: Path) -> str | None:
    """The version named by CURRENT, or None when nothing was published yet.
    Raises SnapshotError when CURRENT holds something that is not a version name."""
    path = Path(root) / CURRENT_FILE
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{path} unreadable: {exc}") from exc
    if not text:
        return None
    if not is_version_name(text):
        raise SnapshotError(f"{path} does not name a snapshot version: {text[:80]!r}")
    return text


def _new_version(root: Path, content_digest: str) -> str:
    """Timestamp + content hash; strictly after every existing version even if the clock
    stepped back or two builds share a microsecond."""
    now = datetime.now(timezone.utc)
    existing = list_versions(root)
    if existing:
        latest = datetime.strptime(_VERSION_RE.match(existing[-1]).group(1), _TS_FORMAT)  # type: ignore[union-attr]
        latest = latest.replace(tzinfo=timezone.utc)
        if now <= latest:
            now = latest + timedelta(microseconds=1)
    return f"{now.strftime(_TS_FORMAT)}-{content_digest[:12]}"


def _write_durable(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    if os.name != "posix":  # directories cannot be fsynced on Windows
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _faiss_threads(n: int) -> Iterator[None]:
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(max(1, n))
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)


def set_search_threads(n: int = SEARCH_THREADS) -> None:
    """FAISS OpenMP threads for this process (global)."""
    faiss.omp_set_num_threads(max(1, n))


# -- items <-> Parquet ------------------------------------------------------------------------


ITEM_CODEC = ItemRowCodec()
JSON_COLUMNS = ITEM_CODEC.json_columns
# The nested (JSON text) columns are named in the file's metadata for other readers.
ITEMS_SCHEMA = ITEM_CODEC.schema.with_metadata({
    b"loci.json_columns": ",".join(sorted(JSON_COLUMNS)).encode(),
    b"loci.format": str(FORMAT_VERSION).encode(),
})


def items_to_table(items: Sequence[MemoryItem]) -> pa.Table:
    """One row per item; scalar fields as typed columns (queryable from DuckDB), nested ones
    (scope, links, provenance, metadata, lists) as JSON text, decoded exactly on read."""
    return ITEM_CODEC.to_table(items).replace_schema_metadata(ITEMS_SCHEMA.metadata)


def table_to_items(table: pa.Table) -> list[MemoryItem]:
    missing = set(ITEMS_SCHEMA.names) - set(table.column_names)
    if missing:
        raise SnapshotError(f"items table lacks columns {sorted(missing)}")
    return ITEM_CODEC.from_table(table)


# -- build ----------------------------------------------------------------------------------


def _make_index(vectors: np.ndarray, dim: int, hnsw_threshold: int) -> tuple[Any, IndexKind, dict[str, int]]:
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
        with _faiss_threads(os.cpu_count() or 1):
            index.add_with_ids(vectors, np.arange(n, dtype=np.int64))
    return index, kind, params


def _reuse_hnsw(
    previous: Path, kept: Sequence[str], vecs: np.ndarray, dim: int, max_dead: float
) -> tuple[Any, dict[str, int], int] | None:
    """The previous snapshot's HNSW graph relabelled for the new rows, plus the vectors of
    new or re-embedded items: building a 100k graph costs ~20 s on 2 cores, adding 1k to it
    a fraction of a second. Slots whose item left or changed vector stay in the graph with
    labels >= len(kept) (searches drop them). None when it cannot or should not be reused
    (another kind or shape, unreadable, too many dead slots)."""
    try:
        manifest = _read_manifest(previous, previous.name)
        if manifest.index_kind != "hnsw" or manifest.dim != dim:
            return None
        if manifest.index_params.get("m") != HNSW_M:
            return None
        index = _read_index_checked(previous, INDEX_FILE, manifest.files[INDEX_FILE])
        table = _served_table(previous, manifest, ["id"])
        if not isinstance(index, faiss.IndexIDMap2):
            return None
        # A segmented index: the graph's slots in that version's rows; its delta rows are
        # not in the graph, so they are added below like new ones.
        labels = _graph_labels(previous, manifest, index)
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


def _apply_labels(index: Any, labels: np.ndarray) -> None:
    """Give an IndexIDMap2's slots `labels` (in memory; a memory-mapped index too)."""
    faiss.copy_array_to_vector(np.ascontiguousarray(labels, dtype=np.int64), index.id_map)
    index.construct_rev_map()


def _extend(index: Any, labels: np.ndarray, add_rows: np.ndarray, add_vecs: np.ndarray) -> None:
    """Relabel a graph in place and add `add_vecs` as rows `add_rows` (all cores)."""
    _apply_labels(index, labels)
    if len(add_rows):
        with _faiss_threads(os.cpu_count() or 1):
            index.add_with_ids(np.ascontiguousarray(add_vecs, dtype=np.float32), np.asarray(add_rows, np.int64))


def _sha256(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def build_snapshot(
    root: Path,
    items: Sequence[MemoryItem],
    vectors: np.ndarray,
    *,
    embedder_name: str,
    dim: int,
    watermark: int,
    hnsw_threshold: int = 50_000,
    keep: int = 3,
    extra: dict[str, Any] | None = None,
    reuse: Path | None = None,
    reuse_max_dead: float = 0.2,
    history: pa.Table | None = None,
) -> SnapshotManifest:
    """Publish a new snapshot of the active items and make it CURRENT; prune old ones.

    `vectors[i]` is the (unit-length) embedding of `items[i]`. Archived and superseded items
    are left out together with their vectors. Raises ValueError on inconsistent input and
    SnapshotError when the folder cannot be published. `reuse`: a previous snapshot folder
    whose HNSW graph is extended instead of rebuilt when this one is HNSW too and at most
    `reuse_max_dead` of its slots would be dead (otherwise a full build). `history`: the
    items' revisions and audit events (`pipelines.item_history.HISTORY_SCHEMA`), published as
    `history.parquet` for the service to show.
    """
    root = Path(root)
    _check_build_args(embedder_name, dim, watermark, keep)
    vecs = _checked_vectors(items, vectors, dim)
    kept, vecs = _active_only(items, vecs)
    return _publish_rows(root, [item.id for item in kept], [item.tier for item in kept], items_to_table(kept),
                         vecs, embedder_name=embedder_name, dim=dim, watermark=watermark,
                         hnsw_threshold=hnsw_threshold, keep=keep, extra=extra, reuse=reuse,
                         reuse_max_dead=reuse_max_dead, history=history)


def _publish_rows(
    root: Path, ids: list[str], tiers: list[str], table: pa.Table, vecs: np.ndarray, *, embedder_name: str,
    dim: int, watermark: int, hnsw_threshold: int, keep: int, extra: dict[str, Any] | None,
    reuse: Path | None, reuse_max_dead: float, history: pa.Table | None,
) -> SnapshotManifest:
    built = _build_index(ids, vecs, dim, hnsw_threshold, reuse, reuse_max_dead)
    blobs: dict[str, bytes] = {ITEMS_FILE: _table_parquet(table)}
    if history is not None:
        blobs[HISTORY_FILE] = _history_parquet(history)

    fields = _manifest_fields(built, embedder=embedder_name, dim=dim, watermark=watermark, count=len(ids),
                              tiers=tiers, extra=extra)
    manifest = _publish(root, {INDEX_FILE: built.index}, blobs, {}, fields)
    prune(root, keep)
    return manifest


def _manifest_fields(built: _BuiltIndex, *, embedder: str, dim: int, watermark: int, count: int,
                     tiers: Sequence[str], extra: dict[str, Any] | None) -> dict[str, Any]:
    """The manifest fields of a new version that its files do not decide (see `_publish`)."""
    return {"watermark": watermark, "embedder": embedder, "dim": dim, "count": count,
            "tier_counts": dict(sorted(Counter(tiers).items())), "index_kind": built.kind,
            "index_params": built.params, "index_dead": built.dead, "faiss_version": faiss.__version__,
            "index_delta_count": 0 if built.delta is None else int(built.delta.ntotal), "extra": dict(extra or {})}


def _check_build_args(embedder_name: str, dim: int, watermark: int, keep: int) -> None:
    if not embedder_name:
        raise ValueError("embedder_name is required")
    if not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be a positive int, got {dim!r}")
    if not isinstance(watermark, int) or watermark < 0:
        raise ValueError(f"watermark must be an int >= 0, got {watermark!r}")
    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")


def _checked_vectors(items: Sequence[MemoryItem], vectors: np.ndarray, dim: int) -> np.ndarray:
    """`vectors` as a float32 (n, dim) matrix that lines up with `items`, or ValueError."""
    vecs = np.asarray(vectors, dtype=np.float32)
    if vecs.ndim == 1 and vecs.size == 0:
        vecs = vecs.reshape(0, dim)  # an empty list has no second axis to check
    if vecs.ndim != 2:
        raise ValueError(f"vectors must be 2-D (n, dim), got shape {vecs.shape}")
    if vecs.shape[0] != len(items):
        raise ValueError(f"{len(items)} items but {vecs.shape[0]} vectors")
    if vecs.shape[1] != dim:
        raise ValueError(f"vectors have dim {vecs.shape[1]}, expected {dim}")
    for item in items:
        if not isinstance(item, MemoryItem):
            raise ValueError(f"items must be MemoryItem, got {type(item).__name__}")
    return vecs


def _active_only(items: Sequence[MemoryItem], vecs: np.ndarray) -> tuple[list[MemoryItem], np.ndarray]:
    """The active items and their vectors; only these are checked for bad values, since
    the rest is left out anyway."""
    keep_rows = [i for i, item in enumerate(items) if item.active]
    kept = [items[i] for i in keep_rows]
    vecs = np.ascontiguousarray(vecs[keep_rows], dtype=np.float32)
    if not np.isfinite(vecs).all():
        raise ValueError("vectors contain NaN or infinity")
    dupes = [i for i, c in Counter(item.id for item in kept).items() if c > 1]
    if dupes:
        raise ValueError(f"duplicate item ids in snapshot: {dupes[:5]}")
    return kept, vecs


@dataclass(frozen=True)
class _BuiltIndex:
    index: Any  # None: the previous graph file is kept (a segmented index, see `labels` and `delta`)
    kind: IndexKind
    params: dict[str, int]
    dead: int  # slots of removed items still in a reused HNSW graph
    labels: np.ndarray | None = None  # the kept graph's slot labels in the new rows
    delta: Any = None  # exact IndexIDMap2 of the rows the kept graph does not hold


def _build_index(
    kept: list[str],
    vecs: np.ndarray,
    dim: int,
    hnsw_threshold: int,
    reuse: Path | None,
    reuse_max_dead: float,
) -> _BuiltIndex:
    # Extending the previous HNSW graph saves minutes of build; it only applies when this
    # snapshot is HNSW too, and `_reuse_hnsw` declines (None) when too much of it is dead.
    if reuse is not None and len(kept) >= hnsw_threshold and len(kept) > 0:
        reused = _reuse_hnsw(Path(reuse), kept, vecs, dim, reuse_max_dead)
        if reused is not None:
            index, params, dead = reused
            return _BuiltIndex(index=index, kind="hnsw", params=params, dead=dead)
    index, kind, params = _make_index(vecs, dim, hnsw_threshold)
    return _BuiltIndex(index=index, kind=kind, params=params, dead=0)


def _table_parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table.replace_schema_metadata(ITEMS_SCHEMA.metadata), buf, compression="zstd")
    return buf.getvalue()


def _history_parquet(history: pa.Table) -> bytes:
    missing = set(HISTORY_SCHEMA.names) - set(history.column_names)
    if missing:
        raise ValueError(f"history table lacks columns {sorted(missing)}")
    table = history.select(HISTORY_SCHEMA.names).cast(HISTORY_SCHEMA).sort_by(SORT_KEYS)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", row_group_size=HISTORY_ROW_GROUP)
    return buf.getvalue()


@dataclass
class PublishedVersion:
    """A published version as the next incremental publish needs it (`publish_next`)."""

    manifest: SnapshotManifest
    folder: Path
    ids: list[str]  # served order: row i is FAISS label i
    tiers: list[str]
    base_ids: list[str]  # items.parquet's ids, file order
    delta: pa.Table | None  # items-delta rows (the tail of `ids`), None without a delta segment
    index: Any  # its graph (or flat) IndexIDMap2, memory-mapped read-only, slots labelled with rows
    labels: np.ndarray  # `index`'s slot labels (rows; >= count: dead slots)
    delta_index: Any = None  # exact IndexIDMap2 of the rows `index` does not hold (in memory)

    def vectors_of(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The stored vectors of these rows, from the graph or the delta index."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.manifest.dim), dtype=np.float32)
        in_delta = (np.zeros(len(rows), dtype=bool) if self.delta_index is None
                    else np.isin(rows, faiss.vector_to_array(self.delta_index.id_map)))
        for part, mask in ((self.index, ~in_delta), (self.delta_index, in_delta)):
            if mask.any():
                out[mask] = part.reconstruct_batch(rows[mask])
        return out

    def writable_graph(self) -> Any:
        """The graph read into memory (writable, checked against the manifest), slots
        labelled as in `index`."""
        index = _read_index_checked(self.folder, INDEX_FILE, self.manifest.files[INDEX_FILE])
        _apply_labels(index, self.labels)
        return index


def read_published(root: Path, version: str) -> PublishedVersion:
    """One published version's ids, tiers, segments and index, every file it reads checked
    against the manifest (the graph is hashed, then memory-mapped). Raises SnapshotError."""
    folder = Path(root) / version
    manifest = _read_manifest(folder, version)
    base, removed, delta = _read_segments(folder, manifest, ["id", "tier"])
    served = _served_rows(folder, base, removed, delta)
    index, labels, delta_index = _read_indexes(folder, manifest, 0)
    n = manifest.count
    if len(served) != n:
        raise SnapshotError(f"snapshot {version} inconsistent: {len(served)} rows, manifest count {n}")
    return PublishedVersion(manifest=manifest, folder=folder, ids=served.column("id").to_pylist(),
                            tiers=served.column("tier").to_pylist(), base_ids=base.column("id").to_pylist(),
                            delta=delta, index=index, labels=labels, delta_index=delta_index)


def _read_indexes(folder: Path, manifest: SnapshotManifest, delta_flags: int) -> tuple[Any, np.ndarray, Any]:
    """(graph, its slot labels, delta index or None) of a version, checksums verified and the
    labels applied; the graph memory-mapped read-only, the delta read with `delta_flags`.
    Checks that the two hold every row once (labels >= count: dead graph slots)."""
    path = _checked_path(folder, INDEX_FILE, manifest.files[INDEX_FILE])
    indexes = []
    for name, p, flags in ((INDEX_FILE, path, INDEX_READ_FLAGS), (INDEX_DELTA_FILE, None, delta_flags)):
        if name not in manifest.files:
            indexes.append(None)
            continue
        p = p or _checked_path(folder, name, manifest.files[name])
        try:
            index = faiss.read_index(str(p), flags)
        except RuntimeError as exc:
            raise SnapshotError(f"{p} corrupt: {exc}") from exc
        if not isinstance(index, faiss.IndexIDMap2) or index.d != manifest.dim:
            raise SnapshotError(f"{p} is {type(index).__name__} of dim {index.d}, expected IndexIDMap2 of "
                                f"dim {manifest.dim}")
        indexes.append(index)
    index, delta = indexes
    labels = _graph_labels(folder, manifest, index)
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


def _graph_labels(folder: Path, manifest: SnapshotManifest, index: Any) -> np.ndarray:
    """The slot labels of a version's graph: its own id map, or (a segmented index) the
    labels file, applied to `index`. Raises SnapshotError."""
    entry = manifest.files.get(INDEX_LABELS_FILE)
    if entry is None:
        return faiss.vector_to_array(index.id_map)
    path = _checked_path(folder, INDEX_LABELS_FILE, entry)
    try:
        labels = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise SnapshotError(f"{path} corrupt: {exc}") from exc
    if labels.dtype != np.int64 or labels.shape != (index.ntotal,):
        raise SnapshotError(f"{path} holds {labels.shape} {labels.dtype} labels for {index.ntotal} slots")
    _apply_labels(index, labels)
    return labels


def _labels_npy(labels: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(labels, dtype=np.int64), allow_pickle=False)
    return buf.getvalue()


def publish_next(
    root: Path,
    previous: PublishedVersion,
    fresh: pa.Table,
    fresh_vectors: np.ndarray,
    active: set[str],
    *,
    watermark: int,
    hnsw_threshold: int = 50_000,
    keep: int = 3,
    extra: dict[str, Any] | None = None,
    reuse_max_dead: float = 0.2,
    compact_fraction: float = COMPACT_FRACTION,
    history: Callable[[str | None], pa.Table] | None = None,
    index_delta_fraction: float = INDEX_DELTA_FRACTION,
) -> SnapshotManifest:
    """Publish the next snapshot from `previous` plus what changed: `fresh` rows (items
    written since, in the snapshot's item layout, with their vectors) replace or join the
    previous rows, and previous rows whose id is not in `active` leave. The previous base
    files are shared (hard links) and only a delta segment is written: items written since
    the base, ids of base rows no longer served, and the history rows written since the base
    (history rows never change: the previous delta's plus `history(since the previous
    version)`). Past `compact_fraction` delta and removed rows per base row the base is
    rewritten instead.
    Either way the rows are served in one order (carried rows as before, then the fresh
    ones), so the FAISS graph is the previous one relabelled: its file is kept (a hard link)
    and the rows it does not hold go to an exact delta index, or, past
    `index_delta_fraction` of its slots, into the graph, which is then rewritten.
    `history(since)`: the history rows to publish (`Warehouse.published_history`: the
    active items' and those of the items they replaced) written at or after `since` (None:
    all of them)."""
    root = Path(root)
    dim = previous.manifest.dim
    _check_build_args(previous.manifest.embedder, dim, watermark, keep)
    fresh_ids = fresh.column("id").to_pylist()
    fresh_vecs = np.ascontiguousarray(np.asarray(fresh_vectors, dtype=np.float32).reshape(-1, dim))
    if fresh_vecs.shape[0] != len(fresh_ids) or len(set(fresh_ids)) != len(fresh_ids):
        raise ValueError(f"{len(fresh_ids)} fresh rows (ids must be unique) but {fresh_vecs.shape[0]} vectors")
    if not np.isfinite(fresh_vecs).all():
        raise ValueError("vectors contain NaN or infinity")
    fresh_set = set(fresh_ids)
    carried = [r for r, item_id in enumerate(previous.ids) if item_id in active and item_id not in fresh_set]
    carried_ids = [previous.ids[r] for r in carried]
    ids = carried_ids + fresh_ids
    tiers = [previous.tiers[r] for r in carried] + fresh.column("tier").to_pylist()
    built = _next_index(previous, carried, fresh_ids, fresh_vecs, len(ids), hnsw_threshold, reuse_max_dead,
                        index_delta_fraction)

    # A base row stays served only when carried from the base part of the previous rows (an
    # item written since the base has a base row too, hidden behind its delta row).
    base_served = len(previous.ids) - previous.manifest.delta_count
    from_base = {previous.ids[r] for r in carried if r < base_served}
    removed = [item_id for item_id in previous.base_ids if item_id not in from_base]
    delta_rows = len(ids) - (len(previous.base_ids) - len(removed))
    has_history = history is not None
    compact = (delta_rows + len(removed) > compact_fraction * max(1, len(previous.base_ids))
               or (has_history and HISTORY_FILE not in previous.manifest.files))
    blobs: dict[str, bytes] = {}
    links: dict[str, FileEntry] = {}
    if compact:
        carried_rows = _served_table(previous.folder, previous.manifest).take(pa.array(carried, type=pa.int64()))
        blobs[ITEMS_FILE] = _table_parquet(pa.concat_tables([carried_rows, fresh.cast(carried_rows.schema)]))
        if history is not None:
            blobs[HISTORY_FILE] = _history_parquet(history(None))
        base, delta_rows, removed = "", 0, []
    else:
        links[ITEMS_FILE] = previous.manifest.files[ITEMS_FILE]
        delta = fresh
        if previous.delta is not None:  # its rows are the previous rows from base_served on, in order
            kept = previous.delta.take(pa.array([r - base_served for r in carried if r >= base_served], pa.int64()))
            delta = pa.concat_tables([kept, fresh.cast(kept.schema)])
        blobs[ITEMS_DELTA_FILE] = _table_parquet(delta)
        blobs[ITEMS_REMOVED_FILE] = _removed_parquet(removed)
        if history is not None:
            links[HISTORY_FILE] = previous.manifest.files[HISTORY_FILE]
            rows = history(previous.manifest.created_at)
            earlier = _history_delta(previous)
            if earlier is not None:
                rows = pa.concat_tables([earlier, rows.select(HISTORY_SCHEMA.names).cast(HISTORY_SCHEMA)])
            blobs[HISTORY_DELTA_FILE] = _history_parquet(rows)
        base = previous.manifest.base or previous.manifest.version
    fields = _manifest_fields(built, embedder=previous.manifest.embedder, dim=dim, watermark=watermark,
                              count=len(ids), tiers=tiers, extra=extra)
    fields.update(base=base, delta_count=delta_rows, removed_count=len(removed))
    indexes = {INDEX_FILE: built.index}
    if built.index is None:  # the graph file is kept: its labels and the delta index are written
        links[INDEX_FILE] = previous.manifest.files[INDEX_FILE]
        indexes = {INDEX_DELTA_FILE: built.delta}
        blobs[INDEX_LABELS_FILE] = _labels_npy(built.labels)
        fields["index_base"] = previous.manifest.index_base or previous.manifest.version
    shared = {name: (previous.folder / name, entry) for name, entry in links.items()}
    manifest = _publish(root, indexes, blobs, shared, fields)
    prune(root, keep)
    return manifest


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


def _next_index(previous: PublishedVersion, carried: list[int], fresh_ids: Sequence[str], fresh_vecs: np.ndarray,
                n: int, hnsw_threshold: int, max_dead: float, delta_fraction: float) -> _BuiltIndex:
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
                return _BuiltIndex(index=None, kind="hnsw", params=params, dead=dead, labels=labels, delta=delta)
            graph = previous.writable_graph()
            _extend(graph, labels, outside, vecs)
            return _BuiltIndex(index=graph, kind="hnsw", params=params, dead=dead)
    old = (previous.vectors_of(carried) if carried else np.zeros((0, manifest.dim), np.float32))
    vecs = np.ascontiguousarray(np.vstack([old, fresh_vecs]), dtype=np.float32)
    index, kind, params = _make_index(vecs, manifest.dim, hnsw_threshold)
    return _BuiltIndex(index=index, kind=kind, params=params, dead=0)


def _history_delta(previous: PublishedVersion) -> pa.Table | None:
    """The history rows the previous version's delta segment holds (None: it has none)."""
    entry = previous.manifest.files.get(HISTORY_DELTA_FILE)
    if entry is None:
        return None
    path = _checked_path(previous.folder, HISTORY_DELTA_FILE, entry)
    try:
        return pq.read_table(path, schema=HISTORY_SCHEMA)
    except pa.ArrowException as exc:
        raise SnapshotError(f"{path} corrupt: {exc}") from exc


def _removed_parquet(ids: Sequence[str]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(list(ids), pa.string())}, schema=REMOVED_SCHEMA), buf,
                   compression="zstd")
    return buf.getvalue()


def _write_index(index: Any, path: Path) -> FileEntry:
    """Write a FAISS index to `path` (fsynced), hashing it on the way: no serialized copy of
    a 200 MB index is made in memory, and the file is not read back to be hashed."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "wb") as fh:
        def sink(chunk: bytes) -> int:
            nonlocal size
            digest.update(chunk)
            fh.write(chunk)
            size += len(chunk)
            return len(chunk)

        writer = faiss.PyCallbackIOWriter(sink, IO_CHUNK)
        faiss.write_index(index, writer)
        del writer  # flushes its last chunk
        fh.flush()
        os.fsync(fh.fileno())
    return FileEntry(sha256=digest.hexdigest(), bytes=size)


def _read_index_checked(folder: Path, name: str, entry: FileEntry) -> Any:
    """A FAISS index read into memory (writable), hashed on the way and checked against the
    manifest: the file is read once. Raises SnapshotError."""
    path = folder / name
    digest = hashlib.sha256()
    try:
        size = path.stat().st_size
        if size != entry.bytes:
            state = "truncated" if size < entry.bytes else "oversized"
            raise SnapshotError(f"{path} {state}: {size} bytes, manifest says {entry.bytes}")
        with open(path, "rb") as fh:
            def source(n: int) -> bytes:
                data = fh.read(n)
                digest.update(data)
                return data

            reader = faiss.PyCallbackIOReader(source, IO_CHUNK)
            try:
                index = faiss.read_index(reader)
            except RuntimeError as exc:
                raise SnapshotError(f"{path} corrupt: {exc}") from exc
            finally:
                del reader
            digest.update(fh.read())  # whatever the reader did not ask for still counts
    except FileNotFoundError:
        raise SnapshotError(f"{path} missing") from None
    except OSError as exc:
        raise SnapshotError(f"{path} unreadable: {exc}") from exc
    if digest.hexdigest() != entry.sha256:
        raise SnapshotError(f"{path} checksum mismatch (corrupt): sha256 differs from manifest")
    return index


def _publish(root: Path, indexes: dict[str, Any], blobs: dict[str, bytes], links: dict[str, tuple[Path, FileEntry]],
             fields: dict[str, Any]) -> SnapshotManifest:
    """Write a new version folder (the `indexes`, `blobs`, hard links to the published files in
    `links`, then the manifest: `fields` plus version, time and files) under a temporary name,
    fsync it, rename it into place and make it CURRENT. The version name hashes every file's
    checksum, the embedder and the watermark. A file system without hard links gets copies."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".tmp-{uuid.uuid4().hex}"
    try:
        tmp.mkdir()
        files = {name: _write_index(index, tmp / name) for name, index in indexes.items()}
        for name, data in blobs.items():
            _write_durable(tmp / name, data)
            files[name] = FileEntry(sha256=_sha256(data), bytes=len(data))
        for name, (source, entry) in links.items():
            try:
                os.link(source, tmp / name)
            except OSError:
                shutil.copyfile(source, tmp / name)
                with open(tmp / name, "rb+") as fh:
                    os.fsync(fh.fileno())
            files[name] = entry
        files = dict(sorted(files.items()))
        salt = f"{fields['embedder']}{fields['watermark']}"
        version = _new_version(root, _sha256(("".join(f"{n}{e.sha256}" for n, e in files.items()) + salt).encode()))
        manifest = SnapshotManifest(version=version, created_at=utcnow(), files=files, **fields)
        _write_durable(tmp / MANIFEST_FILE, msgspec.json.format(msgspec.json.encode(manifest)))
        _fsync_dir(tmp)
        os.rename(tmp, root / version)
        _fsync_dir(root)
        pointer = root / f"{CURRENT_FILE}.tmp-{version}"
        _write_durable(pointer, f"{version}\n".encode())
        os.replace(pointer, root / CURRENT_FILE)
        _fsync_dir(root)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SnapshotError(f"could not publish a snapshot under {root}: {exc}") from exc
    return manifest


def prune(root: Path, keep: int) -> list[str]:
    """Delete all but the newest `keep` versions (the CURRENT one always stays), plus
    leftovers of crashed builds. A folder is renamed away before deletion so it never
    appears half-deleted. Returns the removed versions."""
    root = Path(root)
    versions = list_versions(root)
    try:
        current = current_version(root)
    except SnapshotError:
        current = None
    survivors = set(versions[-keep:]) | ({current} if current else set())
    removed = []
    for version in versions:
        if version in survivors:
            continue
        trash = root / f".trash-{version}"
        try:
            os.rename(root / version, trash)
        except OSError:
            continue  # a concurrent pruner got there first
        shutil.rmtree(trash, ignore_errors=True)
        removed.append(version)
    now = time.time()
    for leftover in root.iterdir() if root.is_dir() else []:
        stale = leftover.name.startswith(".trash-") or (
            leftover.name.startswith((".tmp-", f"{CURRENT_FILE}.tmp-"))
            and now - leftover.stat().st_mtime > STALE_TMP_SECONDS
        )
        if stale:
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)
    return removed


# -- load -------------------------------------------------------------------------------------


def _checked_path(folder: Path, name: str, entry: FileEntry) -> Path:
    """`folder/name` after checking its size and sha256 against the manifest, streamed (the
    file is not copied into memory: it is memory-mapped next)."""
    path = folder / name
    try:
        size = path.stat().st_size
        if size != entry.bytes:
            state = "truncated" if size < entry.bytes else "oversized"
            raise SnapshotError(f"{path} {state}: {size} bytes, manifest says {entry.bytes}")
        with path.open("rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
    except FileNotFoundError:
        raise SnapshotError(f"{path} missing") from None
    except OSError as exc:
        raise SnapshotError(f"{path} unreadable: {exc}") from exc
    if digest != entry.sha256:
        raise SnapshotError(f"{path} checksum mismatch (corrupt): sha256 differs from manifest")
    return path


def _stored_rows(index: Any, inner: Any, n: int, dim: int) -> np.ndarray:
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


def _read_manifest(folder: Path, version: str) -> SnapshotManifest:
    path = folder / MANIFEST_FILE
    if not folder.is_dir():
        raise SnapshotError(f"snapshot {version} missing: no folder {folder}")
    try:
        manifest = msgspec.json.decode(path.read_bytes(), type=SnapshotManifest)
    except FileNotFoundError:
        raise SnapshotError(f"snapshot {version} has no {MANIFEST_FILE} (incomplete)") from None
    except (OSError, msgspec.DecodeError) as exc:
        raise SnapshotError(f"{path} corrupt: {exc}") from exc
    if manifest.version != version:
        raise SnapshotError(f"{path} names version {manifest.version!r}, folder is {version!r}")
    if manifest.format not in READABLE_FORMATS:
        raise SnapshotError(f"{path} has format {manifest.format}, this code reads {list(READABLE_FORMATS)}")
    segmented = (ITEMS_DELTA_FILE, ITEMS_REMOVED_FILE) if ITEMS_DELTA_FILE in manifest.files else ()
    if INDEX_DELTA_FILE in manifest.files or INDEX_LABELS_FILE in manifest.files:
        segmented += (INDEX_DELTA_FILE, INDEX_LABELS_FILE)
    for name in (INDEX_FILE, ITEMS_FILE, *segmented):
        if name not in manifest.files:
            raise SnapshotError(f"{path} lists no checksum for {name}")
    return manifest


def _read_segments(folder: Path, manifest: SnapshotManifest, base_columns: Sequence[str] | None = None
                   ) -> tuple[pa.Table, pa.ChunkedArray | None, pa.Table | None]:
    """(base rows with `base_columns`, removed ids, delta rows) of a version, checksums
    verified; (base, None, None) for a version without a delta segment."""
    base_path = _checked_path(folder, ITEMS_FILE, manifest.files[ITEMS_FILE])
    try:
        base = pq.read_table(base_path, columns=base_columns, memory_map=True)
        if ITEMS_DELTA_FILE not in manifest.files:
            return base, None, None
        removed = pq.read_table(_checked_path(folder, ITEMS_REMOVED_FILE, manifest.files[ITEMS_REMOVED_FILE]),
                                schema=REMOVED_SCHEMA).column("id")
        delta = pq.read_table(_checked_path(folder, ITEMS_DELTA_FILE, manifest.files[ITEMS_DELTA_FILE]),
                              memory_map=True)
    except pa.ArrowException as exc:
        raise SnapshotError(f"{folder / ITEMS_FILE} (or its segments) corrupt: {exc}") from exc
    if len(delta) != manifest.delta_count or len(removed) != manifest.removed_count:
        raise SnapshotError(f"snapshot {manifest.version} inconsistent: {len(delta)} delta rows and "
                            f"{len(removed)} removed, manifest: {manifest.delta_count} and {manifest.removed_count}")
    return base, removed, delta


def _base_kept(base: pa.Table, removed: pa.ChunkedArray) -> pa.Table:
    kept = base.filter(pc.invert(pc.is_in(base.column("id"), value_set=removed.combine_chunks())))
    if len(kept) != len(base) - len(removed):
        raise SnapshotError(f"removed ids not all in the base: {len(base)} rows, {len(removed)} removed, "
                            f"{len(kept)} left")
    return kept


def _served_table(folder: Path, manifest: SnapshotManifest, columns: Sequence[str] | None = None) -> pa.Table:
    """The rows a version serves, in FAISS-label order: the base file's rows not listed as
    removed, then the delta's (checksums verified, files memory-mapped). Raises
    SnapshotError when a file is corrupt or the segments do not add up."""
    return _served_rows(folder, *_read_segments(folder, manifest, columns))


def _served_rows(folder: Path, base: pa.Table, removed: pa.ChunkedArray | None, delta: pa.Table | None) -> pa.Table:
    """The served rows of a version's segments (`_read_segments`), with the base's columns."""
    if removed is None or delta is None:
        return base
    try:
        delta = delta.select(base.column_names).cast(base.schema)
        return pa.concat_tables([_base_kept(base, removed), delta])
    except (pa.ArrowException, KeyError) as exc:
        raise SnapshotError(f"{folder / ITEMS_DELTA_FILE} does not fit the base: {exc}") from exc


def verify_files(root: Path, version: str) -> SnapshotManifest:
    """Check one published version's manifest and the size and sha256 of every file it
    lists, without deserialising the index. Raises SnapshotError when anything is off."""
    if not is_version_name(version):
        raise SnapshotError(f"not a snapshot version name: {version!r}")
    folder = Path(root) / version
    manifest = _read_manifest(folder, version)
    for name, entry in manifest.files.items():
        _checked_path(folder, name, entry)
    return manifest


def _load_version(root: Path, version: str, expected_embedder: str | Collection[str] | None) -> LoadedSnapshot:
    if not is_version_name(version):
        raise SnapshotError(f"not a snapshot version name: {version!r}")
    folder = root / version
    manifest = _read_manifest(folder, version)
    accepted = (expected_embedder,) if isinstance(expected_embedder, str) else expected_embedder
    if accepted is not None and manifest.embedder not in accepted:
        raise EmbedderMismatch(
            f"snapshot {version} was built with embedder {manifest.embedder!r}, "
            f"but {' or '.join(map(repr, accepted))} is in use: rebuild the snapshot (run consolidation)"
        )
    # Memory-mapped: the vectors stay in the page cache, shared by every process that
    # serves this version (a folder is never modified after publication).
    index, labels, delta = _read_indexes(folder, manifest, INDEX_READ_FLAGS)
    table = _served_table(folder, manifest)
    try:
        items = table_to_items(table)
    except SnapshotError:
        raise
    except (pa.ArrowException, msgspec.MsgspecError, ValueError, TypeError) as exc:
        raise SnapshotError(f"{folder / ITEMS_FILE} corrupt: {exc}") from exc

    n = manifest.count
    if len(items) != n:
        raise SnapshotError(f"snapshot {version} inconsistent: manifest count {n}, items {len(items)}")
    tiers = dict(sorted(Counter(item.tier for item in items).items()))
    if tiers != manifest.tier_counts:
        raise SnapshotError(f"snapshot {version} inconsistent: tier counts {tiers} != {manifest.tier_counts}")
    inner = faiss.downcast_index(index.index)
    if manifest.index_kind == "hnsw":
        inner.hnsw.efSearch = int(manifest.index_params.get("ef_search", HNSW_EF_SEARCH))
    exact_rows = np.empty(0, np.int64)
    if not n:
        vectors = np.zeros((0, manifest.dim), dtype=np.float32)
    elif delta is not None:  # a segmented index: the graph's live slots and the delta's rows
        vectors = np.empty((n, manifest.dim), dtype=np.float32)
        live = np.flatnonzero(labels < n)
        vectors[labels[live]] = _stored_rows(index, inner, index.ntotal, manifest.dim)[live]
        exact_rows = np.sort(faiss.vector_to_array(delta.id_map))
        if len(exact_rows):
            vectors[exact_rows] = delta.reconstruct_batch(exact_rows)
    elif np.array_equal(labels[:n], np.arange(n, dtype=np.int64)):
        vectors = _stored_rows(index, inner, n, manifest.dim)  # row i is slot i: no copy
    else:  # a carried-over graph: slots are not in row order, go through the id map
        vectors = index.reconstruct_batch(np.arange(n, dtype=np.int64))
    return LoadedSnapshot(
        manifest=manifest,
        items=items,
        vectors=np.ascontiguousarray(vectors, dtype=np.float32),
        index=index,
        version=version,
        path=folder,
        exact_rows=exact_rows,
    )


def load_snapshot(
    root: Path,
    version: str | None = None,
    *,
    expected_embedder: str | Collection[str] | None = None,
    search_threads: int | None = SEARCH_THREADS,
) -> LoadedSnapshot:
    """Load and verify one snapshot (CURRENT when version is None).

    Verifies sizes and sha256 of every file, counts, dimension and ids. Raises SnapshotError
    (missing, corrupt, checksum mismatch, truncated, inconsistent) or EmbedderMismatch.
    `search_threads` sets FAISS's (process-wide) OpenMP threads; None leaves them alone.
    """
    root = Path(root)
    if search_threads is not None:
        set_search_threads(search_threads)
    if version is not None:
        return _load_version(root, version, expected_embedder)
    # CURRENT can move (and the old folder be pruned) while we read: retry on the new one.
    # A retry happens only when CURRENT moved, i.e. a publisher made progress; the bound is
    # for a publisher faster than a loaded reader (3 was overtaken under a load of 15).
    attempts = 20
    for attempt in range(attempts):
        chosen = current_version(root)
        if chosen is None:
            raise SnapshotError(f"no snapshot published under {root} ({CURRENT_FILE} missing)")
        try:
            return _load_version(root, chosen, expected_embedder)
        except EmbedderMismatch:
            raise
        except SnapshotError:
            if attempt == attempts - 1 or current_version(root) == chosen:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def load_latest_good(
    root: Path, expected_embedder: str | Collection[str] | None = None
) -> tuple[LoadedSnapshot | None, list[str]]:
    """The newest loadable snapshot: CURRENT first, then older versions newest first.
    Returns (snapshot or None, problems found on the way). Nothing published yet is not a
    problem: (None, [])."""
    root = Path(root)
    problems: list[str] = []
    try:
        current = current_version(root)
    except SnapshotError as exc:
        problems.append(str(exc))
        current = None
    versions = list_versions(root)
    if current is None and versions and not problems:
        problems.append(f"{root / CURRENT_FILE} missing; trying the versions on disk")
    order = ([current] if current else []) + [v for v in reversed(versions) if v != current]
    for version in order:
        try:
            return load_snapshot(root, version, expected_embedder=expected_embedder), problems
        except SnapshotError as exc:
            problems.append(f"snapshot {version}: {exc}")
    return None, problems
