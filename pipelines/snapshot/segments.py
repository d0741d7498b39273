"""The item and history rows of a version, in segments: a base file (shared with earlier
versions, hard-linked) plus, in a segmented version, the base ids no longer served and a
delta of the rows written since the base (`layout.ITEMS_DELTA_FILE`). Encoding the files
and reading back the rows a version serves, in FAISS-label order."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.item_history import HISTORY_SCHEMA, SORT_KEYS
from pipelines.snapshot.files import checked_path, parquet_bytes
from pipelines.snapshot.layout import (
    HISTORY_DELTA_FILE,
    HISTORY_ROW_GROUP,
    ITEMS_DELTA_FILE,
    ITEMS_FILE,
    ITEMS_REMOVED_FILE,
    ITEMS_SCHEMA,
    REMOVED_SCHEMA,
    SnapshotError,
    SnapshotManifest,
)

# -- write ----------------------------------------------------------------------------------


def table_parquet(table: pa.Table) -> bytes:
    return parquet_bytes(table.replace_schema_metadata(ITEMS_SCHEMA.metadata))


def history_parquet(history: pa.Table) -> bytes:
    missing = set(HISTORY_SCHEMA.names) - set(history.column_names)
    if missing:
        raise ValueError(f"history table lacks columns {sorted(missing)}")
    table = history.select(HISTORY_SCHEMA.names).cast(HISTORY_SCHEMA).sort_by(SORT_KEYS)
    return parquet_bytes(table, row_group_size=HISTORY_ROW_GROUP)


def removed_parquet(ids: Sequence[str]) -> bytes:
    return parquet_bytes(pa.table({"id": pa.array(list(ids), pa.string())}, schema=REMOVED_SCHEMA))


# -- read -----------------------------------------------------------------------------------


def read_segments(folder: Path, manifest: SnapshotManifest, base_columns: Sequence[str] | None = None
                  ) -> tuple[pa.Table, pa.ChunkedArray | None, pa.Table | None]:
    """(base rows with `base_columns`, removed ids, delta rows) of a version, checksums
    verified; (base, None, None) for a version without a delta segment."""
    base_path = checked_path(folder, ITEMS_FILE, manifest.files[ITEMS_FILE])
    try:
        base = pq.read_table(base_path, columns=base_columns, memory_map=True)
        if ITEMS_DELTA_FILE not in manifest.files:
            return base, None, None
        removed = pq.read_table(checked_path(folder, ITEMS_REMOVED_FILE, manifest.files[ITEMS_REMOVED_FILE]),
                                schema=REMOVED_SCHEMA).column("id")
        delta = pq.read_table(checked_path(folder, ITEMS_DELTA_FILE, manifest.files[ITEMS_DELTA_FILE]),
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


def served_table(folder: Path, manifest: SnapshotManifest, columns: Sequence[str] | None = None) -> pa.Table:
    """The rows a version serves, in FAISS-label order: the base file's rows not listed as
    removed, then the delta's (checksums verified, files memory-mapped). Raises
    SnapshotError when a file is corrupt or the segments do not add up."""
    return served_rows(folder, *read_segments(folder, manifest, columns))


def served_rows(folder: Path, base: pa.Table, removed: pa.ChunkedArray | None, delta: pa.Table | None) -> pa.Table:
    """The served rows of a version's segments (`read_segments`), with the base's columns."""
    if removed is None or delta is None:
        return base
    try:
        delta = delta.select(base.column_names).cast(base.schema)
        return pa.concat_tables([_base_kept(base, removed), delta])
    except (pa.ArrowException, KeyError) as exc:
        raise SnapshotError(f"{folder / ITEMS_DELTA_FILE} does not fit the base: {exc}") from exc


def history_delta(folder: Path, manifest: SnapshotManifest) -> pa.Table | None:
    """The history rows a version's delta segment holds (None: it has none)."""
    entry = manifest.files.get(HISTORY_DELTA_FILE)
    if entry is None:
        return None
    path = checked_path(folder, HISTORY_DELTA_FILE, entry)
    try:
        return pq.read_table(path, schema=HISTORY_SCHEMA)
    except pa.ArrowException as exc:
        raise SnapshotError(f"{path} corrupt: {exc}") from exc
