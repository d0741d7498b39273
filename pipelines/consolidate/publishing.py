"""Stage 8: the published snapshot, and the run record closed."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from pipelines.consolidate.common import ConsolidationError, stm_by_partition, stored_stm_by_partition
from pipelines.records import MemoryItem
from pipelines.settings import Settings
from pipelines.snapshot import (
    MANIFEST_FILE,
    SnapshotError,
    SnapshotManifest,
    build_snapshot,
    current_version,
    items_to_table,
    publish_next,
    read_published,
    verify_files,
)
from pipelines.warehouse import Warehouse


@dataclass
class SnapshotReport:
    version: str | None
    published: bool
    count: int
    tier_counts: dict[str, int]
    index_kind: str
    watermark: int
    embedder: str
    dim: int
    stm_by_partition: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, manifest: SnapshotManifest, *, published: bool, stm_by_partition: dict[str, int]) -> "SnapshotReport":
        """The report of a run that published `manifest`, or kept it (published=False)."""
        return cls(version=manifest.version, published=published, count=manifest.count,
                   tier_counts=dict(manifest.tier_counts), index_kind=manifest.index_kind,
                   watermark=manifest.watermark, embedder=manifest.embedder, dim=manifest.dim,
                   stm_by_partition=stm_by_partition)


def read_published_manifest(root: str | Path) -> SnapshotManifest | None:
    """The manifest of the CURRENT snapshot (small JSON; no index is loaded), or None when
    nothing is published or it cannot be read."""
    root = Path(root)
    try:
        version = current_version(root)
    except SnapshotError:
        return None
    if version is None:
        return None
    try:
        return msgspec.json.decode((root / version / MANIFEST_FILE).read_bytes(), type=SnapshotManifest)
    except (OSError, msgspec.DecodeError):
        return None


def _fingerprint(items: Sequence[MemoryItem], vectors: np.ndarray, watermark: int, model: str, kind: str) -> str:
    digest = hashlib.sha256()
    digest.update(f"{model}\x1f{watermark}\x1f{kind}\x1f".encode())
    digest.update(msgspec.json.encode(list(items)))
    digest.update(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
    return digest.hexdigest()


def _intact(root: Path, version: str) -> bool:
    """A published version whose files still match their checksums: only then may the
    "nothing changed" shortcut keep it (a corrupt CURRENT is republished)."""
    try:
        verify_files(root, version)
    except SnapshotError:
        return False
    return True


def publish_snapshot(
    warehouse: Warehouse,
    embedder: Any,
    settings: Settings,
    *,
    extra: dict[str, Any] | None = None,
    force: bool = False,
) -> SnapshotReport:
    """Publish the active items with their vectors as a new snapshot (flat IP below
    `settings.hnsw_threshold` items, HNSW above; the newest `settings.snapshots_keep` kept).
    The watermark is the warehouse's ingestion watermark. When nothing changed since the
    published snapshot (same items, vectors, watermark, model) nothing is published."""
    model_name = embedder.name
    root = settings.snapshots_path
    current = read_published_manifest(root)
    if current is not None and not force:
        report = _publish_changes(warehouse, model_name, settings, current, extra)
        if report is not None:
            return report
    items = warehouse.active_items()
    ids = [i.id for i in items]
    stale = warehouse.stale_embedding_ids(model_name)
    if stale:
        raise ConsolidationError(
            f"{len(stale)} active items have no current {model_name!r} vector (e.g. {stale[:3]}); "
            "materialize item_embeddings first"
        )
    dims = [d for m, d in warehouse.stored_embedding_models() if m == model_name]
    dim = dims[0] if dims else int(embedder.dim)  # nothing stored yet: ask the model
    vectors = warehouse.embedding_matrix(model_name, ids) if ids else np.zeros((0, dim), np.float32)
    watermark = warehouse.last_ingested_seq()
    kind = "hnsw" if len(items) >= settings.hnsw_threshold and items else "flat-ip"
    fingerprint = _fingerprint(items, vectors, watermark, model_name, kind)
    stm = stm_by_partition(items)
    if (current is not None and not force and current.extra.get("fingerprint") == fingerprint
            and _intact(root, current.version)):
        return SnapshotReport.of(current, published=False, stm_by_partition=stm)
    manifest = build_snapshot(
        root, items, vectors, embedder_name=model_name, dim=dim, watermark=watermark,
        hnsw_threshold=settings.hnsw_threshold, keep=settings.snapshots_keep,
        extra={**(extra or {}), "fingerprint": fingerprint, "stm_by_partition": stm},
        reuse=root / current.version if current is not None and not force else None,
        history=warehouse.published_history(), store_id=warehouse.store_id(),
    )  # fmt: skip
    return SnapshotReport.of(manifest, published=True, stm_by_partition=stm)


def _publish_changes(warehouse: Warehouse, model_name: str, settings: Settings, current: SnapshotManifest,
                     extra: dict[str, Any] | None) -> SnapshotReport | None:
    """Publish the next snapshot from the published one plus what changed since
    (`pipelines.snapshot.publish_next`): rows of items written since it was built (or active
    and missing from it) come from the warehouse, everything else stays in the published
    files, which the next version shares; only a delta segment and the index are written, so
    a run costs what changed, not the store (decoding 100k items took ~10 s, reading their
    vectors ~7 s, rewriting the item table and the history ~5 s). None when the published
    version cannot serve as the base (another embedder, unreadable): the caller builds from
    the warehouse alone."""
    if current.embedder != model_name:
        return None
    root = settings.snapshots_path
    try:
        previous = read_published(root, current.version)
    except SnapshotError:
        return None
    active = set(warehouse.active_ids())
    absent = sorted(active.difference(previous.ids))
    since = previous.manifest.created_at
    fresh = warehouse.items_written_since(since, absent)
    # A carried row was current when the previous version was checked; only what was
    # written since can have gone stale.
    stale = warehouse.stale_embedding_ids(model_name, ids=[i.id for i in fresh])
    if stale:
        raise ConsolidationError(
            f"{len(stale)} active items have no current {model_name!r} vector (e.g. {stale[:3]}); "
            "materialize item_embeddings first"
        )
    watermark = warehouse.last_ingested_seq()
    stm = stored_stm_by_partition(warehouse)
    kind = "hnsw" if active and len(active) >= settings.hnsw_threshold else "flat-ip"
    if (not fresh and active == set(previous.ids) and watermark == previous.manifest.watermark
            and kind == previous.manifest.index_kind and _intact(root, previous.manifest.version)):
        return SnapshotReport.of(previous.manifest, published=False, stm_by_partition=stm)
    fresh_vecs = (warehouse.embedding_matrix(model_name, [i.id for i in fresh]) if fresh
                  else np.zeros((0, previous.manifest.dim), np.float32))
    manifest = publish_next(
        root, previous, items_to_table(fresh), fresh_vecs, active, watermark=watermark,
        hnsw_threshold=settings.hnsw_threshold, keep=settings.snapshots_keep,
        compact_fraction=settings.snapshot_compact_fraction,
        index_delta_fraction=settings.snapshot_index_delta_fraction,
        extra={**(extra or {}), "stm_by_partition": stm, "changed_rows": len(fresh)},
        history=warehouse.published_history, store_id=warehouse.store_id(),
    )  # fmt: skip
    return SnapshotReport.of(manifest, published=True, stm_by_partition=stm)


def finish_run(warehouse: Warehouse, run_id: str, report: SnapshotReport, *, counts: dict[str, Any]) -> None:
    """Record the run as finished with its counts and snapshot version (started here when
    the run's selection did not include the landing stage)."""
    summary = {**counts, "snapshot.count": report.count, "snapshot.published": report.published}
    with warehouse.transaction():
        if warehouse.get_run(run_id) is None:
            warehouse.start_run(run_id, report.watermark)
        warehouse.finish_run(run_id, "success", summary, to_seq=report.watermark,
                             snapshot_version=report.version)
