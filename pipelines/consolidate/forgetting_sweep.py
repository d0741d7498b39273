"""The one-off forgetting sweep: a store that forgot things before forgetting reached every
copy is brought to today's rule once, where a user gets it without asking.

Until 2026-11-28 forgetting a claim left the raw turns that said it unretracted, and the
retrieval context of the turns next to them (or next to a turn its speaker forgot) quoting
them: its text, recorded turns and pooled windows, so searching the forgotten words still
found the neighbours until an export. Migration 005 marks every store for this sweep; the
next consolidation run (`govern_items`) or `loci reembed` (`reembed_all`) makes it: the
one forgetting rule (`pipelines.forgetting.forget_turns`, as the service, consolidation
and export apply it) over everything forgotten so far, stored as the pipeline's own
revisions (reason `forgetting_sweep`), then the sweep is recorded as done. The changed
turns' vectors go stale and are embedded again by the run's embedding stage (or by the
re-embedding); the run publishes a snapshot with them.
"""

from __future__ import annotations

from pipelines.forgetting import forget_turns, is_forgotten, owners
from pipelines.warehouse import Warehouse

SWEEP_KEY = "forgetting_sweep"  # the `ingest_state` row migration 005 marks
SWEEP_REASON = "forgetting_sweep"  # the revision reason of what it changes


def sweep_forgetting(warehouse: Warehouse) -> int:
    """Make the pending forgetting sweep (nothing when none is pending): every turn that
    said a forgotten claim retracted, every context quoting a forgotten turn rebuilt
    without it, in one transaction with the sweep recorded as done. Returns how many
    turns it changed. Running it on a store already swept (or brought up under the rule)
    changes nothing: `forget_turns` changes only what still quotes or says what was forgotten."""
    if not warehouse.sweep_pending(SWEEP_KEY):
        return 0
    forgotten = [it for it in warehouse.retracted_items() if is_forgotten(it)]
    turns = {t.id: t for t in warehouse.owned_messages(sorted(owners(forgotten)))} if forgotten else {}
    changed = forget_turns(forgotten, turns.values())
    patches = {}
    for item_id, new in changed.items():
        old = turns[item_id]
        patch = {name: getattr(new, name) for name in ("validation", "metadata")
                 if getattr(new, name) != getattr(old, name)}
        if patch:
            patches[item_id] = patch
    with warehouse.transaction():
        if patches:
            warehouse.update_items(patches, reason=SWEEP_REASON, touch=False, current=turns)
        warehouse.finish_sweep(SWEEP_KEY)
    return len(patches)
