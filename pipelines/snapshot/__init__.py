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

One job a module:
- `layout`: file names, the manifest, the items table's columns;
- `versions`: version names, CURRENT, pruning;
- `files`: durable writes, checksummed reads, the manifest read back;
- `segments`: a version's item and history rows as a base plus a delta segment;
- `index`: the FAISS index (index choice, HNSW reuse, the segmented index, memory-mapped
  vectors);
- `publish`: `build_snapshot`, `publish_next`;
- `load`: `load_snapshot`, `load_latest_good`, `verify_files`.
This package's names are the API; the modules' other names are its internals.
"""

from pipelines.snapshot.index import (
    HNSW_EF_CONSTRUCTION,
    HNSW_EF_SEARCH,
    HNSW_M,
    INDEX_DELTA_FRACTION,
    INDEX_READ_FLAGS,
    SEARCH_THREADS,
    set_search_threads,
)
from pipelines.snapshot.layout import (
    CURRENT_FILE,
    FORMAT_VERSION,
    HISTORY_DELTA_FILE,
    HISTORY_FILE,
    HISTORY_ROW_GROUP,
    INDEX_DELTA_FILE,
    INDEX_FILE,
    INDEX_LABELS_FILE,
    ITEM_CODEC,
    ITEMS_DELTA_FILE,
    ITEMS_FILE,
    ITEMS_REMOVED_FILE,
    ITEMS_SCHEMA,
    JSON_COLUMNS,
    MANIFEST_FILE,
    READABLE_FORMATS,
    REMOVED_SCHEMA,
    EmbedderMismatch,
    FileEntry,
    IndexKind,
    SnapshotError,
    SnapshotManifest,
    StoreMismatch,
    items_to_table,
    table_to_items,
)
from pipelines.snapshot.load import LoadedSnapshot, load_latest_good, load_snapshot, verify_files
from pipelines.snapshot.publish import (
    COMPACT_FRACTION,
    PublishedVersion,
    build_snapshot,
    publish_next,
    read_published,
)
from pipelines.snapshot.versions import (
    STALE_TMP_SECONDS,
    check_folder_store,
    current_version,
    folder_stores,
    is_version_name,
    list_versions,
    mixed_stores_problem,
    prune,
)

__all__ = [
    "COMPACT_FRACTION",
    "CURRENT_FILE",
    "FORMAT_VERSION",
    "HISTORY_DELTA_FILE",
    "HISTORY_FILE",
    "HISTORY_ROW_GROUP",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_EF_SEARCH",
    "HNSW_M",
    "INDEX_DELTA_FILE",
    "INDEX_DELTA_FRACTION",
    "INDEX_FILE",
    "INDEX_LABELS_FILE",
    "INDEX_READ_FLAGS",
    "ITEMS_DELTA_FILE",
    "ITEMS_FILE",
    "ITEMS_REMOVED_FILE",
    "ITEMS_SCHEMA",
    "ITEM_CODEC",
    "JSON_COLUMNS",
    "MANIFEST_FILE",
    "READABLE_FORMATS",
    "REMOVED_SCHEMA",
    "SEARCH_THREADS",
    "STALE_TMP_SECONDS",
    "EmbedderMismatch",
    "FileEntry",
    "IndexKind",
    "LoadedSnapshot",
    "PublishedVersion",
    "SnapshotError",
    "SnapshotManifest",
    "StoreMismatch",
    "build_snapshot",
    "check_folder_store",
    "current_version",
    "folder_stores",
    "is_version_name",
    "items_to_table",
    "list_versions",
    "load_latest_good",
    "load_snapshot",
    "mixed_stores_problem",
    "prune",
    "publish_next",
    "read_published",
    "set_search_threads",
    "table_to_items",
    "verify_files",
]
