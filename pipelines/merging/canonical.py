"""The canonical item of a merge: its confidence (`merge_confidence`, floored by
`merged_item_confidence`), provenance union, links and deterministic id, the draft sent
through the write policy like any proposal (`merge_cluster`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import msgspec

from pipelines.materialize import DISAGREES_WITH, SAID_DATES
from pipelines.merging.drafts import (
    EXTRACTIVE_NAME,
    FALLBACK_NAME,
    ExtractiveMerger,
    MergeDraft,
    MergeError,
    Merger,
    canonical_order,
    checked_cluster,
    majority_type,
)
from pipelines.recall.conflicts import (
    authors,
)
from pipelines.records import (
    ITEM_TYPES,
    Link,
    MemoryItem,
    ProposedItem,
    Provenance,
    Verdict,
    parse_time,
    stable_id,
)
from pipelines.settings import Settings

MERGE_REASON = "consolidation_merge"


def _aware(now: datetime) -> datetime:
    if not isinstance(now, datetime):
        raise MergeError(f"now must be a datetime, not {type(now).__name__}")
    return now if now.tzinfo else now.replace(tzinfo=timezone.utc)


# -- merge confidence ----------------------------------------------------------------------


def merged_item_confidence(cluster: Sequence[MemoryItem], settings: Settings, now: datetime) -> float:
    """The merged item's confidence: the formula, but never below the least confident
    member's. Members of a merge agree (contradictions are kept apart), so one item saying
    what each of them said is no less trustworthy than any of them; without the floor, two
    untagged, unverified 0.9 claims merge into a 0.61 one that recall's 0.7 threshold no
    longer injects, and consolidating would make the memory worse than not consolidating.
    A retracted member lifts the floor: the formula alone decides then."""
    formula = merge_confidence(cluster, settings, now)
    if any(i.validation == "retracted" for i in cluster):
        return formula
    return max(formula, min(float(i.confidence) for i in cluster))


def merge_confidence(cluster: Sequence[MemoryItem], settings: Settings, now: datetime) -> float:
    """w_max * max confidence + w_overlap * Jaccard tag overlap (share of distinct tags,
    case-insensitive, carried by >= 2 items) + w_recency * exp(-lambda * days since the
    newest updated_at; 0.5 when no date parses) + w_validation * (0 if any retracted, 1 if
    any verified, else 0.5); clamped to [0, 1]."""
    items = checked_cluster(cluster)
    now = _aware(now)
    max_conf = max(float(i.confidence) for i in items)

    tag_counts: Counter[str] = Counter()
    for item in items:
        tag_counts.update({t.lower() for t in item.tags})
    overlap = (sum(1 for n in tag_counts.values() if n >= 2) / len(tag_counts)) if tag_counts else 0.0

    dates = [d for d in (parse_time(i.updated_at) for i in items) if d is not None]
    if dates:
        days = max((now - max(dates)).total_seconds() / 86400.0, 0.0)
        recency = min(math.exp(-settings.recency_lambda * days), 1.0)
    else:
        recency = 0.5

    validations = {i.validation for i in items}
    bonus = 0.0 if "retracted" in validations else 1.0 if "verified" in validations else 0.5

    blended = (
        settings.merge_w_max * max_conf
        + settings.merge_w_overlap * overlap
        + settings.merge_w_recency * recency
        + settings.merge_w_validation * bonus
    )
    return max(0.0, min(1.0, blended))


# -- the canonical item ------------------------------------------------------------------------


@dataclass
class MergeOutcome:
    """`skipped` is None when merged, else why not (truthy, so it doubles as the flag)."""

    new_item: MemoryItem | None
    superseded_ids: tuple[str, ...]
    links: list[tuple[str, str, str]] = field(default_factory=list)  # (src, dst, rel)
    revision_reason: str = MERGE_REASON
    verdict: Verdict | None = None
    skipped: str | None = None
    draft: MergeDraft | None = None
    confidence: float = 0.0
    refused: list[tuple[str, Verdict]] = field(default_factory=list)  # (merger, verdict)


def merged_item_id(item_ids: Sequence[str]) -> str:
    return stable_id("mem", "merge", *sorted(item_ids))


def merged_provenance(items: Sequence[MemoryItem], now: datetime) -> tuple[Provenance, list[str]]:
    """Union of the items' provenance (canonical order), and every distinct source id."""
    kinds = {i.provenance.source_kind for i in items}
    source_ids = union_exact([[i.provenance.source_id] for i in items])
    prov = Provenance(
        source_kind=kinds.pop() if len(kinds) == 1 else "mixed",
        source_id=source_ids[0] if source_ids else "",
        chunk_ids=union_exact([i.provenance.chunk_ids for i in items]),
        content_hashes=union_exact([i.provenance.content_hashes for i in items]),
        turn_refs=union_exact([i.provenance.turn_refs for i in items]),
        event_ids=union_exact([i.provenance.event_ids for i in items]),
        created_at=_aware(now).isoformat(timespec="microseconds"),
    )
    return prov, source_ids


