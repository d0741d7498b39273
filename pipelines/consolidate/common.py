"""Shared pieces of the consolidation stages: errors, the test hook, which items
consolidation acts on, and reading the inbox window."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pipelines.materialize import Overlay, fold_events
from pipelines.records import ITEM_TYPES, Event, MemoryItem, Scope
from pipelines.warehouse import Warehouse

Hook = Callable[[str], None]
REEMBED_COMMAND = "loci reembed"
EMBED_BATCH = 4096  # texts per embed() call: bounded memory (MiniLM runs each text alone, longest first)


class ConsolidationError(RuntimeError):
    """A consolidation stage cannot proceed (the message says why and what to do)."""


class InboxBehind(ConsolidationError):
    """The inbox ends before the seq this warehouse has already consumed."""

    def __init__(self, top: int, consumed: int) -> None:
        self.top, self.consumed = top, consumed
        super().__init__(
            f"the inbox ends at seq {top} but this warehouse has consumed it up to seq {consumed}: it is "
            "not the inbox this store was consolidated from (a new inbox_url, or an inbox restored from an "
            "older backup), and its events up to seq " f"{consumed} would never be consolidated. Copy the "
            "old inbox into it first (`loci inbox-copy`, docs/deploy.md) or point inbox_url back at it.")


class EmbedderChanged(ConsolidationError):
    """The configured embedder differs from the one the warehouse's vectors were made with."""

    def __init__(self, configured: str, stored: Sequence[tuple[str, int]]) -> None:
        self.configured = configured
        self.stored = list(stored)
        names = ", ".join(f"{m} ({d} dims)" for m, d in self.stored)
        super().__init__(
            f"the configured embedder {configured!r} differs from the one the warehouse was "
            f"embedded with ({names}); vectors of different models cannot be mixed. Run "
            f"`{REEMBED_COMMAND}` to re-embed every active item with {configured!r}, or set "
            f"LOCI_EMBEDDER back to the stored model (for MiniLM, LOCI_MINILM_PRECISION=auto, "
            f"float32 or bf16 names all-MiniLM-L6-v2, int8 all-MiniLM-L6-v2-int8-alone; a store "
            f"made with bf16 before 2026-11-28 is all-MiniLM-L6-v2-bf16; one made with int8 before "
            f"2026-11-29, all-MiniLM-L6-v2-int8, is re-embedded by the next run configured int8 or "
            f"auto, its last snapshot served meanwhile)."
        )


class MessageVectorsChanged(ConsolidationError):
    """The configured message-vector scheme (`message_context_*`) differs from the one some
    stored messages' vectors were made with: one store, one meaning (`loci reembed`)."""

    def __init__(self, configured: str, stored: dict[str, int]) -> None:
        self.configured = configured
        self.stored = dict(stored)
        names = ", ".join(f"{n} messages {s!r}" for s, n in sorted(self.stored.items()))
        super().__init__(
            f"message vectors are configured as {configured!r} (message_context_pooled / "
            f"message_context_composed) but the warehouse holds {names}; vectors made two ways "
            f"rank unevenly against each other. Run `{REEMBED_COMMAND}` to read every stored "
            f"session again the configured way and re-embed it, or set the setting back "
            f"(LOCI_MESSAGE_CONTEXT_POOLED=false for 'text', the default before 2026-11-28)."
            + (" A store pooled with another cut ('pooled 4/2': windows of 4 turns every 2, "
               "before the evening of 2026-11-28) has no setting to go back to: run "
               f"`{REEMBED_COMMAND}`." if any(s.startswith("pooled ") for s in self.stored) else "")
        )


def call_hook(hook: Hook | None, point: str) -> None:
    if hook is not None:
        hook(point)


# -- helpers ----------------------------------------------------------------------------






