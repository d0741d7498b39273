"""What a version folder holds: its file names, its manifest and the items table's layout
(see the package docstring for the folder layout)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec
import pyarrow as pa

from pipelines.item_rows import ItemRowCodec
from pipelines.records import MemoryItem

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
# Small row groups sorted by item id: reading one item's history touches one or two groups.
HISTORY_ROW_GROUP = 4096
CURRENT_FILE = "CURRENT"

IndexKind = Literal["flat-ip", "hnsw"]


class SnapshotError(Exception):
    """A snapshot is missing, unreadable, corrupt, truncated or inconsistent."""


class EmbedderMismatch(SnapshotError):
    """The snapshot was built with a different embedder than the one in use."""


class StoreMismatch(SnapshotError):
    """A snapshots folder holds (or would hold) snapshots of two different stores."""


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
    # The id of the store (warehouse) that published it ("": published before stores had ids).
    store_id: str = ""


def required_files(manifest: SnapshotManifest) -> tuple[str, ...]:
    """The files a manifest must list a checksum for: the index and the items, and both
    files of a segment pair when it lists either."""
    segmented = (ITEMS_DELTA_FILE, ITEMS_REMOVED_FILE) if ITEMS_DELTA_FILE in manifest.files else ()
    if INDEX_DELTA_FILE in manifest.files or INDEX_LABELS_FILE in manifest.files:
        segmented += (INDEX_DELTA_FILE, INDEX_LABELS_FILE)
    return (INDEX_FILE, ITEMS_FILE, *segmented)


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
