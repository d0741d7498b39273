"""RecallEngine: one recall as a short pipeline of named stages over one `RecallQuery`.

    scope -> embed -> candidates -> pull_ins -> score -> conflicts -> summaries -> repeats
          -> rank -> qstar -> render

1. **scope**: each corpus yields the rows the caller may see (`Scope.visible_to`), active
   only, narrowed by the `RecallFilters`; nothing outside these masks is looked at again.
2. **embed**: the query's vector (an embedder outage degrades recall to lexical + labels),
   terms and label n-grams.
3. **candidates**: the dense, lexical and label channels, fused (see `candidates.py`).
   Raw chat turns that carry nothing to recall (small talk, earlier copies of this very
   question) and retracted items are dropped here.
4. **pull_ins**: conflict partners, summaries of candidate turns, and (inject/hybrid)
   always-inject items with importance >= `always_inject_importance`.
5. **score**: `fused * (1 + boosts) * weight` (a raw turn weighs `message_weight`).
6. **conflicts**: the conflict rule of the `conflicts` package; members of one subject at several
   scopes are ordered most specific first.
7. **summaries**: a turn covered by a summary is demoted below it.
8. **repeats**: one copy of turns with the same text.
9. **rank**: always-inject items first, then by score, scope rank, id; turns that state
   nothing leave before the top-k cut (k places for what can be shown), and a question
   that asks several things has each part's best match in the top k (`rerank.cover_parts`).
10. **qstar**: Q* refines the top-k support set (`expand.py`, `qstar.py`).
11. **render**: inject within budget / catalog the rest (`deliver.py`).

Each stage is timed (`timings_ms`) and, with `trace`, leaves one trace entry. Only returned
(injected or catalogued) items are hits; `used_ids` lists them for usage accounting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

import msgspec
import numpy as np

from pipelines.records import Identity, time_zone
from pipelines.settings import Settings

from . import select
from .candidates import Candidate, CandidateSearch, VisibleCorpora
from .corpus import MemoryCorpus
from .dates import asking_day, asks_when, coming_dates, question_dates, said_dates
from .deliver import Hit, deliver, shows_nothing_asked
from .episodic import is_message, replaced_by, states_nothing
from .expand import qstar_trace, run_qstar
from .lexical import label_ngrams, query_terms, without_names
from .qstar import DocSource, QStarConfig, SubgoalGenerator
from .query import (
    RecallError,
    RecallFilters,
    asked_types,
    asks_about_self,
    asks_what_i_said,
    asks_what_was_said,
    check_request,
    parse_now,
    question_parts,
    subject_text,
)
from .render import found_message
from .rerank import SESSION_PENALTY, asks_for_several, cover_parts, own_words_first, rerank_turns


class RecallOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Switches and weights. Every component can be turned off for ablation."""

    dense: bool = True
    lexical: bool = True
    labels: bool = True  # tag/entity exact matches
    qstar: bool = True
    # A question that asks several things ("Where does Maya live and what's her dog
    # called?", `query.question_parts`) has each part's best match in the top k
    # (`rerank.cover_parts`).
    cover_parts: bool = True
    scope_priority: bool = True
    summaries: bool = True
    conflicts: bool = True
    always_inject: bool = True
    recency: bool = True
    episodic: bool = True  # drop small talk and question copies, one copy of repeated turns
    fusion: str = "weighted"  # "weighted" | "rrf"
    conflict_mode: str = "resolve"  # "resolve" | "flag"
    tag_match: str = "all"  # a tag filter requires "all" or "any" of the tags
    candidate_k: int = 50  # per channel over-fetch
    rrf_k: int = 60
    min_similarity: float = 0.25  # dense admission floor (cosine)
    label_max_rows: int = 1000  # labels on more items than this are not discriminative
    message_confidence_threshold: float = 0.0
    # A raw chat turn's score weight: evidence of what was said ranks below a governed
    # memory that is as relevant (LoCoMo, all turns, is unaffected: one weight for all).
    message_weight: float = 0.7
    # Governed memories at least this relevant (relative to the best candidate) rank before
    # every raw turn.
    curated_floor: float = 0.5
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
    # Speaker linking: a raw turn said by someone the question names ("What did Caroline
    # research?") is boosted: what a person did is mostly told by that person.
    w_speaker: float = 0.0
    # The query vector is made without the names of speakers the question names ("What do
    # Melanie's kids like?" is embedded as "What do kids like?"): the answer rarely says
    # the name, the other speaker's turns do ("Thanks, Melanie!"), so with it the vector
    # finds turns said *to* the person. BM25 keeps the name (it matches the speaker's own
    # turns by their title). bench/README.md: LoCoMo, held-out multi-hop and open-domain.
    dense_without_speakers: bool = True
    # Session spread: after the first `spread_after` raw turns, each further raw turn is
    # picked greedily by score * spread_decay**(turns already picked from its session), so
    # the top-k reaches more sessions (questions whose answer is spread over several
    # conversations). 1.0 = off.
    spread_decay: float = 1.0
    spread_after: int = 3
    # Pseudo-relevance feedback: the `prf_docs` most relevant candidates lend their `prf_terms`
    # best words (relevance x IDF) to a second BM25 query, blended in with `prf_lexical`, and
    # their mean vector to the query vector with `prf_dense`; both channels are searched again.
    prf_docs: int = 0
    prf_terms: int = 8
    prf_lexical: float = 0.3
    prf_dense: float = 0.3
    # ... and for a question that asks for several things ("What video games does Nate
    # play?", "How many tournaments has he won?", `rerank.asks_for_several`) when `prf_docs`
    # is 0: the best words of the `prf_several_docs` most relevant candidates join the BM25
    # query (lexical only: the query vector stays). The things asked for are told in turns
    # that share words with the first ones found. 0 = off (bench/README.md: LoCoMo, 2-10
    # measured, every one lifts multi-hop; 5 is the tune-best with 2).
    prf_several_docs: int = 5
    # Session support (two-stage, sessions first): a raw turn's score is multiplied by
    # 1 + w_session * (its session's relevance mass / the best session's), the mass being
    # the summed relevance of the session's top `session_top` turn candidates.
    w_session: float = 0.0
    session_top: int = 3
    # Date-aware recall: a question that names a calendar date ("on 1 May, 2022", "in July
    # 2022") lifts raw turns said from `date_before_days` before that date to
    # `date_after_days` after it (events are told "last night", "last week", "last month").
    w_date: float = 0.3
    # A question that asks when lifts raw turns that state a time ("on March 3rd", "last
    # week", "tomorrow"), x(1 + w_when): `dates.states_time`. Chosen on the tune conversations
    # of locomo_dev (0.1-1.0 measured; 0.2 and 0.3 best); README has the held-out numbers.
    w_when: float = 0.2
    date_before_days: int = 7
    date_after_days: int = 30
    # A raw turn that states more is more often the evidence: x(1 + w_stated * n / (n +
    # stated_half)), n = words of its sentences that are not questions. Off: on LoCoMo it
    # lifts the conversations it was tuned on, not the held-out ones.
    w_stated: float = 0.0
    stated_half: float = 20.0
    # Raw turns among the first `rerank_pool` of the ranking are re-ordered by a small linear
    # model (how much a turn states, its session's matches, a named speaker, its position;
    # see `rerank.py`). 0 = off.
    rerank_pool: int = 60
    # ... and for a question that asks for several things so far ("What books has she
    # read?"), the first 10 are spread over sessions: a turn's model score drops by this
    # much per turn of its session placed before it. 0 = off.
    rerank_session_penalty: float = SESSION_PENALTY
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
        if self.prf_docs < 0 or self.prf_several_docs < 0:
            raise RecallError("prf_docs and prf_several_docs must be >= 0")
        if self.candidate_k < 1 or self.rrf_k < 0:
            raise RecallError("candidate_k must be >= 1 and rrf_k >= 0")
        if self.rerank_pool < 0:
            raise RecallError("rerank_pool must be >= 0")
        if self.rerank_session_penalty < 0:
            raise RecallError("rerank_session_penalty must be >= 0")
        if self.stated_half <= 0:
            raise RecallError("stated_half must be > 0")
        if self.date_before_days < 0 or self.date_after_days < 0:
            raise RecallError("date_before_days and date_after_days must be >= 0")
        if not 0.0 < self.message_weight <= 1.0:
            raise RecallError("message_weight must be in (0, 1]")


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
class RecallQuery:
    """One recall: the request, and what each stage leaves for the next."""

    text: str
    identity: Identity
    corpora: list[MemoryCorpus]
    mode: str
    k: int
    filters: RecallFilters
    opts: RecallOptions
    now_ts: float
    trace: list[dict[str, Any]] | None
    zone: str = "UTC"  # the asker's time zone: their "yesterday"
    said: tuple[str, ...] = ()  # the conversation's messages: turns saying them are not recalled
    own_words: bool = False  # the caller asks what they said themselves (`RecallEngine.recall`)
    subject: str = ""  # the words searched with (`query.subject_text`), set with the terms
    parts: list[list[str]] = field(default_factory=list)  # the terms of each thing it asks (`query.question_parts`)
    timings: dict[str, float] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)
    suppressed: list[dict[str, Any]] = field(default_factory=list)
    view: VisibleCorpora | None = None
    search: CandidateSearch | None = None
    qvec: np.ndarray | None = None
    terms: list[str] = field(default_factory=list)
    grams: set[str] = field(default_factory=set)
    always: list[Candidate] = field(default_factory=list)
    ranked: list[Candidate] = field(default_factory=list)
    selected: list[Candidate] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    injection: str = ""
    catalog: dict[str, Any] = field(default_factory=dict)

    def note(self, entry: dict[str, Any] | None) -> None:
        if self.trace is not None and entry:
            self.trace.append(entry)


