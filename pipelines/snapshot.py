"""The published FAISS snapshot: build, verify, load, fall back, prune.

Layout under the snapshots root:

    <root>/<version>/index.faiss     FAISS IndexIDMap2 (ids = row positions in items.parquet)
    <root>/<version>/items.parquet   one row per active MemoryItem (nested fields as JSON text)
    <root>/<version>/manifest.json   version, watermark, embedder, dim, counts, checksums
    <root>/<version>/history.parquet revisions and audit events of those items (optional;
                                     `pipelines.item_history`), read one item at a time
    <root>/CURRENT                   name of the version the service should serve

A version folder is never modified after publication. `build_snapshot` writes everything to
`<root>/.tmp-<version>/`, fsyncs, renames the folder into place, then replaces `CURRENT`
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
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

import faiss
import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.item_history import HISTORY_SCHEMA, SORT_KEYS, split_history
from pipelines.item_rows import ItemRowCodec
from pipelines.records import MemoryItem, utcnow

FORMAT_VERSION = 1
INDEX_FILE = "index.faiss"
ITEMS_FILE = "items.parquet"
MANIFEST_FILE = "manifest.json"
HISTORY_FILE = "history.parquet"
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

    def __post_init__(self) -> None:
        if not self.row_of:
            self.row_of = {item.id: row for row, item in enumerate(self.items)}

    def history(self, item_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """(revisions, audit events) of one item as published with this snapshot, or None
        when the snapshot carries no history (an older build) or its file is gone or
        corrupt. Read from disk on demand, one item's row groups only."""
        entry = self.manifest.files.get(HISTORY_FILE)
        if entry is None:
            return None
        path = self.path / HISTORY_FILE
        try:
            if not self.history_checked:
                _read_checked(self.path, HISTORY_FILE, entry)
                self.history_checked = True
            table = pq.read_table(path, filters=[("item_id", "==", item_id)], schema=HISTORY_SCHEMA)
        except (SnapshotError, OSError, pa.ArrowException):
            return None
        return split_history(table)

    def search(self, queries: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """Top-k (row, inner product) per query row; fewer when the snapshot is smaller."""
        q = np.ascontiguousarray(np.atleast_2d(np.asarray(queries, dtype=np.float32)))
        if q.shape[1] != self.manifest.dim:
            raise ValueError(f"query dim {q.shape[1]} != snapshot dim {self.manifest.dim}")
        if k <= 0 or self.index.ntotal == 0:
            return [[] for _ in range(q.shape[0])]
        n = self.manifest.count
        dead = self.index.ntotal - n
        scores, rows = self.index.search(q, min(k + dead, self.index.ntotal))
        return [
            [(int(r), float(s)) for r, s in zip(row_ids, row_scores) if 0 <= r < n][:k]
            for row_ids, row_scores in zip(rows, scores)
        ]


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
        index = faiss.deserialize_index(np.frombuffer(
            _read_checked(previous, INDEX_FILE, manifest.files[INDEX_FILE]), dtype=np.uint8))
        table = pq.read_table(pa.BufferReader(
            _read_checked(previous, ITEMS_FILE, manifest.files[ITEMS_FILE])), columns=["id"])
    except (SnapshotError, RuntimeError, OSError, pa.ArrowException, KeyError):
        return None
    if not isinstance(index, faiss.IndexIDMap2) or index.ntotal != manifest.count + manifest.index_dead:
        return None
    prev_ids = table.column("id").to_pylist()
    n_prev, n = manifest.count, len(kept)
    labels = faiss.vector_to_array(index.id_map).copy()
    row_of = {item_id: row for row, item_id in enumerate(kept)}
    # Per slot: the new row of the same item when its vector is unchanged, else dead.
    live_slots = np.flatnonzero(labels < n_prev)
    new_rows = np.array([row_of.get(prev_ids[labels[s]], -1) for s in live_slots], dtype=np.int64)
    carried = new_rows >= 0
    if carried.any():
        old_vecs = index.reconstruct_batch(labels[live_slots[carried]])
        same = np.all(old_vecs == vecs[new_rows[carried]], axis=1)
        idx = np.flatnonzero(carried)
        carried[idx[~same]] = False
    relabelled = np.full(len(labels), -1, dtype=np.int64)
    relabelled[live_slots[carried]] = new_rows[carried]
    dead_slots = np.flatnonzero(relabelled < 0)
    total = len(labels) + n - int(carried.sum())
    if total and len(dead_slots) / total > max_dead:
        return None
    relabelled[dead_slots] = np.arange(n, n + len(dead_slots), dtype=np.int64)
    faiss.copy_array_to_vector(relabelled, index.id_map)
    index.construct_rev_map()
    missing = np.setdiff1d(np.arange(n, dtype=np.int64), relabelled[live_slots[carried]])
    if len(missing):
        with _faiss_threads(os.cpu_count() or 1):
            index.add_with_ids(np.ascontiguousarray(vecs[missing]), missing)
    inner = faiss.downcast_index(index.index)
    params = {"m": HNSW_M, "ef_construction": int(inner.hnsw.efConstruction),
              "ef_search": int(manifest.index_params.get("ef_search", HNSW_EF_SEARCH))}
    return index, params, len(dead_slots)


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


def build_snapshot_from_rows(
    root: Path,
    table: pa.Table,
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
    """`build_snapshot` for rows already in the snapshot's item layout (`items_to_table`,
    or rows read back from a published snapshot with `read_rows`), all active, one per id:
    a run that changed a few items reuses the published rows instead of decoding every item."""
    root = Path(root)
    _check_build_args(embedder_name, dim, watermark, keep)
    missing = set(ITEMS_SCHEMA.names) - set(table.column_names)
    if missing:
        raise ValueError(f"items table lacks columns {sorted(missing)}")
    vecs = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32).reshape(-1, dim) if len(table) else
                                np.zeros((0, dim), np.float32))
    if vecs.shape[0] != len(table):
        raise ValueError(f"{len(table)} rows but {vecs.shape[0]} vectors")
    if not np.isfinite(vecs).all():
        raise ValueError("vectors contain NaN or infinity")
    ids = table.column("id").to_pylist()
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate item ids in snapshot rows")
    return _publish_rows(root, ids, table.column("tier").to_pylist(), table, vecs, embedder_name=embedder_name,
                         dim=dim, watermark=watermark, hnsw_threshold=hnsw_threshold, keep=keep, extra=extra,
                         reuse=reuse, reuse_max_dead=reuse_max_dead, history=history)


