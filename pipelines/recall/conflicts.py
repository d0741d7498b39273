"""The conflict rule: which claims disagree, and which of them a caller should be given.

Used by recall (at query time, over the candidates) and by `/v1/conflicts` (over everything
a caller may see), so both answer the same question the same way.

Two claims (types whose title names something asserted: fact, decision, preference, ...;
raw chat turns, summaries, pointers and todos are not claims) **conflict** when:

- one links to the other with `contradicts`; or
- they have the same normalised title and different content; or
- they are about the same subject and state different values. Same subject: the words
  before the first stated value agree ("Telemetry retention is 30 days" / "Telemetry
  retention is 90 days in orion"), or most of their non-value words are shared (the
  overlap coefficient of the smaller set, at least two words), or their embeddings are very
  close and half their words shared. Values: numbers and times (with their unit word),
  ISO dates, and capitalised names inside a sentence. Different values: both state some,
  and neither set contains the other (a claim that adds a value refines, not contradicts).
  Values stated in the titles name the subject: claims whose titles both state values,
  and different ones, are about different things.

A `supersedes` link is not a conflict but an answer to one: the superseded claim is never
given when the superseding one is visible.

**Resolution** of a group of conflicting claims:

1. Superseded members drop out.
2. Across scopes, the more specific scope applies (session > project > user > org): the
   broader members stay, ordered after it and marked as overridden (`scope`).
3. Within one scope: the higher confidence wins, then the newer (updated_at); members equal
   on both are ambiguous and all stay, flagged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from pipelines.records import SCOPE_RANK, MemoryItem, Scope, timestamp

from .lexical import STOPWORDS, normalise_label, words

# Types whose title names a claim, so two of them can disagree.
CLAIM_TYPES = frozenset({"fact", "decision", "definition", "constraint", "preference",
                         "pattern", "note"})
SUBJECT_OVERLAP = 0.75  # overlap coefficient of the non-value words
SUBJECT_COSINE = 0.85  # embedding similarity that, with half the words shared, is one subject
MAX_BUCKET = 200  # a word shared by more claims than this does not propose pairs

_NUMBER = re.compile(r"(?<![\w-])\d+(?:[.,:]\d+)*(?:\s*(?:%|[a-z]+))?", re.IGNORECASE)
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w-]*[A-Z0-9][\w-]*\b|(?<=[a-z,;:]\s)[A-Z][\w-]+")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)([A-Z][\w-]*)")


@dataclass(frozen=True)
class Claim:
    """What the rule reads of one item: its subject words and the values it states."""

    item: MemoryItem
    title: str
    content: str
    subject: tuple[str, ...]
    words: frozenset[str]
    values: frozenset[str]
    title_values: frozenset[str]
    contradicts: frozenset[str] = frozenset()  # ids this item links to with `contradicts`
    supersedes: frozenset[str] = frozenset()  # ids it replaces (its `supersedes` links)


def is_claim(item: MemoryItem) -> bool:
    return item.type in CLAIM_TYPES and item.validation != "retracted"


def stated_values(text: str) -> frozenset[str]:
    """Numbers and times with their unit, ISO dates, and names capitalised mid-sentence."""
    found = set(_DATE.findall(text))
    rest = _DATE.sub(" ", text)
    found |= {m.group(0).lower().replace(",", ".") for m in _NUMBER.finditer(rest)}
    starts = {m.group(1) for m in _SENTENCE_START.finditer(text)}
    found |= {m.group(0).lower() for m in _NAME.finditer(text) if m.group(0) not in starts}
    return frozenset(v.strip() for v in found if v.strip())


def _value_words(values: Iterable[str]) -> set[str]:
    return {w for v in values for w in words(v)}


_CLAIMS: dict[tuple[str, str, str, str], Claim] = {}
_CLAIMS_MAX = 100_000


def read_claim(item: MemoryItem) -> Claim:
    """The claim of `item`, read once per item version: recall meets the same items request
    after request, and reading is regex work. Links are read afresh each time."""
    key = (item.id, item.updated_at, item.title, item.content)
    cached = _CLAIMS.get(key)
    if cached is None:
        if len(_CLAIMS) >= _CLAIMS_MAX:
            _CLAIMS.clear()
        cached = _CLAIMS[key] = _read_claim(item)
    return replace(cached, item=item,
                   contradicts=frozenset(link.to for link in item.links if link.rel == "contradicts"),
                   supersedes=frozenset(link.to for link in item.links if link.rel == "supersedes"))


def _read_claim(item: MemoryItem) -> Claim:
    values = stated_values(item.content)
    skip = _value_words(values)
    toks = [w for w in words(item.content) if w not in STOPWORDS]
    first_value = next((i for i, w in enumerate(toks) if w in skip), len(toks))
    subject = tuple(w for w in toks[:first_value] if w not in skip)
    content_words = frozenset(w for w in toks if w not in skip)
    title = normalise_label(item.title)
    return Claim(item=item, title=title, content=normalise_label(item.content),
                 subject=subject if values else (), words=content_words, values=values,
                 title_values=stated_values(item.title))


def _overlap(a: frozenset[str], b: frozenset[str]) -> tuple[int, float]:
    shared = len(a & b)
    return shared, shared / max(1, min(len(a), len(b)))


Cosine = float | None | Callable[[], float | None]


def conflict_reason(a: Claim, b: Claim, cosine: Cosine = None) -> str | None:
    """Why two claims conflict, or None. Symmetric. `cosine` may be a function: it is
    called only for the few pairs whose values disagree."""
    if a.item.id == b.item.id:
        return None
    if b.item.id in a.contradicts or a.item.id in b.contradicts:
        return "linked: contradicts"
    if a.title and a.title == b.title:
        return "same key, different content" if a.content != b.content else None
    if not _values_disagree(a, b):
        return None
    return "same subject, different values" if _same_subject(a, b, cosine) else None



def _values_disagree(a: Claim, b: Claim) -> bool:
    """Both state values, neither set contains the other, and the titles do not tell them apart."""
    if not a.values or not b.values or a.values <= b.values or b.values <= a.values:
        return False  # nothing stated, or one adds detail to the other
    if a.title_values and b.title_values and a.title_values != b.title_values:
        return False  # "Port of service 0" / "Port of service 1": the values name the subject
    return True


def _same_subject(a: Claim, b: Claim, cosine: Cosine) -> bool:
    """Same words before the first value, most non-value words shared, or very close
    embeddings with half the words shared."""
    shared, overlap = _overlap(a.words, b.words)
    if (a.subject and a.subject == b.subject) or (shared >= 2 and overlap >= SUBJECT_OVERLAP):
        return True
    if shared < 2 or overlap < 0.5:
        return False
    if callable(cosine):
        cosine = cosine()
    return cosine is not None and cosine >= SUBJECT_COSINE


def supersedes(a: MemoryItem, b: MemoryItem) -> bool:
    """`a` declares that it replaces `b`."""
    return any(link.rel == "supersedes" and link.to == b.id for link in a.links) or b.superseded_by == a.id


# -- finding pairs --------------------------------------------------------------------------


VectorOf = Callable[[MemoryItem], "np.ndarray | None"]
REASONS = (None, "linked: contradicts", "same key, different content", "same subject, different values")


class _Pairs(NamedTuple):
    """The pairs (i < j) of a claim list that share a title, a content word or a link, each
    with whether one replaces the other and the conflict (an index into REASONS, 0: none)."""

    i: np.ndarray
    j: np.ndarray
    replaces: np.ndarray
    reason: np.ndarray


def _codes(keys: Iterable[Hashable], n: int) -> np.ndarray:
    """One small integer per distinct key, so equality tests over many pairs are vector ops."""
    table: dict[Hashable, int] = {}
    return np.fromiter((table.setdefault(k, len(table)) for k in keys), np.int64, n)


def _incidence(rows: Iterable[Iterable[str]], n: int) -> sparse.csr_matrix:
    """Rows x distinct strings, 1 where the row holds the string (rows hold no duplicates)."""
    vocab: dict[str, int] = {}
    indptr, indices = [0], []
    for row in rows:
        indices.extend(vocab.setdefault(s, len(vocab)) for s in row)
        indptr.append(len(indices))
    return sparse.csr_matrix((np.ones(len(indices), np.int32), indices, indptr), shape=(n, len(vocab)))


def _shared(m: sparse.csr_matrix, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(pair codes i * n + j, sorted, i < j; how many columns each pair shares) for the
    pairs sharing at least one column."""
    prod = sparse.triu(m @ m.T, k=1).tocoo()
    codes = prod.row.astype(np.int64) * n + prod.col
    order = np.argsort(codes)
    return codes[order], prod.data[order]


