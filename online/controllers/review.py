"""GET /v1/review: what waits for a reviewer, among what the caller may see."""

from __future__ import annotations

import msgspec
from litestar import Controller, get
from litestar.di import Provide

from online.controllers.deps import error_responses, provide_identity, provide_service
from online.schemas import ReviewResponse
from online.state import MemoryService
from online.tools import ToolDispatcher
from pipelines.records import Identity


class ReviewController(Controller):
    tags = ["review"]
    dependencies = {
        "service": Provide(provide_service, sync_to_thread=False),
        "identity": Provide(provide_identity, sync_to_thread=False),
    }

    @get("/v1/review", sync_to_thread=True, summary="What waits for review: held proposals and held edits.",
         responses=error_responses(400, 503),
         description="Each claim held in quarantine and each edit (or retraction) held beside an item, among "
                     "the items the caller may see (named like on every GET endpoint), newest first: who "
                     "proposed it and when, an edit's old and new text. Decide one with the `memory.review` "
                     "action (`POST /v1/tools`) and its `id`. The same list as the `memory.review.list` "
                     "action; audited (ids only).")
    def review(self, service: MemoryService, identity: Identity) -> ReviewResponse:
        listed = ToolDispatcher(service).dispatch("memory.review.list", {}, identity)["result"]
        return msgspec.convert(listed, ReviewResponse)
