"""What a model is told of each memory.* action offered to it as a tool: its name, its
description and the JSON schema of its arguments (from `ACTION_ARGS`)."""

from __future__ import annotations

from typing import Any

import msgspec

from online.tools.args import ACTION_ARGS, ItemPatch
from pipelines.materialize import PATCHABLE_FIELDS

# memory_tools`) and MCP's (`online.mcp_server`) are named, described and given arguments
# (`args_schema`) from here and `ACTION_ARGS`, one registry for every surface.
ACTION_DESCRIPTIONS: dict[str, str] = {
    "memory.search": "Search long-term memory (decisions, facts, preferences, earlier conversation). "
                     "Use it instead of guessing what was said or decided before.",
    "memory.read": "Read memory entries in full by id (ids come from memory_search or the memory catalog).",
    "memory.palace.list": "List the memory palace one level below a path (domain/room/shelf); an empty "
                          "path lists the domains.",
    "memory.palace.get": "Entries at a memory palace location (domain/room/shelf/card).",
    "memory.propose": "Propose information worth keeping (decisions, constraints, definitions, preferences, "
                      "durable facts). Proposals are reviewed before storage; never include secrets. Each "
                      "item is checked by the memory policy; the answer carries its verdict.",
    "memory.update": "Change a memory entry when the user asks to correct it (\"change X to Y\"): `id` from "
                     "memory_search, `patch` the fields to set (" + ", ".join(sorted(PATCHABLE_FIELDS)) + "). "
                     "Checked by the memory policy; a change to someone else's memory is held for review "
                     "(the answer's verdict says `quarantine`: tell the user it awaits review). New words that "
                     "hold from a later day (\"from December 1, ...\") become a new entry (the answer's `item_id`); "
                     "the old one holds until then (`ends`). To forget an "
                     "entry, use memory_forget (the same as setting `validation` to \"retracted\").",
    "memory.forget": "Forget a memory entry when the user asks to (\"forget X\"): `id` from memory_search, "
                     "a stored fact or a turn of the user's conversation (type `message`: what was said). "
                     "It is retracted (kept with its history, never recalled again); someone else's memory "
                     "is held for review instead (verdict `quarantine`: tell the user it awaits review).",
    "memory.palace.assign": "Put a memory entry you can see at a palace location \"domain/room/shelf\" "
                            "(the card is the entry id); the words are checked by the memory policy.",
    "memory.stats": "What the memory service holds for you: item counts per tier and type, the snapshot "
                    "version and any problems.",
    "memory.review.list": "What waits for review among the memory entries you may see: claims held when "
                          "proposed (`kind` proposal) and changes held beside an entry (`edit`, `retraction`), "
                          "each with who proposed it and when, and an edit's old and new text. Tell the user; "
                          "a reviewer other than its proposer approves or rejects each (memory_review, or the "
                          "memory browser).",
    "memory.review": "Decide one entry of memory_review_list when the user, as its reviewer, says so: `id` from "
                     "the list, `decision` \"approve\" (a held claim is kept and recalled, a held edit applied, "
                     "a held forget done) or \"reject\" (a held claim retracted, a held change dropped), `note` "
                     "the user's reason, kept in the entry's history. Only what the caller may see is decided; "
                     "whoever proposed a change held for contradicting someone else's memory may reject it but "
                     "not approve it (another reviewer does).",
}


def tool_name(action: str) -> str:
    """An action's tool name: underscores (OpenAI-style function names and many MCP clients
    refuse dots; `pipelines.recall.intents.canonical_tool_name` maps them back)."""
    return action.replace(".", "_")


def args_schema(action: str, inline: bool = False) -> dict[str, Any]:
    """The JSON schema of an action's arguments (`ACTION_ARGS`): an object at the top level,
    nested structs under `$defs`, or, `inline`, written in place (small models read a
    tool's schema as text, and a `$ref` is one more thing to follow)."""
    (ref, patch_ref), components = msgspec.json.schema_components([ACTION_ARGS[action], ItemPatch],
                                                                   ref_template="#/$defs/{name}")
    schema = dict(components.pop(ref["$ref"].rsplit("/", 1)[-1]))
    schema.pop("title", None)
    patch = components.pop(patch_ref["$ref"].rsplit("/", 1)[-1])
    if action == "memory.update":
        # `patch` is any object to the decoder (it names the fields it refuses); a client is
        # shown each field and the values it takes, "retracted" (forget) among them.
        schema["properties"]["patch"] = {
            **{k: v for k, v in patch.items() if k != "title"}, "minProperties": 1,
            "description": "The fields to change, nothing else; {\"validation\": \"retracted\"} forgets the entry."}
    if inline:
        return _inlined(schema, components)
    if components:
        schema["$defs"] = components
    return schema


def _inlined(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            named = {k: v for k, v in defs[ref.rsplit("/", 1)[-1]].items() if k != "title"}
            return _inlined(named, defs)
        return {k: _inlined(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inlined(v, defs) for v in node]
    return node

