"""The memory.* actions' argument structs (strict: an unknown key is an error, not ignored),
the error a tool call answers with, and decoding a call's args into its struct."""

from __future__ import annotations

import re
import types
import typing
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from online.schemas import MAX_QUERY_CHARS, TimeZoneName
from pipelines.records import (
    LONE_SURROGATE,
    ItemType,
    LinkRel,
    ProposedItem,
    ScopeKind,
    Tier,
    Validation,
    holds_lone_surrogate,
    says_something,
    time_problems,
    time_zone,
)

# What a caller may write: every item type except `message` (a verbatim chat record is only
# ever made from a captured turn, never forged through the API).
WritableType = Literal[
    "fact", "decision", "definition", "constraint", "pattern", "todo", "pointer", "note",
    "preference", "summary",
]
ItemId = Annotated[str, Meta(min_length=1, max_length=200)]
MAX_FORGET_REASON_CHARS = 500  # a forget's `reason`: a sentence, kept in every history that shows it
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


# Where msgspec says a problem is: "... - at `$.items[0].type`".
_AT = re.compile(r"at `\$((?:\.\w+|\[\d+\])*)`")
_UNKNOWN_FIELD = re.compile(r"unknown field `(\w+)`")


def _unwrapped(tp: Any) -> Any:
    """A field's type without `Annotated`, `None` / `UNSET` and a list around it."""
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated or origin is list:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            kept = [a for a in typing.get_args(tp) if a not in (type(None), msgspec.UnsetType)]
            if len(kept) != 1:
                return tp
            tp = kept[0]
        else:
            return tp


def _at(kind: type, error: str) -> tuple[type | None, str]:
    """The struct a msgspec error is about and the field it names ("" at the struct itself),
    followed from `kind` along the error's path (an unknown field's path names the struct
    holding it: followed to its end)."""
    at = _AT.search(error)
    names = re.findall(r"\.(\w+)", at.group(1)) if at else []
    if _UNKNOWN_FIELD.search(error) and names:
        names.append("")
    for name in names[:-1]:
        hints = typing.get_type_hints(kind, include_extras=True) if isinstance(kind, type) else {}
        kind = _unwrapped(hints.get(name))
    field = names[-1] if names else ""
    if field and at and at.group(1).endswith("]"):  # an element of a list of structs: the struct itself
        hints = typing.get_type_hints(kind, include_extras=True) if isinstance(kind, type) else {}
        kind, field = _unwrapped(hints.get(field)), ""
    return (kind if isinstance(kind, type) and issubclass(kind, msgspec.Struct) else None), field


def args_hint(kind: type, error: str) -> str:
    """What to send instead, for a msgspec error decoding `kind`: the values a field takes
    from a fixed list (an agent asked to forget an entry tries "deleted"; "retracted" is
    listed), or, for an unknown field, the fields there are, and where a memory's own fields
    go when given beside `items` / `item` ("" when it has nothing to add)."""
    struct, field = _at(kind, error)
    if struct is None:
        return ""
    hints = typing.get_type_hints(struct, include_extras=True)
    unknown = _UNKNOWN_FIELD.search(error)
    if unknown:
        if unknown.group(1) in ItemIn.__struct_fields__ and "items" in hints:
            return '; a memory\'s fields go in `items`: {"items": [{"type": ..., "title": ..., "content": ...}]}'
        if unknown.group(1) in ItemIn.__struct_fields__ and "item" in hints:
            return '; the memory\'s fields go in `item`: {"item": {"type": ..., "title": ..., "content": ...}}'
        return f"; the fields are {', '.join(struct.__struct_fields__) or 'none'}"
    choices = typing.get_args(_unwrapped(hints.get(field))) if field in hints else ()
    if not (choices and typing.get_origin(_unwrapped(hints[field])) is Literal):
        return ""
    forgets = ' ("retracted" forgets it: kept with its history, never recalled)' if "retracted" in choices else ""
    return f"; {field} is one of {', '.join(map(str, choices))}{forgets}"


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
    claim is not retracted at once: the retraction is held for review. `reason`: why, said in
    its verdict and kept in the item's history (`loci show`, `loci audit`, `/v1/items/{id}`),
    also once the item's text is withheld. `turn_ids`: the
    caller's turns of this round that asked for or acknowledged the forgetting ("please
    forget X", "Done, it's forgotten."), forgotten with it once it holds (at once, or when a
    reviewer approves it): recalled, they would show that X existed. A teammate's words in
    the caller's shared chat (a named `speaker`) and a turn of another conversation are
    refused (403, 409: `edits._not_of_the_round`). `withdraw`: the memory alone is
    retracted, the turns that said it stay (`WITHDRAWN`)."""

    id: ItemId
    reason: Annotated[str, Meta(
        max_length=MAX_FORGET_REASON_CHARS,
        description="Why it is forgotten (\"said by mistake\", \"edited by the user\"): kept in its history "
                    "and audit")] = ""
    turn_ids: Annotated[list[ItemId], Meta(
        max_length=20, description="Your turns of this round that asked for or acknowledged the forgetting (a "
                                   "turn_id from POST /v1/turns, or a message entry's id): forgotten with it; "
                                   "what else they said is kept as a turn of its own.")] = []
    withdraw: Annotated[bool, Meta(
        description="Withdraw the memory only: the turns that said it stay recallable (a proposal of an "
                    "answer the user regenerated or did not choose). By default forgetting a memory also "
                    "hides the caller's turns that said it.")] = False


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

def decode(kind: type, args: Any, action: str):
    if not isinstance(args, dict):
        raise ToolError(400, f"{action}: args must be a JSON object")
    if holds_lone_surrogate(args):  # JSON parsers other than msgspec's (MCP, the proxy) keep them
        raise ToolError(400, f"{action}: invalid args: {LONE_SURROGATE}")
    try:
        return msgspec.convert(args, kind)
    except msgspec.ValidationError as exc:
        raise ToolError(400, f"{action}: invalid args: {exc}{args_hint(kind, str(exc))}") from None

