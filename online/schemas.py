"""Request and response bodies of the recall service (msgspec Structs).

Requests forbid unknown fields and carry their limits (`Meta`), so Litestar rejects a
misspelt or oversized field with a 400 before any handler runs; the generated OpenAPI
schema (`/schema`) shows the same constraints. Responses are plain Structs too: what the
schema documents is exactly what is serialised.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from pipelines.capture import ProposalOutcome
from pipelines.records import Identity, ItemType, ScopeKind, Tier

# Bounds shared by several bodies. Body size as a whole is capped by settings.max_body_bytes.
Text = Annotated[str, Meta(min_length=1, max_length=200_000, description="Turn text (non-empty).")]
MAX_QUERY_CHARS = 10_000  # what one recall reads of a question (the API refuses longer)
Query = Annotated[str, Meta(min_length=1, max_length=MAX_QUERY_CHARS, description="What to recall (non-empty).")]
# The asker's IANA zone: "yesterday" is theirs, not UTC's (checked by `records.time_zone`).
TimeZoneName = Annotated[str, Meta(min_length=1, max_length=64, examples=["Europe/Berlin"],
                                   description="IANA time zone a question's 'yesterday', 'last week' are read in "
                                               "(default: the service's `timezone` setting, UTC).")]
ShortId = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:@/\-]+$")]
TagList = Annotated[list[Annotated[str, Meta(min_length=1, max_length=100)]], Meta(max_length=50)]
Conversation = Annotated[
    list[Annotated[str, Meta(max_length=100_000)]],
    Meta(max_length=500, description="The messages of the conversation the query is asked in (what the chat "
                                     "loop sends the model with it): stored turns saying them are not recalled."),
]
K = Annotated[int, Meta(ge=1, le=200, description="How many hits to return.")]
RecallMode = Annotated[Literal["inject", "catalog", "hybrid", "auto"], Meta(
    description="inject: the READ-ONLY block only; catalog: the catalog only; hybrid: the block and the rest "
                "catalogued; auto: the block when a found claim is confident enough to inject, else the catalog "
                "(default: the service's `recall_mode`, hybrid).")]

# Request bodies reject unknown fields, but Litestar does not derive `additionalProperties:
# false` from `forbid_unknown_fields`; this says it in the OpenAPI schema (Litestar applies
# the `extra` of msgspec's extra_json_schema to the generated schema). Controllers put
# CLOSED_OBJECT on their `data` bodies (`Body(schema_extra=CLOSED_OBJECT)`).
CLOSED_OBJECT = {"additional_properties": False}

# One part of a caller identity: an empty or blank id would be a tenant of its own; a NUL
# character cannot be stored by every inbox (PostgreSQL text refuses it). The same rule
# checks the identity of GET requests (controllers/deps.py).
ID_PART_PATTERN = r"^[^\x00]*[^\s\x00][^\x00]*$"
IdPart = Annotated[str, Meta(min_length=1, max_length=200, pattern=ID_PART_PATTERN,
                             description="A non-empty id without NUL characters; leave the field out to "
                                         "mean \"default\".")]


class CallerIdentity(Identity, frozen=True, forbid_unknown_fields=True):
    """The `identity` of a request body: `Identity` with every part a non-empty id."""

    user_id: IdPart = "default"
    project_id: IdPart = "default"
    session_id: IdPart = "default"
    org_id: IdPart = "default"


IdentityField = Annotated[CallerIdentity, Meta(extra_json_schema={"extra": CLOSED_OBJECT})]


class Request(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of every request body: unknown fields are an error, not silently dropped, and
    values are never coerced (`"trace": "0"` is not a boolean, `"k": "5"` not a number:
    `online.controllers.deps.strict_body` decodes every body strictly before Litestar's
    own, lenient, conversion runs)."""

    def __post_init__(self) -> None:
        # Handlers and everything below them deal in plain `Identity` values (equality and
        # caches compare types), the checked subclass only guards the door.
        who = getattr(self, "identity", None)
        if isinstance(who, CallerIdentity):
            self.identity = Identity(user_id=who.user_id, project_id=who.project_id,
                                     session_id=who.session_id, org_id=who.org_id)


# -- turns ----------------------------------------------------------------------------------


