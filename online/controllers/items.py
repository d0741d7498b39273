"""GET /v1/items/{id} (with revisions/history) and GET /v1/conflicts.

Identity: query parameters `user_id`, `project_id`, `session_id`, `org_id`, or the headers
`X-Loci-User`, `X-Loci-Project`, `X-Loci-Session`, `X-Loci-Org`. An item the caller may
not see is answered exactly like an unknown id (404). An id that left recall (archived, or
replaced by a correction or a merge) still answers, as last stored, with its history, its
`state` and what replaced it (`replaced_by`), as long as the snapshot keeps its history.
A forgotten (retracted) item answers its tombstone, to its author too: who forgot it and when,
none of its text (`item_report.as_read`, the rule of every reading surface).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, get
from litestar.di import Provide
from litestar.exceptions import NotFoundException
from litestar.params import Parameter

from online.controllers.deps import error_responses, provide_identity, provide_service
from online.schemas import ConflictOut, ConflictsResponse, ItemResponse, ReplacedBy
from online.state import MemoryService
from online.tools import item_summary
from pipelines.item_report import as_read, history_as_read
from pipelines.materialize import recall_state
from pipelines.records import Identity, MemoryItem, scope_that_applies


def _state(item: MemoryItem, replaced: tuple[str, str] | None) -> dict[str, Any]:
    """An item's `state` and `replaced_by` (`ItemResponse`): what replaced it first, then
    archived, then whether recall may return it (`materialize.recall_state`)."""
    if replaced is not None:
        into, how = replaced
        return {"state": how, "replaced_by": ReplacedBy(id=into, how=how)}
    return {"state": "archived" if item.archived else recall_state(item)}


def _as_default(who: Identity) -> str:
    """Said to a caller who named nobody (a GET carries no body: an integrator forgets the
    query parameters), whether or not the id exists: it tells nothing of other tenants."""
    if who != Identity():
        return ""
    return (" (asked as the default caller: name yours with the user_id / project_id query parameters "
            "or the X-Loci-User / X-Loci-Project headers)")


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
                     "changed it (those after the snapshot too), its `state`, and, for an id a correction "
                     "or a merge replaced, the item that replaced it (`replaced_by`). A forgotten (retracted) item, "
                     "to its author too, as its tombstone: who forgot it and when, none of its text.")
    def item(
        self,
        item_id: Annotated[str, Parameter(min_length=1, max_length=200)],
        service: MemoryService,
        identity: Identity,
    ) -> ItemResponse:
        found = service.read_item(item_id, identity, "items.get")
        if found is None:
            # Left recall (archived, superseded by a correction, merged by consolidation): still
            # itself, as last stored, with its history and, when replaced, by what. An id that
            # never existed, or that the caller may not read, is a 404.
            retired = service.read_replaced(item_id, identity, "items.get")
            if retired is None:
                raise NotFoundException(service.no_item(item_id, identity) + _as_default(identity))
            item, replaced, history = retired
            revisions, events, inbox = history_as_read(item, history.revisions, history.audit, history.inbox)
            return ItemResponse(item=msgspec.to_builtins(as_read(item)), source="history", revisions=revisions,
                                history=inbox, events=events, **_state(item, replaced))
        item, view, history = found
        out = msgspec.to_builtins(as_read(item))
        revisions, events, inbox = history_as_read(item, history.revisions, history.audit, history.inbox)
        replaced = service.replaced_by(item_id, identity, view)  # a correction since the snapshot
        if replaced is not None and replaced[1] == "superseded":
            out["superseded_by"] = replaced[0]  # as `memory.read` says; consolidation then records it
        else:
            replaced = None
        return ItemResponse(item=out, source=view.source_of(item_id) or "snapshot",
                            revisions=revisions, history=inbox, events=events, **_state(item, replaced))

    @get("/v1/conflicts", sync_to_thread=True, summary="Pairs of visible items in conflict.",
         responses=error_responses(400, 503))
    def conflicts(self, service: MemoryService, identity: Identity) -> ConflictsResponse:
        pairs = service.conflicts(identity)
        return ConflictsResponse(
            count=len(pairs),
            conflicts=[ConflictOut(a=item_summary(a), b=item_summary(b), reason=why,
                                   applies=scope_that_applies(a.scope.kind, b.scope.kind)) for a, b, why in pairs],
        )
