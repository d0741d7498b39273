"""Inbox events -> memory items: one fold shared by the pipeline and the online delta.

Both sides derive the same item ids from the same events (`stable_id`), so an item the
service serves from its delta is the very item the next snapshot contains, and the overlay
can drop it once the snapshot's watermark passes its event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterable, Protocol

import msgspec

from pipelines.palace import location_of
from pipelines.records import (
    ITEM_TYPES,
    RETIRED_BY_USER,
    SCOPE_KINDS,
    Event,
    Link,
    MemoryItem,
    ProposedItem,
    Provenance,
    Scope,
    Verdict,
    item_content_hash,
    parse_time,
    stable_id,
)

DEFAULT_ACCEPTED_CONFIDENCE = 0.8
# metadata key: when Loci learned an item (the inbox event's time), which can be long after
# `created_at`, the time the turn it came from was said (an imported history). Aging counts
# from here.
LEARNED_AT = "learned_at"
# A turn's payload and metadata key: the memories a request to forget, carried by the round
# the turn belongs to, retracted (the user's "please forget X" and the model's "done").
FORGOT = "forgot"
# A memory.forget event's payload key, kept by the edit held for review (`held_by_edit`): the
# raw turns (item ids) of the round that asked for or acknowledged the forgetting (`turn_ids`),
# forgotten with it once it holds: at once, or when a reviewer approves it.
FORGOT_TURNS = "forgot_turns"
# A memory.forget event's payload key: why it was forgotten (`ForgetArgs.reason`), kept by
# the edit held for review and by the revision consolidation stores (`forget_reason`).
FORGET_REASON = "reason"
# A memory.forget event's payload key and its retracted item's metadata key: the retraction
# withdraws what a chat round proposed (an answer the user regenerated or did not choose), not
# words its author asked to forget, so the turns that said it stay (`forgetting.is_forgotten_claim`).
WITHDRAWN = "withdrawn"
TOMBSTONE = "forgotten_tombstone"  # metadata key of an exported forgotten item (`forgotten_tombstone`)
QUARANTINE_MAX_CONFIDENCE = 0.5
CONTRADICTION_RULE = "soft.contradiction"  # the policy's rule id for a claim contradicting a stored one
# Why an edit of someone else's claim is held for review (`held_by_edit`): it contradicts what
# a claim says (the policy's rule), or it retracts a claim that is not the editor's, ...
RETRACTION_RULE = "review.retracts_others"
# ... or it rewrites what a claim that is not the editor's says (its words, not a tag).
REWRITE_RULE = "review.rewrites_others"
HELD_EDIT_RULES = frozenset({CONTRADICTION_RULE, RETRACTION_RULE, REWRITE_RULE})
REVIEW_DECISIONS = ("approve", "reject")
PATCHABLE_FIELDS = frozenset(
    {
        "title", "content", "tags", "entities", "importance", "confidence", "validation",
        "valid_from", "valid_to", "type", "expires_at",
    }
)


class Governs(Protocol):
    """The part of the policy the fold needs (pipelines.policy.Policy satisfies it)."""

    def evaluate(self, item: ProposedItem, *, target_tier: str = "stm",
                 provenance: Provenance | None = None, **kw: Any) -> Verdict: ...


def message_item_id(turn_id: str) -> str:
    return stable_id("msg", turn_id)


def proposal_item_id(event_id: str) -> str:
    return stable_id("mem", event_id)


def item_ids_touched(event: Event) -> list[str]:
    """Ids of the items an event creates or changes (for an item's history)."""
    p = event.payload
    if event.kind == "turn" and p.get("turn_id"):
        return [message_item_id(p["turn_id"])]
    if event.kind == "proposal":
        verdict = p.get("verdict") or {}
        return [] if verdict.get("action") == "reject" else [proposal_item_id(event.event_id)]
    if event.kind == "memory.write":
        item = p.get("item") or {}
        return [item["id"]] if isinstance(item, dict) and item.get("id") else []
    if event.kind in ("memory.update", "memory.palace.assign", "memory.review") and p.get("item_id"):
        return [p["item_id"]]
    if event.kind == "memory.link":
        return [x for x in (p.get("src_id"), p.get("dst_id")) if isinstance(x, str)]
    return []


def item_from_turn(event: Event) -> MemoryItem:
    """A captured chat turn as an episodic `message` record, user-scoped so the
    owner can recall raw conversation across sessions before anything is consolidated.
    A turn of a round that forgot something (`FORGOT`) is forgotten as it lands: recalled,
    it would show that what was forgotten existed (`pipelines.forgetting`)."""
    p = event.payload
    forgot = [str(i) for i in p.get(FORGOT) or ()]
    turn_id = p["turn_id"]
    speaker = p.get("speaker") or p.get("role", "user")
    text = p.get("text", "")
    at = p.get("at") or event.at
    refs = [p["turn_ref"]] if p.get("turn_ref") else []
    return MemoryItem(
        id=message_item_id(turn_id),
        tier="stm",
        type="message",
        title=str(speaker),
        content=text,
        scope=Scope.for_identity("user", event.identity),
        entities=[str(speaker)] if p.get("speaker") else [],
        provenance=Provenance(
            source_kind="chat",
            source_id=turn_id,
            content_hashes=[event.sha256],
            turn_refs=refs,
            event_ids=[event.event_id],
            created_at=at,
        ),
        confidence=1.0,  # a verbatim record of what was said, not a claim
        importance=3,
        validation="retracted" if forgot else "verified",
        valid_from=at,
        created_at=at,
        updated_at=at,
        metadata={"role": p.get("role", "user"), "session_id": event.identity.session_id,
                  "project_id": event.identity.project_id,
                  "inbox_seq": event.seq, LEARNED_AT: event.at, **({FORGOT: forgot} if forgot else {})},
    )


def _clamp_importance(value: Any) -> int:
    try:
        return max(1, min(10, int(value)))
    except (TypeError, ValueError):
        return 5


def item_from_proposal(event: Event, verdict: Verdict) -> MemoryItem | None:
    """The item a governed proposal stores, or None when the verdict rejects it."""
    if verdict.action == "reject":
        return None
    p = event.payload
    proposal = msgspec.convert(p["proposal"], ProposedItem)
    item_type = verdict.rewritten_type or (proposal.type if proposal.type in ITEM_TYPES else "note")
    if item_type == "message":
        item_type = "note"  # the model cannot forge a verbatim chat record
    content = proposal.content
    if verdict.rewritten_type == "pointer":
        # The dump itself is never stored: a short pointer to where it came from.
        content = p.get("pointer_text") or f"Pointer to oversized content ({len(content)} chars)"
    scope_kind = proposal.scope if proposal.scope in SCOPE_KINDS else p.get("default_scope", "project")
    prov = msgspec.convert(p.get("provenance") or {}, Provenance)
    quarantined = verdict.action == "quarantine"
    confidence = proposal.confidence if proposal.confidence is not None else DEFAULT_ACCEPTED_CONFIDENCE
    if quarantined:
        confidence = min(confidence, QUARANTINE_MAX_CONFIDENCE)
    tier = "stm"  # everything enters short-term memory; promotion decides the rest
    at = p.get("at") or event.at
    return MemoryItem(
        id=proposal_item_id(event.event_id),
        tier=tier,
        type=item_type,  # type: ignore[arg-type]
        title=proposal.title or content[:80],
        content=content,
        scope=Scope.for_identity(scope_kind, event.identity),  # type: ignore[arg-type]
        tags=[str(t) for t in proposal.tags],
        entities=[str(e) for e in proposal.entities],
        # The author's own earlier claims this one corrects (decided when it was captured).
        links=correction_links(p),
        provenance=prov,
        confidence=max(0.0, min(1.0, float(confidence))),
        importance=_clamp_importance(proposal.importance if proposal.importance is not None else 5),
        validation="unverified",
        valid_from=proposal.valid_from,
        valid_to=proposal.valid_to,
        created_at=at,
        updated_at=at,
        expires_at=verdict.expires_at if quarantined else None,
        metadata={
            "policy_version": verdict.policy_version,
            "verdict": verdict.action,
            "rule_ids": list(verdict.rule_ids),
            "form": p.get("form", "api"),
            "why_store": proposal.why_store,
            "requested_tier": proposal.tier,
            "inbox_seq": event.seq,
            LEARNED_AT: event.at,
            # what the user's words it records retired (`conflicts.retired_by_evidence`)
            **({RETIRED_BY_USER: list(p[RETIRED_BY_USER])} if p.get(RETIRED_BY_USER) else {}),
            **({HELD_AGAINST: [str(old) for old in p[HELD_AGAINST]]} if quarantined and p.get(HELD_AGAINST) else {}),
            **({DISAGREES_WITH: [str(old) for old in p[DISAGREES_WITH]]} if p.get(DISAGREES_WITH) else {}),
            **({SAID_DATES: p[SAID_DATES]} if p.get(SAID_DATES) else {}),
        },
    )


def correction_links(payload: dict[str, Any], known: Iterable[Link] = ()) -> list[Link]:
    """The links of what an event's claim corrects, as capture, an edit or an approval
    decided it (`conflicts.corrected`): `supersedes` the claims it replaces, `refines` the
    notes it corrects a detail of (they stay); none already in `known`."""
    have = {(link.rel, link.to) for link in known}
    return [Link(rel=rel, to=str(old)) for key, rel in (("supersedes", "supersedes"), ("refines", "refines"))
            for old in payload.get(key) or () if (rel, str(old)) not in have]


# Metadata key of a claim that replaced others (its `supersedes` links): the raw turns
# (message item ids) the claims it replaced were said in (`said_in`), theirs before them
# included. Recall marks each of those turns it shows as said otherwise by this claim
# (`recall.episodic.replaced_by`): the replaced claims leave recall, and a snapshot keeps no
# superseded item to follow the link to.
REPLACED_TURNS = "replaced_turns"


def said_in(item: MemoryItem) -> list[str]:
    """The raw turns (message item ids) a chat claim was said in: its provenance's turn (the
    turn that proposed it) and, merged, each member's (`source_ids`)."""
    if item.provenance.source_kind not in ("chat", "mixed"):
        return []
    sources = [item.provenance.source_id, *(str(s) for s in item.metadata.get("source_ids") or ())]
    return [message_item_id(s) for s in dict.fromkeys(sources) if s]


def replaced_turns(item: MemoryItem) -> list[str]:
    """The turns the claims `item` replaced were said in (`REPLACED_TURNS`)."""
    return [str(t) for t in item.metadata.get(REPLACED_TURNS) or ()]


def with_replaced_turns(item: MemoryItem, replaced: Iterable[MemoryItem],
                        merged_from: Iterable[MemoryItem] = ()) -> MemoryItem:
    """`item` naming, besides the turns it names already, those the claims it `replaced`
    were said in and had replaced (`REPLACED_TURNS`), and those the claims it was
    `merged_from` had replaced (a restatement replaces nothing itself); never a turn it was
    said in itself."""
    have = replaced_turns(item)
    own = set(said_in(item))
    named = [*(t for old in replaced for t in [*said_in(old), *replaced_turns(old)]),
             *(t for member in merged_from for t in replaced_turns(member))]
    turns = [t for t in dict.fromkeys([*have, *named]) if t not in own]
    if turns == have:
        return item
    return msgspec.structs.replace(item, metadata={**item.metadata, REPLACED_TURNS: turns})


def with_corrections(item: MemoryItem, payload: dict[str, Any]) -> MemoryItem:
    """`item` linked to what the event (an edit, an approval) says it corrects."""
    added = correction_links(payload, item.links)
    return msgspec.structs.replace(item, links=[*item.links, *added]) if added else item


def apply_patch(item: MemoryItem, patch: dict[str, Any], at: str) -> MemoryItem:
    """A new version of `item` with `patch` applied (validated through msgspec). New content
    drops the values the user's turn retired (RETIRED_BY_USER): they were read beside the old
    text, and the rewritten one says for itself what it replaces."""
    unknown = set(patch) - PATCHABLE_FIELDS
    if unknown:
        raise ValueError(f"fields not patchable: {sorted(unknown)}")
    data = msgspec.to_builtins(item)
    data.update(patch)
    if data["content"] != item.content and RETIRED_BY_USER in item.metadata:
        data["metadata"] = {k: v for k, v in item.metadata.items() if k != RETIRED_BY_USER}
    data["updated_at"] = at
    data["content_hash"] = item_content_hash(data["title"], data["content"])
    return msgspec.convert(data, MemoryItem)


# memory.review payload key: the importance an approved correction keeps, that of the most
# important claim it replaces (`capture.kept_importance`), when above its own
KEPT_IMPORTANCE = "kept_importance"
HELD_EDIT = "held_edit"  # metadata key: an edit held for review, waiting beside the item
# Metadata key of a claim held for contradicting stored claims (`CONTRADICTION_RULE`): their
# ids (`pipelines.capture.GovernedClaim.contradicts`). Recall looks it up from each claim it
# delivers (`MemoryCorpus.held_against_rows`) to say a change waits, whatever the query
# found. Not a `contradicts` link: that would make the conflict rule name the link, not
# what differs, as the reason (/v1/conflicts, the review page).
HELD_AGAINST = "held_against"
# Metadata key of an accepted claim that still disagrees with stored claims when written (in
# another scope kind, or someone's echo of what its author corrected): their ids
# (`pipelines.capture.GovernedClaim.disagrees`). Recall pulls the two in together
# (`MemoryCorpus.disagreed_rows`), so the claim the query found is shown with its conflict.
DISAGREES_WITH = "disagrees_with"
# Payload and metadata key of a claim whose time words ("next Tuesday", "in March") were read
# on the day it was said: {"on": that day, "meant": {word: day}} (`pipelines.validity`).
SAID_DATES = "said_dates"
# payload key: {id: when it ends} of the claims a claim holding from a day on takes over
# then (`capture.takes_over`): each is given that end (`valid_to`), not superseded.
ENDS = "ends"
# payload key: the starts of the plans a claim (or an edit) moves to another day: a claim one
# of them ended then (`ENDS` names it) is ended anew (`taken_over`)
MOVED_FROM = "moved_from"


def held_by_edit(before: MemoryItem, updated: MemoryItem, patch: dict[str, Any], verdict: Verdict,
                 event: Event) -> MemoryItem:
    """`before` as an edit (`patch`, giving `updated`) leaves it. An edit that made the item
    contradict someone else's claim in its scope, or what the item itself said when the item
    is someone else's (`soft.contradiction`), is held for review the way a write is, but it
    waits beside the item instead of replacing it: the item keeps answering as it was, and
    `metadata["held_edit"]` keeps the patch, its editor (like an author: not its reviewer),
    when and why it was held, and the quarantine's expiry. A review applies it or drops it
    (`review_item`). A retraction of someone else's claim (`RETRACTION_RULE`) is held the
    same way. Other soft verdicts of an edit hold nothing (a lowered confidence is just
    that): the edit applies."""
    if verdict.action != "quarantine" or not HELD_EDIT_RULES & set(verdict.rule_ids):
        return updated
    held = {"patch": dict(patch), "by": event.identity.user_id, "at": event.payload.get("at") or event.at,
            # what its new words' time words meant when edited: the item's once approved
            **({SAID_DATES: event.payload[SAID_DATES]} if SAID_DATES in event.payload else {}),
            "inbox_seq": event.seq, "rule_ids": list(verdict.rule_ids), "reasons": list(verdict.reasons),
            "expires_at": verdict.expires_at,
            **({FORGET_REASON: str(event.payload[FORGET_REASON])} if event.payload.get(FORGET_REASON) else {}),
            # the turns of the round that asked to forget it: forgotten on approval
            **({FORGOT_TURNS: [str(i) for i in event.payload[FORGOT_TURNS]]}
               if event.payload.get(FORGOT_TURNS) else {}),
            # the claims the edited item would contradict: each delivered one says a change waits
            **({HELD_AGAINST: [str(i) for i in event.payload[HELD_AGAINST]]}
               if event.payload.get(HELD_AGAINST) else {})}
    return msgspec.structs.replace(before, metadata={**before.metadata, HELD_EDIT: held})


def forget_reason(payload: dict[str, Any]) -> str:
    """Why a memory.update event (a forget) retracts its item, or "" (none given, or not a forget)."""
    patch = payload.get("patch") if isinstance(payload.get("patch"), dict) else {}
    return str(payload.get(FORGET_REASON) or "") if patch.get("validation") == "retracted" else ""


def with_said_dates(item: MemoryItem, said_dates: dict[str, Any] | None) -> MemoryItem:
    """`item` with what its words' time words meant when said (`SAID_DATES`, from an edit
    applied: none when its new words have none)."""
    kept = {k: v for k, v in item.metadata.items() if k != SAID_DATES}
    return msgspec.structs.replace(item, metadata={**kept, **({SAID_DATES: said_dates} if said_dates else {})})


def held_edit(item: MemoryItem) -> dict[str, Any] | None:
    """The edit held for review beside `item` (see `held_by_edit`), while it waits: not once
    its expiry passed, nor on an item retired or retracted since."""
    held = item.metadata.get(HELD_EDIT)
    # A forget held on a claim a correction replaced still waits: its words are on its history.
    if not isinstance(held, dict) or item.archived or item.validation == "retracted" \
            or (item.superseded_by is not None and held.get("patch") != {"validation": "retracted"}):
        return None
    expires = parse_time(held.get("expires_at"))
    return None if expires is not None and expires <= datetime.now(timezone.utc) else held


def with_held_edit(item: MemoryItem) -> MemoryItem:
    """`item` as its held edit would leave it (itself when no edit is held)."""
    held = held_edit(item)
    if held is None:
        return item
    return apply_patch(item, held["patch"], str(held["at"]))


def held_against_ids(item: MemoryItem) -> list[str]:
    """The claims `item` waits for a reviewer for contradicting (`HELD_AGAINST`): as a claim
    held in quarantine, or through the edit held beside it (an edit that made it contradict
    someone else's claim), as it was stored (not checked for still waiting: `held_against`
    is, on the newest version)."""
    edit = item.metadata.get(HELD_EDIT)
    named = [*(item.metadata.get(HELD_AGAINST) or ()),
             *((edit.get(HELD_AGAINST) or ()) if isinstance(edit, dict) else ())]
    return [str(i) for i in dict.fromkeys(named)]


def held_unnamed(item: MemoryItem) -> bool:
    """A claim held in quarantine for contradicting stored claims (`CONTRADICTION_RULE`)
    that does not name them: stored before `HELD_AGAINST` was kept. Recall finds what it
    contradicts by the policy's own check instead (`VisibleCorpora.held_against`)."""
    return (in_quarantine(item) and CONTRADICTION_RULE in (item.metadata.get("rule_ids") or ())
            and not item.metadata.get(HELD_AGAINST))


def held_against(rival: MemoryItem, item_id: str) -> bool:
    """Whether `rival` waits for a reviewer now for contradicting the claim `item_id`: held
    in quarantine for it, or carrying an edit held for it (`held_by_edit`)."""
    if in_quarantine(rival):
        return item_id in (rival.metadata.get(HELD_AGAINST) or ())
    edit = held_edit(rival)
    return edit is not None and item_id in (edit.get(HELD_AGAINST) or ())


def pending_changes(item: MemoryItem, rivals: Iterable[MemoryItem] = ()) -> list[tuple[str, str, str]]:
    """(kind, by, at) of each change to `item` waiting for a reviewer, what every surface
    says of it (`pipelines.recall.render.pending_note`): its held edit ("edit", or
    "retraction" when it would retract the item), each claim among `rivals` (the claims
    contradicting it) held in quarantine ("claim"), and each rival whose held edit would
    make it contradict `item` ("rival edit")."""
    out = []
    edit = held_edit(item)
    if edit is not None:
        kind = "retraction" if (edit.get("patch") or {}).get("validation") == "retracted" else "edit"
        out.append((kind, str(edit.get("by") or ""), str(edit.get("at") or "")))
    for rival in rivals:
        rival_edit = held_edit(rival)
        if in_quarantine(rival):
            out.append(("claim", rival.scope.user_id, rival.created_at))
        elif rival_edit is not None and item.id in (rival_edit.get(HELD_AGAINST) or ()):
            out.append(("rival edit", str(rival_edit.get("by") or ""), str(rival_edit.get("at") or "")))
    return out


def awaits_review(item: MemoryItem) -> bool:
    """Held in quarantine, or carrying an edit held for review: in the review queue."""
    return in_quarantine(item) or held_edit(item) is not None


def assign_palace(item: MemoryItem, payload: dict[str, Any], event: Event) -> MemoryItem:
    """`item` pinned at the palace location a memory.palace.assign event names (who asked
    and when are kept with the pin); the palace stage keeps it there."""
    at = payload.get("at") or event.at
    pin = {"domain": payload["domain"], "room": payload["room"], "shelf": payload["shelf"],
           "by": event.identity.user_id, "at": at, "inbox_seq": event.seq}
    pinned = msgspec.structs.replace(item, metadata={**item.metadata, "palace_pin": pin}, updated_at=at)
    path = location_of(pinned).path
    return msgspec.structs.replace(pinned, metadata={**pinned.metadata, "palace": path})


def in_quarantine(item: MemoryItem) -> bool:
    """Held by a soft policy block and waiting for a reviewer: stored, but unverified, capped
    in confidence and set to expire (`metadata["verdict"]` is the policy's verdict)."""
    return item.active and item.metadata.get("verdict") == "quarantine" and item.validation != "retracted"


def held_against_others(item: MemoryItem) -> bool:
    """Held (or carrying an edit held) for contradicting someone else's claim
    (`CONTRADICTION_RULE`): its approval corrects that claim, so a reviewer other than its
    author (or the edit's) gives it."""
    held = held_edit(item)
    if held is not None:
        return bool(HELD_EDIT_RULES & set(held.get("rule_ids") or ()))
    return in_quarantine(item) and CONTRADICTION_RULE in (item.metadata.get("rule_ids") or ())


def recall_state(item: MemoryItem) -> str:
    """Whether recall may return an active item: "retracted" (known false, kept with its
    history, never recalled), "quarantined" (held for a reviewer) or "recallable"."""
    if item.validation == "retracted":
        return "retracted"
    return "quarantined" if in_quarantine(item) else "recallable"


def forgotten_tombstone(item: MemoryItem) -> MemoryItem:
    """What a default export keeps of a retracted (forgotten) item: its id, place and content
    hash, none of its text, so an import retracts a copy the other store holds and resurrects
    nothing (`loci export --all` keeps the whole item)."""
    return MemoryItem(id=item.id, tier=item.tier, type=item.type, title="", content="", scope=item.scope,
                      validation="retracted", created_at=item.created_at, updated_at=item.updated_at,
                      content_hash=item.content_hash, metadata={TOMBSTONE: True})


def is_tombstone(item: MemoryItem) -> bool:
    return item.validation == "retracted" and item.metadata.get(TOMBSTONE) is True


def review_item(item: MemoryItem, payload: dict[str, Any], event: Event) -> MemoryItem | None:
    """`item` after a reviewer's decision on it (a memory.review event), or None when the
    event changes nothing (nothing held any more, or refused by the policy).

    Approve: the reviewer vouches for it: verified, no expiry, confidence at least the
    default of an accepted proposal (so recall injects it), verdict `accept`. Reject: it
    stays with its history but is retracted, so it is never recalled, verdict `reject`.
    An edit held beside an item (`held_edit`) is what is decided, not the item: approving
    applies the edit (verified, as above; the item's own expiry stays), rejecting drops it
    and the item stays as it was. Who decided, when, and why the policy held it are kept in
    `metadata["review"]`."""
    verdict = payload.get("verdict") or {}
    decision = payload.get("decision")
    if decision not in REVIEW_DECISIONS or verdict.get("action") == "reject" or not awaits_review(item):
        return None
    at = payload.get("at") or event.at
    edit = held_edit(item)
    review = {"decision": decision, "by": event.identity.user_id, "at": at, "inbox_seq": event.seq,
              "note": str(payload.get("note") or ""),
              "held_for": list((edit if edit is not None else item.metadata).get("rule_ids") or [])}
    if edit is not None:
        review.update(edit_by=edit.get("by"), edit=edit.get("patch"))
        metadata = {**{k: v for k, v in item.metadata.items() if k != HELD_EDIT}, "review": review}
        if decision == "reject":
            return msgspec.structs.replace(item, metadata=metadata, updated_at=at)
        item = apply_patch(msgspec.structs.replace(item, metadata=metadata), edit["patch"], at)
        if SAID_DATES in edit:
            metadata = with_said_dates(item, edit[SAID_DATES]).metadata
        expires_at = item.expires_at
    else:
        metadata = {**item.metadata, "review": review, "verdict": "accept" if decision == "approve" else "reject"}
        expires_at = None
    if decision == "approve":
        # An approved retraction (a forget held for review) forgets it: verifying would undo it.
        forgets = edit is not None and (edit.get("patch") or {}).get("validation") == "retracted"
        # The claims it contradicted in its scope (`pipelines.capture.approval_corrects`):
        # the approval corrects them, as the author's own correction would.
        return with_corrections(msgspec.structs.replace(
            item, validation="retracted" if forgets else "verified", expires_at=expires_at, metadata=metadata,
            updated_at=at, importance=max(item.importance, _clamp_importance(payload.get(KEPT_IMPORTANCE, 1))),
            confidence=max(item.confidence, DEFAULT_ACCEPTED_CONFIDENCE)), payload)
    return msgspec.structs.replace(item, validation="retracted", metadata=metadata, updated_at=at)


# Metadata key of a claim standing again because what had replaced it was forgotten
# (`restored_by_forgetting`): {"because": its id, "by": who forgot it, "at": when, "note": that said}.
RESTORED = "restored"


def supersedes_now(item: MemoryItem) -> bool:
    """Whether `item`'s `supersedes` links retire what they name: a retracted (forgotten)
    claim replaces nothing (consolidation marks no claim superseded by it)."""
    return item.validation != "retracted"


def standing_replacer(item_id: str, correctors: Callable[[str], Iterable[str]], stands: Callable[[str], bool],
                      forgotten: Callable[[str], bool]) -> str | None:
    """The claim that replaces `item_id` now, up its chain of corrections (`correctors`: the
    ids of the claims that corrected a claim): the nearest that `stands`, passing through the
    `forgotten` ones (A, B correcting it, C correcting B: with B forgotten, C still replaces
    A); None when every claim up the chain was forgotten (or stops, held, short of standing)."""
    seen, todo = {item_id}, [item_id]
    while todo:
        for src in correctors(todo.pop(0)):
            if src in seen:
                continue
            seen.add(src)
            if stands(src):
                return src
            if forgotten(src):
                todo.append(src)
    return None


def restored_by_forgetting(forgotten: MemoryItem, find: Callable[[str], MemoryItem | None], by: str, at: str,
                           links: Iterable[tuple[str, str, str]] = ()) -> list[MemoryItem]:
    """The claims `forgotten` (a claim just retracted) had replaced that stand again: each
    its `supersedes` links name (through claims forgotten before it: A, B correcting A, C
    correcting B, B forgotten and then C: A) that was marked superseded by one of them, is
    not retracted itself and that no claim up its chain of corrections still replaces
    (`standing_replacer` over its `superseded_by` and the `links` (src, dst, rel) known
    besides: forget B while C stands, and A stays replaced): unmarked (`superseded_by`
    None), with `RESTORED` saying why. `find` finds a claim as last stored, superseded ones
    too (one it does not find counts as standing). The one rule of the service's fold and
    consolidation's replay (both fold the forget event) and of what `loci show` folds."""
    correctors_of: dict[str, list[str]] = {}
    for src, dst, rel in links:
        if rel == "supersedes":
            correctors_of.setdefault(dst, []).append(src)
    chain = {forgotten.id: forgotten}

    def correctors(item_id: str) -> list[str]:
        it = chain.get(item_id) or find(item_id)
        marked = [it.superseded_by] if it is not None and it.superseded_by else []
        return [*marked, *correctors_of.get(item_id, ())]

    def forgotten_(item_id: str) -> bool:
        it = chain.get(item_id) or find(item_id)
        return it is not None and it.validation == "retracted"

    def stands(item_id: str) -> bool:
        return item_id not in chain and ((it := find(item_id)) is None or supersedes_now(it))

    out, todo = [], [forgotten]
    while todo:
        for link in todo.pop(0).links:
            old = find(link.to) if link.rel == "supersedes" and link.to not in chain else None
            if old is None:
                continue
            if old.validation == "retracted":  # forgotten before: what it replaced is this chain's too
                chain[old.id] = old
                todo.append(old)
            elif (old.superseded_by in chain and old.id not in {o.id for o in out}
                  and standing_replacer(old.id, correctors, stands, forgotten_) is None):
                out.append(msgspec.structs.replace(old, superseded_by=None, updated_at=at, metadata={
                    **old.metadata, RESTORED: {"because": forgotten.id, "by": by, "at": at,
                                               "note": f"what replaced it was forgotten by {by} ({forgotten.id})"}}))
    return out


@dataclass
class Overlay:
    """Items created or changed by a run of events, keyed by id, plus side effects."""

    items: dict[str, MemoryItem] = field(default_factory=dict)
    links: list[tuple[str, str, str]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    rejected: list[tuple[str, Verdict]] = field(default_factory=list)  # (event_id, verdict)
    consolidate_requests: list[Event] = field(default_factory=list)
    max_seq: int = 0


def verdict_of(event: Event, policy: Governs | None) -> Verdict:
    """The stored verdict, or a fresh one when a policy is given (the pipeline re-governs
    every landed proposal with the current policy version)."""
    p = event.payload
    stored = msgspec.convert(p["verdict"], Verdict)
    if policy is None or stored.action == "reject":
        return stored  # a rejected proposal's text was never kept: nothing to re-govern
    proposal = msgspec.convert(p["proposal"], ProposedItem)
    prov = msgspec.convert(p.get("provenance") or {}, Provenance)
    fresh = policy.evaluate(
        proposal,
        target_tier=proposal.tier or "stm",
        provenance=prov,
        source_trusted=prov.source_kind != "doc",
    )
    # Re-governing may only tighten: the online verdict stands when it was stricter.
    order = {"accept": 0, "quarantine": 1, "reject": 2}
    return stored if order[stored.action] > order[fresh.action] else fresh


def taken_over(payload: dict[str, Any], lookup: Callable[[str], MemoryItem | None]) -> list[tuple[MemoryItem, str]]:
    """The claims an accepted claim's or edit's event (`payload`) ends (`ENDS`: id -> its
    end) as they stand (`lookup`), each with its end. One ended already is ended anew only
    when a plan the event moves ended it, the instant before the plan's start (`MOVED_FROM`,
    `capture.takes_over`: the move date was corrected, so what the plan took over holds
    until the new start)."""
    starts = (parse_time(s) for s in payload.get(MOVED_FROM) or () if isinstance(s, str))
    moved = {start - timedelta(seconds=1) for start in starts if start is not None}
    out = []
    for old_id, end in (payload.get(ENDS) or {}).items():
        current = lookup(str(old_id))
        if (current is not None and isinstance(end, str)
                and (current.valid_to is None or parse_time(current.valid_to) in moved)):
            out.append((current, end))
    return out


def fold_events(
    events: Iterable[Event],
    base: Callable[[str], MemoryItem | None] = lambda _id: None,
    policy: Governs | None = None,
    retired: Callable[[str], MemoryItem | None] = lambda _id: None,
    known_links: Callable[[], Iterable[tuple[str, str, str]]] = tuple,
) -> Overlay:
    """Fold events in seq order into an overlay. `base` finds items that live outside the
    overlay (snapshot or warehouse) so updates and links can apply to them; `retired`, those
    `base` does not serve any more (a snapshot's superseded claims, as last published): a
    forgotten correction brings back what it replaced (`restored_by_forgetting`), unless a
    later correction stands among the fold's links or `known_links()` (src, dst, rel) made
    outside it (the service's earlier folds, consolidation's batch: read only on a forget)."""
    fold = _Fold(base=base, policy=policy, retired=retired, known_links=known_links)
    for ev in events:
        fold.out.max_seq = max(fold.out.max_seq, ev.seq)
        step = _FOLD_STEPS.get(ev.kind)
        if step is not None:
            step(fold, ev)
    return fold.out


@dataclass
class _Fold:
    """One fold in progress: the overlay so far plus where to find items outside it."""

    base: Callable[[str], MemoryItem | None]
    policy: Governs | None
    retired: Callable[[str], MemoryItem | None] = lambda _id: None
    known_links: Callable[[], Iterable[tuple[str, str, str]]] = tuple
    out: Overlay = field(default_factory=Overlay)

    def lookup(self, item_id: str) -> MemoryItem | None:
        return self.out.items.get(item_id) or self.base(item_id)

    def restore(self, before: MemoryItem, after: MemoryItem, ev: Event) -> None:
        """What `after` replaced stands again when the event forgot it (`before` was not)."""
        if before.validation == "retracted" or after.validation != "retracted":
            return
        at = ev.payload.get("at") or ev.at
        for old in restored_by_forgetting(after, lambda i: self.lookup(i) or self.retired(i),
                                          ev.identity.user_id, at, [*self.known_links(), *self.out.links]):
            self.out.items[old.id] = old

    def replacing(self, item: MemoryItem) -> MemoryItem:
        """`item` naming the turns the claims it supersedes were said in (`REPLACED_TURNS`)."""
        replaced = [old for link in item.links if link.rel == "supersedes" and (old := self.lookup(link.to))]
        return with_replaced_turns(item, replaced) if replaced else item

    def turn(self, ev: Event) -> None:
        item = item_from_turn(ev)
        self.out.items[item.id] = item

    def proposal(self, ev: Event) -> None:
        verdict = verdict_of(ev, self.policy)
        item = item_from_proposal(ev, verdict)
        if item is None:
            self.out.rejected.append((ev.event_id, verdict))
            return
        item = self.out.items[item.id] = self.replacing(item)
        self.out.links.extend((item.id, link.to, link.rel) for link in item.links)
        if verdict.action == "accept":
            self.end_taken_over(ev)

    def end_taken_over(self, ev: Event) -> None:
        """The claims an accepted claim or edit takes over from a day on (`ENDS`) hold until then."""
        for current, end in taken_over(ev.payload, self.lookup):
            self.out.items[current.id] = msgspec.structs.replace(current, valid_to=end, updated_at=ev.at)

    def write(self, ev: Event) -> None:
        # A whole item (import, or a tool write the service already governed).
        p = ev.payload
        verdict = msgspec.convert(p.get("verdict") or {"action": "accept"}, Verdict)
        if verdict.action == "reject":
            self.out.rejected.append((ev.event_id, verdict))
            return
        try:
            item = msgspec.convert(p["item"], MemoryItem)
        except (KeyError, msgspec.ValidationError):
            return
        current = self.lookup(item.id)
        if current is not None and current.validation == "retracted" and item.validation != "retracted":
            # Forgotten here: a live copy (an export from before the forgetting, another store's)
            # brings back neither a claim nor a turn that said it: it is said or written again.
            return
        if is_tombstone(item) or (current is not None and item.type == "message"):
            # Forgotten where it was exported (a tombstone), or a turn held here (the same words;
            # its retrieval context is this store's, a copy's may quote a turn forgotten here):
            # either can only forget what is held here.
            if current is not None and item.validation == "retracted" and current.validation != "retracted":
                self.out.items[current.id] = msgspec.structs.replace(current, validation="retracted",
                                                                     updated_at=ev.at)
            return
        if verdict.action == "quarantine":
            # Held as a proposal is (`item_from_proposal`): an imported item carries the
            # verdict of the store it came from, so the hold is written here, or it would not
            # be in the review queue and recall would take it at full confidence.
            item = msgspec.structs.replace(
                item, tier="stm", expires_at=verdict.expires_at,
                validation="retracted" if item.validation == "retracted" else "unverified",  # stays forgotten
                confidence=min(item.confidence, QUARANTINE_MAX_CONFIDENCE),
                metadata={**item.metadata, "verdict": "quarantine", "rule_ids": list(verdict.rule_ids),
                          "policy_version": verdict.policy_version})
        # An imported item keeps its dates; this store learned it now.
        self.out.items[item.id] = self.replacing(msgspec.structs.replace(item, metadata={**item.metadata,
                                                                                       LEARNED_AT: ev.at}))
        # The author's own claims a tool write corrects stop being active, as for a proposal.
        self.out.links.extend((item.id, link.to, link.rel) for link in item.links if link.rel == "supersedes")
        if verdict.action == "accept":
            self.end_taken_over(ev)

    def update(self, ev: Event) -> None:
        p = ev.payload
        # a forget reaches a claim a correction took out of what is served (`retired`)
        forgets = (p.get("patch") or {}).get("validation") == "retracted"
        current = self.lookup(p["item_id"]) or (self.retired(p["item_id"]) if forgets else None)
        verdict = msgspec.convert(p.get("verdict") or {"action": "accept"}, Verdict)
        if current is None or verdict.action == "reject":
            return
        try:
            updated = apply_patch(current, p.get("patch", {}), p.get("at") or ev.at)
        except (ValueError, msgspec.ValidationError):
            return  # the service validated it; a bad row is skipped, not fatal
        if SAID_DATES in p:  # its new words' time words, read when edited (`validity.reread`)
            updated = with_said_dates(updated, p[SAID_DATES])
        if forgets and p.get(WITHDRAWN):
            updated = msgspec.structs.replace(updated, metadata={**updated.metadata, WITHDRAWN: True})
        if verdict.action == "accept":  # what it now says corrects as a write would (`conflicts.corrected`)
            updated = self.replacing(with_corrections(updated, p))
            if DISAGREES_WITH in p:  # and what it disagrees with is named anew
                kept = {k: v for k, v in updated.metadata.items() if k != DISAGREES_WITH}
                updated = msgspec.structs.replace(updated, metadata={
                    **kept, **({DISAGREES_WITH: [str(i) for i in p[DISAGREES_WITH]]} if p[DISAGREES_WITH] else {})})
            self.out.links.extend((updated.id, link.to, link.rel) for link in correction_links(p))
            self.end_taken_over(ev)  # a plan moved: what it ended holds until its new start
        self.out.items[current.id] = held_by_edit(current, updated, p.get("patch", {}), verdict, ev)
        self.restore(current, self.out.items[current.id], ev)

    def palace_assign(self, ev: Event) -> None:
        current = self.lookup(ev.payload["item_id"])
        if current is not None:
            self.out.items[current.id] = assign_palace(current, ev.payload, ev)

    def review(self, ev: Event) -> None:
        current = self.lookup(ev.payload["item_id"])
        reviewed = review_item(current, ev.payload, ev) if current is not None else None
        if reviewed is not None and reviewed.validation == "verified":
            reviewed = self.replacing(reviewed)
        if reviewed is not None:
            self.out.items[reviewed.id] = reviewed
            self.restore(current, reviewed, ev)  # an approved forget
            if reviewed.validation == "verified":  # approved: what it corrects leaves recall, or is marked
                self.out.links.extend((reviewed.id, link.to, link.rel) for link in correction_links(ev.payload))

    def link(self, ev: Event) -> None:
        p = ev.payload
        src, dst, rel = p["src_id"], p["dst_id"], p["rel"]
        self.out.links.append((src, dst, rel))
        current = self.lookup(src)
        if current is not None and all(known.to != dst or known.rel != rel for known in current.links):
            self.out.items[src] = self.replacing(msgspec.structs.replace(current, links=[*current.links,
                                                                                     Link(rel=rel, to=dst)]))

    def usage(self, ev: Event) -> None:
        for item_id in ev.payload.get("item_ids", []):
            self.out.usage[item_id] = self.out.usage.get(item_id, 0) + 1

    def consolidate(self, ev: Event) -> None:
        self.out.consolidate_requests.append(ev)


# Event kinds the fold understands; any other kind only advances the watermark.
_FOLD_STEPS: dict[str, Callable[[_Fold, Event], None]] = {
    "turn": _Fold.turn,
    "proposal": _Fold.proposal,
    "memory.write": _Fold.write,
    "memory.update": _Fold.update,
    "memory.palace.assign": _Fold.palace_assign,
    "memory.review": _Fold.review,
    "memory.link": _Fold.link,
    "usage": _Fold.usage,
    "memory.consolidate": _Fold.consolidate,
}


def quarantine_expiry(now: datetime, days: float) -> str:
    return (now + timedelta(days=days)).astimezone(timezone.utc).isoformat(timespec="microseconds")
