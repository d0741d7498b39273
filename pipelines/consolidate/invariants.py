"""The invariants the asset checks verify (framework-free)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipelines.consolidate.common import last_successful_run
from pipelines.records import MemoryItem, ProposedItem
from pipelines.warehouse import Warehouse
from pipelines.warehouse.connection import check_id
from pipelines.warehouse.journal import ACTIVE_SQL, WRITTEN_SINCE_SQL, items_narrowed


def provenance_violations(items: Iterable[MemoryItem]) -> list[str]:
    """Active MTM/LTM items without provenance (promotion and merging require it)."""
    return [i.id for i in items if i.active and i.tier in ("mtm", "ltm") and not i.provenance.is_present()]


def stored_provenance_violations(warehouse: Warehouse) -> tuple[int, list[str]]:
    """(active MTM/LTM items checked, `provenance_violations` among them), read as ids and
    provenance only (decoding every MTM/LTM item cost the check most of its time)."""
    rows = [row for tier in ("mtm", "ltm") for row in warehouse.active_provenance(tier=tier)]
    return len(rows), [item_id for item_id, provenance in rows if not provenance.is_present()]


def supersede_violations(warehouse: Warehouse) -> list[str]:
    """Items that are superseded (a `supersedes` link of a claim not forgotten points at
    them: a forgotten correction supersedes nothing, `materialize.supersedes_now`) but still
    active, and items whose `superseded_by` names no stored item."""
    still_active = warehouse.query(
        "SELECT DISTINCT l.dst_id FROM links l JOIN items i ON i.id = l.dst_id JOIN items s ON s.id = l.src_id "
        "WHERE l.rel = 'supersedes' AND s.validation <> 'retracted' AND NOT i.archived "
        "AND i.superseded_by IS NULL ORDER BY 1"
    )
    dangling = warehouse.query(
        "SELECT i.id FROM items i LEFT JOIN items c ON c.id = i.superseded_by "
        "WHERE i.superseded_by IS NOT NULL AND c.id IS NULL ORDER BY 1"
    )
    return [f"{r[0]}: superseded but active" for r in still_active] + [
        f"{r[0]}: superseded by a missing item" for r in dangling
    ]


def dimension_violations(warehouse: Warehouse) -> dict[str, list[int]]:
    """Models stored with more than one vector dimension."""
    dims: dict[str, list[int]] = {}
    for model, dim in warehouse.stored_embedding_models():
        dims.setdefault(model, []).append(int(dim))
    return {m: sorted(d) for m, d in dims.items() if len(set(d)) > 1}


def hard_block_violations(items: Iterable[MemoryItem], policy: Any) -> list[dict[str, Any]]:
    """Active items the current policy hard-blocks. A `message` item is a verbatim turn:
    only secrets count there (a user may quote an injection; the turn was redacted of
    secrets at capture). Every other item is evaluated as a proposal of its tier."""
    out = []
    for item in items:
        if not item.active:
            continue
        text = f"{item.title}\n{item.content}"
        if item.type == "message":
            rules = [f.rule_id for f in policy.scan_secrets(text)]
            if rules:
                out.append({"id": item.id, "rule_ids": sorted(set(rules))})
            continue
        proposal = ProposedItem(
            type=item.type, title=item.title, content=item.content, tags=list(item.tags),
            entities=list(item.entities), importance=item.importance, confidence=item.confidence,
            tier=item.tier, scope=item.scope.kind,
        )  # fmt: skip
        verdict = policy.evaluate(
            proposal, target_tier=item.tier, provenance=item.provenance,
            source_trusted=item.provenance.source_kind != "doc",
        )  # fmt: skip
        if verdict.hard_block:
            out.append({"id": item.id, "rule_ids": list(verdict.rule_ids)})
    return out


def policy_check_since(warehouse: Warehouse, policy_version: str) -> str | None:
    """Where the policy check may start: the moment the last successful run finished
    governing, when that run governed with the same policy version (everything written
    before was checked then; what that run wrote afterwards is a merge, which is governed
    on creation, or a revision that keeps the text: promotion, aging, palace). None for a
    new policy version or no such run: check every active item."""
    run = last_successful_run(warehouse)
    if run is None:
        return None
    counts = run.get("counts") or {}
    if counts.get("governed_items.policy_version") != policy_version:
        return None
    # Runs recorded before `governed_until` existed: their start (a superset).
    mark = counts.get("governed_items.governed_until") or run.get("started_at")
    return str(mark) if mark else None


def landing_violations(inbox: Any, warehouse: Warehouse) -> dict[str, Any]:
    """Landing lost or invented nothing: the events landed with seq <= the highest landed
    seq are exactly the inbox's events up to that seq, and the ingestion watermark is not
    past what was landed. Cheap: counts, plus the (small) inbox tail after the landed seq;
    the missing seqs are listed only when the counts differ."""
    landed_top, landed = warehouse.query("SELECT coalesce(max(seq), 0), count(*) FROM landed_events")[0]
    landed_top, landed = int(landed_top), int(landed)
    in_inbox = inbox.count() - len(inbox.read_after(landed_top))
    watermark = warehouse.last_ingested_seq()
    out: dict[str, Any] = {"landed_up_to": landed_top, "landed": landed, "inbox_events": in_inbox,
                           "watermark": watermark, "missing_seqs": [], "watermark_ahead": watermark > landed_top}
    if landed != in_inbox:
        stored = {int(r[0]) for r in warehouse.query("SELECT seq FROM landed_events")}
        out["missing_seqs"] = [e.seq for e in inbox.read_after(0) if e.seq <= landed_top and e.seq not in stored]
    return out


def cluster_violations(warehouse: Warehouse, clusters: Iterable[Any]) -> list[str]:
    """Clusters that would merge across owners or are malformed: every member must be a
    stored item of the cluster's owner partition, a cluster has at least two members, and no
    item is in two clusters (`clusters`: `ClusterRef`s)."""
    out: list[str] = []
    seen: dict[str, str] = {}
    clusters = list(clusters)
    # One read for every cluster's members, not one per cluster (each joins the item table).
    found = {i.id: i for i in warehouse.get_items(list(dict.fromkeys(i for c in clusters for i in c.item_ids)))}
    for c in clusters:
        name = f"{c.partition}#{c.label}"
        if len(set(c.item_ids)) < 2:
            out.append(f"{name}: fewer than two members")
        for item_id in c.item_ids:
            item = found.get(item_id)
            if item is None:
                out.append(f"{name}: {item_id} is not a stored item")
            elif item.scope.partition_key() != c.partition:
                out.append(f"{name}: {item_id} belongs to {item.scope.partition_key()}")
            if item_id in seen and seen[item_id] != name:
                out.append(f"{name}: {item_id} is also in {seen[item_id]}")
            seen.setdefault(item_id, name)
    return out


def location_violations(warehouse: Warehouse, since: str | None = None) -> list[str]:
    """Active items without a palace location, or whose `metadata["palace"]` is not the
    stored location (recall, palace browsing and the memory browser read the metadata).
    `since`: compare paths only for items written at or after it (a path changes only with a
    revision: the palace stage writes one), so a run checks what it wrote, not the store;
    a missing location is looked for among all active items either way (cheap)."""
    written = ""
    params: list[Any] = []
    if since is not None:
        check_id(since, "since")
        written = f" AND {WRITTEN_SINCE_SQL}"
        params = [since]
    # Compared in SQL: only the violations cross into Python, not a row per active item.
    rows = warehouse.query(
        "SELECT i.id, TRUE, NULL, NULL FROM items i LEFT JOIN palace_locations p ON p.item_id = i.id "
        f"WHERE {ACTIVE_SQL} AND p.item_id IS NULL "
        "UNION ALL "
        # The metadata read for the compared rows only (`items_narrowed`).
        "SELECT id, FALSE, in_metadata, stored FROM (SELECT i.id, "
        "json_extract_string(i.metadata, '$.palace') AS in_metadata, "
        "p.domain || '/' || p.room || '/' || p.shelf || '/' || p.card AS stored "
        f"FROM {items_narrowed(f'WHERE {ACTIVE_SQL}{written}')} JOIN palace_locations p ON p.item_id = i.id) "
        "WHERE in_metadata IS DISTINCT FROM stored ORDER BY 1",
        params,
    )
    out = []
    for item_id, unplaced, in_metadata, stored in rows:
        if unplaced:
            out.append(f"{item_id}: no location")
        elif in_metadata != stored:
            out.append(f"{item_id}: metadata says {in_metadata!r}, stored {stored!r}")
    return out
