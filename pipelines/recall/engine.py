"""RecallEngine: scope-filtered hybrid retrieval, selection and rendering (seeds 000/002/003/004).

One call, in this order:

1. **Scope first.** Each corpus yields the rows the caller may see (`Scope.visible_to`),
   active only, narrowed by tier/type/tags/scope-kind filters. Corpora are given oldest
   first (snapshot, then delta): an id present in a later corpus hides every earlier copy,
   whatever the later copy's state (an archived delta version hides the snapshot one).
2. **Candidates.** Dense (FAISS or exact), lexical (BM25, normalised to [0,1] by the query's
   ideal score so corpora of different sizes compare) and label (query n-grams equal to a tag
   or entity) channels, each over-fetching `candidate_k`, fused by the normalised weighted
   sum (default: 0.35 dense, 0.65 lexical, 0.1 labels) or reciprocal rank fusion (k=60).
   Measured on LoCoMo dev (760 questions, categories 1-4, MiniLM, turn-level evidence
   recall@5/10/20): weighted 0.35/0.65 0.565/0.643/0.717; weighted 0.6/0.3 0.487/0.585/0.667;
   RRF 0.482/0.563/0.653; dense only 0.401/0.493/0.603; BM25 only 0.508/0.570/0.638.
   A candidate is admitted only with real evidence: cosine >= `min_similarity`, a lexical
   match, or a label match — otherwise the answer is "No memory found" rather than the
   nearest noise.
3. **Pull-ins.** Items that `contradicts`-link to a candidate or share its normalised title
   (conflict partners), summaries whose provenance.turn_refs cover a candidate message, and
   (inject/hybrid modes) always-inject items with importance >= `always_inject_importance`.
4. **Score.** `score = fused * (1 + boosts)`: multiplicative so relevance dominates whatever
   the fusion scale; boosts are scope priority (session > project > user > org), recency
   (exp(-recency_lambda * days since updated_at)), confidence, importance and validation.
   Ties break by scope rank, then id.
5. **Conflicts** (same normalised title with different content, or a `contradicts` link):
   `resolve` keeps the higher-confidence item, then the newer (updated_at); equal on both is
   ambiguous and both stay, flagged. `flag` keeps all members, flagged.
6. **Summaries preferred.** A message covered by a summary is demoted below it (kept).
7. **Q\*** refines the top-k support set (qstar.py): may add items around uncovered question
   entities (replacing at most floor(k * qstar_max_added_fraction) of the lowest hits, so k
   holds) and drop weak ones. LoCoMo dev, same setup as above: with Q* 0.555/0.652/0.718,
   without 0.565/0.643/0.717 (dense-only channel: 0.479/0.578/0.673 vs 0.401/0.493/0.603).
8. **Render.** Claims below `confidence_threshold` are never injected (they may be
   catalogued, flagged `low_confidence`). `message` items — raw chat turns — are evidence, not
   claims, and use `message_confidence_threshold` (default 0: always injectable).

Only returned (injected or catalogued) items are hits; `used_ids` lists them for the
caller's usage accounting.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import msgspec
import numpy as np

from pipelines.records import ITEM_TYPES, Identity, MemoryItem
from pipelines.settings import Settings

from .corpus import MemoryCorpus
from .lexical import label_ngrams, normalise_label, query_terms
from .qstar import DocSource, Evidence, QStarConfig, QStarSearch, SubgoalGenerator, is_weak
from .render import catalog, catalog_entry, format_entry, pack_injection

MODES = ("inject", "catalog", "hybrid")
TIERS = ("stm", "mtm", "ltm")
SCOPE_KINDS = ("session", "project", "user", "org")
SCOPE_RANK = {"session": 0, "project": 1, "user": 2, "org": 3}
SCOPE_BOOST = {"session": 1.0, "project": 2 / 3, "user": 1 / 3, "org": 0.0}
VALIDATION_BOOST = {"verified": 1.0, "unverified": 0.0, "contested": -1.0, "retracted": -2.0}
CHANNELS = ("dense", "lexical", "labels")
# Types whose title names a claim, so two of them with one title and different content
# disagree. Raw turns, summaries, pointers and todos share titles without contradicting.
CLAIM_TYPES = frozenset({"fact", "decision", "definition", "constraint", "preference",
                         "pattern", "note"})


class RecallError(ValueError):
    """Bad recall input (query, identity, mode, k, filters) or misconfiguration
    (embedder/corpus dimension mismatch)."""


class RecallOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Switches and weights. Every component can be turned off for ablation."""

    dense: bool = True
    lexical: bool = True
    labels: bool = True  # tag/entity exact matches
    qstar: bool = True
    scope_priority: bool = True
    summaries: bool = True
    conflicts: bool = True
    always_inject: bool = True
    recency: bool = True
    fusion: str = "weighted"  # "weighted" | "rrf" (measured: see module docstring)
    conflict_mode: str = "resolve"  # "resolve" | "flag"
    tag_match: str = "all"  # a tag filter requires "all" or "any" of the tags
    candidate_k: int = 50  # per channel over-fetch
    rrf_k: int = 60
    min_similarity: float = 0.25  # dense admission floor (cosine)
    label_max_rows: int = 1000  # labels on more items than this are not discriminative
    message_confidence_threshold: float = 0.0
    max_always_inject: int = 5
    # Weighted fusion (and the absolute relevance used by Q* and in `components`).
    w_dense: float = 0.35
    w_lexical: float = 0.65
    w_labels: float = 0.1
    # Multiplicative boosts: score = fused * (1 + sum).
    w_scope: float = 0.06
    w_recency: float = 0.04
    w_confidence: float = 0.04
    w_importance: float = 0.04
    w_validation: float = 0.03
    summary_demotion: float = 0.5
    qstar_max_added_fraction: float = 0.25  # of k (floor): Q* additions never exceed k
    qstar_config: QStarConfig | None = None  # None: built from settings

    def __post_init__(self) -> None:
        if self.fusion not in ("rrf", "weighted"):
            raise RecallError(f"fusion must be 'rrf' or 'weighted', not {self.fusion!r}")
        if self.conflict_mode not in ("resolve", "flag"):
            raise RecallError(f"conflict_mode must be 'resolve' or 'flag', not {self.conflict_mode!r}")
        if self.tag_match not in ("all", "any"):
            raise RecallError(f"tag_match must be 'all' or 'any', not {self.tag_match!r}")
        if self.candidate_k < 1 or self.rrf_k < 0:
            raise RecallError("candidate_k must be >= 1 and rrf_k >= 0")


