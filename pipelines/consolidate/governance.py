"""Stage 2: landed events folded into governed memory items (policy re-run)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import msgspec

from pipelines.consolidate.common import Hook, call_hook, fold_skipping_bad, parse_time, read_window
from pipelines.materialize import proposal_item_id, quarantine_expiry
from pipelines.message_context import CONTEXT_KEY, ContextWindow, contextualise, session_key, tail_size
from pipelines.records import MemoryItem
from pipelines.settings import Settings
from pipelines.warehouse import LINK_RELS, PATCHABLE_FIELDS, Warehouse


@dataclass
class GovernReport:
    from_seq: int
    to_seq: int
    events: int = 0
    created: int = 0
    messages: int = 0
    accepted: int = 0
    quarantined: int = 0
    rejected: int = 0
    tightened: int = 0  # online verdict made stricter by the current policy
    rejected_now: list[str] = field(default_factory=list)  # event ids accepted online, rejected now
    updated: int = 0
    links: int = 0
    usage: int = 0
    skipped: list[str] = field(default_factory=list)  # "event_id: why"
    policy_version: str = ""


def _builtin(value: Any) -> Any:
    return msgspec.to_builtins(value)


def _diff(old: MemoryItem, new: MemoryItem) -> dict[str, Any]:
    """Patch turning `old` into `new` (warehouse-patchable fields; links go through link())."""
    patch = {}
    for name in sorted(PATCHABLE_FIELDS - {"updated_at"}):
        before, after = getattr(old, name), getattr(new, name)
        if _builtin(before) != _builtin(after):
            patch[name] = _builtin(after)
    if patch and new.updated_at != old.updated_at:
        patch["updated_at"] = new.updated_at
    return patch


def _with_quarantine_expiry(item: MemoryItem, days: float) -> MemoryItem:
    if item.metadata.get("verdict") != "quarantine" or item.expires_at:
        return item
    start = parse_time(item.created_at) or datetime.now(timezone.utc)
    return msgspec.structs.replace(item, expires_at=quarantine_expiry(start, days))


def govern_items(
    inbox: Any,
    warehouse: Warehouse,
    policy: Any,
    *,
    settings: Settings,
    hook: Hook | None = None,
) -> GovernReport:
    """Fold the landed events after the watermark into items, re-running the current
    policy on every proposal, and store the result with the new watermark in one
    transaction. Accepted items go to STM, quarantined ones to STM unverified with an
    expiry, rejected ones stay events only; turns become `message` items; updates, links
    and usage are applied to stored items."""
    from_seq = warehouse.last_ingested_seq()
    window, _ = read_window(inbox, from_seq)
    landed = warehouse.landed_ids([e.event_id for e in window]) if window else set()
    batch = list(itertools.takewhile(lambda e: e.event_id in landed, window))
    report = GovernReport(from_seq=from_seq, to_seq=from_seq, events=len(batch),
                          policy_version=str(getattr(policy, "version", "") or _policy_version()))
    if not batch:
        return report
    report.to_seq = batch[-1].seq

    overlay, report.skipped = fold_skipping_bad(batch, warehouse.get_item, policy)
    wanted = list(dict.fromkeys([*overlay.items, *overlay.usage, *(d for _, d, _ in overlay.links)]))
    stored = {i.id: i for i in warehouse.get_items(wanted)}

    new_items: dict[str, MemoryItem] = {}
    patches: dict[str, dict[str, Any]] = {}
    for item_id, item in overlay.items.items():
        item = _with_quarantine_expiry(item, settings.quarantine_days)
        if item_id in stored:
            patch = _diff(stored[item_id], item)
            if patch:
                patches[item_id] = patch
        else:
            new_items[item_id] = item

    # Usage: counts and the time of the latest use, from the usage events themselves.
    last_used: dict[str, str] = {}
    for e in batch:
        if e.kind == "usage":
            for item_id in e.payload.get("item_ids", []) or []:
                last_used[item_id] = max(last_used.get(item_id, ""), e.at)
    for item_id, n in overlay.usage.items():
        if item_id in new_items:
            it = new_items[item_id]
            new_items[item_id] = msgspec.structs.replace(
                it, usage_count=it.usage_count + n, last_used_at=last_used.get(item_id) or it.last_used_at)
        elif item_id in stored:
            patch = patches.setdefault(item_id, {})
            patch["usage_count"] = stored[item_id].usage_count + n
            patch["last_used_at"] = max(filter(None, [stored[item_id].last_used_at, last_used.get(item_id)]),
                                        default=None)
        else:
            report.skipped.append(f"usage of unknown item {item_id}")
            continue
        report.usage += n

    links = []
    for src, dst, rel in dict.fromkeys(overlay.links):
        known = (src in stored or src in new_items) and (dst in stored or dst in new_items)
        if rel not in LINK_RELS or not known or src == dst:
            report.skipped.append(f"link {src} -{rel}-> {dst}: unknown item or relation")
            continue
        if src not in new_items:  # a new item's links are stored with it
            links.append((src, dst, rel))
        if rel == "supersedes":  # "src supersedes dst": dst stops being active
            target = new_items.get(dst) or stored[dst]
            if target.superseded_by is None:
                if dst in new_items:
                    new_items[dst] = msgspec.structs.replace(target, superseded_by=src)
                else:
                    patches.setdefault(dst, {})["superseded_by"] = src
    # Links of new items that cannot be stored (unknown relation) would fail the batch.
    for item_id, item in new_items.items():
        good = [link for link in item.links if link.rel in LINK_RELS]
        if len(good) != len(item.links):
            new_items[item_id] = msgspec.structs.replace(item, links=good)

    # Verdict counts, per proposal event.
    for e in batch:
        if e.kind != "proposal" or any(s.startswith(e.event_id) for s in report.skipped):
            continue
        item = overlay.items.get(proposal_item_id(e.event_id))
        action = "reject" if item is None else str(item.metadata.get("verdict", "accept"))
        report.accepted += action == "accept"
        report.quarantined += action == "quarantine"
        report.rejected += action == "reject"
        online = str((e.payload.get("verdict") or {}).get("action", "accept"))
        order = {"accept": 0, "quarantine": 1, "reject": 2}
        report.tightened += order.get(action, 0) > order.get(online, 0)
        if action == "reject" and online != "reject":
            report.rejected_now.append(e.event_id)
    # Messages get their conversational retrieval context; the last stored turn of a
    # session gains the turn that answers it (a metadata update, then a new vector).
    context_patches: dict[str, dict[str, Any]] = {}
    window = ContextWindow(settings.message_context_previous, settings.message_context_following,
                           settings.message_context_date)
    if window.enabled:
        touched = {session_key(i) for i in new_items.values() if i.type == "message"}
        tails = warehouse.session_tails(sorted(touched), tail_size(window))
        new_items, recontext = contextualise(new_items, tails, window)
        by_id = {t.id: t for t in tails}
        for item_id, context in recontext.items():
            if item_id in patches:  # e.g. a usage update in the same batch: one revision
                base = patches[item_id].get("metadata", by_id[item_id].metadata)
                patches[item_id]["metadata"] = {**base, CONTEXT_KEY: context}
            else:
                context_patches[item_id] = {"metadata": {**by_id[item_id].metadata, CONTEXT_KEY: context}}
    report.messages = sum(1 for i in new_items.values() if i.type == "message")
    report.created = len(new_items)
    report.updated = len(patches)
    report.links = len(links)

    with warehouse.transaction():
        warehouse.put_items(list(new_items.values()), reason="create")
        if patches:
            warehouse.update_items(patches, reason="inbox_update")
        if context_patches:
            warehouse.update_items(context_patches, reason="message_context")
        for src, dst, rel in links:
            warehouse.link(src, dst, rel)
        warehouse.set_last_ingested_seq(report.to_seq)
        call_hook(hook, "govern:before_commit")
    return report


def _policy_version() -> str:
    try:
        from pipelines.policy import POLICY_VERSION
    except ImportError:  # pragma: no cover - the policy module is part of the package
        return ""
    return str(POLICY_VERSION)
