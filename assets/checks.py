"""Asset checks: the invariants of a consolidated warehouse and its published snapshot.

- `landing_matches_inbox` (landed_events): the events landed up to the highest landed seq
  are exactly the inbox's events up to it, and the ingestion watermark is not past them.
- `clusters_within_one_owner` (stm_clusters, evaluated inside that asset on the clusters it
  found; assets/graph.py): every cluster's members are stored items of its one owner
  partition (consolidation never merges across owners), at least two, and no item is in
  two clusters.
- `active_items_pass_policy` (governed_items): no active item is hard-blocked by the
  current policy (secrets, injection...), whatever policy version stored it.
- `one_dimension_per_model` (item_embeddings): every embedding model has one dimension.
- `no_active_superseded_items` (merged_items): nothing superseded is still active, and
  every `superseded_by` names a stored item.
- `mtm_ltm_have_provenance` (lifecycle): every active MTM/LTM item has provenance.
- `every_active_item_has_a_location` (palace_locations): every active item has a stored
  palace location and carries the same path in `metadata["palace"]`.
- `snapshot_matches_warehouse` (memory_snapshot): the published snapshot holds exactly the
  warehouse's active items (count and tier counts).

Checks read the warehouse through the run's resource (the run holds the only connection).
They are not blocking: a failure is reported with the offending ids in the UI and in the
`loci consolidate` summary (severity ERROR), and the run still publishes.
"""


import dagster as dg

from assets.graph import (
    CHECK_SAMPLE,
    WAREHOUSE_POOL,
    governed_items,
    item_embeddings,
    landed_events,
    lifecycle,
    memory_snapshot,
    merged_items,
    palace_locations,
)
from assets.resources import InboxResource, LociSettingsResource, WarehouseResource
from pipelines import consolidate as stages

ERROR = dg.AssetCheckSeverity.ERROR
SAMPLE = CHECK_SAMPLE


@dg.asset_check(asset=landed_events, pool=WAREHOUSE_POOL,
                description="Every inbox event up to the highest landed seq is landed, once.")
def landing_matches_inbox(inbox: InboxResource, warehouse: WarehouseResource) -> dg.AssetCheckResult:
    found = stages.landing_violations(inbox.get(), warehouse.get())
    missing = found.pop("missing_seqs")
    return dg.AssetCheckResult(
        passed=found["landed"] == found["inbox_events"] and not found["watermark_ahead"],
        severity=ERROR,
        metadata={**found, "missing": len(missing), "sample": dg.MetadataValue.json(missing[:SAMPLE])},
    )



@dg.asset_check(asset=governed_items, pool=WAREHOUSE_POOL,
                description="No active item is hard-blocked by the current policy.")
def active_items_pass_policy(loci: LociSettingsResource, warehouse: WarehouseResource) -> dg.AssetCheckResult:
    from pipelines.policy import POLICY_VERSION, Policy

    wh = warehouse.get()
    # Every active item under a new policy version; otherwise what was written since the
    # last successful run checked the rest (a full scan costs the whole store every run).
    since = stages.policy_check_since(wh, POLICY_VERSION)
    items = wh.active_items() if since is None else wh.items_text_changed_since(since)
    bad = stages.hard_block_violations(items, Policy(loci.get()))
    return dg.AssetCheckResult(
        passed=not bad,
        severity=ERROR,
        metadata={"checked": len(items), "scope": "all active items" if since is None else f"written since {since}",
                  "violations": len(bad), "sample": dg.MetadataValue.json(bad[:SAMPLE])},
    )


@dg.asset_check(asset=item_embeddings, pool=WAREHOUSE_POOL,
                description="Each embedding model is stored with one dimension.")
def one_dimension_per_model(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    wh = warehouse.get()
    bad = stages.dimension_violations(wh)
    models = {m: d for m, d in wh.stored_embedding_models()}
    return dg.AssetCheckResult(
        passed=not bad,
        severity=ERROR,
        metadata={"models": dg.MetadataValue.json(models), "violations": dg.MetadataValue.json(bad)},
    )


@dg.asset_check(asset=merged_items, pool=WAREHOUSE_POOL, description="No item is both superseded and active.")
def no_active_superseded_items(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    bad = stages.supersede_violations(warehouse.get())
    return dg.AssetCheckResult(
        passed=not bad,
        severity=ERROR,
        metadata={"violations": len(bad), "sample": dg.MetadataValue.json(bad[:SAMPLE])},
    )


@dg.asset_check(asset=lifecycle, pool=WAREHOUSE_POOL, description="Every active MTM/LTM item has provenance.")
def mtm_ltm_have_provenance(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    checked, bad = stages.stored_provenance_violations(warehouse.get())
    return dg.AssetCheckResult(
        passed=not bad,
        severity=ERROR,
        metadata={"checked": checked, "violations": len(bad), "sample": dg.MetadataValue.json(bad[:SAMPLE])},
    )


@dg.asset_check(asset=memory_snapshot, pool=WAREHOUSE_POOL,
                description="The published snapshot holds exactly the active items.")
def snapshot_matches_warehouse(loci: LociSettingsResource, warehouse: WarehouseResource) -> dg.AssetCheckResult:
    wh = warehouse.get()
    manifest = stages.read_published_manifest(loci.get().snapshots_path)
    active = wh.count_items()
    tiers = {t: wh.count_items(tier=t) for t in ("stm", "mtm", "ltm")}
    tiers = {t: n for t, n in tiers.items() if n}
    if manifest is None:
        return dg.AssetCheckResult(passed=False, severity=ERROR,
                                   metadata={"active_items": active, "snapshot": "none published"})
    return dg.AssetCheckResult(
        passed=manifest.count == active and dict(manifest.tier_counts) == tiers,
        severity=ERROR,
        metadata={
            "active_items": active,
            "snapshot_items": manifest.count,
            "warehouse_tiers": dg.MetadataValue.json(tiers),
            "snapshot_tiers": dg.MetadataValue.json(dict(manifest.tier_counts)),
            "version": manifest.version,
        },
    )


@dg.asset_check(asset=palace_locations, pool=WAREHOUSE_POOL,
                description="Every active item has a palace location, the same in its metadata.")
def every_active_item_has_a_location(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    wh = warehouse.get()
    # Paths compared for what was written since the last successful run (the palace stage
    # located exactly that); a missing location is looked for among every active item.
    bad = stages.location_violations(wh, since=stages.last_finished_run(wh))
    return dg.AssetCheckResult(
        passed=not bad,
        severity=ERROR,
        metadata={"active_items": wh.count_items(), "violations": len(bad),
                  "sample": dg.MetadataValue.json(bad[:SAMPLE])},
    )


CONSOLIDATION_CHECKS = [
    landing_matches_inbox,
    active_items_pass_policy,
    one_dimension_per_model,
    no_active_superseded_items,
    mtm_ltm_have_provenance,
    every_active_item_has_a_location,
    snapshot_matches_warehouse,
]
