"""Bulk ingestion into the inbox: chat-turn JSONL, LoCoMo conversations, item exports.

Every row goes through `capture_turn` (parse, govern, land), the same path as the
service; given `existing` (what the service checks a live proposal against: `loci ingest`
passes the service's own lookup), a chat's proposals meet the same contradiction check and
a user's correction of their own claim replaces it, as in the live chat. Bad rows are
reported with their line number and the rest is still processed. Ingestion is idempotent:
turn ids are derived from the row, so a file landed twice adds nothing the second time.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Literal, Sequence

import msgspec

from pipelines.capture import CaptureResult, TurnIdConflict, capture_turn, govern_claim
from pipelines.forgetting import forget_request_subject, said_words
from pipelines.inbox import InboxBackend
from pipelines.materialize import DISAGREES_WITH, HELD_AGAINST, is_tombstone, message_item_id
from pipelines.proposals import parse_assistant_output
from pipelines.recall.conflicts import is_claim
from pipelines.recall.episodic import said_stems
from pipelines.records import (
    Event,
    Identity,
    MemoryItem,
    ProposedItem,
    ScopeKind,
    Verdict,
    parse_time,
    stable_id,
    utcnow,
)


class ChatRow(msgspec.Struct, forbid_unknown_fields=True):
    """One line of the chat JSONL format (documented in the README)."""

    role: Literal["user", "assistant", "system"]
    text: str
    user_id: str = "default"
    project_id: str = "default"
    session_id: str = "default"
    org_id: str = "default"
    at: str | None = None
    turn_id: str | None = None
    turn_ref: str | None = None
    speaker: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    scope: ScopeKind = "project"


@dataclass
class IngestReport:
    turns: int = 0
    proposals: Counter = field(default_factory=Counter)  # action -> count
    parse_errors: int = 0
    redactions: int = 0
    bad_rows: list[str] = field(default_factory=list)  # "line N: message"
    max_seq: int = 0
    already: int = 0  # turns the inbox held before (re-ingested: nothing new landed for them)
    before_seq: int = 0  # the inbox's last seq when the ingest started

    @classmethod
    def starting_at(cls, inbox: InboxBackend) -> IngestReport:
        return cls(before_seq=inbox.max_seq())

    def count_turn(self, result: CaptureResult) -> None:
        """One captured turn: new (its verdicts counted) or already in the inbox (a turn's id
        is stable, so re-ingesting lands nothing and counts nothing twice)."""
        self.max_seq = max(self.max_seq, result.seq)
        if result.seq <= self.before_seq:
            self.already += 1
            return
        self.turns += 1
        self.proposals.update(p.action for p in result.proposals)
        self.parse_errors += len(result.parse_errors)
        self.redactions += result.redactions

    def as_dict(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "already": self.already,
            "accepted": self.proposals.get("accept", 0),
            "quarantined": self.proposals.get("quarantine", 0),
            "rejected": self.proposals.get("reject", 0),
            "parse_errors": self.parse_errors,
            "redactions": self.redactions,
            "bad_rows": list(self.bad_rows),
            "max_seq": self.max_seq,
        }


_row_decoder = msgspec.json.Decoder(ChatRow)


def _iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                yield number, line


def file_format(path: str | Path) -> Literal["chat", "locomo", "items"] | None:
    """What a file holds, read from its first row: a LoCoMo JSON file (a list), a chat JSONL
    (rows with `role`), an export of `loci export` (rows with `content` and `type`); None
    when its first row is none of them (each reader then names what is wrong)."""
    try:
        with Path(path).open("r", encoding="utf-8", errors="replace") as fh:
            start = fh.read(1 << 16).lstrip()
    except OSError:
        return None
    if start.startswith("["):
        return "locomo"
    first = start.splitlines()[0] if start else ""
    try:
        row = json.loads(first)
    except json.JSONDecodeError:
        return None
    if not isinstance(row, dict):
        return None
    if "role" in row:
        return "chat"
    if "content" in row and "type" in row:
        return "items"
    return None


def _error_text(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _row_problem(row: ChatRow) -> str | None:
    """Why a well-formed row still cannot be a turn: nothing said, a time that is not a
    time, or an empty identity part (which would be a tenant of its own)."""
    if not row.text.strip():
        return "text is blank"
    if row.at is not None and parse_time(row.at) is None:
        return f"at {row.at!r} is not an ISO-8601 time (e.g. 2026-03-02T10:00:00+00:00)"
    for name in ("user_id", "project_id", "session_id", "org_id"):
        if not getattr(row, name).strip():
            return f"{name} is empty (leave it out to mean 'default')"
    return None


@dataclass(frozen=True)
class Owner:
    """Whose the turns of a file are where the file does not say (`loci import --user nora
    --project home`): a person importing their own past chats lands them as theirs, in the
    project they will ask from (a turn is evidence only in the project it was said in), not
    as user "default" or a LoCoMo sample's id in project "locomo". None: the file's own, or
    the format's default."""

    user_id: str | None = None
    project_id: str | None = None
    org_id: str | None = None
    # The importer's own name among a LoCoMo file's speakers (`--speaker Nora`): their turns
    # are the user's, as a live chat's are ("user", no name), so a later live turn that says
    # otherwise is read as the same person's (`episodic.said_otherwise_by`).
    speaker: str | None = None

    def of_row(self, row: ChatRow) -> Identity:
        """A chat row's caller; an identity part the row leaves out ("default") is the owner's."""
        def part(name: str) -> str:
            said, given = getattr(row, name), getattr(self, name, None)
            return given if said == "default" and given else said
        return Identity(part("user_id"), part("project_id"), row.session_id, part("org_id"))


