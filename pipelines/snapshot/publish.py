"""Publishing a version: a full build (`build_snapshot`) or the next version from a
published one plus what changed (`publish_next`), written under a temporary folder,
renamed into place and made CURRENT (`files.write_version`); old versions are pruned after."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pyarrow as pa

from pipelines.item_history import HISTORY_SCHEMA
from pipelines.records import MemoryItem
from pipelines.snapshot import layout
from pipelines.snapshot.files import read_index_checked, read_manifest, write_version
from pipelines.snapshot.index import (
    INDEX_DELTA_FRACTION,
    BuiltIndex,
    apply_labels,
    build_index,
    labels_npy,
    next_index,
    read_indexes,
)
from pipelines.snapshot.layout import FileEntry, SnapshotError, SnapshotManifest, items_to_table
from pipelines.snapshot.segments import (
    history_delta,
    history_parquet,
    read_segments,
    removed_parquet,
    served_rows,
    served_table,
    table_parquet,
)
from pipelines.snapshot.versions import check_folder_store, prune

# Past this many delta and removed rows per base row a publish rewrites the base (compacts).
COMPACT_FRACTION = 0.25


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
    store_id: str = "",
) -> SnapshotManifest:
    """Publish a new snapshot of the active items and make it CURRENT; prune old ones.

    `vectors[i]` is the (unit-length) embedding of `items[i]`. Archived and superseded items
    are left out together with their vectors. Raises ValueError on inconsistent input and
    SnapshotError when the folder cannot be published. `reuse`: a previous snapshot folder
    whose HNSW graph is extended instead of rebuilt when this one is HNSW too and at most
    `reuse_max_dead` of its slots would be dead (otherwise a full build). `history`: the
    items' revisions and audit events (`pipelines.item_history.HISTORY_SCHEMA`), published as
    `history.parquet` for the service to show. `store_id`: the publishing store's id, kept in
    the manifest; a folder holding another store's snapshots is refused (`StoreMismatch`).
    """
    root = Path(root)
    _check_build_args(embedder_name, dim, watermark, keep)
    check_folder_store(root, store_id)
    vecs = _checked_vectors(items, vectors, dim)
    kept, vecs = _active_only(items, vecs)
    return _publish_rows(root, [item.id for item in kept], [item.tier for item in kept], items_to_table(kept),
                         vecs, embedder_name=embedder_name, dim=dim, watermark=watermark,
                         hnsw_threshold=hnsw_threshold, keep=keep, extra=extra, reuse=reuse,
                         reuse_max_dead=reuse_max_dead, history=history, store_id=store_id)


def _publish_rows(
    root: Path, ids: list[str], tiers: list[str], table: pa.Table, vecs: np.ndarray, *, embedder_name: str,
    dim: int, watermark: int, hnsw_threshold: int, keep: int, extra: dict[str, Any] | None,
    reuse: Path | None, reuse_max_dead: float, history: pa.Table | None, store_id: str = "",
) -> SnapshotManifest:
    built = build_index(ids, vecs, dim, hnsw_threshold, reuse, reuse_max_dead)
    blobs: dict[str, bytes] = {layout.ITEMS_FILE: table_parquet(table)}
    if history is not None:
        blobs[layout.HISTORY_FILE] = history_parquet(history)

    fields = _manifest_fields(built, embedder=embedder_name, dim=dim, watermark=watermark, count=len(ids),
                              tiers=tiers, extra=extra)
    fields["store_id"] = store_id
    manifest = write_version(root, {layout.INDEX_FILE: built.index}, blobs, {}, fields)
    prune(root, keep)
    return manifest


def _manifest_fields(built: BuiltIndex, *, embedder: str, dim: int, watermark: int, count: int,
                     tiers: Sequence[str], extra: dict[str, Any] | None) -> dict[str, Any]:
    """The manifest fields of a new version that its files do not decide (see `write_version`)."""
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


# -- the next version from a published one --------------------------------------------------


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
        index = read_index_checked(self.folder, layout.INDEX_FILE, self.manifest.files[layout.INDEX_FILE])
        apply_labels(index, self.labels)
        return index


def read_published(root: Path, version: str) -> PublishedVersion:
    """One published version's ids, tiers, segments and index, every file it reads checked
    against the manifest (the graph is hashed, then memory-mapped). Raises SnapshotError."""
    folder = Path(root) / version
    manifest = read_manifest(folder, version)
    base, removed, delta = read_segments(folder, manifest, ["id", "tier"])
    served = served_rows(folder, base, removed, delta)
    index, labels, delta_index = read_indexes(folder, manifest, 0)
    n = manifest.count
    if len(served) != n:
        raise SnapshotError(f"snapshot {version} inconsistent: {len(served)} rows, manifest count {n}")
    return PublishedVersion(manifest=manifest, folder=folder, ids=served.column("id").to_pylist(),
                            tiers=served.column("tier").to_pylist(), base_ids=base.column("id").to_pylist(),
                            delta=delta, index=index, labels=labels, delta_index=delta_index)


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
    store_id: str = "",
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
    all of them). `store_id` as for `build_snapshot`."""
    root = Path(root)
    dim = previous.manifest.dim
    _check_build_args(previous.manifest.embedder, dim, watermark, keep)
    check_folder_store(root, store_id)
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
    built = next_index(previous, carried, fresh_ids, fresh_vecs, len(ids), hnsw_threshold, reuse_max_dead,
                       index_delta_fraction)

    # A base row stays served only when carried from the base part of the previous rows (an
    # item written since the base has a base row too, hidden behind its delta row).
    base_served = len(previous.ids) - previous.manifest.delta_count
    from_base = {previous.ids[r] for r in carried if r < base_served}
    removed = [item_id for item_id in previous.base_ids if item_id not in from_base]
    delta_rows = len(ids) - (len(previous.base_ids) - len(removed))
    has_history = history is not None
    compact = (delta_rows + len(removed) > compact_fraction * max(1, len(previous.base_ids))
               or (has_history and layout.HISTORY_FILE not in previous.manifest.files))
    blobs: dict[str, bytes] = {}
    links: dict[str, FileEntry] = {}
    if compact:
        carried_rows = served_table(previous.folder, previous.manifest).take(pa.array(carried, type=pa.int64()))
        blobs[layout.ITEMS_FILE] = table_parquet(pa.concat_tables([carried_rows, fresh.cast(carried_rows.schema)]))
        if history is not None:
            blobs[layout.HISTORY_FILE] = history_parquet(history(None))
        base, delta_rows, removed = "", 0, []
    else:
        links[layout.ITEMS_FILE] = previous.manifest.files[layout.ITEMS_FILE]
        delta = fresh
        if previous.delta is not None:  # its rows are the previous rows from base_served on, in order
            kept = previous.delta.take(pa.array([r - base_served for r in carried if r >= base_served], pa.int64()))
            delta = pa.concat_tables([kept, fresh.cast(kept.schema)])
        blobs[layout.ITEMS_DELTA_FILE] = table_parquet(delta)
        blobs[layout.ITEMS_REMOVED_FILE] = removed_parquet(removed)
        if history is not None:
            links[layout.HISTORY_FILE] = previous.manifest.files[layout.HISTORY_FILE]
            rows = history(previous.manifest.created_at)
            earlier = history_delta(previous.folder, previous.manifest)
            if earlier is not None:
                rows = pa.concat_tables([earlier, rows.select(HISTORY_SCHEMA.names).cast(HISTORY_SCHEMA)])
            blobs[layout.HISTORY_DELTA_FILE] = history_parquet(rows)
        base = previous.manifest.base or previous.manifest.version
    fields = _manifest_fields(built, embedder=previous.manifest.embedder, dim=dim, watermark=watermark,
                              count=len(ids), tiers=tiers, extra=extra)
    fields.update(base=base, delta_count=delta_rows, removed_count=len(removed), store_id=store_id)
    indexes = {layout.INDEX_FILE: built.index}
    if built.index is None:  # the graph file is kept: its labels and the delta index are written
        links[layout.INDEX_FILE] = previous.manifest.files[layout.INDEX_FILE]
        indexes = {layout.INDEX_DELTA_FILE: built.delta}
        blobs[layout.INDEX_LABELS_FILE] = labels_npy(built.labels)
        fields["index_base"] = previous.manifest.index_base or previous.manifest.version
    shared = {name: (previous.folder / name, entry) for name, entry in links.items()}
    manifest = write_version(root, indexes, blobs, shared, fields)
    prune(root, keep)
    return manifest