def _publish_rows(
    root: Path, ids: list[str], tiers: list[str], table: pa.Table, vecs: np.ndarray, *, embedder_name: str,
    dim: int, watermark: int, hnsw_threshold: int, keep: int, extra: dict[str, Any] | None,
    reuse: Path | None, reuse_max_dead: float, history: pa.Table | None,
) -> SnapshotManifest:
    built = _build_index(ids, vecs, dim, hnsw_threshold, reuse, reuse_max_dead)
    index_bytes = faiss.serialize_index(built.index).tobytes()
    items_bytes = _table_parquet(table)
    blobs = {INDEX_FILE: index_bytes, ITEMS_FILE: items_bytes}
    if history is not None:
        blobs[HISTORY_FILE] = _history_parquet(history)
    files = {name: FileEntry(sha256=_sha256(data), bytes=len(data)) for name, data in blobs.items()}
    digest = _sha256(
        f"{files[INDEX_FILE].sha256}{files[ITEMS_FILE].sha256}{embedder_name}{watermark}".encode()
    )
    root.mkdir(parents=True, exist_ok=True)
    version = _new_version(root, digest)
    manifest = SnapshotManifest(
        version=version,
        created_at=utcnow(),
        watermark=watermark,
        embedder=embedder_name,
        dim=dim,
        count=len(ids),
        tier_counts=dict(sorted(Counter(tiers).items())),
        index_kind=built.kind,
        index_params=built.params,
        index_dead=built.dead,
        files=files,
        faiss_version=faiss.__version__,
        extra=dict(extra or {}),
    )
    _publish(root, version, {**blobs, MANIFEST_FILE: msgspec.json.format(msgspec.json.encode(manifest))})
    prune(root, keep)
    return manifest


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
    index: Any
    kind: IndexKind
    params: dict[str, int]
    dead: int  # slots of removed items still in a reused HNSW graph


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


def read_rows(root: Path, version: str) -> tuple[SnapshotManifest, pa.Table, np.ndarray]:
    """A published version's item rows (Arrow, not decoded into items) and their vectors
    (row order), checked like `load_snapshot` checks them. Raises SnapshotError."""
    folder = Path(root) / version
    manifest = _read_manifest(folder, version)
    index_path = _checked_path(folder, INDEX_FILE, manifest.files[INDEX_FILE])
    items_path = _checked_path(folder, ITEMS_FILE, manifest.files[ITEMS_FILE])
    try:
        index = faiss.read_index(str(index_path), INDEX_READ_FLAGS)
        table = pq.read_table(items_path, memory_map=True)
    except (RuntimeError, pa.ArrowException) as exc:
        raise SnapshotError(f"snapshot {version} unreadable: {exc}") from exc
    n = manifest.count
    if len(table) != n or index.ntotal != n + manifest.index_dead:
        raise SnapshotError(f"snapshot {version} inconsistent: {len(table)} rows, index {index.ntotal}")
    vectors = (index.reconstruct_batch(np.arange(n, dtype=np.int64)) if n
               else np.zeros((0, manifest.dim), dtype=np.float32))
    return manifest, table, np.ascontiguousarray(vectors, dtype=np.float32)


