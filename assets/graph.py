"""The consolidation graph as Dagster assets: inbox -> governed items -> embeddings ->
STM clusters -> merged items -> lifecycle -> palace -> published snapshot.

Every asset is glue: it calls one stage of `pipelines.consolidate` (framework-free, one
warehouse transaction per stage, idempotent given the warehouse state) and reports what it
did as materialization metadata. Assets depend on each other through the warehouse
(`deps`), except `stm_clusters`, whose value (the clusters) is passed to `merged_items`
and `palace_locations` through the IO manager; both re-check it against the warehouse.
"""


from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import dagster as dg

from assets.resources import (
    EmbedderResource,
    FaultInjectionResource,
    InboxResource,
    LociSettingsResource,
    MergerResource,
    WarehouseResource,
)
from pipelines import consolidate as stages
from pipelines.consolidate.governance import pooling_record
from pipelines.message_context import vector_recipe
from pipelines.records import utcnow

GROUP = "consolidation"
# One writer on the warehouse. Every asset (and check) is in this concurrency pool, which
# the shipped dagster.yaml limits to one run in progress (run granularity), so any run that
# touches the warehouse, the job's or one the UI builds ad hoc, waits in the run queue.
# The job also carries the run tag of the same name, limited to 1 by tag, for instances
# configured before the pool existed.
WAREHOUSE_POOL = "loci/warehouse"
CHECK_SAMPLE = 20  # offending ids listed in a check's metadata
WAREHOUSE_TAG = WAREHOUSE_POOL

def _now() -> datetime:
    return datetime.now(timezone.utc)


def _warehouse_asset(**options: Any) -> Any:
    """`dg.asset` for a stage of this graph: in the consolidation group and the one-writer
    warehouse pool (`WAREHOUSE_POOL`)."""
    return dg.asset(group_name=GROUP, pool=WAREHOUSE_POOL, **options)


def _reembed_failure(exc: Exception, configured: Any, stored: Any) -> dg.Failure:
    """The failure of a stage that met vectors of another embedder or recipe than the
    configured one: not retried, the fix is a re-embed (`REEMBED_COMMAND`)."""
    return dg.Failure(
        description=str(exc),
        metadata={"configured": configured, "stored": dg.MetadataValue.json(stored), "fix": stages.REEMBED_COMMAND},
        allow_retries=False,
    )


def _materialized(values: dict[str, Any]) -> dg.MaterializeResult:
    """A stage's result, its report's numbers as materialization metadata."""
    return dg.MaterializeResult(metadata=_md(values))


