"""Lifecycle planning: promotion (STM -> MTM -> LTM), expiry, aging and importance decay.

`plan_lifecycle` is a pure function: items + settings + now -> a list of `Change`s that the
caller applies (archive, or patch). Nothing is deleted (seed 000 §8: archive/supersede).

Rules, per active item (archived or superseded items get no change), first match wins:

1. Expired (`expires_at` < now, any tier) -> archive, reason "expired".
2. Promotion, seed 001 "Promotion Rules" exactly, one tier per run:
   eligible when usage_count >= `usage_count_for_ltm`, or type in `auto_promote_types`, or
   validation "verified" -> next tier (STM -> MTM, MTM -> LTM); otherwise STM -> MTM when
   usage_count >= `usage_count_for_mtm` (the relaxed rule). LTM stays. Provenance is
   required for MTM/LTM (`item.provenance.is_present()`, the policy's hard rule): without
   it nothing is promoted. Never promoted:
   - `message` items: raw chat turns are episodic evidence (seed 003), kept verbatim in STM
     and recalled as such; what they say reaches MTM through proposals and merges;
   - quarantined items (`metadata["verdict"] == "quarantine"`): seed 000 §4.2 keeps them in
     STM until they expire;
   - contested or retracted items: LTM is for verified, high-confidence knowledge, and a
     disputed item should not climb while the dispute stands.
   Reasons: "promote_usage", "promote_type", "promote_verified", "promote_usage_mtm".
3. Aging (seed 004), STM only: importance <= `stm_aging_max_importance` and no activity
   (the later of when Loci learned the item and last_used_at: a memory recalled yesterday
   is not stale, and neither is a months-old conversation ingested yesterday; created_at,
   the time a turn was said, is kept for temporal questions) for more than
   `stm_aging_days` -> archive, reason "aged". Per-topic retention:
   `retention_days_by_tag` {tag: days} replaces the aging age for items carrying that tag
   (case-insensitive); with several matching tags the longest retention wins. A claim
   about a day that comes round every year (a birthday, an anniversary:
   `recall.dates.yearly_days`) ages a year later: it is asked about once a year.
4. Importance decay (seed 004 "Importance decay", only when `settings.importance_decay`),
   STM only: importance - 1 per `decay_every_days` (default 7, seed 004's interval) without
   use (since last_used_at, else since Loci learned the item), floor 1. Idempotent across runs: the steps
   already applied are kept in `metadata["importance_decay"] = {"since", "steps"}`, so an
   hourly schedule does not decay hourly, and a new use restarts the count. Aging looks at
   the importance before this run's decay (the next run sees the decayed value).

Output: at most one change per item, ordered by item id.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from pipelines.materialize import LEARNED_AT
from pipelines.recall.dates import yearly_days
from pipelines.records import MemoryItem, parse_time
from pipelines.settings import Settings

Action = Literal["promote", "archive", "decay"]
NEXT_TIER = {"stm": "mtm", "mtm": "ltm"}
NEVER_PROMOTED_TYPES = frozenset({"message"})
BLOCKING_VALIDATIONS = frozenset({"contested", "retracted"})
DEFAULT_DECAY_EVERY_DAYS = 7.0
YEAR_DAYS = 366.0
DECAY_KEY = "importance_decay"


class LifecycleError(ValueError):
    """Unusable input: not MemoryItems, a bad `now`, a non-positive decay interval."""


@dataclass(frozen=True)
class Change:
    item_id: str
    action: Action
    patch: dict[str, Any] = field(default_factory=dict)  # fields to set (empty for archive)
    reason: str = ""


def plan_lifecycle(
    items: Sequence[MemoryItem],
    settings: Settings,
    now: datetime,
    *,
    decay_every_days: float = DEFAULT_DECAY_EVERY_DAYS,
) -> list[Change]:
    """The lifecycle changes due at `now` (see the module docstring for the rules)."""
    if not isinstance(now, datetime):
        raise LifecycleError(f"now must be a datetime, not {type(now).__name__}")
    if isinstance(decay_every_days, bool) or not isinstance(decay_every_days, (int, float)) \
            or not decay_every_days > 0:
        raise LifecycleError(f"decay_every_days must be a positive number, got {decay_every_days!r}")
    now = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
    for item in items:
        if not isinstance(item, MemoryItem):
            raise LifecycleError(f"items must be MemoryItem records, not {type(item).__name__}")
    retention = {str(tag).lower(): float(days) for tag, days in settings.retention_days_by_tag.items()}

    changes: list[Change] = []
    for item in sorted(items, key=lambda i: i.id):
        if not item.active:
            continue
        if item.expired(now):
            changes.append(Change(item.id, "archive", {}, "expired"))
            continue
        promotion = _promotion(item, settings)
        if promotion is not None:
            changes.append(promotion)
            continue
        if item.tier != "stm":
            continue
        if _aged(item, settings, retention, now):
            changes.append(Change(item.id, "archive", {}, "aged"))
            continue
        if settings.importance_decay:
            decay = _decay(item, now, float(decay_every_days))
            if decay is not None:
                changes.append(decay)
    return changes




def promotion_reason(item: MemoryItem, settings: Settings) -> str | None:
    """Why seed 001's rules promote `item` one tier, or None (provenance not checked)."""
    if item.tier not in NEXT_TIER:  # LTM stays
        return None
    if item.type in NEVER_PROMOTED_TYPES or item.validation in BLOCKING_VALIDATIONS:
        return None
    if item.metadata.get("verdict") == "quarantine":
        return None
    if item.usage_count >= settings.usage_count_for_ltm:
        return "promote_usage"
    if item.type in settings.auto_promote_types:
        return "promote_type"
    if item.validation == "verified":
        return "promote_verified"
    if item.tier == "stm" and item.usage_count >= settings.usage_count_for_mtm:
        return "promote_usage_mtm"
    return None


