"""POST /v1/tools: the memory.* dispatcher over HTTP."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, post
from litestar.di import Provide
from litestar.params import Body

from online.controllers.deps import error_responses, provide_service
from online.schemas import CLOSED_OBJECT, TOOL_ACTIONS, ToolRequest, ToolResponse
from online.state import MemoryService
from online.tools import ToolDispatcher


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