class Hit(msgspec.Struct, kw_only=True):
    item: MemoryItem
    score: float
    components: dict[str, float]
    source: str  # "snapshot" / "delta" (the corpus' source label)
    conflict: bool = False
    conflict_with: list[str] = []
    resolution: str | None = None  # confidence | recency | ambiguous | flagged
    delivery: str = "catalog"  # inject | catalog
    always: bool = False  # always-inject (importance)
    low_confidence: bool = False


class RecallResult(msgspec.Struct, kw_only=True):
    query: str
    mode: str
    hits: list[Hit]
    injection: str
    catalog: dict[str, Any]
    used_ids: list[str]
    found: bool
    message: str
    trace: list[dict[str, Any]] | None = None
    timings_ms: dict[str, float] = {}
    suppressed: list[dict[str, Any]] = []  # conflict losers / Q* drops (visible items only)
    degraded: list[str] = []  # components that failed and were skipped (e.g. embedder down)


@dataclass
class _Cand:
    ci: int
    row: int
    item: MemoryItem
    source: str
    via: list[str] = field(default_factory=list)
    ranks: dict[str, int] = field(default_factory=dict)
    dense: float = 0.0
    lexical: float = 0.0
    labels: int = 0
    relevance: float = 0.0
    fused: float = 0.0
    score: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    always: bool = False
    conflict_with: list[str] = field(default_factory=list)
    resolution: str | None = None
    suppressed: str | None = None

    @property
    def id(self) -> str:
        return self.item.id

    def key(self) -> tuple:
        return (-self.score, SCOPE_RANK[self.item.scope.kind], self.item.id)


def _parse_now(now: str | None) -> float:
    if now is None:
        return time.time()
    try:
        dt = datetime.fromisoformat(now)
    except (TypeError, ValueError) as exc:
        raise RecallError(f"now must be an ISO-8601 timestamp, got {now!r}") from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


class _View:
    """The corpora as one caller sees them: allowed masks (scope first), shadowing."""

    def __init__(self, corpora: Sequence[MemoryCorpus], who: Identity, filters: dict[str, Any]):
        self.corpora = list(corpora)
        self.allowed: list[np.ndarray] = [None] * len(self.corpora)  # type: ignore[list-item]
        newer: set[str] = set()
        for ci in range(len(self.corpora) - 1, -1, -1):
            c = self.corpora[ci]
            self.allowed[ci] = c.allowed_mask(who, exclude_ids=newer, **filters)
            if ci:
                newer |= set(c.ids)

    def locate(self, item_id: str) -> tuple[int, int] | None:
        """Where the caller may read this id (newest corpus holding it), else None."""
        for ci in range(len(self.corpora) - 1, -1, -1):
            row = self.corpora[ci].row_of.get(item_id)
            if row is not None:
                return (ci, row) if self.allowed[ci][row] else None
        return None