def ingest_chat_jsonl(
    path: str | Path, inbox: InboxBackend, policy: Any,
    existing: Callable[[Identity], Callable[[ProposedItem], Sequence[MemoryItem]]] | None = None,
    owner: Owner = Owner(),
    stored: Callable[[Identity], Iterable[MemoryItem]] | None = None,
) -> IngestReport:
    """Land a chat JSONL file. `existing(who)` finds the stored claims a proposal of `who`'s
    is checked against (`capture_turn`), as they stand when it is checked (earlier rows
    included); without it proposals are governed by the policy alone. `owner`: the identity
    parts of rows that name none. `stored(who)`: the items `who` sees stored now (served and
    in the inbox): a request to forget in the file also forgets what an earlier import
    landed of theirs before it, and a stored request forgets what the file says before it
    (the later file imported first); without it, the file's own words alone."""
    path = Path(path)
    report = IngestReport.starting_at(inbox)
    ordinal: Counter = Counter()
    # What each user (each named speaker apart) said in a project so far, and the assistant
    # answering them (turn and claim ids, with their stems), and what
    # the request to forget of each chat's round named (its reply is forgotten with it).
    said: defaultdict[tuple[str, str, str, str | None], list[tuple[str, frozenset[str]]]] = defaultdict(list)
    asked: defaultdict[Identity, list[str]] = defaultdict(list)
    # The stored requests to forget of each (org, user, project), read at its first row.
    requests: dict[tuple[str, str, str], list[tuple[MemoryItem, MemoryItem | None]]] = {}
    for number, line in _iter_lines(path):
        try:
            row = _row_decoder.decode(line.encode("utf-8"))
        except msgspec.DecodeError as exc:  # ValidationError is a DecodeError
            report.bad_rows.append(f"line {number}: {_error_text(exc)}")
            continue
        who = owner.of_row(row)
        ordinal[who] += 1  # counted for a refused row too: fixing it keeps the others' ids
        problem = _row_problem(row)
        if problem:
            report.bad_rows.append(f"line {number}: {problem}")
            continue
        turn_id = row.turn_id or stable_id(
            "turn", who.org_id, who.user_id, who.project_id, who.session_id, ordinal[who], row.role, row.text
        )
        # whose words: a named speaker's (a teammate's in a shared chat) are theirs alone
        whose = (who.org_id, who.user_id, who.project_id, row.speaker if row.role == "user" else None)
        if row.role == "user":  # a request to forget names what it forgets; the reply to it follows
            subject = forget_request_subject(row.text)
            mine = [whose, *([] if row.speaker else [(*whose[:3], "")])]  # the chat's own: the assistant's too
            asked[who] = [i for key in mine for i, stems in said[key] if subject and subject <= stems]
            if subject and stored is not None:  # an earlier import's words too (one read, only now)
                asked[who] += [i for i, stems in forgettable(stored(who), who, row.speaker, row.at)
                               if subject <= stems and i not in asked[who]]
        forgot = asked[who] if row.role in ("user", "assistant") else []
        try:
            result = capture_turn(
                inbox, policy, who, row.role, row.text,
                tool_calls=row.tool_calls, turn_id=turn_id, turn_ref=row.turn_ref,
                speaker=row.speaker, at=row.at, default_scope=row.scope,
                existing=existing(who) if existing is not None else None, forgot=forgot,
            )
        except ValueError as exc:
            report.bad_rows.append(f"line {number}: {_error_text(exc)}")
            continue
        if forgot and row.role == "user":
            inbox.append([_forgotten_as_asked(who, item_id, turn_id, row.at) for item_id in forgot])
        if stored is not None and row.role in ("user", "assistant"):
            scope = (who.org_id, who.user_id, who.project_id)
            if scope not in requests:
                requests[scope] = stored_requests(stored(who), scope)
            owed = _forgotten_by_later_requests(requests[scope], who, row, turn_id, result)
            if owed:
                inbox.append(owed)
        said[whose if row.role == "user" else (*whose[:3], "")] += said_by_row(row, turn_id, result)
        report.count_turn(result)
    return report


