"""GET /v1/items/{id} (with revisions/history) and GET /v1/conflicts.

Identity: query parameters `user_id`, `project_id`, `session_id`, `org_id`, or the headers
`X-Loci-User`, `X-Loci-Project`, `X-Loci-Session`, `X-Loci-Org`. An item the caller may
not see is answered exactly like an unknown id (404).
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Controller, get
from litestar.di import Provide
from litestar.exceptions import NotFoundException
from litestar.params import Parameter

from online.controllers.deps import error_responses, provide_identity, provide_service
from online.schemas import ConflictOut, ConflictsResponse, ItemResponse
from online.state import MemoryService
from online.tools import item_summary
from pipelines.records import Identity


class ItemsController(Controller):
    tags = ["items"]
    dependencies = {
        "service": Provide(provide_service, sync_to_thread=False),
        "identity": Provide(provide_identity, sync_to_thread=False),
    }

    @get("/v1/items/{item_id:str}", sync_to_thread=True, summary="One item with its revisions.",
         responses=error_responses(400, 404, 503),
         description="The item, where it is served from (snapshot or delta), its revisions and audit "
                     "events as published with the snapshot, and the inbox events that created or "
                     "changed it (those after the snapshot too).")
    def item(
        self,
        item_id: Annotated[str, Parameter(min_length=1, max_length=200)],
        service: MemoryService,
        identity: Identity,
    ) -> ItemResponse:
        found = service.read_item(item_id, identity, "items.get")
        if found is None:
            # Archived (expired, aged out): still itself, as last stored, with its history.
            retired = service.read_replaced(item_id, identity, "items.get")
            if retired is None or retired[1] is not None:  # unknown, or replaced: the 404 names by what
                raise NotFoundException(service.no_item(item_id, identity, found=retired and retired[1]))
            item, _, history = retired
            return ItemResponse(item=msgspec.to_builtins(item), source="history", revisions=history.revisions,
                                history=history.inbox, events=history.audit)
        item, view, history = found
        out = msgspec.to_builtins(item)
        replaced = service.replaced_by(item_id, identity, view)  # a correction since the snapshot
        if replaced is not None and replaced[1] == "superseded":
            out["superseded_by"] = replaced[0]  # as `memory.read` says; consolidation then records it
        return ItemResponse(item=out, source=view.source_of(item_id) or "snapshot",
                            revisions=history.revisions, history=history.inbox, events=history.audit)

    @get("/v1/conflicts", sync_to_thread=True, summary="Pairs of visible items in conflict.",
         responses=error_responses(400, 503))
    def conflicts(self, service: MemoryService, identity: Identity) -> ConflictsResponse:
        pairs = service.conflicts(identity)
        return ConflictsResponse(
            count=len(pairs),
            conflicts=[ConflictOut(a=item_summary(a), b=item_summary(b), reason=why) for a, b, why in pairs],
        )
