"""Typed records shared by every layer: memory items, proposals, verdicts, events.

msgspec Structs: fast JSON encode/decode, strict validation at the edges, and a JSON schema
export (`loci schema`). Times are ISO-8601 UTC strings so records round-trip through JSON,
SQLite, DuckDB and Parquet unchanged.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec

Tier = Literal["stm", "mtm", "ltm"]
ItemType = Literal[
    "fact",
    "decision",
    "definition",
    "constraint",
    "pattern",
    "todo",
    "pointer",
    "note",
    "preference",
    "summary",
    "message",  # an episodic chat turn: evidence of what was said, recallable as such
]
ITEM_TYPES: tuple[str, ...] = ItemType.__args__  # type: ignore[attr-defined]
TIERS: tuple[str, ...] = Tier.__args__  # type: ignore[attr-defined]
Validation = Literal["unverified", "verified", "contested", "retracted"]
ScopeKind = Literal["session", "project", "user", "org"]
# Most specific first: the order of scope priority (session > project > user > org).
SCOPE_KINDS: tuple[str, ...] = ScopeKind.__args__  # type: ignore[attr-defined]
SCOPE_RANK: dict[str, int] = {kind: rank for rank, kind in enumerate(SCOPE_KINDS)}


def scope_that_applies(a: str, b: str) -> str | None:
    """Of two claims' scope kinds, the one that applies where both do (the most specific), or
    None when they are of one kind: a project's exception to an org's rule is no
    contradiction to decide, the project's applies in that project."""
    return None if a == b else min(a, b, key=SCOPE_RANK.__getitem__)

SourceKind = Literal["chat", "doc", "tool", "mixed"]
# Metadata of a claim: the clauses of the user's words it records that retire a value it does
# not name ("not Ashford" of "The town is Greyhaven now, not Ashford" when the model wrote
# "The town is called Greyhaven"), read by the conflict rule as part of what it says
# (`pipelines.recall.conflicts.retired_by_evidence`).
RETIRED_BY_USER = "retired_by_user"
LinkRel = Literal[
    "supports", "contradicts", "refines", "supersedes", "depends_on", "references", "derived_from"
]
VerdictAction = Literal["accept", "quarantine", "reject"]
ProposalForm = Literal["tool_call", "json_block", "narrated", "api"]


def parse_time(value: str | None) -> datetime | None:
    """ISO-8601 -> aware datetime (naive = UTC); None when missing or unparsable."""
    if not value or not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


@lru_cache(maxsize=64)
def time_zone(name: str) -> ZoneInfo:
    """The IANA zone `name` ("Europe/Berlin", "UTC"); ValueError naming it when unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # a malformed key ("../x"), a folder ("America")
        raise ValueError(f"unknown time zone {name!r} (an IANA name such as 'Europe/Berlin' or 'UTC')") from exc


def says_something(text: str) -> bool:
    """Whether `text` holds a word: a letter or digit in any script. A placeholder ("...",
    "…", "-"), such as a template's copied back by a model, says nothing."""
    return any(ch.isalnum() for ch in text)


LONE_SURROGATE = "text holds a lone surrogate (an escape such as \\ud800 that is no character)"
_LONE_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def holds_lone_surrogate(value: Any) -> bool:
    """Whether JSON data (decoded by a parser that keeps them, like `json` or pydantic's)
    holds a lone surrogate: no character, so it cannot be stored, hashed or sent as UTF-8."""
    try:
        msgspec.json.encode(value)
    except UnicodeEncodeError:
        return True
    except (TypeError, ValueError, OverflowError):
        return False
    return False


def replace_lone_surrogates(value: Any, raw: bytes | None = None) -> Any:
    """JSON data with each lone surrogate replaced by U+FFFD, as Go's JSON decoder (Ollama's)
    reads one. `raw`, the bytes `value` was decoded from, skips the walk when they hold no
    surrogate escape at all (the usual case)."""
    if raw is not None and not _LONE_SURROGATE_ESCAPE.search(raw):
        return value
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace") \
            if holds_lone_surrogate(value) else value
    if isinstance(value, dict):
        return {replace_lone_surrogates(k): replace_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_lone_surrogates(v) for v in value]
    return value


