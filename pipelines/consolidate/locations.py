"""Stage 7: memory-palace locations, in the warehouse and in item metadata."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.consolidate.clusters import ClusterRef
from pipelines.consolidate.common import Hook, call_hook
from pipelines.records import MemoryItem
from pipelines.warehouse import Warehouse


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
    looked at: the cost follows what changed, not the store."""
    from pipelines.palace import assign_locations

    rooms = {i: c.room for c in clusters if c.room for i in c.item_ids}
    items = warehouse.items_to_locate(last_finished_run(warehouse), sorted(rooms))

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
            warehouse.update_items(patches, reason="palace", touch=False)
        call_hook(hook, "palace:before_commit")
    return PalaceReport(assigned=len(locations), moved=max(moved, len(patches)),
                        rooms=len({(loc.domain, loc.room) for loc in locations}))
