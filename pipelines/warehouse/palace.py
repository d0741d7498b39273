"""Memory-palace addresses: one per item, replaced when it moves (a `palace.assign` audit
event per change, with the previous address)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from pipelines.records import PalaceLocation, sha256_text, utcnow
from pipelines.warehouse.connection import STRING, as_list, check_id, ids_table
from pipelines.warehouse.journal import ItemJournal, Origin, check_origin


class Palace(ItemJournal):
    def put_locations(self, locs: Sequence[PalaceLocation], *, origin: Origin | None = None) -> int:
        """Assign palace locations (one per item; the last given wins). Only new or moved
        items are written, each with a `palace.assign` event. Returns that count."""
        self._writable()
        check_origin(origin)
        latest: dict[str, PalaceLocation] = {}
        for loc in as_list(locs, "locs"):
            if not isinstance(loc, PalaceLocation):
                raise TypeError(
                    f"put_locations takes PalaceLocation records, not {type(loc).__name__}"
                )
            for part in (loc.item_id, loc.domain, loc.room, loc.shelf, loc.card):
                check_id(part, "palace location part")
            latest[loc.item_id] = loc
        if not latest:
            return 0
        with self.transaction():
            self._require_items(list(latest), load=False)
            previous = {loc.item_id: loc for loc in self._locations_for(list(latest))}
            changed = [loc for i, loc in latest.items() if previous.get(i) != loc]
            if not changed:
                return 0
            now = utcnow()
            table = pa.table(
                {
                    "item_id": pa.array([loc.item_id for loc in changed], STRING),
                    "domain": pa.array([loc.domain for loc in changed], STRING),
                    "room": pa.array([loc.room for loc in changed], STRING),
                    "shelf": pa.array([loc.shelf for loc in changed], STRING),
                    "card": pa.array([loc.card for loc in changed], STRING),
                    "assigned_at": pa.array([now] * len(changed), STRING),
                }
            )
            with self._staged(table) as staged:
                # Derived index: a moved item's old address is replaced (history in events).
                self._sql(
                    f"DELETE FROM palace_locations WHERE item_id IN (SELECT item_id FROM {staged})"
                )
                self._sql(f"INSERT INTO palace_locations SELECT * FROM {staged}")
            events = []
            for loc in changed:
                before = previous.get(loc.item_id)
                details = {"path": loc.path, "previous": before.path if before else None}
                events.append(("palace.assign", loc.item_id, details, sha256_text(loc.path)))
            self._insert_events(events, now, origin)
        return len(changed)

    def location_of(self, item_id: str) -> PalaceLocation | None:
        check_id(item_id, "item_id")
        with self.transaction():
            found = self._locations_for([item_id])
        return found[0] if found else None

    def _locations_for(self, item_ids: list[str]) -> list[PalaceLocation]:
        with self._staged(ids_table(item_ids)) as staged:
            rows = self._sql(
                f"SELECT p.item_id, p.domain, p.room, p.shelf, p.card FROM palace_locations p "
                f"JOIN {staged} s ON s.id = p.item_id ORDER BY s.ord"
            )
        return [PalaceLocation(*r) for r in rows]