def time_problems(valid_from: object = None, valid_to: object = None, **others: object) -> list[str]:
    """What is wrong with the times of an item: one that does not parse as ISO-8601 (it would
    be stored and then ignored), or a validity window that ends before it starts (a fact
    holding at no time, yet shown with its window)."""
    named = {"valid_from": valid_from, "valid_to": valid_to, **others}
    parsed = {name: parse_time(value) for name, value in named.items()}  # type: ignore[arg-type]
    out = [f"{name} {value!r} is not an ISO-8601 time" for name, value in named.items()
           if isinstance(value, str) and parsed[name] is None]
    start, end = parsed["valid_from"], parsed["valid_to"]
    if start is not None and end is not None and end < start:
        out.append(f"valid_to {valid_to!r} is before valid_from {valid_from!r}")
    return out


def timestamp(value: str | None, default: float = float("nan")) -> float:
    """POSIX seconds of an ISO-8601 string (naive = UTC); `default` when missing or bad."""
    dt = parse_time(value)
    return dt.timestamp() if dt is not None else default


def utcnow() -> str:
    """Now as an ISO-8601 UTC string with microseconds (sortable as text)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stable_id(prefix: str, *parts: object) -> str:
    """Deterministic id from parts: the pipeline and the service derive the same item id
    from the same inbox event, so the snapshot and the online delta agree."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return f"{prefix}_{digest[:20]}"


