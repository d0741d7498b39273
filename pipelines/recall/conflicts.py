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
  ISO dates, and capitalised names inside a sentence ("two" is 2); not those the claim says it replaces
  or denies ("MySQL 8, replacing Postgres 16", "instead of", "no longer", "not"). Different
  values: both state some,
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

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
_UNIT_SPLIT = re.compile(r"([\d.:]+)\s*(.*)")
_NOT_UNITS = STOPWORDS | {"every", "per", "than", "more", "less", "or", "instead", "rather", "replacing"}
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)([A-Z][\w-]*)")
# "two approvals" states the value "3 approvals" contradicts ("one" is left out: mostly a pronoun).
_NUMBER_WORDS = {w: str(n) for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split()) if w != "one"}
_NUMBER_WORD = re.compile(r"(?<!-)\b(?:" + "|".join(_NUMBER_WORDS) + r")\b(?!-)", re.IGNORECASE)
# "replacing Postgres 16", "instead of 9:30", "no longer on port 8080": values a claim names
# only to retire them, up to the end of the clause (or "to" in "moved from 9:30 to 10:00").
_RETIRED = re.compile(
    r"\b(?:replac(?:ing|es|ed)|instead\s+of|rather\s+than|no\s+longer|not|formerly|previously|"
    r"(?:moved|switched|migrated|changed)\s+from)\b(?:[^.;,!?()]|[.,:]\d)*?(?=\s+to\s|[.,](?!\d)|[;!?()]|$)",
    re.IGNORECASE)


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
    retired: frozenset[str] = frozenset()  # values it names as replaced or denied
    keys: frozenset[str] = frozenset()  # what proposes pairs: its words and its title
    contradicts: frozenset[str] = frozenset()  # ids this item links to with `contradicts`
    supersedes: frozenset[str] = frozenset()  # ids it replaces (its `supersedes` links)


def is_claim(item: MemoryItem) -> bool:
    return item.type in CLAIM_TYPES and item.validation != "retracted"


def stated_values(text: str) -> frozenset[str]:
    """Numbers and times with their unit, ISO dates, and names capitalised mid-sentence,
    except those named only as replaced or denied."""
    return _values(_RETIRED.sub(lambda m: " " * len(m.group(0)), text))


def retired_values(text: str) -> frozenset[str]:
    """The values `text` names as replaced or denied ("MySQL 8, replacing Postgres 16")."""
    return _values(text) - stated_values(text) if _RETIRED.search(text) else frozenset()


def _values(text: str) -> frozenset[str]:
    found = set(_DATE.findall(text))
    rest = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(0).lower()], _DATE.sub(" ", text))
    found |= {_number_with_unit(m.group(0)) for m in _NUMBER.finditer(rest)}
    starts = {m.group(1) for m in _SENTENCE_START.finditer(text)}
    found |= {m.group(0).lower() for m in _NAME.finditer(text) if m.group(0) not in starts}
    return frozenset(v.strip() for v in found if v.strip())


def _number_with_unit(match: str) -> str:
    """"30 days" and "30days" are "30 days"; "9:30 on" and "8080 is" are "9:30" and "8080":
    the word after a number is its unit only when it is not a function word."""
    number, unit = _UNIT_SPLIT.match(match.lower().replace(",", ".")).groups()
    return f"{number} {unit}" if unit and unit not in _NOT_UNITS else number


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
    values, retired = stated_values(item.content), retired_values(item.content)
    skip = _value_words(values | retired)
    toks = [w for w in words(item.content) if w not in STOPWORDS]
    first_value = next((i for i, w in enumerate(toks) if w in skip), len(toks))
    subject = tuple(w for w in toks[:first_value] if w not in skip)
    content_words = frozenset(w for w in toks if w not in skip)
    title = normalise_label(item.title)
    return Claim(item=item, title=title, content=normalise_label(item.content),
                 subject=subject if values else (), words=content_words, values=values, retired=retired,
                 title_values=stated_values(item.title),
                 keys=frozenset({f"w:{w}" for w in content_words} | ({f"t:{title}"} if title else set())))


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
    """Both state values, neither set contains the other, and the titles do not tell them
    apart; or one states a value the other names as replaced or denied."""
    if a.retired & b.values or b.retired & a.values:
        return True
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


def _replaces(a: Claim, b: Claim) -> bool:
    """`supersedes` on read claims (the link ids already gathered)."""
    return b.item.id in a.supersedes or b.item.superseded_by == a.item.id


def supersedes(a: MemoryItem, b: MemoryItem) -> bool:
    """`a` declares that it replaces `b`."""
    return any(link.rel == "supersedes" and link.to == b.id for link in a.links) or b.superseded_by == a.id


# -- finding pairs --------------------------------------------------------------------------


VectorOf = Callable[[MemoryItem], "np.ndarray | None"]


def _candidate_pairs(claims: Sequence[Claim]) -> set[tuple[int, int]]:
    """Pairs that share a title, a content word or a link: the only ones that can conflict."""
    buckets: dict[str, list[int]] = {}
    for i, c in enumerate(claims):
        keys = c.keys | {f"id:{link.to}" for link in c.item.links} | {f"id:{c.item.id}"}
        for key in keys:
            buckets.setdefault(key, []).append(i)
    pairs: set[tuple[int, int]] = set()
    for key, members in buckets.items():
        if len(members) < 2 or (len(members) > MAX_BUCKET and key.startswith("w:")):
            continue
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                pairs.add((i, j))
    return pairs


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
    out = []
    for i, j in sorted(_candidate_pairs(claims)):
        a, b = claims[i], claims[j]
        if _replaces(a, b) or _replaces(b, a):
            continue
        why = conflict_reason(a, b, lambda a=a, b=b: _cosine(vector_of, a.item, b.item))
        if why is not None:
            out.append((a.item, b.item, why))
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
    parent = {it.id: it.id for it in items}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    claims = [read_claim(it) for it in items if is_claim(it)]
    for i, j in _candidate_pairs(claims):
        a, b = claims[i], claims[j]
        if (_replaces(a, b) or _replaces(b, a)
                or conflict_reason(a, b, lambda a=a, b=b: _cosine(vector_of, a.item, b.item))):
            union(a.item.id, b.item.id)
    by_root: dict[str, list[MemoryItem]] = {}
    for c in claims:
        by_root.setdefault(find(c.item.id), []).append(c.item)
    return [sorted(g, key=lambda it: it.id) for g in by_root.values() if len(g) > 1]


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
