"""Loci's memory tools over MCP (the official `mcp` SDK), on stdio or streamable HTTP.

`loci mcp` runs it. A thin adapter: every call goes through `online.tools.ToolDispatcher`,
the same dispatcher as `POST /v1/tools`, so governance (the policy), auditing and tenancy
live in one place. What this module adds is only the MCP side:

- tool names with underscores (`memory_search`; many MCP clients refuse dots), mapped to
  the dispatcher's actions;
- input schemas derived from the dispatcher's argument structs (`ACTION_ARGS`), closed
  objects like the structs themselves, and descriptions from its registry
  (`ACTION_DESCRIPTIONS`), the proxy's too;
- the caller's identity: the one `loci mcp` was started with (options or `LOCI_USER`,
  `LOCI_PROJECT`, `LOCI_SESSION`, `LOCI_ORG`); over HTTP, `X-Loci-User/Project/Session/Org`
  headers override it per request, read by the proxy's `identity_from_headers`, and
  `X-Loci-Timezone` names the caller's zone, as with the proxy: the `tz` of every call that
  takes one and does not name its own ("yesterday" in a search, "until Friday" in a proposal);
- errors as tool results (`isError: true`, a JSON body `{ok: false, error, status, detail}`),
  never a protocol crash: bad arguments, an unknown or invisible id, a policy refusal and a
  malformed identity header are all answered and the server keeps serving.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import logging
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
import msgspec
from mcp.server import Server, ServerRequestContext

from online.proxy.identity import IdentityError, identity_from_headers, timezone_from_headers
from online.proxy.memory_tools import READ_ACTIONS
from online.state import MemoryService
from online.tools import ACTION_ARGS, ACTION_DESCRIPTIONS, ToolDispatcher, ToolError, args_schema, tool_name
from pipelines.recall.intents import canonical_tool_name
from pipelines.records import Identity
from pipelines.settings import Settings

log = logging.getLogger("loci.mcp")

SERVER_NAME = "loci"
INSTRUCTIONS = ("Loci long-term memory: search it before guessing what was said or decided; "
                "propose what is worth keeping.")
HTTP_PATH = "/mcp"

# The tools an MCP client gets, in the order it lists them (described and given arguments by
# the dispatcher's registry, `online.tools.ACTION_DESCRIPTIONS` / `ACTION_ARGS`).
MCP_ACTIONS = ("memory.search", "memory.read", "memory.propose", "memory.update", "memory.forget",
               "memory.palace.list", "memory.palace.get", "memory.palace.assign", "memory.stats",
               "memory.review.list", "memory.review")


# Hints for the client (whether to ask the user first): reads change no memory (their audit
# events aside); proposals and palace moves add, an update may rewrite or retract an entry, and
# a review applies a held change or retracts a held claim (a person's decision: the client asks).
_READ_ONLY = READ_ACTIONS | {"memory.stats", "memory.review.list"}
_DESTRUCTIVE = frozenset({"memory.update", "memory.forget", "memory.review"})


def annotations(action: str) -> types.ToolAnnotations:
    read_only = action in _READ_ONLY
    return types.ToolAnnotations(read_only_hint=read_only, destructive_hint=None if read_only
                                 else action in _DESTRUCTIVE, open_world_hint=False)


def tools() -> list[types.Tool]:
    return [types.Tool(name=tool_name(action), description=ACTION_DESCRIPTIONS[action],
                       input_schema=args_schema(action), annotations=annotations(action))
            for action in MCP_ACTIONS]


ACTION_OF_TOOL = {tool_name(action): action for action in MCP_ACTIONS}


def _error(status: int, message: str, detail: Any = None) -> types.CallToolResult:
    body = {"ok": False, "error": message, "status": status, "detail": detail}
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(body))], is_error=True)


def call(dispatcher: ToolDispatcher, name: str, arguments: Any, who: Identity,
         tz: str | None = None) -> types.CallToolResult:
    """Run one tool call through the dispatcher; every failure is a tool error result. `tz`:
    the caller's zone (`X-Loci-Timezone`), for a call taking one that names none."""
    action = ACTION_OF_TOOL.get(name)
    if action is None:
        # `memory.search` (the HTTP action's name) is the tool memory_search; an action only
        # HTTP serves (memory.write, memory.link, memory.consolidate) is said to be so
        meant = canonical_tool_name(str(name))
        hint = (f" (did you mean {tool_name(meant)!r}? tool names use underscores)" if meant in MCP_ACTIONS
                else f" ({meant} is served by the HTTP API only, POST /v1/tools)" if meant in ACTION_ARGS else "")
        return _error(400, f"unknown tool {name!r}{hint}; tools: {', '.join(ACTION_OF_TOOL)}")
    if tz is not None and isinstance(arguments, dict) and "tz" not in arguments \
            and "tz" in ACTION_ARGS[action].__struct_fields__:
        arguments = {**arguments, "tz": tz}
    try:
        result = msgspec.to_builtins(dispatcher.dispatch(action, arguments or {}, who)["result"])
    except ToolError as exc:
        return _error(exc.status, exc.message, msgspec.to_builtins(exc.detail))
    except Exception:  # a bug must not take the connection down; it is logged with its trace
        log.exception("%s failed", action)
        return _error(500, f"{name}: internal error (logged by the server)")
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(result))],
                                structured_content=result)


def caller(ctx: ServerRequestContext, default: Identity) -> tuple[Identity, str | None]:
    """The server's identity, or over HTTP the request's `X-Loci-*` headers over it; and the
    caller's zone from `X-Loci-Timezone` (None: the `timezone` setting)."""
    headers: Mapping[str, str] | None = getattr(ctx.request, "headers", None)
    if headers is None:
        return default, None
    return identity_from_headers(headers, default, openwebui=False), timezone_from_headers(headers)


def build_server(service: MemoryService, identity: Identity) -> Server:
    """An MCP server answering for `identity` (the default caller) over `service`."""
    dispatcher = ToolDispatcher(service)
    listed = tools()

    async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            who, tz = caller(ctx, identity)
        except IdentityError as exc:
            return _error(400, str(exc))
        # The dispatcher blocks (inbox writes, recall): off the event loop.
        return await anyio.to_thread.run_sync(functools.partial(call, dispatcher, params.name, params.arguments,
                                                                who, tz))

    return Server(SERVER_NAME, version=importlib.metadata.version("loci"), instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


def serve_stdio(settings: Settings, identity: Identity) -> None:
    """Serve one MCP client on stdin/stdout until it closes the pipe."""
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        # The service is opened inside the transport: the SDK has moved stdout aside by then,
        # so nothing printed while loading can corrupt the protocol stream.
        async with stdio_server() as (read_stream, write_stream):
            with MemoryService(settings) as service:
                server = build_server(service, identity)
                await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def serve_http(settings: Settings, identity: Identity, host: str, port: int, *, log_level: str = "warning") -> None:
    """Serve MCP over streamable HTTP at http://host:port/mcp until interrupted."""
    import uvicorn

    with MemoryService(settings) as service:
        # `host` also switches on the SDK's DNS-rebinding protection for a loopback address.
        app = build_server(service, identity).streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
        uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5)
