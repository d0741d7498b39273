"""The in-process chat middleware: four hooks around any LLM call (seed 000 §10).

    mw = MemoryMiddleware(service, llm, settings)
    outcome = mw.chat(messages, identity)      # outcome.text is what the user sees

`llm(messages) -> str | dict` is any chat function (an Ollama `/api/chat` response dict,
`{"content", "tool_calls"}`, or a plain string). The hooks:

1. **Before the call** (`context_injection`): recall on the last user message and inject
   the `PERSISTENT MEMORY (READ-ONLY)` block as a system message, plus the proposal
   instruction (seed 000 §5.1; configurable, `None` disables it).
2. **After the call** (`post_response_scan`): the reply is parsed for proposals (tool call,
   `<MEMORY_PROPOSALS_JSON>`, narrated `memory_save`), each governed by the policy, and the
   user and assistant turns are captured. With the flag off the proposals are still
   stripped from what the user sees but nothing proposed is stored.
3. **Before returning**: a Q* recall pass over question + answer; its catalog is attached
   to the outcome (`outcome.catalog`).
4. **Intercept** (`recall_interception`): recall phrasing in the user message
   (`pipelines.recall.intents`) runs a memory search first; a `memory.search` /
   `memory.read` / `memory.palace.*` tool call from the model runs the action and re-asks
   the model with the results, at most `max_tool_rounds` times. When a search finds
   nothing the answer says so explicitly and the model is not asked to improvise. Stored
   turns that were themselves recall requests are not counted as evidence, and the
   service's own "nothing found" answer is not stored as an assistant turn.

Both turns are captured after the model has answered, so a turn is never recalled as
evidence for itself; the pre-return catalog leaves them out too.

The model can only *propose* memory: write-type memory.* tool calls from the model
(write, update, link, consolidate) are not executed (seed 002: memory is read-only to the
model); they are listed in `outcome.ignored_tool_calls`.

`enabled = false` turns the middleware into a pass-through. Flags missing from
`settings.flags` count as on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from online.state import MemoryService
from online.tools import ToolDispatcher, ToolError
from pipelines.capture import CaptureResult, ProposalOutcome
from pipelines.materialize import message_item_id
from pipelines.proposals import parse_assistant_output
from pipelines.records import Identity
from pipelines.recall.intents import (
    ToolCallError,
    canonical_tool_name,
    detect_recall_intent,
    parse_memory_tool_call,
)
from pipelines.recall.render import format_entry, frame
from pipelines.settings import Settings

log = logging.getLogger("loci.middleware")

DEFAULT_PROPOSAL_INSTRUCTION = (
    "MEMORY PROPOSALS: if you see information that should persist (decisions, constraints, "
    "definitions, preferences, durable facts), emit `memory.propose` with concise items, tags "
    "and provenance hints. If you cannot call tools, append after your answer a block "
    '<MEMORY_PROPOSALS_JSON>[{"type": "decision", "title": "...", "content": "...", '
    '"tags": ["..."], "why_store": "..."}]</MEMORY_PROPOSALS_JSON>; it is removed before the '
    "user sees your answer. Do not include secrets. To look something up in memory, call "
    "`memory.search` with a query instead of guessing."
)
RESULTS_INSTRUCTION = (
    "The memory search results above are everything memory holds on this question. Answer "
    "only from them; if they do not answer the question, say that memory does not contain it."
)
READ_ACTIONS = frozenset({"memory.search", "memory.read", "memory.palace.list", "memory.palace.get"})
MEMORY_WRITE_ACTIONS = frozenset({"memory.write", "memory.update", "memory.link", "memory.consolidate"})


class MiddlewareError(ValueError):
    """Bad input to `chat` (messages not a list of {role, content} dicts, an llm reply of
    an unknown shape)."""


@dataclass
class ToolRound:
    action: str
    args: dict[str, Any]
    found: bool
    result: dict[str, Any]
    origin: str  # "user-intent" | "model-tool-call"


@dataclass
class ChatOutcome:
    text: str  # the answer the user sees
    found_in_memory: bool | None = None  # set when a recall request was intercepted
    injected_ids: list[str] = field(default_factory=list)
    recall: Any | None = None  # the pre-call RecallResult
    catalog: dict[str, Any] = field(default_factory=dict)  # the pre-return Q* pass
    catalog_ids: list[str] = field(default_factory=list)
    proposals: list[ProposalOutcome] = field(default_factory=list)
    user_turn: CaptureResult | None = None
    assistant_turn: CaptureResult | None = None
    tool_rounds: list[ToolRound] = field(default_factory=list)
    ignored_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    intercepted: bool = False
    llm_calls: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)  # last list sent to the llm
    raw_reply: Any = None


def split_reply(reply: Any) -> tuple[str, list[dict[str, Any]]]:
    """(text, tool calls) of an llm reply: a string, `{"content", "tool_calls"}`, or an
    Ollama/OpenAI-style `{"message": {...}}`."""
    if isinstance(reply, str):
        return reply, []
    if isinstance(reply, dict):
        msg = reply.get("message", reply)
        if isinstance(msg, dict):
            text = msg.get("content") or ""
            calls = msg.get("tool_calls") or []
            if isinstance(text, str) and isinstance(calls, list):
                return text, [c for c in calls if isinstance(c, dict)]
    raise MiddlewareError(f"llm reply must be a string or a chat message dict, got {type(reply).__name__}")


def _check_messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise MiddlewareError("messages must be a list of {role, content} dicts")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise MiddlewareError(f"messages[{i}] must be a dict with a string 'role'")
        if not isinstance(m.get("content", ""), str):
            raise MiddlewareError(f"messages[{i}]['content'] must be a string")
        out.append(dict(m))
    return out


def _results_block(hits: list[dict[str, Any]], service: MemoryService, identity: Identity) -> str:
    """The search hits as a READ-ONLY memory block (same format as the injection)."""
    entries = []
    for h in hits:
        item = service.get_item(h["id"], identity, service.current)
        if item is not None:
            entries.append(format_entry(item))
    return frame(entries) if entries else ""


class MemoryMiddleware:
    def __init__(
        self,
        service: MemoryService,
        llm: Callable[[list[dict[str, Any]]], dict[str, Any] | str],
        settings: Settings | None = None,
        *,
        proposal_instruction: str | None = DEFAULT_PROPOSAL_INSTRUCTION,
        max_tool_rounds: int = 2,
    ) -> None:
        if not callable(llm):
            raise MiddlewareError("llm must be callable: llm(messages) -> str | dict")
        if max_tool_rounds < 0:
            raise MiddlewareError("max_tool_rounds must be >= 0")
        self.service = service
        self.llm = llm
        self.settings = settings or service.settings
        self.proposal_instruction = proposal_instruction
        self.max_tool_rounds = max_tool_rounds
        self.tools = ToolDispatcher(service)

    def flag(self, name: str) -> bool:
        flags = self.settings.flags
        return bool(flags.get("enabled", True)) and bool(flags.get(name, True))

    # -- the loop ------------------------------------------------------------------------------

    def chat(self, messages: Sequence[dict[str, Any]], identity: Identity) -> ChatOutcome:
        msgs = _check_messages(messages)
        if not isinstance(identity, Identity):
            raise MiddlewareError("identity must be a pipelines.records.Identity")
        if not self.settings.flags.get("enabled", True):
            reply = self.llm(msgs)
            text, _ = split_reply(reply)
            return ChatOutcome(text=text, llm_calls=1, messages=msgs, raw_reply=reply)

        out = ChatOutcome(text="")
        user_text = next((m.get("content", "") for m in reversed(msgs) if m["role"] == "user"), "")
        system: list[str] = []

        # 4a. Recall phrasing in the user's message: search memory before the model speaks.
        intent = detect_recall_intent(user_text) if user_text and self.flag("recall_interception") else None
        if intent is not None:
            out.intercepted = True
            found, block = self._run_tool("memory.search", {"query": intent.query}, identity,
                                          out, origin="user-intent")
            out.found_in_memory = found
            if not found:
                out.user_turn = self._capture(identity, "user", user_text)
                out.text = self._not_found(intent.query)
                self._pre_return(out, identity, user_text)
                return out
            system += [block, RESULTS_INSTRUCTION]

        # 1. Pre-call injection of relevant memory (read-only block).
        if user_text.strip() and self.flag("context_injection") and intent is None:
            result = self.service.recall(user_text, identity)
            out.recall = result
            if result.injection:
                system.append(result.injection)
                out.injected_ids = [h.item.id for h in result.hits if h.delivery == "inject"]
        if self.proposal_instruction and self.flag("post_response_scan"):
            system.append(self.proposal_instruction)

        convo = self._with_system(msgs, system)
        text, calls, reply = self._ask(convo, out)
        proposing = [c for c in calls if not self._is_read_call(c)]  # memory.propose & co.
        spoke = text  # what the model itself last said (captured as the assistant turn)
        generated = False  # True when the answer is the service's explicit "nothing found"

        # 4b. Memory tool calls from the model: run them, re-ask with the results.
        rounds = 0
        while calls and self.flag("recall_interception") and rounds < self.max_tool_rounds:
            reads = self._read_calls(calls, out)
            if not reads:
                break
            rounds += 1
            convo.append({"role": "assistant", "content": text, "tool_calls": calls})
            any_found = False
            searched: list[str] = []
            for action, args, call_id in reads:
                found, payload = self._run_tool(action, args, identity, out, origin="model-tool-call",
                                                as_json=True)
                any_found |= found
                if action == "memory.search":
                    searched.append(str(args.get("query", "")))
                msg = {"role": "tool", "content": payload, "name": action}
                if call_id:
                    msg["tool_call_id"] = call_id
                convo.append(msg)
            out.intercepted = True
            out.found_in_memory = bool(out.found_in_memory) or any_found
            if not any_found:
                # Nothing in memory: say so instead of letting the model make something up.
                text, calls, generated = self._not_found(", ".join(q for q in searched if q) or user_text), [], True
                break
            text, calls, reply = self._ask(convo, out)
            proposing += [c for c in calls if not self._is_read_call(c)]
            spoke = text
        if rounds and not generated and not text.strip() and calls:
            text = f"The memory lookup did not finish within {self.max_tool_rounds} tool rounds."
            generated = True

        # 2. Post-call: both turns captured (only now, so this exchange is never recalled as
        # its own evidence), proposals governed and stored with the assistant turn. An answer
        # the service wrote itself ("nothing found") is not stored as something said.
        if user_text.strip():
            out.user_turn = self._capture(identity, "user", user_text)
        if self.flag("post_response_scan"):
            if not generated or proposing:
                turn = self._capture(identity, "assistant", spoke, tool_calls=proposing or None)
                out.assistant_turn = turn
                out.proposals = list(turn.proposals)
            out.text = text if generated else out.assistant_turn.visible_text  # type: ignore[union-attr]
        else:
            visible = parse_assistant_output(text, None).visible_text
            if not generated:
                out.assistant_turn = self._capture(identity, "assistant", visible, parse=False)
            out.text = visible
        out.raw_reply = reply

        # 3. Pre-return Q* pass: the catalog of what memory holds around question + answer.
        self._pre_return(out, identity, f"{user_text}\n{out.text}".strip())
        return out

    # -- helpers -------------------------------------------------------------------------------

    def _ask(self, convo: list[dict[str, Any]], out: ChatOutcome) -> tuple[str, list[dict], Any]:
        out.messages = [dict(m) for m in convo]
        reply = self.llm(out.messages)
        out.llm_calls += 1
        text, calls = split_reply(reply)
        return text, calls, reply

    @staticmethod
    def _with_system(msgs: list[dict[str, Any]], system: list[str]) -> list[dict[str, Any]]:
        """Memory system messages after the caller's leading system messages."""
        lead = 0
        while lead < len(msgs) and msgs[lead]["role"] == "system":
            lead += 1
        extra = [{"role": "system", "content": s} for s in system if s]
        return msgs[:lead] + extra + msgs[lead:]

    @staticmethod
    def _is_read_call(call: dict[str, Any]) -> bool:
        fn = call.get("function", call)
        name = fn.get("name") if isinstance(fn, dict) else None
        return isinstance(name, str) and canonical_tool_name(name) in READ_ACTIONS

    def _read_calls(self, calls: list[dict[str, Any]], out: ChatOutcome) -> list[tuple[str, dict, str | None]]:
        reads = []
        for call in calls:
            fn = call.get("function", call)
            name = canonical_tool_name(fn.get("name", "")) if isinstance(fn, dict) and isinstance(fn.get("name"), str) else ""
            if name in MEMORY_WRITE_ACTIONS:
                out.ignored_tool_calls.append(call)  # the model proposes; it never writes
                continue
            try:
                req = parse_memory_tool_call(call)
            except ToolCallError as exc:
                out.ignored_tool_calls.append({**call, "error": str(exc)})
                continue
            if req is None:
                continue
            args = {k: v for k, v in msgspec.to_builtins(req.arguments).items() if v not in (None, [], "")}
            if req.name == "memory.search":
                args.pop("mode", None)
            if req.name == "memory.palace.list":
                args.setdefault("path", "")
            reads.append((req.name, args, req.call_id))
        return reads

    def _run_tool(self, action: str, args: dict[str, Any], identity: Identity, out: ChatOutcome,
                  *, origin: str, as_json: bool = False) -> tuple[bool, str]:
        try:
            result = self.tools.dispatch(action, args, identity)["result"]
        except ToolError as exc:
            result = {"error": exc.message}
        if action == "memory.search" and "hits" in result:
            result = _drop_recall_questions(result)
        found = _found(action, result)
        out.tool_rounds.append(ToolRound(action=action, args=args, found=found, result=result, origin=origin))
        if as_json:
            return found, json.dumps(_compact(action, result), ensure_ascii=False)
        hits = result.get("hits", []) if action == "memory.search" else []
        return found, _results_block(hits, self.service, identity)

    def _capture(self, identity: Identity, role: str, text: str, **kw: Any) -> CaptureResult:
        return self.service.capture(identity, role, text, **kw)

    def _pre_return(self, out: ChatOutcome, identity: Identity, query: str) -> None:
        if not query.strip():
            return
        current = {message_item_id(t.turn_id) for t in (out.user_turn, out.assistant_turn) if t}
        result = self.service.recall(query, identity, mode="catalog", record_usage=False)
        entries = [e for e in (result.catalog or {}).get("memory_catalog", []) if e.get("id") not in current]
        out.catalog = {**dict(result.catalog or {}), "memory_catalog": entries}
        out.catalog_ids = [i for i in result.used_ids if i not in current]

    @staticmethod
    def _not_found(topic: str) -> str:
        return (f"I found nothing in memory about {topic.strip()!r}, so I cannot recall it. "
                "If you tell me, I can remember it from now on.")


def _drop_recall_questions(result: dict[str, Any]) -> dict[str, Any]:
    """A stored chat turn that was itself a recall request ("what do we know about X?")
    carries no knowledge about X: it is not evidence, and must not turn "nothing in memory"
    into an answer that quotes the question back."""
    hits = [h for h in result["hits"]
            if not (h.get("type") == "message" and detect_recall_intent(h.get("content", "")))]
    if len(hits) == len(result["hits"]):
        return result
    return {**result, "hits": hits, "found": bool(hits)}


def _found(action: str, result: dict[str, Any]) -> bool:
    if "error" in result:
        return False
    if action == "memory.search":
        return bool(result.get("found"))
    if action == "memory.read":
        return bool(result.get("items"))
    if action == "memory.palace.list":
        return bool(result.get("children"))
    return bool(result.get("items"))


def _compact(action: str, result: dict[str, Any]) -> dict[str, Any]:
    """What the model gets back from a tool call (content included, scores rounded)."""
    if action == "memory.search" and "hits" in result:
        return {"found": result.get("found"), "message": result.get("message"),
                "hits": [{k: h[k] for k in ("id", "type", "tier", "title", "content", "tags")}
                         for h in result["hits"]]}
    return result
