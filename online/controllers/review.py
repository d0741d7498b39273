"""GET /v1/review: what waits for a reviewer, among what the caller may see."""

from __future__ import annotations

from litestar import Controller, get
from litestar.di import Provide

from online.controllers.deps import error_responses, provide_identity, provide_service
from online.review import awaiting_review, review_entry
from online.schemas import PendingReview, ReviewResponse
from online.state import MemoryService
from pipelines.records import Identity


def pending_review(entry: dict) -> PendingReview:
    """`review_entry`'s description in the response's names."""
    return PendingReview(
        id=entry["id"], kind=entry["kind"], type=entry["type"], title=entry["title"], scope=entry["scope"],
        proposed_by=entry["author"], proposed_at=str(entry["created_at"]), new_content=entry["content"],
        old_content=entry["old_content"], old_title=entry["old_title"], fields=entry["fields"],
        rule_ids=entry["rule_ids"], held_against=entry["held_against"], expires_at=entry["expires_at"])


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
                     "action (`POST /v1/tools`) and its `id`. The listing is audited (ids only).")
    def review(self, service: MemoryService, identity: Identity) -> ReviewResponse:
        held = awaiting_review(service.view(), identity)
        service.audit(identity, "review.list", {}, [it.id for it in held])
        return ReviewResponse(count=len(held), pending=[pending_review(review_entry(it)) for it in held])
