"""Q* agenda search over memory: a best-first search for a well-supported explanation.

A node is a partial explanation of the question: a support set of memory items (and doc
references) plus the subgoals still open. The agenda is a priority queue on the node score

    S = w_r R + w_p P + w_c C - w_d D - w_x X

- R relevance: mean relevance (0..1, from the recall engine) of the support items and docs.
- P provenance quality: mean per item of 0.5 * validation (verified 1, unverified 0.5,
  contested 0.2, retracted 0) + 0.5 * source (doc/mixed with chunk ids or hashes 1.0,
  doc/tool/mixed without 0.7, chat-only with a turn/source id 0.5, nothing 0). Docs: 1.0
  with a content hash, 0.7 without.
- C coverage: fraction of the question's entities covered by the support set's terms (a
  node's coverage; the gain of a child is its C minus its parent's).
- D duplication: fraction of support items that near-duplicate an earlier one (same
  content hash, same normalised text, or vector cosine >= dup_cosine).
- X contradiction risk: fraction of support items contested/retracted or linked by
  `contradicts` to another support item.

Defaults: w_r=1.0, w_p=0.3, w_c=0.5, w_d=0.5, w_x=0.5, threshold 0.5. Scoring uses only
stored values (deterministic); an LLM may only *generate subgoals* through the optional
`subgoal_generator`.

Operators: `bridge` (open a subgoal per question entity the support set does not cover),
`expand_memory` (pull items around a subgoal or, without one, around the support set: links,
shared entities/tags, same palace room — through a `MemoryExpander`), `expand_docs` (a
pluggable `DocSource`, none by default), `verify` (contested or provenance-less items are
replaced by a linked pointer that has provenance, or dropped). Each weak item in a support
set is an open `verify:<id>` subgoal, so a node holding one is never a goal: the stop
rule ("no open subgoals and S > threshold") then implies verification.

Pop order: highest score, then shallower, then older (a creation counter): deterministic.
Stops when the popped node has no open subgoals and S > threshold ("goal"), or on a budget:
expansions, tokens of retrieved content (distinct items/docs fetched, ceil(chars/4)), or
milliseconds on an injectable monotonic clock. Returns the goal node, else the best node seen.
"""

from __future__ import annotations

import heapq
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import msgspec
import numpy as np

from pipelines.message_context import lexical_text
from pipelines.records import MemoryItem

from .lexical import QUERY_FILLERS, STOPWORDS, normalise_label, tokenize
from .render import estimate_tokens

VERIFY_PREFIX = "verify:"
VALIDATION_QUALITY = {"verified": 1.0, "unverified": 0.5, "contested": 0.2, "retracted": 0.0}


class QStarError(ValueError):
    """Invalid Q* configuration or input."""


class QStarConfig(msgspec.Struct, frozen=True, kw_only=True):
    w_r: float = 1.0
    w_p: float = 0.3
    w_c: float = 0.5
    w_d: float = 0.5
    w_x: float = 0.5
    score_threshold: float = 0.5
    max_expansions: int = 8
    max_tokens: int = 2000
    max_ms: float = 40.0
    per_expand: int = 3  # items an expand_memory / expand_docs step may add
    branching: int = 2  # open subgoals expanded (one child each) per popped node
    dup_cosine: float = 0.95

    def __post_init__(self) -> None:
        if self.max_expansions < 0 or self.max_tokens < 0 or self.max_ms < 0:
            raise QStarError("Q* budgets must be >= 0")
        if self.per_expand < 1 or self.branching < 1:
            raise QStarError("per_expand and branching must be >= 1")

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> "QStarConfig":
        base = {
            "max_expansions": settings.qstar_max_expansions,
            "max_ms": settings.qstar_max_ms,
            "max_tokens": settings.qstar_max_tokens,
        }
        base.update(overrides)
        return cls(**base)


