"""Read-side helpers for the command line: show an item, stats, export, tier listing.

They read the warehouse read-only when no consolidation run holds it, and otherwise fall
back to the published snapshot plus the inbox (what the service serves), saying so.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Callable
from typing import IO, Any

import msgspec

from pipelines.forgetting import fold_served, forget_turns, is_forgotten
from pipelines.inbox import inbox_exists, open_inbox
from pipelines.item_history import last_published
from pipelines.materialize import (
    FORGET_REASON,
    HELD_EDIT,
    HELD_EDIT_RULES,
    RESTORED,
    forget_reason,
    forgotten_tombstone,
    held_edit,
    in_quarantine,
    is_tombstone,
    item_ids_touched,
    recall_state,
    with_held_edit,
)
from pipelines.records import Event, MemoryItem, parse_time, time_zone
from pipelines.settings import Settings
from pipelines.warehouse import Warehouse, WarehouseError


def _open_warehouse(settings: Settings) -> Warehouse | None:
    if not settings.warehouse_path.exists():
        return None
    try:
        return Warehouse(settings.warehouse_path, read_only=True)
    except WarehouseError:
        return None  # held by a running consolidation, or not migrated yet


def _pending_events(settings: Settings, after_seq: int) -> list[Event]:
    if not inbox_exists(settings):
        return []
    with open_inbox(settings) as inbox:
        return inbox.read_after(after_seq)


def reads_of(settings: Settings, item_id: str) -> list[dict[str, Any]]:
    """Who was shown `item_id` and when, oldest first: each read that returned it (a search,
    a read, a browser card, the items API), and each write attempt on it the service refused
    (`refused`: why), from the inbox's `audit` events (they keep the action and the ids, never
    content). Its accepted changes are `describe_item`'s."""
    if not inbox_exists(settings):
        return []
    with open_inbox(settings) as inbox:
        events = inbox.read_after(0, kinds=["audit"])
    return [{"at": e.at, "user": e.identity.user_id, "project": e.identity.project_id,
             "session": e.identity.session_id, "org": e.identity.org_id, "action": e.payload.get("action", ""),
             "refused": (str(e.payload.get("reason") or e.payload["outcome"])
                         if e.payload.get("outcome") in ("rejected", "refused") else None)}
            for e in events if item_id in (e.payload.get("result_ids") or ())]


def served_items(settings: Settings) -> list[MemoryItem]:
    """Active items as the service serves them: the newest good snapshot, then the inbox
    events after its watermark folded over it as the service folds them (`fold_served`:
    what they forget applied to the served turns), what a read can see without the
    warehouse (while a run holds it), ordered by id."""
    from pipelines.snapshot import load_latest_good

    snapshot, _problems = load_latest_good(settings.snapshots_path)
    items = {it.id: it for it in (snapshot.items if snapshot else [])}
    pending = _pending_events(settings, snapshot.manifest.watermark if snapshot else 0)
    if pending:
        items.update(fold_served(pending, items.get, items.values, lambda i: last_published(snapshot, i))[1])
    return sorted((it for it in items.values() if it.active), key=lambda it: it.id)


def served_counts(items: list[MemoryItem]) -> dict[str, Any]:
    """`loci stats` of `served_items`: active items per tier/type and per recall state (a
    forgotten claim or turn is stored, counted, and never recalled: `retracted`)."""
    return {"active_items": len(items),
            "by_tier_type": dict(sorted(Counter(f"{it.tier}/{it.type}" for it in items).items())),
            "by_state": dict(sorted(Counter(recall_state(it) for it in items).items()))}