def said_by_row(row: ChatRow, turn_id: str, result: CaptureResult) -> list[tuple[str, frozenset[str]]]:
    """(id, stems) of what an imported row landed that a request to forget may name: its turn
    (the words shown, `visible_text`, a tool call's JSON by its values: `said_words`) and each
    claim kept of it (its own title and content, as a stored claim is read in `forgettable`).
    Not the row's raw text: an assistant's proposal JSON or tool call ("name": "memory_save",
    "title", "scope") is no one's words, so "please forget my name" must not forget every
    claim proposed in a tool call, nor one claim of a row forget the others."""
    out = [(message_item_id(turn_id), said_stems(said_words(result.visible_text)))]
    if row.role == "assistant" and result.proposals:
        proposed = parse_assistant_output(row.text, row.tool_calls).proposals  # capture_turn's order
        out += [(p.item_id, said_stems(f"{pp.item.title} {pp.item.content}"))
                for p, pp in zip(result.proposals, proposed) if p.item_id and p.action != "reject"]
    return out


def _said_before(said_at: str | None, at: str | None) -> bool:
    """Whether what was said at `said_at` (None: now) was said before `at` (None: now)."""
    said, when = parse_time(said_at), parse_time(at)
    return said is not None and (when is None or said < when)


def forgettable(items: Iterable[MemoryItem], who: Identity, speaker: str | None,
                before: str | None) -> Iterator[tuple[str, frozenset[str]]]:
    """(id, stems) of what a request to forget of `who`'s (`speaker`: a named teammate in
    their chat) may name among stored `items`, as in one imported chat: their turns in its
    project said `before` it and, their own request, the assistant's answers and the claims
    kept of theirs there; none forgotten already."""
    scope = (who.org_id, who.user_id, who.project_id)
    for it in items:
        if ((it.scope.org_id, it.scope.user_id, it.scope.project_id) != scope or it.validation == "retracted"
                or is_tombstone(it) or not _said_before(it.created_at, before)):
            continue
        if it.type == "message":
            role, named = it.metadata.get("role"), it.entities[0] if it.entities else None
            if (role == "user" and named == speaker) or (role == "assistant" and speaker is None):
                yield it.id, said_stems(said_words(it.content))
        elif speaker is None and is_claim(it):
            yield it.id, said_stems(f"{it.title} {it.content}")


