"""The in-process chat middleware: the proxy's chat-hook engine around any LLM function.

    mw = MemoryMiddleware(service, llm, settings)
    outcome = mw.chat(messages, identity)      # outcome.text is what the user sees

`llm(messages) -> str | dict` is any chat function (an Ollama `/api/chat` response dict,
`{"content", "tool_calls"}`, or a plain string). The four hooks (inject before the call,
govern and land after it, the pre-return catalog, intercepting recall requests) are
`online.proxy.exchange.Exchange`'s, as in the proxy; this module only drives it with a
function instead of an upstream server. One difference, on purpose: when a recall finds
nothing, the middleware answers "nothing in memory" itself instead of letting the model
say it, so an in-process caller never gets an improvised answer.

`enabled = false` turns the middleware into a pass-through, as is a chat UI's background task
(`online.proxy.tasks`, the check the proxy makes). An edited message and a regenerated
answer retract what they replaced, as in the proxy (`online.proxy.rounds`). Flags missing
from `settings.flags` take their defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from online.proxy.config import DEFAULT_MAX_TOOL_ROUNDS, PROPOSAL_INSTRUCTION, ProxyConfig
from online.proxy.dialects import CHAT
from online.proxy.exchange import Exchange
from online.proxy.shown import VisibleText, visible_of
from online.proxy.tool_calls import ToolRound
from online.state import MemoryService
from pipelines.capture import CaptureResult, ProposalOutcome
from pipelines.records import Identity
from pipelines.settings import Settings, flag_on

IN_PROCESS_MODEL = "in-process"  # the body's model name; the llm function never sees it


class MiddlewareError(ValueError):
    """Bad input to `chat` (messages not a list of {role, content} dicts, an llm reply of
    an unknown shape)."""


@dataclass
class ChatOutcome:
    text: str  # the answer the user sees
    found_in_memory: bool | None = None  # set when a recall request was intercepted
    injected_ids: list[str] = field(default_factory=list)
    catalog: dict[str, Any] = field(default_factory=dict)  # the pre-return Q* pass
    catalog_ids: list[str] = field(default_factory=list)
    proposals: list[ProposalOutcome] = field(default_factory=list)
    user_turn: CaptureResult | None = None
    assistant_turn: CaptureResult | None = None
    tool_rounds: list[ToolRound] = field(default_factory=list)
    ignored_tool_calls: list[str] = field(default_factory=list)
    intercepted: bool = False
    edited_away: list[str] = field(default_factory=list)  # what an edit of the chat retracted
    regenerated_away: list[str] = field(default_factory=list)  # the answers a regeneration discarded
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


class MemoryMiddleware:
    def __init__(
        self,
        service: MemoryService,
        llm: Callable[[list[dict[str, Any]]], dict[str, Any] | str],
        settings: Settings | None = None,
        *,
        proposal_instruction: str | None = PROPOSAL_INSTRUCTION,
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
    ) -> None:
        if not callable(llm):
            raise MiddlewareError("llm must be callable: llm(messages) -> str | dict")
        try:
            self.config = ProxyConfig(proposal_instruction=proposal_instruction, max_tool_rounds=max_tool_rounds)
        except ValueError as exc:
            raise MiddlewareError(str(exc)) from exc
        self.service = service
        self.llm = llm
        self.settings = settings or service.settings

    def chat(self, messages: Sequence[dict[str, Any]], identity: Identity, *, names_chat: bool = False) -> ChatOutcome:
        """`names_chat`: `identity`'s session is this chat's alone (a chat id), so an edit of
        its first message is read as one too (`online.proxy.rounds`)."""
        msgs = _check_messages(messages)
        if not isinstance(identity, Identity):
            raise MiddlewareError("identity must be a pipelines.records.Identity")
        body = {"model": IN_PROCESS_MODEL, "messages": msgs}
        if not flag_on(self.settings.flags, "enabled") or CHAT.background_task(body):
            # A chat UI's background task (a title, tags, follow-ups) is not the user's chat.
            reply = self.llm(msgs)
            return ChatOutcome(text=split_reply(reply)[0], llm_calls=1, messages=msgs, raw_reply=reply)
        ex = Exchange(self.service, self.settings, self.config, identity, CHAT, body, answers_nothing_found=True,
                      names_chat=names_chat)
        out = ChatOutcome(text="")
        sent = ex.prepare()
        shown = VisibleText()
        while ex.answer is None:
            out.messages = [dict(m) for m in sent["messages"]]
            out.raw_reply = self.llm(out.messages)
            out.llm_calls += 1
            raw, calls = split_reply(out.raw_reply)
            visible = visible_of(raw)
            step = ex.after_round(sent, raw, visible, calls)
            sent = shown.end_round(step, visible)
            if sent is None:
                break
        ex.add_closing(shown)
        out.text = shown.text
        self._report(ex, ex.finish(shown.text), out)
        return out

    @staticmethod
    def _report(ex: Exchange, loci: dict[str, Any], out: ChatOutcome) -> None:
        """The engine's record of the exchange, as the outcome's fields."""
        out.found_in_memory = ex.found_in_memory
        out.intercepted = ex.intercepted
        out.injected_ids = list(ex.injected_ids)
        out.tool_rounds = list(ex.tool_rounds)
        out.ignored_tool_calls = list(ex.ignored_calls)
        out.user_turn, out.assistant_turn = ex.user_turn, ex.assistant_turn
        out.edited_away, out.regenerated_away = list(ex.edited_away), list(ex.regenerated_away)
        out.proposals = list(ex.assistant_turn.proposals) if ex.assistant_turn else []
        out.catalog = loci.get("catalog", {})
        out.catalog_ids = [e["id"] for e in out.catalog.get("memory_catalog", []) if "id" in e]
