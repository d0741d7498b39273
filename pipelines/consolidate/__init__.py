"""Consolidation stages, framework-free: inbox -> warehouse -> published snapshot.

Each function below is one stage of the Dagster graph in `assets/` (the assets add only
resources, metadata and checks), so every stage can be run, tested and benchmarked
without Dagster:

    land_events -> govern_items -> embed_items -> cluster_stm -> merge_clusters
    -> apply_lifecycle -> build_palace -> publish_snapshot

Crash safety (a run may die at any point, by exception or SIGKILL):
- every stage writes the warehouse in ONE transaction, so a stage is all or nothing;
- every stage is idempotent given the warehouse state: it reads what it works on from the
  warehouse (and the inbox), never from an earlier stage's memory, so the next run redoes
  exactly what a dead run left undone;
- the ingestion watermark moves only in the transaction that stores the items its events
  produced (`govern_items`), so an event is never counted as ingested without its items;
- the snapshot is published last, by `pipelines.snapshot.build_snapshot` (new folder,
  then CURRENT replaced atomically): a dead run leaves the published snapshot untouched.
The service never reads the warehouse (it serves snapshot + inbox delta), so a warehouse
that is a few stages ahead of the snapshot is invisible to it.

One writer at a time: DuckDB allows one read-write process per file, so runs take
`WarehouseLock` (a file lock next to the warehouse) for their whole duration; a second run
waits for it instead of failing on DuckDB's own lock.

`hook` parameters are called with a point name (e.g. "govern:before_commit") inside the
open transaction just before it commits; tests use them to kill or fail a run there.
"""

from pipelines.consolidate.clusters import ClusterRef, ClusterReport, cluster_room, cluster_stm
from pipelines.consolidate.common import (
    EMBED_BATCH,
    NOT_MERGED_TYPES,
    REEMBED_COMMAND,
    ConsolidationError,
    EmbedderChanged,
    Hook,
    InboxBehind,
    MessageVectorsChanged,
    mergeable,
    pending_stm_by_partition,
    stm_by_partition,
)
from pipelines.consolidate.embedding import (
    EmbedReport,
    embed_batched,
    embed_items,
    embedding_check_since,
    ensure_same_embedder,
    prefetch_item_vectors,
    reembed_all,
    store_embedder,
    vectors_for,
)
from pipelines.consolidate.governance import GovernReport, check_vector_scheme, govern_items
from pipelines.consolidate.invariants import (
    cluster_violations,
    dimension_violations,
    hard_block_violations,
    landing_violations,
    location_violations,
    policy_check_since,
    provenance_violations,
    stored_provenance_violations,
    supersede_violations,
)
from pipelines.consolidate.landing import LandReport, begin_run, land_events
from pipelines.consolidate.lifecycle import MAX_PROMOTION_PASSES, LifecycleReport, apply_lifecycle
from pipelines.consolidate.locations import PalaceReport, build_palace, last_finished_run
from pipelines.consolidate.lock import WarehouseLock, lock_path
from pipelines.consolidate.merges import MergeReport, merge_clusters, merger_used
from pipelines.consolidate.once import consolidate_once
from pipelines.consolidate.publishing import (
    SnapshotReport,
    finish_run,
    publish_snapshot,
    read_published_manifest,
)

__all__ = [
    "EMBED_BATCH", "MAX_PROMOTION_PASSES", "NOT_MERGED_TYPES", "REEMBED_COMMAND",
    "ClusterRef", "ClusterReport", "ConsolidationError", "EmbedReport", "EmbedderChanged", "InboxBehind",
    "GovernReport", "Hook", "LandReport", "MessageVectorsChanged", "check_vector_scheme",
    "LifecycleReport", "MergeReport", "PalaceReport",
    "SnapshotReport", "WarehouseLock",
    "apply_lifecycle", "begin_run", "build_palace", "cluster_room", "cluster_stm",
    "cluster_violations", "consolidate_once", "dimension_violations", "landing_violations",
    "location_violations", "policy_check_since", "embed_batched", "embed_items", "embedding_check_since",
    "ensure_same_embedder", "prefetch_item_vectors", "finish_run", "govern_items", "hard_block_violations",
    "land_events", "last_finished_run", "lock_path", "merge_clusters", "merger_used", "mergeable",
    "pending_stm_by_partition", "provenance_violations", "stored_provenance_violations", "publish_snapshot",
    "read_published_manifest", "reembed_all", "stm_by_partition", "store_embedder", "supersede_violations",
    "vectors_for",
]  # fmt: skip
