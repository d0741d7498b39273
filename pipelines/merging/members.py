"""Which members of a cluster may be merged: the largest set of them no two of which
contradict each other, or which the rule cannot tell agree (`contradicting_ids`), and not
those holding at another time (`for_other_times`)."""

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

# Members in disagreements searched exactly for the largest agreeing set; beyond, the
# newest first, each kept when it agrees with those kept (clusters hold a handful).
MAX_EXACT_MEMBERS = 24


def contradicting_ids(cluster: Sequence[MemoryItem]) -> set[str]:
    """Ids of the members kept out of the merge because they disagree with another member
    (`disagreeing_pairs`): the largest set of members no two of which disagree merges, the
    newest such set when several are as large ("stored in TimescaleDB" twice and "stored in
    ClickHouse" once: the two merge, ClickHouse stays its own item, and recall resolves and
    reports the conflict between them). When no two members would be left to merge, every
    member of a disagreement is named (each stays as it is)."""
    pairs = disagreeing_pairs(cluster)
    if not pairs:
        return set()
    involved = {i for pair in pairs for i in pair}
    others = {it.id for it in cluster} - involved
    newest_first = [it.id for it in sorted(cluster, key=lambda it: (it.updated_at, it.id), reverse=True)
                    if it.id in involved]
    kept = _largest_agreeing(newest_first, pairs)
    return involved if len(kept) + len(others) < 2 else involved - kept


def disagreeing_pairs(cluster: Sequence[MemoryItem]) -> set[frozenset[str]]:
    """The pairs of members (ids) that contradict each other, by the rule recall uses.
    Members of one cluster are about one thing already (that is what clustering found), so
    two claims among them whose values disagree ("REST, no GraphQL" / "GraphQL instead of
    REST") disagree even when their wording shares too little for the rule's own subject
    test, and so do two the rule's reading cannot tell agree (`may_disagree`). Two people
    each saying something different of themselves (`own_words_apart`: "My laptop is a
    ThinkPad" / "My laptop is a MacBook") do not contradict each other, but are about two
    people: one item would say both of one; the same words of two people ("I work from home
    on Fridays") are two people's too: merged, the item is both authors' and neither's later
    correction would replace it."""
    pairs = {frozenset((a.id, b.id)) for a, b, *_ in find_conflicts(cluster)}
    claims = [read_claim(it) for it in cluster if it.active and is_claim(it)]
    for x, a in enumerate(claims):
        for b in claims[x + 1:]:
            if (not supersedes(a.item, b.item) and not supersedes(b.item, a.item)
                    and (conflict_reason(a, b, one_subject=True) or may_disagree(a, b) or own_words_apart(a, b))):
                pairs.add(frozenset((a.item.id, b.item.id)))
    return pairs


def _largest_agreeing(ids: Sequence[str], pairs: set[frozenset[str]]) -> set[str]:
    """The largest set of `ids` holding no pair of `pairs`, the earliest in `ids` preferred
    among sets as large (exact up to MAX_EXACT_MEMBERS ids; beyond, each in turn when it
    disagrees with none kept)."""
    against = {i: {j for pair in pairs if i in pair for j in pair if j != i} for i in ids}
    if len(ids) > MAX_EXACT_MEMBERS:
        greedy: set[str] = set()
        for i in ids:
            if not against[i] & greedy:
                greedy.add(i)
        return greedy
    best: list[str] = []

    def extend(n: int, chosen: list[str]) -> None:
        nonlocal best
        if len(chosen) + len(ids) - n <= len(best):
            return  # cannot beat the best found
        if n == len(ids):
            best = list(chosen)
            return
        if not against[ids[n]].intersection(chosen):
            extend(n + 1, [*chosen, ids[n]])
        extend(n + 1, chosen)

    extend(0, [])
    return set(best)


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