def stored_requests(items: Iterable[MemoryItem], scope: tuple[str, str, str]
                    ) -> list[tuple[MemoryItem, MemoryItem | None]]:
    """The requests to forget among stored `items` said in `scope` (org, user, project),
    each with the assistant's reply to it (the next assistant turn of its chat) if stored."""
    turns = [it for it in items if it.type == "message" and not is_tombstone(it)
             and (it.scope.org_id, it.scope.user_id, it.scope.project_id) == scope]

    def when(it: MemoryItem) -> tuple[Any, int]:
        return parse_time(it.created_at) or datetime.min.replace(tzinfo=timezone.utc), int(
            it.metadata.get("inbox_seq") or 0)

    out = []
    for asked in (t for t in turns if t.metadata.get("role") == "user" and forget_request_subject(t.content)):
        replies = [t for t in turns if t.metadata.get("role") == "assistant" and when(t) > when(asked)
                   and t.metadata.get("session_id") == asked.metadata.get("session_id")]
        out.append((asked, min(replies, key=when, default=None)))
    return out


def _forgotten_by_later_requests(requests: Iterable[tuple[MemoryItem, MemoryItem | None]], who: Identity,
                                 row: ChatRow, turn_id: str, result: CaptureResult) -> list[Event]:
    """The retractions a row imported after the stored `requests` to forget (the later file
    imported first) owes them: its turn and kept claims that one said after them names, as
    if the files had come in order (the request and its reply with them: they would show
    what existed)."""
    said = said_by_row(row, turn_id, result)
    out: list[Event] = []
    for request, reply in requests:
        named = request.entities[0] if request.entities else None
        subject = forget_request_subject(request.content)
        if not _said_before(row.at, request.created_at) or named != (row.speaker if row.role == "user" else None):
            continue
        hit = [i for i, stems in said if subject <= stems]
        request_turn = request.provenance.source_id or request.id
        out += [_forgotten_as_asked(who, i, request_turn, request.created_at) for i in hit]
        out += [_forgotten_as_asked(who, turn.id, request_turn, request.created_at) for turn in (request, reply)
                if hit and turn is not None and turn.validation != "retracted"]
    return out


def _forgotten_as_asked(who: Identity, item_id: str, request_turn_id: str, at: str | None) -> Event:
    """The retraction of `item_id`, a turn or claim of the user's that their imported
    request to forget (turn `request_turn_id`) names: done as the old assistant said it was,
    as their own `memory.forget` would (one id per pair, so importing again lands nothing)."""
    when = utcnow()
    return Event(event_id=stable_id("evt", "import", "forget", request_turn_id, item_id), kind="memory.update",
                 identity=who, at=when, payload={
                     "item_id": item_id, "patch": {"validation": "retracted"}, "at": at or when,
                     "verdict": {"action": "accept", "reasons": ["the user asked to forget it in the imported chat"]}})


# -- LoCoMo ----------------------------------------------------------------------------------

_LOCOMO_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%H:%M on %d %B, %Y")


def parse_locomo_date(text: str | None) -> str | None:
    if not text:
        return None
    cleaned = re.sub(r"\s+", " ", text.strip())
    for fmt in _LOCOMO_DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=timezone.utc).isoformat()
        except ValueError:
            continue
    return None


def locomo_sessions(conversation: dict[str, Any]) -> list[tuple[int, str | None, list[dict[str, Any]]]]:
    """(session number, ISO date, turns) in session order."""
    out = []
    for key, turns in conversation.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(turns, list):
            n = int(m.group(1))
            out.append((n, parse_locomo_date(conversation.get(f"session_{n}_date_time")), turns))
    return sorted(out, key=lambda s: s[0])


def locomo_user_id(sample: dict[str, Any], index: int) -> str:
    return str(sample.get("sample_id") or f"locomo-{index}")


