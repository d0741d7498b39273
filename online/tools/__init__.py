"""The memory.* tool dispatcher: stable JSON in, stable JSON out.

    dispatch(service, "memory.search", {"query": "..."}, identity)
        -> {"ok": True, "action": "memory.search", "result": {...}}

Bad input raises `ToolError` (status 400 malformed args / unknown action, 404 unknown or
invisible id, 422 refused by the policy), which the HTTP layer turns into
`{"ok": false, "error": ...}`; the middleware catches it too.

Every action is audited in the inbox: writes land as the events the pipeline consumes
(`proposal` through `capture_turn`, `memory.write`, `memory.update`, `memory.link`,
`memory.palace.assign`, `memory.consolidate`); reads and `memory.stats` land an `audit` event
(hashes and ids, never content). A write refused by the policy stores nothing but an audit
event carrying the verdict.

Tenancy: every read is filtered by the caller's identity first; an item the caller cannot
see is reported exactly like an id that does not exist.

The package, by job: `args` (the argument structs, `ToolError`, decoding), `schemas` (what a
model is told of each action), `shaping` (the JSON answers), and the dispatcher
(`dispatcher.ToolDispatcher`) made of its actions by domain: `writes`, `edits` (update,
forget, review) and `reads`.
"""

from online.tools.args import (
    ACTION_ARGS,
    Args,
    ConsolidateArgs,
    ForgetArgs,
    ItemIn,
    ItemPatch,
    LinkArgs,
    PalaceAssignArgs,
    PalaceGetArgs,
    PalaceListArgs,
    ProposeArgs,
    ReadArgs,
    ReviewArgs,
    ReviewListArgs,
    SearchArgs,
    StatsArgs,
    ToolError,
    UpdateArgs,
    WritableType,
    WriteArgs,
    asker_zone,
)
from online.tools.dispatcher import ToolDispatcher
from online.tools.schemas import ACTION_DESCRIPTIONS, args_schema, tool_name
from online.tools.shaping import hit_out, item_out, item_summary, palace_locations

__all__ = [
    "ACTION_ARGS", "ACTION_DESCRIPTIONS", "Args", "ConsolidateArgs", "ForgetArgs", "ItemIn", "ItemPatch",
    "LinkArgs", "PalaceAssignArgs", "PalaceGetArgs", "PalaceListArgs", "ProposeArgs", "ReadArgs", "ReviewArgs",
    "ReviewListArgs", "SearchArgs", "StatsArgs", "ToolDispatcher", "ToolError", "UpdateArgs", "WritableType",
    "WriteArgs", "args_schema", "asker_zone", "hit_out", "item_out", "item_summary", "palace_locations",
    "tool_name",
]
