"""The memory.* tool dispatcher: stable JSON in, stable JSON out.

    dispatch(service, "memory.search", {"query": "..."}, identity)
        -> {"ok": True, "action": "memory.search", "result": {...}}

Bad input raises `ToolError` (status 400 malformed args / unknown action, 404 unknown or
invisible id, 422 refused by the policy), which the HTTP layer turns into
`{"ok": false, "error": ...}`; the middleware catches it too.

Every action is audited in the inbox: writes land as the events the pipeline consumes
(`proposal` through `capture_turn`, `memory.write`, `memory.update`, `memory.link`,
`memory.palace.assign`, `memory.consolidate`); reads and `memory.stats` land an `audit` event
(hashes and ids, never content). A write refused by the policy stores nothing but an audit
event carrying the verdict.

Tenancy: every read is filtered by the caller's identity first; an item the caller cannot
see is reported exactly like an id that does not exist.
"""

from __future__ import annotations

import re
import typing
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from online.schemas import MAX_QUERY_CHARS, TimeZoneName
from online.state import MemoryService, View
from pipelines.capture import GovernedClaim, approval_corrects, end_before, ended_by_plan, govern_claim
from pipelines.materialize import (
    DEFAULT_ACCEPTED_CONFIDENCE,
    DISAGREES_WITH,
    ENDS,
    HELD_AGAINST,
    HELD_EDIT_RULES,
    MOVED_FROM,
    PATCHABLE_FIELDS,
    QUARANTINE_MAX_CONFIDENCE,
    RETRACTION_RULE,
    SAID_DATES,
    apply_patch,
    awaits_review,
    held_against_others,
    held_edit,
    in_quarantine,
    proposal_item_id,
    with_held_edit,
)
from pipelines.palace import location_of, palace_get, palace_list, parse_path, slugify
from pipelines.policy import pointer_for
from pipelines.recall.conflicts import Corrections, authors, is_claim, speaker
from pipelines.recall.episodic import proposal_carrier_text, turn_title
from pipelines.records import (
    LONE_SURROGATE,
    RETIRED_BY_USER,
    Event,
    Identity,
    ItemType,
    Link,
    LinkRel,
    MemoryItem,
    PalaceLocation,
    ProposedItem,
    Provenance,
    Scope,
    ScopeKind,
    Tier,
    Validation,
    Verdict,
    holds_lone_surrogate,
    parse_time,
    says_something,
    sha256_text,
    stable_id,
    time_problems,
    time_zone,
    utcnow,
)
from pipelines.validity import reread, with_window

# What a caller may write: every item type except `message` (a verbatim chat record is only
# ever made from a captured turn, never forged through the API).
WritableType = Literal[
    "fact", "decision", "definition", "constraint", "pattern", "todo", "pointer", "note",
    "preference", "summary",
]
ItemId = Annotated[str, Meta(min_length=1, max_length=200)]
Label = Annotated[str, Meta(min_length=1, max_length=100)]
Title = Annotated[str, Meta(max_length=500)]
Content = Annotated[str, Meta(min_length=1, max_length=100_000)]
Labels = Annotated[list[Label], Meta(max_length=50)]
Importance = Annotated[int, Meta(ge=1, le=10)]
Confidence = Annotated[float, Meta(ge=0.0, le=1.0)]


