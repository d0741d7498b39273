"""Landing inbox events: chat turns and governed proposals (idempotent by their ids), the
landed-event ledger and the ingestion watermark."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from pipelines.records import ChatTurn, Event, utcnow
from pipelines.warehouse.connection import (
    STRING,
    WarehouseConnection,
    as_list,
    check_id,
    check_seq,
    ids_table,
    to_json,
)

INBOX_SEQ_KEY = "inbox_seq"
SWEEP_PENDING, SWEEP_DONE = "pending", "done"  # a one-off sweep a migration marks (`sweep_pending`)

# (column, arrow type, default or _REQUIRED, stored as JSON) for the landed tables.
_REQUIRED = object()
_ColumnSpec = tuple[tuple[str, pa.DataType, Any, bool], ...]
_CHAT_TURN_COLUMNS: _ColumnSpec = (
    ("turn_id", STRING, _REQUIRED, False),
    ("event_id", STRING, None, False),
    ("inbox_seq", pa.int64(), None, False),
    ("user_id", STRING, "default", False),
    ("project_id", STRING, "default", False),
    ("session_id", STRING, "default", False),
    ("org_id", STRING, "default", False),
    ("role", STRING, _REQUIRED, False),
    ("text", STRING, _REQUIRED, False),
    ("turn_ref", STRING, None, False),
    ("speaker", STRING, None, False),
    ("at", STRING, _REQUIRED, False),
)
_PROPOSAL_COLUMNS: _ColumnSpec = (
    ("proposal_id", STRING, _REQUIRED, False),
    ("event_id", STRING, None, False),
    ("inbox_seq", pa.int64(), None, False),
    ("turn_id", STRING, None, False),
    ("user_id", STRING, None, False),
    ("project_id", STRING, None, False),
    ("session_id", STRING, None, False),
    ("org_id", STRING, None, False),
    ("form", STRING, _REQUIRED, False),
    ("proposal", STRING, _REQUIRED, True),
    ("action", STRING, _REQUIRED, False),
    ("reasons", pa.list_(STRING), (), False),
    ("rule_ids", pa.list_(STRING), (), False),
    ("policy_version", STRING, "", False),
    ("item_id", STRING, None, False),
    ("at", STRING, _REQUIRED, False),
)


def _chat_turn_row(turn: ChatTurn) -> dict[str, Any]:
    """A `chat_turns` row for a ChatTurn (identity flattened)."""
    who = turn.identity
    return {
        "turn_id": turn.turn_id, "user_id": who.user_id, "project_id": who.project_id,
        "session_id": who.session_id, "org_id": who.org_id, "role": turn.role, "text": turn.text,
        "turn_ref": turn.turn_ref, "speaker": turn.speaker, "at": turn.at,
    }  # fmt: skip


class Landing(WarehouseConnection):
    def put_chat_turns(self, rows: Sequence[ChatTurn | Mapping[str, Any]]) -> int:
        """Land chat turns (idempotent by turn_id); returns how many were new. Rows are
        mappings of the table's columns or `ChatTurn` records."""
        converted = [
            _chat_turn_row(r) if isinstance(r, ChatTurn) else r for r in as_list(rows, "rows")
        ]
        return self._put_rows("chat_turns", _CHAT_TURN_COLUMNS, converted)

    def put_proposals(self, rows: Sequence[Mapping[str, Any]]) -> int:
        """Land governed proposals (idempotent by proposal_id); returns how many were new.
        `proposal` may be a dict (stored as JSON) or a JSON string."""
        return self._put_rows("proposals", _PROPOSAL_COLUMNS, as_list(rows, "rows"))

    def _put_rows(self, table: str, spec: _ColumnSpec, rows: list[Any]) -> int:
        self._writable()
        if not rows:
            return 0
        staged_table = _rows_table(table, spec, rows)
        names = [c[0] for c in spec]
        key = names[0]
        cols = ", ".join(f'"{n}"' for n in names)
        with self.transaction(), self._staged(staged_table) as staged:
            before = self._sql(f"SELECT count(*) FROM {table}")[0][0]
            self._sql(
                f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {staged} s "
                f"WHERE s.{key} NOT IN (SELECT {key} FROM {table})"
            )
            after = self._sql(f"SELECT count(*) FROM {table}")[0][0]
        return int(after - before)

    # -- the watermark and the landed-event ledger ---------------------------------------

    def last_ingested_seq(self) -> int:
        rows = self.query("SELECT value FROM ingest_state WHERE key = ?", [INBOX_SEQ_KEY])
        return int(rows[0][0]) if rows else 0

    def store_id(self) -> str:
        """This store's id (`sql/migrations/008_store_id.sql`): named in every snapshot it
        publishes, so two stores never publish into one snapshots folder."""
        rows = self.query("SELECT value FROM ingest_state WHERE key = 'store_id'")
        return str(rows[0][0]) if rows else ""

    def set_last_ingested_seq(self, seq: int, *, allow_rewind: bool = False) -> None:
        """Move the ingestion watermark; moving it back needs allow_rewind=True."""
        self._writable()
        check_seq(seq, "seq")
        with self.transaction():
            current = self.last_ingested_seq()
            if seq < current and not allow_rewind:
                raise ValueError(f"ingestion watermark {current} cannot move back to {seq}")
            self._sql("DELETE FROM ingest_state WHERE key = ?", [INBOX_SEQ_KEY])
            self._sql(
                "INSERT INTO ingest_state VALUES (?, ?, ?)", [INBOX_SEQ_KEY, str(seq), utcnow()]
            )

    def sweep_pending(self, key: str) -> bool:
        """Whether a migration marked the one-off sweep `key` (an `ingest_state` row
        'pending') and no run has made it yet (`finish_sweep`)."""
        rows = self.query("SELECT value FROM ingest_state WHERE key = ?", [key])
        return bool(rows) and rows[0][0] == SWEEP_PENDING

    def finish_sweep(self, key: str) -> None:
        """Record the one-off sweep `key` as made."""
        self._writable()
        self._sql("UPDATE ingest_state SET value = ?, updated_at = ? WHERE key = ?", [SWEEP_DONE, utcnow(), key])

    def mark_landed(self, events: Sequence[Event]) -> int:
        """Record inbox events as landed (idempotent); returns how many were new."""
        self._writable()
        evs = as_list(events, "events")
        for e in evs:
            if not isinstance(e, Event):
                raise TypeError(f"mark_landed takes Event records, not {type(e).__name__}")
        if not evs:
            return 0
        unique = list({e.event_id: e for e in reversed(evs)}.values())  # first occurrence wins
        now = utcnow()
        table = pa.table(
            {
                "event_id": pa.array([e.event_id for e in unique], STRING),
                "seq": pa.array([e.seq for e in unique], pa.int64()),
                "kind": pa.array([e.kind for e in unique], STRING),
                "at": pa.array([e.at for e in unique], STRING),
                "landed_at": pa.array([now] * len(unique), STRING),
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

    def landed_ids(self, event_ids: Sequence[str]) -> set[str]:
        ids = as_list(event_ids, "event_ids")
        if not ids:
            return set()
        for i in ids:
            check_id(i, "event_id")
        with self.transaction(), self._staged(ids_table(ids)) as staged:
            rows = self._sql(
                f"SELECT l.event_id FROM landed_events l JOIN {staged} s ON s.id = l.event_id"
            )
        return {r[0] for r in rows}


def _rows_table(table: str, spec: _ColumnSpec, rows: list[Any]) -> pa.Table:
    """Rows (mappings) as an Arrow table of `spec`'s columns: defaults filled, JSON
    columns encoded, the first row of a key kept (like the stored one)."""
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
        check_id(row.get(key), key)
        if row[key] in seen:
            continue
        seen.add(row[key])
        for name, _, default, is_json in spec:
            value = row.get(name, default)
            if value is _REQUIRED:
                raise ValueError(f"{table} row {row[key]!r} lacks {name!r}")
            if is_json and not isinstance(value, str):
                value = to_json(value)
            columns[name].append(list(value) if isinstance(value, tuple) else value)
    try:
        return pa.table({name: pa.array(columns[name], type=dtype) for name, dtype, _, _ in spec})
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ValueError(f"invalid {table} rows: {exc}") from exc