class TurnRequest(Request):
    """Capture one chat turn. Assistant turns are parsed for memory proposals (tool call,
    `<MEMORY_PROPOSALS_JSON>` block, narrated `memory_save(...)`), each governed by the policy."""

    identity: IdentityField
    role: Literal["user", "assistant"]
    text: Text
    tool_calls: Annotated[list[dict[str, Any]], Meta(max_length=50)] | None = None
    turn_id: ShortId | None = None
    turn_ref: ShortId | None = None
    speaker: Annotated[str, Meta(max_length=200)] | None = None
    default_scope: ScopeKind = "project"
    # When the turn was said, for a loop that captures a conversation after the fact (no
    # zone = UTC); recall reads it for "what did we decide yesterday?". Default: now.
    at: Annotated[datetime, Meta(description="ISO-8601 time the turn was said (default: now; not in the future).")
                  ] | None = None
    # The speaker's zone: a proposal's "until Friday", "next week" are read on its calendar.
    tz: TimeZoneName | None = None


class TurnResponse(msgspec.Struct, kw_only=True):
    turn_id: str
    seq: int
    role: str
    visible_text: str
    proposals: list[ProposalOutcome]  # the capture step's own verdict record
    parse_errors: list[dict[str, Any]]
    redactions: int


# -- recall ---------------------------------------------------------------------------------


class RecallRequest(Request):
    identity: IdentityField
    query: Query
    mode: RecallMode | None = None
    k: K | None = None
    tags: TagList = []
    tier: Tier | None = None
    type: ItemType | None = None
    scope: ScopeKind | None = None
    trace: bool = False
    conversation: Conversation = []
    tz: TimeZoneName | None = None


class HitOut(msgspec.Struct, kw_only=True):
    id: str
    score: float
    tier: str
    type: str
    title: str
    content: str
    tags: list[str]
    scope: dict[str, Any]
    source: str
    conflict: bool
    components: dict[str, float]
    conflict_with: list[str] = []
    # Other notes under its title that it neither corrects nor contradicts: each may add to
    # or update the other (the newest is listed first).
    same_title: list[str] = []
    delivery: str = "catalog"  # inject | catalog
    # A change to it held for review (`pipelines.recall.render.pending_note`), "" when none.
    pending_review: str = ""
    # When it holds (ISO-8601, None: open), and "ENDED" / "UPCOMING" when the time of asking is
    # after / before that window ("" when it holds then or has none).
    valid_from: str | None = None
    valid_to: str | None = None
    # A raw turn (type `message`): the day it was said on the asker's calendar (its title's
    # date), instead of a window; None for a curated claim.
    said_on: str | None = None
    window: str = ""
    # A raw turn a claim was said in that curated corrections replaced since: their ids, the
    # latest first (the block marks it said earlier, `render.REPLACED_SINCE`); [] otherwise.
    replaced_by: list[str] = []
    # A curated claim its author said otherwise of in later turns no memory was kept of: their
    # ids, the latest first (the block marks it SAID_LATER, `render.said_later_note`); [] otherwise.
    said_later: list[str] = []


class RecallResponse(msgspec.Struct, kw_only=True):
    found: bool
    message: str
    # What was delivered: with `auto`, the branch taken (the block found nothing to inject
    # looks alike either way, and the caller decides what to do next from it).
    mode: Annotated[Literal["inject", "catalog", "hybrid"], Meta(
        description="The mode delivered: the one asked (or the service's default), or for `auto` the branch "
                    "taken: `inject` (a found claim was confident enough: the block alone) or `catalog` (none "
                    "was: the catalog alone, `injection` empty).")]
    hits: list[HitOut]
    injection: str
    catalog: dict[str, Any]
    used_ids: list[str]
    snapshot_version: str | None
    timings_ms: dict[str, float]
    degraded: list[str] = []  # components skipped (e.g. embedder down: lexical only; inbox down)
    # While the inbox cannot be read: since when (ISO 8601, UTC) the answer may miss writes.
    stale_since: str | None = None
    # `Any` (not `Any | None`): the latter documents oneOf [{}, null], which null matches twice.
    trace: Any = None


# -- tools ----------------------------------------------------------------------------------


# The actions `online.tools.ToolDispatcher` runs (documented as an enum; an unknown action
# is still answered by the dispatcher's own 400 that lists these).
TOOL_ACTIONS = (
    "memory.propose", "memory.write", "memory.search", "memory.read", "memory.update",
    "memory.link", "memory.consolidate", "memory.palace.list", "memory.palace.get",
    "memory.palace.assign", "memory.review", "memory.stats", "memory.forget", "memory.review.list",
)


class ToolRequest(Request):
    """`{"action": "memory.search", "args": {...}, "identity": {...}}`. The args of each
    action are validated by the dispatcher (unknown keys are an error there too)."""

    action: Annotated[str, Meta(min_length=1, max_length=64,
                                extra_json_schema={"extra": {"enum": list(TOOL_ACTIONS)}})]
    identity: IdentityField
    args: dict[str, Any] = {}