def union_exact(values: Sequence[Sequence[str]]) -> list[str]:
    """Union of ids in first-seen order (exact match; empty strings dropped)."""
    return list(dict.fromkeys(v for group in values for v in group if v))


def _validation(items: Sequence[MemoryItem]) -> str:
    states = {i.validation for i in items}
    if "verified" in states and "retracted" not in states:
        return "verified"
    if states & {"contested", "retracted"}:
        return "contested"
    return "unverified"


def _min_time(values: Sequence[str | None]) -> str | None:
    parsed = [(d, v) for v in values if v and (d := parse_time(v)) is not None]
    return min(parsed)[1] if parsed else None


def _max_time(values: Sequence[str | None]) -> str | None:
    parsed = [(d, v) for v in values if v and (d := parse_time(v)) is not None]
    return max(parsed)[1] if parsed else None


def _safe_draft(merger: Merger, items: list[MemoryItem], settings: Settings) -> MergeDraft:
    """A custom merger that raises must not stop the run: its cluster gets the extractive
    draft, recorded as a fallback with the error."""
    try:
        draft = merger.draft(items)
        if not isinstance(draft, MergeDraft):
            raise TypeError(f"draft() returned {type(draft).__name__}, not MergeDraft")
        return draft
    except MergeError:
        raise
    except Exception as exc:
        name = getattr(merger, "name", type(merger).__name__)
        fallback = ExtractiveMerger(settings.max_content_chars).draft(items)
        return msgspec.structs.replace(
            fallback, merger=FALLBACK_NAME, fallback_reason=f"merger {name} failed: {type(exc).__name__}: {exc}"
        )


def _proposal(draft: MergeDraft, items: Sequence[MemoryItem], confidence: float, prov: Provenance,
              valid_from: str | None, valid_to: str | None) -> ProposedItem:
    return ProposedItem(
        type=draft.type,
        title=draft.title,
        content=draft.content,
        tags=list(draft.tags),
        entities=list(draft.entities),
        why_store=f"consolidation: canonical merge of {len(items)} related memories",
        importance=max(i.importance for i in items),
        confidence=confidence,
        tier="mtm",
        scope=items[0].scope.kind,
        provenance_hint={"source_kind": prov.source_kind, "source_id": prov.source_id},
        valid_from=valid_from,
        valid_to=valid_to,
    )


def _first_accepted_draft(
    items: Sequence[MemoryItem],
    first: MergeDraft,
    governed: Callable[[MergeDraft], Verdict],
    settings: Settings,
) -> tuple[tuple[MergeDraft, Verdict] | None, list[tuple[str, Verdict]]]:
    """The first draft the policy accepts: the merger's, then, if the policy refused a model
    draft, the extractive one (which says why it replaced the model's). Returns the
    accepted (draft, verdict) or None, and every refusal as (merger name, verdict)."""
    drafts = [first]
    refused: list[tuple[str, Verdict]] = []
    while drafts:
        draft = drafts.pop(0)
        if draft.type not in ITEM_TYPES:
            draft = msgspec.structs.replace(draft, type=majority_type(items))
        verdict = governed(draft)
        if verdict.action == "accept" and not verdict.hard_block:
            return (draft, verdict), refused
        refused.append((draft.merger, verdict))
        if draft.merger not in (EXTRACTIVE_NAME, FALLBACK_NAME):
            why = "; ".join(verdict.reasons) or ", ".join(verdict.rule_ids) or "no reason given"
            fallback = ExtractiveMerger(settings.max_content_chars).draft(items)
            drafts.append(msgspec.structs.replace(
                fallback, merger=FALLBACK_NAME,
                fallback_reason=f"policy refused the {draft.merger} draft ({verdict.action}): {why}",
            ))  # fmt: skip
    return None, refused


def _merged_links(
    new_id: str, ids: Sequence[str], items: Sequence[MemoryItem]
) -> tuple[list[tuple[str, str, str]], list[Link]]:
    """The merged item's links: `derived_from` and `supersedes` to every original (also as
    warehouse link rows), then the originals' links to items outside the cluster, once."""
    links = [(new_id, old, rel) for old in ids for rel in ("derived_from", "supersedes")]
    own = {(rel, dst) for _, dst, rel in links}
    item_links = [Link(rel, dst) for _, dst, rel in links]  # type: ignore[arg-type]
    for link in (link for i in items for link in i.links if link.to not in ids and link.to != new_id):
        if (link.rel, link.to) not in own:
            own.add((link.rel, link.to))
            item_links.append(link)
    return links, item_links


