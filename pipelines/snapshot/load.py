"""Loading a published version for the service: verified, memory-mapped, searched; falling
back to an older version when the current one cannot be loaded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import faiss
import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.item_history import HISTORY_SCHEMA, split_history
from pipelines.records import MemoryItem
from pipelines.snapshot.files import checked_path, read_manifest
from pipelines.snapshot.index import (
    HNSW_EF_SEARCH,
    INDEX_READ_FLAGS,
    SEARCH_THREADS,
    read_indexes,
    set_search_threads,
    stored_rows,
)
from pipelines.snapshot.layout import (
    CURRENT_FILE,
    HISTORY_DELTA_FILE,
    HISTORY_FILE,
    ITEMS_FILE,
    EmbedderMismatch,
    SnapshotError,
    SnapshotManifest,
    StoreMismatch,
    table_to_items,
)
from pipelines.snapshot.segments import served_table
from pipelines.snapshot.versions import current_version, is_version_name, list_versions


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
                    checked_path(self.path, name, self.manifest.files[name])
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


def _named_version(root: Path, version: str) -> tuple[Path, SnapshotManifest]:
    """(folder, manifest) of a version given by name. Raises SnapshotError."""
    if not is_version_name(version):
        raise SnapshotError(f"not a snapshot version name: {version!r}")
    folder = Path(root) / version
    return folder, read_manifest(folder, version)


def verify_files(root: Path, version: str) -> SnapshotManifest:
    """Check one published version's manifest and the size and sha256 of every file it
    lists, without deserialising the index. Raises SnapshotError when anything is off."""
    folder, manifest = _named_version(root, version)
    for name, entry in manifest.files.items():
        checked_path(folder, name, entry)
    return manifest


def _load_version(root: Path, version: str, expected_embedder: str | Collection[str] | None) -> LoadedSnapshot:
    folder, manifest = _named_version(root, version)
    accepted = (expected_embedder,) if isinstance(expected_embedder, str) else expected_embedder
    if accepted is not None and manifest.embedder not in accepted:
        raise EmbedderMismatch(
            f"snapshot {version} was built with embedder {manifest.embedder!r}, "
            f"but {' or '.join(map(repr, accepted))} is in use: rebuild the snapshot (run consolidation)"
        )
    # Memory-mapped: the vectors stay in the page cache, shared by every process that
    # serves this version (a folder is never modified after publication).
    index, labels, delta = read_indexes(folder, manifest, INDEX_READ_FLAGS)
    table = served_table(folder, manifest)
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
        vectors[labels[live]] = stored_rows(index, inner, index.ntotal, manifest.dim)[live]
        exact_rows = np.sort(faiss.vector_to_array(delta.id_map))
        if len(exact_rows):
            vectors[exact_rows] = delta.reconstruct_batch(exact_rows)
    elif np.array_equal(labels[:n], np.arange(n, dtype=np.int64)):
        vectors = stored_rows(index, inner, n, manifest.dim)  # row i is slot i: no copy
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
    root: Path, expected_embedder: str | Collection[str] | None = None, *, store_id: str = ""
) -> tuple[LoadedSnapshot | None, list[str]]:
    """The newest loadable snapshot: CURRENT first, then older versions newest first.
    Returns (snapshot or None, problems found on the way). Nothing published yet is not a
    problem: (None, []). `store_id`: the store served so far; a version another store
    published is skipped as a problem (one without a store id is not checked)."""
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
            if store_id:
                other = read_manifest(root / version, version).store_id
                if other and other != store_id:
                    raise StoreMismatch(f"published by another store ({other}) than the one served ({store_id}): "
                                        "two consolidations publish into this folder; give each store its "
                                        "own snapshots_dir (docs/deploy.md)")
            return load_snapshot(root, version, expected_embedder=expected_embedder), problems
        except SnapshotError as exc:
            problems.append(f"snapshot {version}: {exc}")
    return None, problems
