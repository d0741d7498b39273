"""The memory.* actions that store something new: propose, write, link, consolidate and a
palace assignment."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec

from online.state import View
from online.tools.args import ConsolidateArgs, LinkArgs, PalaceAssignArgs, ProposeArgs, ToolError, WriteArgs, decode
from online.tools.base import Actions
from online.tools.shaping import verdict_out
from pipelines.capture import end_before, govern_claim, kept_importance, scoped_by_its_words
from pipelines.materialize import (
    DEFAULT_ACCEPTED_CONFIDENCE,
    DISAGREES_WITH,
    ENDS,
    HELD_AGAINST,
    MOVED_FROM,
    QUARANTINE_MAX_CONFIDENCE,
    SAID_DATES,
    in_quarantine,
    proposal_item_id,
)
from pipelines.palace import location_of, parse_path, slugify
from pipelines.policy import pointer_for
from pipelines.recall.conflicts import authors
from pipelines.recall.episodic import proposal_carrier_text
from pipelines.records import (
    RETIRED_BY_USER,
    Event,
    Identity,
    Link,
    MemoryItem,
    ProposedItem,
    Provenance,
    Scope,
    sha256_text,
    stable_id,
    utcnow,
)
from pipelines.validity import with_window


def _assignable_location(location: str) -> tuple[str, str, str]:
    """(domain, room, shelf) of "domain/room/shelf", each part slugified like every palace
    segment; 400 when the path is malformed or a part has nothing left to name."""
    try:
        parts = parse_path(location, max_depth=3)
    except ValueError as exc:
        raise ToolError(400, f"memory.palace.assign: {exc}") from None
    if len(parts) != 3:
        raise ToolError(400, "memory.palace.assign: location must be \"domain/room/shelf\" "
                             "(the card is the item id)")
    slugs = [slugify(part) for part in parts]
    if not all(slugs):
        raise ToolError(400, f"memory.palace.assign: location {location!r} has a part without "
                             "letters or digits")
    return slugs[0], slugs[1], slugs[2]



def _check_supersedes(src: MemoryItem, dst: MemoryItem, who: Identity) -> None:
    """`src supersedes dst` retires dst from recall: only an established memory may do
    that, what was said (a verbatim turn) is never retired, and someone else's memory is
    retired only through a review (409 otherwise): a correction written as a memory that
    contradicts it is held for review, and its approval supersedes it."""
    if dst.type == "message":
        raise ToolError(409, f"memory.link: {dst.id!r} is a verbatim record of what was said and is not "
                             "superseded; write the correction as a memory that supersedes the old memory")
    if src.type == "message":
        raise ToolError(409, f"memory.link: {src.id!r} is a chat turn; a turn does not supersede a memory: "
                             "write the correction with memory.write (it supersedes the claim it corrects)")
    if in_quarantine(src):
        raise ToolError(409, f"memory.link: {src.id!r} is held in quarantine and supersedes nothing until "
                             "a reviewer approves it with memory.review")
    if src.validation == "retracted":
        raise ToolError(409, f"memory.link: {src.id!r} is retracted and supersedes nothing")
    if authors(dst) != {who.user_id}:
        raise ToolError(409, f"memory.link: {dst.id!r} is not yours alone ({', '.join(sorted(authors(dst)))}); "
                             "someone else's memory is retired through a review: write the correction with "
                             "memory.write (a contradiction of it is held for review; the approval supersedes it)")



class WriteActions(Actions):
    """memory.propose, memory.write, memory.link, memory.consolidate, memory.palace.assign."""

    def propose(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = decode(ProposeArgs, raw, "memory.propose")
        # The carrier turn names no titles: a rejected proposal's text must not reach memory
        # through it (capture masks secrets in turn text, not injection attempts).
        outcome = self.service.capture(
            who, "system", proposal_carrier_text(len(args.items)),
            parse=False, extra_proposals=[i.proposed() for i in args.items],
            default_scope=args.default_scope, turn_ref=args.turn_ref, zone=self._zone(args.tz, "memory.propose"),
        )
        return {
            "turn_id": outcome.turn_id,
            "seq": outcome.seq,
            "proposals": [msgspec.to_builtins(p) for p in outcome.proposals],
        }

    def write(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = decode(WriteArgs, raw, "memory.write")
        return self._write(args.item.proposed(), who, view, args.default_scope, self._zone(args.tz, "memory.write"),
                           msgspec.to_builtins(args), args.item.tier)

    def _write(self, proposal: ProposedItem, who: Identity, view: View, default_scope: str, zone: str,
               audited: Any, requested_tier: str | None, takes_over: MemoryItem | None = None) -> dict[str, Any]:
        """Store a new item (`memory.write`, or an edit that holds from a later day: `takes_over`
        is then the edited item, which the new one ends the instant before its start)."""
        action = "memory.write" if takes_over is None else "memory.update"
        event_id = stable_id("evt", "memory.write", uuid.uuid4().hex)
        hint = proposal.provenance_hint or {}
        kind = hint.get("source_kind") if hint.get("source_kind") in ("chat", "doc", "tool", "mixed") else "tool"
        at = utcnow()
        proposal = scoped_by_its_words(proposal, default_scope, who.user_id)
        # "until Friday", "next week": read on today's calendar in the writer's zone
        proposal, said_dates = with_window(proposal, at, zone)
        source = hint.get("source_id") or (f"memory.update:{takes_over.id}" if takes_over
                                           else f"memory.write:{event_id}")
        prov = Provenance(source_kind=kind, source_id=str(source), event_ids=[event_id], created_at=at)
        said = self.service.user_said(who)(str(hint["source_id"])) if hint.get("source_id") else None
        found = self.service.existing_like(who, view)(proposal)
        verdict, fixes, contradicts, disagrees = govern_claim(
            self.service.policy, proposal, provenance=prov, found=found,
            scope_kind=proposal.scope or default_scope, author_user_id=who.user_id,
            evidence=[said] if said else (), cosine_to=self.service.cosine_to(view)(proposal),
        )
        if takes_over is not None and verdict.action == "accept" and proposal.valid_from is not None:
            # the edited item holds until the edit does: ended then, neither replaced nor a detail
            fixes = fixes._replace(replaced=[i for i in fixes.replaced if i != takes_over.id],
                                   in_part=[i for i in fixes.in_part if i != takes_over.id],
                                   ends=(*((i, e) for i, e in fixes.ends if i != takes_over.id),
                                         (takes_over.id, end_before(proposal.valid_from))))
        if verdict.action == "accept" and fixes.replaced:  # as a chat proposal's correction does
            proposal = kept_importance(proposal, [it for it in found if it.id in fixes.replaced])
        if verdict.action == "reject":
            self.service.audit(who, action, audited, verdict=verdict_out(verdict), outcome="rejected")
            raise ToolError(422, f"{action} rejected by the policy; nothing was stored",
                            {"verdict": verdict_out(verdict)})
        quarantined = verdict.action == "quarantine"
        if verdict.rewritten_type == "pointer":
            # An oversized dump is never stored: only a pointer with its size and hash.
            proposal = pointer_for(proposal, source=prov.source_id)
        confidence = proposal.confidence if proposal.confidence is not None else DEFAULT_ACCEPTED_CONFIDENCE
        item = MemoryItem(
            id=proposal_item_id(event_id),
            # An explicit write may target a tier the policy accepted it for; anything
            # quarantined stays in short-term memory, capped in confidence.
            tier="stm" if quarantined else (proposal.tier or "stm"),  # type: ignore[arg-type]
            type=proposal.type if proposal.type != "message" else "note",  # type: ignore[arg-type]
            title=proposal.title or proposal.content[:80],
            content=proposal.content,
            scope=Scope.for_identity(proposal.scope or default_scope, who),  # type: ignore[arg-type]
            tags=list(proposal.tags), entities=list(proposal.entities), provenance=prov,
            # the author's own claims it corrects, and those it corrects a detail of (they stay)
            links=[*(Link(rel="supersedes", to=old) for old in fixes.replaced),
                   *(Link(rel="refines", to=old) for old in fixes.in_part)],
            confidence=min(confidence, QUARANTINE_MAX_CONFIDENCE) if quarantined else confidence,
            importance=proposal.importance or 5, valid_from=proposal.valid_from,
            valid_to=proposal.valid_to, created_at=at, updated_at=at,
            expires_at=verdict.expires_at if quarantined else None,
            metadata={"policy_version": verdict.policy_version, "verdict": verdict.action,
                      "rule_ids": list(verdict.rule_ids), "form": "api", "why_store": proposal.why_store,
                      "requested_tier": requested_tier,
                      **({"takes_over": takes_over.id} if takes_over is not None else {}),
                      **({RETIRED_BY_USER: fixes.retiring} if fixes.retiring else {}),
                      **({HELD_AGAINST: contradicts} if contradicts else {}),
                      **({DISAGREES_WITH: disagrees} if disagrees else {}),
                      **({SAID_DATES: said_dates} if said_dates else {})},
        )
        landed = self.service.append([Event(
            event_id=event_id, kind="memory.write", identity=who, at=at,
            payload={"item": msgspec.to_builtins(item), "verdict": verdict_out(verdict),
                     **({ENDS: dict(fixes.ends)} if fixes.ends else {}),
                     **({MOVED_FROM: list(fixes.moved_from)} if fixes.moved_from else {})},
        )])[0]
        return {"item_id": item.id, "seq": landed.seq, "verdict": verdict_out(verdict), "supersedes": fixes.replaced,
                "corrects_in_part": fixes.in_part, **({"ends": [i for i, _ in fixes.ends]} if fixes.ends else {})}

    def palace_assign(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        """An edit like memory.update: the caller must see the item, the location's words are
        governed by the policy (a refusal is audited, nothing stored), and the inbox event
        carries who assigned what; consolidation then keeps the item there."""
        args = decode(PalaceAssignArgs, raw, "memory.palace.assign")
        domain, room, shelf = _assignable_location(args.location)
        current = self._editable(args.id, who, view, "memory.palace.assign",
                                 {"id": args.id, "location_sha256": sha256_text(args.location)})
        # Slugs join words with "-": the policy reads them as the words they are.
        findings = self.service.policy.scan_text(" / ".join((domain, room, shelf)).replace("-", " "))
        if findings:
            verdict = {"action": "reject", "rule_ids": sorted({f.rule_id for f in findings}),
                       "reasons": [f"location: {f.kind} ({f.rule_id})" for f in findings]}
            self.service.audit(who, "memory.palace.assign", {"id": args.id, "location_sha256":
                               sha256_text(args.location)}, [args.id], verdict=verdict, outcome="rejected")
            raise ToolError(422, "memory.palace.assign rejected by the policy; nothing was stored",
                            {"verdict": verdict})
        at = utcnow()
        previous = current.metadata.get("palace")
        landed = self.service.append([Event(
            event_id=stable_id("evt", "memory.palace.assign", uuid.uuid4().hex),
            kind="memory.palace.assign", identity=who, at=at,
            payload={"item_id": args.id, "domain": domain, "room": room, "shelf": shelf,
                     "previous": previous if isinstance(previous, str) else None, "at": at},
        )])[0]
        path = location_of(msgspec.structs.replace(current, metadata={
            **current.metadata, "palace_pin": {"domain": domain, "room": room, "shelf": shelf}})).path
        return {"item_id": args.id, "location": path, "seq": landed.seq}

    def link(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = decode(LinkArgs, raw, "memory.link")
        if args.src_id == args.dst_id:
            raise ToolError(400, "memory.link: an item cannot link to itself")
        src, dst = (self._editable(item_id, who, view, "memory.link",
                                   {"src_id": args.src_id, "dst_id": args.dst_id, "rel": args.rel})
                    for item_id in (args.src_id, args.dst_id))
        if args.rel == "supersedes":
            try:
                _check_supersedes(src, dst, who)
            except ToolError as exc:
                self.service.audit(who, "memory.link", {"src_id": args.src_id, "dst_id": args.dst_id,
                                                        "rel": args.rel}, [args.dst_id], outcome="refused",
                                   reason=exc.message.split(": ", 1)[-1][:200])
                raise
        landed = self.service.append([Event(
            event_id=stable_id("evt", "memory.link", uuid.uuid4().hex), kind="memory.link", identity=who,
            payload={"src_id": args.src_id, "dst_id": args.dst_id, "rel": args.rel},
        )])[0]
        return {"src_id": args.src_id, "dst_id": args.dst_id, "rel": args.rel, "seq": landed.seq}

    def consolidate(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = decode(ConsolidateArgs, raw, "memory.consolidate")
        partition = Scope.for_identity(args.scope, who).partition_key()
        landed = self.service.append([Event(
            event_id=stable_id("evt", "memory.consolidate", uuid.uuid4().hex),
            kind="memory.consolidate", identity=who,
            payload={"scope": args.scope, "partition": partition, "tiers": list(args.tiers),
                     "promote": args.promote},
        )])[0]
        return {"requested": True, "scope": args.scope, "partition": partition, "seq": landed.seq}
