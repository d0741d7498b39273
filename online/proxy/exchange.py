"""One proxied chat/generate request: the four hooks of seed 000 §10, without any HTTP.

    ex = Exchange(service, settings, config, identity, CHAT, body)
    first = ex.prepare()                        # 1. recall + READ-ONLY block + instruction
    nxt, shown_calls = ex.after_round(sent, raw, visible, calls)   # 4. intercept, re-ask?
    ...
    loci = ex.finish(visible_text)              # 2. land turns + proposals, 3. Q* catalog

The HTTP layer (`online.proxy.app`) drives it for streamed and non-streamed answers alike
and runs these (blocking: SQLite, embeddings) methods in a worker thread.

Turns are landed once, after the upstream has answered, under deterministic ids derived
from the identity and the conversation: a client that retries the same request (or resends
history with a new question) never lands a turn twice.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import msgspec

from online.proxy.config import (
    NOTHING_FOUND_NOTE,
    RESULTS_INSTRUCTION,
    TEXT_RECALL_HINT,
    TOOLS_HINT,
    ProxyConfig,
    flag,
)
from online.proxy.dialects import ChatDialect, GenerateDialect
from online.proxy.memory_tools import MEMORY_TOOL_SPECS, PROPOSE_ACTIONS, READ_ACTIONS, call_name, is_loci_call
from online.state import MemoryService
from online.tools import ToolDispatcher, ToolError
from pipelines.capture import CaptureResult
from pipelines.materialize import message_item_id
from pipelines.records import Identity, sha256_text, stable_id
from pipelines.recall.intents import ToolCallError, canonical_tool_name, detect_recall_intent, parse_memory_tool_call
from pipelines.recall.render import format_entry, frame
from pipelines.settings import FLAG_DEFAULTS, Settings

log = logging.getLogger("loci.proxy")

Dialect = ChatDialect | GenerateDialect


def digest(value: Any) -> str:
    return sha256_text(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def max_rounds_text(rounds: int) -> str:
    return f"The memory lookup did not finish within {rounds} tool rounds."


@dataclass
class Exchange:
    service: MemoryService
    settings: Settings
    config: ProxyConfig
    identity: Identity
    dialect: Dialect
    body: dict[str, Any]
    flags: dict[str, bool] = field(init=False)
    injected_ids: list[str] = field(default_factory=list)
    intercepted: bool = False
    found_in_memory: bool | None = None
    rounds_done: int = 0
    tool_rounds: list[dict[str, Any]] = field(default_factory=list)
    proposing: list[dict[str, Any]] = field(default_factory=list)  # memory.propose calls
    ignored_calls: list[str] = field(default_factory=list)
    raw_texts: list[str] = field(default_factory=list)  # what the model said, per round
    visible_texts: list[str] = field(default_factory=list)
    unfinished: bool = False  # rounds ran out with memory calls still pending

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
        self.user_turn_id = stable_id("turn", "proxy", self.user_key)

    # -- 1. before the call -----------------------------------------------------------------

    def prepare(self) -> dict[str, Any]:
        """The body for the first upstream call: memory context and instruction injected."""
        blocks: list[str] = []
        text = self.user_text
        intent = detect_recall_intent(text) if text.strip() and self.flags["recall_interception"] else None
        if intent is not None:
            # The user asks memory directly: search first and give the model the result,
            # or say plainly that memory has nothing, so it does not improvise.
            self.intercepted = True
            found, block = self._search(intent.query, origin="user-intent")
            self.found_in_memory = found
            blocks += [block, RESULTS_INSTRUCTION] if found else [NOTHING_FOUND_NOTE.format(topic=repr(intent.query))]
        elif text.strip() and self.flags["context_injection"]:
            result = self.service.recall(text, self.identity)
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

    @property
    def offers_tools(self) -> bool:
        return self.flags["memory_tools"] and self.dialect.supports_tools

    @property
    def scans(self) -> bool:
        """Whether proposals are parsed out of the answer (never for structured output)."""
        return not self.structured

    def _instruction(self) -> str:
        if not (self.config.proposal_instruction and self.flags["post_response_scan"]) or self.structured:
            return ""
        parts = [self.config.proposal_instruction]
        if self.offers_tools:
            parts.append(TOOLS_HINT)
        if self.config.intercept_model_text and self.flags["recall_interception"]:
            parts.append(TEXT_RECALL_HINT)
        return " ".join(parts)

    # -- 4. after each upstream answer: intercept recall requests -------------------------------

    def split_calls(self, calls: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(Loci's memory.* calls, the client's calls)."""
        own = [c for c in calls if is_loci_call(c, self.client_tools)]
        return own, [c for c in calls if not is_loci_call(c, self.client_tools)]

    def after_round(self, sent: dict[str, Any], raw: str, visible: str,
                    calls: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """Record one upstream answer; return (the body to re-ask with, or None when this
        was the last round; the tool calls the client gets to see)."""
        self.raw_texts.append(raw)
        self.visible_texts.append(visible)
        own, client_calls = self.split_calls(calls)
        reads: list[tuple[str, dict[str, Any]]] = []
        read_calls: list[dict[str, Any]] = []
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
                    reads.append((req.name, args))
                    read_calls.append(call)
            else:  # memory.write / update / link / consolidate: the model only proposes
                self.ignored_calls.append(f"{name}: not allowed to the model")
        if client_calls or not self.flags["recall_interception"]:
            return None, client_calls  # the client's own tool loop comes first
        if self.rounds_done >= self.config.max_tool_rounds:
            self.unfinished = bool(reads) and not "".join(self.visible_texts).strip()
            return None, client_calls
        if reads:
            return self._answer_reads(sent, visible, read_calls, reads), client_calls
        if self.config.intercept_model_text and not self.structured and not self.text_intent_used:
            nxt = self._answer_text_intent(sent, visible)
            if nxt is not None:
                return nxt, client_calls
        return None, client_calls

    def _answer_reads(self, sent: dict[str, Any], said: str, calls: list[dict[str, Any]],
                      reads: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        self.rounds_done += 1
        self.intercepted = True
        messages, any_found, searched = [], False, []
        for action, args in reads:
            found, payload = self._run(action, args, origin="model-tool-call")
            any_found |= found
            if action == "memory.search":
                searched.append(str(args.get("query", "")))
            messages.append(self.dialect.tool_message(action, payload))
        self.found_in_memory = bool(self.found_in_memory) or any_found
        notes = [] if any_found else [NOTHING_FOUND_NOTE.format(
            topic=", ".join(repr(q) for q in searched if q) or "this request")]
        return self.dialect.reask_with_tools(sent, said, calls, messages, notes)

    def _answer_text_intent(self, sent: dict[str, Any], said: str) -> dict[str, Any] | None:
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
        blocks = [block, RESULTS_INSTRUCTION] if found else [NOTHING_FOUND_NOTE.format(topic=repr(intent.query))]
        return self.dialect.reask_with_context(sent, said, blocks)

    # -- memory reads ------------------------------------------------------------------------------

    def _dispatch(self, action: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            result = self.tools.dispatch(action, args, self.identity)["result"]
        except ToolError as exc:
            result = {"error": exc.message}
        if action == "memory.search" and "hits" in result:
            result = drop_recall_questions(result)
        return result

    def _run(self, action: str, args: dict[str, Any], *, origin: str) -> tuple[bool, str]:
        """Run a read action; (found, JSON payload for a tool message)."""
        if action == "memory.search":
            self.searched.add(str(args.get("query", "")).strip().lower())
        result = self._dispatch(action, args)
        found = found_in(action, result)
        ids = [h["id"] for h in result.get("hits", [])] if action == "memory.search" else \
            [i["id"] for i in result.get("items", []) if isinstance(i, dict) and "id" in i]
        self.seen_ids.update(ids)
        self.tool_rounds.append({"action": action, "args": args, "found": found, "origin": origin,
                                 "ids": ids})
        return found, json.dumps(compact(action, result), ensure_ascii=False)

    def _search_block(self, query: str, *, origin: str) -> tuple[bool, str, list[str]]:
        """Search; (found, READ-ONLY block of the hits, hit ids)."""
        self.searched.add(query.strip().lower())
        result = self._dispatch("memory.search", {"query": query})
        hits = result.get("hits", [])
        ids = [h["id"] for h in hits]
        entries = []
        view = self.service.current
        for item_id in ids:
            item = self.service.get_item(item_id, self.identity, view)
            if item is not None:
                entries.append(format_entry(item))
        found = bool(entries)
        self.tool_rounds.append({"action": "memory.search", "args": {"query": query}, "found": found,
                                 "origin": origin, "ids": ids})
        return found, (frame(entries) if entries else ""), ids

    def _search(self, query: str, *, origin: str) -> tuple[bool, str]:
        found, block, ids = self._search_block(query, origin=origin)
        self.seen_ids.update(ids)
        return found, block

    # -- 2 + 3. after the answer: land the turns, pre-return catalog --------------------------

    def assistant_turn_id(self, raw: str) -> str:
        return stable_id("turn", "proxy", self.user_key, "assistant",
                         digest(self.dialect.history(self.body)), sha256_text(raw))

    def finish(self, visible: str) -> dict[str, Any]:
        """Land the user and assistant turns (proposals governed by the policy), run the
        pre-return Q* pass; returns what goes in the response's `loci` field."""
        user_turn: CaptureResult | None = None
        if self.user_text.strip():
            user_turn = self.service.capture(self.identity, "user", self.user_text, turn_id=self.user_turn_id)
        raw = "\n\n".join(t for t in self.raw_texts if t.strip())
        said = "\n\n".join(t for t in self.visible_texts if t.strip())
        assistant: CaptureResult | None = None
        if self.flags["post_response_scan"] and self.scans:
            if raw.strip() or self.proposing:
                assistant = self.service.capture(self.identity, "assistant", raw,
                                                 tool_calls=self.proposing or None,
                                                 turn_id=self.assistant_turn_id(raw))
        elif said.strip():
            # Proposals are still kept from the user, but nothing proposed is stored.
            assistant = self.service.capture(self.identity, "assistant", said, parse=False,
                                             turn_id=self.assistant_turn_id(raw))
        out: dict[str, Any] = {
            "injected_ids": list(self.injected_ids),
            "intercepted": self.intercepted,
            "found_in_memory": self.found_in_memory,
            "tool_rounds": [{k: r[k] for k in ("action", "found", "origin", "ids")} for r in self.tool_rounds],
            "proposals": [{"title": p.title, "action": p.action, "item_id": p.item_id, "form": p.form,
                           "reasons": list(p.reasons)} for p in (assistant.proposals if assistant else [])],
            "turn_ids": {"user": user_turn.turn_id if user_turn else None,
                         "assistant": assistant.turn_id if assistant else None},
        }
        if self.ignored_calls:
            out["ignored_tool_calls"] = list(self.ignored_calls)
        if self.config.catalog_field:
            out["catalog"] = self._catalog(visible, user_turn, assistant)
        return out

    def _catalog(self, visible: str, *turns: CaptureResult | None) -> dict[str, Any]:
        """Pre-return Q* pass over question + answer; this exchange's own turns left out."""
        current = {message_item_id(t.turn_id) for t in turns if t}
        query = f"{self.user_text}\n{visible}".strip()
        if not query:
            return {"memory_catalog": []}
        result = self.service.recall(query, self.identity, mode="catalog", record_usage=False)
        entries = [e for e in (result.catalog or {}).get("memory_catalog", []) if e.get("id") not in current]
        return {**dict(result.catalog or {}), "memory_catalog": entries}



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
    return bool(result.get("items"))


def compact(action: str, result: dict[str, Any]) -> dict[str, Any]:
    """What the model gets back from a memory tool call."""
    if action == "memory.search" and "hits" in result:
        return {"found": result.get("found"), "message": result.get("message"),
                "hits": [{k: h[k] for k in ("id", "type", "tier", "title", "content", "tags")}
                         for h in result["hits"]]}
    return result
