"""The whole pipeline in one call, without Dagster (benchmarks, tests, scripts)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pipelines.consolidate.clusters import cluster_stm
from pipelines.consolidate.common import Hook
from pipelines.consolidate.embedding import embed_items, store_embedder
from pipelines.consolidate.governance import MESSAGE_VECTORS_COUNT, POOLING_COUNT, govern_items, pooling_record
from pipelines.consolidate.landing import land_events
from pipelines.consolidate.lifecycle import apply_lifecycle
from pipelines.consolidate.locations import build_palace
from pipelines.consolidate.lock import WarehouseLock
from pipelines.consolidate.merges import merge_clusters
from pipelines.consolidate.publishing import finish_run, publish_snapshot
from pipelines.settings import Settings
from pipelines.warehouse import Warehouse


def consolidate_once(
    settings: Settings,
    *,
    embedder: Any = None,
    merger: Any = None,
    policy: Any = None,
    run_id: str | None = None,
    now: datetime | None = None,
    hook: Hook | None = None,
) -> dict[str, Any]:
    """Every stage in graph order, in this process, without Dagster (benchmarks, tests,
    scripts). Same transactions and lock as the Dagster job; returns each stage's report."""
    import uuid

    from pipelines.embedders import make_embedder
    from pipelines.inbox import open_inbox
    from pipelines.merging import make_merger
    from pipelines.policy import Policy

    embedder = embedder or make_embedder(settings)
    policy = policy or Policy(settings)
    merger = merger or make_merger(settings)
    run_id = run_id or f"local-{uuid.uuid4().hex[:12]}"
    now = now or datetime.now(timezone.utc)
    with WarehouseLock(settings.warehouse_path), Warehouse(settings.warehouse_path) as wh, \
            open_inbox(settings) as inbox:
        out: dict[str, Any] = {"run_id": run_id}
        embedder = store_embedder(embedder, wh)
        out["land"] = land_events(inbox, wh, run_id=run_id, hook=hook)
        out["govern"] = govern_items(inbox, wh, policy, settings=settings, hook=hook)
        out["embed"] = embed_items(wh, embedder, hook=hook)
        out["cluster"] = cluster_stm(wh, embedder.name, settings)
        out["merge"] = merge_clusters(wh, out["cluster"].clusters, merger, policy, embedder,
                                      settings=settings, now=now, hook=hook)
        out["lifecycle"] = apply_lifecycle(wh, settings, now=now, hook=hook)
        out["palace"] = build_palace(wh, out["cluster"].clusters, hook=hook)
        out["snapshot"] = publish_snapshot(wh, embedder, settings, extra={"run_id": run_id})
        scheme = out["govern"].message_vectors
        finish_run(wh, run_id, out["snapshot"],
                   counts={MESSAGE_VECTORS_COUNT: scheme, POOLING_COUNT: pooling_record(scheme)})
    return out
