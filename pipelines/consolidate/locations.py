"""Stage 7: memory-palace locations, in the warehouse and in item metadata."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.consolidate.clusters import ClusterRef
from pipelines.consolidate.common import Hook, call_hook
from pipelines.records import MemoryItem
from pipelines.warehouse import Warehouse

PALACE_KEY = "palace_domains"  # the `ingest_state` row migration 006 marks: relocate once


@dataclass
class PalaceReport:
    assigned: int = 0
    moved: int = 0
    rooms: int = 0


def last_finished_run(warehouse: Warehouse) -> str | None:
    """When the last successful run finished (everything written before it was located
    by that run or an earlier one), or None: no such run, locate everything."""
    for run in warehouse.runs(limit=20):
        if run["status"] == "success" and run.get("finished_at"):
            return str(run["finished_at"])
    return None


def build_palace(warehouse: Warehouse, clusters: Sequence[ClusterRef] = (), *,
                 hook: Hook | None = None) -> PalaceReport:
    """Palace locations for the active items (room from the cluster an item belongs to or
    was merged from, where there is one), stored in `palace_locations` and as the path
    `domain/room/shelf/card` in each item's metadata["palace"] (written only on change).

    A location is a function of the item and its cluster, so only items written since the
    last successful run finished, items without a location and this run's clusters are
    looked at: the cost follows what changed, not the store. Once after the domain rule
    changed (a migration marks PALACE_KEY pending), the items whose stored domain the rule
    now places elsewhere are looked at too, found in SQL (`Warehouse.misplaced_domains`)."""
    from pipelines.palace import assign_locations, domain_of_inputs

    rooms = {i: c.room for c in clusters if c.room for i in c.item_ids}
    since = last_finished_run(warehouse)
    items = warehouse.items_to_locate(since, sorted(rooms))
    relocating = warehouse.sweep_pending(PALACE_KEY)
    if relocating and since is not None:  # with no run before, every item is located anyway
        seen = {i.id for i in items}
        items += warehouse.get_items([i for i in warehouse.misplaced_domains(domain_of_inputs) if i not in seen])

    def room_of(item: MemoryItem) -> str | None:
        hint = (item.metadata.get("cluster") or {}) if isinstance(item.metadata.get("cluster"), dict) else {}
        return rooms.get(item.id) or hint.get("room") or None

    locations = assign_locations(items, room_of=room_of)
    by_id = {i.id: i for i in items}
    patches = {
        loc.item_id: {"metadata": {**by_id[loc.item_id].metadata, "palace": loc.path}}
        for loc in locations
        if loc.item_id in by_id and by_id[loc.item_id].metadata.get("palace") != loc.path
    }
    with warehouse.transaction():
        moved = warehouse.put_locations(locations)
        if patches:
            warehouse.update_items(patches, reason="palace", touch=False, current=by_id)
        if relocating:
            warehouse.finish_sweep(PALACE_KEY)
        call_hook(hook, "palace:before_commit")
    return PalaceReport(assigned=len(locations), moved=max(moved, len(patches)),
                        rooms=len({(loc.domain, loc.room) for loc in locations}))
