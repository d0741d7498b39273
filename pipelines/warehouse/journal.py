"""Item rows and their history: the item-row codec of the `items` table, and the writes
every item mutation is made of (new item rows, a revision per changed item, links, and
the audit `events` rows), always inside the caller's transaction."""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from typing import Any

import msgspec
import pyarrow as pa

from pipelines.item_rows import ItemRowCodec
from pipelines.message_context import embedding_hash
from pipelines.records import Link, LinkRel, MemoryItem, sha256_text
from pipelines.warehouse.connection import (
    STRING,
    UnknownItemError,
    WarehouseConnection,
    check_id,
    ids_table,
    to_json,
)

LINK_RELS: frozenset[str] = frozenset(LinkRel.__args__)  # type: ignore[attr-defined]

# The `items` table: scope flattened into its owner columns, links in their own table.
ITEM_ROWS = ItemRowCodec(flatten={"scope": {"kind": "scope_kind"}}, omit=("links",), native_lists=True)
ITEM_COLUMNS: tuple[str, ...] = ITEM_ROWS.columns
ITEM_SELECT = ", ".join(f"i.{c}" for c in ITEM_COLUMNS)
# SQL conditions over `items i`: the item is served (neither archived nor superseded); it has a
# revision written at or after the bound time (its text, context or location can have changed).
ACTIVE_SQL = "NOT i.archived AND i.superseded_by IS NULL"
WRITTEN_SINCE_SQL = "i.id IN (SELECT item_id FROM revisions WHERE changed_at >= ?)"

def items_narrowed(where: str) -> str:
    """`items i` narrowed to the rows `where` (a WHERE clause over `items i`) selects, the rows
    found first and their other columns read by row id: a scan that filters and selects wide
    columns (text, JSON) in one reads those columns for every row of the store."""
    return f"items i JOIN (SELECT i.rowid AS row_ FROM items i {where}) narrowed_ ON i.rowid = narrowed_.row_"


def revision_text_hash(item: MemoryItem) -> str:
    """The text a revision records, as one hash: what the write policy reads and the
    embedder embeds (title and content by their hash, a message's retrieval context, tags,
    entities). Equal hashes: the revision kept the text."""
    return sha256_text(msgspec.json.encode([embedding_hash(item), item.tags, item.entities]).decode())


_ORIGIN_FIELDS = [("actor", STRING), ("inbox_seq", pa.int64()), ("requested_at", STRING)]
_EVENT_SCHEMA = pa.schema(
    [("action", STRING), ("item_id", STRING), ("details", STRING), ("content_sha256", STRING),
     ("at", STRING), *_ORIGIN_FIELDS]
)  # fmt: skip
_REVISION_SCHEMA = pa.schema(
    [("revision_id", STRING), ("item_id", STRING), ("revision_num", pa.int32()),
     ("snapshot", STRING), ("changed_at", STRING), ("reason", STRING), *_ORIGIN_FIELDS,
     ("text_hash", STRING)]
)  # fmt: skip
_LINK_SCHEMA = pa.schema(
    [("src_id", STRING), ("dst_id", STRING), ("rel", STRING), ("created_at", STRING)]
)

EventRow = tuple[str, "str | None", dict[str, Any], str]  # action, item_id, details, sha256


