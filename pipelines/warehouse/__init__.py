"""The warehouse: the DuckDB system of record (items, history, audit, analytics).

Only consolidation runs write it, one process at a time: DuckDB lets one process open a
file read-write, and while it does nobody else can open that file, not even read-only
(`WarehouseLockedError`). Read-only opens work whenever no writer holds the file, and
several read-only processes may share it. Opening writable applies the pending migrations
(`pipelines.migrations`, `sql/migrations/*.sql`).

Memory is never deleted: `update_items` writes a new revision every time, `supersede`
marks merged items (`superseded_by`) and links the canonical item to them,
`archive_items` sets `archived`. Every memory mutation appends an `events` row, in the
same transaction, whose `content_sha256` is the item's content hash after the mutation
(links: sha256 of "src\\x1frel\\x1fdst"; embedding batches: sha256 of their "id:hash"
lines). Derived indexes (embeddings, palace locations) are replaced in place when
recomputed, with an audit event for each batch / change.

Every public method runs in one transaction; `transaction()` groups several calls into
one (nested calls join the outer one; if an inner block raises, the whole transaction is
rolled back even if the outer block swallows the error). One `Warehouse` may be shared by
threads: calls are serialised by a lock.

One module per concern, composed into `Warehouse`:
- `connection`: opening, transactions, `query(sql, params=None) -> list[tuple]`.
- `items` (writes; every mutator also takes `origin=None`, an `Origin(actor, inbox_seq,
  requested_at)` naming who asked for the change and the inbox event it comes from, stored
  on its revisions and audit rows; None is the pipeline's own work):
  `put_items(items, *, reason="create")`
  (bulk, arrow; idempotent for the same id + content hash, `ItemConflictError` for the
  same id with other content), `update_items({id: patch}, *, reason)`,
  `archive_items(ids, *, reason)`, `supersede(old_ids, new_id, *, reason)` (old.superseded_by
  = new; links new -derived_from-> old and new -supersedes-> old), `link(src, dst, rel) ->
  bool` (True when new; shows in `item.links` of src), `refuse(id, *, attempted, reason,
  origin)` (an attempt that was refused: a `refused` audit event, nothing else written).
  An update that marks an item `retracted` is audited as `retract` (never deleted).
- `reads`: `get_item(id)`, `get_items(ids)` (input order, missing ids skipped),
  `active_items(*, tier=None, types=None)`, `items_text_changed_since(iso)`,
  `session_tails(keys, n)`, `count_items(active_only=True, tier=None)`, `revisions(id)`,
  `item_events(id)`.
- `journal`: the item-row codec of the `items` table and the revision / link / event rows
  every item write is made of.
- `embeddings`: `put_embeddings(rows, *, model_name, dim)` (rows of (item_id,
  content_hash, vector)), `embedding_matrix(model_name, ids)`,
  `stale_embedding_ids(model_name)`, `stored_embedding_models()`.
- `landing`: `put_chat_turns(rows)`, `put_proposals(rows)` (idempotent by turn_id /
  proposal_id), `last_ingested_seq()`, `set_last_ingested_seq(seq, *, allow_rewind=False)`,
  `mark_landed(events)`, `landed_ids(event_ids)`.
- `palace`: `put_locations(locs)` (changed rows), `location_of(id)`.
- `runs`: `start_run(run_id, from_seq)`, `finish_run(run_id, status, counts, to_seq,
  snapshot_version=None)`, `get_run(run_id)`, `runs(limit=None)`.

Errors: `TypeError` / `ValueError` for bad arguments (unknown patch fields, invalid
values), `UnknownItemError` (a `KeyError`) for missing items, `ItemConflictError` for
writes that contradict stored state, `WarehouseLockedError` when another process holds
the file, `WarehouseError` for everything else (read-only writes, missing file, SQL).
"""

from __future__ import annotations

from pipelines.warehouse.connection import (
    ItemConflictError,
    UnknownItemError,
    WarehouseError,
    WarehouseLockedError,
)
from pipelines.warehouse.embeddings import EMBEDDING_HASH_SQL, Embeddings
from pipelines.warehouse.items import PATCHABLE_FIELDS, ItemWrites
from pipelines.warehouse.journal import ITEM_COLUMNS, LINK_RELS, Origin
from pipelines.warehouse.landing import INBOX_SEQ_KEY, Landing
from pipelines.warehouse.palace import Palace
from pipelines.warehouse.reads import TIERS, ItemReads
from pipelines.warehouse.runs import Runs

__all__ = [
    "EMBEDDING_HASH_SQL", "INBOX_SEQ_KEY", "ITEM_COLUMNS", "LINK_RELS", "PATCHABLE_FIELDS",
    "TIERS", "ItemConflictError", "Origin", "UnknownItemError", "Warehouse", "WarehouseError",
    "WarehouseLockedError",
]  # fmt: skip


class Warehouse(ItemWrites, ItemReads, Embeddings, Landing, Palace, Runs):
    """Access layer over one DuckDB warehouse file (see the module docstring)."""

    def __enter__(self) -> Warehouse:
        return self
