"""The inbox: the service's write-ahead log of events.

One interface (`InboxBackend`), two stores chosen by one setting (`open_inbox`):
- `Inbox` (also `SqliteInbox`), the embedded default: one SQLite file in WAL mode;
- `pipelines.inbox_postgres.PostgresInbox` when `inbox_url = "postgresql://..."`: one
  PostgreSQL database shared by several service replicas and the pipeline.

Both give the same guarantees, checked by the same tests (tests/pipelines/test_inbox.py):
- Every captured turn, policy decision and memory.* write is appended as an `Event` with a
  `seq`, and committed (durably) before `append` returns, so an acknowledged append
  survives a process kill.
- Appends are idempotent by `event_id`: appending an event id that is already stored
  returns the stored event with its original seq and stores nothing.
- Seqs are gap-free (1, 2, 3, ...) and become visible in seq order, so a reader that has
  seen seq N has seen every seq below it: the pipeline and the service consume the inbox
  with a watermark (`read_after(watermark)`).

SQLite concurrency:
- Several processes (service workers, the pipeline, the CLI) may open the same file and
  append at once: each append takes SQLite's write lock (`BEGIN IMMEDIATE`) and waits up to
  `busy_timeout_s` for it, so one append's events get consecutive seqs in commit order.
- Readers never wait for writers (WAL): `read_after` sees every committed append.
- Threads: an `Inbox` keeps one SQLite connection per thread (created on first use), so it
  may be shared by the threads of a process; `close()` closes them all. Do not share an
  open `Inbox` across `fork()`: the child opens its own connections on first use.

Errors: `TypeError` for arguments of the wrong type, `ValueError` for invalid events or
arguments (unknown kind, payload that is not JSON-serialisable, negative limit),
`InboxError` for a closed inbox or a database that cannot be opened or written.
"""

from __future__ import annotations

import abc
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from pipelines.records import Event, EventKind, Identity, utcnow

# Called by `append` under the write lock with what is already stored under each event's
# id (None where nothing is), before anything is written; what it raises aborts the append.
AppendCheck = Callable[[list["Event | None"]], None]
EVENT_KINDS: frozenset[str] = frozenset(EventKind.__args__)  # type: ignore[attr-defined]


def events_table_sql(table: str, *, seq: str, json_check: str) -> str:
    """The event log's table, the same in every store but for the type of `seq` (assigned
    by the store) and the SQL that checks that `payload` is JSON text."""
    return f"""CREATE TABLE IF NOT EXISTS {table} (
    seq         {seq},
    event_id    TEXT NOT NULL UNIQUE,
    kind        TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    project_id  TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    org_id      TEXT NOT NULL,
    at          TEXT NOT NULL,
    payload     TEXT NOT NULL CHECK ({json_check}),
    sha256      TEXT NOT NULL,
    appended_at TEXT NOT NULL
)"""


