"""The one-off backfill of the turns each correction replaced, for a store older than them.

Since 2026-11-29 a claim that replaced others names the raw turns they were said in
(`pipelines.materialize.REPLACED_TURNS`, filled by the fold as each correction arrives and
carried by merges), and recall marks those turns as said otherwise. A correction stored
before names none. Migration 007 marks every store for this backfill; the next
consolidation run (`govern_items`, before its events, so a new correction of an old one
reads the old one's turns) makes it: the `supersedes` links of the active items and,
recursively, of what they superseded, found in SQL (`Warehouse.supersedes_chains`), each
item filled from what it superseded (`materialize.with_replaced_turns`: a correction's
claims' turns, a merge's members' replaced turns), the active ones whose names changed
stored as the pipeline's own revisions (reason `replaced_turns`, `updated_at` kept: what
an item says is unchanged), then the backfill is recorded as done. The run publishes a
snapshot with them (their revisions are new).
"""

from __future__ import annotations

from collections import defaultdict

from pipelines.materialize import with_replaced_turns
from pipelines.records import MemoryItem
from pipelines.warehouse import Warehouse

BACKFILL_KEY = "replaced_turns"  # the `ingest_state` row migration 007 marks
BACKFILL_REASON = "replaced_turns"  # the revision reason of what it changes


def filled_replaced_turns(items: dict[str, MemoryItem],
                          chains: list[tuple[str, str, bool]]) -> dict[str, MemoryItem]:
    """Each item of `items` that supersedes another (`chains`: src, dst, merged) naming the
    turns of what it superseded, filled depth first (what an item superseded is filled
    before it; a link cycle, never written, is cut where met)."""
    superseded: dict[str, list[tuple[str, bool]]] = defaultdict(list)
    for src, dst, merged in chains:
        if src in items and dst in items:
            superseded[src].append((dst, merged))
    filled: dict[str, MemoryItem] = {}
    for root in superseded:
        stack, entered = [root], set()
        while stack:
            item_id = stack[-1]
            if item_id in filled:
                stack.pop()
                continue
            entered.add(item_id)
            todo = [d for d, _ in superseded.get(item_id, ()) if d not in filled and d not in entered]
            if todo:
                stack.extend(todo)
                continue
            olds = [(filled.get(d, items[d]), merged) for d, merged in superseded.get(item_id, ())]
            filled[item_id] = with_replaced_turns(items[item_id], [o for o, merged in olds if not merged],
                                                  merged_from=[o for o, merged in olds if merged])
            stack.pop()
    return {item_id: filled[item_id] for item_id in superseded}


def backfill_replaced_turns(warehouse: Warehouse) -> int:
    """Make the pending backfill (nothing when none is pending), in one transaction with the
    backfill recorded as done. Returns how many active items it changed. On a store whose
    corrections were all made under the fold it changes nothing."""
    if not warehouse.sweep_pending(BACKFILL_KEY):
        return 0
    chains = warehouse.supersedes_chains()
    ids = sorted({i for src, dst, _ in chains for i in (src, dst)})
    items = {it.id: it for it in warehouse.get_items(ids)} if ids else {}
    changed = {i: new for i, new in filled_replaced_turns(items, chains).items()
               if items[i].active and new.metadata != items[i].metadata}
    with warehouse.transaction():
        if changed:
            warehouse.update_items({i: {"metadata": new.metadata} for i, new in changed.items()},
                                   reason=BACKFILL_REASON, touch=False, current=items)
        warehouse.finish_sweep(BACKFILL_KEY)
    return len(changed)
