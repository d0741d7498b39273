"""Consolidation runs: one row per run (started, finished with counts and the snapshot it
published), with `run.start` / `run.finish` audit events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from pipelines.records import sha256_text, utcnow
from pipelines.warehouse.connection import (
    ItemConflictError,
    WarehouseError,
    check_id,
    check_seq,
    to_json,
)
from pipelines.warehouse.journal import ItemJournal

_RUN_COLUMNS = ("run_id", "started_at", "finished_at", "status", "inbox_from_seq",
                "inbox_to_seq", "counts", "snapshot_version")  # fmt: skip


class Runs(ItemJournal):
    def start_run(self, run_id: str, from_seq: int) -> None:
        self._writable()
        check_id(run_id, "run_id")
        check_seq(from_seq, "from_seq")
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
        check_id(run_id, "run_id")
        check_id(status, "status")
        if not isinstance(counts, Mapping):
            raise TypeError(f"counts must be a mapping, not {type(counts).__name__}")
        check_seq(to_seq, "to_seq")
        with self.transaction():
            run = self.get_run(run_id)
            if run is None:
                raise WarehouseError(f"unknown consolidation run {run_id!r}")
            if run["finished_at"] is not None:
                raise ItemConflictError(f"consolidation run {run_id!r} already finished")
            now = utcnow()
            counts_json = to_json(dict(counts))
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
        sql = (
            f"SELECT {', '.join(_RUN_COLUMNS)} FROM consolidation_runs {where} "
            "ORDER BY started_at DESC, run_id"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        out = [dict(zip(_RUN_COLUMNS, r)) for r in self.query(sql, params)]
        for r in out:
            r["counts"] = msgspec.json.decode(r["counts"]) if r["counts"] is not None else None
        return out
