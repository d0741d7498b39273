"""The chat-hook engine: one chat/generate exchange with memory, the four hooks around a
model call, without any HTTP.

    ex = Exchange(service, settings, config, identity, CHAT, body)
    sent = ex.prepare()                         # 1. recall + READ-ONLY block + instruction
    step = ex.after_round(sent, raw, visible, calls)   # 4. intercept: re-ask with step.reask?
    sent = shown.end_round(step, visible)       # a request to memory is never shown; re-ask?
    ex.add_closing(shown)                       # the engine's own last paragraph, if any
    loci = ex.finish(visible_text)              # 2. land turns + proposals, 3. Q* catalog

Two drivers: the proxy (`online.proxy.handlers`, streamed and not, the blocking methods in
a worker thread) and the in-process `online.middleware.MemoryMiddleware`.

Turns are landed once, after the upstream has answered, under deterministic ids derived
from the identity and the conversation: a client that retries the same request (or resends
history with a new question) never lands a turn twice.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from online.proxy.config import (
    NOTHING_FOUND_NOTE,
    NOTHING_NEW_NOTE,
    RESULTS_INSTRUCTION,
    TEXT_RECALL_HINT,
    TOOLS_HINT,
    ProxyConfig,
    flag,
)
from online.proxy.dialects import ChatDialect, GenerateDialect
from online.proxy.memory_tools import (
    CHANGE_ACTIONS,
    MEMORY_TOOL_SPECS,
    PROPOSE_ACTIONS,
    READ_ACTIONS,
    call_name,
    is_loci_call,
    retracts,
)
from online.schemas import MAX_QUERY_CHARS
from online.state import MemoryService
from online.tools import ToolDispatcher, ToolError
from pipelines.capture import CaptureResult
from pipelines.materialize import message_item_id
from pipelines.proposals import ProposalStreamFilter
from pipelines.recall.episodic import is_message, only_asks, says_something_asked
from pipelines.recall.intents import (
    RecallIntent,
    ToolCallError,
    canonical_tool_name,
    detect_recall_intent,
    parse_memory_tool_call,
    tool_arguments,
)
from pipelines.recall.lexical import normalise_label, query_terms
from pipelines.recall.query import asks_what_i_said
from pipelines.recall.render import format_entry, format_turn, frame
from pipelines.records import Identity, sha256_text, stable_id, time_zone
from pipelines.settings import FLAG_DEFAULTS, Settings

log = logging.getLogger("loci.proxy")

Dialect = ChatDialect | GenerateDialect
# A model's `recall <topic>` request may come wrapped in markdown (`recall x`, **recall x**).
REQUEST_LEAD = " \t\r\n`*>_"
REQUEST_START = re.compile(r"recall[\s:]", re.I)


def digest(value: Any) -> str:
    return sha256_text(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def listed_as_an_answer(hit: dict[str, Any]) -> bool:
    """A searched turn a listing found as an answer whatever its words: said on the day the
    question names ("what did we talk about yesterday?"), or the caller's own words about
    themselves ("what do you know about me?"); ranked by that channel (`rank_said_when`,
    `rank_self` in its components)."""
    comps = hit.get("components") or {}
    return bool(comps.get("rank_said_when") or comps.get("rank_self"))


def max_rounds_text(rounds: int) -> str:
    return f"The memory lookup did not finish within {rounds} tool rounds."


def nothing_found_answer(topic: str) -> str:
    """The engine's own answer when a recall finds nothing and the driver does not let the
    model answer (`Exchange.answers_nothing_found`)."""
    return (f"I found nothing in memory about {topic.strip()!r}, so I cannot recall it. "
            "If you tell me, I can remember it from now on.")


def cut_at(raw: str, visible: str, at: int) -> str:
    """`raw` without the request line that starts at `visible[at:]` (and what follows it)."""
    line = visible[at:].split("\n", 1)[0]
    where = raw.find(line) if line else -1
    return raw[:where] if where >= 0 else visible[:at]


def visible_of(raw: str) -> str:
    """The answer without proposals: the same filter as for streams, in one go."""
    filt = ProposalStreamFilter()
    head_text = filt.feed(raw)
    return head_text + filt.finish()[0]


class VisibleText:
    """What the user has been shown across rounds; a re-asked round's text starts on a
    new paragraph."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._new_round = False

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def start_round(self) -> None:
        self._new_round = bool(self.parts)

    def emit(self, piece: str) -> str:
        if not piece:
            return ""
        if self._new_round:
            self._new_round = False
            shown = self.text
            if shown and not shown[-1].isspace() and not piece[0].isspace():
                piece = "\n\n" + piece
        self.parts.append(piece)
        return piece

    def end_round(self, step: RoundResult, visible: str) -> dict[str, Any] | None:
        """Show what a round's text shows (`RoundResult.shown`); the body of the next round
        (started here) when the round asked again, else None: that was the last round."""
        self.emit(step.shown(visible))
        if step.reask is not None:
            self.start_round()
        return step.reask