@dataclass(frozen=True)
class DocRef:
    doc_id: str
    chunk_id: str
    text: str
    score: float = 0.0  # relevance 0..1
    content_hash: str = ""

    @property
    def key(self) -> str:
        return f"{self.doc_id}#{self.chunk_id}"


@runtime_checkable
class DocSource(Protocol):
    def fetch(self, query: str, limit: int) -> Sequence[DocRef]: ...


class NoDocs:
    """The default DocSource: Loci has no document RAG layer of its own."""

    def fetch(self, query: str, limit: int) -> Sequence[DocRef]:
        return []


@dataclass
class Evidence:
    """A memory item as Q* sees it: the item, its relevance to the question (0..1) and its
    vector when known (for near-duplicate detection)."""

    item: MemoryItem
    relevance: float
    vector: np.ndarray | None = None
    terms: frozenset[str] = frozenset()
    # Read by every node that holds the item (`QStarSearch.score`): made once per item.
    _quality: float | None = field(default=None, init=False, repr=False, compare=False)
    _text: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.terms:
            it = self.item
            self.terms = frozenset(
                tokenize(lexical_text(it))
            )

    @property
    def id(self) -> str:
        return self.item.id

    @property
    def tokens(self) -> int:
        return estimate_tokens(f"{self.item.title}\n{self.item.content}")

    @property
    def quality(self) -> float:
        """`provenance_quality` of the item."""
        if self._quality is None:
            self._quality = provenance_quality(self.item)
        return self._quality

    @property
    def text(self) -> str:
        """The item's content normalised (`normalise_label`: near-duplicates compare so)."""
        if self._text is None:
            self._text = normalise_label(self.item.content)
        return self._text


class MemoryExpander(Protocol):
    def expand(
        self, support: Sequence[Evidence], focus: str | None, limit: int, exclude: set[str]
    ) -> list[Evidence]:
        """Items related to the support set (links, shared entities/tags, palace room) or,
        with a focus, items about that subgoal; best first, none of `exclude`."""
        ...

    def provenance_pointer(self, item: MemoryItem) -> Evidence | None:
        """A linked pointer item with provenance that can stand in for a weak item."""
        ...


SubgoalGenerator = Callable[[str, Sequence[str], Sequence[Evidence]], Sequence[str]]


@dataclass
class QNode:
    id: str
    question: str
    support_memory_ids: list[str]
    support_doc_refs: list[dict[str, str]]
    open_subgoals: list[str]
    score: float
    depth: int
    operator: str = "init"
    parent: str | None = None
    attempted: tuple[str, ...] = ()  # subgoals already tried on this path
    components: dict[str, float] = field(default_factory=dict)


@dataclass
class QStarResult:
    best: QNode
    goal_reached: bool
    stop_reason: str  # goal | max_expansions | max_tokens | max_ms | exhausted
    expansions: int
    retrieved_tokens: int
    added_ids: list[str]  # in best.support but not in the initial set
    dropped_ids: list[str]  # initial items the best node left out (verify)
    evidence: dict[str, Evidence]
    trace: list[dict[str, Any]]


_CAPITALISED = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")


def question_entities(question: str) -> list[str]:
    """Deterministic 'entities' of a question: capitalised phrases (minus leading
    stopwords/fillers such as a sentence-initial "What") and the remaining content tokens
    of 3+ characters or digits; normalised, deduplicated, first-seen order."""
    out: dict[str, None] = {}
    covered: set[str] = set()
    for m in _CAPITALISED.finditer(question):
        toks = [t for t in tokenize(m.group(0)) if t not in QUERY_FILLERS]
        if toks:
            out.setdefault(" ".join(toks), None)
            covered.update(toks)
    for tok in tokenize(question):
        if tok in covered or tok in QUERY_FILLERS or tok in STOPWORDS:
            continue
        if len(tok) >= 3 or tok.isdigit():
            out.setdefault(tok, None)
    return list(out)


def _covered(entity: str, terms: frozenset[str] | set[str]) -> bool:
    return all(t in terms for t in entity.split())


