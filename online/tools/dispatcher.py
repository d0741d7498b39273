"""The memory.* tool dispatcher: one action name -> the handler that runs it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from online.state import MemoryService, View
from online.tools.args import ToolError
from online.tools.edits import EditActions
from online.tools.reads import ReadActions
from pipelines.recall.intents import canonical_tool_name
from pipelines.records import Identity


class ToolDispatcher(EditActions, ReadActions):
    """Runs memory.* actions against a MemoryService for one caller identity at a time."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service
        self.actions: dict[str, Callable[[Any, Identity, View], dict[str, Any]]] = {
            "memory.propose": self.propose,
            "memory.write": self.write,
            "memory.search": self.search,
            "memory.read": self.read,
            "memory.update": self.update,
            "memory.link": self.link,
            "memory.consolidate": self.consolidate,
            "memory.palace.list": self.palace_list,
            "memory.palace.get": self.palace_get,
            "memory.palace.assign": self.palace_assign,
            "memory.review": self.review,
            "memory.review.list": self.review_list,
            "memory.stats": self.stats,
            "memory.forget": self.forget,
        }

    def dispatch(self, action: str, args: Any, identity: Identity) -> dict[str, Any]:
        handler = self.actions.get(action)
        if handler is None:
            # MCP and the chat proxy name each action with underscores ("memory_search")
            meant = canonical_tool_name(action) if isinstance(action, str) else ""
            hint = f" (did you mean {meant!r}? the tool names use underscores, actions dots)" \
                if meant in self.actions else ""
            raise ToolError(400, f"unknown action {action!r}{hint}; known actions: {', '.join(self.actions)}")
        if not isinstance(identity, Identity):
            raise ToolError(400, "identity must be an Identity")
        result = handler(args if args is not None else {}, identity, self.service.view())
        return {"ok": True, "action": action, "result": result}