class RequestHold:
    """Holds back a streamed line while it may still be a `recall <topic>` request
    (`Exchange.find_request`): such a request is for Loci, so it never reaches the user.
    The first line that starts like one is held to the end of the round (the driver then
    drops it, or releases it when it was not a request); any other line passes as soon as
    it cannot be one."""

    def __init__(self, active: bool) -> None:
        self.held = ""
        self.active = active
        self.holding = False  # a line started like a request: everything after is held
        self.mid_line = False  # inside a line already judged not to be a request

    def feed(self, piece: str) -> str:
        if not self.active:
            return piece
        if self.holding:
            self.held += piece
            return ""
        out = ""
        if self.mid_line:
            before, nl, piece = piece.partition("\n")
            out += before + nl
            if not nl:
                return out
            self.mid_line = False
        self.held += piece
        while self.held:
            line, nl, rest = self.held.partition("\n")
            head = line.lstrip(REQUEST_LEAD)
            if REQUEST_START.match(head):
                self.holding = True
                return out
            if not nl:
                if "recall".startswith(head.lower()):
                    return out  # too short to tell
                out, self.held, self.mid_line = out + self.held, "", True
                return out
            out, self.held = out + line + nl, rest
        return out

    def release(self) -> str:
        """What is held, now (the round ended and it was not a request)."""
        out, self.held, self.holding = self.held, "", False
        return out


@dataclass
class ToolRound:
    """One memory read the engine ran: who asked (`origin`: user-intent, model-tool-call,
    model-text) and what came back."""

    action: str
    args: dict[str, Any]
    found: bool
    origin: str
    ids: list[str] = field(default_factory=list)


@dataclass
class RoundResult:
    """What to do after one model answer."""

    reask: dict[str, Any] | None  # the body to ask again with; None: that was the last round
    client_calls: list[dict[str, Any]]  # the tool calls the client gets to see
    request_at: int | None = None  # the round's text from here on was a request to memory

    @property
    def withhold(self) -> bool:
        return self.request_at is not None

    def shown(self, visible: str) -> str:
        """The part of the round's text the user sees."""
        return visible if self.request_at is None else visible[: self.request_at]


