"""Liveness, readiness, stats and the reload hook."""

from __future__ import annotations

import os

from litestar import Controller, get, post
from litestar.datastructures import State
from litestar.di import Provide
from litestar.openapi import ResponseSpec
from litestar.response import Response

from online.controllers.deps import error_responses, provide_identity, provide_service
from online.schemas import HealthResponse, StateReport
from online.state import MemoryService
from pipelines.records import Identity


def _report(service: MemoryService) -> StateReport:
    return StateReport(**service.report(service.current))


class HealthController(Controller):
    tags = ["health"]

    @get("/healthz", sync_to_thread=False, summary="Liveness: the process answers.")
    def healthz(self) -> HealthResponse:
        return HealthResponse(status="ok", pid=os.getpid())

    @get("/readyz", sync_to_thread=True, summary="Readiness: a snapshot or an empty store is loaded.",
         responses={503: ResponseSpec(data_container=StateReport, generate_examples=False,
                                      description="Not ready yet (`problems: [\"starting\"]`).")},
         description="503 until the service has loaded its state. Once ready it stays ready: a "
                     "missing, corrupt or wrong-embedder snapshot is reported in `problems` while "
                     "the service answers from the inbox delta.")
    def readyz(self, state: State) -> Response[StateReport]:
        service = state.get("service")
        if service is None:
            return Response(StateReport(ready=False, embedder="", snapshot_version=None, watermark=0,
                                        last_seq=0, delta_items=0, snapshot_items=0,
                                        problems=["starting"]), status_code=503)
        service.view()
        return Response(_report(service), status_code=200)


class AdminController(Controller):
    tags = ["admin"]
    dependencies = {"service": Provide(provide_service, sync_to_thread=False)}

    @get("/v1/stats", sync_to_thread=True, summary="Counts per tier/type of the items the caller may see.",
         dependencies={"identity": Provide(provide_identity, sync_to_thread=False)},
         responses=error_responses(400, 503),
         description="The caller is named like on every GET endpoint (query parameters or "
                     "`X-Loci-*` headers). `snapshot_items`, `delta_items` and `counts` cover only "
                     "the items that identity may see; `/readyz` reports the service as a whole.")
    def stats(self, service: MemoryService, identity: Identity) -> StateReport:
        return StateReport(**service.visible_report(identity, service.view()))

    @post("/v1/admin/reload", status_code=200, sync_to_thread=True, responses=error_responses(503),
          summary="Check CURRENT now and swap in a new snapshot (also retries a failed one).")
    def reload(self, service: MemoryService) -> StateReport:
        service.reload()
        return _report(service)
