"""Loci's memory.* tools as Ollama tool definitions, and how to tell them from the client's.

Offered to the model only with the `memory_tools` flag. Names use underscores (function names
in OpenAI-style tool schemas cannot hold dots); `canonical_tool_name` maps them back. A tool
the client defined itself is the client's, whatever its name: its calls are passed through.
The model may read memory and propose; write-type calls (memory.write, update, link,
consolidate) are never executed for it: memory is read-only to the model.
"""

from __future__ import annotations

from typing import Any

from pipelines.recall.intents import canonical_tool_name

READ_ACTIONS = frozenset({"memory.search", "memory.read", "memory.palace.list", "memory.palace.get"})
PROPOSE_ACTIONS = frozenset({"memory.propose", "memory.save"})


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required},
    }}


MEMORY_TOOL_SPECS: list[dict[str, Any]] = [
    _tool("memory_search", "Search long-term memory (decisions, facts, preferences, earlier "
          "conversation). Use it instead of guessing what was said or decided before.",
          {"query": {"type": "string", "description": "What to look for."},
           "k": {"type": "integer", "description": "How many results (1-100)."},
           "tags": {"type": "array", "items": {"type": "string"}}},
          ["query"]),
    _tool("memory_read", "Read memory entries in full by id (ids come from memory_search or "
          "the memory catalog).",
          {"ids": {"type": "array", "items": {"type": "string"}}}, ["ids"]),
    _tool("memory_palace_list", "List the memory palace one level below a path "
          "(domain/room/shelf); an empty path lists the domains.",
          {"path": {"type": "string"}}, []),
    _tool("memory_palace_get", "Entries at a memory palace location (domain/room/shelf/card).",
          {"location": {"type": "string"}}, ["location"]),
    _tool("memory_propose", "Propose information worth keeping (decisions, constraints, "
          "definitions, preferences, durable facts). Proposals are reviewed before storage; "
          "never include secrets.",
          {"items": {"type": "array", "items": {"type": "object", "properties": {
              "type": {"type": "string"}, "title": {"type": "string"},
              "content": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
              "why_store": {"type": "string"}}, "required": ["content"]}}},
          ["items"]),
]


def call_name(call: dict[str, Any]) -> str:
    fn = call.get("function", call)
    name = fn.get("name") if isinstance(fn, dict) else None
    return name if isinstance(name, str) else ""


def is_loci_call(call: dict[str, Any], client_tools: set[str]) -> bool:
    """A memory.* call that Loci answers (not a tool the client defined)."""
    name = call_name(call)
    return bool(name) and name not in client_tools and canonical_tool_name(name).startswith("memory.")
