"""POST /v1/tools: the memory.* dispatcher over HTTP, and what a request for a route that
does not exist is told (`no_route`): the routes there are, and the action a guessed path
names ("/v1/proposals": `memory.propose` through this endpoint)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from litestar import Controller, post
from litestar.di import Provide
from litestar.params import Body

from online.controllers.deps import error_responses, provide_service
from online.proxy.dialects import CHAT, GENERATE
from online.proxy.openai_chat import OPENAI_CHAT
from online.schemas import CLOSED_OBJECT, TOOL_ACTIONS, ToolRequest, ToolResponse
from online.state import MemoryService
from online.tools import ToolDispatcher
from pipelines.recall.lexical import Stems, words

CHAT_PATHS = (CHAT.path, GENERATE.path, OPENAI_CHAT.path)  # what `loci proxy` serves with memory
SCHEMA_PATH = "/schema"  # the OpenAPI document (`online.app`), /schema/swagger to try it
_STEMS = Stems()


class ToolsController(Controller):
    path = "/v1/tools"
    tags = ["tools"]
    dependencies = {"service": Provide(provide_service, sync_to_thread=False)}

    @post(status_code=200, sync_to_thread=True, summary="Run one memory.* action.",
          responses=error_responses(400, 404, 409, 413, 422, 503),
          description=f"Actions: {', '.join(TOOL_ACTIONS)}. Answers "
                      "`{ok: true, action, result}`; errors are 4xx `{ok: false, error, detail}` (400 bad args "
                      "or unknown action, 404 unknown or invisible id, 422 refused by the policy with its "
                      "verdict).")
    def run(self, data: Annotated[ToolRequest, Body(schema_extra=CLOSED_OBJECT)],
            service: MemoryService) -> ToolResponse:
        out = ToolDispatcher(service).dispatch(data.action, data.args, data.identity)
        return ToolResponse(ok=True, action=out["action"], result=out["result"])


def _stems(text: str) -> set[str]:
    return set(_STEMS(w.lower() for w in words(text))) - {"memori", "v1"}  # "memory" names every action


def no_route(method: str, path: str, routes: Iterable[tuple[str, Iterable[str]]]) -> tuple[str, dict[str, Any]]:
    """The 404 of a path no route serves: (message, detail). An integrator guesses REST
    paths ("/v1/proposals", "/v1/search", "/v1/memories"); the memory actions are one
    endpoint, so the message names the action a path word stems to (Snowball, as recall's
    words are), the routes whose path shares a word with it, and the OpenAPI schema.
    `routes`: (path, methods) of the app's API routes."""
    asked = _stems(path)
    api = sorted((p.replace(":str}", "}"), sorted(set(m) - {"OPTIONS", "HEAD"})) for p, m in routes
                 if p.startswith("/v1/") or p in ("/healthz", "/readyz"))
    actions = [a for a in TOOL_ACTIONS if asked & _stems(a)]
    near = [f"{' '.join(m)} {p}" for p, m in api if asked & _stems(p.split("{")[0])]
    hints = [f"the memory.* actions are one endpoint: POST /v1/tools with {{\"action\": \"{a}\", "
             f"\"args\": {{...}}, \"identity\": {{...}}}}" for a in actions[:1]]
    hints += [f"did you mean {' or '.join(near)}"] if near else []
    if path.rstrip("/") in CHAT_PATHS:  # a chat client pointed at the memory service
        hints = [f"the chat APIs ({', '.join(CHAT_PATHS)}) are served by `loci proxy`, in front of the model "
                 "server: point the chat client there; this is the memory service"]
    if not hints:
        hints = ["recall is POST /v1/recall, capturing a chat turn POST /v1/turns, the memory.* actions "
                 "(memory.propose, memory.search, memory.read, ...) POST /v1/tools"]
    message = f"no route {method} {path}: {'; '.join(hints)}. The API is described at {SCHEMA_PATH}."
    return message, {"routes": [f"{' '.join(m)} {p}" for p, m in api], "actions": list(TOOL_ACTIONS),
                     "schema": SCHEMA_PATH}