def _publish(root: Path, version: str, files: dict[str, bytes]) -> None:
    tmp = root / f".tmp-{version}"
    final = root / version
    try:
        tmp.mkdir()
        for name, data in files.items():
            _write_durable(tmp / name, data)
        _fsync_dir(tmp)
        os.rename(tmp, final)
        _fsync_dir(root)
        pointer = root / f"{CURRENT_FILE}.tmp-{version}"
        _write_durable(pointer, f"{version}\n".encode())
        os.replace(pointer, root / CURRENT_FILE)
        _fsync_dir(root)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SnapshotError(f"could not publish snapshot {version} under {root}: {exc}") from exc


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


def _read_checked(folder: Path, name: str, entry: FileEntry) -> bytes:
    path = folder / name
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SnapshotError(f"{path} missing") from None
    except OSError as exc:
        raise SnapshotError(f"{path} unreadable: {exc}") from exc
    if len(data) != entry.bytes:
        state = "truncated" if len(data) < entry.bytes else "oversized"
        raise SnapshotError(f"{path} {state}: {len(data)} bytes, manifest says {entry.bytes}")
    if _sha256(data) != entry.sha256:
        raise SnapshotError(f"{path} checksum mismatch (corrupt): sha256 differs from manifest")
    return data


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
    if manifest.format != FORMAT_VERSION:
        raise SnapshotError(f"{path} has format {manifest.format}, this code reads {FORMAT_VERSION}")
    for name in (INDEX_FILE, ITEMS_FILE):
        if name not in manifest.files:
            raise SnapshotError(f"{path} lists no checksum for {name}")
    return manifest


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


def _load_version(root: Path, version: str, expected_embedder: str | None) -> LoadedSnapshot:
    if not is_version_name(version):
        raise SnapshotError(f"not a snapshot version name: {version!r}")
    folder = root / version
    manifest = _read_manifest(folder, version)
    if expected_embedder is not None and manifest.embedder != expected_embedder:
        raise EmbedderMismatch(
            f"snapshot {version} was built with embedder {manifest.embedder!r}, "
            f"but {expected_embedder!r} is in use: rebuild the snapshot (run consolidation)"
        )
    index_path = _checked_path(folder, INDEX_FILE, manifest.files[INDEX_FILE])
    items_path = _checked_path(folder, ITEMS_FILE, manifest.files[ITEMS_FILE])
    try:
        # Memory-mapped: the vectors stay in the page cache, shared by every process that
        # serves this version (a folder is never modified after publication).
        index = faiss.read_index(str(index_path), INDEX_READ_FLAGS)
    except RuntimeError as exc:
        raise SnapshotError(f"{folder / INDEX_FILE} corrupt: {exc}") from exc
    try:
        table = pq.read_table(items_path, memory_map=True)
        items = table_to_items(table)
    except SnapshotError:
        raise
    except (pa.ArrowException, msgspec.MsgspecError, ValueError, TypeError) as exc:
        raise SnapshotError(f"{folder / ITEMS_FILE} corrupt: {exc}") from exc

    n = manifest.count
    if not isinstance(index, faiss.IndexIDMap2):
        raise SnapshotError(f"{folder / INDEX_FILE} is {type(index).__name__}, expected IndexIDMap2")
    dead = manifest.index_dead
    if index.ntotal != n + dead or index.d != manifest.dim or len(items) != n:
        raise SnapshotError(
            f"snapshot {version} inconsistent: manifest count {n} (+{dead} dead) dim {manifest.dim}, "
            f"index {index.ntotal} x {index.d}, items {len(items)}"
        )
    if not np.array_equal(np.sort(faiss.vector_to_array(index.id_map)), np.arange(n + dead, dtype=np.int64)):
        raise SnapshotError(f"snapshot {version} inconsistent: FAISS ids are not row positions")
    tiers = dict(sorted(Counter(item.tier for item in items).items()))
    if tiers != manifest.tier_counts:
        raise SnapshotError(f"snapshot {version} inconsistent: tier counts {tiers} != {manifest.tier_counts}")
    inner = faiss.downcast_index(index.index)
    if manifest.index_kind == "hnsw":
        inner.hnsw.efSearch = int(manifest.index_params.get("ef_search", HNSW_EF_SEARCH))
    labels = faiss.vector_to_array(index.id_map)
    if not n:
        vectors = np.zeros((0, manifest.dim), dtype=np.float32)
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
    )


def load_snapshot(
    root: Path,
    version: str | None = None,
    *,
    expected_embedder: str | None = None,
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
    attempts = 3
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
    root: Path, expected_embedder: str | None = None
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
