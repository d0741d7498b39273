"""The memory.* actions that change or decide a stored item: update, forget and review."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import msgspec

from online.review import review_refusal
from online.state import MemoryService, View
from online.tools.args import ForgetArgs, ItemPatch, ReviewArgs, ToolError, UpdateArgs, args_hint, decode
from online.tools.shaping import corrections_out, corrections_payload, verdict_out
from online.tools.writes import WriteActions
from pipelines.capture import (
    GovernedClaim,
    approval_corrects,
    end_before,
    ended_by_plan,
    govern_claim,
    kept_importance,
)
from pipelines.forgetting import kept_turn_id
from pipelines.materialize import (
    DISAGREES_WITH,
    ENDS,
    FORGET_REASON,
    FORGOT,
    FORGOT_TURNS,
    HELD_AGAINST,
    HELD_EDIT_RULES,
    KEPT_IMPORTANCE,
    MOVED_FROM,
    PATCHABLE_FIELDS,
    QUARANTINE_MAX_CONFIDENCE,
    RETRACTION_RULE,
    REWRITE_RULE,
    SAID_DATES,
    WITHDRAWN,
    apply_patch,
    awaits_review,
    held_against_others,
    held_edit,
    in_quarantine,
    message_item_id,
    with_held_edit,
)
from pipelines.recall.conflicts import Corrections, authors, is_claim, speaker
from pipelines.recall.episodic import said_stems
from pipelines.records import (
    Event,
    Identity,
    MemoryItem,
    ProposedItem,
    Scope,
    Verdict,
    parse_time,
    sha256_text,
    stable_id,
    time_problems,
    utcnow,
)
from pipelines.validity import reread


def _holds_from_later(current: MemoryItem, patch: dict[str, Any], who: Identity) -> bool:
    """Whether an edit's new words (`patch`, its window read from them) hold from a day after
    `current` began, with no end, while `current` holds already: the author's own claim, in a
    scope the editor's identity writes to, holding with no end, not held for review. Else the
    edit is the author's correction in place (of a plan not begun yet: "from January 1, not
    December 1")."""
    start, began = parse_time(patch.get("valid_from")), parse_time(current.valid_from)
    return (start is not None and patch.get("valid_to") is None and current.valid_to is None
            and (began is None or began <= datetime.now(timezone.utc) and began < start)
            and is_claim(current) and not in_quarantine(current) and authors(current) == {who.user_id}
            and Scope.for_identity(current.scope.kind, who).audience_key() == current.scope.audience_key())


def _moves_plan(current: MemoryItem, patch: dict[str, Any], who: Identity, view: View,
                service: MemoryService) -> dict[str, Any]:
    """An edit giving a plan not begun yet (`current`: a claim holding from a later day) another
    start: what the plan was to take over holds until the new start (`capture.ended_by_plan`),
    as when a new claim moves it; the update event's `ENDS` and `MOVED_FROM`, or nothing."""
    start, began = parse_time(patch.get("valid_from")), parse_time(current.valid_from)
    if start is None or began is None or start == began or began <= datetime.now(timezone.utc):
        return {}
    like = ProposedItem(type=current.type, title=current.title, content=current.content, scope=current.scope.kind)
    ended = ended_by_plan(current, str(patch["valid_from"]), service.existing_like(who, view)(like))
    if not ended:
        return {}
    end = end_before(str(patch["valid_from"]))
    return {ENDS: {i: end for i in ended}, MOVED_FROM: [current.valid_from]}


def _vouched(item: MemoryItem, who: Identity) -> bool:
    """Whether `who` approved `item` in review (`metadata["review"]`; an approved held edit
    included): the approver vouched for what it says, so their correction of it (a typo, a
    value) is theirs to make, as its author's is, where anyone else's is held for review."""
    review = item.metadata.get("review")
    return isinstance(review, dict) and review.get("decision") == "approve" and review.get("by") == who.user_id