class RecallEngine:
    def __init__(
        self,
        settings: Settings,
        embedder: Any,
        options: RecallOptions | None = None,
        *,
        doc_source: DocSource | None = None,
        subgoal_generator: SubgoalGenerator | None = None,
        clock: Any = time.monotonic,
    ):
        if not isinstance(settings, Settings):
            raise RecallError("settings must be a pipelines.settings.Settings")
        self.settings = settings
        self.embedder = embedder
        self.options = options or RecallOptions()
        self.doc_source = doc_source
        self.subgoal_generator = subgoal_generator
        self.clock = clock

    # -- public ---------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        identity: Identity,
        corpora: Sequence[MemoryCorpus] | MemoryCorpus,
        *,
        mode: str | None = None,
        k: int | None = None,
        tags: Sequence[str] = (),
        tier: str | None = None,
        type: str | None = None,  # noqa: A002 - the tool API's name for the item type
        scope: str | None = None,
        trace: bool = False,
        now: str | None = None,
        options: RecallOptions | None = None,
    ) -> RecallResult:
        t0 = time.perf_counter()
        opts = options or self.options
        mode = mode or self.settings.recall_mode
        corpora = [corpora] if isinstance(corpora, MemoryCorpus) else list(corpora)
        tags = [tags] if isinstance(tags, str) else list(tags)
        self._validate(query, identity, corpora, mode, k, tags, tier, type, scope)
        if k is None:
            k = self.settings.catalog_k if mode == "catalog" else self.settings.recall_k
        now_ts = _parse_now(now)
        tr: list[dict[str, Any]] | None = [] if trace else None
        timings: dict[str, float] = {}
        degraded: list[str] = []

        # 1. Scope first: nothing outside these masks is ever looked at again.
        filters = {"tags": tags, "tier": tier, "item_type": type, "scope_kind": scope,
                   "tag_match": opts.tag_match}
        view = _View(corpora, identity, filters)
        if tr is not None:
            tr.append({"stage": "scope", "corpora": [
                {"source": c.source, "items": len(c), "allowed": int(a.sum())}
                for c, a in zip(view.corpora, view.allowed)]})
        timings["scope"] = (time.perf_counter() - t0) * 1e3

        # 2. Query features.
        t = time.perf_counter()
        terms = query_terms(query)
        grams = label_ngrams(query)
        qvec = None
        if opts.dense and query.strip() and any(c.vectors is not None for c in corpora):
            qvec = self._embed(query, corpora, degraded)
        timings["embed"] = (time.perf_counter() - t) * 1e3

        # 3. Candidates from each channel, fused.
        t = time.perf_counter()
        ctx = _Query(self, opts, view, qvec, terms, grams, now_ts)
        cands = ctx.candidates(tr)
        timings["candidates"] = (time.perf_counter() - t) * 1e3

        # 4-6. Pull-ins, scores, conflicts, summary preference.
        t = time.perf_counter()
        if opts.conflicts:
            ctx.pull_conflict_partners(cands)
        if opts.summaries:
            ctx.pull_summaries(cands)
        if opts.always_inject and mode != "catalog":
            ctx.pull_always(cands, self.settings.always_inject_importance,
                            opts.max_always_inject)
        ctx.score_all(list(cands.values()))
        suppressed: list[dict[str, Any]] = []
        if opts.conflicts:
            ctx.resolve_conflicts(cands, suppressed, tr)
        if opts.summaries:
            ctx.demote_covered_messages(cands, tr)
        live = [c for c in cands.values() if c.suppressed is None]
        always = sorted((c for c in live if c.always),
                        key=lambda c: (-c.item.importance, *c.key()))[: opts.max_always_inject]
        always_ids = {c.id for c in always}
        ranked = sorted((c for c in live if c.id not in always_ids), key=_Cand.key)
        timings["score"] = (time.perf_counter() - t) * 1e3

        # 7. Q* over the top-k support set.
        t = time.perf_counter()
        selected = ranked[:k]
        if opts.qstar and selected:
            selected = ctx.qstar(selected, cands, k, query, suppressed, tr)
        timings["qstar"] = (time.perf_counter() - t) * 1e3

        # 8. Deliver: inject within budget / catalog the rest.
        t = time.perf_counter()
        ordered = always + [c for c in selected if c.id not in always_ids]
        # Defence in depth: re-check visibility on the way out.
        ordered = [c for c in ordered if c.item.scope.visible_to(identity)]
        hits, injection, cat = self._deliver(ordered, mode, opts)
        timings["render"] = (time.perf_counter() - t) * 1e3
        if tr is not None:
            tr.append({"stage": "deliver", "mode": mode,
                       "injected": [h.item.id for h in hits if h.delivery == "inject"],
                       "catalogued": [h.item.id for h in hits if h.delivery == "catalog"],
                       "not_returned": [c.id for c in ordered
                                        if c.id not in {h.item.id for h in hits}]})
        n_found = sum(not h.always for h in hits)
        shown = query.strip()
        message = (f"Found {n_found} {'memory' if n_found == 1 else 'memories'} for {shown!r}."
                   if n_found else f"No memory found for {shown!r}.")
        timings["total"] = (time.perf_counter() - t0) * 1e3
        return RecallResult(
            query=query, mode=mode, hits=hits, injection=injection, catalog=cat,
            used_ids=[h.item.id for h in hits], found=n_found > 0, message=message, trace=tr,
            timings_ms={k_: round(v, 3) for k_, v in timings.items()},
            suppressed=suppressed, degraded=degraded,
        )

    # -- helpers --------------------------------------------------------------------------

    def _validate(self, query, identity, corpora, mode, k, tags, tier, item_type, scope) -> None:
        if not isinstance(query, str):
            raise RecallError(f"query must be a string, got {type(query).__name__}")
        if not isinstance(identity, Identity):
            raise RecallError("identity must be a pipelines.records.Identity")
        for c in corpora:
            if not isinstance(c, MemoryCorpus):
                raise RecallError(f"corpora must be MemoryCorpus, got {type(c).__name__}")
        if mode not in MODES:
            raise RecallError(f"mode must be one of {MODES}, not {mode!r}")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise RecallError(f"k must be a positive integer, not {k!r}")
        if any(not isinstance(t, str) for t in tags):
            raise RecallError("tags must be strings")
        if tier is not None and tier not in TIERS:
            raise RecallError(f"tier must be one of {TIERS}, not {tier!r}")
        if item_type is not None and item_type not in ITEM_TYPES:
            raise RecallError(f"type must be one of {ITEM_TYPES}, not {item_type!r}")
        if scope is not None and scope not in SCOPE_KINDS:
            raise RecallError(f"scope must be one of {SCOPE_KINDS}, not {scope!r}")

    def _embed(self, query: str, corpora: Sequence[MemoryCorpus], degraded: list[str]):
        try:
            # The online path may use a faster model in the same space (MiniLM: int8).
            out = np.asarray(self.embedder.embed_online([query]), dtype=np.float32)
        except Exception as exc:  # an embedder outage degrades recall to lexical + labels
            degraded.append(f"dense: {type(exc).__name__}: {exc}")
            return None
        if out.ndim != 2 or out.shape[0] != 1:
            raise RecallError(f"embedder returned shape {out.shape}, expected (1, dim)")
        vec = out[0]
        for c in corpora:
            if c.dim is not None and c.dim != vec.shape[0]:
                raise RecallError(
                    f"embedder dim {vec.shape[0]} != {c.source} corpus dim {c.dim}: "
                    "the snapshot was built with another embedder")
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else None

    def _deliver(
        self, ordered: list[_Cand], mode: str, opts: RecallOptions
    ) -> tuple[list[Hit], str, dict[str, Any]]:
        s = self.settings

        def injectable(c: _Cand) -> bool:
            floor = (opts.message_confidence_threshold if c.item.type == "message"
                     else s.confidence_threshold)
            return c.item.confidence >= floor and c.item.validation != "retracted"

        injected: set[str] = set()
        injection = ""
        if mode in ("inject", "hybrid"):
            entries = [(c.id, format_entry(c.item, c.conflict_with if c.resolution in
                                           ("ambiguous", "flagged") else ()),
                        c.resolution in ("ambiguous", "flagged"))
                       for c in ordered if injectable(c)]
            injection, ids = pack_injection(entries, s.inject_budget_tokens)
            injected = set(ids)
        hits: list[Hit] = []
        cat_entries: list[dict[str, Any]] = []
        for c in ordered:
            if c.id in injected:
                delivery = "inject"
            elif mode != "inject" and len(cat_entries) < s.catalog_k:
                delivery = "catalog"
            else:
                continue
            low = not injectable(c)
            hit = Hit(item=c.item, score=round(c.score, 6), components=c.components,
                      source=c.source, conflict=bool(c.conflict_with),
                      conflict_with=list(c.conflict_with), resolution=c.resolution,
                      delivery=delivery, always=c.always, low_confidence=low)
            hits.append(hit)
            if delivery == "catalog":
                flagged = c.conflict_with if c.resolution in ("ambiguous", "flagged") else ()
                cat_entries.append(catalog_entry(c.item, c.score, flagged, low))
        return hits, injection, catalog(cat_entries)