class ToolError(Exception):
    """A tool call that cannot be served: `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.detail = detail


# -- argument schemas (strict: an unknown key is an error, not ignored) -----------------------


class Args(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class ItemIn(Args, kw_only=True):
    """A memory as proposed or written through the API (the fields of ProposedItem)."""

    type: WritableType = "note"
    title: Title = ""
    content: Content
    tags: Labels = []
    entities: Labels = []
    why_store: Annotated[str, Meta(max_length=2000)] = ""
    importance: Importance | None = None
    confidence: Confidence | None = None
    tier: Tier | None = None
    scope: ScopeKind | None = None
    provenance_hint: dict[str, Any] = {}
    valid_from: str | None = None
    valid_to: str | None = None

    def __post_init__(self) -> None:
        _check_times(self)
        _check_content(self)

    def proposed(self) -> ProposedItem:
        return msgspec.convert(msgspec.to_builtins(self), ProposedItem)


class ProposeArgs(Args):
    items: Annotated[list[ItemIn], Meta(min_length=1, max_length=20)]
    default_scope: ScopeKind = "project"
    turn_ref: ItemId | None = None
    tz: TimeZoneName | None = None  # the speaker's zone: "until Friday" is read on its calendar


class WriteArgs(Args):
    item: ItemIn
    default_scope: ScopeKind = "project"
    tz: TimeZoneName | None = None  # as ProposeArgs.tz


class SearchArgs(Args):
    query: Annotated[str, Meta(min_length=1, max_length=MAX_QUERY_CHARS)]
    tags: Annotated[list[Label], Meta(max_length=50)] = []
    tier: Tier | None = None
    type: ItemType | None = None
    scope: ScopeKind | None = None
    k: Annotated[int, Meta(ge=1, le=100)] | None = None
    tz: TimeZoneName | None = None
    # A caller that searches a question's subject ("penicillin" for "What did I tell you about
    # penicillin?") says that the question asked what the user said themselves.
    own_words: Annotated[bool, Meta(description="The user asks what they said themselves: their own words "
                                                "come before another speaker's echo of them.")] = False


class ReadArgs(Args):
    ids: Annotated[list[ItemId], Meta(min_length=1, max_length=100)]


class UpdateArgs(Args):
    id: ItemId
    patch: Annotated[dict[str, Any], Meta(min_length=1)]
    tz: TimeZoneName | None = None  # the editor's zone: new time words are read on its calendar


class ItemPatch(Args):
    """The values a memory.update may set, bounded like a written item's (an importance of 11
    would be always injected, a confidence of 5 would win every conflict)."""

    title: Title | msgspec.UnsetType = msgspec.UNSET
    content: Content | msgspec.UnsetType = msgspec.UNSET
    tags: Labels | msgspec.UnsetType = msgspec.UNSET
    entities: Labels | msgspec.UnsetType = msgspec.UNSET
    importance: Importance | msgspec.UnsetType = msgspec.UNSET
    confidence: Confidence | msgspec.UnsetType = msgspec.UNSET
    validation: Validation | msgspec.UnsetType = msgspec.UNSET
    type: WritableType | msgspec.UnsetType = msgspec.UNSET
    valid_from: str | None | msgspec.UnsetType = msgspec.UNSET
    valid_to: str | None | msgspec.UnsetType = msgspec.UNSET
    expires_at: str | None | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        _check_times(self)
        _check_content(self)


# The values a patch field takes from a fixed list, named when a patch gives another (an
# agent asked to forget an entry tries "deleted"; the list shows "retracted").
_PATCH_CHOICES = {"validation": typing.get_args(Validation), "type": typing.get_args(WritableType)}
_PATCH_FIELD_AT = re.compile(r"at `\$\.(\w+)`")


def _patch_choices(error: str) -> str:
    field = _PATCH_FIELD_AT.search(error)
    choices = _PATCH_CHOICES.get(field.group(1)) if field else None
    if not choices:
        return ""
    hint = ' ("retracted" forgets it: kept with its history, never recalled)' if field.group(1) == "validation" else ""
    return f"; {field.group(1)} is one of {', '.join(choices)}{hint}"


def asker_zone(tz: str | None, where: str) -> str | None:
    """The asker's IANA zone `tz` as given (None: the service's), or a 400 naming it when no
    zone has that name (`records.time_zone`); `where` prefixes the message ("tz",
    "memory.search: tz"). `/v1/recall` and `memory.search` both check it so."""
    if tz is not None:
        try:
            time_zone(tz)
        except ValueError as exc:
            raise ToolError(400, f"{where}: {exc}") from exc
    return tz


def _check_times(args: Any) -> None:
    """Times are ISO-8601 ("2026-03-01" or "2026-03-01T09:00:00Z") and a window does not end
    before it starts (`pipelines.records.time_problems`)."""
    problems = time_problems(getattr(args, "valid_from", None), getattr(args, "valid_to", None),
                             expires_at=getattr(args, "expires_at", None))
    if problems:
        raise ValueError("; ".join(problems))


def _check_content(args: Any) -> None:
    """Content says something: a placeholder ("...", "…") is no memory."""
    content = getattr(args, "content", msgspec.UNSET)
    if isinstance(content, str) and not says_something(content):
        raise ValueError(f"content {content[:40]!r} holds no word (a letter or digit)")


class LinkArgs(Args):
    src_id: ItemId
    dst_id: ItemId
    rel: LinkRel


class ConsolidateArgs(Args):
    scope: ScopeKind = "project"
    tiers: Annotated[list[Tier], Meta(min_length=1)] = msgspec.field(default_factory=lambda: ["stm"])
    promote: bool = True


class PalaceListArgs(Args):
    path: Annotated[str, Meta(max_length=1000)] = ""


class PalaceGetArgs(Args):
    location: Annotated[str, Meta(min_length=1, max_length=1000)]


class PalaceAssignArgs(Args):
    """Put item `id` at `location`, "domain/room/shelf" (the card is always the item id)."""

    id: ItemId
    location: Annotated[str, Meta(min_length=1, max_length=400)]


class ReviewArgs(Args):
    """A reviewer's decision on a quarantined item: `approve` (verified, kept) or `reject`
    (retracted: kept with its history, never recalled)."""

    id: ItemId
    decision: Literal["approve", "reject"]
    note: Annotated[str, Meta(max_length=2000)] = ""


class StatsArgs(Args):
    """No arguments: the counts cover what the caller may see."""


class ReviewListArgs(Args):
    """No arguments: what waits for review among what the caller may see."""


class ForgetArgs(Args):
    """Forget a memory: retract it (kept with its history, never recalled). Someone else's
    claim is not retracted at once: the retraction is held for review."""

    id: ItemId


# The argument struct of each action: what a caller may send (adapters derive schemas from it).
ACTION_ARGS: dict[str, type[Args]] = {
    "memory.propose": ProposeArgs, "memory.write": WriteArgs, "memory.search": SearchArgs,
    "memory.read": ReadArgs, "memory.update": UpdateArgs, "memory.link": LinkArgs,
    "memory.consolidate": ConsolidateArgs, "memory.palace.list": PalaceListArgs,
    "memory.palace.get": PalaceGetArgs, "memory.palace.assign": PalaceAssignArgs,
    "memory.review": ReviewArgs, "memory.stats": StatsArgs, "memory.forget": ForgetArgs,
    "memory.review.list": ReviewListArgs,
}

# What a model is told of each action offered to it as a tool: the proxy's tools (`online.proxy.
# memory_tools`) and MCP's (`online.mcp_server`) are named, described and given arguments
# (`args_schema`) from here and `ACTION_ARGS`, one registry for every surface.
ACTION_DESCRIPTIONS: dict[str, str] = {
    "memory.search": "Search long-term memory (decisions, facts, preferences, earlier conversation). "
                     "Use it instead of guessing what was said or decided before.",
    "memory.read": "Read memory entries in full by id (ids come from memory_search or the memory catalog).",
    "memory.palace.list": "List the memory palace one level below a path (domain/room/shelf); an empty "
                          "path lists the domains.",
    "memory.palace.get": "Entries at a memory palace location (domain/room/shelf/card).",
    "memory.propose": "Propose information worth keeping (decisions, constraints, definitions, preferences, "
                      "durable facts). Proposals are reviewed before storage; never include secrets. Each "
                      "item is checked by the memory policy; the answer carries its verdict.",
    "memory.update": "Change a memory entry when the user asks to correct it (\"change X to Y\"): `id` from "
                     "memory_search, `patch` the fields to set (" + ", ".join(sorted(PATCHABLE_FIELDS)) + "). "
                     "Checked by the memory policy; a change to someone else's memory is held for review "
                     "(the answer's verdict says `quarantine`: tell the user it awaits review). New words that "
                     "hold from a later day (\"from December 1, ...\") become a new entry (the answer's `item_id`); "
                     "the old one holds until then (`ends`). To forget an "
                     "entry, use memory_forget (the same as setting `validation` to \"retracted\").",
    "memory.forget": "Forget a memory entry when the user asks to (\"forget X\"): `id` from memory_search, "
                     "a stored fact or a turn of the user's conversation (type `message`: what was said). "
                     "It is retracted (kept with its history, never recalled again); someone else's memory "
                     "is held for review instead (verdict `quarantine`: tell the user it awaits review).",
    "memory.palace.assign": "Put a memory entry you can see at a palace location \"domain/room/shelf\" "
                            "(the card is the entry id); the words are checked by the memory policy.",
    "memory.stats": "What the memory service holds for you: item counts per tier and type, the snapshot "
                    "version and any problems.",
    "memory.review.list": "What waits for review among the memory entries you may see: claims held when "
                          "proposed (`kind` proposal) and changes held beside an entry (`edit`, `retraction`), "
                          "each with who proposed it and when, and an edit's old and new text. Tell the user; "
                          "a reviewer other than its proposer approves or rejects each in the memory browser.",
}


def tool_name(action: str) -> str:
    """An action's tool name: underscores (OpenAI-style function names and many MCP clients
    refuse dots; `pipelines.recall.intents.canonical_tool_name` maps them back)."""
    return action.replace(".", "_")


def args_schema(action: str, inline: bool = False) -> dict[str, Any]:
    """The JSON schema of an action's arguments (`ACTION_ARGS`): an object at the top level,
    nested structs under `$defs`, or, `inline`, written in place (small models read a
    tool's schema as text, and a `$ref` is one more thing to follow)."""
    (ref, patch_ref), components = msgspec.json.schema_components([ACTION_ARGS[action], ItemPatch],
                                                                   ref_template="#/$defs/{name}")
    schema = dict(components.pop(ref["$ref"].rsplit("/", 1)[-1]))
    schema.pop("title", None)
    patch = components.pop(patch_ref["$ref"].rsplit("/", 1)[-1])
    if action == "memory.update":
        # `patch` is any object to the decoder (it names the fields it refuses); a client is
        # shown each field and the values it takes, "retracted" (forget) among them.
        schema["properties"]["patch"] = {
            **{k: v for k, v in patch.items() if k != "title"}, "minProperties": 1,
            "description": "The fields to change, nothing else; {\"validation\": \"retracted\"} forgets the entry."}
    if inline:
        return _inlined(schema, components)
    if components:
        schema["$defs"] = components
    return schema


def _inlined(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            named = {k: v for k, v in defs[ref.rsplit("/", 1)[-1]].items() if k != "title"}
            return _inlined(named, defs)
        return {k: _inlined(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inlined(v, defs) for v in node]
    return node


# -- helpers -----------------------------------------------------------------------------------


def _decode(kind: type, args: Any, action: str):
    if not isinstance(args, dict):
        raise ToolError(400, f"{action}: args must be a JSON object")
    if holds_lone_surrogate(args):  # JSON parsers other than msgspec's (MCP, the proxy) keep them
        raise ToolError(400, f"{action}: invalid args: {LONE_SURROGATE}")
    try:
        return msgspec.convert(args, kind)
    except msgspec.ValidationError as exc:
        raise ToolError(400, f"{action}: invalid args: {exc}") from None


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


def item_summary(item: MemoryItem) -> dict[str, Any]:
    return {"id": item.id, "title": item.title, "type": item.type, "tier": item.tier,
            "tags": list(item.tags), "scope": item.scope.kind}


def item_out(item: MemoryItem) -> dict[str, Any]:
    return msgspec.to_builtins(item)


def hit_out(hit: Any, zone: tzinfo | None = None) -> dict[str, Any]:
    """A recall hit as the API gives it; a turn's title dates it on the asker's calendar (`zone`)."""
    item = hit.item
    return {
        "id": item.id, "score": round(float(hit.score), 6), "tier": item.tier, "type": item.type,
        "title": turn_title(item, zone), "content": item.content, "tags": list(item.tags),
        "scope": msgspec.to_builtins(item.scope), "source": str(getattr(hit, "source", "")),
        "conflict": bool(getattr(hit, "conflict", False)),
        "components": {k: float(v) for k, v in dict(getattr(hit, "components", {}) or {}).items()},
        "conflict_with": list(getattr(hit, "conflict_with", []) or []),
        "same_title": list(getattr(hit, "same_title", []) or []),
        "delivery": str(getattr(hit, "delivery", "catalog")),
        **({"pending_review": hit.pending_review} if getattr(hit, "pending_review", "") else {}),
        # when it holds, and whether that is over (or yet to come) at the time of asking
        **({"valid_from": item.valid_from, "valid_to": item.valid_to} if item.valid_from or item.valid_to else {}),
        **({"window": hit.window} if getattr(hit, "window", "") else {}),
    }


def _verdict(v: Any) -> dict[str, Any]:
    return msgspec.to_builtins(v)


def palace_locations(items: list[MemoryItem]) -> list[PalaceLocation]:
    """Palace locations of items from `metadata["palace"]` (set by the pipeline), given as a
    `domain/room/shelf/card` path or a dict with those keys."""
    out = []
    for it in items:
        raw = it.metadata.get("palace")
        if isinstance(raw, str):
            parts = [p for p in raw.split("/") if p]
            if len(parts) == 4:
                out.append(PalaceLocation(it.id, *parts))
            elif len(parts) == 3:
                out.append(PalaceLocation(it.id, *parts, card=it.id))
        elif isinstance(raw, dict) and all(isinstance(raw.get(k), str) for k in ("domain", "room", "shelf")):
            out.append(PalaceLocation(it.id, raw["domain"], raw["room"], raw["shelf"],
                                      str(raw.get("card") or it.id)))
    return out


# -- actions -------------------------------------------------------------------------------------


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


def _corrections_payload(fixes: Corrections) -> dict[str, list[str]]:
    """An edit's or an approval's corrections as its inbox event carries them (as a
    proposal's do): `supersedes` the claims it replaces, `refines` those it corrects a
    detail of (`pipelines.materialize` folds them into links)."""
    return {**({"supersedes": fixes.replaced} if fixes.replaced else {}),
            **({"refines": fixes.in_part} if fixes.in_part else {})}


def _corrections_out(fixes: Corrections) -> dict[str, list[str]]:
    """What the caller is told of them (the names a write's answer uses)."""
    return {**({"supersedes": fixes.replaced} if fixes.replaced else {}),
            **({"corrects_in_part": fixes.in_part} if fixes.in_part else {})}


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


def _held_retraction(verdict: Verdict, owners: frozenset[str], quarantine_days: float) -> Verdict:
    """`verdict` of a retraction of a claim that is not the editor's: held for review
    (`RETRACTION_RULE`), as an edit contradicting it would be; its author or a reviewer
    decides."""
    expires = (datetime.now(timezone.utc) + timedelta(days=quarantine_days)).isoformat()
    return msgspec.structs.replace(
        verdict, action="quarantine", rule_ids=[*verdict.rule_ids, RETRACTION_RULE],
        reasons=[*verdict.reasons, f"retracts a claim of {', '.join(sorted(owners))}"],
        expires_at=verdict.expires_at or expires)


class ToolDispatcher:
    """Runs memory.* actions against a MemoryService for one caller identity at a time."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service
        self.actions: dict[str, Callable[[Any, Identity, View], dict[str, Any]]] = {
            "memory.propose": self.propose,
            "memory.write": self.write,
            "memory.search": self.search,
            "memory.read": self.read,
            "memory.update": self.update,
            "memory.link": self.link,
            "memory.consolidate": self.consolidate,
            "memory.palace.list": self.palace_list,
            "memory.palace.get": self.palace_get,
            "memory.palace.assign": self.palace_assign,
            "memory.review": self.review,
            "memory.review.list": self.review_list,
            "memory.stats": self.stats,
            "memory.forget": self.forget,
        }

    def dispatch(self, action: str, args: Any, identity: Identity) -> dict[str, Any]:
        handler = self.actions.get(action)
        if handler is None:
            raise ToolError(400, f"unknown action {action!r}; known actions: {', '.join(self.actions)}")
        if not isinstance(identity, Identity):
            raise ToolError(400, "identity must be an Identity")
        result = handler(args if args is not None else {}, identity, self.service.view())
        return {"ok": True, "action": action, "result": result}

    # writes -------------------------------------------------------------------------------

    def propose(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = _decode(ProposeArgs, raw, "memory.propose")
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
        args = _decode(WriteArgs, raw, "memory.write")
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
        # "until Friday", "next week": read on today's calendar in the writer's zone
        proposal, said_dates = with_window(proposal, at, zone)
        source = hint.get("source_id") or (f"memory.update:{takes_over.id}" if takes_over
                                           else f"memory.write:{event_id}")
        prov = Provenance(source_kind=kind, source_id=str(source), event_ids=[event_id], created_at=at)
        said = self.service.user_said(who)(str(hint["source_id"])) if hint.get("source_id") else None
        verdict, fixes, contradicts, disagrees = govern_claim(
            self.service.policy, proposal, provenance=prov, found=self.service.existing_like(who, view)(proposal),
            scope_kind=proposal.scope or default_scope, author_user_id=who.user_id,
            evidence=[said] if said else (),
        )
        if takes_over is not None and verdict.action == "accept" and proposal.valid_from is not None:
            # the edited item holds until the edit does: ended then, neither replaced nor a detail
            fixes = fixes._replace(replaced=[i for i in fixes.replaced if i != takes_over.id],
                                   in_part=[i for i in fixes.in_part if i != takes_over.id],
                                   ends=(*((i, e) for i, e in fixes.ends if i != takes_over.id),
                                         (takes_over.id, end_before(proposal.valid_from))))
        if verdict.action == "reject":
            self.service.audit(who, action, audited, verdict=_verdict(verdict), outcome="rejected")
            raise ToolError(422, f"{action} rejected by the policy; nothing was stored",
                            {"verdict": _verdict(verdict)})
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
            payload={"item": msgspec.to_builtins(item), "verdict": _verdict(verdict),
                     **({ENDS: dict(fixes.ends)} if fixes.ends else {}),
                     **({MOVED_FROM: list(fixes.moved_from)} if fixes.moved_from else {})},
        )])[0]
        return {"item_id": item.id, "seq": landed.seq, "verdict": _verdict(verdict), "supersedes": fixes.replaced,
                "corrects_in_part": fixes.in_part, **({"ends": [i for i, _ in fixes.ends]} if fixes.ends else {})}

    def _editable(self, item_id: str, who: Identity, view: View, action: str, args: Any) -> MemoryItem:
        """The item an edit targets; one the caller cannot see is answered exactly like an
        unknown id, and the attempt is recorded as refused for the audit trail."""
        current = self.service.get_item(item_id, who, view)
        if current is None:
            self.service.audit(who, action, args, [item_id], outcome="refused",
                               reason="not visible to the caller")
            raise ToolError(404, self.service.no_item(item_id, who, view))
        return current

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
                                    said_by=speaker(item) or "")
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
        args = _decode(UpdateArgs, raw, "memory.update")
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
                                 f"{_patch_choices(str(exc))}") from None
        current = self._editable(args.id, who, view, "memory.update", {"id": args.id, "fields": sorted(args.patch)})
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
        governed = (GovernedClaim(Verdict(action="accept", reasons=["the speaker forgets what they said"]),
                                  Corrections([], [], []), [])
                    if forgets_a_turn  # its words were never a claim: nothing for the policy to judge
                    else self._governed(updated, (who, view, current, vouched) if says else None))
        verdict = governed.verdict
        if (args.patch.get("validation") == "retracted" and verdict.action != "reject"
                and authors(current) != {who.user_id} and not vouched):
            verdict = _held_retraction(verdict, authors(current), self.service.policy.settings.quarantine_days)
        if verdict.action == "reject":
            self.service.audit(who, "memory.update", {"id": args.id, "fields": sorted(args.patch)},
                               [args.id], verdict=_verdict(verdict), outcome="rejected")
            raise ToolError(422, "memory.update rejected by the policy; nothing was stored",
                            {"verdict": _verdict(verdict)})
        waiting = held_edit(current)
        if waiting is not None and verdict.action == "quarantine" and HELD_EDIT_RULES & set(verdict.rule_ids):
            # One edit waits beside an item (`held_by_edit`): a second would replace it unseen.
            self.service.audit(who, "memory.update", {"id": args.id, "fields": sorted(args.patch)}, [args.id],
                               verdict=_verdict(verdict), outcome="refused",
                               reason=f"an edit by {waiting.get('by')} is held for review")
            raise ToolError(409, f"memory.update: an edit of {args.id!r} by {waiting.get('by')} is already held "
                                 "for review; it is decided first with memory.review (its editor may reject it), "
                                 "then edit again", {"held_edit": waiting})
        # What it now says corrects as a write would (applied with it), or, held for
        # contradicting someone else's claims, names them (the hold waits beside the item).
        fixes = governed.fixes if verdict.action == "accept" else Corrections([], [], [])
        landed = self.service.append([Event(
            event_id=stable_id("evt", "memory.update", uuid.uuid4().hex), kind="memory.update",
            identity=who, at=at,
            payload={"item_id": args.id, "patch": patch, "verdict": _verdict(verdict), "at": at, **said_dates,
                     **({"as_reviewer": True} if vouched and says else {}),
                     **_corrections_payload(fixes), **(moves if verdict.action == "accept" else {}),
                     # what it now says disagrees with (replacing what it said before)
                     **({DISAGREES_WITH: governed.disagrees} if says and verdict.action == "accept" else {}),
                     **({HELD_AGAINST: governed.contradicts}
                        if verdict.action == "quarantine" and governed.contradicts else {})},
        )])[0]
        out = {"item_id": args.id, "seq": landed.seq, "verdict": _verdict(verdict), **_corrections_out(fixes),
               **({"ends": list(moves[ENDS])} if moves and verdict.action == "accept" else {})}
        return {**out, "as_reviewer": True} if vouched and says else out

    def forget(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        """memory.update retracting the item (`{"validation": "retracted"}`), with its
        governance: the caller's own claim (or one they approved) is retracted at once,
        anyone else's is held for review (`RETRACTION_RULE`)."""
        args = _decode(ForgetArgs, raw, "memory.forget")
        return self.update({"id": args.id, "patch": {"validation": "retracted"}}, who, view)

    def review(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        """A reviewer's decision on a quarantined item, landed as a `memory.review` event
        (folded by `pipelines.materialize.review_item`; consolidation stores it as a revision
        with the reviewer as actor). Anyone who may change the item may review it. Approval
        re-runs the policy: a soft block is what a reviewer overrides, a hard block (secret,
        injection) is refused like any write (422, audited, nothing stored)."""
        args = _decode(ReviewArgs, raw, "memory.review")
        audited = {"id": args.id, "decision": args.decision, "note_sha256": sha256_text(args.note)}
        current = self._editable(args.id, who, view, "memory.review", audited)
        if not awaits_review(current):
            raise ToolError(409, f"memory.review: {args.id!r} is not in quarantine "
                                 f"(verdict {current.metadata.get('verdict', 'accept')!r}, "
                                 f"validation {current.validation!r})")
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
        if findings:
            verdict = {"action": "reject", "rule_ids": sorted({f.rule_id for f in findings}),
                       "reasons": [f"note: {f.kind} ({f.rule_id})" for f in findings]}
        elif args.decision == "approve":
            decided = with_held_edit(current)
            verdict = _verdict(self._governed(decided).verdict)
            # The claims in its scope it contradicts (why it was held): the approval corrects them.
            fixes = approval_corrects(decided, self.service.existing_like(who, view)(ProposedItem(
                type=decided.type, title=decided.title, content=decided.content)))
        if verdict.get("action") == "reject":
            self.service.audit(who, "memory.review", audited, [args.id], verdict=verdict, outcome="rejected")
            raise ToolError(422, f"memory.review: {args.decision} refused by the policy; nothing was stored",
                            {"verdict": verdict})
        at = utcnow()
        landed = self.service.append([Event(
            event_id=stable_id("evt", "memory.review", uuid.uuid4().hex), kind="memory.review",
            identity=who, at=at,
            payload={"item_id": args.id, "decision": args.decision, "note": args.note, "verdict": verdict,
                     "at": at, **_corrections_payload(fixes)},
        )])[0]
        return {"item_id": args.id, "decision": args.decision, "seq": landed.seq, "verdict": verdict,
                **_corrections_out(fixes)}

    def palace_assign(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        """An edit like memory.update: the caller must see the item, the location's words are
        governed by the policy (a refusal is audited, nothing stored), and the inbox event
        carries who assigned what; consolidation then keeps the item there."""
        args = _decode(PalaceAssignArgs, raw, "memory.palace.assign")
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
        args = _decode(LinkArgs, raw, "memory.link")
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
        args = _decode(ConsolidateArgs, raw, "memory.consolidate")
        partition = Scope.for_identity(args.scope, who).partition_key()
        landed = self.service.append([Event(
            event_id=stable_id("evt", "memory.consolidate", uuid.uuid4().hex),
            kind="memory.consolidate", identity=who,
            payload={"scope": args.scope, "partition": partition, "tiers": list(args.tiers),
                     "promote": args.promote},
        )])[0]
        return {"requested": True, "scope": args.scope, "partition": partition, "seq": landed.seq}

    # reads --------------------------------------------------------------------------------

    def _zone(self, tz: str | None, action: str) -> str:
        """The caller's zone `tz` (checked, `asker_zone`), or the service's `timezone` setting."""
        return asker_zone(tz, f"{action}: tz") or self.service.settings.timezone

    def search(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = _decode(SearchArgs, raw, "memory.search")
        if not args.query.strip():
            raise ToolError(400, "memory.search: query is empty")
        tz = asker_zone(args.tz, "memory.search: tz")
        k = args.k or self.service.settings.recall_k
        result = self.service.recall(args.query, who, mode="catalog", k=k, tags=args.tags,
                                     tier=args.tier, type=args.type, scope=args.scope, view=view,
                                     record_usage=False, tz=tz, own_words=args.own_words)
        hits = list(result.hits)
        ids = [h.item.id for h in hits]
        self.service.audit(who, "memory.search", msgspec.to_builtins(args), ids)
        if ids:
            self.service.record_usage(who, ids, args.query)
        found = bool(hits)
        message = result.message if found else (result.message or f"No memory found for {args.query!r}.")
        zone = time_zone(tz or self.service.settings.timezone)
        return {"found": found, "message": message, "hits": [hit_out(h, zone) for h in hits]}

    def read(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = _decode(ReadArgs, raw, "memory.read")
        items, missing = [], []
        superseded: dict[str, str] = {}
        for item_id in dict.fromkeys(args.ids):
            item = self.service.get_item(item_id, who, view)
            if item is None:
                missing.append(item_id)
                continue
            out = item_out(item)
            replaced = self.service.replaced_by(item_id, who, view)  # a correction since the snapshot
            if replaced is not None and replaced[1] == "superseded":
                out["superseded_by"] = superseded[item_id] = replaced[0]
            items.append(out)
        merged = {i: into for i in missing if (into := self.service.merged_into(i, who, view)) is not None}
        archived = []
        for item_id in missing:
            retired = None if item_id in merged else self.service.retired(item_id, who, view)
            if retired is not None:
                if retired[1] is not None:
                    superseded[item_id] = retired[1][0]
                if retired[0].archived:
                    archived.append(item_id)
        self.service.audit(who, "memory.read", msgspec.to_builtins(args),
                           [i["id"] for i in items] + sorted({*superseded, *archived} - {i["id"] for i in items}))
        # Each only when it applies: `merged_into` (consolidation merged a missing id: where to
        # read it now), `superseded_by` (a correction replaced it), `archived` (it expired or
        # aged out; `GET /v1/items/{id}` gives it as last stored, with its history).
        return {"items": items, "missing": missing, **({"merged_into": merged} if merged else {}),
                **({"superseded_by": superseded} if superseded else {}),
                **({"archived": archived} if archived else {})}

    def palace_list(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = _decode(PalaceListArgs, raw, "memory.palace.list")
        try:
            children = list(palace_list(palace_locations(view.visible_items(who)), args.path))
        except ValueError as exc:
            raise ToolError(400, f"memory.palace.list: {exc}") from None
        self.service.audit(who, "memory.palace.list", msgspec.to_builtins(args))
        return {"path": args.path, "children": children}

    def palace_get(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = _decode(PalaceGetArgs, raw, "memory.palace.get")
        visible = {it.id: it for it in view.visible_items(who)}
        try:
            found = palace_get(palace_locations(list(visible.values())), args.location)
        except ValueError as exc:
            raise ToolError(400, f"memory.palace.get: {exc}") from None
        ids = [i for i in found if i in visible]
        self.service.audit(who, "memory.palace.get", msgspec.to_builtins(args), ids)
        return {"location": args.location, "items": [item_summary(visible[i]) for i in ids]}

    def review_list(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        """What waits for a reviewer among what the caller may see (`online.review`, the one
        queue `GET /v1/review` and the browser list), audited by ids."""
        from online.review import awaiting_review, pending_review  # online.review lists with item_summary

        args = _decode(ReviewListArgs, raw, "memory.review.list")
        held = awaiting_review(view, who)
        self.service.audit(who, "memory.review.list", msgspec.to_builtins(args), [it.id for it in held])
        return {"count": len(held), "pending": [pending_review(it) for it in held]}

    def stats(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        """What the service serves, item counts limited to the caller's (like /v1/stats)."""
        args = _decode(StatsArgs, raw, "memory.stats")
        report = self.service.visible_report(who, view)
        self.service.audit(who, "memory.stats", msgspec.to_builtins(args))
        return report
