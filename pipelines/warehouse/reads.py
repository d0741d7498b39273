"""Item reads: items by id, active items, what changed since a time, session tails,
counts, and an item's revisions and audit events."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import msgspec
import pyarrow as pa

from pipelines.item_history import HISTORY_SCHEMA
from pipelines.records import MemoryItem, Provenance, Tier, parse_time
from pipelines.warehouse.connection import as_list, check_id
from pipelines.warehouse.journal import ACTIVE_SQL, WRITTEN_SINCE_SQL, ItemJournal, items_narrowed

TIERS: tuple[str, ...] = Tier.__args__  # type: ignore[attr-defined]


class ItemReads(ItemJournal):
    def get_item(self, item_id: str) -> MemoryItem | None:
        check_id(item_id, "item_id")
        with self.transaction():
            return self._load_items([item_id]).get(item_id)

    def get_items(self, item_ids: Sequence[str]) -> list[MemoryItem]:
        """Stored items in the order asked; unknown ids are skipped."""
        ids = as_list(item_ids, "item_ids")
        for i in ids:
            check_id(i, "item id")
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
            return list(self._items_where(where, "i.id", params).values())

    def items_text_changed_since(self, since: str) -> list[MemoryItem]:
        """Active items whose text (title, content, tags, entities, a message's retrieval
        context) was written at or after `since`: created since, or revised since and now
        different from their last revision before it. Revisions that keep the text
        (promotion, palace, usage, aging) do not count, so this costs what changed, not
        what was merely touched."""
        check_id(since, "since")
        with self.transaction():
            found = self._load_items(self._text_changed_ids(since))
        return [it for it in found.values() if it.active]

    def lifecycle_candidates(
        self, *, now: str, promote_min_usage: int, promote_types: Sequence[str],
        never_promoted_types: Sequence[str], blocking_validations: Sequence[str],
        aging_max_importance: int, aging_min_days: float, decay_every_days: float | None,
    ) -> list[MemoryItem]:
        """The active items the lifecycle rules might change at `now` (ISO time), ordered by
        id: expired or about to, eligible for promotion, low-importance STM idle for at
        least `aging_min_days`, and (when `decay_every_days` is set) STM due for decay.
        A superset (a day of slack for time zones; a time DuckDB cannot parse is always a
        candidate): `pipelines.promotion.plan_lifecycle` decides exactly, so a run costs
        what is due, not the whole store."""
        check_id(now, "now")
        at = parse_time(now)
        if at is None:
            raise ValueError(f"now must be an ISO time, got {now!r}")

        def before(days: float) -> str:
            try:
                return (at - timedelta(days=days) + timedelta(days=1)).isoformat()
            except OverflowError:  # "never" (e.g. aging switched off with a century)
                return "0001-01-02T00:00:00+00:00"

        def t(col: str) -> str:
            return f"TRY_CAST({col} AS TIMESTAMPTZ)"

        def unreadable(col: str) -> str:
            return f"({col} IS NOT NULL AND {t(col)} IS NULL)"

        learned_col = "i.learned_at"  # from metadata, parsed once per row (see `source` below)
        learned = f"coalesce({t(learned_col)}, {t('i.created_at')})"
        odd_times = " OR ".join(unreadable(c) for c in (learned_col, "i.created_at", "i.last_used_at"))

        params: list[Any] = []

        def bind(*values: Any) -> str:
            params.extend(values)
            return ", ".join("?" * len(values))

        def one_of(col: str, values: Sequence[str]) -> str:
            values = list(values)
            return f"{col} IN ({bind(*values)})" if values else "FALSE"

        expired = (f"(i.expires_at IS NOT NULL AND "
                   f"coalesce({t('i.expires_at')} < CAST({bind(before(0))} AS TIMESTAMPTZ), TRUE))")
        promotable = (
            f"(i.tier IN ('stm', 'mtm') AND NOT {one_of('i.type', never_promoted_types)} "
            f"AND NOT {one_of('i.validation', blocking_validations)} "
            f"AND (i.usage_count >= {bind(int(promote_min_usage))} OR {one_of('i.type', promote_types)} "
            "OR i.validation = 'verified'))"
        )
        idle_since = before(aging_min_days)
        aging = (f"(i.tier = 'stm' AND i.importance <= {bind(int(aging_max_importance))} AND "
                 f"((NOT coalesce({learned} > CAST({bind(idle_since)} AS TIMESTAMPTZ), FALSE) "
                 f"AND NOT coalesce({t('i.last_used_at')} > CAST({bind(idle_since)} AS TIMESTAMPTZ), FALSE)) "
                 f"OR {odd_times}))")
        rules = [expired, promotable, aging]
        if decay_every_days is not None:
            since = f"coalesce({t('i.last_used_at')}, {learned})"
            rules.append(f"(i.tier = 'stm' AND i.importance > 1 AND (NOT coalesce({since} > "
                         f"CAST({bind(before(decay_every_days))} AS TIMESTAMPTZ), FALSE) OR {odd_times}))")
        where = f"WHERE {ACTIVE_SQL} AND ({' OR '.join(rules)})"
        # The metadata JSON (most of a row) parsed once per active row, in a materialised CTE:
        # inlined, the rules' three uses of learned_at parse it three times per row.
        source = ("(WITH parsed AS MATERIALIZED (SELECT id, archived, superseded_by, expires_at, tier, type, "
                  "validation, usage_count, importance, created_at, last_used_at, "
                  "json_extract_string(metadata, '$.learned_at') AS learned_at FROM items i "
                  f"WHERE {ACTIVE_SQL}) SELECT * FROM parsed) i")
        with self.transaction():
            return self._items_selected(where, params, source=source)

    def active_owner_counts(self, *, tier: str | None = None, types: Sequence[str] | None = None
                            ) -> list[tuple[dict[str, str], str, str | None, str, int]]:
        """Active items counted per (owner scope, type, metadata verdict, validation), like
        `active_items` filters them: (scope fields, type, verdict, validation, count) rows.
        Counting per owner needs no item decoded."""
        where, params = _active_filter(tier, types)
        rows = self.query(f"SELECT {_OWNER_KIND_SQL}, count(*) FROM {items_narrowed(where)} GROUP BY ALL ORDER BY ALL",
                          params)
        return [(_owner(k, u, p, s, o), t, v, val, int(n)) for k, u, p, s, o, t, v, val, n in rows]

    def active_item_kinds(self, *, tier: str | None = None, types: Sequence[str] | None = None
                          ) -> list[tuple[str, dict[str, str], str, str | None, str]]:
        """The active items `active_items` selects, ordered by id, as (id, owner scope fields,
        type, metadata verdict, validation): what clustering reads of an item, no item decoded."""
        where, params = _active_filter(tier, types)
        rows = self.query(f"SELECT i.id, {_OWNER_KIND_SQL} FROM {items_narrowed(where)} ORDER BY i.id", params)
        return [(i, _owner(k, u, p, s, o), t, v, val) for i, k, u, p, s, o, t, v, val in rows]

    def active_ids(self) -> list[str]:
        """Ids of the items neither archived nor superseded, ordered by id."""
        return [r[0] for r in self.query(f"SELECT i.id FROM items i WHERE {ACTIVE_SQL} ORDER BY i.id")]

    def active_provenance(self, *, tier: str | None = None) -> list[tuple[str, Provenance]]:
        """(id, provenance) of the active items (of one tier), ordered by id: the one field
        the provenance check reads, no item decoded."""
        where, params = _active_filter(tier, None)
        decode = msgspec.json.Decoder(Provenance).decode
        rows = self.query(f"SELECT i.id, i.provenance FROM {items_narrowed(where)} ORDER BY i.id", params)
        return [(item_id, decode(provenance)) for item_id, provenance in rows]

    def items_written_since(self, since: str, ids: Sequence[str] = ()) -> list[MemoryItem]:
        """Active items with a revision written at or after `since` (any change: text,
        tier, metadata, usage), plus the active ones among `ids`; ordered by id."""
        check_id(since, "since")
        extra = [i for i in as_list(ids, "ids") if isinstance(i, str)]
        listed = ""
        if extra:
            listed = "OR i.id IN (SELECT id FROM (SELECT unnest(?::VARCHAR[]) AS id))"
        params: list[Any] = [since, *([extra] if extra else [])]
        where = (f"WHERE {ACTIVE_SQL} AND ({WRITTEN_SINCE_SQL} "
                 f"{listed})")
        with self.transaction():
            return list(self._items_where(where, "i.id", params).values())

    def items_to_locate(self, since: str | None, ids: Sequence[str] = ()) -> list[MemoryItem]:
        """Active items whose palace location may be new or different: written (any
        revision) at or after `since`, without a stored location, or among `ids`; every
        active item when `since` is None. Ordered by id."""
        if since is None:
            return self.active_items()
        check_id(since, "since")
        extra = [i for i in as_list(ids, "ids") if isinstance(i, str)]
        params: list[Any] = [since, *extra]
        listed = f"OR i.id IN ({', '.join('?' * len(extra))})" if extra else ""
        where = (f"WHERE {ACTIVE_SQL} AND ({WRITTEN_SINCE_SQL} "
                 f"OR NOT EXISTS (SELECT 1 FROM palace_locations p WHERE p.item_id = i.id) {listed})")
        with self.transaction():
            return self._items_selected(where, params)

    def _items_selected(self, where: str, params: list[Any], source: str = "items i") -> list[MemoryItem]:
        """Items matching `where` (over `source`, rows named `i`), ordered by id: the ids
        first, then their rows. A predicate the scan cannot push down (an OR, a subquery,
        JSON) otherwise makes DuckDB read every column of every row to find a few."""
        ids = [r[0] for r in self._sql(f"SELECT i.id FROM {source} {where} ORDER BY i.id", params)]
        return list(self._load_items(ids).values())

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
                # The owners' messages first (plain columns), their metadata JSON parsed once
                # (materialised: inlined, the join and the window would each parse it again;
                # both fields from one parse: two paths apart parse it twice per row).
                rows = self._sql(
                    "WITH owned AS MATERIALIZED (SELECT id, org_id, user_id, created_at, "
                    "json_extract_string(m[1], '$') AS session_id, TRY_CAST(m[2] AS BIGINT) AS inbox_seq "
                    "FROM (SELECT i.id, i.org_id, i.user_id, i.created_at, "
                    "json_extract(i.metadata, ['$.session_id', '$.inbox_seq']) AS m "
                    f"FROM items i SEMI JOIN {staged} k ON k.org_id = i.org_id AND k.user_id = i.user_id "
                    f"WHERE i.type = 'message' AND {ACTIVE_SQL})) "
                    "SELECT id FROM (SELECT o.id, row_number() OVER (PARTITION BY o.org_id, o.user_id, "
                    "o.session_id ORDER BY o.inbox_seq DESC NULLS LAST, o.created_at DESC, o.id DESC) AS rn "
                    f"FROM owned o JOIN {staged} k ON k.org_id = o.org_id AND k.user_id = o.user_id "
                    "AND k.session = coalesce(o.session_id, '')) "
                    "WHERE rn <= ? ORDER BY id",
                    [n],
                )
            found = self._load_items([r[0] for r in rows])
        return list(found.values())

    def owned_messages(self, owners: Sequence[tuple[str, str]]) -> list[MemoryItem]:
        """The active `message` items of each (org, user) in `owners`, ordered by id: the turns
        a forgetting reads (`pipelines.forgetting.owners`)."""
        owners = list(dict.fromkeys(owners))
        if not owners:
            return []
        for org_id, user_id in owners:
            check_id(org_id, "org_id")
            check_id(user_id, "user_id")
        pairs = " OR ".join("(i.org_id = ? AND i.user_id = ?)" for _ in owners)
        with self.transaction():
            return self._items_selected(f"WHERE i.type = 'message' AND {ACTIVE_SQL} AND ({pairs})",
                                        [v for pair in owners for v in pair])

    def retracted_items(self) -> list[MemoryItem]:
        """The active retracted items (forgotten claims and turns, and import tombstones),
        ordered by id: what a forgetting sweep reads (`pipelines.consolidate.forgetting_sweep`)."""
        with self.transaction():
            return self._items_selected(f"WHERE i.validation = 'retracted' AND {ACTIVE_SQL}", [])

    def supersedes_chains(self) -> list[tuple[str, str, bool]]:
        """Every `supersedes` link (src, dst, whether src was merged from dst: a `derived_from`
        link beside it) of an active item, and of what it superseded, recursively: the
        corrections and merges whose replaced turns a backfill reads
        (`pipelines.consolidate.replaced_turns`). Found in SQL: a handful of links, not the store."""
        return [(src, dst, bool(merged)) for src, dst, merged in self.query(f"""
            WITH RECURSIVE chain(src, dst) AS (
                SELECT l.src_id, l.dst_id FROM links l JOIN items i ON i.id = l.src_id
                WHERE l.rel = 'supersedes' AND {ACTIVE_SQL}
                UNION
                SELECT l.src_id, l.dst_id FROM links l JOIN chain c ON l.src_id = c.dst WHERE l.rel = 'supersedes')
            SELECT c.src, c.dst, EXISTS (SELECT 1 FROM links d WHERE d.src_id = c.src AND d.dst_id = c.dst
                                         AND d.rel = 'derived_from')
            FROM chain c ORDER BY c.src, c.dst""")]

    def corrections_naming(self, turn_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(correction id, turn id) for each active item that names one of `turn_ids` among
        the turns the claims it replaced were said in (`materialize.REPLACED_TURNS`), the
        newest correction first. Only items with a `supersedes` link are parsed."""
        ids = [i for i in as_list(turn_ids, "turn_ids") if isinstance(i, str)]
        if not ids:
            return []
        rows = self.query(
            "SELECT c.id, t.turn FROM (SELECT i.id, i.updated_at, json_extract_string(i.metadata, "
            "'$.replaced_turns[*]') AS turns FROM items i WHERE i.id IN (SELECT src_id FROM links "
            f"WHERE rel = 'supersedes') AND {ACTIVE_SQL}) c, unnest(c.turns) AS t(turn) "
            f"WHERE t.turn IN ({', '.join('?' * len(ids))}) ORDER BY c.updated_at DESC, c.id", ids)
        return [(fix, turn) for fix, turn in rows]

    def count_items(self, active_only: bool = True, tier: str | None = None) -> int:
        _check_tier(tier)
        conditions, params = [], []
        if active_only:
            conditions.append(ACTIVE_SQL)
        if tier is not None:
            conditions.append("i.tier = ?")
            params.append(tier)
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        return int(self.query(f"SELECT count(*) FROM items i {where}", params)[0][0])

    def revisions(self, item_id: str) -> list[dict[str, Any]]:
        """Every revision of an item, oldest first; `snapshot` is the item as a dict."""
        return self._history("revisions", item_id, "revision_num", "snapshot", (
            "revision_id", "item_id", "revision_num", "snapshot", "changed_at", "reason", "actor", "inbox_seq",
            "requested_at"))

    def item_events(self, item_id: str) -> list[dict[str, Any]]:
        """The audit events of an item, oldest first; `details` decoded."""
        return self._history("events", item_id, "id", "details", (
            "id", "action", "item_id", "details", "content_sha256", "at", "actor", "inbox_seq", "requested_at"))

    def _history(self, table: str, item_id: str, order: str, encoded: str, keys: tuple[str, ...]
                 ) -> list[dict[str, Any]]:
        """The rows of `table` (revisions, events) of an item in `order`, as dicts of `keys`,
        the JSON column `encoded` decoded."""
        check_id(item_id, "item_id")
        cols = ", ".join(f'"{k}"' for k in keys)  # quoted: "at" is a keyword
        rows = self.query(f"SELECT {cols} FROM {table} WHERE item_id = ? ORDER BY {order}", [item_id])
        out = [dict(zip(keys, r)) for r in rows]
        for r in out:
            r[encoded] = msgspec.json.decode(r[encoded])
        return out


    def published_history(self, since: str | None = None) -> pa.Table:
        """Every revision and audit event of every item: the active ones, those they replaced
        (a correction superseded them or a merge took them in) and the archived ones (they
        left recall, not their history, which the memory browser shows), or only those written at or after `since`
        (history rows are never changed, so a snapshot adds what is new), as one table of
        `pipelines.item_history.HISTORY_SCHEMA` (what a snapshot publishes for the service).
        Rows are appended in time order, so a recent `since` reads the table's last row
        groups only."""
        revised = written = ""
        params: list[Any] = []
        if since is not None:
            check_id(since, "since")
            revised, written = " WHERE r.changed_at >= ?", " WHERE e.\"at\" >= ?"
            params = [since, since]
        with self.transaction():
            table = self._arrow(
                "WITH known AS (SELECT i.id FROM items i) "
                "SELECT r.item_id, 'revision' AS kind, CAST(r.revision_num AS BIGINT) AS ord, r.changed_at AS at, "
                "r.reason AS action, r.snapshot AS data, NULL AS content_sha256, r.actor, "
                "CAST(r.inbox_seq AS BIGINT) AS inbox_seq, r.requested_at "
                f"FROM (SELECT * FROM revisions r{revised}) r JOIN known a ON a.id = r.item_id "
                "UNION ALL "
                "SELECT e.item_id, 'event', CAST(e.id AS BIGINT), e.\"at\", e.action, CAST(e.details AS VARCHAR), "
                "e.content_sha256, e.actor, CAST(e.inbox_seq AS BIGINT), e.requested_at "
                f"FROM (SELECT * FROM events e{written}) e JOIN known a ON a.id = e.item_id "
                "ORDER BY 1, 2, 3",
                params or None,
            )
        return table.cast(HISTORY_SCHEMA)


def _check_tier(tier: Any) -> None:
    if tier is not None and tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}; known: {list(TIERS)}")


# An item's owner scope fields, type, metadata verdict and validation (`active_owner_counts`).
_OWNER_KIND_SQL = ("i.scope_kind, i.user_id, i.project_id, i.session_id, i.org_id, i.type, "
                   "json_extract_string(i.metadata, '$.verdict'), i.validation")


def _owner(kind: str, user_id: str, project_id: str, session_id: str, org_id: str) -> dict[str, str]:
    return {"kind": kind, "user_id": user_id, "project_id": project_id, "session_id": session_id, "org_id": org_id}


def _active_filter(tier: str | None, types: Sequence[str] | None) -> tuple[str, list[Any]]:
    _check_tier(tier)
    conditions = [ACTIVE_SQL]
    params: list[Any] = []
    if tier is not None:
        conditions.append("i.tier = ?")
        params.append(tier)
    if types is not None:
        type_list = as_list(types, "types")
        if not type_list:
            conditions.append("FALSE")
        else:
            conditions.append(f"i.type IN ({', '.join('?' * len(type_list))})")
            params.extend(type_list)
    return "WHERE " + " AND ".join(conditions), params
