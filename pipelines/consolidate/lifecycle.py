"""Stage 6: promotions, expiry archive, aging and decay (`pipelines.promotion`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
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
            warehouse.update_items(non_empty, reason=reason, touch=False)
    for reason, ids in sorted(archive.items()):
        warehouse.archive_items(ids, reason=reason)


def lifecycle_candidates(warehouse: Warehouse, settings: Settings, now: datetime) -> list[Any]:
    """The active items `plan_lifecycle` might change at `now` (a superset, from SQL)."""
    from pipelines.promotion import BLOCKING_VALIDATIONS, DEFAULT_DECAY_EVERY_DAYS, NEVER_PROMOTED_TYPES

    retention = [float(d) for d in settings.retention_days_by_tag.values()]
    return warehouse.lifecycle_candidates(
        now=(now if now.tzinfo else now.replace(tzinfo=timezone.utc)).isoformat(),
        promote_min_usage=min(settings.usage_count_for_mtm, settings.usage_count_for_ltm),
        promote_types=list(settings.auto_promote_types),
        never_promoted_types=sorted(NEVER_PROMOTED_TYPES), blocking_validations=sorted(BLOCKING_VALIDATIONS),
        aging_max_importance=settings.stm_aging_max_importance,
        aging_min_days=min([float(settings.stm_aging_days), *retention]),
        decay_every_days=DEFAULT_DECAY_EVERY_DAYS if settings.importance_decay else None,
    )


def apply_lifecycle(warehouse: Warehouse, settings: Settings, *, now: datetime,
                    hook: Hook | None = None) -> LifecycleReport:
    """Apply `pipelines.promotion.plan_lifecycle` (promotions, expiry archive, aging,
    decay) to the active items, in one transaction. Only the items the rules might change
    are loaded (`lifecycle_candidates`, filtered in SQL), so a run costs what is due, not
    the size of the store. Promotion moves one tier at a time, so the plan is re-run
    (promotions only, on the items just promoted: nothing else changed) until nothing more
    moves: a run leaves the steady state and the next run without new events changes
    nothing."""
    from pipelines.promotion import plan_lifecycle

    counts: Counter = Counter()
    reasons: Counter = Counter()
    with warehouse.transaction():
        changes = plan_lifecycle(lifecycle_candidates(warehouse, settings, now), settings, now)
        _apply_changes(warehouse, changes, counts, reasons)
        for _ in range(MAX_PROMOTION_PASSES):
            promoted = [c.item_id for c in changes if c.action == "promote"]
            if not promoted:
                break
            changes = [c for c in plan_lifecycle(warehouse.get_items(promoted), settings, now)
                       if c.action == "promote"]
            _apply_changes(warehouse, changes, counts, reasons)
        call_hook(hook, "lifecycle:before_commit")
    return LifecycleReport(counts=dict(sorted(counts.items())), by_reason=dict(sorted(reasons.items())))
