"""Stage 2: landed events folded into governed memory items (policy re-run).

Every change a caller asked for is its own revision: the events of a window are folded
into the items they create (and the links, usage and retrieval context they add), while
each edit (`memory.update`, `memory.palace.assign`, a reviewer's `memory.review`) is replayed in inbox order and stored
as one revision and one audit event carrying its actor, inbox seq and request time, so two edits between two runs stay
two revisions. A change that was refused (by the policy, or on an item the caller may not
see; the service records it as an `audit` event) becomes a `refused` audit event and
changes nothing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import msgspec

from pipelines.consolidate.common import (
    Hook,
    MessageVectorsChanged,
    call_hook,
    fold_skipping_bad,
    last_successful_run,
    read_window,
)
from pipelines.consolidate.forgetting_sweep import sweep_forgetting
from pipelines.consolidate.replaced_turns import backfill_replaced_turns
from pipelines.forgetting import forget_turns, newly_forgotten, owners
from pipelines.materialize import (
    ENDS,
    fold_events,
    forget_reason,
    item_ids_touched,
    message_item_id,
    proposal_item_id,
    quarantine_expiry,
    standing_replacer,
    supersedes_now,
    taken_over,
)
from pipelines.message_context import POOLING, ContextWindow, contextualise, session_key, tail_size, with_context
from pipelines.records import Event, MemoryItem, parse_time
from pipelines.settings import Settings
from pipelines.warehouse import LINK_RELS, PATCHABLE_FIELDS, Origin, Warehouse

# Inbox events that edit one stored item: each becomes a revision of its own.
EDIT_KINDS = frozenset({"memory.update", "memory.palace.assign", "memory.review"})


def _edit_reason(event: Event) -> str:
    """The revision reason of an edit: a review says which decision it was."""
    if event.kind == "memory.review":
        return f"review_{event.payload.get('decision')}"
    if event.kind == "memory.update" and forget_reason(event.payload):  # a forget that says why
        return f"forgotten: {forget_reason(event.payload)}"
    return "palace_assign" if event.kind == "memory.palace.assign" else "inbox_update"


# What the service writes for a refused change: an `audit` event with one of these outcomes.
REFUSED_OUTCOMES = frozenset({"rejected", "refused"})
_VERDICT_ORDER = {"accept": 0, "quarantine": 1, "reject": 2}


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
    edits: int = 0  # edit events (EDIT_KINDS) stored, one revision each
    refused: int = 0  # refused attempts recorded as audit events
    links: int = 0
    usage: int = 0
    skipped: list[str] = field(default_factory=list)  # "event_id: why"
    policy_version: str = ""
    message_vectors: str = ""  # the scheme every stored message's vector has (checked)
    forgetting_swept: int = 0  # turns the one-off forgetting sweep changed (`sweep_forgetting`)
    replaced_turns_filled: int = 0  # corrections the one-off backfill named turns on (`backfill_replaced_turns`)


@dataclass
class Edit:
    """One accepted edit, replayed: the fields it changed and who asked for it."""

    item_id: str
    patch: dict[str, Any]
    origin: Origin
    reason: str = "inbox_update"


def origin_of(event: Event) -> Origin:
    """The caller, inbox seq and request time of an inbox event."""
    return Origin(actor=event.identity.user_id, inbox_seq=event.seq,
                  requested_at=str(event.payload.get("at") or event.at))


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


def _creators(batch: list[Event]) -> dict[str, Origin]:
    """item id -> origin of the event that created it (turns, proposals, writes)."""
    out: dict[str, Origin] = {}
    for e in batch:
        if e.kind == "turn" and "turn_id" in e.payload:
            out[message_item_id(str(e.payload["turn_id"]))] = origin_of(e)
        elif e.kind == "proposal":
            out[proposal_item_id(e.event_id)] = origin_of(e)
        elif e.kind == "memory.write" and isinstance(e.payload.get("item"), dict):
            out[str(e.payload["item"].get("id"))] = origin_of(e)
    return out


def replay_edits(
    events: list[Event], items: dict[str, MemoryItem], skipped: list[str],
    batch_links: list[tuple[str, str, str]] = (),
) -> tuple[list[Edit], list[tuple[str, str, str]], dict[str, MemoryItem]]:
    """The edit events (`EDIT_KINDS`) in inbox order, each folded (the same fold the
    service's delta uses) into the item as the edit before it left it. Returns the edits to
    store, as the fields each one changed, the links they make (src, dst, rel): an
    approval supersedes the claims it corrects, and `items` as the edits leave them.
    `batch_links` are those the batch's other events make (a correction standing in the
    chain of one forgotten keeps what that one replaced replaced)."""
    current = dict(items)
    edits: list[Edit] = []
    links: list[tuple[str, str, str]] = []
    for e in events:
        item_id = str(e.payload.get("item_id"))
        before = current.get(item_id)
        if before is None:
            skipped.append(f"{e.event_id}: {e.kind} of unknown item {item_id}")
            continue
        try:
            folded = fold_events([e], base=current.get, known_links=lambda: [*batch_links, *links])
            after = folded.items.get(item_id, before)
        except (KeyError, ValueError, TypeError, msgspec.ValidationError) as exc:
            skipped.append(f"{e.event_id}: {type(exc).__name__}: {exc}")
            continue
        patch = _diff(before, after)
        if not patch:  # refused in the payload, or an invalid patch the fold skips
            skipped.append(f"{e.event_id}: {e.kind} changed nothing")
            continue
        current[item_id] = after
        edits.append(Edit(item_id, patch, origin_of(e), _edit_reason(e)))
        links.extend(folded.links)
        # a forgotten correction: what it replaced stands again (`restored_by_forgetting`), by its forgetter
        for other_id, other in folded.items.items():
            if other_id != item_id and other_id in current and (restored := _diff(current[other_id], other)):
                current[other_id] = other
                edits.append(Edit(other_id, restored, origin_of(e), "restored"))
    return edits, links, current


def replay_ends(events: list[Event], items: dict[str, MemoryItem], created: dict[str, MemoryItem]) -> list[Edit]:
    """The claims that accepted claims among `events` (as folded: `created`) take over from a
    day on (`ENDS`: "From December 1, my address is ..."), each ended as a revision of its
    own by whoever said the new claim (folded with the rest, the end was the pipeline's, or
    part of the old claim's creation when both landed in one window). `items` is updated."""
    out: list[Edit] = []
    for e in events:
        if not e.payload.get(ENDS):
            continue
        if e.kind == "memory.update":  # an edit moving a plan (`MOVED_FROM`)
            accepted = (e.payload.get("verdict") or {}).get("action", "accept") == "accept"
        else:
            new = created.get(next(iter(item_ids_touched(e)), ""))
            accepted = new is not None and new.metadata.get("verdict") == "accept"
        if not accepted:
            continue
        for before, end in taken_over(e.payload, lambda i: items.get(i) or created.get(i)):
            items[before.id] = msgspec.structs.replace(before, valid_to=end, updated_at=e.at)
            out.append(Edit(before.id, {"valid_to": end, "updated_at": e.at}, origin_of(e), "ended"))
    return out


def _without_ends(event: Event) -> Event:
    if ENDS not in event.payload:
        return event
    return msgspec.structs.replace(event, payload={k: v for k, v in event.payload.items() if k != ENDS})


@dataclass
class Refusal:
    """A write attempt the service refused, as its `audit` event recorded it."""

    item_id: str
    attempted: str
    reason: str
    origin: Origin
    details: dict[str, Any]


def refusals(batch: list[Event]) -> list[Refusal]:
    """The refused write attempts the service recorded as `audit` events."""
    out = []
    for e in batch:
        p = e.payload
        if e.kind != "audit" or p.get("outcome") not in REFUSED_OUTCOMES:
            continue
        attempted = str(p.get("action") or "?")
        reason = str(p.get("reason") or ("rejected by the policy" if p.get("outcome") == "rejected"
                                         else "refused"))
        # the caller's org: a same-named user of another org is not the item's org's own (`history_rows`)
        details = {"rule_ids": list((p.get("verdict") or {}).get("rule_ids", [])), "org": e.identity.org_id}
        for item_id in p.get("result_ids") or []:
            out.append(Refusal(str(item_id), attempted, reason, origin_of(e), details))
    return out


def _usage(batch: list[Event], overlay_usage: dict[str, int], new_items: dict[str, MemoryItem],
           stored: dict[str, MemoryItem], patches: dict[str, dict[str, Any]],
           report: GovernReport) -> None:
    """Usage counts and the time of the latest use, from the usage events themselves."""
    last_used: dict[str, str] = {}
    for e in batch:
        if e.kind == "usage":
            for item_id in e.payload.get("item_ids", []) or []:
                last_used[item_id] = max(last_used.get(item_id, ""), e.at)
    for item_id, n in overlay_usage.items():
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


def _links(overlay_links: list[tuple[str, str, str]], new_items: dict[str, MemoryItem],
           stored: dict[str, MemoryItem], patches: dict[str, dict[str, Any]],
           report: GovernReport, edit_links: list[tuple[str, str, str]] = (),
           forgotten: set[str] = frozenset()) -> list[tuple[str, str, str]]:
    """The links to store on stored items, and those edits make (`edit_links`: an
    approval's correction, stored as links whether its item is new or not); `supersedes`
    links deactivate their target, but those of a claim forgotten in the batch
    (`forgotten`: `materialize.supersedes_now`)."""
    links = []
    from_edits = set(edit_links)
    correctors_of: dict[str, list[str]] = {}
    for src, dst, rel in [*overlay_links, *edit_links]:
        if rel == "supersedes":
            correctors_of.setdefault(dst, []).append(src)

    def correctors(item_id: str) -> list[str]:
        it = new_items.get(item_id) or stored.get(item_id)
        return [*([it.superseded_by] if it is not None and it.superseded_by else []), *correctors_of.get(item_id, ())]

    def is_forgotten(item_id: str) -> bool:
        return item_id in forgotten or ((it := new_items.get(item_id) or stored.get(item_id)) is not None
                                        and it.validation == "retracted")

    def stands(item_id: str) -> bool:
        return not is_forgotten(item_id) and (item_id in new_items or item_id in stored)

    for src, dst, rel in dict.fromkeys([*overlay_links, *edit_links]):
        known = (src in stored or src in new_items) and (dst in stored or dst in new_items)
        if rel not in LINK_RELS or not known or src == dst:
            report.skipped.append(f"link {src} -{rel}-> {dst}: unknown item or relation")
            continue
        if src not in new_items or (src, dst, rel) in from_edits:  # a new item's own links are stored with it
            links.append((src, dst, rel))
        # "src supersedes dst": dst stops being active; one a forgotten correction replaced, when
        # a later correction of that one stands (`standing_replacer`), is replaced by that one
        by = None if rel != "supersedes" else src if src not in forgotten else standing_replacer(
            src, correctors, stands, is_forgotten)
        if by is not None:
            target = new_items.get(dst) or stored[dst]
            if target.superseded_by is None:
                if dst in new_items:
                    new_items[dst] = msgspec.structs.replace(target, superseded_by=by)
                else:
                    patches.setdefault(dst, {})["superseded_by"] = by
    # A claim whose correction is forgotten now while a later one stands is replaced by that one
    # (A, B correcting it, C correcting B, B forgotten: A's `superseded_by` names C, not B).
    for gone in forgotten:
        it = new_items.get(gone) or stored.get(gone)
        for dst in (link.to for link in (it.links if it is not None else ()) if link.rel == "supersedes"):
            target = new_items.get(dst) or stored.get(dst)
            if (target is None or target.superseded_by != gone or dst in new_items
                    or (by := standing_replacer(gone, correctors, stands, is_forgotten)) is None):
                continue
            patches.setdefault(dst, {})["superseded_by"] = by
    # Links of new items that cannot be stored (unknown relation) would fail the batch.
    for item_id, item in new_items.items():
        good = [link for link in item.links if link.rel in LINK_RELS]
        if len(good) != len(item.links):
            new_items[item_id] = msgspec.structs.replace(item, links=good)
    return links


def _count_verdicts(batch: list[Event], items: dict[str, MemoryItem], report: GovernReport) -> None:
    """Verdict counts, per proposal event."""
    for e in batch:
        if e.kind != "proposal" or any(s.startswith(e.event_id) for s in report.skipped):
            continue
        item = items.get(proposal_item_id(e.event_id))
        action = "reject" if item is None else str(item.metadata.get("verdict", "accept"))
        report.accepted += action == "accept"
        report.quarantined += action == "quarantine"
        report.rejected += action == "reject"
        online = str((e.payload.get("verdict") or {}).get("action", "accept"))
        report.tightened += _VERDICT_ORDER.get(action, 0) > _VERDICT_ORDER.get(online, 0)
        if action == "reject" and online != "reject":
            report.rejected_now.append(e.event_id)


def _context(warehouse: Warehouse, new_items: dict[str, MemoryItem],
             patches: dict[str, dict[str, Any]], settings: Settings,
             forgotten: dict[str, MemoryItem] | None = None,
             ) -> tuple[dict[str, MemoryItem], dict[str, dict[str, Any]]]:
    """Messages get their conversational retrieval context; the last stored turn of a
    session gains the turn that answers it (a metadata update, then a new vector).
    `forgotten`: stored turns as this batch's forgetting leaves them (`_forget`)."""
    context_patches: dict[str, dict[str, Any]] = {}
    window = ContextWindow.of(settings)
    if not window.enabled:
        return new_items, context_patches
    touched = {session_key(i) for i in new_items.values() if i.type == "message"}
    tails = [(forgotten or {}).get(t.id, t) for t in warehouse.session_tails(sorted(touched), tail_size(window))]
    new_items, recontext = contextualise(new_items, tails, window)
    by_id = {t.id: t for t in tails}
    for item_id, fields in recontext.items():
        if item_id in patches:  # e.g. a usage update in the same batch: one revision
            base = patches[item_id].get("metadata", by_id[item_id].metadata)
            patches[item_id]["metadata"] = with_context(base, fields)
        else:
            context_patches[item_id] = {"metadata": with_context(by_id[item_id].metadata, fields)}
    return new_items, context_patches


@dataclass
class _Writes:
    """What one governance pass stores, in this order (see `_store`)."""

    batch: list[Event]
    new_items: dict[str, MemoryItem]
    patches: dict[str, dict[str, Any]]  # stored items changed by writes: before the edits
    asked: list[Edit | Refusal]  # in inbox order
    later: dict[str, dict[str, Any]]  # usage, supersession: after the edits
    context_patches: dict[str, dict[str, Any]]
    links: list[tuple[str, str, str]]


def _split_overlay(items: dict[str, MemoryItem], stored: dict[str, MemoryItem], settings: Settings
                   ) -> tuple[dict[str, MemoryItem], dict[str, dict[str, Any]]]:
    """Folded items -> (new items, patches of stored items)."""
    new_items: dict[str, MemoryItem] = {}
    patches: dict[str, dict[str, Any]] = {}
    for item_id, item in items.items():
        item = _with_quarantine_expiry(item, settings.quarantine_days)
        if item_id in stored:
            patch = _diff(stored[item_id], item)
            if patch:
                patches[item_id] = patch
        else:
            new_items[item_id] = item
    return new_items, patches


def _forget(warehouse: Warehouse, batch: list[Event], stored: dict[str, MemoryItem],
            final: dict[str, MemoryItem], new_items: dict[str, MemoryItem]
            ) -> tuple[dict[str, MemoryItem], list[Edit], dict[str, MemoryItem]]:
    """The claims this batch forgets (`final`: items as the batch leaves them), and what
    that changes among the stored and new raw turns (`forget_turns`): new turns are
    changed in `new_items` (before they get their context), stored ones are edits made by
    the event that forgot the claim, stored in its inbox order (and returned as they
    become, for the new turns' context)."""
    forgotten = newly_forgotten(final.values(), stored.get)
    if not forgotten:
        return new_items, [], {}
    turns = {t.id: t for t in warehouse.owned_messages(sorted(owners(forgotten)))}
    turns.update((i, t) for i, t in new_items.items() if t.type == "message")
    changed = forget_turns(forgotten, turns.values())
    by = {e.payload.get("item_id") or (e.payload.get("item") or {}).get("id"): origin_of(e)
          for e in batch if e.kind in ("memory.update", "memory.review", "memory.write")}
    first = min((by[c.id] for c in forgotten if c.id in by), key=lambda o: o.inbox_seq or 0, default=None)
    origin = first or Origin(inbox_seq=batch[-1].seq)
    edits = [Edit(i, _diff(turns[i], t), origin, "forgotten") for i, t in changed.items() if i not in new_items]
    # A new turn its speaker forgot in this batch is retracted before the new turns get
    # their context (`_context`), which then leaves it out, as it leaves a stored one out.
    new_items = {**new_items, **{t.id: msgspec.structs.replace(new_items[t.id], validation="retracted")
                                 for t in forgotten if t.type == "message" and t.id in new_items}}
    return ({**new_items, **{i: t for i, t in changed.items() if i in new_items}}, [e for e in edits if e.patch],
            {i: t for i, t in changed.items() if i not in new_items})


def _plan(batch: list[Event], warehouse: Warehouse, policy: Any, settings: Settings,
          report: GovernReport) -> _Writes:
    updates = [e for e in batch if e.kind in EDIT_KINDS]
    # what a claim takes over from a day on ends as a step of its own (`replay_ends`)
    overlay, report.skipped = fold_skipping_bad(
        [_without_ends(e) for e in batch if e.kind not in EDIT_KINDS], warehouse.get_item, policy)
    wanted = list(dict.fromkeys([*overlay.items, *overlay.usage, *(d for _, d, _ in overlay.links),
                                 *(str(e.payload.get("item_id")) for e in updates),
                                 *(str(old) for e in batch for old in e.payload.get(ENDS) or ()),
                                 *(str(old) for e in updates for key in ("supersedes", "refines")
                                   for old in e.payload.get(key) or ())]))
    stored = {i.id: i for i in warehouse.get_items(wanted)}
    # what a forget among the edits may bring back: the claims the forgotten ones replaced, and
    # theirs through the ones forgotten before (`restored_by_forgetting`), and what replaced them
    edited = [it for e in updates if (it := stored.get(str(e.payload.get("item_id")))
                                     or overlay.items.get(str(e.payload.get("item_id")))) is not None]
    while edited:
        more = list(dict.fromkeys(i for it in edited for i in (
            *(link.to for link in it.links if link.rel == "supersedes"), it.superseded_by)
            if i and i not in stored and i not in overlay.items))
        found = warehouse.get_items(more) if more else []
        stored.update((i.id, i) for i in found)
        edited = [it for it in found if it.validation == "retracted" or it.superseded_by]
    new_items, patches = _split_overlay(overlay.items, stored, settings)
    edits, edit_links, edited = replay_edits(updates, {**stored, **new_items}, report.skipped, overlay.links)
    edits += replay_ends(batch, edited, overlay.items)
    final = {**overlay.items, **{e.item_id: edited[e.item_id] for e in edits}}
    new_items, forgetting, forgotten_turns = _forget(warehouse, batch, stored, final, new_items)
    later: dict[str, dict[str, Any]] = {}
    _usage(batch, overlay.usage, new_items, stored, later, report)
    links = _links(overlay.links, new_items, stored, later, report, edit_links,
                   {i for i, it in final.items() if not supersedes_now(it)})
    _count_verdicts(batch, overlay.items, report)
    new_items, context_patches = _context(warehouse, new_items, later, settings, forgotten_turns)
    refused = refusals(batch)
    report.messages = sum(1 for i in new_items.values() if i.type == "message")
    report.created = len(new_items)
    report.updated = len(patches.keys() | later.keys() | {e.item_id for e in [*edits, *forgetting]})
    report.edits, report.refused, report.links = len(edits), len(refused), len(links)
    asked = sorted([*edits, *refused, *forgetting], key=lambda step: step.origin.inbox_seq or 0)
    return _Writes(batch, new_items, patches, asked, later, context_patches, links)


def _store(warehouse: Warehouse, w: _Writes) -> None:
    """Everything of one pass, inside the caller's transaction."""
    warehouse.put_items(list(w.new_items.values()), reason="create", origin=_creators(w.batch))
    # A person's change carries its own updated_at (see _diff); the rest is usage.
    if w.patches:
        warehouse.update_items(w.patches, reason="inbox_update", touch=False)
    for step in w.asked:
        if isinstance(step, Edit):
            warehouse.update_items({step.item_id: step.patch}, reason=step.reason, origin=step.origin)
        else:
            warehouse.refuse(step.item_id, attempted=step.attempted, reason=step.reason,
                             origin=step.origin, details=step.details)
    link_origins = {(e.payload.get("src_id"), e.payload.get("dst_id"), e.payload.get("rel")): origin_of(e)
                    for e in reversed(w.batch) if e.kind == "memory.link"}
    link_origins.update({(e.payload.get("item_id"), old, rel): origin_of(e)  # an approval's or edit's correction
                         for e in reversed(w.batch) if e.kind in ("memory.review", "memory.update")
                         for rel in ("supersedes", "refines") for old in e.payload.get(rel) or ()})
    bookkeeping = {item_id: patch for item_id, patch in w.later.items() if "superseded_by" not in patch}
    if bookkeeping:
        warehouse.update_items(bookkeeping, reason="inbox_update", touch=False)
    creators = _creators(w.batch) if len(bookkeeping) < len(w.later) else {}
    for item_id, patch in w.later.items():
        if item_id not in bookkeeping:  # retired by a correction: whoever made it is the actor
            by = patch["superseded_by"]
            warehouse.update_items({item_id: patch}, reason="superseded", touch=False,
                                   origin=link_origins.get((by, item_id, "supersedes")) or creators.get(by))
    if w.context_patches:
        warehouse.update_items(w.context_patches, reason="message_context")
    for src, dst, rel in w.links:
        warehouse.link(src, dst, rel, origin=link_origins.get((src, dst, rel)))


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
    expiry, rejected ones stay events only; turns become `message` items; each update is
    its own revision (see the module docstring); links and usage are applied to stored
    items; refused attempts are recorded."""
    from_seq = warehouse.last_ingested_seq()
    scheme = check_vector_scheme(warehouse, settings)
    window, _ = read_window(inbox, from_seq)
    landed = warehouse.landed_ids([e.event_id for e in window]) if window else set()
    batch = list(itertools.takewhile(lambda e: e.event_id in landed, window))
    report = GovernReport(from_seq=from_seq, to_seq=from_seq, events=len(batch),
                          policy_version=str(getattr(policy, "version", "") or _policy_version()),
                          message_vectors=scheme)
    # Once per store, before its events: what it forgot under the old rule, forgotten by today's.
    report.forgetting_swept = sweep_forgetting(warehouse)
    # and the turns its corrections replaced, named as the fold names them since
    report.replaced_turns_filled = backfill_replaced_turns(warehouse)
    if not batch:
        return report
    report.to_seq = batch[-1].seq
    writes = _plan(batch, warehouse, policy, settings, report)
    with warehouse.transaction():
        _store(warehouse, writes)
        warehouse.set_last_ingested_seq(report.to_seq)
        call_hook(hook, "govern:before_commit")
    return report


MESSAGE_VECTORS_COUNT = "governed_items.message_vectors"  # the run record's key (assets.graph)
POOLING_COUNT = "governed_items.pooling"  # and the pooled windows' cut (`WindowPooling.name`)


def pooling_record(scheme: str) -> str:
    """What a run records under `POOLING_COUNT` for the scheme it checked: the cut of the
    pooled windows ("" for another scheme), so a store pooled with another cut is read."""
    return POOLING.name if scheme == "pooled" else ""


def check_vector_scheme(warehouse: Warehouse, settings: Settings) -> str:
    """The configured message-vector scheme (`ContextWindow.vectors`; "" when messages get
    no context), once the store is known to hold no message whose vector is made another
    way: the last successful run recorded the same scheme, else every active message is
    read (`Warehouse.vector_schemes`, after a change of setting or default). Raises
    MessageVectorsChanged, so a change is never mixed into a store: `loci reembed` reads
    its sessions again (`reembed_all`)."""
    wanted = ContextWindow.of(settings).vectors
    if wanted is None:
        return ""
    run = last_successful_run(warehouse)
    counts = (run or {}).get("counts") or {}
    if counts.get(MESSAGE_VECTORS_COUNT) == wanted and (counts.get(POOLING_COUNT) or "") == pooling_record(wanted):
        return wanted
    other = {s: n for s, n in warehouse.vector_schemes().items() if s != wanted}
    if other:
        raise MessageVectorsChanged(wanted, other)
    return wanted


def _policy_version() -> str:
    try:
        from pipelines.policy import POLICY_VERSION
    except ImportError:  # pragma: no cover - the policy module is part of the package
        return ""
    return str(POLICY_VERSION)