@dataclass
class Exchange:
    """One exchange. `answers_nothing_found`: when a recall (the user's phrasing or a
    model's memory call) finds nothing, the engine answers "nothing in memory" itself
    (`answer`) instead of telling the model so; the proxy leaves it off so the answer keeps
    the model's voice and stream."""

    service: MemoryService
    settings: Settings
    config: ProxyConfig
    identity: Identity
    dialect: Dialect
    body: dict[str, Any]
    answers_nothing_found: bool = False
    tz: str | None = None  # the user's IANA zone ("yesterday" is theirs); None: `Settings.timezone`
    flags: dict[str, bool] = field(init=False)
    injected_ids: list[str] = field(default_factory=list)
    intercepted: bool = False
    found_in_memory: bool | None = None
    rounds_done: int = 0
    tool_rounds: list[ToolRound] = field(default_factory=list)
    proposing: list[dict[str, Any]] = field(default_factory=list)  # memory.propose calls
    forgot: list[str] = field(default_factory=list)  # what the model's calls retracted for the user
    ignored_calls: list[str] = field(default_factory=list)
    raw_texts: list[str] = field(default_factory=list)  # what the model said, per round
    visible_texts: list[str] = field(default_factory=list)
    unfinished: bool = False  # rounds ran out with memory requests still pending
    answer: str | None = None  # the engine's own answer: the model is not asked (again)
    user_turn: CaptureResult | None = None
    assistant_turn: CaptureResult | None = None

    def __post_init__(self) -> None:
        # One consistent set of flags for the whole request, even if they flip meanwhile.
        self.flags = {name: flag(self.settings, name) for name in FLAG_DEFAULTS}
        self.structured = self.dialect.structured(self.body)
        self.user_text = self.dialect.user_text(self.body)
        self.client_tools = self.dialect.client_tool_names(self.body)
        self.tools = ToolDispatcher(self.service)
        self.searched: set[str] = set()
        self.seen_ids: set[str] = set()  # ids the model has been shown in this exchange
        self.text_intent_used = False
        who = msgspec.to_builtins(self.identity)
        self.user_key = digest([who, self.dialect.name, self.dialect.history_until_user(self.body)])
        # The conversation the client sent: its turns are in the model's context already.
        self.said = self.dialect.earlier_texts(self.body)
        # "What did I tell you about penicillin?": searched as its subject ("penicillin"), so
        # every recall of the exchange is told that the user asks for their own words.
        self.own_words = asks_what_i_said(self.user_text)
        self.user_turn_id = stable_id("turn", "proxy", self.user_key)

    # -- 1. before the call -----------------------------------------------------------------

    def prepare(self) -> dict[str, Any]:
        """The body for the first model call: memory context and instruction injected.
        With `answer` set afterwards, the model need not be called."""
        blocks: list[str] = []
        text = self.user_text
        intent = detect_recall_intent(text) if text.strip() and self.flags["recall_interception"] else None
        if intent is not None:
            # The user asks memory directly: search first and give the model the result,
            # or say plainly that memory has nothing, so it does not improvise.
            self.intercepted = True
            found, block = self._search(intent.query, origin="user-intent")
            self.found_in_memory = found
            if found:
                blocks += [block, RESULTS_INSTRUCTION]
            else:
                blocks.append(self._nothing_found(repr(intent.query), intent.query))
        elif text.strip() and self.flags["context_injection"]:
            result = self.service.recall(recall_query(text), self.identity, said=self.said, tz=self.tz,
                                         own_words=self.own_words)
            if result.injection:
                blocks.append(result.injection)
                self.injected_ids = [h.item.id for h in result.hits if getattr(h, "delivery", "inject") == "inject"]
                self.seen_ids.update(self.injected_ids)
        instruction = self._instruction()
        if instruction:
            blocks.append(instruction)
        body = self.dialect.inject(self.body, blocks)
        if self.offers_tools:
            body = self.dialect.add_tools(body, MEMORY_TOOL_SPECS)
        return body

    def _nothing_found(self, topic: str, query: str) -> str:
        """The note for the model that memory has nothing (or, when the engine answers
        itself, that answer, and no note)."""
        if self.answers_nothing_found:
            self.answer = nothing_found_answer(query)
            return ""
        return NOTHING_FOUND_NOTE.format(topic=topic)

    @property
    def offers_tools(self) -> bool:
        return self.flags["memory_tools"] and self.dialect.supports_tools

    @property
    def scans(self) -> bool:
        """Whether proposals are parsed out of the answer (never for structured output)."""
        return not self.structured

    @property
    def reads_model_text(self) -> bool:
        """Whether recall phrasing in the model's text is acted on."""
        return self.config.intercept_model_text and self.flags["recall_interception"] and not self.structured

    def _instruction(self) -> str:
        if not (self.config.proposal_instruction and self.flags["post_response_scan"]) or self.structured:
            return ""
        parts = [self.config.proposal_instruction]
        if self.offers_tools:
            parts.append(TOOLS_HINT)
        if self.reads_model_text:
            parts.append(TEXT_RECALL_HINT)
        return " ".join(parts)

    # -- 4. after each model answer: intercept requests to memory -------------------------------

    def split_calls(self, calls: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(Loci's memory.* calls, the client's calls)."""
        own = [c for c in calls if is_loci_call(c, self.client_tools)]
        return own, [c for c in calls if not is_loci_call(c, self.client_tools)]

    @property
    def takes_requests(self) -> bool:
        """Whether a `recall <topic>` line in the model's answer is a request to Loci."""
        return self.reads_model_text and "recall" in self.config.model_text_triggers

    def find_request(self, said: str) -> tuple[int, RecallIntent] | None:
        """Where the answer holds the `recall <topic>` request the instruction offers the
        model (`TEXT_RECALL_HINT`) and what it asks: the first line that starts like one.
        Such a request is for Loci, never for the user."""
        if not self.takes_requests:
            return None
        at = 0
        for line in said.split("\n"):
            head = line.lstrip(REQUEST_LEAD)
            if REQUEST_START.match(head):
                intent = detect_recall_intent(head.replace("`", " ").strip())
                return (at, intent) if intent is not None and intent.trigger == "recall" else None
            at += len(line) + 1
        return None

    def after_round(self, sent: dict[str, Any], raw: str, visible: str,
                    calls: list[dict[str, Any]]) -> RoundResult:
        """Record one model answer; say whether to re-ask, and what of its text is shown."""
        own, client_calls = self.split_calls(calls)
        reads = self._sort_calls(own)
        found = None if client_calls else self.find_request(visible)
        at, request = found if found is not None else (None, None)
        self.raw_texts.append(raw if at is None else cut_at(raw, visible, at))
        self.visible_texts.append(visible if at is None else visible[:at])
        if client_calls or not self.flags["recall_interception"]:
            return RoundResult(None, client_calls)  # the client's own tool loop comes first
        if self.rounds_done >= self.config.max_tool_rounds:
            pending = request is not None or (bool(reads) and not "".join(self.visible_texts).strip())
            self.unfinished = pending and self.answer is None
            return RoundResult(None, client_calls, at)
        if reads:
            return RoundResult(self._answer_reads(sent, visible, reads), client_calls)
        if request is not None:
            return RoundResult(self._answer_request(sent, visible, request), client_calls, at)
        if self.reads_model_text and not self.text_intent_used:
            return RoundResult(self._answer_text_intent(sent, visible), client_calls)
        return RoundResult(None, client_calls)

    def _sort_calls(self, own: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        """Loci's calls of one answer: proposals kept for landing, reads and the changes the
        model may ask for (`CHANGE_ACTIONS`, when the tools are offered) returned as (action,
        arguments, call); other writes refused."""
        reads = []
        for call in own:
            name = canonical_tool_name(call_name(call))
            if name in PROPOSE_ACTIONS:
                self.proposing.append(call)
            elif name in READ_ACTIONS:
                try:
                    req = parse_memory_tool_call(call)
                except ToolCallError as exc:
                    self.ignored_calls.append(f"{name}: {exc}")
                    continue
                if req is not None:
                    args = {k: v for k, v in msgspec.to_builtins(req.arguments).items() if v not in (None, [], "")}
                    args.pop("mode", None)
                    reads.append((req.name, args, call))
            elif name in CHANGE_ACTIONS and self.offers_tools:
                # The user's "forget X" / "change X to Y": run as the user, governed by the
                # dispatcher (policy, audit, held for review when it is someone else's claim).
                try:
                    reads.append((name, tool_arguments(call.get("function", call).get("arguments")), call))
                except ToolCallError as exc:
                    self.ignored_calls.append(f"{name}: {exc}")
            else:  # memory.write / link / consolidate / review, or a change not offered
                self.ignored_calls.append(f"{name}: not allowed to the model")
        return reads

    def _answer_reads(self, sent: dict[str, Any], said: str,
                      reads: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> dict[str, Any] | None:
        self.rounds_done += 1
        self.intercepted = True
        messages, any_found, searched = [], False, []
        for action, args, call in reads:
            found, payload = self._run(action, args, origin="model-tool-call")
            any_found |= found
            if action == "memory.search":
                searched.append(str(args.get("query", "")))
            messages.append(self.dialect.tool_message(action, payload, call.get("id")))
        self.found_in_memory = bool(self.found_in_memory) or any_found
        notes = [] if any_found else [self._nothing_found(
            ", ".join(repr(q) for q in searched if q) or "this request",
            ", ".join(q for q in searched if q) or self.user_text)]
        if self.answer is not None:
            return None
        return self.dialect.reask_with_tools(sent, said, [c for _, _, c in reads], messages, notes)

    def _answer_request(self, sent: dict[str, Any], said: str, request: RecallIntent) -> dict[str, Any] | None:
        """Answer the model's `recall <topic>`: new results, or a note that memory holds
        nothing more (everything found was already shown, or it asked before)."""
        self.rounds_done += 1
        self.intercepted = True
        query = request.query
        if query.strip().lower() in self.searched:
            found, block, new = True, "", False
        else:
            found, block, ids = self._search_block(query, origin="model-text")
            new = not set(ids) <= self.seen_ids
            self.seen_ids.update(ids)
            self.found_in_memory = bool(self.found_in_memory) or found
        if found and new:
            blocks = [block, RESULTS_INSTRUCTION]
        elif found:
            blocks = [NOTHING_NEW_NOTE.format(topic=repr(query))]
        else:
            blocks = [self._nothing_found(repr(query), query)]
        if self.answer is not None:
            return None
        return self.dialect.reask_with_context(sent, said, blocks)

    def _answer_text_intent(self, sent: dict[str, Any], said: str) -> dict[str, Any] | None:
        """Recall phrasing inside the model's answer ("as we decided earlier"): one search
        and one re-ask, only when it finds something the model has not seen."""
        intent = detect_recall_intent(said) if said.strip() else None
        if intent is None or intent.trigger not in self.config.model_text_triggers \
                or intent.query.strip().lower() in self.searched:
            return None
        self.text_intent_used = True
        found, block, ids = self._search_block(intent.query, origin="model-text")
        if found and set(ids) <= self.seen_ids:
            return None  # the model already had all of it in its context
        self.rounds_done += 1
        self.intercepted = True
        self.found_in_memory = bool(self.found_in_memory) or found
        blocks = [block, RESULTS_INSTRUCTION] if found else [self._nothing_found(repr(intent.query), intent.query)]
        if self.answer is not None:
            return None
        return self.dialect.reask_with_context(sent, said, blocks)

    def closing_text(self) -> str:
        """A last paragraph the engine adds to what the user sees: its own answer, or that
        the memory lookup ran out of rounds."""
        if self.answer is not None:
            return self.answer
        if self.unfinished:
            return max_rounds_text(self.config.max_tool_rounds)
        return ""

    def add_closing(self, shown: VisibleText) -> str:
        """Add the closing paragraph (if any) to what the user sees; the text added."""
        closing = self.closing_text()
        if not closing:
            return ""
        shown.start_round()
        return shown.emit(closing)

    # -- memory reads ------------------------------------------------------------------------------

    def _dispatch(self, action: str, args: dict[str, Any]) -> dict[str, Any]:
        if action == "memory.search" and isinstance(args, dict):
            if self.tz is not None and "tz" not in args:
                args = {**args, "tz": self.tz}  # the model's search too reads "yesterday" as the user's
            if self.own_words:
                args = {**args, "own_words": True}  # and looks for the user's own words first
        try:
            result = self.tools.dispatch(action, args, self.identity)["result"]
        except ToolError as exc:
            result = {"error": exc.message}
        if action == "memory.search" and "hits" in result:
            result = drop_recall_questions(result)
        return result

    def _run(self, action: str, args: dict[str, Any], *, origin: str) -> tuple[bool, str]:
        """Run a read action (or a change the model may ask for); (found, JSON payload for a
        tool message)."""
        if action == "memory.search":
            self.searched.add(str(args.get("query", "")).strip().lower())
        result = self._dispatch(action, args)
        found = found_in(action, result)
        ids = [h["id"] for h in result.get("hits", [])] if action == "memory.search" else \
            [i["id"] for i in result.get("items", []) if isinstance(i, dict) and "id" in i] + \
            ([result["item_id"]] if action in CHANGE_ACTIONS and "item_id" in result else [])
        self.seen_ids.update(ids)
        self.tool_rounds.append(ToolRound(action, args, found, origin, ids))
        accepted = (result.get("verdict") or {}).get("action") == "accept"  # not held for review
        if action in CHANGE_ACTIONS and retracts(action, args) and accepted:
            self.forgot.append(str(result["item_id"]))  # this round's turns are forgotten with it
        return found, json.dumps(compact(action, result), ensure_ascii=False)

    def _search_block(self, query: str, *, origin: str) -> tuple[bool, str, list[str]]:
        """Search; (found, READ-ONLY block of the hits, hit ids). The block is recall's:
        curated memories under the authoritative footer, raw turns apart as what was said
        (dated on the user's calendar), and a turn that only asks, or whose own words share
        none with the query, left out (it states nothing asked; the search lists it), as is
        a turn of this conversation (the model has it)."""
        self.searched.add(query.strip().lower())
        result = self._dispatch("memory.search", {"query": query})
        hits = result.get("hits", [])
        ids = [h["id"] for h in hits]
        entries: list[str] = []
        turns: list[str] = []
        view = self.service.current
        now = datetime.now(time_zone(self.tz or self.settings.timezone))  # days on the user's calendar
        # As in an injected recall, a turn found only through its neighbours ("Good choice.")
        # says nothing asked: its neighbour is the evidence (`says_something_asked`), unless
        # a listing found it as an answer; nor one of this conversation: the model has it.
        terms = query_terms(query)
        in_chat = {normalise_label(text) for text in self.said}
        for hit in hits:
            item = self.service.get_item(hit["id"], self.identity, view)
            if item is None:
                continue
            if not is_message(item):
                entries.append(format_entry(item, pending=hit.get("pending_review", ""), now=now))
            elif normalise_label(item.content) in in_chat:
                continue
            elif not only_asks(item) and (says_something_asked(item, terms) or listed_as_an_answer(hit)):
                turns.append(format_turn(item, zone=now.tzinfo))
        found = bool(entries or turns)
        self.tool_rounds.append(ToolRound("memory.search", {"query": query}, found, origin, ids))
        return found, (frame(entries, turns=turns) if found else ""), ids

    def _search(self, query: str, *, origin: str) -> tuple[bool, str]:
        found, block, ids = self._search_block(query, origin=origin)
        self.seen_ids.update(ids)
        return found, block

    # -- 2 + 3. after the answer: land the turns, pre-return catalog --------------------------

    def assistant_turn_id(self, raw: str) -> str:
        # The proposing tool calls are said too: a regenerated answer proposing other items
        # is another turn, not a retry whose proposals the inbox would drop.
        calls = [digest(self.proposing)] if self.proposing else []
        return stable_id("turn", "proxy", self.user_key, "assistant",
                         digest(self.dialect.history(self.body)), sha256_text(raw), *calls)

    def finish(self, visible: str) -> dict[str, Any]:
        """Land the user and assistant turns (proposals governed by the policy), run the
        pre-return Q* pass; returns what goes in the response's `loci` field. The engine's
        own answers and the model's requests to memory are not landed as something said."""
        if self.user_text.strip():
            self.user_turn = self.service.capture(self.identity, "user", self.user_text,
                                                  turn_id=self.user_turn_id, forgot=self.forgot)
        self.assistant_turn = self._land_assistant()
        assistant = self.assistant_turn
        out: dict[str, Any] = {
            "injected_ids": list(self.injected_ids),
            "intercepted": self.intercepted,
            "found_in_memory": self.found_in_memory,
            "tool_rounds": [{"action": r.action, "found": r.found, "origin": r.origin, "ids": r.ids}
                            for r in self.tool_rounds],
            "proposals": [{"title": p.title, "action": p.action, "item_id": p.item_id, "form": p.form,
                           "reasons": list(p.reasons), "scope": p.scope, "supersedes": list(p.supersedes)}
                          for p in (assistant.proposals if assistant else [])],
            "turn_ids": {"user": self.user_turn.turn_id if self.user_turn else None,
                         "assistant": assistant.turn_id if assistant else None},
        }
        if self.ignored_calls:
            out["ignored_tool_calls"] = list(self.ignored_calls)
        if self.config.catalog_field:
            out["catalog"] = self._catalog(visible, self.user_turn, assistant)
        return out

    def _land_assistant(self) -> CaptureResult | None:
        raw = "\n\n".join(t for t in self.raw_texts if t.strip())
        said = "\n\n".join(t for t in self.visible_texts if t.strip())
        if self.flags["post_response_scan"] and self.scans:
            if raw.strip() or self.proposing:
                return self.service.capture(self.identity, "assistant", raw,
                                            tool_calls=self.proposing or None,
                                            turn_id=self.assistant_turn_id(raw), answers=self.user_text,
                                            zone=self.tz, forgot=self.forgot)
        elif said.strip():
            # Proposals are still kept from the user, but nothing proposed is stored.
            return self.service.capture(self.identity, "assistant", said, parse=False,
                                        turn_id=self.assistant_turn_id(said), forgot=self.forgot)
        return None

    def _catalog(self, visible: str, *turns: CaptureResult | None) -> dict[str, Any]:
        """Pre-return Q* pass over question + answer; this exchange's own turns, and the
        memories its answer just proposed (the user said them a moment ago), left out."""
        current = {message_item_id(t.turn_id) for t in turns if t}
        current.update(p.item_id for t in turns if t for p in t.proposals if p.item_id)
        query = f"{recall_query(self.user_text)}\n{recall_query(visible)}".strip()
        if not query:
            return {"memory_catalog": []}
        result = self.service.recall(query, self.identity, mode="catalog", record_usage=False, said=self.said,
                                     tz=self.tz)
        entries = [e for e in (result.catalog or {}).get("memory_catalog", []) if e.get("id") not in current]
        return {**dict(result.catalog or {}), "memory_catalog": entries}


def recall_query(text: str) -> str:
    """What recall reads of a chat message: all of it up to the API's limit, else its start
    and end (a pasted log with the question before or after it). A recall's cost grows with
    its query: a 1.7 MB message took 4 s before the model call and 14 s after it."""
    if len(text) <= MAX_QUERY_CHARS:
        return text
    half = MAX_QUERY_CHARS // 2
    return f"{text[:half]}\n{text[-half:]}"


def drop_recall_questions(result: dict[str, Any]) -> dict[str, Any]:
    """A stored chat turn that was itself a recall request ("what did we decide about X?")
    is not evidence about X: dropped, so "nothing in memory" never quotes the question back."""
    hits = [h for h in result["hits"]
            if not (h.get("type") == "message" and detect_recall_intent(h.get("content", "")))]
    if len(hits) == len(result["hits"]):
        return result
    return {**result, "hits": hits, "found": bool(hits)}


def found_in(action: str, result: dict[str, Any]) -> bool:
    if "error" in result:
        return False
    if action == "memory.search":
        return bool(result.get("found"))
    if action == "memory.palace.list":
        return bool(result.get("children"))
    if action in CHANGE_ACTIONS:
        return True  # done, or held for review: the verdict says which
    # memory.read: what became of an id no longer served (merged, replaced, archived) answers too
    return any(result.get(key) for key in ("items", "merged_into", "superseded_by", "archived"))


def compact(action: str, result: dict[str, Any]) -> dict[str, Any]:
    """What the model gets back from a memory tool call."""
    if action == "memory.search" and "hits" in result:
        return {"found": result.get("found"), "message": result.get("message"),
                "hits": [{k: h[k] for k in ("id", "type", "tier", "title", "content", "tags", "pending_review")
                          if k in h} for h in result["hits"]]}
    return result