def ingest_locomo(path: str | Path, inbox: InboxBackend, policy: Any, *, project_id: str = "locomo",
                  owner: Owner = Owner()) -> IngestReport:
    """Every conversation is one user's scope (its sample id's, or `owner`'s: one person's
    own history), every session a session, every turn a chat turn with its dia_id kept in
    provenance and the session date as the turn time."""
    project_id = owner.project_id or project_id
    report = IngestReport.starting_at(inbox)
    try:
        samples = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a LoCoMo JSON file ({_error_text(exc)})") from exc
    if not isinstance(samples, list):
        raise ValueError(f"{path}: expected a list of LoCoMo samples")
    if owner.speaker is not None:  # a misspelt name would land the importer's turns as someone else's
        named = sorted({str(t.get("speaker")) for s in samples if isinstance(s, dict)
                        and isinstance(s.get("conversation"), dict)
                        for _, _, turns in locomo_sessions(s["conversation"]) for t in turns
                        if isinstance(t, dict) and t.get("speaker")})
        if owner.speaker not in named:
            raise ValueError(f"{path}: speaker {owner.speaker!r} is none of the file's speakers "
                             f"({', '.join(named) or 'none named'}); nothing was imported")
    planned = list(_locomo_turns(samples, project_id, owner, report))
    if report.before_seq > 0:  # imported before with another --speaker? (an empty inbox holds no turn)
        _check_same_speaker(path, inbox, planned, owner.speaker)
    for turn in planned:
        try:
            result = capture_turn(inbox, policy, turn.who, "user", turn.text, turn_id=turn.turn_id,
                                  turn_ref=turn.dia_id, at=turn.date, parse=False, speaker=turn.speaker,
                                  default_scope="user")
        except TurnIdConflict:  # a dia_id used twice in one conversation
            report.bad_rows.append(f"{turn.where}: dia_id {turn.dia_id!r} names an earlier, different turn")
            continue
        report.count_turn(result)
    return report


@dataclass(frozen=True)
class _LocomoTurn:
    who: Identity
    turn_id: str
    dia_id: str
    date: str | None
    text: str
    named: str | None  # the speaker the file names
    speaker: str | None  # as it lands: None for the importer's own turns (`Owner.speaker`)
    where: str  # "sample 0 session 1 turn 2"


def _locomo_turns(samples: list[Any], project_id: str, owner: Owner, report: IngestReport) -> Iterator[_LocomoTurn]:
    """The turns of LoCoMo `samples` as they land (malformed ones in `report.bad_rows`)."""
    for index, sample in enumerate(samples):
        conv = sample.get("conversation") if isinstance(sample, dict) else None
        if not isinstance(conv, dict):
            report.bad_rows.append(f"sample {index}: no conversation")
            continue
        sample_user = locomo_user_id(sample, index)
        user_id = owner.user_id or sample_user
        # One owner's several conversations keep their sessions and turns apart by the sample.
        ids = (sample_user,) if owner.user_id is None else (owner.user_id, sample_user)
        for number, date, turns in locomo_sessions(conv):
            session = f"session_{number}" if owner.user_id is None else f"{sample_user}/session_{number}"
            who = Identity(user_id=user_id, project_id=project_id, session_id=session,
                           org_id=owner.org_id or "default")
            for position, turn in enumerate(turns):
                where = f"sample {index} session {number} turn {position}"
                if not isinstance(turn, dict) or not isinstance(turn.get("text"), str):
                    report.bad_rows.append(f"{where}: malformed")
                    continue
                text = turn["text"]
                if turn.get("blip_caption"):
                    text = f"{text} [shares a photo: {turn['blip_caption']}]"
                dia_id = str(turn.get("dia_id") or f"D{number}:{position + 1}")
                named = turn.get("speaker")
                named = str(named) if named else None
                yield _LocomoTurn(who, stable_id("turn", *ids, dia_id), dia_id, date, text, named,
                                  None if owner.speaker and named == owner.speaker else named, where)


def _check_same_speaker(path: str | Path, inbox: InboxBackend, planned: Sequence[_LocomoTurn],
                        speaker: str | None) -> None:
    """A ValueError, before anything lands, when turns of the file landed before with another
    `--speaker` (or without one): a turn's id is its dia_id's, so each would count as
    already landed and keep the speaker it landed with: the importer would be told nothing
    and still not be the one who said them. The message names how it was imported."""
    clash = None
    earlier: str | None = None  # the importer named by the earlier import, if any
    for turn in planned:
        stored = inbox.get(stable_id("evt", "turn", turn.turn_id))
        if stored is None or stored.identity != turn.who:
            continue  # new, or another owner's turn (a dia_id conflict, reported as such)
        landed = stored.payload.get("speaker")
        if landed is None and turn.named is not None:
            earlier = turn.named
        if clash is None and landed != turn.speaker:
            clash = turn
        if clash is not None and earlier is not None:
            break
    if clash is None:
        return
    before = f"with --speaker {earlier}" if earlier is not None else "without --speaker"
    now = f"--speaker {speaker}" if speaker is not None else "no --speaker"
    raise ValueError(f"{path}: its turns were imported before {before} (e.g. {clash.dia_id}); a turn keeps the "
                     f"speaker it landed with, so {now} would change nothing: nothing was imported. Import it "
                     f"{before} to add what is new.")


