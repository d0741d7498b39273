"""The warehouse: the DuckDB system of record (items, history, audit, analytics).

Only consolidation runs write it, one process at a time: DuckDB lets one process open a
file read-write, and while it does nobody else can open that file, not even read-only
(`WarehouseLockedError`). Read-only opens work whenever no writer holds the file, and
several read-only processes may share it. Opening writable applies the pending migrations
(`pipelines.migrations`, `sql/migrations/*.sql`).

Memory is never deleted: `update_items` writes a new revision every time, `supersede`
marks merged items (`superseded_by`) and links the canonical item to them, `archive` sets
`archived`. Every memory mutation appends an `events` row whose `content_sha256` is the
item's content hash after the mutation (links: sha256 of "src\\x1frel\\x1fdst"; embedding
batches: sha256 of their "id:hash" lines). Derived indexes (embeddings, palace locations)
are replaced in place when recomputed, with an audit event for each batch / change.

Every public method runs in one transaction; `transaction()` groups several calls into
one (nested calls join the outer one; if an inner block raises, the whole transaction is
rolled back even if the outer block swallows the error). One `Warehouse` may be shared by
threads: calls are serialised by a lock.

API (ids are item ids; every mutator also takes `inbox_seq=None`, stored on its audit
rows to tie them to the inbox event that caused them)
- items: `put_item(item, *, reason="create", inbox_seq=None) -> MemoryItem`,
  `put_items(items, *, reason="create", inbox_seq=None) -> list[MemoryItem]` (bulk, arrow);
  both idempotent for the same id + content hash, `ItemConflictError` for the same id with
  other content. `get_item(id)`, `get_items(ids)` (input order, missing ids skipped),
  `update_item(id, patch, *, reason="update")`, `update_items({id: patch}, *, reason)`,
  `archive(id, *, reason)`, `archive_items(ids, *, reason)`,
  `supersede(old_ids, new_id, *, reason="consolidation_merge") -> list[MemoryItem]`
  (old.superseded_by = new; links new -derived_from-> old and new -supersedes-> old),
  `link(src, dst, rel) -> bool` (True when new; shows in `item.links` of src),
  `revisions(id) -> list[dict]`, `item_events(id) -> list[dict]`,
  `active_items(*, tier=None, types=None) -> list[MemoryItem]`,
  `items_frame(active_only=True) -> polars.DataFrame`, `count_items(active_only=True, tier=None)`.
- embeddings: `put_embeddings(rows, *, model_name, dim) -> int` (rows of
  (item_id, content_hash, vector)), `embeddings_for(ids, model_name) -> {id: (hash, vec)}`,
  `embedding_matrix(model_name, ids) -> np.ndarray`, `embedding_table(model_name, *,
  active_only=True, current_only=True) -> (ids, hashes, matrix)`,
  `stale_embedding_ids(model_name, *, active_only=True) -> list[str]`,
  `stored_embedding_models() -> list[(model_name, dim)]`.
- chat turns / proposals: `put_chat_turns(rows) -> int`, `put_proposals(rows) -> int`
  (idempotent by turn_id / proposal_id; rows are mappings of the table's columns, chat
  turns may also be `ChatTurn` records; see `chat_turn_row`).
- landing: `last_ingested_seq()`, `set_last_ingested_seq(seq, *, allow_rewind=False)`,
  `mark_landed(events) -> int`, `is_landed(event_id)`, `landed_ids(event_ids) -> set`.
- palace: `put_locations(locs) -> int` (changed rows), `locations(prefix=None)`,
  `location_of(id)`.
- runs: `start_run(run_id, from_seq)`, `finish_run(run_id, status, counts, to_seq,
  snapshot_version=None)`, `get_run(run_id)`, `runs(limit=None)`.
- SQL: `query(sql, params=None) -> list[tuple]`, `query_frame(sql, params=None) -> polars`.

Errors: `TypeError` / `ValueError` for bad arguments (unknown patch fields, invalid
values), `UnknownItemError` (a `KeyError`) for missing items, `ItemConflictError` for
writes that contradict stored state, `WarehouseLockedError` when another process holds
the file, `WarehouseError` for everything else (read-only writes, missing file, SQL).
"""

from __future__ import annotations

import gc
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import msgspec
import numpy as np
import polars as pl
import pyarrow as pa

from pipelines.migrations import apply_migrations, current_version
from pipelines.records import (
    ChatTurn,
    Event,
    Link,
    LinkRel,
    MemoryItem,
    PalaceLocation,
    Provenance,
    Scope,
    Tier,
    item_content_hash,
    sha256_text,
    utcnow,
)

LINK_RELS: frozenset[str] = frozenset(LinkRel.__args__)  # type: ignore[attr-defined]
TIERS: tuple[str, ...] = Tier.__args__  # type: ignore[attr-defined]
INBOX_SEQ_KEY = "inbox_seq"


class WarehouseError(RuntimeError):
    """The warehouse cannot do what was asked (read-only, missing file, SQL failure)."""


class WarehouseLockedError(WarehouseError):
    """Another process holds the DuckDB file (one writer, and no readers beside it)."""


