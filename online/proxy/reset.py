"""`!reset` in a chat: summarise the conversation into memory before the user starts over
(flag `reset_summarize`).

Ollama clients keep the history themselves, so the proxy cannot clear it; it does the part
that matters for memory: when the last user message is the reset command and the history
holds at least `reset_min_messages` messages, the upstream model is asked (one non-streamed
call) to extract durable facts as a `<MEMORY_PROPOSALS_JSON>` block, each proposal is
governed by the policy and landed, and the client gets a one-line confirmation
("[memory] Summarized 6 messages → 2 memories saved ..."). A second identical `!reset`
lands nothing new (the summary turn id is derived from the history).
"""

from __future__ import annotations

from typing import Any

import msgspec

from online.proxy.config import SUMMARY_INSTRUCTION, ProxyConfig
from online.proxy.dialects import content_text
from online.proxy.turns import digest
from online.state import MemoryService
from pipelines.capture import TurnIdConflict
from pipelines.proposals import parse_assistant_output
from pipelines.records import Identity, stable_id

MAX_TURNS = 60  # the most recent turns: enough to summarise, bounded for the model
MAX_TURN_CHARS = 2000


def is_reset(body: dict[str, Any], config: ProxyConfig) -> bool:
    msgs = body.get("messages") or []
    last = msgs[-1] if msgs else None
    return (isinstance(last, dict) and last.get("role") == "user"
            and content_text(last.get("content")).strip().lower() == config.reset_command.strip().lower())


def history_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation before the command: user and assistant turns with text, as
    `{role, content}` with the content a string."""
    turns = [{"role": m.get("role"), "content": content_text(m.get("content"))} for m in body["messages"][:-1]]
    return [m for m in turns if m["role"] in ("user", "assistant") and m["content"].strip()]


def summary_request(body: dict[str, Any], history: list[dict[str, Any]]) -> dict[str, Any]:
    transcript = "\n".join(f"{m['role']}: {m['content'][:MAX_TURN_CHARS]}" for m in history[-MAX_TURNS:])
    out = {"model": body["model"], "stream": False,
           "messages": [{"role": "system", "content": SUMMARY_INSTRUCTION},
                        {"role": "user", "content": transcript}]}
    for key in ("options", "keep_alive"):
        if key in body:
            out[key] = body[key]
    return out


def land_summary(service: MemoryService, identity: Identity, reply: str,
                 history: list[dict[str, Any]]) -> dict[str, Any]:
    """Govern and land the proposals of the summariser's reply; counts for the user."""
    parsed = parse_assistant_output(reply)
    transcript = [[m["role"], m["content"]] for m in history]
    turn_id = stable_id("turn", "proxy-reset", digest([msgspec.to_builtins(identity), transcript]))
    try:
        result = service.capture(
            identity, "system", f"[{len(history)} messages summarised on reset]", parse=False,
            extra_proposals=[p.item for p in parsed.proposals], turn_id=turn_id,
        )
    except TurnIdConflict:  # summarised before, otherwise (the summariser is not deterministic)
        return {"messages": len(history), "proposed": 0, "accept": 0, "quarantine": 0, "reject": 0,
                "parse_errors": len(parsed.errors), "turn_id": turn_id, "proposals": [], "before": True}
    counts = {"accept": 0, "quarantine": 0, "reject": 0}
    for p in result.proposals:
        counts[p.action] = counts.get(p.action, 0) + 1
    return {"messages": len(history), "proposed": len(result.proposals), **counts,
            "parse_errors": len(parsed.errors), "turn_id": result.turn_id,
            "proposals": [{"title": p.title, "action": p.action, "item_id": p.item_id} for p in result.proposals]}


def confirmation(summary: dict[str, Any]) -> str:
    if summary.get("before"):
        return ("[memory] This conversation was summarized before; its memories stand, nothing new "
                "saved. Start a new chat to clear the history.")
    saved = summary["accept"] + summary["quarantine"]
    text = f"[memory] Summarized {summary['messages']} messages → {saved} memories saved"
    extra = []
    if summary["quarantine"]:
        extra.append(f"{summary['quarantine']} held for review")
    if summary["reject"]:
        extra.append(f"{summary['reject']} refused by the policy")
    if extra:
        text += f" ({', '.join(extra)})"
    return text + ". Start a new chat to clear the history."


def too_short(n: int, needed: int) -> str:
    return f"[memory] Nothing summarized: the conversation has {n} messages (at least {needed} needed)."