class Origin(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Who asked for a change and when: the caller's user id, the inbox event's sequence
    number and time. Pipeline work (merges, promotion, aging) has no origin."""

    actor: str | None = None
    inbox_seq: int | None = None
    requested_at: str | None = None


Origins = Origin | Sequence[Origin | None] | None  # one for every row, or one per row


def check_origin(origin: Any) -> None:
    if origin is not None and not isinstance(origin, Origin):
        raise TypeError(f"origin must be an Origin or None, not {type(origin).__name__}")
    seq = getattr(origin, "inbox_seq", None)
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int)):
        raise TypeError(f"inbox_seq must be an int or None, not {type(seq).__name__}")


def _origin_columns(origins: Origins, n: int) -> dict[str, list[Any]]:
    per_row = list(origins) if isinstance(origins, Sequence) else [origins] * n
    for origin in per_row:
        check_origin(origin)
    empty = Origin()
    return {
        name: [getattr(o or empty, name) for o in per_row] for name, _ in _ORIGIN_FIELDS
    }


class ItemJournal(WarehouseConnection):
    """Low-level item writes; callers hold a transaction and have validated arguments."""

    def _text_changed_ids(self, since: str, *, compare_unhashed: bool = True) -> list[str]:
        """Ids (sorted) of the items created at or after `since`, or revised since and now
        saying something else than at their last revision before it (`revision_text_hash`).
        Read from the small columns: a revision's JSON is decoded only for revisions written
        before `text_hash` existed, and only with `compare_unhashed` (else such an item
        counts as changed). Call inside a transaction."""
        pairs = self._sql(
            "WITH touched AS (SELECT item_id, max(revision_num) AS last_num FROM revisions "
            "WHERE changed_at >= ? GROUP BY item_id), "
            "before AS (SELECT r.item_id, max(r.revision_num) AS num FROM revisions r "
            "SEMI JOIN touched s ON s.item_id = r.item_id WHERE r.changed_at < ? GROUP BY r.item_id) "
            "SELECT t.item_id, t.last_num, b.num, rl.text_hash, rb.text_hash FROM touched t "
            "LEFT JOIN before b ON b.item_id = t.item_id "
            "LEFT JOIN revisions rl ON rl.item_id = t.item_id AND rl.revision_num = t.last_num "
            "LEFT JOIN revisions rb ON rb.item_id = b.item_id AND rb.revision_num = b.num "
            # Items whose two hashes agree are unchanged: dropped here, not in Python (after a
            # bulk import every item is touched since, by its palace revision: 100k rows).
            "WHERE b.num IS NULL OR rl.text_hash IS NULL OR rb.text_hash IS NULL OR rl.text_hash <> rb.text_hash "
            "ORDER BY 1",
            [since, since])
        unhashed = {f"{item}#{last}": f"{item}#{num}" for item, last, num, now, then in pairs
                    if num is not None and (now is None or then is None)}
        text = self._revision_text([*unhashed, *unhashed.values()]) if compare_unhashed else {}

        def changed(item: str, last: int, num: int | None, now: str | None, then: str | None) -> bool:
            if num is None:
                return True  # created since
            if now is not None and then is not None:
                return now != then
            return not compare_unhashed or text.get(f"{item}#{last}") != text.get(f"{item}#{num}")

        return [row[0] for row in pairs if changed(*row)]

    def _revision_text(self, revision_ids: Sequence[str]) -> dict[str, tuple[Any, ...]]:
        """revision id -> (content_hash, tags, entities) as stored in its snapshot JSON."""
        fields = ", ".join(f"json_extract_string(snapshot, '$.{f}')" for f in ("content_hash", "tags", "entities"))
        out: dict[str, tuple[Any, ...]] = {}
        ids = list(dict.fromkeys(revision_ids))
        for start in range(0, len(ids), 1000):
            chunk = ids[start:start + 1000]
            # A literal IN list (one parameter per key) is answered from the primary-key index.
            rows = self._sql(f"SELECT revision_id, {fields} FROM revisions "
                             f"WHERE revision_id IN ({', '.join('?' * len(chunk))})", chunk)
            out.update((r[0], tuple(r[1:])) for r in rows)
        return out

    def _load_items(self, ids: list[str]) -> dict[str, MemoryItem]:
        if not ids:
            return {}
        with self._staged(ids_table(ids)) as staged:
            found = self._items_where(f"JOIN {staged} s ON s.id = i.id", "s.ord", [])
        missing = [i for i in dict.fromkeys(ids) if i not in found]
        if missing:
            # Inside a transaction that changed some rows, DuckDB 2.0's fetch by row id can miss
            # rows that it did not change (seen when an edit and a usage count of another item
            # were stored in one consolidation: "unknown item ids", the run failed). Missing
            # ids are read again by id, the primary key.
            with self._staged(ids_table(missing)) as staged:
                table = self._arrow(f"SELECT {ITEM_SELECT} FROM items i JOIN {staged} s ON s.id = i.id "
                                    "ORDER BY s.ord")
            again = {item.id: item for item in self._with_links(table)}
            found = {i: found.get(i) or again[i] for i in ids if i in found or i in again}
        return found

    def _items_where(self, join_where: str, order: str, params: list[Any]) -> dict[str, MemoryItem]:
        """Items selected by `join_where` (a JOIN and/or WHERE clause over `items i`), with
        their links, keyed by id in `order`."""
        # Rows found first (row ids and the order key: only the columns the selection reads),
        # then their columns fetched by row id. Selecting every column in the filtering scan
        # makes DuckDB read every column of every row to return a few (0.07 CPU-s for 2k of
        # 108k items, 0.015 this way).
        table = self._arrow(
            f"WITH hit AS MATERIALIZED (SELECT i.rowid AS row_, {order} AS ord_ FROM items i {join_where}) "
            f"SELECT {ITEM_SELECT} FROM items i JOIN hit h ON i.rowid = h.row_ ORDER BY h.ord_", params)
        return {item.id: item for item in self._with_links(table)}

    def _with_links(self, table: pa.Table) -> list[MemoryItem]:
        """The items of an arrow table of ITEM_SELECT rows, with their links."""
        ids = table.column("id").to_pylist()
        by_src: dict[str, list[Link]] = {}
        if ids:
            # Links of the rows found, not of `join_where` evaluated again: a selective
            # predicate (JSON fields, revisions since a time) costs a scan of the store.
            with self._staged(ids_table(ids)) as staged:
                links = self._sql(
                    f"SELECT l.src_id, l.rel, l.dst_id FROM links l JOIN {staged} s ON s.id = l.src_id "
                    "ORDER BY l.src_id, l.created_at, l.rel, l.dst_id"
                )
            for src, rel, dst in links:
                by_src.setdefault(src, []).append(Link(rel=rel, to=dst))
        # Every stored row was validated on its way in (put_items, _patched): no re-check.
        links_of = [by_src.get(i, []) for i in ids]
        return ITEM_ROWS.from_table(table, {"links": links_of}, validate=False)

    def _require_items(self, ids: list[str], *, load: bool = True) -> dict[str, MemoryItem]:
        for i in ids:
            check_id(i, "item id")
        unique = list(dict.fromkeys(ids))
        if load:
            found = self._load_items(unique)
            present = set(found)
        else:
            found = {}
            present = set(self._stored_hashes(unique))
        check_all_stored(unique, present)
        return found

    def _stored_hashes(self, ids: list[str]) -> dict[str, str]:
        with self._staged(ids_table(ids)) as staged:
            rows = self._sql(
                f"SELECT i.id, i.content_hash FROM items i JOIN {staged} s ON s.id = i.id"
            )
        return dict(rows)

    def _insert_item_rows(self, items: list[MemoryItem]) -> None:
        with self._staged(ITEM_ROWS.to_table(items)) as staged:
            cols = ", ".join(ITEM_COLUMNS)
            self._sql(f"INSERT INTO items ({cols}) SELECT {cols} FROM {staged}")

    def _write_changes(
        self,
        changes: list[tuple[MemoryItem, MemoryItem]],
        reason: str,
        action: str,
        details: list[dict[str, Any]],
        now: str,
        origin: Origin | None,
    ) -> None:
        """Replace item rows with their new versions, then revision + event each."""
        if not changes:
            return
        news = [new for _, new in changes]
        assignments = ", ".join(f"{c} = s.{c}" for c in ITEM_COLUMNS if c != "id")
        with self._staged(ITEM_ROWS.to_table(news)) as staged:
            self._sql(f"UPDATE items SET {assignments} FROM {staged} s WHERE items.id = s.id")
        latest = self._latest_revisions([n.id for n in news])
        self._insert_revisions([(n, latest.get(n.id, 0) + 1) for n in news], reason, now, origin)
        self._insert_events(
            [(action, n.id, d, n.content_hash) for n, d in zip(news, details)], now, origin
        )

    def _latest_revisions(self, ids: list[str]) -> dict[str, int]:
        with self._staged(ids_table(ids)) as staged:
            rows = self._sql(
                f"SELECT r.item_id, max(r.revision_num) FROM revisions r "
                f"JOIN {staged} s ON s.id = r.item_id GROUP BY r.item_id"
            )
        return {i: int(n) for i, n in rows}

    def _insert_revisions(
        self, rows: list[tuple[MemoryItem, int]], reason: str, now: str, origins: Origins
    ) -> None:
        table = pa.Table.from_pydict(
            {
                "revision_id": [f"{item.id}#{num}" for item, num in rows],
                "item_id": [item.id for item, _ in rows],
                "revision_num": [num for _, num in rows],
                "snapshot": [msgspec.json.encode(item).decode("utf-8") for item, _ in rows],
                "changed_at": [now] * len(rows),
                "reason": [reason] * len(rows),
                **_origin_columns(origins, len(rows)),
                "text_hash": [revision_text_hash(item) for item, _ in rows],
            },
            schema=_REVISION_SCHEMA,
        )
        with self._staged(table) as staged:
            cols = ", ".join(_REVISION_SCHEMA.names)
            self._sql(f"INSERT INTO revisions ({cols}) SELECT {cols} FROM {staged}")

    def _insert_links(
        self,
        links: list[tuple[str, str, str]],
        now: str,
        *,
        log: bool = False,
        origins: Origins = None,
    ) -> list[tuple[str, str, str]]:
        """Insert the links not yet stored; returns those (with `link` events if log).
        `origins`: one for all links, or one per link given."""
        per_link = dict(zip(links, origins)) if isinstance(origins, Sequence) else None
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
                [per_link[(s, d, r)] for s, d, r in new] if per_link is not None else origins,
            )  # fmt: skip
        return new

    def _insert_events(self, rows: list[EventRow], now: str, origins: Origins) -> None:
        """Append audit events (action, item_id, details, content_sha256)."""
        if not rows:
            return
        table = pa.Table.from_pydict(
            {
                "action": [r[0] for r in rows],
                "item_id": [r[1] for r in rows],
                "details": [to_json(r[2]) for r in rows],
                "content_sha256": [r[3] for r in rows],
                "at": [now] * len(rows),
                **_origin_columns(origins, len(rows)),
            },
            schema=_EVENT_SCHEMA,
        )
        cols = ", ".join(f'"{c}"' for c in _EVENT_SCHEMA.names)
        with self._staged(table) as staged:
            self._sql(f"INSERT INTO events ({cols}) SELECT {cols} FROM {staged}")


def check_all_stored(ids: Iterable[str], stored: Container[str]) -> None:
    """`UnknownItemError` naming the `ids` not among `stored`."""
    missing = [i for i in ids if i not in stored]
    if missing:
        raise UnknownItemError(f"unknown item ids: {missing[:5]} ({len(missing)} missing)")
