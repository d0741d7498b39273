"""What the memory.* actions answer with: items, recall hits, verdicts and corrections as
stable JSON."""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

import msgspec

from pipelines.recall.conflicts import Corrections
from pipelines.recall.episodic import said_on, turn_title
from pipelines.records import MemoryItem, PalaceLocation


def item_summary(item: MemoryItem) -> dict[str, Any]:
    return {"id": item.id, "title": item.title, "type": item.type, "tier": item.tier,
            "tags": list(item.tags), "scope": item.scope.kind}


def item_out(item: MemoryItem) -> dict[str, Any]:
    return msgspec.to_builtins(item)


def hit_out(hit: Any, zone: tzinfo | None = None) -> dict[str, Any]:
    """A recall hit as the API gives it; a turn's title dates it on the asker's calendar (`zone`)."""
    item = hit.item
    return {
        "id": item.id, "score": round(float(hit.score), 6), "tier": item.tier, "type": item.type,
        "title": turn_title(item, zone), "content": item.content, "tags": list(item.tags),
        "scope": msgspec.to_builtins(item.scope), "source": str(getattr(hit, "source", "")),
        "conflict": bool(getattr(hit, "conflict", False)),
        "components": {k: float(v) for k, v in dict(getattr(hit, "components", {}) or {}).items()},
        "conflict_with": list(getattr(hit, "conflict_with", []) or []),
        "same_title": list(getattr(hit, "same_title", []) or []),
        "delivery": str(getattr(hit, "delivery", "catalog")),
        **({"pending_review": hit.pending_review} if getattr(hit, "pending_review", "") else {}),
        # when a claim holds, and whether that is over (or yet to come) at the time of asking;
        # a turn's time is the day it was said (as its title and the catalog say), no window
        **({"said_on": said_on(item, zone)} if item.type == "message" else
           {"valid_from": item.valid_from, "valid_to": item.valid_to} if item.valid_from or item.valid_to else {}),
        **({"window": hit.window} if getattr(hit, "window", "") else {}),
        # a turn whose claim curated corrections replaced since: which (`episodic.replaced_by`)
        **({"replaced_by": list(hit.replaced_by)} if getattr(hit, "replaced_by", ()) else {}),
        # a claim its author said otherwise of in later turns not kept as memory: which
        # (`episodic.said_later_otherwise`)
        **({"said_later": list(hit.said_later)} if getattr(hit, "said_later", ()) else {}),
    }


def verdict_out(v: Any) -> dict[str, Any]:
    return msgspec.to_builtins(v)


def palace_locations(items: list[MemoryItem]) -> list[PalaceLocation]:
    """Palace locations of items from `metadata["palace"]` (set by the pipeline), given as a
    `domain/room/shelf/card` path or a dict with those keys."""
    out = []
    for it in items:
        raw = it.metadata.get("palace")
        if isinstance(raw, str):
            parts = [p for p in raw.split("/") if p]
            if len(parts) == 4:
                out.append(PalaceLocation(it.id, *parts))
            elif len(parts) == 3:
                out.append(PalaceLocation(it.id, *parts, card=it.id))
        elif isinstance(raw, dict) and all(isinstance(raw.get(k), str) for k in ("domain", "room", "shelf")):
            out.append(PalaceLocation(it.id, raw["domain"], raw["room"], raw["shelf"],
                                      str(raw.get("card") or it.id)))
    return out


def corrections_payload(fixes: Corrections) -> dict[str, list[str]]:
    """An edit's or an approval's corrections as its inbox event carries them (as a
    proposal's do): `supersedes` the claims it replaces, `refines` those it corrects a
    detail of (`pipelines.materialize` folds them into links)."""
    return {**({"supersedes": fixes.replaced} if fixes.replaced else {}),
            **({"refines": fixes.in_part} if fixes.in_part else {})}


def corrections_out(fixes: Corrections) -> dict[str, list[str]]:
    """What the caller is told of them (the names a write's answer uses)."""
    return {**({"supersedes": fixes.replaced} if fixes.replaced else {}),
            **({"corrects_in_part": fixes.in_part} if fixes.in_part else {})}