class Identity(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Who is asking or writing. Every read is filtered by this before anything else."""

    user_id: str = "default"
    project_id: str = "default"
    session_id: str = "default"
    org_id: str = "default"

    def audience_keys(self) -> tuple[tuple[str, ...], ...]:
        """The audience keys (`Scope.audience_key`) of everything this caller may read, most
        specific first."""
        return (("session", self.org_id, self.user_id, self.session_id),
                ("project", self.org_id, self.project_id),
                ("user", self.org_id, self.user_id),
                ("org", self.org_id))


class Scope(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Visibility of an item. `kind` says which owner ids must match the caller's:
    session -> org, user and session; project -> org and project; user -> org and user;
    org -> org. An org is a tenant of its own: two orgs reusing a user id see nothing of
    each other. All owner ids are recorded whatever the kind, for audit."""

    kind: ScopeKind = "project"
    user_id: str = "default"
    project_id: str = "default"
    session_id: str = "default"
    org_id: str = "default"

    def audience_key(self) -> tuple[str, ...]:
        """Who may read an item of this scope, as one key: the caller may when the key is one
        of `Identity.audience_keys()`. The one home of the visibility rule (the recall corpus
        indexes rows by it)."""
        if self.kind == "session":
            return ("session", self.org_id, self.user_id, self.session_id)
        if self.kind == "project":
            return ("project", self.org_id, self.project_id)
        if self.kind == "user":
            return ("user", self.org_id, self.user_id)
        return ("org", self.org_id)

    def visible_to(self, who: Identity) -> bool:
        return self.audience_key() in who.audience_keys()

    def partition_key(self) -> str:
        """Owner partition used for clustering: items never merge across owners (nor across
        audiences: the partition is the audience key)."""
        kind, *owners = self.audience_key()
        return f"{kind}:{'/'.join(owners)}"

    @classmethod
    def for_identity(cls, kind: ScopeKind, who: Identity) -> "Scope":
        return cls(
            kind=kind,
            user_id=who.user_id,
            project_id=who.project_id,
            session_id=who.session_id,
            org_id=who.org_id,
        )


class Provenance(msgspec.Struct, forbid_unknown_fields=True):
    source_kind: SourceKind = "chat"
    source_id: str = ""  # chat turn id, doc URI, tool run id
    chunk_ids: list[str] = []
    content_hashes: list[str] = []
    # External turn references (e.g. LoCoMo dia_ids) of every turn this item stands for;
    # a merged item carries the union of its sources'.
    turn_refs: list[str] = []
    event_ids: list[str] = []  # inbox events this item came from
    created_at: str = msgspec.field(default_factory=utcnow)

    def is_present(self) -> bool:
        return bool(self.source_id or self.turn_refs or self.chunk_ids)


class Link(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    rel: LinkRel
    to: str


class PalaceLocation(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    item_id: str
    domain: str
    room: str
    shelf: str
    card: str

    @property
    def path(self) -> str:
        return f"{self.domain}/{self.room}/{self.shelf}/{self.card}"


class MemoryItem(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    tier: Tier
    type: ItemType
    title: str
    content: str
    scope: Scope
    tags: list[str] = []
    entities: list[str] = []
    links: list[Link] = []
    provenance: Provenance = msgspec.field(default_factory=Provenance)
    confidence: float = 0.5
    importance: int = 5  # 1-10; 8 and above is always injected
    validation: Validation = "unverified"
    valid_from: str | None = None  # when the fact starts to hold
    valid_to: str | None = None  # when it stops holding
    created_at: str = msgspec.field(default_factory=utcnow)  # when we learned it
    updated_at: str = msgspec.field(default_factory=utcnow)
    expires_at: str | None = None
    usage_count: int = 0
    last_used_at: str | None = None
    superseded_by: str | None = None
    archived: bool = False
    content_hash: str = ""
    # Free-form labels that must survive: policy version, merger used ("granite3.2:2b" or
    # "extractive-fallback"), quarantine reasons, retention topic...
    metadata: dict[str, Any] = {}

    def __post_init__(self) -> None:
        if not self.content_hash:
            self.content_hash = item_content_hash(self.title, self.content)

    @property
    def active(self) -> bool:
        return not self.archived and self.superseded_by is None

    def expired(self, now: datetime) -> bool:
        """Whether its `expires_at` has passed at `now` (aware): consolidation archives it,
        and recall no longer returns it meanwhile."""
        expires = parse_time(self.expires_at)
        return expires is not None and expires < now


    def window_state(self, now: datetime | None) -> str:
        """"ENDED" when its validity window closed before `now` (aware), "UPCOMING" when it
        opens after it, "" when it holds then (or has no window, or no time is given)."""
        if now is None:
            return ""
        end, start = parse_time(self.valid_to), parse_time(self.valid_from)
        if end is not None and end < now:
            return "ENDED"
        return "UPCOMING" if start is not None and start > now else ""


# The words that bound a claim for a while, up to a day ("until Friday, reports go to Ana"):
# `validity.anchor` reads them, `apart_in_time` tells such a stand-in from a deadline.
UNTIL = r"(?:until|till|til|through|thru|up\s+to|by\s+the\s+end\s+of)"
_UNTIL_RE = re.compile(rf"\b{UNTIL}\b", re.IGNORECASE)
_DUE_RE = re.compile(r"\b(?:due|deadlines?)\b", re.IGNORECASE)


def states_a_due_day(claim: MemoryItem | ProposedItem) -> bool:
    """A claim whose window is the day it says a thing is due ("the report is due Friday,
    November 20": over after that day, no start, no "until"): that day is what it states,
    not a time it holds for."""
    return (claim.valid_from is None and claim.valid_to is not None and _UNTIL_RE.search(claim.content) is None
            and _DUE_RE.search(f"{claim.title} {claim.content}") is not None)


def apart_in_time(a: MemoryItem | ProposedItem, b: MemoryItem | ProposedItem) -> bool:
    """Two claims that hold at different times cannot contradict each other: a stand-in for
    a while ("until Friday, reports go to Ana") beside what holds with no end ("reports go to
    Maya", which holds again after), or two windows that do not meet (last week's trip to
    Lisbon, next week's to Porto). A deadline's window is the day it states
    (`states_a_due_day`): beside a claim of no window on its subject ("the report was due
    November 13", said after it) it is another value of one claim, not another time."""
    if (a.valid_to is None) != (b.valid_to is None):
        return not (states_a_due_day(a) or states_a_due_day(b))
    if a.valid_to is None:  # neither ends (most claims): they meet whenever they start
        return False
    starts = [parse_time(a.valid_from), parse_time(b.valid_from)]
    ends = [parse_time(a.valid_to), parse_time(b.valid_to)]
    if None in ends:
        return False
    return any(s is not None and s > e for s, e in ((starts[0], ends[1]), (starts[1], ends[0])))


def item_content_hash(title: str, content: str) -> str:
    return sha256_text(f"{title}\n{content}")


class ProposedItem(msgspec.Struct, forbid_unknown_fields=False):
    """What the model proposes. Lenient on unknown keys (models add fields); the policy,
    not the parser, decides what is stored."""

    type: str = "note"
    title: str = ""
    content: str = ""
    tags: list[str] = []
    entities: list[str] = []
    why_store: str = ""
    importance: int | None = None
    confidence: float | None = None
    tier: str | None = None
    scope: str | None = None  # session / project / user / org
    provenance_hint: dict[str, Any] = {}
    valid_from: str | None = None
    valid_to: str | None = None


class ParseError(msgspec.Struct, forbid_unknown_fields=True):
    form: ProposalForm
    message: str
    excerpt: str = ""


class ParsedProposal(msgspec.Struct, forbid_unknown_fields=True):
    form: ProposalForm
    item: ProposedItem


class ParsedOutput(msgspec.Struct, forbid_unknown_fields=True):
    """The assistant text split into what the user sees and what the model proposed."""

    visible_text: str
    proposals: list[ParsedProposal] = []
    errors: list[ParseError] = []


class Verdict(msgspec.Struct, forbid_unknown_fields=True):
    action: VerdictAction
    reasons: list[str] = []
    rule_ids: list[str] = []
    policy_version: str = ""
    hard_block: bool = False
    # Set when the policy rewrote the proposal (an oversized dump becomes a pointer).
    rewritten_type: str | None = None
    expires_at: str | None = None  # for quarantine


EventKind = Literal[
    "turn",  # a captured chat turn
    "proposal",  # a governed proposal (payload has the proposal and its verdict)
    "memory.write",
    "memory.update",
    "memory.link",
    "memory.palace.assign",  # a caller's choice of palace location for an item
    "memory.review",  # a reviewer's approval or rejection of a quarantined item
    "memory.consolidate",
    "usage",  # items returned by recall (usage counts)
    "audit",  # read-only actions (search, read, palace browse) for the audit trail
]


class Event(msgspec.Struct, forbid_unknown_fields=True):
    """An inbox event. `seq` is assigned by the inbox on append (monotonic)."""

    event_id: str
    kind: EventKind
    identity: Identity
    payload: dict[str, Any]
    at: str = msgspec.field(default_factory=utcnow)
    seq: int = 0
    sha256: str = ""

    def __post_init__(self) -> None:
        if not self.sha256:
            self.sha256 = sha256_text(
                json.dumps(self.payload, sort_keys=True, ensure_ascii=False, default=str)
            )


class ChatTurn(msgspec.Struct, forbid_unknown_fields=True):
    turn_id: str
    identity: Identity
    role: Literal["user", "assistant", "system"]
    text: str
    at: str = msgspec.field(default_factory=utcnow)
    turn_ref: str | None = None  # external id, e.g. LoCoMo dia_id
    speaker: str | None = None


RECORD_TYPES: dict[str, type] = {
    "MemoryItem": MemoryItem,
    "Provenance": Provenance,
    "Link": Link,
    "PalaceLocation": PalaceLocation,
    "ProposedItem": ProposedItem,
    "ParsedOutput": ParsedOutput,
    "Verdict": Verdict,
    "Event": Event,
    "ChatTurn": ChatTurn,
    "Identity": Identity,
    "Scope": Scope,
}


def json_schemas() -> dict[str, Any]:
    """JSON schema for every record type (components share one $defs)."""
    schemas, components = msgspec.json.schema_components(list(RECORD_TYPES.values()))
    return {
        "$defs": components,
        "records": {name: s for name, s in zip(RECORD_TYPES, schemas)},
    }


def to_dict(record: msgspec.Struct) -> dict[str, Any]:
    return msgspec.to_builtins(record)


def from_dict(kind: type, data: Any):
    return msgspec.convert(data, kind)
