"""POST /v1/recall: recall over the snapshot and the delta for one caller."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Controller, post
from litestar.di import Provide
from litestar.exceptions import ClientException
from litestar.params import Body

from online.controllers.deps import error_responses, provide_service
from online.schemas import CLOSED_OBJECT, HitOut, RecallRequest, RecallResponse
from online.state import MemoryService
from online.tools import asker_zone, hit_out
from pipelines.recall import RecallFilters, RecallResult
from pipelines.records import time_zone


def delivered_mode(result: RecallResult) -> str:
    """The mode `result` was delivered in: `auto` gives the block when it injected anything
    (`pipelines.recall.deliver`: then the block alone), else the catalog alone."""
    if result.mode != "auto":
        return result.mode
    return "inject" if result.injection else "catalog"


class RecallController(Controller):
    path = "/v1/recall"
    tags = ["recall"]
    dependencies = {"service": Provide(provide_service, sync_to_thread=False)}

    @post(status_code=200, sync_to_thread=True, summary="Recall memory for a query.",
          responses=error_responses(400, 413, 503),
          description="Hits (only items the caller's scope may see), the `PERSISTENT MEMORY "
                      "(READ-ONLY)` injection block, the catalog, and `found` with an explicit "
                      "`message` when nothing is found, and the `mode` delivered (with `auto`: "
                      "`inject` or `catalog`, whichever it gave). `trace: true` adds the Q* trace.")
    def recall(self, data: Annotated[RecallRequest, Body(schema_extra=CLOSED_OBJECT)],
               service: MemoryService) -> RecallResponse:
        if not data.query.strip():
            raise ClientException("query is empty")
        tz = asker_zone(data.tz, "tz")
        zone = time_zone(tz or service.settings.timezone)  # a turn's title dates it on the asker's calendar
        view = service.view()
        filters = RecallFilters.of(data.tags, tier=data.tier, type=data.type, scope=data.scope)
        result = service.recall(data.query, data.identity, mode=data.mode, k=data.k,
                                filters=filters, trace=data.trace, view=view, said=data.conversation,
                                tz=tz)
        return RecallResponse(
            found=bool(result.found),
            message=result.message or "",
            mode=delivered_mode(result),
            # the dict is of the right types already (`hit_out`): built, not converted (~5 us a hit)
            hits=[HitOut(**hit_out(h, zone)) for h in result.hits],
            injection=result.injection or "",
            catalog=dict(result.catalog or {}),
            used_ids=list(result.used_ids),
            snapshot_version=view.snap.version,
            timings_ms={k: float(v) for k, v in dict(result.timings_ms or {}).items()},
            degraded=[*result.degraded, *filter(None, [service.degraded(view)])],
            stale_since=service.inbox_outage.since_iso if service.inbox_outage else None,
            trace=msgspec.to_builtins(result.trace) if data.trace and result.trace is not None else None,
        )