def _pending_rows(events: list[Event], item_id: str, before: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The inbox events after the last consolidation that created or changed the item: the
    changes consolidation has not stored as revisions yet (an edit's old values read from
    `before`, the item as last stored)."""
    mine = [ev for ev in events if item_id in item_ids_touched(ev)]
    notes = inbox_notes([{"kind": ev.kind, "payload": ev.payload} for ev in mine], before)
    return [{"seq": ev.seq, "at": ev.at, "kind": ev.kind, "actor": ev.identity.user_id, "note": note}
            for ev, note in zip(mine, notes, strict=True)]


def describe_item(settings: Settings, item_id: str) -> dict[str, Any] | None:
    """The item, its revisions and audit events (warehouse), or its pending state; with
    `pending`, the inbox events since the last consolidation that created or changed it."""
    wh = _open_warehouse(settings)
    after = 0
    if wh is not None:
        with wh:
            item = wh.get_item(item_id)
            after = wh.last_ingested_seq()
            if item is not None:
                loc = wh.location_of(item_id)
                pending = _pending_events(settings, after)
                # Shown as served now: a forgetting in the inbox rebuilds a neighbour's
                # context at once in the service, so the stored one may quote what is gone.
                owner = [(item.scope.org_id, item.scope.user_id)]
                served = fold_served(pending, wh.get_item, lambda: wh.owned_messages(owner))[1].get(item_id)
                return {
                    "source": "warehouse" if served is None else "warehouse, with inbox changes not consolidated yet",
                    "item": msgspec.to_builtins(served or item),
                    "held_edit": held_change(served or item),
                    "palace": loc.path if loc else None,
                    "revisions": wh.revisions(item_id),
                    "events": wh.item_events(item_id),
                    "pending": _pending_rows(pending, item_id, msgspec.to_builtins(item)),
                    "earlier": earlier_versions(served or item, wh.get_item, wh.item_events, pending, wh.revisions),
                    "said_otherwise_by": _said_otherwise_by(wh, item),
                }
    events = _pending_events(settings, after)
    made = fold_served(events, lambda _id: None, tuple)[1] if events else {}
    if item_id in made:
        return {
            "source": "inbox (not consolidated yet)",
            "item": msgspec.to_builtins(made[item_id]),
            "held_edit": held_change(made[item_id]),
            "revisions": [],
            "events": [],
            "pending": _pending_rows(events, item_id),
            "earlier": earlier_versions(made[item_id], made.get, lambda _id: [], events),
        }
    return None


def earlier_versions(item: MemoryItem, get_item: Callable[[str], MemoryItem | None],
                      events_of: Callable[[str], list[dict[str, Any]]], pending: list[Event],
                      revisions_of: Callable[[str], list[dict[str, Any]]] | None = None) -> list[dict[str, Any]]:
    """The claims `item` replaced (its `supersedes` links, and theirs), newest first: each
    with its id, content, who stated it and when (its first change, stored or pending; with
    `revisions_of`, the change that gave it the words it ended with: `_worded`, a claim
    edited since it was written said them later, maybe by another).
    "When did this change and who changed it?" is asked of the current claim; a correction
    is a new item, so the versions before it are on their own records. `get_item`: a reader's
    lookup (the browser's: only what the viewer may see, nothing forgotten)."""
    out: list[dict[str, Any]] = []
    seen = {item.id}
    queue = [link.to for link in item.links if link.rel == "supersedes"]
    while queue:
        old_id = queue.pop(0)
        if old_id in seen:
            continue
        seen.add(old_id)
        old = get_item(old_id)
        if old is None:
            continue
        events = events_of(old_id)
        first = next(iter(history_rows({"events": events}) + _pending_rows(pending, old_id)), None)
        stated = (_worded(revisions_of(old_id), events) if revisions_of is not None else None) or first or {}
        out.append({"id": old.id, "title": old.title, "content": old.content,
                    "by": stated.get("actor"), "at": stated.get("when", stated.get("at"))})
        queue += [link.to for link in old.links if link.rel == "supersedes"]
    return out


def _worded(revisions: list[dict[str, Any]], events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Who gave a stored claim the words it ends with, and when: the last person's revision
    that set its title or content (`history_rows`' pairing of revisions and events), the
    words of an approved edit its editor's (`metadata.review.edit_by`); None when none did."""
    found = None
    stated = iter(revisions)
    previous: tuple[Any, ...] | None = None
    for event in events:
        if event["action"] not in REVISION_ACTIONS:
            continue
        snapshot = next(stated, {}).get("snapshot") or {}
        review = (snapshot.get("metadata") or {}).get("review") or {}
        now = (snapshot.get("title"), snapshot.get("content"), review)
        if event.get("actor") is not None and (previous is None or now[:2] != previous[:2]):
            approved = review != previous[2] if previous is not None else False  # this revision's review
            found = {"actor": (review.get("edit_by") if approved else None) or event["actor"],
                     "at": str(event.get("requested_at") or event["at"])}
        previous = now
    return found


SESSION_TURNS_READ = 500  # of a user turn's chat, the last turns read for the ones that answered it


def _said_otherwise_by(wh: Warehouse, turn: MemoryItem) -> list[dict[str, Any]]:
    """For a raw turn a claim was said in that curated corrections replaced since (the turn
    that proposed it, or the user turn that one answered), each correction (id, title,
    content), the newest first, as recall names them (`pipelines.recall.episodic.replaced_by`)."""
    from pipelines.recall.episodic import answered_turn

    if turn.type != "message":
        return []
    chat = (wh.session_tails([(turn.scope.org_id, turn.scope.user_id, str(turn.metadata.get("session_id") or ""))],
                             SESSION_TURNS_READ) if turn.metadata.get("role") == "user" else [])
    said = {t.id: t for t in chat if t.metadata.get("role") != "user"}
    pairs = wh.corrections_naming([turn.id, *said])
    fixes = {f.id: f for f in wh.get_items(sorted({fix for fix, _ in pairs}))} if pairs else {}
    out: dict[str, MemoryItem] = {}
    for fix_id, turn_id in pairs:
        fix = fixes.get(fix_id)
        if fix is None or fix.validation == "retracted" or in_quarantine(fix):
            continue
        answered = answered_turn(said[turn_id], fix, chat) if turn_id in said else None
        if turn_id == turn.id or (answered is not None and answered.id == turn.id):
            out.setdefault(fix.id, fix)
    return [{"id": f.id, "title": f.title, "content": f.content} for f in out.values()]


def said_otherwise_lines(found: dict[str, Any]) -> list[str]:
    """`describe_item`'s corrections of what a turn said as text (`loci show`), one each."""
    return [f"{fix['id']}  {fix['title']!r}: {_short(fix['content'], 80)}"
            for fix in found.get("said_otherwise_by", [])]


def earlier_lines(found: dict[str, Any], zone: str = "UTC") -> list[str]:
    """`describe_item`'s earlier versions as text (`loci show`), one line each, the times
    on `zone`'s clock."""
    return [f"{shown_at(e['at'], zone) if e['at'] else '?'}  {e['by'] or '?':<10} {e['id']}  {_short(e['content'], 80)}"
            for e in found.get("earlier", [])]


def held_change(item: MemoryItem) -> dict[str, Any] | None:
    """The change held for review beside `item` (`materialize.held_edit`), None when none
    waits: its `kind` ("edit", or "retraction"), who proposed it and when, the rules that
    held it, and each field it sets with its value now (`old`) and once approved (`new`)."""
    edit = held_edit(item)
    if edit is None:
        return None
    patch = dict(edit.get("patch") or {})
    before, after = msgspec.to_builtins(item), msgspec.to_builtins(with_held_edit(item))
    return {"kind": "retraction" if patch.get("validation") == "retracted" else "edit",
            "by": edit.get("by"), "at": edit.get("at"), "rule_ids": list(edit.get("rule_ids") or []),
            "changes": {name: {"old": before.get(name), "new": after.get(name)} for name in sorted(patch)}}


def held_lines(found: dict[str, Any]) -> list[str]:
    """`describe_item`'s held change as text (`loci show`): who proposed what, then each
    field's old -> new value (the item answers as before until a review)."""
    held = found.get("held_edit")
    if not held:
        return []
    rules = f" ({', '.join(held['rule_ids'])})" if held["rule_ids"] else ""
    lines = [f"held for review: {held['kind']} by {held['by']}, {str(held['at'])[:19].replace('T', ' ')}{rules}; "
             "the item reads as above until a reviewer decides"]
    return lines + [f"  {name}: {_text_change(change['old'], change['new'], width=_HELD_WIDTH)}"
                    for name, change in held["changes"].items()]


_HELD_WIDTH = 200  # a held value is what the reviewer decides on: shown whole unless very long


# Audit actions that write a revision of the item (one revision each, in the same order).
REVISION_ACTIONS = frozenset({"create", "update", "retract", "archive", "supersede"})
_NOT_SHOWN = frozenset({"updated_at", "content_hash"})
# Consolidation's usage bookkeeping: folded into whatever revision its run writes, so on a
# person's change (a correction superseding the item) it is not theirs to be shown under.
_BOOKKEEPING = frozenset({"usage_count", "last_used_at"})


def _short(value: Any, width: int = 40) -> str:
    """A value on one line, cut to `width`; text quoted, anything else as JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    text = text if len(text) <= width else text[: width - 1] + "…"
    return repr(text) if isinstance(value, str) else text


def _changes(before: dict[str, Any] | None, after: dict[str, Any], by_person: bool = False) -> str:
    """What a revision changed, compactly: `field: old -> new; ...`; the first one says what
    was stored and why it was (the proposal's `why_store`). `by_person`: a person's change,
    shown without the pipeline's bookkeeping folded into it."""
    if before is None:
        why = (after.get("metadata") or {}).get("why_store")
        return f"{after.get('type')} {_short(after.get('title', ''))}" + (f"; why: {_short(why, 60)}" if why else "")
    hidden = _NOT_SHOWN | _BOOKKEEPING if by_person else _NOT_SHOWN
    parts = []
    for name, new in after.items():
        old = before.get(name)
        if name in hidden or old == new:
            continue
        if name == "metadata" and isinstance(old, dict) and isinstance(new, dict):
            parts += _metadata_changes(old, new)
        elif isinstance(old, dict) and isinstance(new, dict):  # scope: the keys that changed
            parts += [f"{name}.{k}: {_short(old.get(k))} -> {_short(new.get(k))}"
                      for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)]
        else:
            parts.append(f"{name}: {_text_change(old, new)}")
    return "; ".join(parts) or "(no field changed)"


def _metadata_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The metadata keys a revision changed, `key: old -> new`; a review and a held edit as a
    person reads them: an edit held ("held for review: content -> '...' (rules)") and its
    decision ("approved by tom (the edit by raj): 'the note'"), the hold it decided not again."""
    review = new.get("review") if new.get("review") != old.get("review") else None
    parts = []
    for key in sorted(old.keys() | new.keys()):
        if old.get(key) == new.get(key):
            continue
        if key == "review" and isinstance(review, dict):
            parts.append(_review_note(review))
        elif key == RESTORED and isinstance(new.get(key), dict):
            parts.append(f"restored: {new[key].get('note')}")
        elif key == HELD_EDIT and isinstance(new.get(key), dict):
            parts.append(_held_note(new[key]))
        elif key == HELD_EDIT and isinstance(review, dict):
            continue  # the hold the review decided: said by the review's note
        elif key == HELD_EDIT:
            parts.append("the change held for review lapsed (dropped, nothing changed)")
        else:
            parts.append(f"metadata.{key}: {_short(old.get(key))} -> {_short(new.get(key))}")
    return parts


def _review_note(review: dict[str, Any]) -> str:
    """A review as a revision records it (`metadata.review`): who decided whose held change and why."""
    decision = str(review.get("decision"))
    decided = {"approve": "approved", "reject": "rejected"}.get(decision, decision)
    whose = f" (the edit by {review['edit_by']})" if review.get("edit_by") else ""
    note = f": {_short(review['note'], _HELD_WIDTH)}" if review.get("note") else " (no note)"
    return f"{decided} by {review.get('by') or '?'}{whose}{note}"


def _held_note(edit: dict[str, Any]) -> str:
    """A change held for review beside an item (`metadata.held_edit`): what it would set."""
    patch = edit.get("patch") if isinstance(edit.get("patch"), dict) else {}
    rules = f" ({', '.join(edit['rule_ids'])})" if edit.get("rule_ids") else ""
    if patch.get("validation") == "retracted":
        why = f": {_short(edit[FORGET_REASON], _HELD_WIDTH)}" if edit.get(FORGET_REASON) else ""
        return f"a retraction held for review{rules}{why}"
    fields = "; ".join(f"{name} -> {_short(value, _HELD_WIDTH)}" for name, value in sorted(patch.items()))
    return f"held for review{rules}: {fields}"


def _text_change(old: Any, new: Any, width: int = 40) -> str:
    """`old -> new`, each cut to `width`; two long texts that open alike are shown from the
    word where they part ("'…EU region.' -> '…EU region, backups included.'"): cut at the
    same width, an edit after the opening words would read as no change at all."""
    if isinstance(old, str) and isinstance(new, str):
        a, b = " ".join(old.split()), " ".join(new.split())
        if max(len(a), len(b)) > width:
            same = len(os.path.commonprefix([a, b]))
            start = a.rfind(" ", 0, max(0, same - width // 3)) + 1  # a word or two of context, from a word start
            if start > 0:
                return f"{_short('…' + a[start:], width)} -> {_short('…' + b[start:], width)}"
    return f"{_short(old, width)} -> {_short(new, width)}"


def _event_note(event: dict[str, Any]) -> str:
    details = event.get("details") or {}
    action = event["action"]
    if action == "refused":
        return f"{details.get('attempted', '?')}: {details.get('reason', '')} (nothing changed)"
    if action == "link":
        return f"-{details.get('rel')}-> {details.get('dst_id')}"
    if action == "palace.assign":
        return f"{details.get('previous') or '-'} -> {details.get('path')}"
    return ", ".join(f"{k}={v}" for k, v in details.items() if k not in ("fields",))


def shown_at(stamp: Any, zone: str = "UTC") -> str:
    """An ISO-8601 time as "YYYY-MM-DD HH:MM:SS" on `zone`'s clock ("-" for none): the
    history as its reader lives it (`loci show --tz`, the memory browser). A time stored
    without an offset is UTC's."""
    when = parse_time(str(stamp)) if stamp else None
    if when is None:
        return str(stamp or "-")[:19].replace("T", " ")
    return when.astimezone(time_zone(zone)).strftime("%Y-%m-%d %H:%M:%S")


def history_rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per audit event of `describe_item`'s record (or of a snapshot's published
    history), oldest first: `when` (UTC, to the second; `at`: as stored), `actor` ("pipeline"
    for its own work), `action`, `seq`
    (the inbox seq, or None) and `note`, what changed (for an event that wrote a revision,
    the fields that revision changed). A refused attempt by a caller of another org than the
    item's (its reader's: only its org's own may read it) names them with it, "tom (org
    globex)": a same-named user of the item's org is someone else."""
    home = next((r["snapshot"].get("scope", {}).get("org_id") for r in found.get("revisions", [])), None)
    revisions = iter(found.get("revisions", []))
    previous: dict[str, Any] | None = None
    rows = []
    for event in found.get("events", []):
        action = event["action"]
        if action in REVISION_ACTIONS:
            revision = next(revisions, None)
            if revision is None:
                note = _event_note(event)
            else:
                snapshot = revision["snapshot"]
                note = _changes(previous, snapshot, by_person=event.get("actor") is not None)
                previous = snapshot
                if revision["reason"] not in (action, "create", "inbox_update"):
                    action = f"{action} ({revision['reason']})"
        else:
            note = _event_note(event)
        at = str(event.get("requested_at") or event["at"])
        actor = event.get("actor") or "pipeline"
        org = (event.get("details") or {}).get("org")
        if org and home and org != home:
            actor = f"{actor} (org {org})"
        rows.append({"when": at[:19].replace("T", " "), "at": at, "actor": actor, "action": action,
                     "seq": event.get("inbox_seq"), "note": note})
    return rows


def inbox_note(event: dict[str, Any]) -> str:
    """One line saying what an inbox event did to an item."""
    p = event.get("payload") or {}
    kind = event["kind"]
    verdict = (p.get("verdict") or {}) if isinstance(p.get("verdict"), dict) else {}
    rules = ", ".join(verdict.get("rule_ids") or [])
    if kind == "memory.update":
        changed = "changed " + ", ".join(sorted(p.get("patch") or {}))
        if p.get("as_reviewer"):
            changed += " (a correction by the reviewer who approved it)"
        if forget_reason(p):
            changed += f" (forgotten: {forget_reason(p)})"
        if verdict.get("action") == "quarantine" and HELD_EDIT_RULES & set(verdict.get("rule_ids") or ()):
            return f"{changed}: held for review ({rules}), the item unchanged until a review"
        return changed
    if kind == "memory.review":
        return f"{p.get('decision')}" + (f": {p['note']}" if p.get("note") else "")
    if kind == "memory.palace.assign":  # where to, unless withheld (`history_as_read`)
        return f"moved to {p.get('domain')}/{p.get('room')}/{p.get('shelf')}" if p.get("domain") else "moved"
    if kind == "memory.link":
        return f"{p.get('src_id')} -{p.get('rel')}-> {p.get('dst_id')}"
    if kind in ("proposal", "memory.write"):
        return f"verdict {verdict.get('action', 'accept')}" + (f" ({rules})" if rules else "")
    if kind == "turn":
        return f"{p.get('role', '')} turn captured"
    return ""


def inbox_notes(events: list[dict[str, Any]], before: dict[str, Any] | None) -> list[str]:
    """`inbox_note` of each of one item's inbox events, oldest first; an edit applied (not
    held) also says what each field was and became, from `before` (the item as last stored)
    on: "when did this change?" asked before the next consolidation stores it as a revision."""
    state = dict(before or {})
    notes = []
    for event in events:
        note = inbox_note(event)
        patch = (event.get("payload") or {}).get("patch")
        if before is not None and event["kind"] == "memory.update" and isinstance(patch, dict) \
                and "held for review" not in note:
            changed = [f"{name}: {_text_change(state.get(name), value)}" for name, value in sorted(patch.items())
                       if name not in _NOT_SHOWN and state.get(name) != value]
            state.update(patch)
            said = "changed " + ", ".join(sorted(patch))  # inbox_note's words, then what it adds
            if changed and note.startswith(said):
                note = "; ".join(changed) + note[len(said):]
        notes.append(note)
    return notes


def history_lines(found: dict[str, Any], zone: str = "UTC", changes_only: bool = False) -> list[str]:
    """`history_rows` as aligned text lines (`loci show`), then the pending inbox events,
    marked so; the times on `zone`'s clock. `changes_only` (`loci audit`): the changes people
    made, without the pipeline's own work (tiers, palace, usage counts) and the refused
    attempts (`loci audit` lists those among the reads, with the caller's org)."""
    rows = history_rows(found) + [
        {"at": p["at"], "actor": p["actor"], "action": f"{p['kind']} (pending)",
         "seq": p["seq"], "note": p["note"]} for p in found.get("pending", [])]
    return [f"{shown_at(r['at'], zone)}  {r['actor']:<10} {r['action']:<22} "
            f"{'#' + str(r['seq']) if r['seq'] is not None else '-':>6}  {r['note']}"
            for r in rows if not (changes_only and (r["actor"] == "pipeline" or r["action"] == "refused"))]


def collect_stats(settings: Settings) -> dict[str, Any]:
    out: dict[str, Any] = {"data_dir": str(settings.data_dir)}
    if inbox_exists(settings):
        with open_inbox(settings) as inbox:
            events = inbox.read_after(0)
        kinds = Counter(e.kind for e in events)
        verdicts = Counter(
            e.payload.get("verdict", {}).get("action", "?") for e in events if e.kind == "proposal"
        )
        out["inbox"] = {"events": len(events), "max_seq": max((e.seq for e in events), default=0),
                        "by_kind": dict(kinds), "proposal_verdicts": dict(verdicts)}
    wh = _open_warehouse(settings)
    if wh is not None:
        with wh:
            rows = wh.query(
                "SELECT tier, type, count(*) FROM items WHERE NOT archived AND superseded_by IS NULL "
                "GROUP BY ALL ORDER BY ALL"
            )
            out["warehouse"] = {
                "active_items": sum(r[2] for r in rows),
                "by_tier_type": {f"{t}/{ty}": n for t, ty, n in rows},
                "all_items": wh.count_items(active_only=False),
                "last_ingested_seq": wh.last_ingested_seq(),
                "runs": len(wh.runs()),
            }
    elif settings.warehouse_path.exists():
        out["warehouse"] = "busy: a consolidation run holds the file"
    from pipelines.snapshot import current_version

    out["snapshot"] = current_version(settings.snapshots_path)
    return out


def _items(settings: Settings, include_inactive: bool) -> list[MemoryItem]:
    wh = _open_warehouse(settings)
    if wh is None:
        raise WarehouseError(
            f"no readable warehouse at {settings.warehouse_path} (run `loci consolidate` first, "
            "or wait for the running consolidation to finish)"
        )
    with wh:
        if include_inactive:
            ids = [r[0] for r in wh.query("SELECT id FROM items ORDER BY id")]
            return wh.get_items(ids)
        return wh.active_items()


def text_withheld(item: MemoryItem) -> bool:
    """Whether a reader is shown none of `item`'s text: it was retracted (forgotten, by its
    author or with her approval; rejected in review; an import's tombstone)."""
    return item.validation == "retracted"


def as_read(item: MemoryItem) -> MemoryItem:
    """What any reader is shown of `item`, its author too: a retracted one as its tombstone
    (`forgotten_tombstone`: id, type, scope, when; none of its text), any other as is. The
    one rule of every surface that reads items: the items API, memory.read, the palace
    (which leaves it off its shelves), the browser card and the export. Only the operator's
    audit (`loci show`, `loci audit`) and a full backup (`loci export --all`) keep the text.
    A review that rejected it stays on it (decision, by whom, when; not the reviewer's note)."""
    if not text_withheld(item) or is_tombstone(item):
        return item
    shown = forgotten_tombstone(item)
    review = item.metadata.get("review")
    if isinstance(review, dict):
        kept = {k: review[k] for k in ("decision", "by", "at") if k in review}
        shown = msgspec.structs.replace(shown, metadata={**shown.metadata, "review": kept})
    return shown


def history_as_read(item: MemoryItem, revisions: list[dict[str, Any]], events: list[dict[str, Any]],
                    inbox: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                          list[dict[str, Any]]]:
    """`item`'s (revisions, audit events, inbox events) as a reader is shown them (`as_read`):
    of a retracted item, who did what and when only: no revisions (each stored its text),
    the audit events without their details, the inbox events saying what was done (a
    verdict, a decision, the names of the fields an edit changed) but none of the words."""
    if not text_withheld(item):
        return revisions, events, inbox
    return ([], [{**{k: v for k, v in e.items() if k != "details"}, **_why_done(e.get("details") or {})}
                 for e in events],
            [{**ev, "payload": _what_was_done(ev.get("payload") or {})} for ev in inbox])


def _why_done(details: dict[str, Any]) -> dict[str, Any]:
    """Of a withheld item's audit event's details, why a forget forgot it (the reason its
    forgetter gave, `_edit_reason`): what was done, not what was said."""
    reason = str(details.get("reason") or "")
    return {"details": {"reason": reason}} if reason.startswith("forgotten: ") else {}


def _what_was_done(payload: dict[str, Any]) -> dict[str, Any]:
    """An inbox event's payload without what anyone said or wrote: what `inbox_note` reads of
    it, an edit's field names (only `validation` with its value: a retraction says so)."""
    out: dict[str, Any] = {k: payload[k] for k in ("item_id", "role", "decision", "as_reviewer") if k in payload}
    if forget_reason(payload):  # why it was forgotten: its forgetter's words about it, kept
        out[FORGET_REASON] = forget_reason(payload)
    if isinstance(payload.get("patch"), dict):
        out["patch"] = {k: (v if k == "validation" else None) for k, v in payload["patch"].items()}
    if isinstance(payload.get("verdict"), dict):
        out["verdict"] = {k: payload["verdict"][k] for k in ("action", "rule_ids") if k in payload["verdict"]}
    return out


def export_items(settings: Settings, handle: IO[str], *, include_inactive: bool = False,
                 keep: Callable[[MemoryItem], bool] | None = None, with_history: bool = False) -> int:
    """Items as JSON lines. Without `include_inactive` (a full backup), active items only, a
    forgotten (retracted) one as its tombstone: what the user asked to forget leaves no text,
    nor do the raw turns that said it, nor the retrieval context of the turns next to them
    or to a turn its speaker forgot (`forget_turns`, as the service and consolidation apply
    it; here again for what a store forgot before they did). `keep`: which items to write
    (`loci export --user ... --tag ...`: what one caller may see, so tagged); every one else.
    `with_history` (a log, such as the decision log, not a backup to import): each line is
    `{"item": ..., "history": [...]}`, the history the people's changes (`change_log`)."""
    encoder = msgspec.json.Encoder()
    items = _items(settings, include_inactive)
    changed = {} if include_inactive else forget_turns([it for it in items if is_forgotten(it)], items)
    history = _open_warehouse(settings) if with_history else None
    if with_history and history is None:
        raise WarehouseError(f"the warehouse at {settings.warehouse_path} is held by a running consolidation")
    n = 0
    with history or contextlib.nullcontext() as wh:
        for item in items:
            item = changed.get(item.id, item)
            if keep is not None and not keep(item):
                continue
            if not include_inactive:
                item = as_read(item)
            if wh is None:
                handle.write(encoder.encode(item).decode("utf-8") + "\n")
            else:
                log = change_log(item, wh.revisions(item.id), wh.item_events(item.id), whole=include_inactive)
                handle.write(encoder.encode({"item": item, "history": log}).decode("utf-8") + "\n")
            n += 1
    return n


def change_log(item: MemoryItem, revisions: list[dict[str, Any]], events: list[dict[str, Any]],
               whole: bool = False) -> list[dict[str, Any]]:
    """The changes people made to `item`, oldest first, as `history_rows` gives them (when,
    who, what, why: the proposal's reason, a reviewer's note), each with what the item said
    after it (`title`, `content`); the pipeline's own work (tiers, palace) left out. A
    forgotten item's (`text_withheld`) log says only who did what when, unless `whole` (a
    full backup keeps it all)."""
    rows = history_rows({"revisions": revisions, "events": events})
    stated = iter(r["snapshot"] for r in revisions)
    withheld = text_withheld(item) and not whole
    out = []
    for event, row in zip(events, rows, strict=True):
        after = next(stated, None) if event["action"] in REVISION_ACTIONS else None
        if event.get("actor") is None:
            continue
        entry = {"at": row["at"], "by": row["actor"], "action": row["action"], "seq": row["seq"]}
        if not withheld:
            entry["change"] = row["note"]
            if after is not None:
                entry |= {"title": after.get("title"), "content": after.get("content")}
        out.append(entry)
    return out


def tier_listing(settings: Settings, items: list[MemoryItem] | None = None) -> dict[str, list[dict[str, str]]]:
    """Active items per tier (raw chat `message` records left out: they are many), each with
    its state (retracted: never recalled; quarantined: held for review; else empty), of the
    warehouse, or of `items` when given (what the service serves, while a run holds it)."""
    listing: dict[str, list[dict[str, str]]] = {"ltm": [], "mtm": [], "stm": []}
    for item in _items(settings, include_inactive=False) if items is None else items:
        if item.type == "message":
            continue
        owner_id = item.scope.user_id if item.scope.kind in ("user", "session") else item.scope.project_id
        owner = f"{item.scope.kind}:{owner_id}"
        state = recall_state(item)
        state = "" if state == "recallable" else state
        listing[item.tier].append({"type": item.type, "title": item.title, "owner": owner, "id": item.id,
                                   "state": state})
    for rows in listing.values():
        rows.sort(key=lambda r: (r["owner"], r["type"], r["title"]))
    return listing
