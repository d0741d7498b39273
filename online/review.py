"""The review queue: what waits for a reviewer among the items a caller may see, one home
for every surface that lists it (`GET /v1/review`, the browser's /ui/quarantine page).

Two kinds of thing wait: a claim held in quarantine when proposed or written (a soft block
of the policy: low confidence, a contradiction of someone else's claim, ...), and an edit
held beside an item it may not change at once (`materialize.held_by_edit`; a retraction of
someone else's claim is one too). `memory.review` decides either by the item's id; who may
decide is `review_refusal`'s one check, asked by that action whichever door it came through
(`POST /v1/tools`, the MCP `memory_review` tool, the browser's /ui/quarantine form).
"""

from __future__ import annotations

from typing import Any

from online.state import View
from online.tools.shaping import item_summary
from pipelines.materialize import HELD_AGAINST, awaits_review, held_edit, in_quarantine, with_held_edit
from pipelines.records import Identity, MemoryItem
from pipelines.settings import Settings


def awaiting_review(view: View, who: Identity) -> list[MemoryItem]:
    """The items `who` may see that wait for a reviewer (held, or carrying a held edit),
    newest first (by when the held thing was proposed)."""
    return sorted((it for it in view.visible_items(who) if awaits_review(it)),
                  key=lambda it: str(_proposed(it)[1]), reverse=True)


def review_refusal(item: MemoryItem, who: Identity, settings: Settings) -> str | None:
    """Why `who` may not decide what waits on `item`, or None when they may. What waits on an
    org's org-wide memory is decided by its reviewers (`Settings.org_reviewers`) when it names
    them: anyone else in the org sees it, but their approval would change what the whole org
    is told. Elsewhere, anyone who may see the item decides (the action's own checks apply)."""
    if item.scope.kind != "org":
        return None
    reviewers = settings.org_reviewers.get(item.scope.org_id) or []
    if not reviewers or who.user_id in reviewers:
        return None
    return (f"only the reviewers of org {item.scope.org_id!r} ({', '.join(reviewers)}) approve or reject what "
            "waits on its org-wide memory (the org_reviewers setting); ask one of them")


def _proposed(item: MemoryItem) -> tuple[str, str]:
    """Who proposed what waits on `item`, and when: its held edit's editor, else its author."""
    edit = held_edit(item)
    if edit is not None:
        return str(edit.get("by") or ""), str(edit.get("at") or "")
    return item.scope.user_id, item.created_at


def review_entry(item: MemoryItem) -> dict[str, Any]:
    """What waits on `item`, as a reviewer reads it: `kind` ("proposal": the held claim
    itself; "edit" or "retraction": a change held beside it), who proposed it and when,
    `content` as the item would read once approved and, for a held change, `old_content`
    as it reads now and the `fields` the change sets; why it was held (`rule_ids`, and the
    claims it contradicts, `held_against`) and when the hold lapses (`expires_at`)."""
    edit = held_edit(item)
    by, at = _proposed(item)
    if edit is not None:
        shown, patch = with_held_edit(item), dict(edit.get("patch") or {})
        kind = "retraction" if patch.get("validation") == "retracted" else "edit"
        return {**item_summary(shown), "kind": kind, "content": shown.content, "old_content": item.content,
                "old_title": item.title, "fields": sorted(patch), "confidence": item.confidence,
                "rule_ids": list(edit.get("rule_ids") or []),
                "held_against": list(edit.get(HELD_AGAINST) or []), "expires_at": edit.get("expires_at"),
                "created_at": at, "author": by}
    return {**item_summary(item), "kind": "proposal" if in_quarantine(item) else None, "content": item.content,
            "old_content": None, "old_title": None, "fields": [], "confidence": item.confidence,
            "rule_ids": list(item.metadata.get("rule_ids") or []),
            "held_against": list(item.metadata.get(HELD_AGAINST) or []), "expires_at": item.expires_at,
            "created_at": at, "author": by}


def pending_review(item: MemoryItem, who: Identity, settings: Settings) -> dict[str, Any]:
    """`review_entry` of `item` as the JSON listings name it (`online.schemas.PendingReview`:
    `GET /v1/review`, the `memory.review.list` action), with whether `who` may decide it
    (`review_refusal`: an org's reviewers decide what waits on its org-wide memory)."""
    entry = review_entry(item)
    refusal = review_refusal(item, who, settings)
    return {"id": entry["id"], "kind": entry["kind"], "type": entry["type"], "title": entry["title"],
            "scope": entry["scope"], "proposed_by": entry["author"], "proposed_at": str(entry["created_at"]),
            "new_content": entry["content"], "old_content": entry["old_content"], "old_title": entry["old_title"],
            "fields": entry["fields"], "rule_ids": entry["rule_ids"], "held_against": entry["held_against"],
            "expires_at": entry["expires_at"], "may_decide": refusal is None, "refusal": refusal}


__all__ = ["awaiting_review", "pending_review", "review_entry", "review_refusal"]