class _Query:
    """Per-call state: the query's vector, terms and n-grams, lexical arrays per corpus."""

    def __init__(self, engine: RecallEngine, opts: RecallOptions, view: _View,
                 qvec: np.ndarray | None, terms: list[str], grams: set[str], now_ts: float):
        self.engine = engine
        self.settings = engine.settings
        self.opts = opts
        self.view = view
        self.qvec = qvec
        self.terms = terms
        self.grams = grams
        self.now_ts = now_ts
        self.lex: list[np.ndarray | None] = [
            c.lexical_scores(terms) if opts.lexical and terms else None for c in view.corpora
        ]
        self.channel_len: dict[str, int] = {}
        # Query n-grams that are a tag or entity somewhere in each corpus (usually none).
        self.label_grams: list[set[str]] = [
            {g for g in grams if g in c.tag_rows or g in c.entity_rows} for c in view.corpora
        ]

    # candidate generation ----------------------------------------------------------------

    def _cand(self, cands: dict[str, _Cand], ci: int, row: int, via: str) -> _Cand:
        c = self.view.corpora[ci]
        item = c.items[row]
        cand = cands.get(item.id)
        if cand is None:
            cand = _Cand(ci=ci, row=row, item=item, source=c.source)
            cands[item.id] = cand
        if via not in cand.via:
            cand.via.append(via)
        return cand

    def candidates(self, tr: list | None) -> dict[str, _Cand]:
        opts, view = self.opts, self.view
        ck = opts.candidate_k
        lists: dict[str, list[tuple[float, str, int, int]]] = {}
        if self.qvec is not None:
            entries = []
            for ci, c in enumerate(view.corpora):
                rows, sims = c.dense_search(self.qvec, view.allowed[ci], ck)
                entries += [(float(s), c.ids[r], ci, int(r)) for r, s in zip(rows, sims)
                            if s >= opts.min_similarity]
            lists["dense"] = sorted(entries, key=lambda e: (-e[0], e[1]))[:ck]
        if opts.lexical and self.terms:
            entries = []
            for ci, c in enumerate(view.corpora):
                lex = self.lex[ci]
                if lex is None:
                    continue
                masked = np.where(view.allowed[ci], lex, 0.0)
                nz = np.flatnonzero(masked > 0)
                if len(nz) > ck:
                    nz = nz[np.argpartition(-masked[nz], ck - 1)[:ck]]
                    kth = masked[nz].min()
                    nz = np.flatnonzero(masked >= kth)  # keep boundary ties for the id order
                entries += [(float(masked[r]), c.ids[r], ci, int(r)) for r in nz]
            lists["lexical"] = sorted(entries, key=lambda e: (-e[0], e[1]))[:ck]
        if opts.labels and self.grams:
            entries = []
            for ci, c in enumerate(view.corpora):
                counts = c.label_matches(self.grams, view.allowed[ci], opts.label_max_rows)
                entries += [(float(n), c.ids[r], ci, r) for r, n in counts.items()]
            lists["labels"] = sorted(entries, key=lambda e: (-e[0], e[1]))[:ck]
        cands: dict[str, _Cand] = {}
        for name, entries in lists.items():
            self.channel_len[name] = len(entries)
            for rank, (_, _, ci, row) in enumerate(entries, start=1):
                cand = self._cand(cands, ci, row, name)
                cand.ranks[name] = rank
        for cand in list(cands.values()):
            if cand.item.validation == "retracted":  # known false: never recalled
                del cands[cand.id]
        if tr is not None:
            tr.append({"stage": "candidates", "channels": {
                name: [[e[1], round(e[0], 4)] for e in entries[:10]]
                for name, entries in lists.items()}, "count": len(cands)})
        return cands

    def pull_conflict_partners(self, cands: dict[str, _Cand]) -> None:
        """Bring in items that contradict a candidate or share its normalised title, so a
        conflict is seen (and resolved or flagged) rather than silently half-shown."""
        view = self.view
        for cand in list(cands.values()):
            if cand.item.type not in CLAIM_TYPES:
                continue
            partners: list[tuple[int, int]] = []
            for link in cand.item.links:
                if link.rel == "contradicts":
                    loc = view.locate(link.to)
                    if loc:
                        partners.append(loc)
            title = view.corpora[cand.ci].title_key(cand.row)
            for ci, c in enumerate(view.corpora):
                for rel, row in c.links_in.get(cand.id, ()):
                    if rel == "contradicts" and view.allowed[ci][row]:
                        partners.append((ci, row))
                rows = c.title_rows.get(title) if title else None
                if rows is not None and len(rows) <= 50:
                    partners.extend((ci, int(r)) for r in rows if view.allowed[ci][r])
            for ci, row in partners:
                item = view.corpora[ci].items[row]
                if item.id != cand.id and item.type in CLAIM_TYPES and item.validation != "retracted":
                    self._cand(cands, ci, row, "conflict-partner")

    def pull_summaries(self, cands: dict[str, _Cand]) -> None:
        view = self.view
        for cand in list(cands.values()):
            if cand.item.type != "message" or not cand.item.provenance.turn_refs:
                continue
            for ci, c in enumerate(view.corpora):
                for row in c.summaries_covering(cand.item.provenance.turn_refs, view.allowed[ci]):
                    self._cand(cands, ci, row, "summary-of")

    def pull_always(self, cands: dict[str, _Cand], threshold: int, cap: int) -> None:
        view = self.view
        for ci, c in enumerate(view.corpora):
            rows = np.flatnonzero(view.allowed[ci] & (c.importance >= threshold))
            # Only the most important few can be injected: do not score thousands.
            rows = sorted(rows.tolist(), key=lambda r: (-int(c.importance[r]), c.ids[r]))
            for row in rows[: cap * 4]:
                if c.items[row].validation == "retracted":
                    continue
                cand = self._cand(cands, ci, int(row), "always")
                cand.always = True

    # scoring -----------------------------------------------------------------------------

    def _relevance(self, dense: float, lexical: float, labels: int) -> float:
        """Absolute relevance in [0, 1]: the weighted mean of the enabled channels."""
        opts = self.opts
        weights, total = 0.0, 0.0
        if self.qvec is not None:
            weights += opts.w_dense
            total += opts.w_dense * max(0.0, dense)
        if opts.lexical:
            weights += opts.w_lexical
            total += opts.w_lexical * lexical
        if opts.labels:
            weights += opts.w_labels
            total += opts.w_labels * (labels / (labels + 1))
        return total / weights if weights else 0.0

    def _signals(self, ci: int, rows: Sequence[int]) -> list[tuple[float, float, int]]:
        """(dense cosine, normalised lexical, label matches) for rows of one corpus."""
        c = self.view.corpora[ci]
        idx = np.asarray(rows, dtype=np.int64)
        if self.qvec is not None and c.vectors is not None:
            dense = (c.vectors[idx] @ self.qvec).tolist()
        else:
            dense = [0.0] * len(idx)
        lex = self.lex[ci]
        lexical = lex[idx].tolist() if lex is not None else [0.0] * len(idx)
        grams = self.label_grams[ci]
        if self.opts.labels and grams:
            labels = [len(c.item_labels(int(r)) & grams) for r in idx]
        else:
            labels = [0] * len(idx)
        return list(zip(dense, lexical, labels))

    def relevance_of(self, ci: int, row: int) -> tuple[float, float, int, float]:
        """(dense cosine, normalised lexical, label matches, absolute relevance 0..1)."""
        dense, lexical, labels = self._signals(ci, [row])[0]
        return dense, lexical, labels, self._relevance(dense, lexical, labels)

    def score_all(self, cands: Sequence[_Cand]) -> None:
        by_corpus: dict[int, list[_Cand]] = {}
        for c in cands:
            by_corpus.setdefault(c.ci, []).append(c)
        for ci, group in by_corpus.items():
            for cand, sig in zip(group, self._signals(ci, [c.row for c in group])):
                self._finish(cand, *sig)

    def score(self, cand: _Cand) -> None:
        self._finish(cand, *self._signals(cand.ci, [cand.row])[0])

    def _finish(self, cand: _Cand, dense: float, lexical: float, labels: int) -> None:
        opts, s = self.opts, self.settings
        cand.dense, cand.lexical, cand.labels = dense, lexical, labels
        cand.relevance = self._relevance(dense, lexical, labels)
        if opts.fusion == "rrf":
            active = [ch for ch in CHANNELS if ch in self.channel_len]
            best = len(active) / (opts.rrf_k + 1) or 1.0
            fused = sum(1.0 / (opts.rrf_k + cand.ranks[ch]) for ch in active if ch in cand.ranks)
            if not cand.ranks:
                # Pulled in (partner, summary, Q*): rank it just after each list's end.
                fused = sum(1.0 / (opts.rrf_k + self.channel_len[ch] + 1) for ch in active)
                fused *= cand.relevance
            cand.fused = fused / best
        else:
            cand.fused = cand.relevance
        item = cand.item
        comps: dict[str, float] = {"dense": dense, "lexical": lexical, "labels": float(labels),
                                   "relevance": cand.relevance, "fused": cand.fused}
        for ch, rank in cand.ranks.items():
            comps[f"rank_{ch}"] = float(rank)
        boost = 0.0
        if opts.scope_priority:
            comps["scope"] = opts.w_scope * SCOPE_BOOST[item.scope.kind]
            boost += comps["scope"]
        if opts.recency:
            then = float(self.view.corpora[cand.ci].updated_ts[cand.row])
            age = max(0.0, (self.now_ts - then) / 86400.0)
            comps["recency"] = (0.0 if math.isnan(then)
                                else opts.w_recency * math.exp(-s.recency_lambda * age))
            boost += comps["recency"]
        comps["confidence"] = opts.w_confidence * max(0.0, min(1.0, item.confidence))
        comps["importance"] = opts.w_importance * (max(1, min(10, item.importance)) - 1) / 9
        comps["validation"] = opts.w_validation * VALIDATION_BOOST.get(item.validation, 0.0)
        boost += comps["confidence"] + comps["importance"] + comps["validation"]
        if cand.always:
            comps["always"] = 1.0
        comps["multiplier"] = 1.0 + boost
        cand.score = cand.fused * (1.0 + boost)
        comps["final"] = cand.score
        cand.components = comps

    # conflicts and summaries ---------------------------------------------------------------

    def resolve_conflicts(self, cands: dict[str, _Cand], suppressed: list[dict[str, Any]],
                          tr: list | None) -> None:
        claims = sorted((c for c in cands.values() if c.item.type in CLAIM_TYPES),
                        key=lambda c: c.id)
        parent = {c.id: c.id for c in claims}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def union(a: str, b: str) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)

        by_title: dict[str, list[_Cand]] = {}
        for c in claims:
            t = self.view.corpora[c.ci].title_key(c.row)
            if t:
                by_title.setdefault(t, []).append(c)
            for link in c.item.links:
                if link.rel == "contradicts" and link.to in parent and link.to != c.id:
                    union(c.id, link.to)
        for group in by_title.values():
            for a in group:
                for b in group:
                    if a.id < b.id and normalise_label(a.item.content) != normalise_label(b.item.content):
                        union(a.id, b.id)
        groups: dict[str, list[_Cand]] = {}
        for c in claims:
            groups.setdefault(find(c.id), []).append(c)
        report = []
        for members in groups.values():
            if len(members) < 2:
                continue
            members.sort(key=lambda c: (-c.item.confidence, _neg_time(c.item.updated_at), c.id))
            ids = [c.id for c in members]
            if self.opts.conflict_mode == "flag":
                for c in members:
                    c.conflict_with = [i for i in ids if i != c.id]
                    c.resolution = "flagged"
                report.append({"members": ids, "resolution": "flagged"})
                continue
            winner = members[0]
            kept = [winner]
            for c in members[1:]:
                if winner.item.confidence > c.item.confidence + 1e-9:
                    why = "confidence"
                elif _ts(winner.item.updated_at) > _ts(c.item.updated_at):
                    why = "recency"
                else:
                    kept.append(c)
                    continue
                c.suppressed = why
                c.conflict_with = [winner.id]
                c.resolution = why
                suppressed.append({"id": c.id, "reason": f"conflict: lost on {why}",
                                   "winner": winner.id})
            if len(kept) > 1:
                kept_ids = [c.id for c in kept]
                for c in kept:
                    c.conflict_with = [i for i in kept_ids if i != c.id]
                    c.resolution = "ambiguous"
            else:
                winner.conflict_with = [i for i in ids if i != winner.id]
                winner.resolution = members[1].resolution
            report.append({"members": ids, "kept": [c.id for c in kept]})
        if tr is not None and report:
            tr.append({"stage": "conflicts", "groups": report})

    def demote_covered_messages(self, cands: dict[str, _Cand], tr: list | None) -> None:
        summaries = [c for c in cands.values()
                     if c.item.type == "summary" and c.suppressed is None]
        if not summaries:
            return
        demoted = []
        for c in cands.values():
            if c.item.type != "message" or not c.item.provenance.turn_refs:
                continue
            refs = set(c.item.provenance.turn_refs)
            covering = [s for s in summaries if refs <= set(s.item.provenance.turn_refs)]
            if not covering:
                continue
            top = max(covering, key=lambda s: (s.score, s.id))
            if top.score < c.score:
                # The summary stands for the message: it ranks at least as high.
                top.score = c.score
                top.components["final"] = round(top.score, 6)
                top.components["via_message"] = 1.0
            c.score = min(c.score * self.opts.summary_demotion, top.score * 0.999)
            c.components["summary_demotion"] = self.opts.summary_demotion
            c.components["final"] = round(c.score, 6)
            demoted.append({"message": c.id, "summary": top.id})
        if tr is not None and demoted:
            tr.append({"stage": "summaries", "demoted": demoted})

    # Q* ----------------------------------------------------------------------------------

    def evidence(self, cand: _Cand) -> Evidence:
        c = self.view.corpora[cand.ci]
        vec = c.vectors[cand.row] if c.vectors is not None else None
        return Evidence(item=cand.item, relevance=cand.relevance, vector=vec,
                        terms=c.item_terms(cand.row))

    def qstar(self, selected: list[_Cand], cands: dict[str, _Cand], k: int, query: str,
              suppressed: list[dict[str, Any]], tr: list | None) -> list[_Cand]:
        eng = self.engine
        cfg = self.opts.qstar_config or QStarConfig.from_settings(self.settings)
        search = QStarSearch(cfg, _Expander(self, cands), eng.doc_source,
                             eng.subgoal_generator, eng.clock)
        result = search.run(query, [self.evidence(c) for c in selected])
        by_id = {c.id: c for c in selected}
        added: list[_Cand] = []
        for item_id in result.added_ids:
            cand = cands.get(item_id)
            if cand is None:
                loc = self.view.locate(item_id)
                if loc is None:  # cannot happen: the expander only offers allowed rows
                    continue
                cand = self._cand(cands, loc[0], loc[1], "qstar")
                self.score(cand)
            elif "qstar" not in cand.via:
                cand.via.append("qstar")
            cand.components["qstar_added"] = 1.0
            added.append(cand)
        for item_id in result.dropped_ids:
            suppressed.append({"id": item_id, "reason": "qstar verify: weak provenance"})
        kept = [by_id[i] for i in result.best.support_memory_ids if i in by_id]
        kept.sort(key=_Cand.key)
        # Q* may displace at most a fraction of the ranked top-k (its additions close
        # coverage gaps; they should not crowd out the best direct hits).
        added.sort(key=_Cand.key)
        added = added[: int(k * self.opts.qstar_max_added_fraction)]
        room = max(0, k - len(added))
        final = sorted(added + kept[:room], key=_Cand.key)
        if tr is not None:
            tr.append({"stage": "qstar", "stop_reason": result.stop_reason,
                       "goal_reached": result.goal_reached, "expansions": result.expansions,
                       "retrieved_tokens": result.retrieved_tokens,
                       "best": result.best.id, "best_score": result.best.score,
                       "components": result.best.components,
                       "added": result.added_ids, "dropped": result.dropped_ids,
                       "expansions_trace": result.trace})
        return final