def _at(codes: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """values at the wanted pair codes, 0 where a pair is absent."""
    if not len(codes):
        return np.zeros(len(wanted), np.int64)
    pos = np.minimum(np.searchsorted(codes, wanted), len(codes) - 1)
    return np.where(codes[pos] == wanted, values[pos], 0)


def _linked(claims: Sequence[Claim], n: int, links: Callable[[Claim], Iterable[str]]) -> np.ndarray:
    """Pair codes (i < j) where `links(claims[i])` names claims[j] or the reverse."""
    rows_of: dict[str, list[int]] = {}
    for x, c in enumerate(claims):
        rows_of.setdefault(c.item.id, []).append(x)
    out = {min(x, y) * n + max(x, y) for x, c in enumerate(claims) for to in links(c)
           for y in rows_of.get(to, ()) if y != x}
    return np.fromiter(out, np.int64, len(out))


def _pairs(claims: Sequence[Claim], vector_of: VectorOf | None) -> _Pairs:
    """`_replaces` and `conflict_reason` for every pair that shares a title, a content word
    (held by at most MAX_BUCKET claims) or a link: the same rule, evaluated for all pairs at
    once (sparse products of claims x words, x values and x keys), with the embedding
    cosine computed only for the few pairs whose values disagree and whose words half match."""
    n = len(claims)
    words = _incidence((c.words for c in claims), n)
    word_codes, word_counts = _shared(words, n)
    # What proposes a pair: a word held by at most MAX_BUCKET claims, the title, a link.
    big = np.bincount(words.indices, minlength=words.shape[1]) > MAX_BUCKET
    proposing = words[:, np.flatnonzero(~big)] if big.any() else words
    keys = _incidence((_link_keys(c) for c in claims), n)
    cand = np.union1d(_shared(proposing, n)[0] if big.any() else word_codes, _shared(keys, n)[0])
    i, j = cand // n, cand % n
    shared = _at(word_codes, word_counts, cand)
    value_codes, value_counts = _shared(_incidence((c.values for c in claims), n), n)
    shared_values = _at(value_codes, value_counts, cand)

    ids = _codes((c.item.id for c in claims), n)
    titles = _codes((c.title for c in claims), n)
    has_title = np.fromiter((bool(c.title) for c in claims), bool, n)
    contents = _codes((c.content for c in claims), n)
    subjects = _codes((c.subject for c in claims), n)
    has_subject = np.fromiter((bool(c.subject) for c in claims), bool, n)
    title_values = _codes((c.title_values for c in claims), n)
    has_title_values = np.fromiter((bool(c.title_values) for c in claims), bool, n)
    n_values = np.fromiter((len(c.values) for c in claims), np.int64, n)
    n_words = np.diff(words.indptr)

    replaces = np.isin(cand, _linked(claims, n, lambda c: (*c.supersedes, *_superseded_by(c))))
    contradicts = np.isin(cand, _linked(claims, n, lambda c: c.contradicts))
    same_title = has_title[i] & (titles[i] == titles[j])
    disagree = ((n_values[i] > 0) & (n_values[j] > 0) & (shared_values < n_values[i]) & (shared_values < n_values[j])
                & ~(has_title_values[i] & has_title_values[j] & (title_values[i] != title_values[j])))
    overlap = shared / np.maximum(1, np.minimum(n_words[i], n_words[j]))
    subject = (has_subject[i] & (subjects[i] == subjects[j])) | ((shared >= 2) & (overlap >= SUBJECT_OVERLAP))
    open_ = ~(ids[i] == ids[j]) & ~contradicts & ~same_title & disagree
    for x in np.flatnonzero(open_ & ~subject & (shared >= 2) & (overlap >= 0.5)):
        cosine = _cosine(vector_of, claims[i[x]].item, claims[j[x]].item)
        subject[x] = cosine is not None and cosine >= SUBJECT_COSINE
    reason = np.zeros(len(cand), np.int8)
    reason[open_ & subject] = 3
    reason[~(ids[i] == ids[j]) & ~contradicts & same_title & (contents[i] != contents[j])] = 2
    reason[~(ids[i] == ids[j]) & contradicts] = 1
    return _Pairs(i, j, replaces, reason)


def _link_keys(c: Claim) -> set[str]:
    """What proposes a pair besides a content word: the title, the item's id and the ids it links to."""
    ids = {link.to for link in c.item.links} | {c.item.id}
    return {f"id:{to}" for to in ids} | ({f"t:{c.title}"} if c.title else set())


def _superseded_by(c: Claim) -> tuple[str, ...]:
    """The claim that replaces `c` by its `superseded_by` field (a link seen from the other end)."""
    return (c.item.superseded_by,) if c.item.superseded_by else ()


def _cosine(vector_of: VectorOf | None, a: MemoryItem, b: MemoryItem) -> float | None:
    if vector_of is None:
        return None
    va, vb = vector_of(a), vector_of(b)
    if va is None or vb is None:
        return None
    return float(np.dot(va, vb))


def find_conflicts(items: Iterable[MemoryItem], vector_of: VectorOf | None = None
                   ) -> list[tuple[MemoryItem, MemoryItem, str]]:
    """Every conflicting pair among the claims of `items` as (a, b, reason), a.id < b.id,
    sorted by ids. A pair where one supersedes the other is not reported."""
    claims = [read_claim(it) for it in sorted(items, key=lambda it: it.id) if is_claim(it) and it.active]
    found = _pairs(claims, vector_of)
    shown = (found.reason > 0) & ~found.replaces
    out = [(claims[i].item, claims[j].item, REASONS[r])
           for i, j, r in zip(found.i[shown].tolist(), found.j[shown].tolist(), found.reason[shown].tolist())]
    return sorted(out, key=lambda p: (p[0].id, p[1].id))


# -- resolving groups -----------------------------------------------------------------------


@dataclass
class Outcome:
    """What happens to one member of a conflict group."""

    resolution: str  # superseded | confidence | recency | scope | ambiguous | flagged | winner
    conflict_with: list[str] = field(default_factory=list)
    suppressed: bool = False
    winner: str | None = None


def groups(items: Sequence[MemoryItem], vector_of: VectorOf | None = None) -> list[list[MemoryItem]]:
    """Connected groups (two or more members) of conflicting or superseding claims."""
    claims = [read_claim(it) for it in items if is_claim(it)]
    n = len(claims)
    if n < 2:
        return []
    found = _pairs(claims, vector_of)
    joined = found.replaces | (found.reason > 0)
    ids = _codes((c.item.id for c in claims), n)  # one node per id, as the items are keyed
    nodes = int(ids.max()) + 1 if n else 0
    graph = sparse.coo_matrix((np.ones(int(joined.sum()), np.int8), (ids[found.i[joined]], ids[found.j[joined]])),
                              shape=(nodes, nodes))
    _, label = connected_components(graph, directed=False)
    by_label: dict[int, list[MemoryItem]] = {}
    for c, node in zip(claims, ids.tolist()):
        by_label.setdefault(int(label[node]), []).append(c.item)
    return [sorted(g, key=lambda it: it.id) for g in by_label.values() if len(g) > 1]


def _newer(a: MemoryItem, b: MemoryItem) -> bool:
    return timestamp(a.updated_at, float("-inf")) > timestamp(b.updated_at, float("-inf"))


def _resolve_one_scope(members: list[MemoryItem], mode: str) -> dict[str, Outcome]:
    ids = [m.id for m in members]
    if len(members) == 1:
        return {ids[0]: Outcome("winner")}
    if mode == "flag":
        return {m.id: Outcome("flagged", [i for i in ids if i != m.id]) for m in members}
    members = sorted(members, key=lambda m: (-m.confidence, -timestamp(m.updated_at, float("-inf")), m.id))
    winner, kept, out = members[0], [members[0]], {}
    for m in members[1:]:
        if winner.confidence > m.confidence + 1e-9:
            why = "confidence"
        elif _newer(winner, m):
            why = "recency"
        else:
            kept.append(m)
            continue
        out[m.id] = Outcome(why, [winner.id], suppressed=True, winner=winner.id)
    if len(kept) > 1:
        kept_ids = [k.id for k in kept]
        for k in kept:
            out[k.id] = Outcome("ambiguous", [i for i in kept_ids if i != k.id])
    else:
        beaten = [m.id for m in members[1:]]
        out[winner.id] = Outcome(out[beaten[0]].resolution, beaten)
    return out


def resolve(group: Sequence[MemoryItem], mode: str = "resolve") -> dict[str, Outcome]:
    """Outcome per member id of one conflict group (see the module docstring)."""
    out: dict[str, Outcome] = {}
    live = []
    for m in group:
        by = next((o for o in group if o.id != m.id and supersedes(o, m)), None)
        if by is not None:
            out[m.id] = Outcome("superseded", [by.id], suppressed=True, winner=by.id)
        else:
            live.append(m)
    by_scope: dict[str, list[MemoryItem]] = {}
    for m in live:
        by_scope.setdefault(m.scope.kind, []).append(m)
    kinds = sorted(by_scope, key=lambda k: SCOPE_RANK[k])
    applies: list[str] = []
    for kind in kinds:
        outcome = _resolve_one_scope(by_scope[kind], mode)
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
            others = [x for x in applies if x != i and x not in o.conflict_with]
            out[i] = Outcome(o.resolution if o.resolution != "winner" else "scope",
                             [*o.conflict_with, *others])
    return out




# -- corrections at write time ----------------------------------------------------------------


def proposed_claim(title: str, content: str, item_type: str) -> Claim | None:
    """The claim a proposal would make (None when its type is not a claim), to check it
    against stored claims before it is written."""
    if item_type not in CLAIM_TYPES:
        return None
    return read_claim(MemoryItem(id="\x00proposed", tier="stm", type=item_type,  # type: ignore[arg-type]
                                 title=title, content=content, scope=Scope()))


def contradicted(new: Claim, existing: Iterable[MemoryItem]) -> Iterable[tuple[MemoryItem, str]]:
    """The active stored claims `new` conflicts with, and why."""
    for old in existing:
        if isinstance(old, MemoryItem) and old.active and is_claim(old):
            reason = conflict_reason(new, read_claim(old))
            if reason:
                yield old, reason



def corrected_by(title: str, content: str, item_type: str, scope_kind: str, author_user_id: str,
                 existing: Iterable[MemoryItem]) -> list[str]:
    """Ids of the author's own claims (same user, same scope kind) that a new claim with
    this title and content conflicts with: the new claim corrects them and supersedes them,
    where a contradiction of someone else's claim is left to the write policy."""
    new = proposed_claim(title, content, item_type)
    if new is None:
        return []
    own = [old for old in existing if old.scope.user_id == author_user_id and old.scope.kind == scope_kind]
    return sorted(old.id for old, _ in contradicted(new, own))


__all__ = ["CLAIM_TYPES", "Claim", "Outcome", "conflict_reason", "contradicted", "corrected_by", "find_conflicts",
           "groups", "is_claim", "proposed_claim", "read_claim", "resolve", "stated_values", "supersedes"]
