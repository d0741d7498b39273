"""Conflict groups and their resolution: which member a caller is given, and how the others are marked."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from pipelines.records import SCOPE_RANK, MemoryItem, timestamp

from ..lexical import normalise_label
from .claim import Claim, is_claim, read_claim
from .pairs import VectorOf, VectorsOf, _pairs, _table
from .reasons import CORRECTED, MAY_UPDATE
from .rule import _updates, conflict_reason, names_a_case
from .table import ClaimTable


@dataclass
class Outcome:
    """What happens to one member of a conflict group."""

    resolution: str  # superseded | corrected | confidence | recency | scope | ambiguous | related | flagged | winner
    conflict_with: list[str] = field(default_factory=list)
    suppressed: bool = False
    winner: str | None = None


def groups(items: Sequence[MemoryItem], vector_of: VectorOf | None = None) -> list[list[MemoryItem]]:
    """Connected groups (two or more members) of conflicting or superseding claims."""
    return groups_in(_table(items), vector_of)


def groups_in(table: ClaimTable, vector_of: VectorOf | None = None,
              vectors_of: VectorsOf | None = None) -> list[list[MemoryItem]]:
    """`groups` of the claims of a table (recall: its candidates' rows of the corpus' table;
    `vectors_of` gathers the vectors of several of its rows at once)."""
    return [group for group, _ in groups_with_pairs(table, vector_of, vectors_of)]


def groups_with_pairs(table: ClaimTable, vector_of: VectorOf | None = None, vectors_of: VectorsOf | None = None
                      ) -> list[tuple[list[MemoryItem], set[frozenset[str]]]]:
    """`groups_in`, each with the pairs of member ids that conflict or supersede (what
    joined them), for `resolve`: two members of one group need not disagree (two claims
    that agree, each contradicted by a third)."""
    n = len(table)
    if n < 2:
        return []
    found = _pairs(table, vector_of, vectors_of)
    joined = found.replaces | (found.reason > 0)
    ids = found.ids  # one node per id, as the items are keyed
    ji, jj = found.i[joined].tolist(), found.j[joined].tolist()
    label = _components(int(ids.max()) + 1, ids[found.i[joined]].tolist(), ids[found.j[joined]].tolist())
    row_label = [label[node] for node in ids.tolist()]  # per row, read as lists (no numpy scalar per pair)
    by_label: dict[int, list[MemoryItem]] = {}
    for it, key in zip(table.items, row_label):
        by_label.setdefault(key, []).append(it)
    item_ids = [it.id for it in table.items]
    pairs: dict[int, set[frozenset[str]]] = {}
    for a, b in zip(ji, jj):
        pairs.setdefault(row_label[a], set()).add(frozenset((item_ids[a], item_ids[b])))
    return [(sorted(g, key=lambda it: it.id), pairs.get(key, set())) for key, g in by_label.items() if len(g) > 1]


def _components(nodes: int, a: Sequence[int], b: Sequence[int]) -> list[int]:
    """A component label per node of the undirected graph with edges (a[k], b[k]): union-find
    in plain Python, as a recall's few edges cost less than building a scipy graph."""
    parent = list(range(nodes))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for x, y in zip(a, b):
        rx, ry = root(x), root(y)
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)
    return [root(x) for x in range(nodes)]


def titles_may_stand_apart(a: str, b: str) -> bool:
    """Whether claims titled `a` and `b` (normalised, `Claim.title`) may be shown side by
    side by `names_a_case` or `_beside_under_one_title`: one title, or one title's words
    within the other's. Asked first, so most rivals are ranked without reading a claim
    (unpacking the members' claims was a tenth of a recall's conflict stage)."""
    if a and a == b:
        return True
    a_words, b_words = set(a.split()), set(b.split())
    return a_words < b_words or b_words < a_words


def _beside_under_one_title(a: Claim, b: Claim) -> bool:
    """Two claims share a title, their contents do not compare, and `a` (the one that would
    win) does not say what changed: neither corrects the other."""
    return bool(a.title) and a.title == b.title and conflict_reason(a, b) == MAY_UPDATE and not _updates(a, b)