def _not_of_the_round(given: str, turn: MemoryItem | None, who: Identity) -> ToolError | None:
    """Why `turn` (found for `ForgetArgs.turn_ids` entry `given`; None: not found) may not be
    forgotten with `who`'s forget as a turn of their round, or None when it may."""
    where = "give a turn_id from POST /v1/turns, or the id of a message entry memory_search found"
    if turn is None or turn.scope.user_id != who.user_id:
        return ToolError(404, f"memory.forget: turn_ids: {given!r} is not a turn of yours ({where})")
    if turn.type != "message":
        return ToolError(400, f"memory.forget: turn_ids: {given!r} is a memory ({turn.type}), not a turn "
                              "of the conversation: forget it with a memory.forget of its own")
    if turn.entities and turn.metadata.get("role") == "user":  # a named speaker: a teammate in the chat
        return ToolError(403, f"memory.forget: turn_ids: {given!r} was said by {turn.entities[0]!r}, not by "
                              "you: only your own turns and the assistant's answers to you are forgotten with "
                              "your forget")
    said_in = (str(turn.metadata.get("project_id", turn.scope.project_id)),
               str(turn.metadata.get("session_id", turn.scope.session_id)))
    if said_in != (who.project_id, who.session_id):
        return ToolError(409, f"memory.forget: turn_ids: {given!r} was said in another conversation (project "
                              f"{said_in[0]!r}, session {said_in[1]!r}), not this round's (project "
                              f"{who.project_id!r}, session {who.session_id!r}): name only the turns of the "
                              "round that asked for or acknowledged the forgetting")
    return None


def _own_retraction(edit: dict[str, Any], who: Identity) -> bool:
    """Whether the edit held for review is `who`'s forget (a retraction)."""
    return edit.get("by") == who.user_id and (edit.get("patch") or {}).get("validation") == "retracted"


def _turns_out(turns: Sequence[MemoryItem], linked: Sequence[Event], kept: Sequence[str], held: bool
               ) -> dict[str, list[str]]:
    """What a forget's answer says of the round's turns: those forgotten
    now (`forgot_turns`) and the turns kept of what else they said (`kept_turns`), or, the
    forget held, those forgotten on its approval (`turns_on_approval`)."""
    if not turns:
        return {}
    if held:
        return {"turns_on_approval": [t.id for t in turns]}
    return {"forgot_turns": [str(e.payload["item_id"]) for e in linked], **({"kept_turns": list(kept)} if kept else {})}


def _held_for_its_author(verdict: Verdict, rule: str, why: str, quarantine_days: float) -> Verdict:
    """`verdict` of an edit of a claim that is not the editor's, held for review (`rule`:
    `RETRACTION_RULE`, `REWRITE_RULE`), as an edit contradicting it would be; its author or
    a reviewer decides."""
    expires = (datetime.now(timezone.utc) + timedelta(days=quarantine_days)).isoformat()
    return msgspec.structs.replace(
        verdict, action="quarantine", rule_ids=[*verdict.rule_ids, rule], reasons=[*verdict.reasons, why],
        expires_at=verdict.expires_at or expires)


def _takes_back_words(current: MemoryItem, updated: MemoryItem) -> bool:
    """Whether an edit leaves out a word `current` said (title and content, by stem): it
    changes what the claim says ("All customer data stays in the EU." -> "Customer data may
    also go to the US."), where one that keeps every word adds a detail ("Releases ship on
    Tuesday." -> "Releases ship on Tuesday, after QA.")."""
    return not said_stems(f"{current.title} {current.content}") <= said_stems(f"{updated.title} {updated.content}")