def _md(values: dict[str, Any]) -> dict[str, Any]:
    """Metadata values Dagster can render (dicts and lists as JSON)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        out[key] = dg.MetadataValue.json(value) if isinstance(value, (dict, list)) else value
    return out


@_warehouse_asset(
    kinds={"sqlite", "duckdb"},
    description="Inbox events after the warehouse's last ingested seq, landed into "
    "chat_turns / proposals / landed_events (idempotent by event id).",
)
def landed_events(
    context: dg.AssetExecutionContext,
    faults: FaultInjectionResource,
    inbox: InboxResource,
    warehouse: WarehouseResource,
) -> dg.MaterializeResult:
    faults.reached("landed_events:start")
    report = stages.land_events(inbox.get(), warehouse.get(), run_id=context.run_id, hook=faults.reached)
    context.log.info(f"landed {report.landed} events (seq {report.from_seq}..{report.to_seq})")
    return _materialized({
        "events_landed": report.landed,
        "from_seq": report.from_seq,
        "to_seq": report.to_seq,
        "by_kind": report.by_kind,
        "malformed": len(report.malformed),
        "abandoned_runs_closed": len(report.abandoned_runs),
        "lock_wait_s": round(warehouse.lock_wait_s, 3),
    })


@_warehouse_asset(
    kinds={"duckdb"},
    deps=[landed_events],
    description="Landed events applied to memory items with the current policy re-run on "
    "every proposal; the ingestion watermark moves in the same transaction.",
)
def governed_items(
    context: dg.AssetExecutionContext,
    faults: FaultInjectionResource,
    loci: LociSettingsResource,
    inbox: InboxResource,
    warehouse: WarehouseResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    from pipelines.policy import Policy

    faults.reached("governed_items:start")
    settings = loci.get()
    try:
        report = stages.govern_items(inbox.get(), warehouse.get(), Policy(settings), settings=settings,
                                     hook=faults.reached)
    except stages.MessageVectorsChanged as exc:
        raise _reembed_failure(exc, exc.configured, exc.stored) from exc
    # The next run's policy check starts here: what this run writes later is either a
    # merge governed on creation or a revision that leaves the text alone.
    governed_until = utcnow()
    prefetched = _prefetch_vectors(context, warehouse, embedder)
    context.log.info(
        f"governed {report.events} events: {report.accepted} accepted, {report.quarantined} "
        f"quarantined, {report.rejected} rejected, {report.messages} messages"
    )
    return _materialized({
        "events": report.events,
        "from_seq": report.from_seq,
        "to_seq": report.to_seq,
        "items_created": report.created,
        "messages": report.messages,
        "accepted": report.accepted,
        "quarantined": report.quarantined,
        "rejected": report.rejected,
        "tightened_by_policy": report.tightened,
        "rejected_now_event_ids": report.rejected_now[:50],
        "items_updated": report.updated,
        "links_added": report.links,
        "usage_applied": report.usage,
        "skipped": report.skipped[:50],
        "policy_version": report.policy_version,
        "message_vectors": report.message_vectors,
        "pooling": pooling_record(report.message_vectors),  # governance.POOLING_COUNT
        "forgetting_swept": report.forgetting_swept,
        "replaced_turns_filled": report.replaced_turns_filled,
        "governed_until": governed_until,
        "windows_prefetched": prefetched,
    })


def _embedding_since(wh: Any, model: Any) -> str | None:
    """Where `item_embeddings` compares content hashes (`embedding_check_since`)."""
    return stages.embedding_check_since(wh, model.name, vector_recipe(model))


def _prefetch_vectors(context: dg.AssetExecutionContext, warehouse: WarehouseResource,
                      embedder: EmbedderResource) -> int:
    """Start the embedding stage's model work now (`prefetch_item_vectors`), beside the
    policy check and Dagster's step changes; never fails governance (the embedding stage
    does the work itself, and reports its errors, when no prefetch matches)."""
    try:
        wh = warehouse.get()
        model = stages.store_embedder(embedder.get(), wh)
        return stages.prefetch_item_vectors(wh, model, since=_embedding_since(wh, model))
    except Exception as exc:  # noqa: BLE001 - an optimisation only
        context.log.warning(f"no embedding prefetch: {exc}")
        return 0


@_warehouse_asset(
    kinds={"duckdb", "numpy"},
    deps=[governed_items],
    description="Vectors for active items whose content changed (content hash), with the "
    "configured embedder; a different embedder than the stored one is an error, vectors under "
    "an older name of the same one are replaced (every active item re-embedded).",
)
def item_embeddings(
    context: dg.AssetExecutionContext,
    faults: FaultInjectionResource,
    warehouse: WarehouseResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    from pipelines.embedders import EmbedderUnavailable

    faults.reached("item_embeddings:start")
    wh = warehouse.get()
    model = stages.store_embedder(embedder.get(), wh)  # MiniLM "auto": the store's kind
    try:
        # Hashes compared for what was written since the last successful run checked (a
        # full comparison hashes every item's text: the whole store, every run).
        report = stages.embed_items(wh, model, hook=faults.reached, since=_embedding_since(wh, model))
    except stages.EmbedderChanged as exc:
        raise _reembed_failure(exc, model.name, [list(s) for s in exc.stored]) from exc
    except EmbedderUnavailable as exc:
        raise dg.Failure(description=str(exc), allow_retries=True) from exc
    context.log.info(f"embedded {report.embedded} items with {report.model}")
    if report.replaced:
        context.log.info(f"re-embedded the store: replaced the vectors of {', '.join(report.replaced)}, "
                         f"older names of {report.model}")
    return _materialized({
        "embedded": report.embedded,
        "active_items": report.current,
        "model": report.model,
        "dimension": report.dim,
        "recipe": vector_recipe(model),
        "checked_at": report.checked_at,
        "scope": "all items" if report.since is None else f"written since {report.since}",
        "replaced_vectors": report.replaced,
    })


@_warehouse_asset(
    kinds={"hdbscan"},
    deps=[item_embeddings],
    description="HDBSCAN clusters of active short-term items per owner partition.",
    # Checked here, on the clusters in hand: a separate check would load this asset's value
    # through the IO manager, which it cannot do for a partition (sharded consolidation).
    check_specs=[dg.AssetCheckSpec(
        "clusters_within_one_owner", asset="stm_clusters",
        description="Each cluster lies within one owner partition (never merged across owners).")],
)
def stm_clusters(
    context: dg.AssetExecutionContext,
    faults: FaultInjectionResource,
    loci: LociSettingsResource,
    warehouse: WarehouseResource,
    embedder: EmbedderResource,
) -> Iterator[dg.Output[list] | dg.AssetCheckResult]:
    faults.reached("stm_clusters:start")
    wh = warehouse.get()
    report = stages.cluster_stm(wh, stages.store_embedder(embedder.get(), wh).name, loci.get())
    context.log.info(f"{len(report.clusters)} clusters over {report.candidates} STM items")
    bad = stages.cluster_violations(warehouse.get(), report.clusters)
    yield dg.AssetCheckResult(
        check_name="clusters_within_one_owner", passed=not bad, severity=dg.AssetCheckSeverity.ERROR,
        metadata={"clusters": len(report.clusters), "violations": len(bad),
                  "sample": dg.MetadataValue.json(bad[:CHECK_SAMPLE])},
    )
    yield dg.Output(
        [c.as_dict() for c in report.clusters],
        metadata=_md({
            "clusters_found": len(report.clusters),
            "cluster_sizes": report.sizes,
            "clustered_items": sum(report.sizes),
            "noise": report.noise,
            "candidates": report.candidates,
            "per_partition": report.per_partition,
        }),
    )


@_warehouse_asset(
    kinds={"ollama", "duckdb"},
    description="Each cluster of >= 2 STM items merged into one canonical MTM item (Granite "
    "via Ollama, extractive fallback); originals superseded and linked, never deleted.",
)
def merged_items(
    context: dg.AssetExecutionContext,
    faults: FaultInjectionResource,
    stm_clusters: list,
    loci: LociSettingsResource,
    warehouse: WarehouseResource,
    embedder: EmbedderResource,
    merger: MergerResource,
) -> dg.MaterializeResult:
    from pipelines.policy import Policy

    faults.reached("merged_items:start")
    settings = loci.get()
    wh = warehouse.get()
    report = stages.merge_clusters(
        wh, [stages.ClusterRef.from_dict(c) for c in stm_clusters], merger.get(),
        Policy(settings), stages.store_embedder(embedder.get(), wh), settings=settings, now=_now(),
        hook=faults.reached,
    )  # fmt: skip
    context.log.info(f"merged {report.merged} clusters ({report.by_llm} by LLM, {report.by_fallback} by fallback)")
    return _materialized({
        "merged": report.merged,
        "by_llm": report.by_llm,
        "by_fallback": report.by_fallback,
        "fallback_reasons": report.fallback_reasons,
        "superseded": report.superseded,
        "skipped": report.skipped,
        "merged_item_ids": report.new_ids[:50],
    })


@_warehouse_asset(
    kinds={"duckdb"},
    deps=[merged_items],
    description="Promotions (STM -> MTM -> LTM), expiry archive, aging and decay.",
)
def lifecycle(
    context: dg.AssetExecutionContext,
    faults: FaultInjectionResource,
    loci: LociSettingsResource,
    warehouse: WarehouseResource,
) -> dg.MaterializeResult:
    faults.reached("lifecycle:start")
    report = stages.apply_lifecycle(warehouse.get(), loci.get(), now=_now(), hook=faults.reached)
    context.log.info(f"lifecycle: {report.counts}")
    return _materialized({
        "promoted": report.counts.get("promote", 0),
        "archived": report.counts.get("archive", 0),
        "decayed": report.counts.get("decay", 0),
        "by_reason": report.by_reason,
    })


@_warehouse_asset(
    kinds={"duckdb"},
    deps=[lifecycle],
    description="Memory-palace locations (domain/room/shelf/card) of active items, stored "
    "in the warehouse and in each item's metadata['palace'].",
)
def palace_locations(
    context: dg.AssetExecutionContext,
    faults: FaultInjectionResource,
    stm_clusters: list,
    warehouse: WarehouseResource,
) -> dg.MaterializeResult:
    faults.reached("palace_locations:start")
    report = stages.build_palace(
        warehouse.get(), [stages.ClusterRef.from_dict(c) for c in stm_clusters], hook=faults.reached
    )
    context.log.info(f"palace: {report.assigned} active items, {report.moved} new or moved")
    return _materialized({
        "assigned": report.assigned,
        "new_or_moved": report.moved,
        "rooms": report.rooms,
    })


@_warehouse_asset(
    kinds={"faiss", "parquet"},
    deps=[palace_locations],
    description="The published FAISS snapshot of active items (CURRENT replaced atomically); "
    "the run is recorded in consolidation_runs.",
)
def memory_snapshot(
    context: dg.AssetExecutionContext,
    faults: FaultInjectionResource,
    loci: LociSettingsResource,
    warehouse: WarehouseResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    faults.reached("memory_snapshot:start")
    settings = loci.get()
    wh = warehouse.get()
    report = stages.publish_snapshot(wh, stages.store_embedder(embedder.get(), wh), settings,
                                     extra={"run_id": context.run_id})
    stages.finish_run(wh, context.run_id, report, counts=_run_counts(context))
    state = "published" if report.published else "unchanged, not republished"
    context.log.info(f"snapshot {report.version} {state}: {report.count} items ({report.index_kind})")
    return _materialized({
        "version": report.version or "",
        "published": report.published,
        "count": report.count,
        "tier_counts": report.tier_counts,
        "index_kind": report.index_kind,
        "watermark": report.watermark,
        "embedder": report.embedder,
        "dimension": report.dim,
        "stm_by_partition": report.stm_by_partition,
    })


def _run_counts(context: dg.AssetExecutionContext) -> dict[str, Any]:
    """Numbers reported by this run's earlier materializations (for consolidation_runs)."""
    counts: dict[str, Any] = {}
    try:
        records = context.instance.all_logs(context.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
    except Exception:  # noqa: BLE001 - the run record is informative; never fail the run on it
        return counts
    for record in records:
        mat = record.asset_materialization
        if mat is None:
            continue
        name = mat.asset_key.to_user_string()
        for key, value in mat.metadata.items():
            raw = getattr(value, "value", value)
            if isinstance(raw, (int, float, str, bool)):
                counts[f"{name}.{key}"] = raw
    return counts


CONSOLIDATION_ASSETS = [
    landed_events,
    governed_items,
    item_embeddings,
    stm_clusters,
    merged_items,
    lifecycle,
    palace_locations,
    memory_snapshot,
]
