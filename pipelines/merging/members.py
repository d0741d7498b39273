"""Which members of a cluster may be merged: not those contradicting another member, nor
those the rule cannot tell agree with it (`contradicting_ids`), nor those holding at
another time (`for_other_times`)."""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.recall.conflicts import (
    Claim,
    conflict_reason,
    find_conflicts,
    is_claim,
    own_words_apart,
    read_claim,
    supersedes,
)
from pipelines.records import (
    MemoryItem,
    apart_in_time,
)


def contradicting_ids(cluster: Sequence[MemoryItem]) -> set[str]:
    """Ids of the members that contradict another member of `cluster` (both sides), by the
    rule recall uses. Members of one cluster are about one thing already (that is what
    clustering found), so two claims among them whose values disagree ("REST, no GraphQL"
    / "GraphQL instead of REST") are kept apart even when their wording shares too little
    for the rule's own subject test, and so are two the rule's reading cannot tell agree
    (`may_disagree`). Two people each saying something different of themselves
    (`own_words_apart`: "My laptop is a ThinkPad" / "My laptop is a MacBook") do not
    contradict each other, but are about two people: one item would say both of one; the
    same words of two people ("I work from home on Fridays") are two people's too: merged,
    the item is both authors' and neither's later correction would replace it."""
    apart = {item.id for pair in find_conflicts(cluster) for item in pair[:2]}
    claims = [read_claim(it) for it in cluster if it.active and is_claim(it)]
    for x, a in enumerate(claims):
        for b in claims[x + 1:]:
            if (not supersedes(a.item, b.item) and not supersedes(b.item, a.item)
                    and (conflict_reason(a, b, one_subject=True) or may_disagree(a, b) or own_words_apart(a, b))):
                apart.update((a.item.id, b.item.id))
    return apart


def may_disagree(a: Claim, b: Claim) -> bool:
    """Two claims of one cluster the conflict rule finds no conflict between, but whose
    reading (`conflicts.Claim`) gives no evidence that they say one thing: one denies what
    it says and the other does not ("Leo has no food allergies" / "Leo is allergic to
    peanuts"); one says something changed or ended (it updates, it does not restate:
    "gran moved into a care home" / "Grandma lives with us"); or they state no value in
    common ("We use npm for the frontend" / "The frontend uses pnpm": the rule reads no
    value in either). The rule finds about half the labelled conflicts at write time, so a
    merge asks for agreement rather than for no conflict found: it is bookkeeping and may
    wait, while a blend of an old state and a new one hides the contradiction recall
    resolves. Chosen on the tuned pairs of `loci bench merge` (conflicting pairs merged
    8 -> 0 of 44, restatements 8 -> 6 of 10); held-out and blind sets reported there."""
    if a.negated != b.negated:
        return True
    if any(c.changes is not None or c.ended for c in (a, b)):
        return True
    return not a.values & b.values


def for_other_times(cluster: Sequence[MemoryItem]) -> set[str]:
    """Ids of the members that hold at another time than some other member
    (`records.apart_in_time`: "on call this week" said in three different weeks, a stand-in
    until Friday beside the standing rule). They are kept out of the merge: one item would
    hold over the whole span, between the windows too, or lose the stand-in's end."""
    return {it.id for n, a in enumerate(cluster) for b in cluster[n + 1:] if apart_in_time(a, b) for it in (a, b)}