def _promotion(item: MemoryItem, settings: Settings) -> Change | None:
    reason = promotion_reason(item, settings)
    if reason is None or not item.provenance.is_present():
        return None
    return Change(item.id, "promote", {"tier": NEXT_TIER[item.tier]}, reason)


def learned_at(item: MemoryItem) -> str:
    """When Loci learned `item` (metadata "learned_at", set from its inbox event), else its
    created_at (items from before that was recorded). Not the date a turn was said: an
    imported conversation from months ago is new to memory the day it is ingested."""
    learned = item.metadata.get(LEARNED_AT)
    return learned if isinstance(learned, str) and parse_time(learned) is not None else item.created_at


def _last_activity(item: MemoryItem) -> datetime | None:
    times = [t for t in (parse_time(learned_at(item)), parse_time(item.last_used_at)) if t is not None]
    return max(times) if times else None


def aging_days(item: MemoryItem, settings: Settings, retention: dict[str, float] | None = None) -> float:
    """The inactivity (days) after which a low-importance STM item is archived."""
    if retention is None:
        retention = {str(t).lower(): float(d) for t, d in settings.retention_days_by_tag.items()}
    overrides = [retention[t.lower()] for t in item.tags if t.lower() in retention]
    days = max(overrides) if overrides else float(settings.stm_aging_days)
    if item.type != "message" and yearly_days(f"{item.title}. {item.content}"):
        days += YEAR_DAYS  # a birthday is asked about once a year: not stale before it came round
    return days


def _aged(item: MemoryItem, settings: Settings, retention: dict[str, float], now: datetime) -> bool:
    if item.importance > settings.stm_aging_max_importance:
        return False
    last = _last_activity(item)
    if last is None:
        return False
    return (now - last).total_seconds() / 86400.0 > aging_days(item, settings, retention)


def _decay(item: MemoryItem, now: datetime, every_days: float) -> Change | None:
    since_text = item.last_used_at if parse_time(item.last_used_at) else learned_at(item)
    since = parse_time(since_text)
    if since is None or item.importance <= 1:
        return None
    steps = math.floor(max((now - since).total_seconds(), 0.0) / 86400.0 / every_days)
    record = item.metadata.get(DECAY_KEY)
    applied = 0
    if isinstance(record, dict) and record.get("since") == since_text:
        applied = int(record.get("steps", 0) or 0)
    due = steps - applied
    if due <= 0:
        return None
    metadata = {**item.metadata, DECAY_KEY: {"since": since_text, "steps": steps}}
    return Change(item.id, "decay", {"importance": max(1, item.importance - due), "metadata": metadata}, "decay")