class UnknownItemError(WarehouseError, KeyError):
    """An item id that is not in the warehouse."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class ItemConflictError(WarehouseError):
    """A write that contradicts stored state (same id, other content; double supersede)."""


# -- row layouts ----------------------------------------------------------------------

_S = pa.string()
_ITEM_SCHEMA = pa.schema(
    [
        ("id", _S), ("tier", _S), ("type", _S), ("title", _S), ("content", _S),
        ("scope_kind", _S), ("user_id", _S), ("project_id", _S), ("session_id", _S),
        ("org_id", _S), ("tags", pa.list_(_S)), ("entities", pa.list_(_S)),
        ("provenance", _S), ("confidence", pa.float64()), ("importance", pa.int32()),
        ("validation", _S), ("valid_from", _S), ("valid_to", _S), ("created_at", _S),
        ("updated_at", _S), ("expires_at", _S), ("usage_count", pa.int32()),
        ("last_used_at", _S), ("superseded_by", _S), ("archived", pa.bool_()),
        ("content_hash", _S), ("metadata", _S),
    ]
)  # fmt: skip
ITEM_COLUMNS: tuple[str, ...] = tuple(_ITEM_SCHEMA.names)
# pipelines.message_context.embedding_hash in SQL: which text a current vector is made from
# (a message with a retrieval context hashes it in, so a new context means a new vector).
EMBEDDING_HASH_SQL = (
    "CASE WHEN i.type = 'message' AND coalesce(json_extract_string(i.metadata, '$.context'), '') <> '' "
    "THEN sha256(i.content_hash || chr(10) || json_extract_string(i.metadata, '$.context')) "
    "ELSE i.content_hash END"
)
_ITEM_SELECT = ", ".join(f"i.{c}" for c in ITEM_COLUMNS)

_FIELD_NAMES = frozenset(f.name for f in msgspec.structs.fields(MemoryItem))
# Not patchable: identity, derived hash, links (append-only, see link()), learn time.
_FROZEN_FIELDS = frozenset({"id", "content_hash", "links", "created_at"})
PATCHABLE_FIELDS: frozenset[str] = _FIELD_NAMES - _FROZEN_FIELDS

_EVENT_SCHEMA = pa.schema(
    [("action", _S), ("item_id", _S), ("details", _S), ("content_sha256", _S),
     ("at", _S), ("inbox_seq", pa.int64())]
)  # fmt: skip
_REVISION_SCHEMA = pa.schema(
    [("revision_id", _S), ("item_id", _S), ("revision_num", pa.int32()),
     ("snapshot", _S), ("changed_at", _S), ("reason", _S)]
)  # fmt: skip
_LINK_SCHEMA = pa.schema([("src_id", _S), ("dst_id", _S), ("rel", _S), ("created_at", _S)])

# (column, arrow type, default or _REQUIRED, stored as JSON) for the landed tables.
_REQUIRED = object()
_CHAT_TURN_COLUMNS: tuple[tuple[str, pa.DataType, Any, bool], ...] = (
    ("turn_id", _S, _REQUIRED, False),
    ("event_id", _S, None, False),
    ("inbox_seq", pa.int64(), None, False),
    ("user_id", _S, "default", False),
    ("project_id", _S, "default", False),
    ("session_id", _S, "default", False),
    ("org_id", _S, "default", False),
    ("role", _S, _REQUIRED, False),
    ("text", _S, _REQUIRED, False),
    ("turn_ref", _S, None, False),
    ("speaker", _S, None, False),
    ("at", _S, _REQUIRED, False),
)
_PROPOSAL_COLUMNS: tuple[tuple[str, pa.DataType, Any, bool], ...] = (
    ("proposal_id", _S, _REQUIRED, False),
    ("event_id", _S, None, False),
    ("inbox_seq", pa.int64(), None, False),
    ("turn_id", _S, None, False),
    ("user_id", _S, None, False),
    ("project_id", _S, None, False),
    ("session_id", _S, None, False),
    ("org_id", _S, None, False),
    ("form", _S, _REQUIRED, False),
    ("proposal", _S, _REQUIRED, True),
    ("action", _S, _REQUIRED, False),
    ("reasons", pa.list_(_S), (), False),
    ("rule_ids", pa.list_(_S), (), False),
    ("policy_version", _S, "", False),
    ("item_id", _S, None, False),
    ("at", _S, _REQUIRED, False),
)


def chat_turn_row(
    turn: ChatTurn, *, event_id: str | None = None, inbox_seq: int | None = None
) -> dict[str, Any]:
    """A `chat_turns` row for a ChatTurn (identity flattened)."""
    who = turn.identity
    return {
        "turn_id": turn.turn_id,
        "event_id": event_id,
        "inbox_seq": inbox_seq,
        "user_id": who.user_id,
        "project_id": who.project_id,
        "session_id": who.session_id,
        "org_id": who.org_id,
        "role": turn.role,
        "text": turn.text,
        "turn_ref": turn.turn_ref,
        "speaker": turn.speaker,
        "at": turn.at,
    }


class Warehouse:
    """Access layer over one DuckDB warehouse file (see the module docstring)."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        if not isinstance(path, (str, Path)):
            raise TypeError(f"warehouse path must be str or Path, not {type(path).__name__}")
        self.path = Path(path)
        self.read_only = bool(read_only)
        self._lock = threading.RLock()
        self._depth = 0
        self._rollback_only = False
        self._closed = False
        if self.read_only and not self.path.exists():
            raise WarehouseError(
                f"no warehouse at {self.path} (open it writable once to create it)"
            )
        if not self.read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._con = duckdb.connect(str(self.path), read_only=self.read_only)
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise WarehouseLockedError(
                    f"the warehouse {self.path} is held by another process; DuckDB allows one "
                    f"writer and no reader beside it ({exc})"
                ) from exc
            raise WarehouseError(f"cannot open the warehouse {self.path}: {exc}") from exc
        except duckdb.Error as exc:
            raise WarehouseError(f"cannot open the warehouse {self.path}: {exc}") from exc
        try:
            if self.read_only:
                if current_version(self._con) == 0:
                    raise WarehouseError(f"{self.path} has no warehouse schema (never migrated)")
                self.applied_migrations: list[int] = []
            else:
                self.applied_migrations = apply_migrations(self._con)
        except BaseException:
            self._con.close()
            raise

    # -- lifecycle and transactions ------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._con.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "read-write"
        return f"Warehouse({str(self.path)!r}, {mode}{', closed' if self._closed else ''})"

    @property
    def schema_version(self) -> int:
        with self.transaction():
            return current_version(self._con)

    @contextmanager
    def transaction(self) -> Iterator[Warehouse]:
        """One DuckDB transaction; nested calls join the outer one."""
        with self._lock:
            if self._closed:
                raise WarehouseError(f"the warehouse {self.path} is closed")
            if self._depth:
                self._depth += 1
                try:
                    yield self
                except BaseException:
                    self._rollback_only = True
                    raise
                finally:
                    self._depth -= 1
                return
            self._sql("BEGIN TRANSACTION")
            self._depth, self._rollback_only = 1, False
            try:
                yield self
            except BaseException:
                self._depth = 0
                self._safe_rollback()
                raise
            self._depth = 0
            if self._rollback_only:
                self._safe_rollback()
                raise WarehouseError(
                    "a nested warehouse block failed; the transaction was rolled back"
                )
            try:
                self._con.execute("COMMIT").fetchall()
            except duckdb.Error as exc:
                self._safe_rollback()
                raise WarehouseError(f"commit failed: {exc}") from exc

    def _safe_rollback(self) -> None:
        try:
            self._con.execute("ROLLBACK").fetchall()
        except duckdb.Error:
            pass  # DuckDB already ended the failed transaction

    def _writable(self) -> None:
        if self.read_only:
            raise WarehouseError(f"the warehouse {self.path} is open read-only")

    def _sql(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None
    ) -> list[tuple]:
        """Run one statement and fetch all of its rows: DuckDB refuses other work on a
        connection (register, unregister) while a result is unfinished."""
        try:
            cursor = (
                self._con.execute(sql, params) if params is not None else self._con.execute(sql)
            )
            return cursor.fetchall()
        except duckdb.Error as exc:
            raise WarehouseError(f"warehouse SQL failed: {exc}") from exc

    @contextmanager
    def _staged(self, table: pa.Table) -> Iterator[str]:
        """Expose an arrow table to SQL under a unique name (bulk paths, no row loops)."""
        name = f"staged_{uuid.uuid4().hex}"
        self._con.register(name, table)
        try:
            yield name
        finally:
            self._con.unregister(name)

    def _ids_table(self, ids: Sequence[str]) -> pa.Table:
        return pa.table({"id": pa.array(ids, _S), "ord": pa.array(range(len(ids)), pa.int64())})

    # -- generic SQL ---------------------------------------------------------------------

    def query(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None
    ) -> list[tuple]:
        """Run any SQL (e.g. over the analytics views) and return its rows."""
        with self.transaction():
            return self._sql(sql, params)

    def query_frame(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None
    ) -> pl.DataFrame:
        with self.transaction():
            try:
                return self._con.sql(sql, params=params).pl()
            except duckdb.Error as exc:
                raise WarehouseError(f"warehouse SQL failed: {exc}") from exc

    # -- items: writing ------------------------------------------------------------------

    def put_item(
        self, item: MemoryItem, *, reason: str = "create", inbox_seq: int | None = None
    ) -> MemoryItem:
        """Insert one item (revision 1, a `create` event). Same id and content: the stored
        item is returned and nothing is written."""
        return self.put_items([item], reason=reason, inbox_seq=inbox_seq)[0]

    def put_items(
        self, items: Sequence[MemoryItem], *, reason: str = "create", inbox_seq: int | None = None
    ) -> list[MemoryItem]:
        """Insert many items in one transaction through arrow (no per-row INSERTs).
        Their `links` are stored too (targets are not checked: they may arrive later)."""
        self._writable()
        _check_reason(reason)
        _check_inbox_seq(inbox_seq)
        batch = _validated_items(_as_list(items, "items"))
        if not batch:
            return []
        first: dict[str, MemoryItem] = {}
        for item in batch:
            seen = first.setdefault(item.id, item)
            if seen.content_hash != item.content_hash:
                raise ItemConflictError(f"item {item.id!r} appears twice with different content")
        with self.transaction():
            stored = self._stored_hashes(list(first))
            for item_id, content_hash in stored.items():
                if content_hash != first[item_id].content_hash:
                    raise ItemConflictError(
                        f"item {item_id!r} exists with other content; use update_item()"
                    )
            new = [i for i in first.values() if i.id not in stored]
            if new:
                now = utcnow()
                self._insert_item_rows(new)
                self._insert_revisions([(i, 1) for i in new], reason, now)
                self._insert_links(
                    [(i.id, link.to, link.rel) for i in new for link in i.links], now
                )
                self._insert_events(
                    [
                        ("create", i.id, {"reason": reason, "tier": i.tier, "type": i.type},
                         i.content_hash)
                        for i in new
                    ],
                    now,
                    inbox_seq,
                )  # fmt: skip
            existing = self._load_items([i for i in first if i in stored])
        resolved = {i.id: i for i in new}
        resolved.update(existing)
        return [resolved[i.id] for i in batch]

    def update_item(
        self,
        item_id: str,
        patch: Mapping[str, Any],
        *,
        reason: str = "update",
        inbox_seq: int | None = None,
    ) -> MemoryItem:
        """Apply `patch` (field -> new value); always writes a new revision and event."""
        return self.update_items({item_id: patch}, reason=reason, inbox_seq=inbox_seq)[0]

    def update_items(
        self,
        patches: Mapping[str, Mapping[str, Any]],
        *,
        reason: str = "update",
        inbox_seq: int | None = None,
    ) -> list[MemoryItem]:
        """Patch many items in one transaction. Patchable: every MemoryItem field except
        id, content_hash (recomputed), links (see link()) and created_at. updated_at is set
        to now unless the patch gives it."""
        self._writable()
        _check_reason(reason)
        _check_inbox_seq(inbox_seq)
        if not isinstance(patches, Mapping):
            raise TypeError(
                f"patches must be a mapping of item id -> patch, not {type(patches).__name__}"
            )
        for item_id, patch in patches.items():
            _check_patch(item_id, patch)
        if not patches:
            return []
        with self.transaction():
            current = self._require_items(list(patches))
            now = utcnow()
            changes = [(current[i], _patched(current[i], p, now)) for i, p in patches.items()]
            details = [{"reason": reason, "fields": sorted(patches[old.id])} for old, _ in changes]
            self._write_changes(changes, reason, "update", details, now, inbox_seq)
        return [new for _, new in changes]

    def archive(self, item_id: str, *, reason: str, inbox_seq: int | None = None) -> MemoryItem:
        """Mark an item archived (expiry, aging). Already archived: returned unchanged."""
        return self.archive_items([item_id], reason=reason, inbox_seq=inbox_seq)[0]

    def archive_items(
        self, item_ids: Sequence[str], *, reason: str, inbox_seq: int | None = None
    ) -> list[MemoryItem]:
        self._writable()
        _check_reason(reason)
        _check_inbox_seq(inbox_seq)
        ids = _unique_ids(item_ids, "item_ids")
        with self.transaction():
            current = self._require_items(ids)
            now = utcnow()
            changes = [
                (current[i], _patched(current[i], {"archived": True}, now))
                for i in ids
                if not current[i].archived
            ]
            details = [{"reason": reason} for _ in changes]
            self._write_changes(changes, reason, "archive", details, now, inbox_seq)
            result = {new.id: new for _, new in changes}
        return [result.get(i, current[i]) for i in ids]

    def supersede(
        self,
        old_ids: Sequence[str],
        new_id: str,
        *,
        reason: str = "consolidation_merge",
        inbox_seq: int | None = None,
    ) -> list[MemoryItem]:
        """Mark `old_ids` as superseded by `new_id` (a revision and a `supersede` event
        each) and link new -derived_from-> old and new -supersedes-> old. Returns the old
        items as now stored. Idempotent for items already superseded by `new_id`."""
        self._writable()
        _check_reason(reason)
        _check_inbox_seq(inbox_seq)
        ids = _unique_ids(old_ids, "old_ids")
        _check_id(new_id, "new_id")
        if new_id in ids:
            raise ValueError(f"item {new_id!r} cannot supersede itself")
        with self.transaction():
            current = self._require_items([*ids, new_id])
            if not current[new_id].active:
                raise ItemConflictError(f"canonical item {new_id!r} is itself inactive")
            for i in ids:
                other = current[i].superseded_by
                if other is not None and other != new_id:
                    raise ItemConflictError(f"item {i!r} is already superseded by {other!r}")
            now = utcnow()
            changes = [
                (current[i], _patched(current[i], {"superseded_by": new_id}, now))
                for i in ids
                if current[i].superseded_by is None
            ]
            details = [{"reason": reason, "new_id": new_id} for _ in changes]
            self._write_changes(changes, reason, "supersede", details, now, inbox_seq)
            links = [(new_id, i, rel) for i in ids for rel in ("derived_from", "supersedes")]
            self._insert_links(links, now, log=True, inbox_seq=inbox_seq)
            result = {new.id: new for _, new in changes}
        return [result.get(i, current[i]) for i in ids]

    def link(self, src_id: str, dst_id: str, rel: str, *, inbox_seq: int | None = None) -> bool:
        """Add a typed link between two stored items; True when it is new (idempotent)."""
        self._writable()
        _check_inbox_seq(inbox_seq)
        _check_id(src_id, "src_id")
        _check_id(dst_id, "dst_id")
        if rel not in LINK_RELS:
            raise ValueError(f"unknown link rel {rel!r}; known: {sorted(LINK_RELS)}")
        with self.transaction():
            self._require_items([src_id, dst_id])
            return bool(
                self._insert_links([(src_id, dst_id, rel)], utcnow(), log=True, inbox_seq=inbox_seq)
            )

    # -- items: reading ------------------------------------------------------------------

    def get_item(self, item_id: str) -> MemoryItem | None:
        _check_id(item_id, "item_id")
        with self.transaction():
            return self._load_items([item_id]).get(item_id)

    def get_items(self, item_ids: Sequence[str]) -> list[MemoryItem]:
        """Stored items in the order asked; unknown ids are skipped."""
        ids = _as_list(item_ids, "item_ids")
        for i in ids:
            _check_id(i, "item id")
        with self.transaction():
            found = self._load_items(list(dict.fromkeys(ids)))
        return [found[i] for i in ids if i in found]

    def active_items(
        self, *, tier: str | None = None, types: Sequence[str] | None = None
    ) -> list[MemoryItem]:
        """Items neither archived nor superseded, optionally of one tier / some types,
        ordered by id."""
        where, params = _active_filter(tier, types)
        with self.transaction():
            return list(self._load_where(where, params).values())

    def items_changed_since(self, since: str) -> list[MemoryItem]:
        """Active items written (created or revised) at or after `since` (ISO UTC, compared
        with the revisions' write times, not the items' own dates)."""
        _check_id(since, "since")
        with self.transaction():
            ids = [r[0] for r in self._sql(
                "SELECT DISTINCT item_id FROM revisions WHERE changed_at >= ? ORDER BY 1", [since])]
            found = self._load_items(ids)
        return [it for it in found.values() if it.active]

    def items_text_changed_since(self, since: str) -> list[MemoryItem]:
        """Active items whose text (title, content, tags, entities) was written at or after
        `since`: created since, or revised since and now different from their last revision
        before it. Revisions that keep the text (promotion, palace, usage, aging) do not
        count, so this costs what changed, not what was merely touched."""
        _check_id(since, "since")
        differs = " OR ".join(
            f"json_extract_string(rb.snapshot, '$.{f}') IS DISTINCT FROM json_extract_string(rl.snapshot, '$.{f}')"
            for f in ("content_hash", "tags", "entities")
        )
        with self.transaction():
            ids = [r[0] for r in self._sql(
                "WITH touched AS (SELECT item_id, max(revision_num) AS last_num FROM revisions "
                "WHERE changed_at >= ? GROUP BY item_id), "
                "before AS (SELECT r.item_id, max(r.revision_num) AS num FROM revisions r "
                "JOIN touched t ON t.item_id = r.item_id WHERE r.changed_at < ? GROUP BY r.item_id) "
                "SELECT t.item_id FROM touched t "
                "JOIN revisions rl ON rl.item_id = t.item_id AND rl.revision_num = t.last_num "
                "LEFT JOIN before b ON b.item_id = t.item_id "
                "LEFT JOIN revisions rb ON rb.item_id = b.item_id AND rb.revision_num = b.num "
                f"WHERE rb.item_id IS NULL OR {differs} ORDER BY 1",
                [since, since])]
            found = self._load_items(ids)
        return [it for it in found.values() if it.active]

    def session_tails(self, keys: Sequence[tuple[str, str, str]], n: int) -> list[MemoryItem]:
        """The last `n` stored `message` items (by inbox sequence) of each (org, user,
        session) in `keys`: the neighbours new turns of those sessions are read with."""
        keys = list(dict.fromkeys(keys))
        if not keys or n <= 0:
            return []
        table = pa.table({"org_id": [k[0] for k in keys], "user_id": [k[1] for k in keys],
                          "session": [k[2] for k in keys]})
        with self.transaction():
            with self._staged(table) as staged:
                rows = self._sql(
                    "SELECT id FROM (SELECT i.id, row_number() OVER (PARTITION BY i.org_id, i.user_id, "
                    "json_extract_string(i.metadata, '$.session_id') ORDER BY "
                    "TRY_CAST(json_extract(i.metadata, '$.inbox_seq') AS BIGINT) DESC NULLS LAST, "
                    "i.created_at DESC, i.id DESC) AS rn "
                    f"FROM items i JOIN {staged} k ON k.org_id = i.org_id AND k.user_id = i.user_id "
                    "AND k.session = coalesce(json_extract_string(i.metadata, '$.session_id'), '') "
                    "WHERE i.type = 'message' AND NOT i.archived AND i.superseded_by IS NULL) "
                    "WHERE rn <= ? ORDER BY id",
                    [n],
                )
            found = self._load_items([r[0] for r in rows])
        return list(found.values())

    def items_frame(self, active_only: bool = True) -> pl.DataFrame:
        """The `items` table as a polars frame (JSON columns as text), ordered by id."""
        where = "WHERE NOT archived AND superseded_by IS NULL" if active_only else ""
        return self.query_frame(f"SELECT * FROM items {where} ORDER BY id")

    def count_items(self, active_only: bool = True, tier: str | None = None) -> int:
        _check_tier(tier)
        conditions, params = [], []
        if active_only:
            conditions.append("NOT archived AND superseded_by IS NULL")
        if tier is not None:
            conditions.append("tier = ?")
            params.append(tier)
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        return int(self.query(f"SELECT count(*) FROM items {where}", params)[0][0])

    def revisions(self, item_id: str) -> list[dict[str, Any]]:
        """Every revision of an item, oldest first; `snapshot` is the item as a dict."""
        _check_id(item_id, "item_id")
        rows = self.query(
            "SELECT revision_id, item_id, revision_num, snapshot, changed_at, reason "
            "FROM revisions WHERE item_id = ? ORDER BY revision_num",
            [item_id],
        )
        keys = ("revision_id", "item_id", "revision_num", "snapshot", "changed_at", "reason")
        out = [dict(zip(keys, r)) for r in rows]
        for r in out:
            r["snapshot"] = msgspec.json.decode(r["snapshot"])
        return out

    def item_events(self, item_id: str) -> list[dict[str, Any]]:
        """The audit events of an item, oldest first; `details` decoded."""
        _check_id(item_id, "item_id")
        rows = self.query(
            'SELECT id, action, item_id, details, content_sha256, "at", inbox_seq '
            "FROM events WHERE item_id = ? ORDER BY id",
            [item_id],
        )
        keys = ("id", "action", "item_id", "details", "content_sha256", "at", "inbox_seq")
        out = [dict(zip(keys, r)) for r in rows]
        for r in out:
            r["details"] = msgspec.json.decode(r["details"])
        return out

    # -- embeddings ----------------------------------------------------------------------

    def put_embeddings(
        self,
        rows: Sequence[tuple[str, str, np.ndarray]],
        *,
        model_name: str,
        dim: int,
    ) -> int:
        """Store (item_id, content_hash, vector) rows for `model_name`, replacing an
        item's previous vector for that model. Vectors are stored as float32. Returns the
        number of rows written (the last row wins for an id given twice)."""
        self._writable()
        _check_id(model_name, "model_name")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise ValueError(f"dim must be a positive int, not {dim!r}")
        latest: dict[str, tuple[str, np.ndarray]] = {}
        for row in _as_list(rows, "rows"):
            if not isinstance(row, (tuple, list)) or len(row) != 3:
                raise TypeError("embedding rows must be (item_id, content_hash, vector) tuples")
            item_id, content_hash, vector = row
            _check_id(item_id, "item_id")
            _check_id(content_hash, "content_hash")
            vec = np.asarray(vector, dtype=np.float32)
            if vec.shape != (dim,):
                raise ValueError(f"vector for {item_id!r} has shape {vec.shape}, expected ({dim},)")
            latest[item_id] = (content_hash, vec)
        if not latest:
            return 0
        ids = list(latest)
        matrix = np.stack([latest[i][1] for i in ids])
        if not np.isfinite(matrix).all():
            raise ValueError("embedding vectors must be finite (no NaN or inf)")
        offsets = np.arange(0, (len(ids) + 1) * dim, dim, dtype=np.int32)
        now = utcnow()
        table = pa.table(
            {
                "item_id": pa.array(ids, _S),
                "model_name": pa.array([model_name] * len(ids), _S),
                "dimension": pa.array([dim] * len(ids), pa.int32()),
                "vector": pa.ListArray.from_arrays(pa.array(offsets), pa.array(matrix.ravel())),
                "content_hash": pa.array([latest[i][0] for i in ids], _S),
                "created_at": pa.array([now] * len(ids), _S),
            }
        )
        with self.transaction():
            stored_dims = {d for (m, d) in self._models() if m == model_name}
            if stored_dims and stored_dims != {dim}:
                raise ValueError(
                    f"model {model_name!r} is stored with dimension "
                    f"{sorted(stored_dims)}, not {dim}"
                )
            with self._staged(table) as staged:
                missing = self._sql(
                    f"SELECT s.item_id FROM {staged} s "
                    "ANTI JOIN items i ON i.id = s.item_id LIMIT 5"
                )
                if missing:
                    raise UnknownItemError(
                        f"embeddings for unknown items: {[m[0] for m in missing]}"
                    )
                # Derived data: an item's older vector for this model is replaced.
                self._sql(
                    f"DELETE FROM embeddings WHERE model_name = ? "
                    f"AND item_id IN (SELECT item_id FROM {staged})",
                    [model_name],
                )
                self._sql(f"INSERT INTO embeddings SELECT * FROM {staged}")
            digest = sha256_text("\n".join(f"{i}:{latest[i][0]}" for i in sorted(ids)))
            details = {"model_name": model_name, "dim": dim, "count": len(ids)}
            self._insert_events([("embed", None, details, digest)], now, None)
        return len(ids)

    def embeddings_for(
        self, item_ids: Sequence[str], model_name: str
    ) -> dict[str, tuple[str, np.ndarray]]:
        """item_id -> (content_hash, float32 vector) for the ids that have one."""
        ids, hashes, matrix = self._fetch_embeddings(model_name, _as_list(item_ids, "item_ids"))
        return {i: (h, matrix[k]) for k, (i, h) in enumerate(zip(ids, hashes))}

    def embedding_matrix(self, model_name: str, item_ids: Sequence[str]) -> np.ndarray:
        """(len(item_ids), dim) float32 matrix in the order asked; every id must have a
        vector for the model (UnknownItemError otherwise)."""
        wanted = _as_list(item_ids, "item_ids")
        ids, _, matrix = self._fetch_embeddings(model_name, wanted)
        if len(ids) != len(set(wanted)):
            missing = sorted(set(wanted) - set(ids))
            raise UnknownItemError(
                f"no {model_name!r} embedding for {missing[:5]} ({len(missing)} missing)"
            )
        if len(ids) == len(wanted):
            return matrix
        row = {i: k for k, i in enumerate(ids)}
        return matrix[[row[i] for i in wanted]]

    def embedding_table(
        self, model_name: str, *, active_only: bool = True, current_only: bool = True
    ) -> tuple[list[str], list[str], np.ndarray]:
        """(ids, content_hashes, matrix) of the model's vectors ordered by item id; by
        default only active items whose vector matches their current content."""
        return self._fetch_embeddings(
            model_name, None, active_only=active_only, current_only=current_only
        )

    def stale_embedding_ids(self, model_name: str, *, active_only: bool = True) -> list[str]:
        """Items with no vector for the model, or one computed from older content."""
        _check_id(model_name, "model_name")
        active = "WHERE NOT i.archived AND i.superseded_by IS NULL" if active_only else ""
        rows = self.query(
            "SELECT i.id FROM items i LEFT JOIN embeddings e "
            "ON e.item_id = i.id AND e.model_name = ? "
            f"{active} {'AND' if active else 'WHERE'} "
            f"(e.item_id IS NULL OR e.content_hash <> {EMBEDDING_HASH_SQL}) ORDER BY i.id",
            [model_name],
        )
        return [r[0] for r in rows]

    def stored_embedding_models(self) -> list[tuple[str, int]]:
        with self.transaction():
            return self._models()

    def _models(self) -> list[tuple[str, int]]:
        return [
            (m, int(d))
            for m, d in self._sql(
                "SELECT DISTINCT model_name, dimension FROM embeddings ORDER BY 1, 2"
            )
        ]

    def _fetch_embeddings(
        self,
        model_name: str,
        item_ids: list[str] | None,
        *,
        active_only: bool = False,
        current_only: bool = False,
    ) -> tuple[list[str], list[str], np.ndarray]:
        _check_id(model_name, "model_name")
        conditions = ["e.model_name = $model"]
        if active_only or current_only:
            join_items = "JOIN items i ON i.id = e.item_id"
            if active_only:
                conditions.append("NOT i.archived AND i.superseded_by IS NULL")
            if current_only:
                conditions.append(f"e.content_hash = {EMBEDDING_HASH_SQL}")
        else:
            join_items = ""
        with self.transaction():
            dims = [d for m, d in self._models() if m == model_name]
            dim = dims[0] if dims else 0
            if item_ids is None:
                sql = (
                    f"SELECT e.item_id, e.content_hash, e.vector FROM embeddings e {join_items} "
                    f"WHERE {' AND '.join(conditions)} ORDER BY e.item_id"
                )
                result = self._con.sql(sql, params={"model": model_name}).to_arrow_table()
            else:
                for i in item_ids:
                    _check_id(i, "item id")
                wanted = self._ids_table(list(dict.fromkeys(item_ids)))
                with self._staged(wanted) as staged:
                    sql = (
                        f"SELECT e.item_id, e.content_hash, e.vector FROM {staged} w "
                        f"JOIN embeddings e ON e.item_id = w.id {join_items} "
                        f"WHERE {' AND '.join(conditions)} ORDER BY w.ord"
                    )
                    result = self._con.sql(sql, params={"model": model_name}).to_arrow_table()
        ids = result.column("item_id").to_pylist()
        hashes = result.column("content_hash").to_pylist()
        if not ids:
            return [], [], np.zeros((0, dim), dtype=np.float32)
        flat = result.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        return ids, hashes, flat.astype(np.float32, copy=False).reshape(len(ids), dim)

    # -- chat turns and proposals --------------------------------------------------------

    def put_chat_turns(self, rows: Sequence[ChatTurn | Mapping[str, Any]]) -> int:
        """Land chat turns (idempotent by turn_id); returns how many were new."""
        converted = [
            chat_turn_row(r) if isinstance(r, ChatTurn) else r for r in _as_list(rows, "rows")
        ]
        return self._put_rows("chat_turns", _CHAT_TURN_COLUMNS, converted)

    def put_proposals(self, rows: Sequence[Mapping[str, Any]]) -> int:
        """Land governed proposals (idempotent by proposal_id); returns how many were new.
        `proposal` may be a dict (stored as JSON) or a JSON string."""
        return self._put_rows("proposals", _PROPOSAL_COLUMNS, _as_list(rows, "rows"))

    def _put_rows(
        self, table: str, spec: tuple[tuple[str, pa.DataType, Any, bool], ...], rows: list[Any]
    ) -> int:
        self._writable()
        if not rows:
            return 0
        names = [c[0] for c in spec]
        key = names[0]
        columns: dict[str, list[Any]] = {n: [] for n in names}
        seen: set[str] = set()
        for row in rows:
            if not isinstance(row, Mapping):
                raise TypeError(f"{table} rows must be mappings, not {type(row).__name__}")
            unknown = set(row) - set(names)
            if unknown:
                raise ValueError(f"unknown {table} columns {sorted(unknown)}; known: {names}")
            _check_id(row.get(key), key)
            if row[key] in seen:
                continue  # first occurrence wins, like the stored one
            seen.add(row[key])
            for name, _, default, is_json in spec:
                value = row.get(name, default)
                if value is _REQUIRED:
                    raise ValueError(f"{table} row {row[key]!r} lacks {name!r}")
                if is_json and not isinstance(value, str):
                    value = _json(value)
                columns[name].append(list(value) if isinstance(value, tuple) else value)
        try:
            staged_table = pa.table(
                {name: pa.array(columns[name], type=dtype) for name, dtype, _, _ in spec}
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise ValueError(f"invalid {table} rows: {exc}") from exc
        cols = ", ".join(f'"{n}"' for n in names)
        with self.transaction(), self._staged(staged_table) as staged:
            before = self._sql(f"SELECT count(*) FROM {table}")[0][0]
            self._sql(
                f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {staged} s "
                f"WHERE s.{key} NOT IN (SELECT {key} FROM {table})"
            )
            after = self._sql(f"SELECT count(*) FROM {table}")[0][0]
        return int(after - before)

    # -- landing (inbox -> warehouse) ----------------------------------------------------

    def last_ingested_seq(self) -> int:
        rows = self.query("SELECT value FROM ingest_state WHERE key = ?", [INBOX_SEQ_KEY])
        return int(rows[0][0]) if rows else 0

    def set_last_ingested_seq(self, seq: int, *, allow_rewind: bool = False) -> None:
        """Move the ingestion watermark; moving it back needs allow_rewind=True."""
        self._writable()
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise ValueError(f"seq must be a non-negative int, not {seq!r}")
        with self.transaction():
            current = self.last_ingested_seq()
            if seq < current and not allow_rewind:
                raise ValueError(f"ingestion watermark {current} cannot move back to {seq}")
            self._sql("DELETE FROM ingest_state WHERE key = ?", [INBOX_SEQ_KEY])
            self._sql(
                "INSERT INTO ingest_state VALUES (?, ?, ?)", [INBOX_SEQ_KEY, str(seq), utcnow()]
            )

    def mark_landed(self, events: Sequence[Event]) -> int:
        """Record inbox events as landed (idempotent); returns how many were new."""
        self._writable()
        evs = _as_list(events, "events")
        for e in evs:
            if not isinstance(e, Event):
                raise TypeError(f"mark_landed takes Event records, not {type(e).__name__}")
        if not evs:
            return 0
        unique = list({e.event_id: e for e in reversed(evs)}.values())  # first occurrence wins
        now = utcnow()
        table = pa.table(
            {
                "event_id": pa.array([e.event_id for e in unique], _S),
                "seq": pa.array([e.seq for e in unique], pa.int64()),
                "kind": pa.array([e.kind for e in unique], _S),
                "at": pa.array([e.at for e in unique], _S),
                "landed_at": pa.array([now] * len(unique), _S),
            }
        )
        with self.transaction(), self._staged(table) as staged:
            before = self._sql("SELECT count(*) FROM landed_events")[0][0]
            self._sql(
                'INSERT INTO landed_events SELECT event_id, seq, kind, "at", landed_at '
                f"FROM {staged} "
                "WHERE event_id NOT IN (SELECT event_id FROM landed_events)"
            )
            after = self._sql("SELECT count(*) FROM landed_events")[0][0]
        return int(after - before)

    def is_landed(self, event_id: str) -> bool:
        return event_id in self.landed_ids([event_id])

    def landed_ids(self, event_ids: Sequence[str]) -> set[str]:
        ids = _as_list(event_ids, "event_ids")
        if not ids:
            return set()
        for i in ids:
            _check_id(i, "event_id")
        with self.transaction(), self._staged(self._ids_table(ids)) as staged:
            rows = self._sql(
                f"SELECT l.event_id FROM landed_events l JOIN {staged} s ON s.id = l.event_id"
            )
        return {r[0] for r in rows}

    # -- palace --------------------------------------------------------------------------

    def put_locations(self, locs: Sequence[PalaceLocation], *, inbox_seq: int | None = None) -> int:
        """Assign palace locations (one per item; the last given wins). Only new or moved
        items are written, each with a `palace.assign` event. Returns that count."""
        self._writable()
        _check_inbox_seq(inbox_seq)
        latest: dict[str, PalaceLocation] = {}
        for loc in _as_list(locs, "locs"):
            if not isinstance(loc, PalaceLocation):
                raise TypeError(
                    f"put_locations takes PalaceLocation records, not {type(loc).__name__}"
                )
            for part in (loc.item_id, loc.domain, loc.room, loc.shelf, loc.card):
                _check_id(part, "palace location part")
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
                    "item_id": pa.array([loc.item_id for loc in changed], _S),
                    "domain": pa.array([loc.domain for loc in changed], _S),
                    "room": pa.array([loc.room for loc in changed], _S),
                    "shelf": pa.array([loc.shelf for loc in changed], _S),
                    "card": pa.array([loc.card for loc in changed], _S),
                    "assigned_at": pa.array([now] * len(changed), _S),
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
            self._insert_events(events, now, inbox_seq)
        return len(changed)

    def locations(self, prefix: str | None = None) -> list[PalaceLocation]:
        """Locations whose path domain/room/shelf/card starts with `prefix`, by path."""
        if prefix is not None and not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str or None, not {type(prefix).__name__}")
        rows = self.query(
            "SELECT item_id, domain, room, shelf, card FROM palace_locations "
            "WHERE $prefix IS NULL "
            "OR starts_with(domain || '/' || room || '/' || shelf || '/' || card, $prefix) "
            "ORDER BY domain, room, shelf, card, item_id",
            {"prefix": prefix},
        )
        return [PalaceLocation(*r) for r in rows]

    def location_of(self, item_id: str) -> PalaceLocation | None:
        _check_id(item_id, "item_id")
        with self.transaction():
            found = self._locations_for([item_id])
        return found[0] if found else None

    def _locations_for(self, item_ids: list[str]) -> list[PalaceLocation]:
        with self._staged(self._ids_table(item_ids)) as staged:
            rows = self._sql(
                f"SELECT p.item_id, p.domain, p.room, p.shelf, p.card FROM palace_locations p "
                f"JOIN {staged} s ON s.id = p.item_id ORDER BY s.ord"
            )
        return [PalaceLocation(*r) for r in rows]

    # -- consolidation runs --------------------------------------------------------------

    def start_run(self, run_id: str, from_seq: int) -> None:
        self._writable()
        _check_id(run_id, "run_id")
        if isinstance(from_seq, bool) or not isinstance(from_seq, int) or from_seq < 0:
            raise ValueError(f"from_seq must be a non-negative int, not {from_seq!r}")
        with self.transaction():
            if self.get_run(run_id) is not None:
                raise ItemConflictError(f"consolidation run {run_id!r} already exists")
            now = utcnow()
            self._sql(
                "INSERT INTO consolidation_runs (run_id, started_at, status, inbox_from_seq) "
                "VALUES (?, ?, 'running', ?)",
                [run_id, now, from_seq],
            )
            details = {"run_id": run_id, "from_seq": from_seq}
            self._insert_events([("run.start", None, details, sha256_text(run_id))], now, None)

    def finish_run(
        self,
        run_id: str,
        status: str,
        counts: Mapping[str, Any],
        to_seq: int,
        snapshot_version: str | None = None,
    ) -> None:
        self._writable()
        _check_id(run_id, "run_id")
        _check_id(status, "status")
        if not isinstance(counts, Mapping):
            raise TypeError(f"counts must be a mapping, not {type(counts).__name__}")
        if isinstance(to_seq, bool) or not isinstance(to_seq, int) or to_seq < 0:
            raise ValueError(f"to_seq must be a non-negative int, not {to_seq!r}")
        with self.transaction():
            run = self.get_run(run_id)
            if run is None:
                raise WarehouseError(f"unknown consolidation run {run_id!r}")
            if run["finished_at"] is not None:
                raise ItemConflictError(f"consolidation run {run_id!r} already finished")
            now = utcnow()
            counts_json = _json(dict(counts))
            self._sql(
                "UPDATE consolidation_runs SET finished_at = ?, status = ?, inbox_to_seq = ?, "
                "counts = ?, snapshot_version = ? WHERE run_id = ?",
                [now, status, to_seq, counts_json, snapshot_version, run_id],
            )
            details = {"run_id": run_id, "status": status, "to_seq": to_seq,
                       "snapshot_version": snapshot_version}  # fmt: skip
            self._insert_events(
                [("run.finish", None, details, sha256_text(counts_json))], now, None
            )

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        runs = self._runs("WHERE run_id = ?", [run_id])
        return runs[0] if runs else None

    def runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Consolidation runs, newest first."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise ValueError(f"limit must be a non-negative int or None, not {limit!r}")
        return self._runs("", [], limit)

    def _runs(
        self, where: str, params: list[Any], limit: int | None = None
    ) -> list[dict[str, Any]]:
        keys = ("run_id", "started_at", "finished_at", "status", "inbox_from_seq",
                "inbox_to_seq", "counts", "snapshot_version")  # fmt: skip
        sql = (
            f"SELECT {', '.join(keys)} FROM consolidation_runs {where} "
            "ORDER BY started_at DESC, run_id"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        out = [dict(zip(keys, r)) for r in self.query(sql, params)]
        for r in out:
            r["counts"] = msgspec.json.decode(r["counts"]) if r["counts"] is not None else None
        return out

    # -- internals: item rows ------------------------------------------------------------

    def _stored_hashes(self, ids: list[str]) -> dict[str, str]:
        with self._staged(self._ids_table(ids)) as staged:
            rows = self._sql(
                f"SELECT i.id, i.content_hash FROM items i JOIN {staged} s ON s.id = i.id"
            )
        return dict(rows)

    def _require_items(self, ids: list[str], *, load: bool = True) -> dict[str, MemoryItem]:
        for i in ids:
            _check_id(i, "item id")
        unique = list(dict.fromkeys(ids))
        if load:
            found = self._load_items(unique)
            present = set(found)
        else:
            found = {}
            present = set(self._stored_hashes(unique))
        missing = [i for i in unique if i not in present]
        if missing:
            raise UnknownItemError(f"unknown item ids: {missing[:5]} ({len(missing)} missing)")
        return found

    def _load_items(self, ids: list[str]) -> dict[str, MemoryItem]:
        if not ids:
            return {}
        with self._staged(self._ids_table(ids)) as staged:
            rows = self._sql(
                f"SELECT {_ITEM_SELECT} FROM items i JOIN {staged} s ON s.id = i.id ORDER BY s.ord"
            )
            links = self._sql(
                f"SELECT l.src_id, l.rel, l.dst_id FROM links l JOIN {staged} s ON s.id = l.src_id "
                "ORDER BY l.src_id, l.created_at, l.rel, l.dst_id"
            )
        return _rows_to_items(rows, links)

    def _load_where(self, where: str, params: list[Any]) -> dict[str, MemoryItem]:
        rows = self._sql(f"SELECT {_ITEM_SELECT} FROM items i {where} ORDER BY i.id", params)
        links = self._sql(
            f"SELECT l.src_id, l.rel, l.dst_id FROM links l "
            f"WHERE l.src_id IN (SELECT i.id FROM items i {where}) "
            "ORDER BY l.src_id, l.created_at, l.rel, l.dst_id",
            params,
        )
        return _rows_to_items(rows, links)

    def _insert_item_rows(self, items: list[MemoryItem]) -> None:
        with self._staged(_items_table(items)) as staged:
            cols = ", ".join(ITEM_COLUMNS)
            self._sql(f"INSERT INTO items ({cols}) SELECT {cols} FROM {staged}")

    def _write_changes(
        self,
        changes: list[tuple[MemoryItem, MemoryItem]],
        reason: str,
        action: str,
        details: list[dict[str, Any]],
        now: str,
        inbox_seq: int | None,
    ) -> None:
        """Replace item rows with their new versions, then revision + event each."""
        if not changes:
            return
        news = [new for _, new in changes]
        assignments = ", ".join(f"{c} = s.{c}" for c in ITEM_COLUMNS if c != "id")
        with self._staged(_items_table(news)) as staged:
            self._sql(f"UPDATE items SET {assignments} FROM {staged} s WHERE items.id = s.id")
        latest = self._latest_revisions([n.id for n in news])
        self._insert_revisions([(n, latest.get(n.id, 0) + 1) for n in news], reason, now)
        self._insert_events(
            [(action, n.id, d, n.content_hash) for n, d in zip(news, details)], now, inbox_seq
        )

    def _latest_revisions(self, ids: list[str]) -> dict[str, int]:
        with self._staged(self._ids_table(ids)) as staged:
            rows = self._sql(
                f"SELECT r.item_id, max(r.revision_num) FROM revisions r "
                f"JOIN {staged} s ON s.id = r.item_id GROUP BY r.item_id"
            )
        return {i: int(n) for i, n in rows}

    def _insert_revisions(self, rows: list[tuple[MemoryItem, int]], reason: str, now: str) -> None:
        table = pa.Table.from_pydict(
            {
                "revision_id": [f"{item.id}#{num}" for item, num in rows],
                "item_id": [item.id for item, _ in rows],
                "revision_num": [num for _, num in rows],
                "snapshot": [msgspec.json.encode(item).decode("utf-8") for item, _ in rows],
                "changed_at": [now] * len(rows),
                "reason": [reason] * len(rows),
            },
            schema=_REVISION_SCHEMA,
        )
        with self._staged(table) as staged:
            self._sql(f"INSERT INTO revisions SELECT * FROM {staged}")

    def _insert_links(
        self,
        links: list[tuple[str, str, str]],
        now: str,
        *,
        log: bool = False,
        inbox_seq: int | None = None,
    ) -> list[tuple[str, str, str]]:
        """Insert the links not yet stored; returns those (with `link` events if log)."""
        unique = list(dict.fromkeys(links))
        if not unique:
            return []
        for _, _, rel in unique:
            if rel not in LINK_RELS:
                raise ValueError(f"unknown link rel {rel!r}; known: {sorted(LINK_RELS)}")
        table = pa.Table.from_pydict(
            {
                "src_id": [s for s, _, _ in unique],
                "dst_id": [d for _, d, _ in unique],
                "rel": [r for _, _, r in unique],
                "created_at": [now] * len(unique),
            },
            schema=_LINK_SCHEMA,
        )
        with self._staged(table) as staged:
            new = self._sql(
                f"SELECT s.src_id, s.dst_id, s.rel FROM {staged} s ANTI JOIN links l "
                "ON l.src_id = s.src_id AND l.dst_id = s.dst_id AND l.rel = s.rel"
            )
            self._sql(
                f"INSERT INTO links SELECT s.* FROM {staged} s ANTI JOIN links l "
                "ON l.src_id = s.src_id AND l.dst_id = s.dst_id AND l.rel = s.rel"
            )
        if log and new:
            self._insert_events(
                [("link", s, {"dst_id": d, "rel": r}, sha256_text(f"{s}\x1f{r}\x1f{d}"))
                 for s, d, r in new],
                now,
                inbox_seq,
            )  # fmt: skip
        return new

    def _insert_events(
        self,
        rows: list[tuple[str, str | None, dict[str, Any], str]],
        now: str,
        inbox_seq: int | None,
    ) -> None:
        """Append audit events (action, item_id, details, content_sha256)."""
        if not rows:
            return
        _check_inbox_seq(inbox_seq)
        table = pa.Table.from_pydict(
            {
                "action": [r[0] for r in rows],
                "item_id": [r[1] for r in rows],
                "details": [_json(r[2]) for r in rows],
                "content_sha256": [r[3] for r in rows],
                "at": [now] * len(rows),
                "inbox_seq": [inbox_seq] * len(rows),
            },
            schema=_EVENT_SCHEMA,
        )
        with self._staged(table) as staged:
            self._sql(
                'INSERT INTO events (action, item_id, details, content_sha256, "at", inbox_seq) '
                f'SELECT action, item_id, details, content_sha256, "at", inbox_seq FROM {staged}'
            )


# -- helpers ------------------------------------------------------------------------------


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building many small objects at once: its collections
    rescan every live object and would double the cost of 100k-row conversions. The
    objects built here hold no reference cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _json(value: Any) -> str:
    try:
        return msgspec.json.encode(value).decode("utf-8")
    except (TypeError, msgspec.EncodeError) as exc:
        raise ValueError(f"value is not JSON-serialisable: {exc}") from exc


def _as_list(values: Any, name: str) -> list[Any]:
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence, not {type(values).__name__}")
    return list(values)


def _check_id(value: Any, name: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, not {value!r}")


def _check_inbox_seq(inbox_seq: Any) -> None:
    if inbox_seq is not None and (isinstance(inbox_seq, bool) or not isinstance(inbox_seq, int)):
        raise TypeError(f"inbox_seq must be an int or None, not {type(inbox_seq).__name__}")


def _check_reason(reason: Any) -> None:
    _check_id(reason, "reason")


def _unique_ids(ids: Any, name: str) -> list[str]:
    values = _as_list(ids, name)
    for i in values:
        _check_id(i, f"{name} entry")
    return list(dict.fromkeys(values))


def _check_patch(item_id: Any, patch: Any) -> None:
    _check_id(item_id, "item id")
    if not isinstance(patch, Mapping):
        raise TypeError(f"the patch for {item_id!r} must be a mapping, not {type(patch).__name__}")
    unknown = set(patch) - _FIELD_NAMES
    if unknown:
        raise ValueError(f"unknown MemoryItem fields in patch for {item_id!r}: {sorted(unknown)}")
    frozen = set(patch) & _FROZEN_FIELDS
    if frozen:
        raise ValueError(
            f"fields {sorted(frozen)} cannot be patched (id and created_at are fixed, "
            "content_hash is recomputed, links are added with link())"
        )


def _validated_items(items: list[Any]) -> list[MemoryItem]:
    """Type-checked copies of `items` with content hashes recomputed (msgspec does not
    validate on construction, and a caller may have edited title/content since). One
    msgspec call for the whole batch keeps 100k items fast."""
    for item in items:
        if not isinstance(item, MemoryItem):
            raise TypeError(f"expected MemoryItem records, not {type(item).__name__}")
    try:
        # A JSON round trip validates every field in C without intermediate dicts.
        with _gc_paused():
            validated = _ITEMS_DECODER.decode(msgspec.json.encode(items))
    except (TypeError, msgspec.ValidationError, msgspec.EncodeError) as exc:
        raise ValueError(f"invalid memory item: {exc}") from exc
    for item in validated:
        _check_id(item.id, "item id")
        item.content_hash = item_content_hash(item.title, item.content)
    return validated


def _patched(item: MemoryItem, patch: Mapping[str, Any], now: str) -> MemoryItem:
    try:
        raw = msgspec.to_builtins(item)
        raw.update(msgspec.to_builtins(dict(patch)))
        if "updated_at" not in patch:
            raw["updated_at"] = now
        raw["content_hash"] = ""  # recomputed from the (possibly new) title and content
        return msgspec.convert(raw, MemoryItem)
    except (TypeError, msgspec.ValidationError, msgspec.EncodeError) as exc:
        raise ValueError(f"invalid patch for {item.id!r}: {exc}") from exc


def _check_tier(tier: Any) -> None:
    if tier is not None and tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}; known: {list(TIERS)}")


def _active_filter(tier: str | None, types: Sequence[str] | None) -> tuple[str, list[Any]]:
    _check_tier(tier)
    conditions = ["NOT i.archived AND i.superseded_by IS NULL"]
    params: list[Any] = []
    if tier is not None:
        conditions.append("i.tier = ?")
        params.append(tier)
    if types is not None:
        type_list = _as_list(types, "types")
        if not type_list:
            conditions.append("FALSE")
        else:
            conditions.append(f"i.type IN ({', '.join('?' * len(type_list))})")
            params.extend(type_list)
    return "WHERE " + " AND ".join(conditions), params


def _items_table(items: list[MemoryItem]) -> pa.Table:
    """Validated items as an arrow table in the `items` column layout."""
    with _gc_paused():
        return _build_items_table(items)


def _build_items_table(items: list[MemoryItem]) -> pa.Table:
    encode = msgspec.json.encode
    columns: dict[str, list[Any]] = {
        "id": [i.id for i in items],
        "tier": [i.tier for i in items],
        "type": [i.type for i in items],
        "title": [i.title for i in items],
        "content": [i.content for i in items],
        "scope_kind": [i.scope.kind for i in items],
        "user_id": [i.scope.user_id for i in items],
        "project_id": [i.scope.project_id for i in items],
        "session_id": [i.scope.session_id for i in items],
        "org_id": [i.scope.org_id for i in items],
        "tags": [i.tags for i in items],
        "entities": [i.entities for i in items],
        "provenance": [encode(i.provenance).decode("utf-8") for i in items],
        "confidence": [i.confidence for i in items],
        "importance": [i.importance for i in items],
        "validation": [i.validation for i in items],
        "valid_from": [i.valid_from for i in items],
        "valid_to": [i.valid_to for i in items],
        "created_at": [i.created_at for i in items],
        "updated_at": [i.updated_at for i in items],
        "expires_at": [i.expires_at for i in items],
        "usage_count": [i.usage_count for i in items],
        "last_used_at": [i.last_used_at for i in items],
        "superseded_by": [i.superseded_by for i in items],
        "archived": [i.archived for i in items],
        "content_hash": [i.content_hash or item_content_hash(i.title, i.content) for i in items],
        "metadata": [encode(i.metadata).decode("utf-8") for i in items],
    }
    return pa.Table.from_pydict(columns, schema=_ITEM_SCHEMA)


_PROVENANCE_DECODER = msgspec.json.Decoder(Provenance)
_ITEMS_DECODER = msgspec.json.Decoder(list[MemoryItem])
_DICT_DECODER = msgspec.json.Decoder(dict)


def _rows_to_items(rows: list[tuple], links: list[tuple]) -> dict[str, MemoryItem]:
    with _gc_paused():
        return _build_items(rows, links)


def _build_items(rows: list[tuple], links: list[tuple]) -> dict[str, MemoryItem]:
    by_src: dict[str, list[Link]] = {}
    for src, rel, dst in links:
        by_src.setdefault(src, []).append(Link(rel=rel, to=dst))
    out: dict[str, MemoryItem] = {}
    for r in rows:
        (id_, tier, type_, title, content, scope_kind, user_id, project_id, session_id, org_id,
         tags, entities, provenance, confidence, importance, validation, valid_from, valid_to,
         created_at, updated_at, expires_at, usage_count, last_used_at, superseded_by,
         archived, content_hash, metadata) = r  # fmt: skip
        out[id_] = MemoryItem(
            id=id_,
            tier=tier,
            type=type_,
            title=title,
            content=content,
            scope=Scope(
                kind=scope_kind,
                user_id=user_id,
                project_id=project_id,
                session_id=session_id,
                org_id=org_id,
            ),  # fmt: skip
            tags=list(tags),
            entities=list(entities),
            links=by_src.get(id_, []),
            provenance=_PROVENANCE_DECODER.decode(provenance),
            confidence=float(confidence),
            importance=int(importance),
            validation=validation,
            valid_from=valid_from,
            valid_to=valid_to,
            created_at=created_at,
            updated_at=updated_at,
            expires_at=expires_at,
            usage_count=int(usage_count),
            last_used_at=last_used_at,
            superseded_by=superseded_by,
            archived=bool(archived),
            content_hash=content_hash,
            metadata=_DICT_DECODER.decode(metadata),
        )
    return out
