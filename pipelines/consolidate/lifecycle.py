"""Stage 6: promotions, expiry archive, aging and decay (`pipelines.promotion`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pipelines.consolidate.common import Hook, call_hook
from pipelines.settings import Settings
from pipelines.warehouse import Warehouse


@dataclass
class LifecycleReport:
    counts: dict[str, int] = field(default_factory=dict)  # action -> items
    by_reason: dict[str, int] = field(default_factory=dict)


MAX_PROMOTION_PASSES = 3  # STM -> MTM -> LTM: a run reaches the steady state


def _apply_changes(warehouse: Warehouse, changes: Sequence[Any], counts: Counter, reasons: Counter) -> None:
    archive: dict[str, list[str]] = {}
    updates: dict[str, dict[str, dict[str, Any]]] = {}
    for change in changes:
        reason = str(change.reason or change.action)
        if change.action == "archive":
            archive.setdefault(reason, []).append(change.item_id)
        else:
            updates.setdefault(reason, {}).setdefault(change.item_id, {}).update(dict(change.patch or {}))
        counts[str(change.action)] += 1
        reasons[reason] += 1
    for reason, patches in sorted(updates.items()):
        non_empty = {i: p for i, p in patches.items() if p}
        if non_empty:
            warehouse.update_items(non_empty, reason=reason)
    for reason, ids in sorted(archive.items()):
        warehouse.archive_items(ids, reason=reason)


def apply_lifecycle(warehouse: Warehouse, settings: Settings, *, now: datetime,
                    hook: Hook | None = None) -> LifecycleReport:
    """Apply `pipelines.promotion.plan_lifecycle` (promotions, expiry archive, aging,
    decay) to the active items, in one transaction. Promotion moves one tier at a time, so
    the plan is re-run (promotions only) until nothing more moves: a run leaves the steady
    state and the next run without new events changes nothing."""
    from pipelines.promotion import plan_lifecycle

    counts: Counter = Counter()
    reasons: Counter = Counter()
    with warehouse.transaction():
        _apply_changes(warehouse, plan_lifecycle(warehouse.active_items(), settings, now), counts, reasons)
        for _ in range(MAX_PROMOTION_PASSES):
            more = [c for c in plan_lifecycle(warehouse.active_items(), settings, now) if c.action == "promote"]
            if not more:
                break
            _apply_changes(warehouse, more, counts, reasons)
        call_hook(hook, "lifecycle:before_commit")
    return LifecycleReport(counts=dict(sorted(counts.items())), by_reason=dict(sorted(reasons.items())))
