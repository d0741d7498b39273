"""Loci's memory.* tools as Ollama tool definitions, and how to tell them from the client's.

Offered to the model only with the `memory_tools` flag, named, described and given arguments
by the dispatcher's registry (`online.tools.ACTION_DESCRIPTIONS`, `args_schema`), as MCP's
are. Names use underscores (function names in OpenAI-style tool schemas cannot hold dots);
`canonical_tool_name` maps them back. A tool the client defined itself is the client's,
whatever its name: its calls are passed through.

The model may read memory, propose, and on the user's behalf update or forget an entry
(`CHANGE_ACTIONS`): those run through the dispatcher under the chat's identity, governed
like every write (policy checked, audited, held for review when they change or retract
someone else's claim), and only when the tools were offered. memory.write, link,
consolidate and review are never executed for the model: a review is a person's decision.
"""

from __future__ import annotations

from typing import Any

from online.tools import ACTION_DESCRIPTIONS, args_schema, tool_name
from pipelines.recall.intents import canonical_tool_name

READ_ACTIONS = frozenset({"memory.search", "memory.read", "memory.palace.list", "memory.palace.get"})
PROPOSE_ACTIONS = frozenset({"memory.propose", "memory.save"})
CHANGE_ACTIONS = frozenset({"memory.update", "memory.forget"})


def _tool(action: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": tool_name(action), "description": ACTION_DESCRIPTIONS[action], "parameters": parameters}}


# A proposal's items as the model is asked for them: the fields a model fills (the parser of
# proposals, `pipelines.proposals`, takes the rest too).
_PROPOSE_PARAMETERS = {"type": "object", "required": ["items"], "properties": {
    "items": {"type": "array", "items": {"type": "object", "required": ["content"], "properties": {
        "type": {"type": "string"}, "title": {"type": "string"}, "content": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}}, "why_store": {"type": "string"}}}}}}

# What the proxy tells every search of an exchange itself, from the user's request
# (`MemoryCalls.dispatch`): the model is not asked for them, and its own are not read. A
# forget's turns too: the proxy lands its round's turns forgotten with it (`FORGOT`), or, the
# forget held for review, waiting with it (`MemoryCalls.link_held`).
SET_BY_THE_PROXY = frozenset({"tz", "own_words", "turn_ids"})


def _parameters(action: str) -> dict[str, Any]:
    schema = args_schema(action, inline=True)
    return {**schema, "properties": {k: v for k, v in schema["properties"].items() if k not in SET_BY_THE_PROXY}}


MEMORY_TOOL_SPECS: list[dict[str, Any]] = [
    _tool("memory.search", _parameters("memory.search")),
    *(_tool(action, args_schema(action, inline=True))
      for action in ("memory.read", "memory.palace.list", "memory.palace.get")),
    _tool("memory.propose", _PROPOSE_PARAMETERS),
    *(_tool(action, _parameters(action)) for action in ("memory.update", "memory.forget")),
]


def retracts(action: str, args: Any) -> bool:
    """Whether a change the model asked for forgets an entry (memory.forget, or memory.update
    setting `validation` to "retracted")."""
    patch = args.get("patch") if isinstance(args, dict) else None
    return action == "memory.forget" or (isinstance(patch, dict) and patch.get("validation") == "retracted")


def call_name(call: dict[str, Any]) -> str:
    fn = call.get("function", call)
    name = fn.get("name") if isinstance(fn, dict) else None
    return name if isinstance(name, str) else ""


def is_loci_call(call: dict[str, Any], client_tools: set[str]) -> bool:
    """A memory.* call that Loci answers (not a tool the client defined)."""
    name = call_name(call)
    return bool(name) and name not in client_tools and canonical_tool_name(name).startswith("memory.")