def read_window(inbox: Any, after: int) -> tuple[list[Event], int]:
    """Events with seq in (after, top], top read first: events appended meanwhile wait for
    the next run instead of being half-seen."""
    top = inbox.max_seq()
    if top < after:
        # Seqs never go back: this is another inbox than the one consumed so far (a new
        # inbox_url, an older backup). Its events up to `after` would be skipped for ever.
        raise InboxBehind(top, after)
    if top == after:
        return [], after
    return [e for e in inbox.read_after(after) if e.seq <= top], top


def stm_by_partition(items: Iterable[MemoryItem]) -> dict[str, int]:
    """Short-term items consolidation can act on (see `mergeable`: not verbatim chat
    messages, which age out instead, nor quarantined items, which expire), per owner
    partition. This is what the threshold sensor compares with `settings.stm_threshold`."""
    counts = Counter(i.scope.partition_key() for i in items if mergeable(i))
    return dict(sorted(counts.items()))


def last_successful_run(warehouse: Warehouse) -> dict[str, Any] | None:
    """The most recent successful run among the last 20 recorded (None: none), whose counts
    say what its stages checked and with which model or policy."""
    return next((run for run in warehouse.runs(limit=20) if run["status"] == "success"), None)


def pending_stm_by_partition(events: Sequence[Event]) -> dict[str, int]:
    """`stm_by_partition` of the items `events` will create, derived with the same fold the
    pipeline uses (policy not re-run: the online verdicts)."""
    relevant = [e for e in events if e.kind in ("turn", "proposal", "memory.write")]
    overlay, _ = fold_skipping_bad(relevant, lambda _id: None, None)
    return stm_by_partition(overlay.items.values())


# -- 4. clusters -------------------------------------------------------------------------

# Verbatim chat turns stay episodic records (recall over raw conversation needs them); they
# age out instead of being merged. Quarantined items are not merged either: a merge would
# launder an unverified item into a canonical one.
NOT_MERGED_TYPES = frozenset({"message"})
# The types consolidation may merge: a store's many raw turns are never read to cluster or count.
MERGEABLE_TYPES = [t for t in ITEM_TYPES if t not in NOT_MERGED_TYPES]


def mergeable(item: MemoryItem) -> bool:
    return item.active and mergeable_kind(item.tier, item.type, item.metadata.get("verdict"), item.validation)


def mergeable_kind(tier: str, item_type: str, verdict: Any, validation: str) -> bool:
    """`mergeable` for an active item, from the only fields it reads."""
    return tier == "stm" and item_type not in NOT_MERGED_TYPES and verdict != "quarantine" and validation != "retracted"


def stored_stm_by_partition(warehouse: Warehouse) -> dict[str, int]:
    """`stm_by_partition` of the warehouse's active items, counted by SQL per owner and the
    fields `mergeable` reads: no item is loaded (decoding a large store's short-term items
    cost a run ~0.2 s)."""
    counts: Counter = Counter()
    for owner, item_type, verdict, validation, n in warehouse.active_owner_counts(tier="stm", types=MERGEABLE_TYPES):
        if mergeable_kind("stm", item_type, verdict, validation):
            counts[Scope(**owner).partition_key()] += n
    return dict(sorted(counts.items()))


def fold_skipping_bad(
    events: list[Event], base: Callable[[str], MemoryItem | None], policy: Any
) -> tuple[Overlay, list[str]]:
    """fold_events, but an event the fold cannot read (malformed payload) is skipped and
    reported instead of blocking every later run on the same event."""
    try:
        return fold_events(events, base=base, policy=policy), []
    except Exception:  # noqa: BLE001 - isolate the bad events below, then report them
        pass
    bad: list[str] = []
    good: list[Event] = []
    for e in events:
        try:
            fold_events([e], base=base, policy=policy)
            good.append(e)
        except Exception as exc:  # noqa: BLE001
            bad.append(f"{e.event_id}: {type(exc).__name__}: {exc}")
    return fold_events(good, base=base, policy=policy), bad
