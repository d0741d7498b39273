"""Tenants to shards: with `shards = N > 1` every org (a tenant: nothing is shared across
orgs) belongs to one of N shards by a stable hash of its org id, and each shard has a
warehouse file and a snapshot folder of its own, consolidated by its own writer and served
by the replicas that load it. `shards = 1` (the default) is the single-warehouse layout,
unchanged: no path, inbox or run differs from an unsharded Loci.

All shards share one inbox (one seq); a shard's consumers see only its tenants' events
through `ShardInbox`, and keep their own watermark over the shared seqs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipelines.inbox import AppendCheck, InboxBackend
from pipelines.records import Event

PARTITION_PREFIX = "shard-"


def shard_of(org_id: str, shards: int) -> int:
    """The shard of a tenant: a stable hash (the same in every process and version), not
    Python's salted `hash`."""
    if shards < 1:
        raise ValueError("shards must be >= 1")
    if shards == 1:
        return 0
    return int.from_bytes(hashlib.sha256(org_id.encode("utf-8")).digest()[:8], "big") % shards


def shard_file(path: Path, shard: int) -> Path:
    """`warehouse.duckdb` -> `warehouse-shard-3.duckdb`."""
    return path.with_name(f"{path.stem}-{PARTITION_PREFIX}{shard}{path.suffix}")


def shard_folder(path: Path, shard: int) -> Path:
    """`snapshots` -> `snapshots/shard-3` (each with its own CURRENT and versions)."""
    return path / f"{PARTITION_PREFIX}{shard}"


def partition_key(shard: int) -> str:
    return f"{PARTITION_PREFIX}{shard}"


def partition_keys(shards: int) -> list[str]:
    return [partition_key(k) for k in range(shards)]


def shard_from_partition(key: str, shards: int) -> int:
    """The shard number of a partition key "shard-K"; ValueError for anything else."""
    if not key.startswith(PARTITION_PREFIX) or not key[len(PARTITION_PREFIX):].isdigit():
        raise ValueError(f"not a shard partition key: {key!r}")
    shard = int(key[len(PARTITION_PREFIX):])
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} outside 0..{shards - 1}")
    return shard


class ShardInbox(InboxBackend):
    """The shared inbox as one shard sees it: reads return only events of the shard's
    tenants; appends and `max_seq` are the shared inbox's (seqs stay global, so a shard's
    watermark moves past other shards' events)."""

    def __init__(self, inbox: InboxBackend, shard: int, shards: int) -> None:
        if not 0 <= shard < shards:
            raise ValueError(f"shard {shard} outside 0..{shards - 1}")
        self.inner, self.shard, self.shards = inbox, shard, shards

    def mine(self, event: Event) -> bool:
        return shard_of(event.identity.org_id, self.shards) == self.shard

    def append(self, events: Sequence[Event], *, check: AppendCheck | None = None) -> list[Event]:
        return self.inner.append(events, check=check)

    def shared_vectors(self, keys: Sequence[str]) -> dict[str, bytes]:
        return self.inner.shared_vectors(keys)

    def share_vectors(self, vectors: Mapping[str, bytes]) -> None:
        self.inner.share_vectors(vectors)

    def _read_after(self, seq: int, limit: int | None, kinds: list[str] | None) -> list[Event]:
        if limit is None:
            return [e for e in self.inner.read_after(seq, kinds=kinds) if self.mine(e)]
        # Page through the shared log: `limit` of this shard's events, not of everyone's.
        out: list[Event] = []
        after = seq
        while len(out) < limit:
            page = self.inner.read_after(after, limit=max(limit, 1000), kinds=kinds)
            if not page:
                break
            out.extend(e for e in page if self.mine(e))
            after = page[-1].seq
        return out[:limit]

    def max_seq(self) -> int:
        return self.inner.max_seq()

    def _get_event(self, event_id: str) -> Event | None:
        event = self.inner.get(event_id)
        return event if event is not None and self.mine(event) else None

    def count(self) -> int:
        return len(self._read_after(0, None, None))

    def close(self) -> None:
        self.inner.close()

    def __repr__(self) -> str:
        return f"ShardInbox({self.inner!r}, shard {self.shard} of {self.shards})"


def shard_warehouse_paths(settings) -> list[Path]:
    """Every shard's warehouse file (one file, today's, with a single shard)."""
    if settings.shards <= 1:
        return [settings.warehouse_path]
    return [settings.for_shard(k).warehouse_path for k in range(settings.shards)]


def open_all_shards(settings, paths: Sequence[Path] | None = None):
    """One read-only DuckDB session over every shard: each warehouse file attached read-only
    (`s0`, `s1`, ...), every table of the schema as a view over the union of the shards
    (`UNION ALL BY NAME`), and the analytics views of `sql/` (`v_*`, as the warehouse
    defines them) created over those unions, so `SELECT * FROM v_tier_summary` answers for
    the whole deployment. Shard files that do not exist yet are left out. Like any reader,
    it cannot open a shard while that shard's consolidation run writes it."""
    import duckdb

    files = [p for p in (paths if paths is not None else shard_warehouse_paths(settings)) if Path(p).exists()]
    if not files:
        raise FileNotFoundError("no shard warehouse exists yet (run a consolidation first)")
    con = duckdb.connect(":memory:")
    try:
        for i, path in enumerate(files):
            con.execute(f"ATTACH '{_quote(str(path))}' AS s{i} (READ_ONLY)")
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 's0' AND schema_name = 'main' "
            "ORDER BY table_name").fetchall()]
        for table in tables:
            union = " UNION ALL BY NAME ".join(f'SELECT * FROM s{i}.main."{table}"' for i in range(len(files)))
            con.execute(f'CREATE VIEW "{table}" AS {union}')
        views = con.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE database_name = 's0' AND schema_name = 'main' "
            "AND NOT internal ORDER BY view_name").fetchall()
        pending = [sql for _name, sql in views]
        while pending:  # the warehouse's own definitions, now over the unions; a view built
            failed = []  # on another one waits for it
            for sql in pending:
                try:
                    con.execute(sql)
                except duckdb.CatalogException:
                    failed.append(sql)
            if len(failed) == len(pending):
                con.execute(failed[0])  # no progress: raise the real error
            pending = failed
    except BaseException:
        con.close()
        raise
    return con


def _quote(text: str) -> str:
    return text.replace("'", "''")