# -- item export / import --------------------------------------------------------------------

def import_items_jsonl(
    path: str | Path, inbox: InboxBackend, policy: Any,
    existing: Callable[[Identity], Callable[[ProposedItem], Sequence[MemoryItem]]] | None = None,
) -> IngestReport:
    """Land exported items (one MemoryItem JSON per line) as `memory.write` events. Each is
    governed again: an export edited to carry a secret is rejected like any proposal, and,
    given `existing` (as `ingest_chat_jsonl` takes it), a claim is checked against the stored
    claims its owner may see as a write is (`govern_claim`): contradicting someone else's in
    its scope kind, it is held for review. An imported claim corrects nothing: an export is
    what was said then, so one contradicting its owner's own stored claim stands beside it
    (recall weighs the two, brought in together: `DISAGREES_WITH`), neither held nor
    replacing it. An item imported before (its event id is stable) lands nothing and is
    counted under `already`, not again as accepted."""
    report = IngestReport.starting_at(inbox)
    decoder = msgspec.json.Decoder(MemoryItem)
    for number, line in _iter_lines(Path(path)):
        try:
            item = decoder.decode(line.encode("utf-8"))
        except msgspec.DecodeError as exc:
            report.bad_rows.append(f"line {number}: {_error_text(exc)}")
            continue
        proposal = ProposedItem(
            type=item.type, title=item.title, content=item.content, tags=list(item.tags),
            entities=list(item.entities), why_store="import", importance=item.importance,
            confidence=item.confidence, tier=item.tier, scope=item.scope.kind,
        )
        who = Identity(item.scope.user_id, item.scope.project_id, item.scope.session_id, item.scope.org_id)
        if is_tombstone(item):  # no text to govern: it retracts this store's copy, if any
            verdict = Verdict(action="accept", reasons=["forgotten in the exported store"])
        elif existing is not None and is_claim(item) and item.validation != "retracted":
            found = [it for it in existing(who)(proposal) if it.id != item.id]  # itself, imported again
            verdict, fixes, contradicts, disagrees = govern_claim(
                policy, proposal, provenance=item.provenance, found=found, scope_kind=item.scope.kind,
                author_user_id=who.user_id)
            # An export corrects nothing: what it would correct it stands beside, named as a
            # disagreement (recall brings the two in together, `DISAGREES_WITH`).
            disagrees = sorted({*disagrees, *fixes.replaced, *fixes.in_part})
            if contradicts:  # held: the claims it contradicts say a change waits
                item = msgspec.structs.replace(item, metadata={**item.metadata, HELD_AGAINST: contradicts})
            elif disagrees:
                item = msgspec.structs.replace(item, metadata={**item.metadata, DISAGREES_WITH: disagrees})
        else:
            verdict = policy.evaluate(proposal, target_tier=item.tier, provenance=item.provenance)
        event = Event(
            # A forgotten item's id differs from its live copy's: importing it after that copy retracts it.
            event_id=stable_id("evt", "import", item.id, item.content_hash,
                               *(["retracted"] if item.validation == "retracted" else [])),
            kind="memory.write",
            identity=who,
            payload={"item": msgspec.to_builtins(item), "verdict": msgspec.to_builtins(verdict),
                     "reason": "import"},
        )
        if verdict.action == "reject":
            event.payload["item"] = {"id": item.id, "content_sha256": item.content_hash}
        landed = inbox.append([event])
        report.max_seq = max(report.max_seq, landed[0].seq)
        if landed[0].seq <= report.before_seq:
            report.already += 1
            continue
        report.proposals[verdict.action] += 1
    return report
