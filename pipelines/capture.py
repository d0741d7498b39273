"""Capture one chat turn: parse proposals, govern them, land everything in the inbox.

The service (`POST /v1/turns`, the proxy) and the command line (`loci ingest`) both call
`capture_turn`, so a turn is governed the same way whichever door it came through. The
inbox append commits before this returns: a returned result is an acknowledged write.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, NamedTuple, Sequence

import msgspec

from pipelines.first_person import of_the_writer
from pipelines.health_details import is_own_health_detail
from pipelines.inbox import InboxBackend
from pipelines.materialize import (
    CONTRADICTION_RULE,
    DEFAULT_ACCEPTED_CONFIDENCE,
    DISAGREES_WITH,
    ENDS,
    FORGOT,
    HELD_AGAINST,
    MOVED_FROM,
    SCOPE_KINDS,
    in_quarantine,
    proposal_item_id,
)
from pipelines.policy import contradictions as contradictions_of
from pipelines.policy_rules.findings import REDACTED
from pipelines.policy_rules.secrets import find_secrets_to_mask
from pipelines.proposals import parse_assistant_output
from pipelines.recall.conflicts import (
    MAY_UPDATE,
    RETIRED_BY_USER,
    Corrections,
    CosineTo,
    authors,
    conflict_reason,
    corrected,
    corrections,
    is_claim,
    of_two_people,
    proposed_claim,
    read_claim,
    reschedules,
    says_the_same,
    stated_values,
)
from pipelines.recall.episodic import limits_to_its_chat
from pipelines.records import (
    Event,
    Identity,
    MemoryItem,
    ParseError,
    ProposedItem,
    Provenance,
    Verdict,
    apart_in_time,
    parse_time,
    sha256_text,
    stable_id,
    utcnow,
)
from pipelines.validity import SAID_DATES, undated, with_window


class ProposalOutcome(msgspec.Struct):
    form: str
    title: str
    action: str
    reasons: list[str]
    rule_ids: list[str]
    item_id: str | None
    event_id: str
    # The author's own claims this one corrects: they leave recall (their history stays).
    supersedes: list[str] = msgspec.field(default_factory=list)
    # The author's own notes it corrects a detail of: they stay in recall, shown with it.
    corrects_in_part: list[str] = msgspec.field(default_factory=list)
    # The author's own claims it takes over from the day it holds from: they hold until then.
    ends: list[str] = msgspec.field(default_factory=list)
    # The scope kind it is stored in ("session" for a wish for this chat only that named none).
    scope: str | None = None


class CaptureResult(msgspec.Struct):
    turn_id: str
    turn_event_id: str
    seq: int
    role: str
    visible_text: str
    proposals: list[ProposalOutcome]
    parse_errors: list[ParseError]
    redactions: int


# The name a credential is assigned to, as a log, an env dump or a config file writes it
# ("AWS_SECRET_ACCESS_KEY=", "api_key: "): letters and underscores only (a random string's
# first run is not read as one), then the value, at least 8 characters, not a URL's path.
_SETTING_NAME = re.compile(r"[A-Za-z][A-Za-z_]{1,63}[ \t]*[=:][ \t]*(?!/)(?=[^\s=:]{8})")  # not "https://"


def _setting_name_chars(found: str) -> int:
    """How many characters of a masked credential are the name of the setting that holds
    it (a detector that reads a whole `NAME=value` run masks the name too, and the kept
    turn no longer says which setting held a credential); 0 when it names none."""
    named = _SETTING_NAME.match(found)
    return named.end() if named else 0


def redact_secrets(text: str) -> tuple[str, int]:
    """Mask credentials in a raw turn: the turn is kept as an episodic record, a credential
    in it never is, not even a documentation example key (what a stored turn must not keep
    is wider than what the policy refuses in a proposal: `find_secrets_to_mask`). The name of
    the setting that held it stays ("AWS_SECRET_ACCESS_KEY=[REDACTED]")."""
    # Two rules may find one credential (a Stripe key whole and its prefix): overlapping
    # finds are one credential, one mark (it read "[REDACTED][REDACTED]", counted twice).
    merged: list[list[int]] = []
    for start, end in sorted((h.start, h.end) for h in find_secrets_to_mask(text)):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, cursor = [], 0
    for start, end in merged:
        start += _setting_name_chars(text[start:end])
        out += [text[cursor:start], REDACTED]
        cursor = end
    out.append(text[cursor:])
    return "".join(out), len(merged)


def capture_turn(
    inbox: InboxBackend,
    policy: Any,
    identity: Identity,
    role: str,
    text: str,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    extra_proposals: Sequence[ProposedItem] = (),
    turn_id: str | None = None,
    turn_ref: str | None = None,
    speaker: str | None = None,
    at: str | None = None,
    default_scope: str = "project",
    parse: bool | None = None,
    existing: Callable[[ProposedItem], Sequence[MemoryItem]] | None = None,
    cosine_to: Callable[[ProposedItem], CosineTo | None] | None = None,
    append: Callable[..., list[Event]] | None = None,
    answers: str | None = None,
    user_said: Callable[[str], str | None] | None = None,
    zone: str = "UTC",
    forgot: Sequence[str] = (),
) -> CaptureResult:
    """Govern and land one turn. Assistant turns are parsed for proposals (tool call,
    JSON block, narrated memory_save); `extra_proposals` come from the memory.propose API.
    Rejected proposals land only as events with their verdict, never as items. `append`
    lands the events (default `inbox.append`; the service's also shares their vectors) and
    takes the inbox's `check` keyword. A proposal's evidence (what the user said that it
    records, read for the values it names as replaced): `answers`, the user's words this
    assistant turn answers, and the user turns it names (`turn_ref`, the proposal's
    `provenance_hint` source or chunk ids), read by `user_said` (a turn id -> the text of
    that turn of this user, or None). `zone`: the speaker's time zone, whose calendar a
    proposal's "next week" or "until Friday" is read on (`validity.with_window`). `forgot`:
    the memories a request to forget, in the round this turn belongs to, retracted (the
    turn lands forgotten with them, `materialize.item_from_turn`). `cosine_to`: a proposal ->
    its cosine with a stored item (None without vectors), for the contradiction check
    (`govern_claim`)."""
    _check_turn_args(role, default_scope)
    turn_id = turn_id or f"turn_{uuid.uuid4().hex}"
    # Two times: when the turn was said (`at`, kept in the payload and on its items, for
    # temporal questions) and when Loci learned it (the events' own time, which aging
    # counts from): an imported history is months old when it is said, new when learned.
    learned_at = utcnow()
    said_when = at  # as the caller gave it (None: now)
    at = at or learned_at
    do_parse = (role == "assistant") if parse is None else parse
    parsed = parse_assistant_output(text, tool_calls) if do_parse else None
    visible = parsed.visible_text if parsed else text
    stored_text, redactions = redact_secrets(visible)

    turn_event = Event(
        event_id=stable_id("evt", "turn", turn_id),
        kind="turn",
        identity=identity,
        at=learned_at,
        payload={
            "turn_id": turn_id,
            "role": role,
            "text": stored_text,
            "raw_sha256": sha256_text(text),
            "turn_ref": turn_ref,
            "speaker": speaker,
            "at": at,
            "redactions": redactions,
            **({FORGOT: list(forgot)} if forgot else {}),
        },
    )
    turn = _Turn(identity=identity, turn_id=turn_id, turn_ref=turn_ref, raw_text=text, at=at,
                 learned_at=learned_at, event_id=turn_event.event_id, default_scope=default_scope,
                 zone=zone)
    forms_items: list[tuple[str, ProposedItem]] = []
    if parsed:
        forms_items += [(pp.form, pp.item) for pp in parsed.proposals]
    forms_items += [("api", item) for item in extra_proposals]

    governed = [
        _govern_proposal(turn, policy, existing, index, form, proposal,
                         lambda proposal: _evidence(proposal, turn_ref, answers, user_said), cosine_to)
        for index, (form, proposal) in enumerate(forms_items)
    ]
    batch = [turn_event, *(g.event for g in governed)]
    landed = (append or inbox.append)(batch, check=lambda stored: _check_turn_id_free(batch, stored, said_when))
    return CaptureResult(
        turn_id=turn_id,
        turn_event_id=turn_event.event_id,
        seq=landed[0].seq,
        role=role,
        visible_text=visible,
        proposals=[g.outcome() for g in governed],
        parse_errors=list(parsed.errors) if parsed else [],
        redactions=redactions,
    )


class TurnIdConflict(ValueError):
    """A turn id sent again with another caller, role, text or speaker."""


def _check_turn_id_free(batch: Sequence[Event], stored: Sequence[Event | None], said_at: str | None = None) -> None:
    """A turn id sent again is a retry (answered as stored) only for the same caller, role,
    words, speaker, proposals (tool calls, default scope) and, when the retry says when the
    turn was said (`said_at`), that time: the inbox keeps the first
    event of an id, so anything else would be acknowledged and silently dropped (a chat
    export imported again with its rows' `speaker` changed kept the old speakers, without a
    word). Run by the inbox under its write lock (`stored` = what its ids hold), so two
    writers of one id cannot both pass."""
    turn, first = batch[0], stored[0]
    if first is None:
        return
    same = (first.identity == turn.identity and first.payload.get("role") == turn.payload["role"]
            and first.payload.get("raw_sha256") == turn.payload["raw_sha256"]
            and all(_proposal_key(old) == _proposal_key(ev) for ev, old in zip(batch[1:], stored[1:])))
    if not same:
        raise TurnIdConflict(f"turn_id {turn.payload['turn_id']!r} is already taken by another turn; "
                             "give each turn its own id")
    landed, now = first.payload.get("speaker") or None, turn.payload.get("speaker") or None
    if landed != now:  # the same turn said by someone else: name how it landed, as `ingest_locomo` does
        raise TurnIdConflict(f"turn_id {turn.payload['turn_id']!r} landed before {_as_said_by(landed)}, not "
                             f"{_as_said_by(now)}: a turn keeps the speaker it landed with; send it as it "
                             "landed, or give the turn its own id")
    landed_at = first.payload.get("at")
    if said_at is not None and not _same_instant(landed_at, said_at):  # a retry may leave `at` out
        raise TurnIdConflict(f"turn_id {turn.payload['turn_id']!r} landed said at {landed_at}, not {said_at}: "
                             "a turn keeps the time it landed with; send it as it landed, or give the turn "
                             "its own id")


def _same_instant(a: Any, b: str) -> bool:
    first, second = parse_time(a) if isinstance(a, str) else None, parse_time(b)
    return a == b if first is None or second is None else first == second


def _as_said_by(speaker: str | None) -> str:
    return f"with speaker {speaker!r}" if speaker else "without a speaker (the caller's own)"


def _proposal_key(event: Event | None) -> tuple[Any, ...] | None:
    """What a proposal event says, comparable whether or not its text was kept (a rejected
    proposal keeps only its hash)."""
    if event is None:
        return None
    p = event.payload
    item = p.get("proposal") or {}
    said = item.get("content_sha256") or sha256_text(item.get("content", ""))
    return p.get("form"), p.get("default_scope"), item.get("type"), said


def _check_turn_args(role: str, default_scope: str) -> None:
    if role not in ("user", "assistant", "system"):
        raise ValueError(f"role must be user, assistant or system, not {role!r}")
    if default_scope not in SCOPE_KINDS:
        raise ValueError(f"default_scope must be one of {SCOPE_KINDS}")


@dataclass(frozen=True)
class _Turn:
    """What every proposal of one turn shares."""

    identity: Identity
    turn_id: str
    turn_ref: str | None
    raw_text: str
    at: str
    learned_at: str
    event_id: str
    default_scope: str
    zone: str = "UTC"


@dataclass(frozen=True)
class _Governed:
    """One proposal after the policy: its inbox event and what the caller is told."""

    form: str
    proposal: ProposedItem
    verdict: Verdict
    event: Event
    title: str  # as the caller is told it and the inbox keeps it (`shown_title`)

    def outcome(self) -> ProposalOutcome:
        verdict, event_id = self.verdict, self.event.event_id
        return ProposalOutcome(
            form=self.form,
            title=self.title,
            action=verdict.action,
            reasons=list(verdict.reasons),
            rule_ids=list(verdict.rule_ids),
            item_id=None if verdict.action == "reject" else proposal_item_id(event_id),
            event_id=event_id,
            supersedes=list(self.event.payload.get("supersedes", [])),
            corrects_in_part=list(self.event.payload.get("refines", [])),
            ends=list(self.event.payload.get(ENDS) or {}),
            scope=None if verdict.action == "reject" else self.event.payload.get("default_scope"),
        )


def _proposal_provenance(turn: _Turn, proposal: ProposedItem) -> Provenance:
    # The proposal may name its source; the turn is the default and always the evidence.
    hint = proposal.provenance_hint or {}
    source_kind = hint.get("source_kind") if hint.get("source_kind") in ("chat", "doc", "tool", "mixed") else "chat"
    chunk_ids = hint.get("chunk_ids")
    return Provenance(
        source_kind=source_kind,
        source_id=str(hint.get("source_id") or turn.turn_id),
        chunk_ids=[str(c) for c in chunk_ids if isinstance(c, (str, int))] if isinstance(chunk_ids, list) else [],
        content_hashes=[sha256_text(turn.raw_text)],
        turn_refs=[turn.turn_ref] if turn.turn_ref else [],
        event_ids=[turn.event_id],
        created_at=turn.at,
    )


class GovernedClaim(NamedTuple):
    """`govern_claim`'s answer."""

    verdict: Verdict
    fixes: Corrections
    # The stored claims it is held for contradicting (`CONTRADICTION_RULE`): its item names
    # them (`pipelines.materialize.HELD_AGAINST`), so each delivered one says a change to it
    # waits, whatever recall's query found (`VisibleCorpora.held_against`).
    contradicts: list[str]
    # Accepted, the stored claims it still disagrees with (another scope kind, someone's echo
    # of what the author corrects): its item names them (`materialize.DISAGREES_WITH`), so
    # recall brings the two in together, whichever the query found.
    disagrees: list[str] = []


def govern_claim(
    policy: Any,
    proposal: ProposedItem,
    *,
    provenance: Provenance,
    found: Sequence[MemoryItem],
    scope_kind: str,
    author_user_id: str,
    evidence: Sequence[str] = (),
    said_by: str | None = None,
    cosine_to: CosineTo | None = None,
) -> GovernedClaim:
    """The policy's verdict on a proposal (from a turn or `memory.write`) checked against the
    stored items `found`, and the ids of the author's own claims it corrects: a correction
    supersedes them instead of contradicting them; anyone else's in the same scope kind
    stays for the policy's contradiction rule. A claim in another scope kind is not a
    contradiction but an override that recall's scope priority resolves (session > project
    > user > org). Someone else's claim that only echoes a claim the author corrects (the
    partner's note repeating the parent's old bedtime) holds nothing back (`echoes`): it
    stays, and recall flags it against the correction. Only an accepted proposal corrects
    anything. A correction of a detail of a note that says more (`conflicts.corrects_in_part`)
    does not replace it: it links to it (`refines`), and recall shows the note, marked, after
    it. `evidence`: what the user said that the proposal records (the values it names as
    replaced count as the proposal's own, `conflicts.retired_by_evidence`). Held for
    contradicting someone else's claims, it names them (`GovernedClaim.contradicts`). `said_by`:
    whose words the claim is, when not its author's (an edit of someone else's claim: still
    theirs); what they say of themselves is not held against a teammate's own words
    (`conflicts.own_words_apart`). `cosine_to`: the proposal's cosine with a stored item, when
    there are vectors: the cosine signals recall reads apply to corrections and
    contradictions alike (`conflicts.contradicted`)."""
    said_by = author_user_id if said_by is None else said_by
    # A claim for another time neither replaces nor contradicts it (`records.apart_in_time`):
    # "until Friday, reports go to Ana" leaves "reports go to Maya", which holds again after.
    # A move ("Dentist moved to Thursday", over after that Thursday) moves the plan, whatever
    # window each has: the new day's is not the old day's.
    moves = reschedules(proposal.content)
    seen, found = found, [it for it in found if moves or not apart_in_time(proposal, it)]
    fixes = corrections(proposal.title, proposal.content, proposal.type, scope_kind, author_user_id, found,
                        evidence, cosine_to)
    fixes = takes_over(proposal, fixes, found, scope_kind, author_user_id, seen)
    replaced = [*fixes.replaced, *fixes.in_part, *(i for i, _ in fixes.ends)]
    corrected = [it for it in found if it.id in replaced]
    # A claim held in quarantine is not established yet: it contradicts nothing.
    existing = [it for it in found if it.id not in replaced and it.scope.kind == scope_kind
                and not in_quarantine(it) and not echoes(it, corrected, proposal.confidence)]
    verdict = policy.evaluate(
        proposal,
        target_tier=proposal.tier or "stm",
        provenance=provenance,
        source_trusted=provenance.source_kind != "doc",
        existing=existing,
        author=said_by,
        cosine_to=cosine_to,
    )
    held = verdict.action == "quarantine" and CONTRADICTION_RULE in verdict.rule_ids
    accepted = verdict.action == "accept"
    contradicts = (sorted({old.id for old, _ in contradictions_of(proposal, existing, said_by, cosine_to)})
                   if held else [])
    # Accepted, it contradicts nothing the policy checked (`existing`): what it disagrees
    # with is among the rest it was not checked against (another scope kind, an echo),
    # never what it corrects.
    checked = {it.id for it in existing}
    disagrees = sorted({old.id for old, _ in contradictions_of(proposal, [
        it for it in found if it.id not in checked and it.id not in replaced and not in_quarantine(it)],
        said_by, cosine_to)}) if accepted else []
    # Only an accepted correction replaces: one held for review would leave recall with
    # neither the old claim nor the new one until a reviewer acts.
    # What the user's words retired is said by the claim however the verdict goes.
    return GovernedClaim(verdict, fixes if accepted else Corrections([], [], fixes.retiring),
                         contradicts, disagrees)


def takes_over(proposal: ProposedItem, fixes: Corrections, found: Sequence[MemoryItem], scope_kind: str,
               author_user_id: str, seen: Sequence[MemoryItem] = ()) -> Corrections:
    """`fixes` with the author's claims that `proposal`, holding from a day on with no end
    ("From December 1, Maya's address is Rua Nova 5"), takes over from that day: those it
    corrects, and those under its title it may update (`conflicts.MAY_UPDATE`), that hold
    with no end from before. They are not replaced now: each ends the instant before
    (`Corrections.ends`), and holds until then; after, it is history (ENDED).

    Such a claim not begun yet is a plan: the same values said from another day ("the move
    is on the 5th, not the 1st") correct it (replaced), and what the plan was to take over
    (`ended_by_plan`, among `seen`: the claims found before those apart in time were left
    out) holds until the new start instead, so no day is left with nothing current."""
    start = parse_time(proposal.valid_from)
    if start is None or proposal.valid_to is not None:
        return fixes
    new = proposed_claim(proposal.title, proposal.content, proposal.type, scope_kind)
    end = end_before(proposal.valid_from)
    now = datetime.now(timezone.utc)

    def own(old: MemoryItem) -> bool:
        return is_claim(old) and old.scope.kind == scope_kind and authors(old) == {author_user_id}

    def updates(old: MemoryItem) -> bool:  # not someone else's plan under the writer's title
        return (new is not None and own(old) and old.title == proposal.title
                and conflict_reason(new, was := read_claim(old)) == MAY_UPDATE and not of_two_people(new, was))

    says = stated_values(undated(proposal.content))
    plan = proposed_claim("", undated(proposal.content), proposal.type, scope_kind)

    def planned(old: MemoryItem) -> bool:  # the same plan, said for another day
        began = parse_time(old.valid_from)
        if began is None or began <= now or began == start or not own(old):
            return False
        said = stated_values(undated(old.content))
        if said or says:
            return bool(said and says) and (said <= says or says <= said)
        # no value to compare ("From Monday I work remotely" / "from Wednesday I work remotely"): what it says
        was = proposed_claim("", undated(old.content), old.type, scope_kind)
        return plan is not None and was is not None and says_the_same(plan, was)

    plans = [old for old in found if old.valid_to is None and planned(old)
             and (old.id in fixes.replaced or old.title == proposal.title)]
    ends = [old.id for old in found if old.valid_to is None and old not in plans
            and (old.id in fixes.replaced or updates(old))
            and (parse_time(old.valid_from) or datetime.min.replace(tzinfo=timezone.utc)) < start]
    ends += [i for plan in plans for i in ended_by_plan(plan, proposal.valid_from, seen) if i not in ends]
    if not ends and not plans:
        return fixes
    replaced = [*(i for i in fixes.replaced if i not in ends), *(p.id for p in plans if p.id not in fixes.replaced)]
    return fixes._replace(replaced=replaced, ends=tuple((i, end) for i in ends),
                          moved_from=tuple(str(p.valid_from) for p in plans))


def ended_by_plan(plan: MemoryItem, new_start: str, seen: Sequence[MemoryItem]) -> list[str]:
    """What `plan` (a claim not begun yet) was to take over, among `seen`: its author's claims
    in its scope kind, under its title or in conflict with it, ended the instant before its
    start, begun before `new_start`. The plan moved to `new_start`: they hold until then
    instead (`takes_over`, and an edit moving it, `online.tools`)."""
    start, moved = parse_time(plan.valid_from), parse_time(new_start)
    if start is None or moved is None:
        return []
    ended = start - timedelta(seconds=1)
    return [old.id for old in seen if old.id != plan.id and is_claim(old) and old.scope.kind == plan.scope.kind
            and authors(old) == authors(plan) and parse_time(old.valid_to) == ended
            and (parse_time(old.valid_from) or datetime.min.replace(tzinfo=timezone.utc)) < moved
            and (old.title == plan.title or conflict_reason(read_claim(plan), read_claim(old)) is not None)]


def end_before(start: str) -> str:
    """The instant before `start` (ISO-8601), as `validity` ends a day: when a claim taken
    over from `start` on ends."""
    return (parse_time(start) - timedelta(seconds=1)).isoformat(timespec="seconds")


def echoes(other: MemoryItem, corrected: Sequence[MemoryItem], confidence: float | None = None) -> bool:
    """Whether `other` (someone else's claim) says what one of the `corrected` claims (the
    author's own, which a new claim of theirs with this `confidence` corrects) said: it
    states values, all of them stated by that claim, and the conflict rule finds nothing
    between the two. Such an echo agrees with what the author takes back, so it does not
    hold the author's correction for review: it keeps its place, and recall shows the
    correction in its place (the newer of two claims as confident). An echo more confident
    than the correction would still win recall over it: that one is no echo here, and the
    correction is held for review as before."""
    if not corrected or not is_claim(other):
        return False
    if other.confidence > (DEFAULT_ACCEPTED_CONFIDENCE if confidence is None else confidence) + 1e-9:
        return False
    said = read_claim(other)
    if not said.values:
        return False
    return any(said.values <= (own := read_claim(old)).values and conflict_reason(said, own) is None
               for old in corrected)


def approval_corrects(item: MemoryItem, found: Sequence[MemoryItem], cosine_to: CosineTo | None = None) -> Corrections:
    """What `item` corrects among the claims in its own scope (same kind, same owners) in
    `found`: when a reviewer approves a claim (or an edit) held for contradicting someone
    else's, the approval is the correction, so it corrects them as an author's correction
    of their own claim does (`conflicts.corrected`): those it replaces leave recall and keep
    their history, a note it corrects a detail of stays, linked with `refines`. `cosine_to`:
    its cosine with a stored item, as the write that held it had it (`govern_claim`)."""
    if not is_claim(item):
        return Corrections([], [], [])
    owner = Identity(user_id=item.scope.user_id, project_id=item.scope.project_id,
                     session_id=item.scope.session_id, org_id=item.scope.org_id)
    same_scope = [old for old in found if old.id != item.id and old.scope.kind == item.scope.kind
                  and old.scope.visible_to(owner) and not in_quarantine(old)]
    replaced, in_part = corrected(read_claim(item), same_scope, cosine_to)
    return Corrections(replaced, in_part, [])


def _evidence(proposal: ProposedItem, turn_ref: str | None, answers: str | None,
              user_said: Callable[[str], str | None] | None) -> list[str]:
    """What the user said that `proposal` records (see `capture_turn`)."""
    out = [answers] if answers and answers.strip() else []
    if user_said is None:
        return out
    hint = proposal.provenance_hint or {}
    chunks = hint.get("chunk_ids") if isinstance(hint.get("chunk_ids"), list) else []
    refs = dict.fromkeys(str(r) for r in [turn_ref, hint.get("source_id"), *chunks[:8]] if r)
    return out + [text for ref in refs for text in [user_said(ref)] if text]


def _govern_proposal(
    turn: _Turn,
    policy: Any,
    existing: Callable[[ProposedItem], Sequence[MemoryItem]] | None,
    index: int,
    form: str,
    proposal: ProposedItem,
    evidence: Callable[[ProposedItem], list[str]] | None = None,
    cosine_to: Callable[[ProposedItem], CosineTo | None] | None = None,
) -> _Governed:
    proposal = scoped_by_its_words(proposal, turn.default_scope, turn.identity.user_id)
    # "until Friday", "next week": read on the day the turn was said, in the speaker's zone
    proposal, said_dates = with_window(proposal, turn.at, turn.zone)
    prov = _proposal_provenance(turn, proposal)
    found = list(existing(proposal)) if existing else []
    scope_kind = proposal.scope if proposal.scope in SCOPE_KINDS else turn.default_scope
    verdict, fixes, contradicts, disagrees = govern_claim(
        policy, proposal, provenance=prov, found=found, scope_kind=scope_kind,
        author_user_id=turn.identity.user_id, evidence=evidence(proposal) if evidence else (),
        cosine_to=cosine_to(proposal) if cosine_to else None)
    if verdict.action == "accept" and fixes.replaced:
        proposal = kept_importance(proposal, [it for it in found if it.id in fixes.replaced])
    title = shown_title(policy, proposal, verdict)
    payload = _proposal_payload(turn, index, form, proposal, verdict, prov, fixes, title)
    if contradicts:
        payload[HELD_AGAINST] = contradicts
    if disagrees:
        payload[DISAGREES_WITH] = disagrees
    if said_dates and verdict.action != "reject":
        payload[SAID_DATES] = said_dates
    event = Event(event_id=stable_id("evt", "proposal", turn.turn_id, index), kind="proposal",
                  identity=turn.identity, at=turn.learned_at, payload=payload)
    return _Governed(form=form, proposal=proposal, verdict=verdict, event=event, title=title)


def kept_importance(proposal: ProposedItem, replaced: Sequence[MemoryItem]) -> ProposedItem:
    """`proposal`, a correction replacing the claims `replaced`, at least as important as the
    most important of them: it is the current version of what they said, and a chat model
    seldom restates the importance it first gave ("Leo is allergic to peanuts only now",
    proposed at the default 5, keeps the allergy's 10: always shown, also after the
    consolidation that retires the old claim; recall showed it so only until then)."""
    most = max((it.importance for it in replaced), default=None)
    stated = proposal.importance if proposal.importance is not None else 5  # materialize's default
    if most is None or most <= stated:
        return proposal
    return msgspec.structs.replace(proposal, importance=most)


def scoped_by_its_words(proposal: ProposedItem, default_scope: str, author_user_id: str) -> ProposedItem:
    """`proposal` with the scope its words give it when it names none (capture and
    `memory.write` alike): a wish for this chat only is the session's; the writer's own
    health detail, and a wish they state of themselves alone, are the writer's (user scope),
    never their teammates' or partner's."""
    if proposal.scope in SCOPE_KINDS:
        return proposal
    said = f"{proposal.title}. {proposal.content}"
    if proposal.type == "preference" and limits_to_its_chat(said):
        # "In this chat, answer in French.": this chat's wish, not the project's.
        return msgspec.structs.replace(proposal, scope="session")
    if default_scope in ("project", "org") and is_own_health_detail(said, author_user_id):
        # "I take metformin 500 mg": the writer's own.
        return msgspec.structs.replace(proposal, scope="user")
    if default_scope in ("project", "org") and proposal.type == "preference" and \
            own_wish(proposal, author_user_id):
        # "Kai prefers tabs", said in a repo's chat: his, wherever he works; as the repo's,
        # a teammate was handed it as her own wish, beside the repo's rule.
        return msgspec.structs.replace(proposal, scope="user")
    return proposal


# What names the place the words were said in, not the writer: "tabs in this repo", "here".
_OF_THE_PROJECT = re.compile(
    r"\b(?:this|the|our)\s+(?:repo|repository|project|codebase|code\s+base|service|app|team|workspace|org)\b"
    r"|\bhere\b(?!['’])", re.IGNORECASE)
# How a chat model names the one it talks with, as a claim's subject: "The user prefers ...".
_THE_USER = r"(?:the\s+)?user"


def own_wish(proposal: ProposedItem, author_user_id: str) -> bool:
    """Whether a preference is its writer's alone: its content has the writer as its
    subject, in the first person ("I prefer tabs", "My editor is Vim") or named as a chat
    model reports it ("Kai prefers tabs", "The user's editor is Vim"; not "Ana prefers Kai
    to review her PRs"), and names nothing a group shares (`first_person.of_the_writer`:
    "we", "our", "the team's") nor the project it was said in ("tabs in this repo")."""
    said = proposal.content.strip()
    if _OF_THE_PROJECT.search(f"{proposal.title}. {said}"):
        return False
    names = [_THE_USER]
    if author_user_id and author_user_id != Identity().user_id:  # "default" names no one
        names.append(re.escape(author_user_id))
    writer = "|".join(names)
    said = re.sub(rf"^(?:{writer})['’]s\b", "My", said, flags=re.IGNORECASE)
    said = re.sub(rf"^(?:{writer})\b", "I", said, flags=re.IGNORECASE)
    return re.match(r"(?:I|my)\b", said, re.IGNORECASE) is not None and of_the_writer(said)


def shown_title(policy: Any, proposal: ProposedItem, verdict: Verdict) -> str:
    """A proposal's title as its verdict is shown and audited: redacted only when the title
    itself holds what the policy blocks (a secret in the content leaves "Stripe key" readable)."""
    if not verdict.hard_block:
        return proposal.title
    scan = getattr(policy, "scan_text", None)
    return REDACTED if scan is None or scan(proposal.title) else proposal.title


def _proposal_payload(
    turn: _Turn,
    index: int,
    form: str,
    proposal: ProposedItem,
    verdict: Verdict,
    prov: Provenance,
    fixes: Corrections,
    title: str,
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "proposal_id": stable_id("prop", turn.turn_id, index),
        "turn_id": turn.turn_id,
        "form": form,
        "proposal": msgspec.to_builtins(proposal),
        "verdict": msgspec.to_builtins(verdict),
        "provenance": msgspec.to_builtins(prov),
        "default_scope": turn.default_scope if proposal.scope not in SCOPE_KINDS else proposal.scope,
        "at": turn.at,
    }
    if fixes.replaced:
        payload["supersedes"] = fixes.replaced
    if fixes.in_part:
        payload["refines"] = fixes.in_part
    if fixes.retiring:
        payload[RETIRED_BY_USER] = fixes.retiring
    if fixes.ends:
        payload[ENDS] = dict(fixes.ends)
    if fixes.moved_from:
        payload[MOVED_FROM] = list(fixes.moved_from)
    if verdict.action == "reject":
        # Never keep the rejected text itself (it may be a secret): its hash suffices.
        payload["proposal"] = {
            "type": proposal.type,
            "title": title[:200],
            "content": REDACTED,
            "content_sha256": sha256_text(proposal.content),
        }
    return payload