class _Expander:
    """Q*'s view of the memory: related items, restricted to what the caller may see."""

    def __init__(self, q: _Query, cands: dict[str, _Cand]):
        self.q = q
        self.cands = cands

    def _evidence(self, ci: int, row: int) -> Evidence:
        c = self.q.view.corpora[ci]
        _, _, _, rel = self.q.relevance_of(ci, row)
        vec = c.vectors[row] if c.vectors is not None else None
        return Evidence(item=c.items[row], relevance=rel, vector=vec, terms=c.item_terms(row))

    def _usable(self, ci: int, row: int, exclude: set[str]) -> bool:
        item = self.q.view.corpora[ci].items[row]
        if item.id in exclude or item.validation == "retracted":
            return False
        cand = self.cands.get(item.id)
        if cand is not None and cand.suppressed is not None:
            return False  # a conflict loser stays out
        return self.q.view.locate(item.id) == (ci, row)

    def expand(self, support: Sequence[Evidence], focus: str | None, limit: int,
               exclude: set[str]) -> list[Evidence]:
        view = self.q.view
        found: dict[str, tuple[int, int]] = {}
        if focus is not None:
            for ci, c in enumerate(view.corpora):
                for row in c.rows_for_term(focus, view.allowed[ci], limit * 2):
                    if self._usable(ci, row, exclude):
                        found.setdefault(c.ids[row], (ci, row))
        else:
            for e in support:
                for ci, c in enumerate(view.corpora):
                    for row in sorted(c.neighbours(e.item, view.allowed[ci])):
                        if self._usable(ci, row, exclude):
                            found.setdefault(c.ids[row], (ci, row))
        by_corpus: dict[int, list[int]] = {}
        for ci, row in found.values():
            by_corpus.setdefault(ci, []).append(row)
        ev: list[Evidence] = []
        for ci, rows in by_corpus.items():
            c = view.corpora[ci]
            for row, (dense, lexical, labels) in zip(rows, self.q._signals(ci, rows)):
                ev.append(Evidence(item=c.items[row],
                                   relevance=self.q._relevance(dense, lexical, labels),
                                   vector=c.vectors[row] if c.vectors is not None else None,
                                   terms=c.item_terms(row)))
        focus_terms = set(focus.split()) if focus else set()
        ev.sort(key=lambda e: (-(focus_terms <= e.terms) if focus_terms else 0,
                               -e.relevance, e.id))
        return ev[:limit]

    def provenance_pointer(self, item: MemoryItem) -> Evidence | None:
        view = self.q.view
        options: list[tuple[int, int]] = []
        for link in item.links:
            if link.rel in ("references", "supports", "derived_from"):
                loc = view.locate(link.to)
                if loc:
                    options.append(loc)
        for ci, c in enumerate(view.corpora):
            for rel, row in c.links_in.get(item.id, ()):
                if rel in ("references", "supports") and view.allowed[ci][row]:
                    options.append((ci, row))
        for ci, row in sorted(options, key=lambda o: view.corpora[o[0]].ids[o[1]]):
            ptr = view.corpora[ci].items[row]
            if ptr.type == "pointer" and not is_weak(ptr) and view.locate(ptr.id) == (ci, row):
                return self._evidence(ci, row)
        return None


def _ts(iso: str | None) -> float:
    if not iso:
        return float("-inf")
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        return float("-inf")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _neg_time(iso: str | None) -> float:
    return -_ts(iso)