class ToolResponse(msgspec.Struct, kw_only=True):
    ok: bool
    action: str
    result: Any


# -- items, conflicts, stats, health --------------------------------------------------------


class ReplacedBy(msgspec.Struct, kw_only=True):
    id: str  # the item that took its place (the caller may read it)
    how: Literal["superseded", "merged"]  # a correction superseded it / consolidation merged it


class ItemResponse(msgspec.Struct, kw_only=True):
    item: dict[str, Any]
    # history: it left recall (archived, superseded, merged), as last stored
    source: Literal["snapshot", "delta", "history"]
    revisions: list[dict[str, Any]]  # published with the snapshot, oldest first
    history: list[dict[str, Any]]  # inbox events that created or changed it
    events: list[dict[str, Any]] = []  # the warehouse's audit events, published with the snapshot
    # recallable | quarantined (held for review) | retracted | archived | superseded | merged
    state: str = "recallable"
    replaced_by: ReplacedBy | None = None  # superseded or merged: what to read now


class ConflictOut(msgspec.Struct, kw_only=True):
    a: dict[str, Any]
    b: dict[str, Any]
    reason: str
    applies: Annotated[str | None, Meta(
        description="When the two are of different scope kinds, the kind that applies where both do (the most "
                    "specific: session, project, user, org): an exception, not a contradiction to decide.")] = None


class ConflictsResponse(msgspec.Struct, kw_only=True):
    count: int
    conflicts: list[ConflictOut]


class PendingReview(msgspec.Struct, kw_only=True):
    """One thing waiting for a reviewer (`online.review.review_entry`); `memory.review` with
    its `id` approves or rejects it."""

    id: Annotated[str, Meta(description="The item's id: what `memory.review` takes.")]
    kind: Annotated[Literal["proposal", "edit", "retraction"],
                    Meta(description="`proposal`: the item itself is held (as proposed or written); `edit`: a "
                                     "change held beside the item, which answers as before until a review; "
                                     "`retraction`: a held request to forget it.")]
    type: ItemType
    title: Annotated[str, Meta(description="The title once approved.")]
    scope: ScopeKind
    proposed_by: Annotated[str, Meta(description="The user who proposed it (an edit's editor).")]
    proposed_at: Annotated[str, Meta(description="When (ISO-8601).")]
    new_content: Annotated[str, Meta(description="What the item says once approved.")]
    old_content: Annotated[str | None, Meta(description="What it says now (an edit or retraction), "
                                                        "null for a proposal.")]
    old_title: str | None
    fields: Annotated[list[str], Meta(description="The fields a held change sets ([] for a proposal).")]
    rule_ids: Annotated[list[str], Meta(description="The policy rules that held it.")]
    held_against: Annotated[list[str], Meta(description="Ids of the claims it contradicts, if so held.")]
    expires_at: Annotated[str | None, Meta(description="When the hold lapses undecided.")]
    may_decide: Annotated[bool, Meta(description="Whether the caller may approve or reject it (what waits on an "
                                                 "org's org-wide memory is decided by its `org_reviewers` when "
                                                 "the org names them).")]
    refusal: Annotated[str | None, Meta(description="Why the caller may not decide it, naming who may; null when "
                                                    "they may.")]


class ReviewResponse(msgspec.Struct, kw_only=True):
    count: int
    pending: list[PendingReview]


class ErrorResponse(msgspec.Struct, kw_only=True):
    ok: bool = False
    status_code: int
    error: str
    detail: Any = None  # see RecallResponse.trace: `Any` already admits null


class HealthResponse(msgspec.Struct, kw_only=True):
    status: str
    pid: int  # the answering process: with `loci serve --workers N`, which worker


class StateReport(msgspec.Struct, kw_only=True):
    """What the service is serving: used by /readyz, /v1/stats and /v1/admin/reload. In
    /v1/stats the item numbers and `counts` cover only what the caller may see."""

    ready: bool
    embedder: str
    snapshot_version: str | None
    watermark: int
    last_seq: int
    delta_items: int
    snapshot_items: int
    problems: list[str]
    counts: dict[str, Any] = {}
    # The usage-event batcher: queued, recorded, written, dropped, errors, last_error.
    usage_log: dict[str, Any] = {}
    # How the snapshot's search state was made: "read" (the warm cache) or "computed".
    snapshot_warmed: str = ""
    # While the inbox cannot be read: since when (ISO 8601, UTC); recall is answered from
    # the snapshot and the writes folded before, writes get 503 (`problems` says so).
    stale_since: str | None = None