_SCHEMA = events_table_sql("events", seq="INTEGER PRIMARY KEY AUTOINCREMENT", json_check="json_valid(payload)") + """;
CREATE INDEX IF NOT EXISTS events_kind_seq ON events (kind, seq);
CREATE TABLE IF NOT EXISTS vectors (
    key         TEXT PRIMARY KEY,
    vec         BLOB NOT NULL,
    shared_at   REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_shared_at ON vectors (shared_at);
"""
# Shared vectors older than this are dropped when new ones are shared (a worker that still
# needs one embeds the text again).
SHARED_VECTOR_TTL_S = 7 * 86400.0
EVENT_COLUMNS = "seq, event_id, kind, user_id, project_id, session_id, org_id, at, payload, sha256"
_INSERT = (
    "INSERT INTO events (event_id, kind, user_id, project_id, session_id, org_id, at, "
    "payload, sha256, appended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class InboxError(RuntimeError):
    """The inbox is closed, or its database cannot be opened or written."""


class InboxBackend(abc.ABC):
    """The inbox interface (see the module docstring for the guarantees). Argument checks
    and event validation live here, so both stores refuse the same input the same way."""

    @abc.abstractmethod
    def append(self, events: Sequence[Event], *, check: AppendCheck | None = None) -> list[Event]:
        """Store `events` in one transaction, committed before returning. Returns them in
        input order with their seq (and the payload's sha256) set; an event whose id is
        already stored (earlier, or earlier in this batch) comes back as stored. `check`
        sees what is stored under the ids under the same lock (a retry told from a
        conflict without a race) and may refuse the whole append by raising."""

    def read_after(
        self, seq: int, *, limit: int | None = None, kinds: Sequence[str] | None = None
    ) -> list[Event]:
        """Committed events with seq > `seq`, in seq order; at most `limit`, only `kinds`."""
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise TypeError(f"seq must be an int, not {type(seq).__name__}")
        kind_list: list[str] | None = None
        if kinds is not None:
            kind_list = as_list(kinds, "kinds")
            unknown = sorted(set(kind_list) - EVENT_KINDS)
            if unknown:
                raise ValueError(f"unknown event kinds {unknown}; known: {sorted(EVENT_KINDS)}")
            if not kind_list:
                return []
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int):
                raise TypeError(f"limit must be an int or None, not {type(limit).__name__}")
            if limit < 0:
                raise ValueError("limit must be >= 0")
        return self._read_after(seq, limit, kind_list)

    @abc.abstractmethod
    def _read_after(self, seq: int, limit: int | None, kinds: list[str] | None) -> list[Event]:
        """`read_after` with checked arguments (`kinds` None = every kind, never empty)."""

    @abc.abstractmethod
    def max_seq(self) -> int:
        """The highest committed seq (0 when empty)."""

    def get(self, event_id: str) -> Event | None:
        if not isinstance(event_id, str):
            raise TypeError(f"event_id must be a str, not {type(event_id).__name__}")
        return self._get_event(event_id)

    @abc.abstractmethod
    def _get_event(self, event_id: str) -> Event | None: ...

    @abc.abstractmethod
    def count(self) -> int: ...

    @abc.abstractmethod
    def shared_vectors(self, keys: Sequence[str]) -> dict[str, bytes]:
        """Vectors another process shared under these keys (`share_vectors`); a key not
        shared (or dropped) is absent. A cache beside the log, never part of it: the
        service's workers use it to embed a written turn once, not once per worker."""

    @abc.abstractmethod
    def share_vectors(self, vectors: Mapping[str, bytes]) -> None:
        """Keep `vectors` (key -> raw float32 bytes) for other processes; a key already
        shared keeps its first vector. Committed on its own (losing it costs an embedding,
        nothing else); entries older than `SHARED_VECTOR_TTL_S` are dropped."""

    def append_sharing(self, events: Sequence[Event], vectors: Mapping[str, bytes], *,
                       check: AppendCheck | None = None) -> list[Event]:
        """`append(events, check=check)` with `vectors` shared as `share_vectors` does: a
        write and its items' vectors. The events are exactly as durable as with `append`.
        SQLite overrides this with one transaction (one commit and fsync instead of two;
        an append its check refuses shares nothing either: the vectors are a cache, losing
        them costs an embedding). This default, for the other stores: the vectors first, on
        their own (a failure to share them is not the write's), then the append."""
        if vectors:
            try:
                self.share_vectors(vectors)
            except InboxError:
                pass  # the workers folding the events embed them instead
        return self.append(events, check=check)

    @abc.abstractmethod
    def close(self) -> None:
        """Release every connection. Idempotent; any later call raises `InboxError`."""

    def __enter__(self) -> InboxBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Inbox(InboxBackend):
    """Append-only event log in one SQLite file (see the module docstring)."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 30.0) -> None:
        if not isinstance(path, (str, Path)):
            raise TypeError(f"inbox path must be str or Path, not {type(path).__name__}")
        if busy_timeout_s <= 0:
            raise ValueError("busy_timeout_s must be positive")
        self.path = Path(path)
        self.busy_timeout_s = float(busy_timeout_s)
        self._closed = False
        self._guard = threading.Lock()
        self._reset_connections()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InboxError(
                f"cannot create the inbox directory {self.path.parent}: {exc}"
            ) from exc
        try:
            self._with_retry(self._create_schema)
        except BaseException:
            self.close()
            raise

    # -- connections -------------------------------------------------------------------

    def _reset_connections(self) -> None:
        self._pid = os.getpid()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []

    def _connect(self) -> sqlite3.Connection:
        try:
            con = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_s,
                isolation_level=None,  # explicit BEGIN/COMMIT only
                check_same_thread=False,  # only so close() may close it from another thread
            )
            con.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            self._with_retry(lambda: self._enable_wal(con))
            con.execute("PRAGMA synchronous = FULL")  # fsync the WAL on every commit
        except sqlite3.Error as exc:
            raise InboxError(f"cannot open the inbox {self.path}: {exc}") from exc
        return con

    @staticmethod
    def _enable_wal(con: sqlite3.Connection) -> None:
        mode = con.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            mode = con.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise InboxError(f"the inbox could not switch to WAL (journal mode {mode})")

    def _con(self) -> sqlite3.Connection:
        if self._closed:
            raise InboxError(f"the inbox {self.path} is closed")
        if os.getpid() != self._pid:  # forked child: never reuse the parent's connections
            with self._guard:
                self._reset_connections()
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._connect()
            self._local.con = con
            with self._guard:
                self._connections.append(con)
        return con

    def _with_retry(self, action):
        """Run `action`, retrying while another process holds a lock that SQLite's busy
        handler does not wait for (switching to WAL, first schema creation)."""
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise InboxError(f"inbox {self.path}: {exc}") from exc
                if time.monotonic() > deadline:
                    raise InboxError(f"inbox {self.path} stayed locked: {exc}") from exc
                time.sleep(0.01)

    def _create_schema(self) -> None:
        con = self._con()
        con.execute("BEGIN IMMEDIATE")
        try:
            for statement in _split(_SCHEMA):  # executescript would commit on its own
                con.execute(statement)
            con.execute("COMMIT")
        except BaseException:
            _rollback(con)
            raise

    # -- writing -----------------------------------------------------------------------

    def append(self, events: Sequence[Event], *, check: AppendCheck | None = None) -> list[Event]:
        return self.append_sharing(events, {}, check=check)

    def append_sharing(self, events: Sequence[Event], vectors: Mapping[str, bytes], *,
                       check: AppendCheck | None = None) -> list[Event]:
        normalised = [normalise_event(e) for e in as_list(events, "events")]
        if not normalised:
            self.share_vectors(vectors)
            return []
        rows = event_rows(normalised, utcnow())
        out: list[Event] = []
        with self._writing("append") as con:  # the write lock from the start: seqs follow commit order
            if vectors:  # in the same commit: a refused append (`check`) rolls them back too
                self._insert_vectors(con, vectors)
            # Look before inserting: an ignored INSERT would still burn an AUTOINCREMENT
            # value and leave a gap in the seqs. Race-free under the write lock.
            stored = [self._get(con, e.event_id) for e in normalised]
            if check is not None:
                check(stored)
            landed: dict[str, Event] = {}  # a duplicate later in the batch comes back as landed
            for event, row, known in zip(normalised, rows, stored):
                known = landed.get(event.event_id) or known
                if known is not None:
                    out.append(known)
                    continue
                cursor = con.execute(_INSERT, row)
                known = landed[event.event_id] = msgspec.structs.replace(event, seq=int(cursor.lastrowid))
                out.append(known)
        return out

    def share_vectors(self, vectors: Mapping[str, bytes]) -> None:
        if not vectors:
            return
        with self._writing("sharing vectors") as con:
            self._insert_vectors(con, vectors)

    @staticmethod
    def _insert_vectors(con: sqlite3.Connection, vectors: Mapping[str, bytes]) -> None:
        now = time.time()
        rows = [(str(k), sqlite3.Binary(bytes(v)), now) for k, v in vectors.items()]
        con.executemany("INSERT OR IGNORE INTO vectors (key, vec, shared_at) VALUES (?, ?, ?)", rows)
        con.execute("DELETE FROM vectors WHERE shared_at < ?", [now - SHARED_VECTOR_TTL_S])

    @contextmanager
    def _writing(self, action: str) -> Iterator[sqlite3.Connection]:
        """One write transaction that holds SQLite's write lock from its start (`BEGIN
        IMMEDIATE`), committed at the end, rolled back on any error; an SQLite error is
        raised as InboxError naming `action`."""
        con = self._con()
        try:
            con.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise InboxError(f"inbox {self.path}: cannot start {action}: {exc}") from exc
        try:
            yield con
            con.execute("COMMIT")
        except BaseException as exc:
            _rollback(con)
            if isinstance(exc, sqlite3.Error):
                raise InboxError(f"inbox {self.path}: {action} failed: {exc}") from exc
            raise

    # -- reading -----------------------------------------------------------------------

    def shared_vectors(self, keys: Sequence[str]) -> dict[str, bytes]:
        keys = [str(k) for k in keys]
        out: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._query(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk)
            out.update((k, bytes(v)) for k, v in rows)
        return out

    def _read_after(self, seq: int, limit: int | None, kinds: list[str] | None) -> list[Event]:
        return [row_to_event(r) for r in self._query(*read_after_sql("events", "?", seq, limit, kinds))]

    def max_seq(self) -> int:
        return int(self._query("SELECT coalesce(max(seq), 0) FROM events", [])[0][0])

    def _get_event(self, event_id: str) -> Event | None:
        rows = self._query(f"SELECT {EVENT_COLUMNS} FROM events WHERE event_id = ?", [event_id])
        return row_to_event(rows[0]) if rows else None

    def count(self) -> int:
        return int(self._query("SELECT count(*) FROM events", [])[0][0])

    def _query(self, sql: str, params: Iterable[Any]) -> list[tuple]:
        try:
            return self._con().execute(sql, list(params)).fetchall()
        except sqlite3.Error as exc:
            raise InboxError(f"inbox {self.path}: read failed: {exc}") from exc

    @staticmethod
    def _get(con: sqlite3.Connection, event_id: str) -> Event | None:
        row = con.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE event_id = ?", [event_id]
        ).fetchone()
        return row_to_event(row) if row else None

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Close every connection this inbox opened (in any thread). Idempotent."""
        with self._guard:
            self._closed = True
            connections, self._connections = self._connections, []
        for con in connections:
            try:
                con.close()
            except sqlite3.Error:
                pass  # already unusable; nothing more to release

    def __repr__(self) -> str:
        return f"Inbox({str(self.path)!r}{', closed' if self._closed else ''})"


def _rollback(con: sqlite3.Connection) -> None:
    try:
        con.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # no transaction left to roll back (SQLite already ended it)


def _split(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def as_list(values: Any, name: str) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence, not {type(values).__name__}")
    return list(values)


def normalise_event(event: Any) -> Event:
    """Validate an event and recompute its payload sha256 (the payload may have been
    mutated since the Event was built); the payload is stored as it round-trips JSON."""
    if not isinstance(event, Event):
        raise TypeError(f"inbox events must be Event records, not {type(event).__name__}")
    if not isinstance(event.event_id, str) or not event.event_id:
        raise ValueError("event_id must be a non-empty string")
    # PostgreSQL text cannot hold NUL; refused by every store alike (payloads are JSON, where
    # a NUL is escaped, so only these plain columns need the check).
    plain = (("event_id", event.event_id), ("at", event.at), *msgspec.structs.asdict(event.identity).items())
    for name, value in plain:
        if isinstance(value, str) and "\x00" in value:
            raise ValueError(f"invalid event {event.event_id!r}: {name} contains a NUL character")
    try:
        raw = msgspec.to_builtins(event)
        raw["sha256"] = ""  # recomputed by Event.__post_init__
        raw["seq"] = 0  # assigned by the inbox
        return msgspec.convert(raw, Event)
    except (TypeError, msgspec.ValidationError, msgspec.EncodeError) as exc:
        raise ValueError(f"invalid event {event.event_id!r}: {exc}") from exc


def row_to_event(row: tuple) -> Event:
    seq, event_id, kind, user_id, project_id, session_id, org_id, at, payload, sha256 = row
    return Event(
        event_id=event_id,
        kind=kind,
        identity=Identity(
            user_id=user_id, project_id=project_id, session_id=session_id, org_id=org_id
        ),
        payload=msgspec.json.decode(payload),
        at=at,
        seq=int(seq),
        sha256=sha256,
    )


def read_after_sql(table: str, mark: str, seq: int, limit: int | None,
                   kinds: list[str] | None) -> tuple[str, list[Any]]:
    """The query behind `read_after` in either store (`mark`: the driver's placeholder)."""
    sql = f"SELECT {EVENT_COLUMNS} FROM {table} WHERE seq > {mark}"
    params: list[Any] = [seq]
    if kinds is not None:
        sql += f" AND kind IN ({','.join([mark] * len(kinds))})"
        params.extend(kinds)
    sql += " ORDER BY seq"
    if limit is not None:
        sql += f" LIMIT {mark}"
        params.append(limit)
    return sql, params


def event_rows(events: Sequence[Event], appended_at: str) -> list[tuple]:
    """The stored columns of validated events, in the order `_INSERT` names them (both
    stores store the same text)."""
    return [
        (
            e.event_id,
            e.kind,
            e.identity.user_id,
            e.identity.project_id,
            e.identity.session_id,
            e.identity.org_id,
            e.at,
            msgspec.json.encode(e.payload).decode("utf-8"),
            e.sha256,
            appended_at,
        )
        for e in events
    ]


SqliteInbox = Inbox  # the embedded default; `Inbox` stays its name for existing callers

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: object) -> bool:
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def open_inbox(target: Any, *, retry_open: bool = False) -> InboxBackend:
    """The inbox a setting names: `Settings` (its `inbox_location`), a `postgresql://` URL
    (`PostgresInbox`), or a path to a SQLite file (`Inbox`). Every component opens the inbox
    through here, so one setting moves all of them to PostgreSQL. Settings of one shard
    (`Settings.for_shard`) read only that shard's tenants (`pipelines.shards.ShardInbox`).

    `retry_open`: an inbox that cannot be opened now (`InboxError`: the database is down) is
    returned as an `OpeningInbox`, which tries again on every call, instead of raising: a
    replica started during an outage serves its snapshot meanwhile."""
    if retry_open:
        try:
            return open_inbox(target)
        except InboxError as exc:
            return OpeningInbox(target, exc)
    location = getattr(target, "inbox_location", target)
    if is_postgres_url(location):
        from pipelines.inbox_postgres import PostgresInbox  # psycopg only when it is used

        inbox: InboxBackend = PostgresInbox(location)
    elif isinstance(location, (str, Path)):
        inbox = Inbox(location)
    else:
        raise TypeError(f"an inbox is a path, a postgresql:// URL or Settings, not {type(target).__name__}")
    if getattr(target, "sharded", False):  # Settings of one shard: that shard's events only
        from pipelines.shards import ShardInbox

        return ShardInbox(inbox, target.shard, target.shards)
    return inbox


def inbox_exists(target: Any) -> bool:
    """Whether there is an inbox to read without creating one: the SQLite file exists, or
    the inbox is a PostgreSQL database (which `open_inbox` reaches or reports)."""
    location = getattr(target, "inbox_location", target)
    return is_postgres_url(location) or Path(location).exists()


def copy_inbox(source: InboxBackend, target: InboxBackend, *, batch: int = 1000,
               progress: Callable[[int, int], None] | None = None) -> int:
    """Copy every event of `source` into `target` with the same seqs (moving a store from
    the SQLite file to PostgreSQL: the warehouse and snapshots keep their watermarks, which
    are seqs of this log). `target` must be empty or hold a copy of `source`'s first events
    (an interrupted copy resumes). Nothing else may write to `target` meanwhile. Returns the
    number of events copied; `progress(copied, total)` after each batch."""
    done, total = target.max_seq(), source.max_seq()
    if done > total or (done and [e.event_id for e in target.read_after(done - 1, limit=1)]
                        != [e.event_id for e in source.read_after(done - 1, limit=1)]):
        raise InboxError(f"the target inbox already holds {done} events that are not the source's first "
                         f"{done}: copy only into an empty inbox (or one this copy filled)")
    copied = 0
    while events := source.read_after(done, limit=batch):
        stored = target.append(events)
        if [e.seq for e in stored] != [e.seq for e in events]:
            raise InboxError(f"seqs differ after seq {done}: something else writes to the target inbox "
                             "(stop every service and consolidation while copying)")
        done, copied = events[-1].seq, copied + len(events)
        if progress is not None:
            progress(done, total)
    return copied


class OpeningInbox(InboxBackend):
    """The inbox `open_inbox(target)` opens, opened on first use: a call tries to open it
    until one succeeds (a failure raises the `InboxError` it got), then goes to it. Within
    `retry_s` of a failed attempt a call raises that error at once instead of trying again
    (an unanswering server may take the connect timeout each time). What a process started
    while its inbox is down holds (`open_inbox(..., retry_open=True)`)."""

    def __init__(self, target: Any, error: InboxError | None = None, *, retry_s: float = 2.0) -> None:
        self.target = target
        self.last_error = error
        self.retry_s = float(retry_s)
        self._failed_at = time.monotonic() if error is not None else float("-inf")
        self._inner: InboxBackend | None = None
        self._closed = False
        self._lock = threading.Lock()

    def opened(self) -> InboxBackend:
        if self._inner is None:
            with self._lock:
                if self._closed:
                    raise InboxError("the inbox is closed")
                if self._inner is None:
                    if self.last_error is not None and time.monotonic() - self._failed_at < self.retry_s:
                        raise self.last_error
                    try:
                        self._inner = open_inbox(self.target)
                    except InboxError as exc:
                        self.last_error, self._failed_at = exc, time.monotonic()
                        raise
        return self._inner

    def append(self, events: Sequence[Event], *, check: AppendCheck | None = None) -> list[Event]:
        return self.opened().append(events, check=check)

    def append_sharing(self, events: Sequence[Event], vectors: Mapping[str, bytes], *,
                       check: AppendCheck | None = None) -> list[Event]:
        return self.opened().append_sharing(events, vectors, check=check)

    def _read_after(self, seq: int, limit: int | None, kinds: list[str] | None) -> list[Event]:
        return self.opened().read_after(seq, limit=limit, kinds=kinds)

    def max_seq(self) -> int:
        return self.opened().max_seq()

    def _get_event(self, event_id: str) -> Event | None:
        return self.opened().get(event_id)

    def count(self) -> int:
        return self.opened().count()

    def shared_vectors(self, keys: Sequence[str]) -> dict[str, bytes]:
        return self.opened().shared_vectors(keys)

    def share_vectors(self, vectors: Mapping[str, bytes]) -> None:
        self.opened().share_vectors(vectors)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            inner, self._inner = self._inner, None
        if inner is not None:
            inner.close()