def _resolve_one_scope(members: list[MemoryItem], mode: str, updated: Mapping[str, float] | None = None,
                       pairs: Collection[frozenset[str]] | None = None,
                       claims: Callable[[MemoryItem], Claim] = read_claim,
                       titles: Callable[[MemoryItem], str] | None = None) -> dict[str, Outcome]:
    """Within one scope kind: by confidence, then the newer. A member is beaten only by one
    it conflicts with (`pairs`; None: every two members do): two claims that agree, each
    contradicted by a third, both stand when they beat it."""
    ids = [m.id for m in members]
    if len(members) == 1:
        return {ids[0]: Outcome("winner")}
    if mode == "flag":
        return {m.id: Outcome("flagged", [i for i in ids if i != m.id]) for m in members}
    # Each member's update time parsed once (not in every sort comparison and test), or
    # read from `updated`.
    when = {id(m): timestamp(m.updated_at, float("-inf")) if updated is None else updated[m.id] for m in members}
    members = sorted(members, key=lambda m: (-m.confidence, -when[id(m)], m.id))
    standing: list[MemoryItem] = []  # not beaten, best first
    beat: dict[str, list[str]] = {}  # standing id -> the ids it beat
    tied: dict[str, list[str]] = {}  # standing id -> the standing ids it stays beside, flagged
    related: dict[str, list[str]] = {}  # standing id -> the notes under its title it stays beside
    out: dict[str, Outcome] = {}
    claim: dict[str, Claim] = {}  # each member's claim read once, only when a rival asks
    title: dict[str, str] = {}  # each member's title as its claim has it (`Claim.title`)

    def claim_of(it: MemoryItem) -> Claim | None:
        if it.id not in claim:  # None: a turn, grouped only by a claim's "contradicts" link to it
            claim[it.id] = claims(it) if is_claim(it) else None
        return claim[it.id]

    def title_of(it: MemoryItem) -> str:
        if it.id not in title:
            title[it.id] = normalise_label(it.title) if titles is None else titles(it)
        return title[it.id]

    def beside(s: MemoryItem, m: MemoryItem) -> bool:
        """Two notes under one title, each standing (`_beside_under_one_title`)."""
        if not title_of(s) or title_of(s) != title_of(m):
            return False  # told by the titles alone: no claim read
        a, b = claim_of(s), claim_of(m)
        return a is not None and b is not None and _beside_under_one_title(a, b)

    def beats(s: MemoryItem, m: MemoryItem) -> str | None:
        """Why the standing `s` (ranked above `m`) beats `m`, or None when both stay."""
        if titles_may_stand_apart(title_of(s), title_of(m)):
            a, b = claim_of(s), claim_of(m)
            if a is not None and b is not None and (names_a_case(a, b) or _beside_under_one_title(a, b)):
                return None  # a case beside the rule, or a note beside another: shown both
        if s.confidence > m.confidence + 1e-9:
            return "confidence"
        if when[id(s)] > when[id(m)]:  # the winner is newer
            return "recency"
        return None

    partners: dict[str, set[str]] = {}  # id -> the ids `pairs` pairs it with (looked up, not built per test)
    for pair in pairs or ():
        for a in pair:
            partners.setdefault(a, set()).update(pair - {a} or pair)
    for m in members:
        mine = partners.get(m.id, ())
        rivals = [s for s in standing if pairs is None or s.id in mine]
        if not rivals:
            standing.append(m)
            continue
        best = rivals[0]  # the best-ranked claim it disagrees with
        why = beats(best, m)
        if why is not None:
            out[m.id] = Outcome(why, [best.id], suppressed=True, winner=best.id)
            # every standing claim it disagrees with and would lose to has beaten it: each
            # is shown as the winner of a conflict, not only the best-ranked one
            for s in rivals:
                if s is best or beats(s, m) is not None:
                    beat.setdefault(s.id, []).append(m.id)
            continue
        standing.append(m)
        for s in rivals:
            next_to = related if beside(s, m) else tied
            next_to.setdefault(s.id, []).append(m.id)
            next_to.setdefault(m.id, []).append(s.id)
    for s in standing:
        if s.id in tied:
            out[s.id] = Outcome("ambiguous", [i for i in ids if i in tied[s.id]] if pairs is not None
                                else [k.id for k in standing if k.id != s.id and k.id not in related.get(s.id, ())])
        elif s.id in related:
            out[s.id] = Outcome("related", [i for i in ids if i in related[s.id]])
        elif s.id in beat:
            out[s.id] = Outcome(out[beat[s.id][0]].resolution, beat[s.id])
        else:
            out[s.id] = Outcome("winner")
    return out