def said_dates(items: Sequence[MemoryItem]) -> dict[str, Any] | None:
    """What the members' time words meant the day they were said (`SAID_DATES`), for the
    item merging them: the first said's, with what the others said that day added (members
    hold in one window, `for_other_times`: their words meant its days)."""
    noted = sorted((i for i in items if isinstance(i.metadata.get(SAID_DATES), dict)
                    and isinstance(i.metadata[SAID_DATES].get("meant"), dict)), key=lambda i: i.created_at)
    if not noted:
        return None
    first = noted[0].metadata[SAID_DATES]
    meant: dict[str, str] = {}
    for item in noted:
        if item.metadata[SAID_DATES].get("on") == first.get("on"):
            meant = {**item.metadata[SAID_DATES]["meant"], **meant}
    return {**first, "meant": meant}


def _disagreed(items: Sequence[MemoryItem], ids: Sequence[str]) -> list[str]:
    """The claims outside the cluster its members disagree with (`DISAGREES_WITH`), once,
    in order."""
    return [other for other in union_exact([[str(i) for i in it.metadata.get(DISAGREES_WITH) or ()]
                                             for it in items]) if other not in ids]


def merge_cluster(
    cluster: Sequence[MemoryItem],
    merger: Merger,
    policy: Any,
    *,
    settings: Settings,
    now: datetime,
) -> MergeOutcome:
    """Merge a cluster into one canonical MTM item, governed by `policy` (any object with
    `evaluate(item, *, target_tier, provenance) -> Verdict`). A refused model draft falls
    back to the extractive draft; if that is refused too, nothing is merged. Raises
    MergeError for an unusable cluster (empty, duplicate ids, several partitions)."""
    items = canonical_order(checked_cluster(cluster))
    if len(items) < 2:
        raise MergeError("a merge needs at least 2 items")
    if not callable(getattr(policy, "evaluate", None)):
        raise MergeError(f"policy must have an evaluate() method, got {type(policy).__name__}")
    now = _aware(now)
    ids = sorted(i.id for i in items)
    confidence = merged_item_confidence(items, settings, now)
    prov, source_ids = merged_provenance(items, now)
    valid_from = _min_time([i.valid_from for i in items])
    valid_to = _max_time([i.valid_to for i in items])

    def governed(draft: MergeDraft) -> Verdict:
        proposal = _proposal(draft, items, confidence, prov, valid_from, valid_to)
        return policy.evaluate(proposal, target_tier="mtm", provenance=prov)

    chosen, refused = _first_accepted_draft(items, _safe_draft(merger, items, settings), governed, settings)
    if chosen is None:
        last = refused[-1][1]
        reasons = "; ".join(f"{name}: {v.action} ({', '.join(v.rule_ids or v.reasons) or 'no reason'})"
                            for name, v in refused)
        return MergeOutcome(None, tuple(ids), verdict=last, skipped=f"policy refused every draft: {reasons}",
                            confidence=confidence, refused=refused)

    draft, verdict = chosen
    new_id = merged_item_id(ids)
    links, item_links = _merged_links(new_id, ids, items)
    new_item = MemoryItem(
        id=new_id,
        tier="mtm",
        type=verdict.rewritten_type if verdict.rewritten_type in ITEM_TYPES else draft.type,  # type: ignore[arg-type]
        title=draft.title,
        content=draft.content,
        scope=items[0].scope,
        tags=list(draft.tags),
        entities=list(draft.entities),
        links=item_links,
        provenance=prov,
        confidence=confidence,
        importance=max(i.importance for i in items),
        validation=_validation(items),  # type: ignore[arg-type]
        valid_from=valid_from,
        valid_to=valid_to,
        created_at=_min_time([i.created_at for i in items]) or now.isoformat(timespec="microseconds"),
        # As new as its newest member: merging is bookkeeping, and a merge must not win a
        # conflict by recency over a later claim outside the cluster.
        updated_at=_max_time([i.updated_at for i in items]) or now.isoformat(timespec="microseconds"),
        usage_count=sum(i.usage_count for i in items),
        last_used_at=_max_time([i.last_used_at for i in items]),
        metadata={
            "merger": draft.merger,
            "fallback_reason": draft.fallback_reason,
            "merged_from": ids,
            # Whose claim it is (`conflicts.authors`): filed under one member's owner, it is
            # every member's author's, so no one of them corrects it alone.
            "authors": sorted(set().union(*(authors(i) for i in items))),
            "policy_version": verdict.policy_version,
            "verdict": verdict.action,
            "merge_confidence": round(confidence, 6),
            "source_ids": source_ids,
            # What its members disagreed with when written stays disagreed with: the merged
            # claim is what answers for them now (recall pulls the two in together).
            **({DISAGREES_WITH: disagreed} if (disagreed := _disagreed(items, ids)) else {}),
            # "next Tuesday" means the day it meant when said, merged or not
            **({SAID_DATES: dates} if (dates := said_dates(items)) else {}),
        },
    )
    return MergeOutcome(new_item, tuple(ids), links, MERGE_REASON, verdict, None, draft, confidence, refused)