Stage = Callable[[RecallQuery], "dict[str, Any] | None"]


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
        self.stages: list[tuple[str, Stage]] = [
            ("scope", self._scope), ("embed", self._embed_query), ("candidates", self._candidates),
            ("pull_ins", self._pull_ins), ("score", self._score), ("conflicts", self._conflicts),
            ("summaries", self._summaries), ("repeats", self._repeats), ("rank", self._rank),
            ("qstar", self._qstar), ("render", self._render),
        ]

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
        filters: RecallFilters | None = None,
        trace: bool = False,
        now: str | None = None,
        options: RecallOptions | None = None,
        said: Sequence[str] = (),
        tz: str | None = None,
        own_words: bool = False,
    ) -> RecallResult:
        """Recall for `identity` over `corpora` (oldest first). Filters come either as one
        `RecallFilters` or as the `tags`/`tier`/`type`/`scope` keywords. `said`: the
        messages of the conversation the question is asked in (a chat client resends them
        with each question): a stored turn saying the same is in the model's context
        already, so it is not recalled. `tz`: the asker's IANA time zone, in which
        "yesterday" and "last week" are read (default `Settings.timezone`). `own_words`:
        the caller asks what they said themselves, as a question that says so does ("What
        did I tell you about penicillin?", `query.asks_what_i_said`), though the query is
        only its subject ("penicillin", searched so by the chat proxy): their own turns
        saying the query's words come first (`rerank.own_words_first`)."""
        t0 = time.perf_counter()
        q = self._request(query, identity, corpora, mode, k, trace, now, options,
                          filters or self._filters(tags, tier, type, scope, options))
        if tz is not None:
            q.zone = self._zone(tz)
        q.said = tuple(said)
        q.own_words = own_words or asks_what_i_said(query)
        for name, stage in self.stages:
            started = time.perf_counter()
            q.note(stage(q))
            q.timings[name] = (time.perf_counter() - started) * 1e3
        q.timings["total"] = (time.perf_counter() - t0) * 1e3
        return self._result(q)

    def query_vector_text(self, query: str, identity: Identity,
                          corpora: Sequence[MemoryCorpus] | MemoryCorpus, options: RecallOptions | None = None
                          ) -> str:
        """The text a recall of `query` by `identity` embeds (the bench embeds it ahead of
        its timed loop, one text a call as the service does)."""
        q = self._request(query, identity, corpora, "catalog", None, False, None, options,
                          self._filters((), None, None, None, options))
        self._scope(q)
        subject = subject_text(q.text)
        return vector_text(subject, q.view, label_ngrams(subject), q.opts)

    def ranking(self, query: str, identity: Identity, corpora: Sequence[MemoryCorpus] | MemoryCorpus,
                options: RecallOptions | None = None) -> RecallQuery:
        """The recall's stages up to the ranking (no Q*, nothing rendered): `ranked` holds
        every live candidate best first, `search` the signals. For fitting and measuring
        the ranking offline (bench)."""
        opts = options or self.options
        q = self._request(query, identity, corpora, "catalog", None, False, None, opts,
                          self._filters((), None, None, None, opts))
        for name, stage in self.stages:
            q.note(stage(q))
            if name == "rank":
                return q
        return q

    # -- request --------------------------------------------------------------------------

    def _filters(self, tags: Any, tier: Any, item_type: Any, scope: Any,
                 options: RecallOptions | None) -> RecallFilters:
        opts = options or self.options
        try:
            return RecallFilters.of(tags, tier=tier, type=item_type, scope=scope,
                                    tag_match=opts.tag_match)
        except (TypeError, msgspec.ValidationError) as exc:
            raise RecallError(f"bad filters: {exc}") from exc

    def _zone(self, tz: str) -> str:
        try:
            time_zone(tz)
        except (TypeError, ValueError) as exc:
            raise RecallError(f"tz: {exc}") from exc
        return tz

    def _request(self, query: str, identity: Identity, corpora: Any, mode: str | None,
                 k: int | None, trace: bool, now: str | None, options: RecallOptions | None,
                 filters: RecallFilters) -> RecallQuery:
        mode = mode or self.settings.recall_mode
        corpora = [corpora] if isinstance(corpora, MemoryCorpus) else list(corpora)
        check_request(query, identity, mode, k)
        for c in corpora:
            if not isinstance(c, MemoryCorpus):
                raise RecallError(f"corpora must be MemoryCorpus, got {type(c).__name__}")
        if k is None:
            k = self.settings.catalog_k if mode == "catalog" else self.settings.recall_k
        return RecallQuery(text=query, identity=identity, corpora=corpora, mode=mode, k=k,
                           filters=filters.check(), opts=options or self.options,
                           now_ts=parse_now(now), trace=[] if trace else None, zone=self.settings.timezone)

    # -- stages ---------------------------------------------------------------------------

    def _scope(self, q: RecallQuery) -> dict[str, Any] | None:
        q.view = VisibleCorpora(q.corpora, q.identity, q.filters)
        return q.view.trace() if q.trace is not None else None  # a trace entry only when asked

    def _embed_query(self, q: RecallQuery) -> None:
        q.subject = subject_text(q.text)  # without the time words of "what did I tell you last month?"
        q.terms = query_terms(q.subject)
        q.parts = [terms for part in question_parts(q.subject) if (terms := query_terms(part))]
        q.grams = label_ngrams(q.subject)
        if q.opts.dense and q.subject.strip() and any(c.vectors is not None for c in q.corpora):
            q.qvec = self._embed(vector_text(q.subject, q.view, q.grams, q.opts), q.corpora, q.degraded)
        asked_on, offset_s = asking_day(q.now_ts, q.zone)
        q.search = CandidateSearch(q.opts, self.settings, q.view, q.qvec, q.terms, q.grams, q.now_ts,
                                   dates=question_dates(q.text) if q.opts.w_date else [],
                                   said_in=said_dates(q.text, asked_on) if q.opts.w_date else [],
                                   said_offset_s=offset_s, zone=q.zone,
                                   said_only=asks_what_was_said(q.text),
                                   asks_time=bool(q.opts.w_when) and asks_when(q.text),
                                   about_self=asks_about_self(q.text), listing=asked_types(q.text),
                                   held_in=coming_dates(q.text, asked_on) if q.opts.w_date else [])

    def _candidates(self, q: RecallQuery) -> dict[str, Any] | None:
        if q.opts.episodic:  # before the channels: the "self" channel lists admissible turns only
            q.search.exclude_empty_turns(q.text, q.said)
        lists = q.search.channels()
        q.search.gather(lists)
        dropped = [d for d in q.search.drop_not_admitted() if d["reason"] != "retracted"]
        docs, dense = q.opts.prf_docs, True
        if docs <= 0 and q.opts.prf_several_docs > 0 and asks_for_several(q.text):
            docs, dense = q.opts.prf_several_docs, False
        if docs > 0 and q.search.feedback(docs, dense):
            again = q.search.channels(None if dense else ("lexical",))  # a vector unmoved finds the same
            q.search.gather(again)
            lists.update(again)
            dropped += [d for d in q.search.drop_not_admitted() if d["reason"] != "retracted"]
        if q.trace is None:
            return None
        return {"stage": "candidates", "count": len(q.search.cands), "not_candidates": dropped,
                "channels": {name: [[e[1], round(e[0], 4)] for e in entries[:10]]
                             for name, entries in lists.items()}}

    def _pull_ins(self, q: RecallQuery) -> None:
        # Always-inject items first: their conflict partners are pulled in too, so one that
        # lost its conflict is resolved away like any other candidate, never shown as current.
        if q.opts.always_inject and q.mode != "catalog":
            q.search.pull_always(self.settings.always_inject_importance, q.opts.max_always_inject)
        q.search.pull_corrections()  # before the partners: a correction's are pulled in too
        if q.opts.conflicts:
            q.search.pull_conflict_partners()
        if q.opts.summaries:
            q.search.pull_summaries()

    def _score(self, q: RecallQuery) -> None:
        q.search.score_all()

    def _conflicts(self, q: RecallQuery) -> dict[str, Any] | None:
        if not q.opts.conflicts:
            return None
        groups = select.resolve_conflicts(q.search, q.opts.conflict_mode, q.suppressed)
        return {"stage": "conflicts", "groups": groups} if groups else None

    def _summaries(self, q: RecallQuery) -> dict[str, Any] | None:
        if not q.opts.summaries:
            return None
        demoted = select.demote_covered_messages(q.search, q.opts.summary_demotion)
        return {"stage": "summaries", "demoted": demoted} if demoted else None

    def _repeats(self, q: RecallQuery) -> dict[str, Any] | None:
        if not q.opts.episodic:
            return None
        dropped = select.drop_repeated_turns(q.search, q.suppressed)
        return {"stage": "repeats", "dropped": dropped} if dropped else None

    def _rank(self, q: RecallQuery) -> None:
        if q.opts.w_session > 0.0:
            select.support_by_session(q.search, q.opts.w_session, q.opts.session_top)
        q.always, q.ranked = select.rank(q.search, q.opts.max_always_inject,
                                         q.opts.curated_floor if q.opts.episodic else 2.0)
        if q.opts.rerank_pool > 0:
            q.ranked = rerank_turns(q.search, q.ranked, q.subject, q.opts.rerank_pool,
                                    session_penalty=q.opts.rerank_session_penalty)
        if q.opts.spread_decay < 1.0:
            q.ranked = select.spread_sessions(q.ranked, q.opts.spread_decay, q.opts.spread_after)
        if q.own_words:  # "What did I tell you about ...?": the caller's words first
            q.ranked = own_words_first(q.ranked, q.search.terms)
        if q.opts.episodic:
            # A turn that states nothing is no hit (`deliver`): left out before the cut, so
            # the k places go to candidates that can be shown. It is ranked until here: a
            # question asked in a session counts to that session's matches (`rerank.turn_signals`).
            q.ranked = [c for c in q.ranked if not states_nothing(c.item)]
        if q.opts.cover_parts:
            q.ranked = cover_parts(q.search, q.ranked, q.parts, q.k)
        q.selected = q.ranked[: q.k]

    def _qstar(self, q: RecallQuery) -> dict[str, Any] | None:
        if not (q.opts.qstar and q.selected):
            return None
        q.selected, result = run_qstar(q.search, q.selected, q.k, q.subject, self, q.suppressed)
        return qstar_trace(result)

    def _render(self, q: RecallQuery) -> dict[str, Any] | None:
        always_ids = {c.id for c in q.always}
        ordered = q.always + [c for c in q.selected if c.id not in always_ids]
        # Defence in depth: re-check visibility on the way out.
        ordered = [c for c in ordered if c.item.scope.visible_to(q.identity)]
        q.hits, q.injection, q.catalog = deliver(ordered, q.mode, q.opts, self.settings, q.search.terms,
                                                 pool=q.search.cands.values(), held_against=q.view.held_against,
                                                 now=datetime.fromtimestamp(q.now_ts, time_zone(q.zone)),
                                                 replaced_by=partial(replaced_by, q.view))
        if q.trace is None:
            return None
        shown = {h.item.id for h in q.hits}
        return {"stage": "deliver", "mode": q.mode,
                "injected": [h.item.id for h in q.hits if h.delivery == "inject"],
                "catalogued": [h.item.id for h in q.hits if h.delivery == "catalog"],
                "not_returned": [c.id for c in ordered if c.id not in shown]}

    # -- helpers --------------------------------------------------------------------------

    def _result(self, q: RecallQuery) -> RecallResult:
        # An always-on memory counts as found when the query found it too (it is the answer).
        relevant = sum(not h.always or bool(q.search.cands[h.item.id].ranks) for h in q.hits)
        turns = sum(is_message(h.item) for h in q.hits)
        return RecallResult(
            query=q.text, mode=q.mode, hits=q.hits, injection=q.injection, catalog=q.catalog,
            used_ids=[h.item.id for h in q.hits], found=relevant > 0,
            message=found_message(q.text, len(q.hits) - turns, turns, relevant, self._withheld(q)),
            trace=q.trace, timings_ms={k_: round(v, 3) for k_, v in q.timings.items()},
            suppressed=q.suppressed, degraded=q.degraded,
        )

    def _withheld(self, q: RecallQuery) -> int:
        """Candidates that matched but were not given for confidence or budget: a turn that
        only asks or shares no word with the query (in inject mode) was not withheld, it
        answers nothing."""
        if q.mode != "inject":
            return len(q.ranked)
        return sum(not shows_nothing_asked(c.item, q.opts, q.search.terms, c.answers_as_listed) for c in q.ranked)

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


def vector_text(query: str, view: VisibleCorpora, grams: set[str], opts: RecallOptions) -> str:
    """What the query vector is made from: the question, without the names of the speakers
    it names (`RecallOptions.dense_without_speakers`)."""
    if not opts.dense_without_speakers:
        return query
    return without_names(query, view.speakers_named(grams))


__all__ = ["Hit", "RecallEngine", "RecallError", "RecallOptions", "RecallQuery", "RecallResult",
           "vector_text"]
