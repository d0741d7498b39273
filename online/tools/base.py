"""What every memory.* action runs on: the service, the caller's zone and the item an edit
targets."""

from __future__ import annotations

from typing import Any

from online.state import MemoryService, View
from online.tools.args import ToolError, asker_zone
from pipelines.records import Identity, MemoryItem


class Actions:
    """The service the actions run against (for one caller identity at a time)."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service

    def _zone(self, tz: str | None, action: str) -> str:
        """The caller's zone `tz` (checked, `asker_zone`), or the service's `timezone` setting."""
        return asker_zone(tz, f"{action}: tz") or self.service.settings.timezone


    def _editable(self, item_id: str, who: Identity, view: View, action: str, args: Any) -> MemoryItem:
        """The item an edit targets; one the caller cannot see is answered exactly like an
        unknown id, and the attempt is recorded as refused for the audit trail."""
        current = self.service.get_item(item_id, who, view)
        if current is None:
            self.service.audit(who, action, args, [item_id], outcome="refused",
                               reason="not visible to the caller")
            raise ToolError(404, self.service.no_item(item_id, who, view))
        return current