class EditActions(WriteActions):
    """memory.update (an edit from a later day is written anew: `WriteActions._write`),
    memory.forget, memory.review."""

    def _governed(self, item: MemoryItem,
                  edited_by: tuple[Identity, View, MemoryItem, bool] | None = None) -> GovernedClaim:
        """The policy's verdict on an item as it would be stored (an edit, an approval). An
        edit of what it says (`edited_by`: the editor, the view and the item before the edit)
        is checked against the claims in its scope as a write is (`govern_claim`), the item
        as it stood among them: contradicting someone else's claim, or what the item said
        when it is someone else's (a teammate's edit of the lead's decision to another
        value), it is held for review (`pipelines.materialize.held_by_edit` folds the hold;
        the author's edit of their own claim is their correction, and so is the edit of the
        reviewer who approved it: `edited_by`'s last part, the item is not checked against
        what it said). Its corrections are a write's (`GovernedClaim.fixes`): the editor's
        own claims it now replaces or corrects a detail of, never the item itself; held, it
        names the claims it contradicts (`GovernedClaim.contradicts`), as a held write does."""
        proposal = ProposedItem(
            type=item.type, title=item.title, content=item.content, tags=list(item.tags),
            entities=list(item.entities), importance=item.importance,
            confidence=item.confidence, tier=item.tier, scope=item.scope.kind,
        )
        if edited_by is not None:
            who, view, before, vouched = edited_by
            found = [*([] if vouched else [before]),
                     *(it for it in self.service.existing_like(who, view)(proposal) if it.id != item.id)]
            # the edited words are still the item's author's (`said_by`): a teammate's edit of
            # "My laptop is a ThinkPad" contradicts what the item said
            governed = govern_claim(self.service.policy, proposal, provenance=item.provenance, found=found,
                                    scope_kind=item.scope.kind, author_user_id=who.user_id,
                                    said_by=speaker(item) or "", cosine_to=self.service.cosine_to(view)(proposal))
            fixes = governed.fixes
            return governed._replace(
                fixes=fixes._replace(replaced=[i for i in fixes.replaced if i != item.id],
                                     in_part=[i for i in fixes.in_part if i != item.id]),
                contradicts=[i for i in governed.contradicts if i != item.id])
        return GovernedClaim(self.service.policy.evaluate(
            proposal, target_tier=item.tier, provenance=item.provenance,
            source_trusted=item.provenance.source_kind != "doc",
        ), Corrections([], [], []), [])

    def update(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        return self._update(decode(UpdateArgs, raw, "memory.update"), who, view)

    def _update(self, args: UpdateArgs, who: Identity, view: View,
                turns: Sequence[MemoryItem] = (), reason: str = "",
                replaced: MemoryItem | None = None, withdraw: bool = False) -> dict[str, Any]:
        """memory.update of `args`; `turns`: the caller's turns a forget links (`forget`), forgotten
        with the item once its retraction holds; `reason`: a forget's, why (`FORGET_REASON`);
        `replaced`: the item a forget retracts when a correction took it out of what is served;
        `withdraw`: a forget that leaves the turns that said it (`WITHDRAWN`)."""
        unknown = sorted(set(args.patch) - PATCHABLE_FIELDS)
        if unknown:
            raise ToolError(400, f"memory.update: fields not patchable: {unknown}; "
                                 f"patchable: {sorted(PATCHABLE_FIELDS)}")
        if args.patch.get("type") == "message":
            raise ToolError(400, "memory.update: an item cannot become a message (a verbatim chat "
                                 "record comes only from a captured turn)")
        try:
            msgspec.convert(args.patch, ItemPatch)
        except msgspec.ValidationError as exc:
            raise ToolError(400, f"memory.update: invalid patch: {str(exc).replace('$.', '$.patch.', 1)}"
                                 f"{args_hint(ItemPatch, str(exc))}") from None
        current = replaced or self._editable(args.id, who, view, "memory.update",
                                             {"id": args.id, "fields": sorted(args.patch)})
        # What was said is not edited, but it may be forgotten: a turn is its speaker's own
        # (user scope, so only they see it), and an imported chat holds no claim whose
        # retraction would take it out of recall.
        forgets_a_turn = current.type == "message" and args.patch == {"validation": "retracted"}
        if current.type == "message" and not forgets_a_turn:
            raise ToolError(400, f"memory.update: {args.id!r} is a verbatim record of what was said "
                                 "and is not edited: write a new memory for what holds now, or forget the "
                                 "turn (memory.forget)")
        raised = (args.patch.get("confidence") or 0) > QUARANTINE_MAX_CONFIDENCE
        lifts = raised or args.patch.get("validation") == "verified"
        if in_quarantine(current) and lifts:  # else an edit is an approval without the review (recall injects it)
            raise ToolError(409, f"memory.update: {args.id!r} is held in quarantine (unverified, confidence at most "
                                 f"{QUARANTINE_MAX_CONFIDENCE}); a reviewer approves it with memory.review")
        if current.validation == "retracted":  # else an edit (validation, or a review's) revives it
            raise ToolError(409, f"memory.update: {args.id!r} is retracted (kept with its history, never "
                                 "recalled) and is not changed; write a new memory instead (nothing brings a forgotten "
                                 "memory back, nor the turns that said it)")
        at, patch, said_dates = utcnow(), dict(args.patch), {}
        if (isinstance(patch.get("content"), str) and patch["content"] != current.content
                and not {"valid_from", "valid_to"} & set(patch)):
            # new words, read as said now: "next Friday" for "next Monday" moves the window
            zone = self._zone(args.tz, "memory.update")
            window, meant = reread(current.content, patch["content"], (current.valid_from, current.valid_to),
                                   current.created_at, at, zone, patch.get("type", current.type))
            patch, said_dates = {**patch, **window}, {SAID_DATES: meant}
            if _holds_from_later(current, patch, who):
                # "From December 1, my address is ...": what it said holds until then (as a
                # proposal saying so takes over, `capture.takes_over`), so the edit is a new memory
                edited = {**msgspec.to_builtins(current), **patch}
                return self._write(ProposedItem(
                    type=edited["type"], title=edited["title"], content=edited["content"], tags=edited["tags"],
                    entities=edited["entities"], importance=edited["importance"], confidence=edited["confidence"],
                    scope=current.scope.kind, why_store=f"edit of {current.id}"), who, view, current.scope.kind,
                    zone, {"id": args.id, "fields": sorted(args.patch)}, None, takes_over=current)
        elif args.tz is not None:
            self._zone(args.tz, "memory.update")
        moves = _moves_plan(current, patch, who, view, self.service)
        try:
            updated = apply_patch(current, patch, at)
        except (ValueError, msgspec.ValidationError) as exc:
            raise ToolError(400, f"memory.update: invalid patch: {exc}") from None
        window = time_problems(updated.valid_from, updated.valid_to)
        if window and {"valid_from", "valid_to"} & set(args.patch):  # one end set against the stored other
            raise ToolError(400, f"memory.update: invalid patch: {'; '.join(window)}")
        says = {"title", "content", "type"} & set(args.patch)  # what it claims changed: checked like a write
        # The reviewer who approved a claim vouched for what it says: their correction of it
        # is checked against the other claims in its scope, not against itself (`_vouched`).
        vouched = _vouched(current, who)
        governed = (GovernedClaim(Verdict(action="accept", reasons=[] if reason else [
                                      "the speaker forgets what they said"]), Corrections([], [], []), [])
                    if forgets_a_turn  # its words were never a claim: nothing for the policy to judge
                    else self._governed(updated, (who, view, current, vouched) if says else None))
        verdict = governed.verdict
        if reason:
            verdict = msgspec.structs.replace(verdict, reasons=[*verdict.reasons, f"forgotten: {reason}"])
        # Someone else's claim is theirs: a forget of it, or an edit taking back words it said,
        # waits for them or a reviewer (its author's own, or the approving reviewer's, applies
        # at once; a teammate's added detail too).
        others = authors(current) != {who.user_id} and not vouched
        days = self.service.policy.settings.quarantine_days
        whose = ", ".join(sorted(authors(current)))
        if args.patch.get("validation") == "retracted" and verdict.action != "reject" and others:
            verdict = _held_for_its_author(verdict, RETRACTION_RULE, f"retracts a claim of {whose}", days)
        elif (says and verdict.action == "accept" and others and is_claim(current)
              and _takes_back_words(current, updated)):
            verdict = _held_for_its_author(verdict, REWRITE_RULE, f"rewrites what a claim of {whose} says", days)
        if verdict.action == "reject":
            self.service.audit(who, "memory.update", {"id": args.id, "fields": sorted(args.patch)},
                               [args.id], verdict=verdict_out(verdict), outcome="rejected")
            raise ToolError(422, "memory.update rejected by the policy; nothing was stored",
                            {"verdict": verdict_out(verdict)})
        waiting = held_edit(current)
        if (waiting is not None and verdict.action == "quarantine" and HELD_EDIT_RULES & set(verdict.rule_ids)
                and not (turns and _own_retraction(waiting, who))):  # a forget's later turns join it (`forget`)
            # One edit waits beside an item (`held_by_edit`): a second would replace it unseen.
            self.service.audit(who, "memory.update", {"id": args.id, "fields": sorted(args.patch)}, [args.id],
                               verdict=verdict_out(verdict), outcome="refused",
                               reason=f"an edit by {waiting.get('by')} is held for review")
            raise ToolError(409, f"memory.update: an edit of {args.id!r} by {waiting.get('by')} is already held "
                                 "for review; it is decided first with memory.review (its editor may reject it), "
                                 "then edit again", {"held_edit": waiting})
        # What it now says corrects as a write would (applied with it), or, held for
        # contradicting someone else's claims, names them (the hold waits beside the item).
        fixes = governed.fixes if verdict.action == "accept" else Corrections([], [], [])
        # the round's turns: forgotten with it now, or kept with the held edit until its approval
        linked, kept = ([], []) if verdict.action != "accept" else self._turns_forgotten_with(turns, current, who)
        landed = self.service.append([Event(
            event_id=stable_id("evt", "memory.update", uuid.uuid4().hex), kind="memory.update",
            identity=who, at=at,
            payload={"item_id": args.id, "patch": patch, "verdict": verdict_out(verdict), "at": at, **said_dates,
                     **({FORGET_REASON: reason} if reason else {}),
                     **({WITHDRAWN: True} if withdraw else {}),
                     **({FORGOT_TURNS: [t.id for t in turns]} if turns else {}),
                     **({"as_reviewer": True} if vouched and says else {}),
                     **corrections_payload(fixes), **(moves if verdict.action == "accept" else {}),
                     # what it now says disagrees with (replacing what it said before)
                     **({DISAGREES_WITH: governed.disagrees} if says and verdict.action == "accept" else {}),
                     **({HELD_AGAINST: governed.contradicts}
                        if verdict.action == "quarantine" and governed.contradicts else {})},
        ), *linked])[0]
        out = {"item_id": args.id, "seq": landed.seq, "verdict": verdict_out(verdict), **corrections_out(fixes),
               **({"ends": list(moves[ENDS])} if moves and verdict.action == "accept" else {}),
               **_turns_out(turns, linked, kept, held=verdict.action != "accept")}
        return {**out, "as_reviewer": True} if vouched and says else out

    def forget(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        """memory.update retracting the item (`{"validation": "retracted"}`), with its
        governance: the caller's own claim (or one they approved) is retracted at once,
        anyone else's is held for review (`RETRACTION_RULE`)."""
        args = decode(ForgetArgs, raw, "memory.forget")
        turns = self._round_turns(args, who, view)
        current = self.service.get_item(args.id, who, view)
        # A claim a correction replaced has left what is served once consolidated: its words
        # are still the caller's to forget (its last stored version is what is retracted).
        replaced = self._replaced_claim(args.id, who, view) if current is None else None
        current = current or replaced
        if turns and current is not None and current.validation == "retracted":
            # Forgotten already (by this round's first call): its later turns ("Done, it's
            # forgotten.", captured after the call) are forgotten with it.
            linked, kept = self._turns_forgotten_with(turns, current, who)
            landed = self.service.append(linked) if linked else []
            return {"item_id": args.id, **({"seq": landed[-1].seq} if landed else {}),
                    "verdict": verdict_out(Verdict(action="accept", reasons=["forgotten already"])),
                    **_turns_out(turns, linked, kept, held=False)}
        waiting = held_edit(current) if turns and current is not None else None
        if waiting is not None and _own_retraction(waiting, who):
            # The caller's forget of it waits for review: the later turns wait with the earlier ones.
            earlier = [t for i in waiting.get(FORGOT_TURNS) or () if (t := view.get(str(i))) is not None]
            turns = list({t.id: t for t in [*earlier, *turns]}.values())
        return self._update(UpdateArgs(id=args.id, patch={"validation": "retracted"}), who, view, turns,
                            " ".join(args.reason.split()), replaced, args.withdraw)

    def _replaced_claim(self, item_id: str, who: Identity, view: View) -> MemoryItem | None:
        """`item_id` as last stored when a correction the caller sees superseded it and it left
        what is served (`MemoryService.retired`), else None (a merged or archived item is not
        forgotten through what replaced it: 404 as before)."""
        found = self.service.retired(item_id, who, view)
        if found is None or found[1] is None or found[1][1] != "superseded":
            return None
        return found[0]

    def _round_turns(self, args: ForgetArgs, who: Identity, view: View) -> list[MemoryItem]:
        """The caller's turns of this round a forget names (`ForgetArgs.turn_ids`: a turn id,
        or its message entry's id), the item forgotten itself left out. Refused, nothing
        forgotten and audited as refused: 404 for one that is not the caller's turn (as for an
        id they cannot see), 403 for a teammate's words in the caller's shared chat (a named
        `speaker`: theirs alone to forget), 409 for the caller's turn of another conversation
        (project or session: not of the round that asked); 400 for a memory that is no turn."""
        turns: dict[str, MemoryItem] = {}
        for given in dict.fromkeys(args.turn_ids):
            turn = next((it for it in (self.service.get_item(i, who, view) for i in (given, message_item_id(given)))
                         if it is not None), None)
            refusal = _not_of_the_round(given, turn, who)
            if refusal is not None:
                self.service.audit(who, "memory.forget", {"id": args.id, "turn_ids": list(args.turn_ids)},
                                   [given], outcome="refused", reason=refusal.message)
                raise refusal
            if turn.id != args.id:
                turns[turn.id] = turn
        return list(turns.values())

    def _turns_forgotten_with(self, turns: Iterable[MemoryItem], forgotten: MemoryItem,
                              who: Identity) -> tuple[list[Event], list[str]]:
        """What forgetting `forgotten` does to the turns of the round that asked for it: each
        is retracted (its event's `FORGOT` names what it was forgotten with), and what else it said
        (`forgetting.kept_part`) lands first as a turn of its own, said when it was: (the
        retraction events, the kept turns' ids). A turn forgotten before leads to what was
        kept of it, which is read again (a second forget of that round)."""
        events, kept = [], []
        at = utcnow()
        for turn in turns:
            while turn.validation == "retracted":
                later = self.service.view().get(message_item_id(kept_turn_id(turn.provenance.source_id)))
                if later is None:
                    break
                turn = later
            if turn.validation == "retracted":
                continue
            said = self.service.inbox.get(stable_id("evt", "turn", turn.provenance.source_id))
            owner = said.identity if said is not None else Identity(  # a turn imported without its event
                user_id=turn.scope.user_id, org_id=turn.scope.org_id,
                project_id=str(turn.metadata.get("project_id") or turn.scope.project_id),
                session_id=str(turn.metadata.get("session_id") or turn.scope.session_id))
            rest = self.service.keep_rest(owner, str(turn.metadata.get("role") or "user"), turn.provenance.source_id,
                                          turn.content, turn.created_at, [forgotten],
                                          said.payload.get("speaker") if said is not None else None)
            if rest is not None:
                kept.append(rest)
            events.append(Event(
                event_id=stable_id("evt", "memory.update", uuid.uuid4().hex), kind="memory.update",
                identity=who, at=at,
                payload={"item_id": turn.id, "patch": {"validation": "retracted"}, "at": at, FORGOT: [forgotten.id],
                         "verdict": verdict_out(Verdict(action="accept", reasons=[
                             f"the round that forgot {forgotten.id} asked for or acknowledged it"]))}))
        return events, kept

    def review(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        """A reviewer's decision on a quarantined item, landed as a `memory.review` event
        (folded by `pipelines.materialize.review_item`; consolidation stores it as a revision
        with the reviewer as actor). Anyone who may change the item may review it. Approval
        re-runs the policy: a soft block is what a reviewer overrides, a hard block (secret,
        injection) is refused like any write (422, audited, nothing stored)."""
        args = decode(ReviewArgs, raw, "memory.review")
        audited = {"id": args.id, "decision": args.decision, "note_sha256": sha256_text(args.note)}
        # A replaced claim out of what is served is found as memory.forget finds it: a forget
        # of it held for review is decided after consolidation too.
        replaced = self._replaced_claim(args.id, who, view) if self.service.get_item(args.id, who, view) is None \
            else None
        current = replaced or self._editable(args.id, who, view, "memory.review", audited)
        if not awaits_review(current):
            raise ToolError(409, f"memory.review: {args.id!r} is not in quarantine "
                                 f"(verdict {current.metadata.get('verdict', 'accept')!r}, "
                                 f"validation {current.validation!r})")
        refusal = review_refusal(current, who, self.service.settings)  # the one check of every review door
        if refusal is not None:
            self.service.audit(who, "memory.review", audited, [args.id], outcome="refused", reason=refusal)
            raise ToolError(403, f"memory.review: {args.id!r}: {refusal}")
        edit = held_edit(current)  # an edit held beside the item is what is decided
        proposers = {edit.get("by")} if edit is not None else authors(current) | {current.scope.user_id}
        if args.decision == "approve" and held_against_others(current) and who.user_id in proposers:
            # Its approval supersedes someone else's claim: a review by its own author would ask no one.
            self.service.audit(who, "memory.review", audited, [args.id], outcome="refused",
                               reason="held for contradicting someone else's claim: approved by another reviewer")
            held = ("an edit held for contradicting someone else's claim waits on it; its editor"
                    if edit is not None else "it is held for contradicting someone else's claim; its author")
            raise ToolError(409, f"memory.review: {args.id!r}: {held} cannot approve it "
                                 "(another reviewer does; they may reject it)")
        findings = self.service.policy.scan_text(args.note) if args.note.strip() else []
        verdict: dict[str, Any] = {}
        fixes = Corrections([], [], [])
        kept_at: dict[str, int] = {}
        if findings:
            verdict = {"action": "reject", "rule_ids": sorted({f.rule_id for f in findings}),
                       "reasons": [f"note: {f.kind} ({f.rule_id})" for f in findings]}
        elif args.decision == "approve":
            decided = with_held_edit(current)
            verdict = verdict_out(self._governed(decided).verdict)
            # The claims in its scope it contradicts (why it was held): the approval corrects them.
            like = ProposedItem(type=decided.type, title=decided.title, content=decided.content,
                                tags=list(decided.tags))
            found = self.service.existing_like(who, view)(like)
            fixes = approval_corrects(decided, found, self.service.cosine_to(view)(like))
            # the correction keeps the importance of what it replaces, as a proposal's does
            like = kept_importance(msgspec.structs.replace(like, importance=decided.importance),
                                   [it for it in found if it.id in fixes.replaced])
            if like.importance is not None and like.importance > decided.importance:
                kept_at = {KEPT_IMPORTANCE: like.importance}
        if verdict.get("action") == "reject":
            self.service.audit(who, "memory.review", audited, [args.id], verdict=verdict, outcome="rejected")
            raise ToolError(422, f"memory.review: {args.decision} refused by the policy; nothing was stored",
                            {"verdict": verdict})
        # An approved forget forgets the turns of the round that asked for it (`FORGOT_TURNS`).
        turns = ([t for i in edit.get(FORGOT_TURNS) or () if (t := view.get(str(i))) is not None
                  and t.type == "message"]
                 if args.decision == "approve" and edit is not None
                 and (edit.get("patch") or {}).get("validation") == "retracted" else [])
        linked, kept = self._turns_forgotten_with(turns, current, who)
        at = utcnow()
        landed = self.service.append([Event(
            event_id=stable_id("evt", "memory.review", uuid.uuid4().hex), kind="memory.review",
            identity=who, at=at,
            payload={"item_id": args.id, "decision": args.decision, "note": args.note, "verdict": verdict,
                     "at": at, **corrections_payload(fixes), **kept_at},
        ), *linked])[0]
        # The turns are the forgetter's, not the reviewer's to see: how many, not which.
        return {"item_id": args.id, "decision": args.decision, "seq": landed.seq, "verdict": verdict,
                **corrections_out(fixes),
                **({"turns_forgotten": len(linked), "turns_kept": len(kept)} if turns else {})}

