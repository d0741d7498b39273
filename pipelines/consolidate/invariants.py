"""The invariants the asset checks verify (framework-free)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipelines.records import MemoryItem, ProposedItem
from pipelines.warehouse import Warehouse


def provenance_violations(items: Iterable[MemoryItem]) -> list[str]:
    """Active MTM/LTM items without provenance (promotion and merging require it)."""
    return [i.id for i in items if i.active and i.tier in ("mtm", "ltm") and not i.provenance.is_present()]


def supersede_violations(warehouse: Warehouse) -> list[str]:
    """Items that are superseded (a `supersedes` link points at them) but still active, and
    items whose `superseded_by` names no stored item."""
    still_active = warehouse.query(
        "SELECT DISTINCT l.dst_id FROM links l JOIN items i ON i.id = l.dst_id "
        "WHERE l.rel = 'supersedes' AND NOT i.archived AND i.superseded_by IS NULL ORDER BY 1"
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
            rules = [f.rule_id for f in policy.scan_text(text) if getattr(f, "kind", "") == "secret"]
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
    for run in warehouse.runs(limit=20):
        if run["status"] != "success":
            continue
        counts = run.get("counts") or {}
        if counts.get("governed_items.policy_version") != policy_version:
            return None
        # Runs recorded before `governed_until` existed: their start (a superset).
        mark = counts.get("governed_items.governed_until") or run.get("started_at")
        return str(mark) if mark else None
    return None
