"""The memory.* actions that read: search, read, the palace, the review queue and stats."""

from __future__ import annotations

from typing import Any

import msgspec

from online.state import View
from online.tools.args import (
    PalaceGetArgs,
    PalaceListArgs,
    ReadArgs,
    ReviewListArgs,
    SearchArgs,
    StatsArgs,
    ToolError,
    asker_zone,
    decode,
)
from online.tools.base import Actions
from online.tools.shaping import hit_out, item_out, item_summary, palace_locations
from pipelines.item_report import as_read, text_withheld
from pipelines.palace import palace_get, palace_list
from pipelines.recall.episodic import is_message
from pipelines.records import Identity, MemoryItem, time_zone

SAID = "what was said, not verified; not authoritative"  # a raw turn among search hits, as recall's block heads them


def searched(hits: Any) -> list[Any]:
    """A search's hits as `/v1/recall` gives them: the curated memories first, then the raw
    turns as evidence (`SAID`); recall gives no turn that states nothing, a question ("what
    time is bedtime again?") or small talk ("ok thanks"): `episodic.states_nothing`."""
    return [h for h in hits if not is_message(h.item)] + [h for h in hits if is_message(h.item)]


def shelved(view: View, who: Identity) -> list[MemoryItem]:
    """What the palace shows `who` on its shelves: the items they may see, none retracted (a
    forgotten item's tombstone has no title to shelve, `item_report.as_read`)."""
    return [it for it in view.visible_items(who) if not text_withheld(it)]


class ReadActions(Actions):
    """memory.search, memory.read, memory.palace.list/get, memory.review.list, memory.stats."""

    def search(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = decode(SearchArgs, raw, "memory.search")
        if not args.query.strip():
            raise ToolError(400, "memory.search: query is empty")
        tz = asker_zone(args.tz, "memory.search: tz")
        k = args.k or self.service.settings.recall_k
        result = self.service.recall(args.query, who, mode="catalog", k=k, tags=args.tags,
                                     tier=args.tier, type=args.type, scope=args.scope, view=view,
                                     record_usage=False, tz=tz, own_words=args.own_words)
        hits = searched(result.hits)
        ids = [h.item.id for h in hits]
        self.service.audit(who, "memory.search", msgspec.to_builtins(args), ids)
        if ids:
            self.service.record_usage(who, ids, args.query)
        zone = time_zone(tz or self.service.settings.timezone)
        return {"found": bool(hits), "message": result.message,  # recall's words (`render.found_message`)
                "hits": [{**hit_out(h, zone), **({"evidence": SAID} if is_message(h.item) else {}),
                          **({"replaced": gone} if (gone := self.replaced(h.item, who, view)) else {})}
                         for h in hits]}

    def replaced(self, item: MemoryItem, who: Identity, view: View) -> list[dict[str, Any]]:
        """What a correction replaced (its `supersedes` links): each claim's id and title, who
        stated it and when (`stated_at`), and when it was replaced (`replaced_at`: the
        correction's approval, else its writing), so a search hit answers "what did this
        change, and when?". Not what it said: a search answers with what holds, and the old
        words beside it would read as evidence; `memory.read` of the id gives them, under
        `replaced`. One the caller may not see, or a forgotten one, is left out."""
        out = []
        for link in item.links:
            if link.rel != "supersedes":
                continue
            old = self.service.get_item(link.to, who, view)
            if old is None:
                retired = self.service.retired(link.to, who, view)
                old = retired[0] if retired is not None else None
            if old is None or text_withheld(old):
                continue
            review = item.metadata.get("review")
            approved = review.get("at") if isinstance(review, dict) and review.get("decision") == "approve" else None
            out.append({"id": old.id, "title": old.title, "by": old.scope.user_id,
                        "stated_at": old.created_at, "replaced_at": approved or item.created_at})
        return out

    def read(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = decode(ReadArgs, raw, "memory.read")
        items, missing = [], []
        superseded: dict[str, str] = {}
        for item_id in dict.fromkeys(args.ids):
            item = self.service.get_item(item_id, who, view)
            if item is None:
                missing.append(item_id)
                continue
            out = item_out(as_read(item))  # a forgotten one as its tombstone, to its author too
            replaced = self.service.replaced_by(item_id, who, view)  # a correction since the snapshot
            if replaced is not None and replaced[1] == "superseded":
                out["superseded_by"] = superseded[item_id] = replaced[0]
            items.append(out)
        merged = {i: into for i in missing if (into := self.service.merged_into(i, who, view)) is not None}
        archived, replaced_items = [], []
        for item_id in missing:
            retired = None if item_id in merged else self.service.retired(item_id, who, view)
            if retired is not None:
                if retired[1] is not None:
                    superseded[item_id] = retired[1][0]
                    if retired[1][1] == "superseded" and retired[0].validation != "retracted":
                        # What a correction replaced, as last stored (what it said, by whom,
                        # when): "what was it before, and when did it change?" over MCP too.
                        replaced_items.append({**item_out(retired[0]), "superseded_by": retired[1][0]})
                if retired[0].archived:
                    archived.append(item_id)
        self.service.audit(who, "memory.read", msgspec.to_builtins(args),
                           [i["id"] for i in items] + sorted({*superseded, *archived} - {i["id"] for i in items}))
        # Each only when it applies: `merged_into` (consolidation merged a missing id: where to
        # read it now), `superseded_by` (a correction replaced it; `replaced`: those items as
        # last stored), `archived` (it expired or aged out; `GET /v1/items/{id}` gives it as
        # last stored, with its history).
        return {"items": items, "missing": missing, **({"merged_into": merged} if merged else {}),
                **({"superseded_by": superseded} if superseded else {}),
                **({"replaced": replaced_items} if replaced_items else {}),
                **({"archived": archived} if archived else {})}

    def palace_list(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = decode(PalaceListArgs, raw, "memory.palace.list")
        try:
            children = list(palace_list(palace_locations(shelved(view, who)), args.path))
        except ValueError as exc:
            raise ToolError(400, f"memory.palace.list: {exc}") from None
        self.service.audit(who, "memory.palace.list", msgspec.to_builtins(args))
        return {"path": args.path, "children": children}

    def palace_get(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        args = decode(PalaceGetArgs, raw, "memory.palace.get")
        visible = {it.id: it for it in shelved(view, who)}
        try:
            found = palace_get(palace_locations(list(visible.values())), args.location)
        except ValueError as exc:
            raise ToolError(400, f"memory.palace.get: {exc}") from None
        ids = [i for i in found if i in visible]
        self.service.audit(who, "memory.palace.get", msgspec.to_builtins(args), ids)
        return {"location": args.location, "items": [item_summary(visible[i]) for i in ids]}

    def review_list(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        """What waits for a reviewer among what the caller may see (`online.review`, the one
        queue `GET /v1/review` and the browser list), audited by ids."""
        from online.review import awaiting_review, pending_review  # online.review lists with item_summary

        args = decode(ReviewListArgs, raw, "memory.review.list")
        held = awaiting_review(view, who)
        self.service.audit(who, "memory.review.list", msgspec.to_builtins(args), [it.id for it in held])
        return {"count": len(held), "pending": [pending_review(it, who, self.service.settings) for it in held]}

    def stats(self, raw: Any, who: Identity, view: View) -> dict[str, Any]:
        """What the service serves, item counts limited to the caller's (like /v1/stats)."""
        args = decode(StatsArgs, raw, "memory.stats")
        report = self.service.visible_report(who, view)
        self.service.audit(who, "memory.stats", msgspec.to_builtins(args))
        return report