def resolve(group: Sequence[MemoryItem], mode: str = "resolve", updated: Mapping[str, float] | None = None,
            pairs: Collection[frozenset[str]] | None = None,
            claims: Callable[[MemoryItem], Claim] = read_claim,
            titles: Callable[[MemoryItem], str] | None = None) -> dict[str, Outcome]:
    """Outcome per member id of one conflict group (see the module docstring). `updated`:
    each member's update time as `timestamp(updated_at, -inf)` gives it, already read (a
    recall takes them from its corpora's arrays), else parsed here. `pairs`: the member
    ids that conflict, as `groups_with_pairs` gives them (None: every two members do).
    `claims`: a member's claim (a recall unpacks it from its table, `ClaimTable.claim`);
    `titles`: a member's `normalise_label`d title (a recall reads its corpus' `title_key`)."""
    out: dict[str, Outcome] = {}
    live = []
    declared: dict[str, set[str]] = {}  # id -> members whose `supersedes` link names it
    refined: dict[str, set[str]] = {}  # id -> members whose `refines` link names it
    for o in group:
        for link in o.links:
            if link.rel == "supersedes":
                declared.setdefault(link.to, set()).add(o.id)
            elif link.rel == "refines":
                refined.setdefault(link.to, set()).add(o.id)
    for m in group:  # the first member that supersedes m (`supersedes(o, m)`), without asking every pair
        ids = declared.get(m.id, set()) | ({m.superseded_by} if m.superseded_by else set())
        ids.discard(m.id)
        by = next((o for o in group if o.id in ids), None) if ids else None
        if by is not None:
            out[m.id] = Outcome("superseded", [by.id], suppressed=True, winner=by.id)
        else:
            live.append(m)
    # A note a member corrects in part (its `refines` link) stays, for what the correction
    # did not touch: marked as corrected, shown after its correction (`CORRECTED`).
    by_ids = {m.id for m in live}
    for m in list(live):
        fixers = sorted(refined.get(m.id, set()) & by_ids - {m.id})
        if fixers:
            out[m.id] = Outcome(CORRECTED, fixers, winner=fixers[0])
            live.remove(m)
    by_scope: dict[str, list[MemoryItem]] = {}
    for m in live:
        by_scope.setdefault(m.scope.kind, []).append(m)
    kinds = sorted(by_scope, key=lambda k: SCOPE_RANK[k])
    applies: list[str] = []
    for kind in kinds:
        outcome = _resolve_one_scope(by_scope[kind], mode, updated, pairs, claims, titles)
        out.update(outcome)
        applies.extend(i for i, o in outcome.items() if not o.suppressed)
    if len(kinds) > 1:
        specific = [m.id for m in by_scope[kinds[0]] if not out[m.id].suppressed]
        for kind in kinds[1:]:
            for m in by_scope[kind]:
                o = out[m.id]
                if not o.suppressed:
                    out[m.id] = Outcome("scope", [*specific, *o.conflict_with], winner=specific[0])
        for i in specific:
            o = out[i]
            named = set(o.conflict_with)  # a set: groups of dozens of members made this cubic
            others = [x for x in applies if x != i and x not in named]
            out[i] = Outcome(o.resolution if o.resolution != "winner" else "scope",
                             [*o.conflict_with, *others])
    return out
