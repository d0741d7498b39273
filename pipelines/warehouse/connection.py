"""The warehouse connection: opening (locking, migrations), transactions, SQL plumbing,
and the argument checks every table's methods share."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import msgspec
import pyarrow as pa

from pipelines.migrations import apply_migrations, current_version


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


STRING = pa.string()


class WarehouseConnection:
    """One DuckDB connection with nestable transactions, shared by the table mixins."""

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
        self._con = self._connect()
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

    def _connect(self) -> duckdb.DuckDBPyConnection:
        try:
            return duckdb.connect(str(self.path), read_only=self.read_only)
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise WarehouseLockedError(
                    f"the warehouse {self.path} is held by another process; DuckDB allows one "
                    f"writer and no reader beside it ({exc})"
                ) from exc
            raise WarehouseError(f"cannot open the warehouse {self.path}: {exc}") from exc
        except duckdb.Error as exc:
            raise WarehouseError(f"cannot open the warehouse {self.path}: {exc}") from exc

    # -- lifecycle and transactions ------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._con.close()

    def __enter__(self):
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
    def transaction(self) -> Iterator[Any]:
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

    # -- SQL plumbing --------------------------------------------------------------------

    def query(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None
    ) -> list[tuple]:
        """Run any SQL (e.g. over the analytics views) and return its rows."""
        with self.transaction():
            return self._sql(sql, params)

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

    def _arrow(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> pa.Table:
        """Run one query and return its result as an Arrow table (bulk reads)."""
        try:
            return self._con.sql(sql, params=params).to_arrow_table()
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


# -- argument checks --------------------------------------------------------------------------


def ids_table(ids: Sequence[str]) -> pa.Table:
    """Ids with their position, to join against in the order asked."""
    return pa.table({"id": pa.array(ids, STRING), "ord": pa.array(range(len(ids)), pa.int64())})


def to_json(value: Any) -> str:
    try:
        return msgspec.json.encode(value).decode("utf-8")
    except (TypeError, msgspec.EncodeError) as exc:
        raise ValueError(f"value is not JSON-serialisable: {exc}") from exc


def as_list(values: Any, name: str) -> list[Any]:
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence, not {type(values).__name__}")
    return list(values)


def check_id(value: Any, name: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, not {value!r}")


def check_seq(value: Any, name: str) -> None:
    """A non-negative int (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, not {value!r}")


def unique_ids(ids: Any, name: str) -> list[str]:
    values = as_list(ids, name)
    for i in values:
        check_id(i, f"{name} entry")
    return list(dict.fromkeys(values))
