"""The inbox in PostgreSQL: the store several service replicas and the pipeline share.

Same interface and guarantees as the SQLite inbox (`pipelines.inbox`); chosen by
`inbox_url = "postgresql://..."`. One table, `loci_inbox_events` (created on first open):
one row per event, `seq` its primary key, `event_id` unique.

Why no PostgreSQL sequence: a sequence hands out numbers outside the transaction, so a
rolled-back append leaves a gap, and two appends that commit in the other order than they
drew their numbers become visible out of order (a reader with watermark 7 that sees 8
before 7 commits would skip 7 for ever). An append here first takes a transaction-level
advisory lock (`pg_advisory_xact_lock`), then reads `max(seq)` (the primary key's last
entry) and inserts the next seqs in the same transaction. PostgreSQL releases the lock only
after the commit is visible to every new snapshot, so the next append reads the previous
one's seqs; a rollback inserts nothing. Seqs are therefore gap-free and become visible in
seq order, and the idempotence check (look the ids up before inserting) is race-free under
the same lock. (A counter row updated by every append would do the same, but its dead
versions pile up between vacuums and slow every append that waits for it.)

Durability: the append returns after COMMIT, which PostgreSQL acknowledges once the commit
record is flushed (`synchronous_commit`, on by default; a server configured otherwise
weakens this guarantee, and `PostgresInbox.synchronous_commit()` reports it).

Connections come from a `psycopg_pool.ConnectionPool` (thread-safe; a forked child opens
its own pool on first use). Errors: as the SQLite inbox — `InboxError` for a closed inbox
or a server that cannot be reached or written.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import msgspec
import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from pipelines.inbox import (
    EVENT_COLUMNS,
    SHARED_VECTOR_TTL_S,
    AppendCheck,
    InboxBackend,
    InboxError,
    as_list,
    event_rows,
    events_table_sql,
    is_postgres_url,
    normalise_event,
    read_after_sql,
    row_to_event,
)
from pipelines.records import Event, utcnow

EVENTS = "loci_inbox_events"
VECTORS = "loci_inbox_vectors"  # `share_vectors`: a cache beside the log
_SCHEMA = [
    events_table_sql(EVENTS, seq="BIGINT PRIMARY KEY", json_check="payload::json IS NOT NULL"),
    f"CREATE INDEX IF NOT EXISTS {EVENTS}_kind_seq ON {EVENTS} (kind, seq)",
    f"""CREATE TABLE IF NOT EXISTS {VECTORS} (
        key         TEXT PRIMARY KEY,
        vec         BYTEA NOT NULL,
        shared_at   DOUBLE PRECISION NOT NULL
    )""",
    f"CREATE INDEX IF NOT EXISTS {VECTORS}_shared_at ON {VECTORS} (shared_at)",
]
# Any constants: concurrent first opens create the schema one at a time (CREATE TABLE IF
# NOT EXISTS alone races on PostgreSQL's catalog); appends take the append lock.
_SCHEMA_LOCK_KEY = 0x10C1_1B0C
_APPEND_LOCK_KEY = 0x10C1_1B0D
# A request that waits this long for a pooled connection checks whether the server answers
# at all: down, it fails now with the server's reason instead of after `busy_timeout_s`.
REACH_CHECK_AFTER_S = 2.0
# The server is up but every connection slot is taken: busy, not down. libpq reports a
# refused connection without its SQLSTATE (53300), so the server's words are matched too.
SERVER_FULL = ("too many clients", "connection slots are reserved")
_INSERT = (
    f"INSERT INTO {EVENTS} (seq, event_id, kind, user_id, project_id, session_id, org_id, at, "
    "payload, sha256, appended_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


class PostgresInbox(InboxBackend):
    """Append-only event log in one PostgreSQL database (see the module docstring)."""

    def __init__(self, url: str, *, busy_timeout_s: float = 30.0, max_connections: int = 8) -> None:
        if not is_postgres_url(url):
            raise ValueError("a PostgreSQL inbox URL starts with postgresql:// or postgres://")
        if busy_timeout_s <= 0:
            raise ValueError("busy_timeout_s must be positive")
        if max_connections < 1:
            raise ValueError("max_connections must be >= 1")
        self.url = url
        self.busy_timeout_s = float(busy_timeout_s)
        self.max_connections = int(max_connections)
        self._closed = False
        self._guard = threading.Lock()
        self._probe_lock = threading.Lock()
        self._probed_at, self._probe_error = float("-inf"), None
        self._pid = os.getpid()
        self._pool: ConnectionPool | None = None
        # One direct connection first: an unreachable server or a bad URL is reported at
        # once with the server's own message (a pool would retry until its timeout).
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(self.busy_timeout_s))) as con:
                with con.transaction():
                    con.execute("SELECT pg_advisory_xact_lock(%s)", [_SCHEMA_LOCK_KEY])
                    for statement in _SCHEMA:
                        con.execute(statement)
        except psycopg.Error as exc:
            self._closed = True
            raise InboxError(f"cannot open the inbox {self.where}: {exc}") from exc

    # -- connections -------------------------------------------------------------------

    @property
    def where(self) -> str:
        """The URL without its password, for messages."""
        try:
            info = psycopg.conninfo.conninfo_to_dict(self.url)
        except psycopg.ProgrammingError:
            return "postgresql://?"
        user, host, port, db = (info.get(k, "") for k in ("user", "host", "port", "dbname"))
        return f"postgresql://{user}@{host}:{port}/{db}"

    def _get_pool(self) -> ConnectionPool:
        if self._closed:
            raise InboxError(f"the inbox {self.where} is closed")
        with self._guard:
            if os.getpid() != self._pid:  # forked child: never use the parent's connections
                self._pid, self._pool = os.getpid(), None
            if self._pool is not None:
                return self._pool
        # A new pool (first use, or after an outage): a server that is down is said now, not
        # after the pool's open timeout, and not while holding the guard.
        self._check_reachable()
        with self._guard:
            if self._pool is None:
                self._pool = ConnectionPool(
                    self.url, min_size=1, max_size=self.max_connections, timeout=self.busy_timeout_s,
                    kwargs={"autocommit": True}, open=False, name="loci-inbox",
                    # A connection the server dropped (restart, failover) is replaced before
                    # use instead of failing one request.
                    check=ConnectionPool.check_connection,
                )
                try:
                    self._pool.open(wait=True, timeout=self.busy_timeout_s)
                except (PoolTimeout, psycopg.Error) as exc:
                    self._pool.close()
                    self._pool = None
                    raise InboxError(f"cannot open the inbox {self.where}: {exc}") from exc
            return self._pool

    def _forget_pool(self, pool: ConnectionPool) -> None:
        """The server did not answer: a new pool for the next request. This one's own
        reconnection backs off (1 s, 2 s, 4 s, ...) and would serve again long after the
        server is back; a connection still lent out is closed when it is returned."""
        with self._guard:
            if self._pool is pool:
                self._pool = None
        threading.Thread(target=pool.close, name="loci-inbox-pool-close", daemon=True).start()

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection (as `ConnectionPool.connection`). Every connection busy: wait up
        to `busy_timeout_s`; but a pool with nothing to give because the server is down (its
        connections dropped, new ones refused) is reported after REACH_CHECK_AFTER_S."""
        pool = self._get_pool()
        first_wait = min(self.busy_timeout_s, REACH_CHECK_AFTER_S)
        try:
            con = pool.getconn(timeout=first_wait)
        except PoolTimeout:
            try:
                self._check_reachable()
            except InboxError:
                self._forget_pool(pool)
                raise
            try:
                con = pool.getconn(timeout=max(self.busy_timeout_s - first_wait, 0.001))
            except PoolTimeout as exc:
                raise InboxError(f"inbox {self.where}: no connection within {self.busy_timeout_s}s") from exc
        try:
            with con:
                yield con
        finally:
            pool.putconn(con)

    def _check_reachable(self) -> None:
        """InboxError with the server's own answer unless a new connection opens now. One
        probe at a time, its answer shared with the requests that waited for it ("up" for a
        second): requests that all wait under load must not add a connection each (and a
        full server is busy, not down)."""
        asked = time.monotonic()
        with self._probe_lock:
            if not (self._probed_at >= asked or (self._probe_error is None and asked - self._probed_at < 1.0)):
                self._probe_error = None
                try:
                    with psycopg.connect(self.url, autocommit=True,
                                         connect_timeout=max(2, int(REACH_CHECK_AFTER_S))):
                        pass
                except psycopg.Error as exc:
                    if getattr(exc, "sqlstate", None) != "53300" and not any(m in str(exc) for m in SERVER_FULL):
                        self._probe_error = f"inbox {self.where}: the server cannot be reached: {exc}"
                self._probed_at = time.monotonic()
            if self._probe_error is not None:
                raise InboxError(self._probe_error)

    def _query(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        try:
            with self._connection() as con:
                return con.execute(sql, list(params)).fetchall()
        except (psycopg.Error, PoolTimeout) as exc:
            raise InboxError(f"inbox {self.where}: read failed: {exc}") from exc

    def synchronous_commit(self) -> str:
        """The server's `synchronous_commit` ("on" unless configured otherwise)."""
        return str(self._query("SHOW synchronous_commit", [])[0][0])

    # -- writing -----------------------------------------------------------------------

    def append(self, events: Sequence[Event], *, check: AppendCheck | None = None) -> list[Event]:
        normalised = [normalise_event(e) for e in as_list(events, "events")]
        if not normalised:
            return []
        rows = event_rows(normalised, utcnow())
        try:
            with self._connection() as con, con.transaction():
                # The append lock serialises appends (module docstring): seqs are gap-free,
                # follow commit order, and the id lookup below cannot race.
                con.execute(f"SET LOCAL lock_timeout = {int(self.busy_timeout_s * 1000)}")  # wait, not for ever
                con.execute("SELECT pg_advisory_xact_lock(%s)", [_APPEND_LOCK_KEY])
                last = int(con.execute(f"SELECT coalesce(max(seq), 0) FROM {EVENTS}").fetchone()[0])
                ids = sorted({e.event_id for e in normalised})
                stored = {
                    r[1]: row_to_event(r)
                    for r in con.execute(f"SELECT {EVENT_COLUMNS} FROM {EVENTS} WHERE event_id = ANY(%s)", [ids])
                }
                if check is not None:
                    check([stored.get(e.event_id) for e in normalised])
                out: list[Event] = []
                new_rows: list[tuple] = []
                for event, row in zip(normalised, rows):
                    known = stored.get(event.event_id)
                    if known is not None:
                        out.append(known)
                        continue
                    last += 1
                    new_rows.append((last, *row))
                    known = msgspec.structs.replace(event, seq=last)
                    stored[event.event_id] = known  # a duplicate later in the batch
                    out.append(known)
                if new_rows:
                    with con.cursor() as cur:
                        cur.executemany(_INSERT, new_rows)
        except (psycopg.Error, PoolTimeout) as exc:
            # Not acknowledged. If the connection died during COMMIT the events may be
            # stored all the same: a retry with the same event ids returns them as stored.
            raise InboxError(f"inbox {self.where}: append failed: {exc}") from exc
        return out

    def share_vectors(self, vectors: Mapping[str, bytes]) -> None:
        if not vectors:
            return
        now = time.time()
        rows = [(str(k), bytes(v), now) for k, v in vectors.items()]
        try:
            with self._connection() as con, con.transaction():
                with con.cursor() as cur:
                    cur.executemany(f"INSERT INTO {VECTORS} (key, vec, shared_at) VALUES (%s, %s, %s) "
                                    "ON CONFLICT (key) DO NOTHING", rows)
                con.execute(f"DELETE FROM {VECTORS} WHERE shared_at < %s", [now - SHARED_VECTOR_TTL_S])
        except (psycopg.Error, PoolTimeout) as exc:
            raise InboxError(f"inbox {self.where}: sharing vectors failed: {exc}") from exc

    # -- reading -----------------------------------------------------------------------

    def shared_vectors(self, keys: Sequence[str]) -> dict[str, bytes]:
        rows = self._query(f"SELECT key, vec FROM {VECTORS} WHERE key = ANY(%s)", [[str(k) for k in keys]])
        return {k: bytes(v) for k, v in rows}

    def _read_after(self, seq: int, limit: int | None, kinds: list[str] | None) -> list[Event]:
        return [row_to_event(r) for r in self._query(*read_after_sql(EVENTS, "%s", seq, limit, kinds))]

    def max_seq(self) -> int:
        return int(self._query(f"SELECT coalesce(max(seq), 0) FROM {EVENTS}", [])[0][0])

    def _get_event(self, event_id: str) -> Event | None:
        rows = self._query(f"SELECT {EVENT_COLUMNS} FROM {EVENTS} WHERE event_id = %s", [event_id])
        return row_to_event(rows[0]) if rows else None

    def count(self) -> int:
        return int(self._query(f"SELECT count(*) FROM {EVENTS}", [])[0][0])

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        with self._guard:
            self._closed = True
            pool, self._pool = self._pool, None
            mine = self._pid == os.getpid()
        if pool is not None and mine:
            pool.close()

    def __repr__(self) -> str:
        return f"PostgresInbox({self.where!r}{', closed' if self._closed else ''})"