def provenance_quality(item: MemoryItem) -> float:
    prov = item.provenance
    hashed = bool(prov.content_hashes or prov.chunk_ids)
    if prov.source_kind in ("doc", "mixed") and hashed:
        src = 1.0
    elif prov.source_kind in ("doc", "tool", "mixed") and prov.is_present():
        src = 0.7
    elif prov.is_present():
        src = 0.5
    else:
        src = 0.0
    return 0.5 * VALIDATION_QUALITY.get(item.validation, 0.5) + 0.5 * src


def is_weak(item: MemoryItem) -> bool:
    """Needs `verify`: contested/retracted, or no provenance pointer at all."""
    return item.validation in ("contested", "retracted") or not item.provenance.is_present()


class QStarSearch:
    def __init__(
        self,
        config: QStarConfig | None = None,
        expander: MemoryExpander | None = None,
        docs: DocSource | None = None,
        subgoal_generator: SubgoalGenerator | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.config = config or QStarConfig()
        self.expander = expander
        self.docs = docs or NoDocs()
        self.subgoal_generator = subgoal_generator
        self.clock = clock

    # -- scoring --------------------------------------------------------------------------

    def score(
        self, support: Sequence[Evidence], docs: Sequence[DocRef], entities: Sequence[str]
    ) -> tuple[float, dict[str, float]]:
        cfg = self.config
        n = len(support)
        rel = [e.relevance for e in support] + [d.score for d in docs]
        R = float(np.mean(rel)) if rel else 0.0
        prov = [e.quality for e in support] + [
            1.0 if d.content_hash else 0.7 for d in docs
        ]
        P = float(np.mean(prov)) if prov else 0.0
        terms: set[str] = set()
        for e in support:
            terms |= e.terms
        for d in docs:
            terms.update(tokenize(d.text))
        C = (sum(_covered(x, terms) for x in entities) / len(entities)) if entities else 1.0
        D = self._duplication(support) / n if n else 0.0
        X = self._contradiction(support) / n if n else 0.0
        S = cfg.w_r * R + cfg.w_p * P + cfg.w_c * C - cfg.w_d * D - cfg.w_x * X
        return S, {"R": R, "P": P, "C": C, "D": D, "X": X, "S": S}

    def _duplication(self, support: Sequence[Evidence]) -> int:
        """How many support items near-duplicate an earlier one."""
        n = len(support)
        dup = [False] * n
        seen_hash: set[str] = set()
        seen_text: set[str] = set()
        for i, e in enumerate(support):
            text = e.text
            dup[i] = e.item.content_hash in seen_hash or bool(text and text in seen_text)
            seen_hash.add(e.item.content_hash)
            if text:
                seen_text.add(text)
        with_vec = [i for i, e in enumerate(support) if e.vector is not None]
        if len(with_vec) > 1:
            mat = np.stack([support[i].vector for i in with_vec]).astype(np.float32)
            sims = np.triu(mat @ mat.T, k=1)  # [a, b]: a earlier than b
            near = (sims >= self.config.dup_cosine).any(axis=0)
            for j, i in enumerate(with_vec):
                dup[i] = dup[i] or bool(near[j])
        return sum(dup)

    @staticmethod
    def _contradiction(support: Sequence[Evidence]) -> int:
        ids = {e.id for e in support}
        risky: set[str] = set()
        for e in support:
            if e.item.validation in ("contested", "retracted"):
                risky.add(e.id)
            for link in e.item.links:
                if link.rel == "contradicts" and link.to in ids and link.to != e.id:
                    risky.update({e.id, link.to})
        return len(risky)

    # -- search ---------------------------------------------------------------------------

    def run(
        self,
        question: str,
        initial: Sequence[Evidence],
        entities: Sequence[str] | None = None,
    ) -> QStarResult:
        if not isinstance(question, str):
            raise QStarError("question must be a string")
        entities = list(question_entities(question) if entities is None else entities)
        return _Run(self, question, initial, entities).search()


def _key(d: dict[str, str]) -> str:
    return d["doc_id"] + "#" + d["chunk_id"]


class _Run:
    """The state of one search: the evidence pool, the token budget, the agenda."""

    def __init__(self, search: QStarSearch, question: str, initial: Sequence[Evidence],
                 entities: list[str]):
        self.q = search
        self.cfg = search.config
        self.question = question
        self.entities = entities
        self.start = search.clock()
        self.pool: dict[str, Evidence] = {}
        for e in initial:
            self.pool.setdefault(e.id, e)
        self.docs_pool: dict[str, DocRef] = {}
        self.retrieved = {e.id for e in self.pool.values()}
        self.tokens_used = sum(e.tokens for e in self.pool.values())
        self.tokens_hit = self.tokens_used > self.cfg.max_tokens
        self.trace: list[dict[str, Any]] = []
        self.seq = 0
        self.agenda: list[tuple[float, int, int, QNode]] = []
        self.visited: set[tuple] = set()
        self.expansions = 0

    # nodes --------------------------------------------------------------------------------

    def make(self, parent: QNode | None, support_ids: list[str], doc_keys: list[str],
             subgoals: list[str], attempted: tuple[str, ...], op: str) -> QNode:
        support = [self.pool[i] for i in support_ids]
        docs = [self.docs_pool[k] for k in doc_keys]
        s, comps = self.q.score(support, docs, self.entities)
        node = QNode(
            id=f"n{self.seq}",
            question=self.question,
            support_memory_ids=list(support_ids),
            support_doc_refs=[{"doc_id": self.docs_pool[k].doc_id, "chunk_id": self.docs_pool[k].chunk_id}
                              for k in doc_keys],
            open_subgoals=list(subgoals),
            score=round(s, 12),
            depth=0 if parent is None else parent.depth + 1,
            operator=op,
            parent=None if parent is None else parent.id,
            attempted=attempted,
            components=comps,
        )
        self.seq += 1
        return node

    def push(self, n: QNode) -> bool:
        key = (frozenset(n.support_memory_ids), frozenset(_key(d) for d in n.support_doc_refs),
               frozenset(n.open_subgoals), frozenset(n.attempted))
        if key in self.visited:
            return False
        self.visited.add(key)
        heapq.heappush(self.agenda, (-n.score, n.depth, int(n.id[1:]), n))
        return True

    def verify_goals(self, ids: Sequence[str]) -> list[str]:
        return [f"{VERIFY_PREFIX}{i}" for i in ids if is_weak(self.pool[i].item)]

    def terms_of(self, ids: Sequence[str]) -> set[str]:
        return set().union(*(self.pool[i].terms for i in ids)) if ids else set()

    # budget -------------------------------------------------------------------------------

    def take(self, tokens: int) -> bool:
        """Count a newly retrieved item or doc against the token budget; False when it
        does not fit (the budget is then exhausted)."""
        if self.tokens_used + tokens > self.cfg.max_tokens:
            self.tokens_hit = True
            return False
        self.tokens_used += tokens
        return True

    def fetch(self, found: list[Evidence], in_support: set[str]) -> list[str]:
        """Admit newly found items within the token budget; returns their ids."""
        added: list[str] = []
        for e in found:
            if e.id in in_support or e.id in added:
                continue
            if e.id not in self.retrieved:
                if not self.take(e.tokens):
                    break
                self.retrieved.add(e.id)
                self.pool.setdefault(e.id, e)
            added.append(e.id)
            if len(added) >= self.cfg.per_expand:
                break
        return added

    def fetch_docs(self, subgoal: str, doc_keys: list[str]) -> list[str]:
        new_docs: list[str] = []
        for d in self.q.docs.fetch(subgoal, self.cfg.per_expand):
            if d.key in doc_keys or d.key in new_docs:
                continue
            if d.key not in self.docs_pool:
                if not self.take(estimate_tokens(d.text)):
                    break
                self.docs_pool[d.key] = d
            new_docs.append(d.key)
        return new_docs

    # operators ----------------------------------------------------------------------------

    def expand_memory(self, support: list[Evidence], focus: str | None, in_support: set[str]) -> list[str]:
        found = (self.q.expander.expand(support, focus, self.cfg.per_expand * 2, in_support)
                 if self.q.expander else [])
        return self.fetch(found, in_support)

    def subgoal_children(self, node: QNode, support: list[Evidence], goals: list[str],
                         checks: list[str], doc_keys: list[str]) -> list[QNode]:
        """expand_memory (and expand_docs) on up to `branching` open entity subgoals."""
        children = []
        in_support = set(node.support_memory_ids)
        for sg in goals[: self.cfg.branching]:
            rest = [g for g in goals if g != sg]
            attempted = node.attempted + (sg,)
            added = self.expand_memory(support, sg, in_support)
            ids = node.support_memory_ids + added
            terms = self.terms_of(ids)
            still = [g for g in rest if not _covered(g, terms)]
            children.append(self.make(node, ids, doc_keys, still + checks + self.verify_goals(added),
                                      attempted, "expand_memory"))
            if not isinstance(self.q.docs, NoDocs) and not self.tokens_hit:
                new_docs = self.fetch_docs(sg, doc_keys)
                if new_docs:
                    children.append(self.make(node, node.support_memory_ids, doc_keys + new_docs,
                                              rest + checks, attempted, "expand_docs"))
            if self.tokens_hit:
                break
        return children

    def widen_children(self, node: QNode, support: list[Evidence], checks: list[str],
                       doc_keys: list[str]) -> list[QNode]:
        """No entity left open but the node is not a goal: widen the neighbourhood, and let
        a pluggable generator propose further subgoals (bridge)."""
        children = []
        added = self.expand_memory(support, None, set(node.support_memory_ids))
        if added:
            children.append(self.make(node, node.support_memory_ids + added, doc_keys,
                                      checks + self.verify_goals(added), node.attempted, "expand_memory"))
        if self.q.subgoal_generator is not None:
            terms_now = set().union(*(e.terms for e in support)) if support else set()
            uncovered = [x for x in self.entities if not _covered(x, terms_now)]
            proposed = self.q.subgoal_generator(self.question, uncovered, support)
            new_goals = [g for g in dict.fromkeys(str(g).strip() for g in proposed)
                         if g and g not in node.attempted and not g.startswith(VERIFY_PREFIX)]
            if new_goals:
                children.append(self.make(node, node.support_memory_ids, doc_keys,
                                          new_goals + checks, node.attempted, "bridge"))
        return children

    def verify_child(self, node: QNode, goals: list[str], checks: list[str], doc_keys: list[str]) -> QNode:
        """A weak item is replaced by a linked pointer with provenance, or dropped."""
        ids = list(node.support_memory_ids)
        for g in checks:
            weak_id = g[len(VERIFY_PREFIX):]
            if weak_id not in ids:
                continue
            pos = ids.index(weak_id)
            pointer = (self.q.expander.provenance_pointer(self.pool[weak_id].item)
                       if self.q.expander else None)
            if pointer is None or pointer.id in ids or is_weak(pointer.item):
                ids.pop(pos)
                continue
            if pointer.id not in self.retrieved:
                if self.tokens_used + pointer.tokens > self.cfg.max_tokens:
                    ids.pop(pos)
                    continue
                self.retrieved.add(pointer.id)
                self.tokens_used += pointer.tokens
                self.pool.setdefault(pointer.id, pointer)
            ids[pos] = pointer.id
        return self.make(node, ids, doc_keys, goals, node.attempted, "verify")

    def children_of(self, node: QNode) -> list[QNode]:
        support = [self.pool[i] for i in node.support_memory_ids]
        goals = [g for g in node.open_subgoals if not g.startswith(VERIFY_PREFIX)]
        checks = [g for g in node.open_subgoals if g.startswith(VERIFY_PREFIX)]
        doc_keys = [_key(d) for d in node.support_doc_refs]
        children = self.subgoal_children(node, support, goals, checks, doc_keys)
        if not goals and not self.tokens_hit:
            children += self.widen_children(node, support, checks, doc_keys)
        if checks:
            children.append(self.verify_child(node, goals, checks, doc_keys))
        return children

    # the search ---------------------------------------------------------------------------

    def root(self) -> QNode:
        """The initial hits. `bridge` opens a subgoal per question entity they do not cover,
        and a `verify:<id>` subgoal per weak item (closed only by `verify`)."""
        root_ids = list(self.pool)
        root_terms = self.terms_of(root_ids)
        goals = [x for x in self.entities if not _covered(x, root_terms)] + self.verify_goals(root_ids)
        root = self.make(None, root_ids, [], goals, (), "bridge")
        self.push(root)
        self.trace.append({"step": 0, "node": root.id, "operator": "bridge", "score": root.score,
                           "added": root_ids, "subgoals": goals, "components": root.components})
        return root

    def stop_before(self, node: QNode) -> str | None:
        """Why the search stops before expanding `node` (the agenda's best), or None."""
        if (self.q.clock() - self.start) * 1000.0 >= self.cfg.max_ms:
            return "max_ms"
        if not node.open_subgoals and node.score > self.cfg.score_threshold:
            return "goal"
        if self.expansions >= self.cfg.max_expansions:
            return "max_expansions"
        return None

    def step(self, node: QNode, best: QNode) -> QNode:
        """Expand one node; returns the best node seen so far."""
        self.expansions += 1
        best_remaining = (-self.agenda[0][0]) if self.agenda else None
        in_support = set(node.support_memory_ids)
        pushed = []
        for child in self.children_of(node):
            if self.push(child):
                pushed.append(child)
                if (child.score, -child.depth) > (best.score, -best.depth):
                    best = child
        self.trace.append({
            "step": self.expansions, "node": node.id, "operator": node.operator, "score": node.score,
            "agenda_best_remaining": best_remaining,
            "children": [
                {"node": c.id, "operator": c.operator, "score": c.score,
                 "added": [i for i in c.support_memory_ids if i not in in_support],
                 "dropped": [i for i in node.support_memory_ids if i not in set(c.support_memory_ids)],
                 "open_subgoals": list(c.open_subgoals),
                 "docs": [_key(d) for d in c.support_doc_refs]}
                for c in pushed
            ],
            "retrieved_tokens": self.tokens_used,
        })
        return best

    def search(self) -> QStarResult:
        root = best = self.root()
        goal: QNode | None = None
        stop_reason = "max_tokens" if self.tokens_hit else "exhausted"
        while self.agenda and not self.tokens_hit:
            node = self.agenda[0][3]
            why = self.stop_before(node)
            if why is not None:
                stop_reason = why
                if why == "goal":
                    heapq.heappop(self.agenda)
                    goal = node
                    self.trace.append({"step": self.expansions + 1, "node": node.id,
                                       "operator": "goal", "score": node.score})
                break
            heapq.heappop(self.agenda)
            best = self.step(node, best)
            if self.tokens_hit:
                stop_reason = "max_tokens"
        return self.result(goal or best, goal is not None, stop_reason, root)

    def result(self, chosen: QNode, goal_reached: bool, stop_reason: str, root: QNode) -> QStarResult:
        initial_ids = set(root.support_memory_ids)
        chosen_ids = set(chosen.support_memory_ids)
        return QStarResult(
            best=chosen,
            goal_reached=goal_reached,
            stop_reason=stop_reason,
            expansions=self.expansions,
            retrieved_tokens=self.tokens_used,
            added_ids=[i for i in chosen.support_memory_ids if i not in initial_ids],
            dropped_ids=[i for i in root.support_memory_ids if i not in chosen_ids],
            evidence=self.pool,
            trace=self.trace,
        )
