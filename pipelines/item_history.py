"""An item's stored history as one table: the rows the warehouse exports at publish time and
the snapshot carries (`history.parquet`), so the service can show revisions and audit events
without opening the warehouse.

One row per revision (`kind = "revision"`, `ord` the revision number, `data` the item as
JSON) or audit event (`kind = "event"`, `ord` the event id, `data` its details as JSON),
with who asked (`actor`, `inbox_seq`, `requested_at`). `split_history` gives them back in
the shapes of `Warehouse.revisions(id)` and `Warehouse.item_events(id)`.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pyarrow as pa

from pipelines.records import MemoryItem

HISTORY_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("kind", pa.string()), ("ord", pa.int64()), ("at", pa.string()),
    ("action", pa.string()), ("data", pa.string()), ("content_sha256", pa.string()),
    ("actor", pa.string()), ("inbox_seq", pa.int64()), ("requested_at", pa.string()),
])  # fmt: skip
SORT_KEYS = [("item_id", "ascending"), ("kind", "ascending"), ("ord", "ascending")]


def split_history(table: pa.Table) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(revisions, events) of the rows in `table`, oldest first, shaped like the
    warehouse's `revisions()` and `item_events()` answers."""
    revisions: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for row in table.sort_by(SORT_KEYS).to_pylist():
        origin = {"actor": row["actor"], "inbox_seq": row["inbox_seq"], "requested_at": row["requested_at"]}
        data = msgspec.json.decode(row["data"]) if row["data"] else {}
        if row["kind"] == "revision":
            revisions.append({"revision_id": f"{row['item_id']}#{row['ord']}", "item_id": row["item_id"],
                              "revision_num": row["ord"], "snapshot": data, "changed_at": row["at"],
                              "reason": row["action"], **origin})
        else:
            events.append({"id": row["ord"], "action": row["action"], "item_id": row["item_id"], "details": data,
                           "content_sha256": row["content_sha256"], "at": row["at"], **origin})
    return revisions, events


def last_published(loaded: Any, item_id: str) -> MemoryItem | None:
    """`item_id` as the last revision a snapshot (`loaded`: a `LoadedSnapshot`, or None)
    published in its history: an item it no longer serves (superseded, merged, archived), as
    last stored; None when it carries no such history."""
    found = loaded.history(item_id) if loaded is not None else None
    if not found or not found[0]:
        return None
    try:
        item = msgspec.convert(found[0][-1]["snapshot"], MemoryItem)
    except (msgspec.ValidationError, TypeError, KeyError):
        return None
    return item if item.id == item_id else None
