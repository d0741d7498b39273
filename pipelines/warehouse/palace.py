"""Memory-palace addresses: one per item, replaced when it moves (a `palace.assign` audit
event per change, with the previous address)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from pipelines.records import PalaceLocation, sha256_text, utcnow
from pipelines.warehouse.connection import STRING, as_list, check_id, ids_table
from pipelines.warehouse.journal import ACTIVE_SQL, ItemJournal, Origin, check_origin

# What a palace domain is a function of (`pipelines.palace.location_of`), per located active
# item: its scope's kind and owners, its type, its metadata's corpus and pin (JSON text).
DOMAIN_INPUTS = ("scope_kind", "type", "org_id", "user_id", "project_id", "corpus", "pin")
_DOMAIN_INPUTS_SQL = (
    "i.scope_kind, i.type, i.org_id, i.user_id, i.project_id, "
    "CAST(json_extract(i.metadata, '$.corpus') AS VARCHAR) AS corpus, "
    "CAST(json_extract(i.metadata, '$.palace_pin') AS VARCHAR) AS pin, p.domain"
)
_LOCATED_SQL = f"FROM items i JOIN palace_locations p ON p.item_id = i.id WHERE {ACTIVE_SQL}"


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

    def misplaced_domains(self, domain_of: Callable[[dict[str, Any]], str]) -> list[str]:
        """Ids of the located active items whose stored domain is not `domain_of` their
        domain inputs (a dict of DOMAIN_INPUTS), sorted. The store is compared in SQL: the
        distinct inputs with their stored domain (a handful of owners, types, corpora and
        pins, not one row per item) are judged once each, and the items of the groups judged
        misplaced are selected by a join."""
        with self.transaction():
            groups = self._sql(f"SELECT DISTINCT {_DOMAIN_INPUTS_SQL} {_LOCATED_SQL}")
            wrong = [g for g in groups if domain_of(dict(zip(DOMAIN_INPUTS, g[:-1]))) != g[-1]]
            if not wrong:
                return []
            names = [*DOMAIN_INPUTS, "domain"]
            table = pa.table({n: pa.array([g[k] for g in wrong], STRING) for k, n in enumerate(names)})
            with self._staged(table) as staged:
                match = " AND ".join(f"w.{n} IS NOT DISTINCT FROM g.{n}" for n in names)
                rows = self._sql(f"SELECT w.id FROM (SELECT i.id, {_DOMAIN_INPUTS_SQL} {_LOCATED_SQL}) w "
                                 f"SEMI JOIN {staged} g ON {match} ORDER BY w.id")
        return [r[0] for r in rows]

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
