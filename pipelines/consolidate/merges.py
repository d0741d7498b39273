"""Stage 5: one canonical MTM item per cluster; originals superseded and linked."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import msgspec

from pipelines.consolidate.clusters import ClusterRef
from pipelines.consolidate.common import Hook, call_hook, mergeable
from pipelines.consolidate.embedding import vectors_for
from pipelines.materialize import with_replaced_turns
from pipelines.message_context import embedding_hash
from pipelines.records import MemoryItem
from pipelines.settings import Settings
from pipelines.warehouse import LINK_RELS, Warehouse


@dataclass
class MergeReport:
    merged: int = 0
    by_llm: int = 0
    by_fallback: int = 0
    fallback_reasons: dict[str, int] = field(default_factory=dict)
    superseded: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    new_ids: list[str] = field(default_factory=list)


def merge_clusters(
    warehouse: Warehouse,
    clusters: Sequence[ClusterRef],
    merger: Any,
    policy: Any,
    embedder: Any,
    *,
    settings: Settings,
    now: datetime,
    hook: Hook | None = None,
) -> MergeReport:
    """Merge each cluster of >= 2 still-mergeable items into one canonical MTM item. The
    (slow) merger calls happen first; then one transaction stores the new items (revision
    reason `consolidation_merge`), supersedes and links the originals and stores the new
    items' vectors."""
    report = MergeReport()
    skipped: Counter = Counter()
    planned = _plan_merges(warehouse, clusters, merger, policy, settings=settings, now=now, skipped=skipped)
    if not planned:
        report.skipped = dict(sorted(skipped.items()))
        return report

    new_items = [_with_cluster_metadata(ref, outcome) for ref, outcome in planned]
    reasons = _count_mergers(new_items, report)
    vectors = vectors_for(new_items, embedder)
    with warehouse.transaction():
        warehouse.put_items(new_items, reason="consolidation_merge")
        for item, (_, outcome) in zip(new_items, planned):
            _supersede_and_link(warehouse, item, outcome)
        warehouse.put_embeddings([(i.id, embedding_hash(i), v) for i, v in zip(new_items, vectors)],
                                 model_name=embedder.name, dim=int(vectors.shape[1]))
        call_hook(hook, "merge:before_commit")
    report.merged = len(new_items)
    report.superseded = sum(len(o.superseded_ids) for _, o in planned)
    report.new_ids = [i.id for i in new_items]
    report.fallback_reasons = dict(sorted(reasons.items()))
    report.skipped = dict(sorted(skipped.items()))
    return report


def _plan_merges(
    warehouse: Warehouse,
    clusters: Sequence[ClusterRef],
    merger: Any,
    policy: Any,
    *,
    settings: Settings,
    now: datetime,
    skipped: Counter,
) -> list[tuple[ClusterRef, Any]]:
    """Run the merger on every cluster that is still worth merging, before any write; count
    why the others were skipped into `skipped`."""
    from pipelines.merging import MergeError, contradicting_ids, for_other_times, merge_cluster

    planned: list[tuple[ClusterRef, Any]] = []
    # An item goes into one merge only, even when clusters overlap.
    claimed: set[str] = set()
    # Every cluster's members in one read (nothing is written before the plan is made): a
    # read per cluster joined the whole item table each time (~20 ms at 100k items).
    stored = {i.id: i for i in warehouse.get_items([i for ref in clusters for i in ref.item_ids])}
    for ref in clusters:
        members = [stored[i] for i in ref.item_ids if i in stored]
        members = [i for i in members if mergeable(i) and i.id not in claimed]
        apart = contradicting_ids(members)
        if apart:  # each side stays its own item; recall resolves and reports the conflict
            skipped["contradicting items kept apart"] += len(apart)
            members = [i for i in members if i.id not in apart]
        other_times = for_other_times(members)
        if other_times:  # each holds in its own window (`merging.for_other_times`)
            skipped["items for different times kept apart"] += len(other_times)
            members = [i for i in members if i.id not in other_times]
            apart |= other_times
        if len(members) < 2 and apart:
            skipped["cluster left with < 2 items after contradictions were kept apart"] += 1
            continue
        if len(members) < 2:
            skipped["stale cluster (members merged, archived or changed)"] += 1
            continue
        try:
            outcome = merge_cluster(members, merger, policy, settings=settings, now=now)
        except MergeError as exc:
            skipped[f"unusable cluster: {exc}"] += 1
            continue
        why_not = _unusable_outcome(warehouse, outcome)
        if why_not:
            skipped[why_not] += 1
            continue
        claimed.update(outcome.superseded_ids)
        # the turns its members' corrections replaced are still replaced (`REPLACED_TURNS`);
        # the members are restatements, so the turns they were said in are not
        planned.append((ref, replace(outcome, new_item=with_replaced_turns(outcome.new_item, [],
                                                                           merged_from=members))))
    return planned


def _unusable_outcome(warehouse: Warehouse, outcome: Any) -> str | None:
    """Why a merge outcome cannot be stored, or None when it can."""
    if outcome.skipped or outcome.new_item is None:
        return str(outcome.skipped or "no item")
    if warehouse.get_item(outcome.new_item.id) is not None:
        return "canonical item already stored"
    return None


def _with_cluster_metadata(ref: ClusterRef, outcome: Any) -> MemoryItem:
    item = outcome.new_item
    meta = dict(item.metadata)
    meta["cluster"] = {"partition": ref.partition, "label": ref.label, "size": len(outcome.superseded_ids),
                       "room": ref.room}
    return msgspec.structs.replace(item, metadata=meta)


def _count_mergers(new_items: Sequence[MemoryItem], report: MergeReport) -> Counter:
    """Count LLM and fallback merges into `report`; return the fallback reasons."""
    reasons: Counter = Counter()
    for item in new_items:
        used, reason = merger_used(item)
        if used == "llm":
            report.by_llm += 1
        else:
            report.by_fallback += 1
            reasons[reason or "unspecified"] += 1
    return reasons


def _supersede_and_link(warehouse: Warehouse, item: MemoryItem, outcome: Any) -> None:
    warehouse.supersede(list(outcome.superseded_ids), item.id, reason="consolidation_merge")
    old = set(outcome.superseded_ids)
    for src, dst, rel in outcome.links or ():
        # supersede() already wrote new -> old derived_from/supersedes links; links to items
        # outside this merge are not the merger's to make.
        done_by_supersede = src == item.id and dst in old and rel in ("derived_from", "supersedes")
        if rel in LINK_RELS and not done_by_supersede and {src, dst} <= old | {item.id}:
            warehouse.link(src, dst, rel)


def merger_used(item: MemoryItem) -> tuple[str, str]:
    """("llm" | "fallback", why) from the merged item's metadata."""
    meta = item.metadata
    name = str(meta.get("merger", ""))
    if "fallback" in name or "extractive" in name or meta.get("fallback_reason"):
        reason = meta.get("fallback_reason") or ("extractive merger configured" if "fallback" not in name else "")
        return "fallback", str(reason)
    return "llm", ""
