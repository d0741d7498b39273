"""The candidate set of one recall: what the caller may see, the retrieval channels, the
items pulled in around the candidates, and each candidate's score.

- `VisibleCorpora`: per corpus the rows the caller may see (scope first), with shadowing:
  corpora are given oldest first (snapshot, then delta) and an id present in a later corpus
  hides every earlier copy, whatever the later copy's state.
- `CandidateSearch`: dense (FAISS or exact), lexical (BM25 normalised to [0,1] by the
  query's ideal score) and label (query n-grams equal to a tag or entity) channels, each
  over-fetching `candidate_k`, fused by the normalised weighted sum or reciprocal rank
  fusion. A candidate is admitted only with real evidence: cosine >= `min_similarity`, a
  lexical match or a label match. Pull-ins: conflict partners (contradicting, superseding
  or same-title claims), summaries covering a candidate turn, always-inject items.
- Scoring: `score = fused * (1 + boosts) * weight`. Boosts (scope, recency, confidence,
  importance, validation; a raw turn said around a date the question names) are small
  multiplicative nudges so relevance dominates; a raw chat turn weighs `message_weight`
  (evidence of what was said ranks below a governed memory that says as much).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from pipelines.materialize import DISAGREES_WITH, held_against, held_unnamed, in_quarantine, message_item_id
from pipelines.records import SCOPE_RANK, Identity, MemoryItem, ProposedItem, Scope, time_zone

from .conflicts import CLAIM_TYPES, DATED_TYPES, ClaimTable, is_claim, restates, speaker, states_what_was_corrected
from .corpus import MAX_TITLE_PARTNERS, PARTNER_LINKS, MemoryCorpus
from .dates import DateRange, day_spans, days_of_year, said_within, states_time, weekdays_of
from .episodic import (
    answered_turn,
    for_another_chat,
    for_another_project,
    is_proposal_carrier,
    said_by_the_user,
    said_date,
    stated_of_self,
    stated_words,
    states_the_new_value,
)
from .lexical import normalise_label
from .query import RecallFilters


def of_the_caller(item: MemoryItem, user_id: str) -> bool:
    """A claim speaks of the user `user_id`: by their name ("Ana works night shifts", "Ana is
    allergic to cats" written by her partner: the user id as a word), or in the first person
    when they wrote it ("I work nights"; another's "I" is that other's)."""
    text = f"{item.title}. {item.content}"
    return re.search(rf"\b{re.escape(user_id)}\b", text, re.IGNORECASE) is not None or (
        speaker(item) == user_id and stated_of_self(text) > 0)


SCOPE_BOOST = {"session": 1.0, "project": 2 / 3, "user": 1 / 3, "org": 0.0}
VALIDATION_BOOST = {"verified": 1.0, "unverified": 0.0, "contested": -1.0, "retracted": -2.0}
CHANNELS = ("dense", "lexical", "labels")
_RANK_KEYS = {ch: "rank_" + ch for ch in (*CHANNELS, "self", "listing", "said_when", "held_then")}  # components' names
# The relevance of the caller's own memories for a question about the caller ("what do you
# know about me?"): that of a good match for the first, slightly less down the channel's
# order (importance, then confidence), so the order survives the scoring.
SELF_RELEVANCE = 0.5
SELF_DECAY = 0.02
# A caller with fewer curated memories than this is shown what they said of themselves too
# (first person, at least `SELF_MIN_WORDS` words of it), to make up this many.
SELF_FEW = 5
SELF_MIN_WORDS = 3


@dataclass(slots=True)  # ~120 a recall: slots make them smaller and their attributes faster
class Candidate:
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
    tier: int = 1  # 0: ranked before every tier-1 candidate whatever the scores
    # Listed by a channel each of whose entries answers the question whatever its words: said
    # when the question asks about, naming no subject ("what did we talk about yesterday?"),
    # or what the caller said of themselves, asked what is known about them.
    answers_as_listed: bool = False
    # The item's id, kept beside it: read ~1,300 times a recall, an attribute rather than a property.
    id: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.id = self.item.id

    def key(self) -> tuple:
        return (self.tier, -self.score, SCOPE_RANK[self.item.scope.kind], self.item.id)


def _held_for(held: MemoryItem, item: MemoryItem) -> bool:
    """Whether the write policy's contradiction check (`pipelines.policy.contradictions`,
    the one that held it) finds `held` contradicting `item`, as it checked a proposal
    against the stored claims of its scope kind (not those in quarantine)."""
    from pipelines.policy import contradictions  # a module-level import would cycle (policy reads conflicts)

    if held.id == item.id or held.scope.kind != item.scope.kind or in_quarantine(item):
        return False
    said = ProposedItem(type=held.type, title=held.title, content=held.content, scope=held.scope.kind)
    # as its author proposed it: their own first-person words contradict no one else's
    return any(True for _ in contradictions(said, [item], speaker(held) or ""))


class VisibleCorpora:
    """The corpora as one caller sees them: allowed masks (scope first), shadowing."""

    def __init__(self, corpora: Sequence[MemoryCorpus], who: Identity, filters: RecallFilters):
        self.who = who
        self.corpora = list(corpora)
        self.allowed: list[np.ndarray] = [None] * len(self.corpora)  # type: ignore[list-item]
        for ci in range(len(self.corpora) - 1, -1, -1):
            c = self.corpora[ci]
            self.allowed[ci] = c.allowed_mask(who, filters, exclude_rows=c.rows_shadowed_by(self.corpora[ci + 1:]))

    def locate(self, item_id: str) -> tuple[int, int] | None:
        """Where the caller may read this id (newest corpus holding it), else None."""
        for ci in range(len(self.corpora) - 1, -1, -1):
            row = self.corpora[ci].row_of.get(item_id)
            if row is not None:
                return (ci, row) if self.allowed[ci][row] else None
        return None

    def locate_current(self, item_id: str) -> tuple[int, int] | None:
        """Where the caller may read this id, or, consolidation having merged it, the
        claim it was merged into (`merged_from`)."""
        found = self.locate(item_id)
        if found is not None:
            return found
        for ci in range(len(self.corpora) - 1, -1, -1):
            for row in self.corpora[ci].merged_into_rows.get(item_id, ()):
                if self.allowed[ci][row]:
                    return ci, row
        return None

    def newest(self, item_id: str) -> MemoryItem | None:
        """The newest version of an id in any state (a delta's hides the snapshot's), seen
        or not."""
        for c in reversed(self.corpora):
            row = c.row_of.get(item_id)
            if row is not None:
                return c.items[row]
        return None

    def held_against(self, item: MemoryItem) -> list[MemoryItem]:
        """The claims the caller may see held in quarantine (or carrying an edit held) for
        contradicting `item`, or a claim consolidation merged into it (`merged_from`), by
        their `HELD_AGAINST` (`materialize.held_against_ids`) whether
        or not the query found them: an index lookup per delivered claim. Approved or
        rejected since (a newer version), they wait no more."""
        out: dict[str, MemoryItem] = {}
        contested = [item.id, *(str(i) for i in item.metadata.get("merged_from") or ())]
        for c in self.corpora:
            for row in (row for item_id in contested for row in c.held_against_rows.get(item_id, ())):
                held = self.newest(c.items[row].id)
                if (held is not None and held.id not in out and held.scope.visible_to(self.who)
                        and any(held_against(held, i) for i in contested)):
                    out[held.id] = held
            for row in c.held_unnamed_rows:  # held before the ids were kept: asked as the policy did
                held = self.newest(c.items[row].id)
                if (held is not None and held.id not in out and held_unnamed(held)
                        and held.scope.visible_to(self.who) and _held_for(held, item)):
                    out[held.id] = held
        return list(out.values())

    def speakers_named(self, grams: Collection[str]) -> set[str]:
        """The `grams` that are the title (the speaker) of a raw turn the caller may see."""
        out = set()
        for gram in grams:
            for ci, c in enumerate(self.corpora):
                rows = c.title_rows.get(gram)
                if rows is not None and c.of_type(rows[self.allowed[ci][rows]], "message").any():
                    out.add(gram)
                    break
        return out

    def vector(self, ci: int, row: int) -> np.ndarray | None:
        c = self.corpora[ci]
        return c.vectors[row] if c.vectors is not None else None

    def vectors_at(self, cis: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """The vectors at the locations (cis[k], rows[k]), one gather per corpus: (len(rows)
        x dim float32, zero rows where a corpus has no vectors; which of them have one)."""
        has = np.zeros(len(rows), bool)
        out: np.ndarray | None = None
        for ci in ([int(cis[0])] if len(cis) and (cis == cis[0]).all() else np.unique(cis).tolist()):
            vectors = self.corpora[ci].vectors
            if vectors is None:
                continue
            mine = np.flatnonzero(cis == ci)
            if out is None:
                out = np.zeros((len(rows), vectors.shape[1]), np.float32)
            out[mine] = vectors[rows[mine]]
            has[mine] = True
        return out, has

    def claims(self, locations: Sequence[tuple[int, int]]) -> ClaimTable:
        """The claims at these (corpus, row) locations, in this order: rows of one corpus'
        table, or a table of each corpus' claims when they come from several."""
        if len({ci for ci, _ in locations}) == 1:
            return self.corpora[locations[0][0]].claims.take([row for _, row in locations])
        return ClaimTable.of([self.corpora[ci].items[row] for ci, row in locations],
                             [self.corpora[ci].claim(row) for ci, row in locations], keep="claims")

    def trace(self) -> dict[str, Any]:
        return {"stage": "scope", "corpora": [
            {"source": c.source, "items": len(c), "allowed": int(a.sum())}
            for c, a in zip(self.corpora, self.allowed)]}


Ranked = list[tuple[float, str, int, int]]  # (score, id, corpus index, row), best first


class CandidateSearch:
    """Per-call state: the query's vector, terms and n-grams, lexical arrays per corpus."""

    def __init__(self, opts: Any, settings: Any, view: VisibleCorpora, qvec: np.ndarray | None,
                 terms: list[str], grams: set[str], now_ts: float, dates: Sequence[DateRange] = (),
                 said_in: Sequence[DateRange] = (), said_offset_s: int = 0, zone: str = "UTC",
                 said_only: bool = False,
                 asks_time: bool = False, about_self: bool = False, listing: tuple[str, ...] = (),
                 held_in: Sequence[DateRange] = ()):
        self.opts = opts
        self.settings = settings
        self.view = view
        self.qvec = qvec
        # `relevance`'s weights of the enabled channels (None: off) and their sum, read per
        # candidate: made once (the options, and whether there is a query vector, stay).
        enabled = [w if on else None for w, on in ((opts.w_dense, qvec is not None), (opts.w_lexical, opts.lexical),
                                                   (opts.w_labels, opts.labels))]
        weights = 0.0
        for w in enabled:
            weights += 0.0 if w is None else w
        self._weights = (*enabled, weights)
        self._scope_boosts = {kind: opts.w_scope * boost for kind, boost in SCOPE_BOOST.items()}
        self.terms = terms
        self.grams = grams
        self.now_ts = now_ts
        self.now = datetime.fromtimestamp(now_ts, tz=timezone.utc)
        self.dates = list(dates)  # calendar dates the question names (date-aware boost)
        # Days the question places what was said in, from the time of asking ("what did we
        # decide yesterday?"): the "said_when" channel and the same boost, any item type.
        # Read as the asker's days in `zone` (POSIX seconds, each edge with its own offset).
        self.said_in = day_spans(list(said_in), zone)
        self.zone = time_zone(zone)  # a turn's day, for the dates a question names, is the asker's
        self.said_offset_s = said_offset_s  # the asker's clock ahead of UTC now: orders turns by their day
        # Channels each of whose entries answers the question (a relevance floor, `_finish`):
        # the caller's own memories, a kind of memory, or, when it asks what was said at a
        # time (`said_only`), what was said then (of that kind: "what did we decide yesterday?").
        self.listed = ("said_when",) if said_only and self.said_in else ("self", "listing", "held_then")
        # Days to come the question names ("what did I plan for next week?"): the claims
        # whose validity window holds then (the "held_then" channel), as POSIX seconds.
        self.held_in = day_spans(list(held_in), zone)
        self.held_weekdays = weekdays_of(list(held_in))  # "tomorrow": the habits of that weekday too
        self.held_yearly = days_of_year(list(held_in))  # "next month": the birthdays then too
        self.asks_time = asks_time  # the question asks when: turns that state a time are lifted
        self.about_self = about_self  # the caller asks what is known about them: the "self" channel
        self.listing = listing  # item types the question asks for as a kind: the "listing" channel
        self.lex: list[np.ndarray | None] = [
            c.lexical_scores(terms) if opts.lexical and terms else None for c in view.corpora
        ]
        self.channel_len: dict[str, int] = {}
        # Query n-grams that are a tag or entity somewhere in each corpus (usually none).
        self.label_grams: list[set[str]] = [
            {g for g in grams if g in c.tag_rows or g in c.entity_rows} for c in view.corpora
        ]
        self.cands: dict[str, Candidate] = {}
        self.question_key: str | None = None  # set: raw turns worth nothing are excluded
        self.said_keys: set[str] = set()  # normalised messages of the conversation asked in
        self.retracted: dict[str, MemoryItem] = {}  # retracted claims found: turns saying them are out
        self.retracted_turns: set[str] = set()  # the turns of the exchanges they were proposed in
        # The visible claims that replaced others (read when first needed): turns said before
        # them stating what they replaced are out, and those corrections are pulled in.
        self._corrections: list[tuple[int, int, MemoryItem]] | None = None
        self._moved: set[str] | None = None  # to-dos a visible correction moved (`moved`)
        self.correcting: dict[str, tuple[int, int]] = {}  # corrections that put a turn out

    def feedback(self, docs: int, dense: bool = True) -> list[str]:
        """Pseudo-relevance feedback from the `docs` most relevant candidates so far: their
        best words join the lexical signal and (`dense`) their mean vector the query vector.
        Returns the expansion words (empty: nothing changed)."""
        opts = self.opts
        self.score_all()
        top = sorted(self.cands.values(), key=lambda c: (-c.relevance, c.id))[:docs]
        if not top:
            return []
        asked = set(self.terms)
        weights: dict[str, float] = {}
        for cand in top:
            c = self.view.corpora[cand.ci]
            words = sorted(c.item_terms(cand.row) - asked)
            for word, idf in zip(words, c.lexical.idf(words) if words else []):
                weights[word] = weights.get(word, 0.0) + cand.relevance * idf
        extra = [w for w, _ in sorted(weights.items(), key=lambda x: (-x[1], x[0]))[: opts.prf_terms]]
        if extra and opts.lexical and opts.prf_lexical > 0:
            beta = np.float32(opts.prf_lexical)
            for ci, c in enumerate(self.view.corpora):
                more = c.lexical_scores(extra)
                if more is not None:
                    base = self.lex[ci]
                    self.lex[ci] = more * beta if base is None else base * (1 - beta) + more * beta
        if dense and self.qvec is not None and opts.prf_dense > 0:
            vecs = [v for cand in top for v in [self.view.vector(cand.ci, cand.row)] if v is not None]
            if vecs:
                moved = self.qvec + np.float32(opts.prf_dense) * np.mean(vecs, axis=0)
                norm = float(np.linalg.norm(moved))
                if norm > 0:
                    self.qvec = (moved / norm).astype(np.float32)
        return extra

    def exclude_empty_turns(self, question: str, said: Sequence[str] = ()) -> None:
        """From now on, raw turns that are small talk, a copy of `question` or of a message
        of the conversation it is asked in (`said`: in the model's context already) are not
        candidates (nor Q* expansions)."""
        self.question_key = normalise_label(question)
        self.said_keys = {key for key in map(normalise_label, said) if key}

    def not_admitted(self, ci: int, row: int) -> str | None:
        """Why a row may not be a candidate, or None (cached per row by the corpus)."""
        c = self.view.corpora[ci]
        item = c.items[row]
        if item.validation == "retracted":
            return "retracted"  # known false: never recalled
        if item.expires_at is not None and item.expired(self.now):
            return "expired"  # no longer holds: consolidation archives it
        if item.type in DATED_TYPES and self.moved(item):
            return "superseded"  # "Dentist moved to Thursday": Tuesday's is no plan now
        if self.question_key is None or item.type != "message":
            return None
        if c.small_talk(row):
            return "small talk"
        if is_proposal_carrier(item):
            return "a tool call's carrier turn"
        if self.question_key and c.content_in(row, (self.question_key,)):
            return "an earlier copy of the question"
        if self.said_keys and c.content_in(row, self.said_keys):
            return "in the conversation already"
        if for_another_chat(item, self.view.who.session_id):
            return "said for another chat only"
        if for_another_project(item, self.view.who.project_id):
            return "said in another project"
        if item.id in self.retracted_turns or any(restates(item, claim) for claim in self.retracted.values()):
            return "says what was retracted"  # the user took it back: not evidence of it either
        if self.corrected(item):
            return "says what a correction replaced"  # the correction is the evidence now
        return None

    def moved(self, item: MemoryItem) -> bool:
        """Whether a visible correction supersedes `item`, a to-do (`conflicts.DATED_TYPES`):
        the conflict rule resolves claims only, and consolidation marks it superseded only
        at its next run."""
        if self._moved is None:
            self._moved = {link.to for ci, c in enumerate(self.view.corpora)
                           for row in c.correction_rows()[self.view.allowed[ci][c.correction_rows()]].tolist()
                           for link in c.items[row].links if link.rel == "supersedes"}
        return item.id in self._moved

    def corrected(self, turn: MemoryItem) -> bool:
        """Whether a visible correction (a claim that replaced another) was made after the raw
        `turn`, which states what it replaced (`conflicts.states_what_was_corrected`); the
        correction is remembered, to be pulled in (`pull_corrections`). A turn that states the
        correction's value (`episodic.states_the_new_value`), or that the correction came from
        (its exchange: "Actually the meeting moved to Thursday"), is its evidence: never put out."""
        if self._corrections is None:
            self._corrections = [
                (ci, row, c.items[row]) for ci, c in enumerate(self.view.corpora)
                for row in c.correction_rows()[self.view.allowed[ci][c.correction_rows()]].tolist()
                if is_claim(c.items[row]) and not (c.items[row].expires_at is not None
                                                   and c.items[row].expired(self.now))]
        for ci, row, correction in self._corrections:
            if (states_what_was_corrected(turn, correction) and not states_the_new_value(turn, correction)
                    and turn.id not in self._exchange_of(correction)):
                self.correcting[correction.id] = (ci, row)
                return True
        return False

    def _exchange_of(self, claim: MemoryItem) -> set[str]:
        """Ids of the raw turns of the exchange a chat proposal came from: the assistant turn
        that proposed it and the user turn it came from (`answered_turn`), however
        differently they worded it."""
        if claim.provenance.source_kind != "chat":
            return set()
        loc = self.view.locate(message_item_id(claim.provenance.source_id))
        if loc is None:
            return set()
        said = self.view.corpora[loc[0]].items[loc[1]]
        audience = said.scope.audience_key()
        answered = answered_turn(said, claim, (c.items[row] for ci, c in enumerate(self.view.corpora)
                                        for row in c.audience_rows(audience, self.view.allowed[ci])))
        return {said.id} if answered is None else {said.id, answered.id}

    def admissible(self, ci: int, row: int) -> bool:
        return self.not_admitted(ci, row) is None

    # candidate generation ----------------------------------------------------------------

    def add(self, ci: int, row: int, via: str) -> Candidate:
        c = self.view.corpora[ci]
        item = c.items[row]
        cand = self.cands.get(item.id)
        if cand is None:
            cand = Candidate(ci=ci, row=row, item=item, source=c.source)
            self.cands[item.id] = cand
        if via not in cand.via:
            cand.via.append(via)
        return cand

    def _dense_channel(self) -> Ranked:
        entries: Ranked = []
        for ci, c in enumerate(self.view.corpora):
            rows, sims = c.dense_search(self.qvec, self.view.allowed[ci], self.opts.candidate_k, self.view.who)
            keep = sims >= self.opts.min_similarity  # compared as float32, as element by element
            ids = c.ids
            entries += [(s, ids[r], ci, r) for r, s in zip(rows[keep].tolist(), sims[keep].tolist())]
        return entries

    def _lexical_channel(self) -> Ranked:
        ck = self.opts.candidate_k
        entries: Ranked = []
        for ci, c in enumerate(self.view.corpora):
            lex = self.lex[ci]
            if lex is None:
                continue
            # The few rows that match, then those the caller may see (not a mask over every row).
            nz = np.flatnonzero(lex > 0)
            nz = nz[self.view.allowed[ci][nz]]
            scores = lex[nz]
            if len(nz) > ck:
                kth = scores[np.argpartition(-scores, ck - 1)[:ck]].min()
                keep = scores >= kth  # keep boundary ties for the id order
                nz, scores = nz[keep], scores[keep]
            ids = c.ids
            entries += [(s, ids[r], ci, r) for r, s in zip(nz.tolist(), scores.tolist())]
        return entries

    def _label_channel(self) -> Ranked:
        entries: Ranked = []
        for ci, c in enumerate(self.view.corpora):
            counts = c.label_matches(self.grams, self.view.allowed[ci], self.opts.label_max_rows)
            entries += [(float(n), c.ids[r], ci, r) for r, n in counts.items()]
        return entries

    def _self_channel(self) -> Ranked:
        """The caller's own curated memories (their user scope, and the project's claims about
        them: `of_the_caller`; no raw turns), most important, then most confident first:
        what "what do you know about me?" asks for.
        When they are fewer than `SELF_FEW`, what the caller said of themselves fills up to
        it, after them (`_said_of_self`)."""
        who = self.view.who
        own = Scope.for_identity("user", who).audience_key()
        shared = Scope.for_identity("project", who).audience_key() if who.project_id else None
        entries: Ranked = []
        turns: list[tuple[int, int]] = []
        for ci, c in enumerate(self.view.corpora):
            for row in c.audience_rows(own, self.view.allowed[ci]):
                item = c.items[row]
                if item.type != "message":
                    entries.append((item.importance + item.confidence, item.id, ci, row))
                elif said_by_the_user(item):
                    turns.append((ci, row))
            for row in c.audience_rows(shared, self.view.allowed[ci]) if shared else ():
                item = c.items[row]  # what the project holds of the caller ("Ana works nights")
                if item.type != "message" and of_the_caller(item, who.user_id):
                    entries.append((item.importance + item.confidence, item.id, ci, row))
        if len(entries) < SELF_FEW:
            entries += self._said_of_self(turns, SELF_FEW - len(entries))
        return entries

    def _said_of_self(self, turns: Sequence[tuple[int, int]], few: int) -> Ranked:
        """Of the caller's own turns, the `few` admissible ones that state the most of the
        caller (`stated_of_self`: no question, no small talk, nothing forgotten), the latest
        first, each ranked below every curated memory (scores below 0)."""
        told = [(n, ci, row) for ci, row in turns
                if (n := stated_of_self(self.view.corpora[ci].items[row].content)) >= SELF_MIN_WORDS
                and not self.view.corpora[ci].small_talk(row) and self.admissible(ci, row)]
        told = sorted(told, key=lambda t: (-t[0], self.view.corpora[t[1]].ids[t[2]]))[:few]
        told.sort(key=lambda t: -np.nan_to_num(self.view.corpora[t[1]].updated_ts[t[2]], nan=-np.inf))  # undated last
        return [(-1.0 - k, self.view.corpora[ci].ids[row], ci, row) for k, (_, ci, row) in enumerate(told)]

    def _listing_channel(self) -> Ranked:
        """The visible curated memories of the types the question asks for ("what did we
        decide?": decisions), most important, then most confident first."""
        entries: Ranked = []
        for ci, c in enumerate(self.view.corpora):
            rows = np.flatnonzero(self.view.allowed[ci] & c.type_mask(self.listing))
            entries += [(c.items[row].importance + c.items[row].confidence, c.ids[row], ci, row)
                        for row in rows.tolist()]
        return entries

    def _said_in_mask(self, seconds: np.ndarray) -> np.ndarray:
        inside = np.zeros(len(seconds), dtype=bool)
        for start, end in self.said_in:
            inside |= (seconds >= start) & (seconds < end)  # NaN (unknown) is neither
        return inside

    def _said_then(self, second: float) -> bool:
        """The time (POSIX seconds) falls on the days the question places what was said in."""
        return any(start <= second < end for start, end in self.said_in)

    def _said_when_channel(self) -> Ranked:
        """The visible items said on the days the question places them ("yesterday", "last
        week"), the latest first."""
        entries: Ranked = []
        for ci, c in enumerate(self.view.corpora):
            days = c.said_days(self.said_offset_s)
            rows = np.flatnonzero(self.view.allowed[ci] & self._said_in_mask(c.said_seconds()))
            entries += [(float(days[row]), c.ids[row], ci, row) for row in rows.tolist()]
        return entries

    def _held_then_channel(self) -> Ranked:
        """The visible curated memories whose validity window meets the days to come the
        question names (a trip next week, the dentist tomorrow), most important first. An
        open window counts by the edge it has: "from December 1" in the week holding
        December 1, not in every week after it. A day or two named ("tomorrow", "this
        weekend") also lists the weekly habits of those weekdays ("gym on Mondays"), and days
        up to two months the birthdays and anniversaries that fall then, every year."""
        entries: Ranked = []
        for ci, c in enumerate(self.view.corpora):
            start, end = c.window_seconds()
            bounded = np.isfinite(start) & np.isfinite(end)
            meets = np.zeros(c.n, dtype=bool)
            for first, after in self.held_in:  # NaN (no window) compares false everywhere
                meets |= (bounded & (start < after) & (end >= first)) | ((start >= first) & (start < after)) | (
                    (end >= first) & (end < after))
            if self.held_weekdays:
                meets |= (c.weekly_days() & self.held_weekdays) != 0
            for row, days in c.yearly_days().items() if self.held_yearly else ():
                meets[row] |= not days.isdisjoint(self.held_yearly)
            rows = np.flatnonzero(self.view.allowed[ci] & meets)
            entries += [(c.items[row].importance + c.items[row].confidence, c.ids[row], ci, row)
                        for row in rows.tolist() if c.items[row].type != "message"]
        return entries

    def channels(self, only: Collection[str] | None = None) -> dict[str, Ranked]:
        """Each channel's best `candidate_k` entries (`only`: just these channels)."""
        opts = self.opts
        searched = (("self", self.about_self, self._self_channel),
                    ("listing", bool(self.listing), self._listing_channel),
                    ("said_when", bool(self.said_in), self._said_when_channel),
                    ("held_then", bool(self.held_in), self._held_then_channel),
                    ("dense", self.qvec is not None, self._dense_channel),
                    ("lexical", opts.lexical and bool(self.terms), self._lexical_channel),
                    ("labels", opts.labels and bool(self.grams), self._label_channel))
        return {name: sorted(channel(), key=lambda x: (-x[0], x[1]))[: opts.candidate_k]
                for name, wanted, channel in searched if wanted and (only is None or name in only)}

    def gather(self, lists: dict[str, Ranked]) -> None:
        for name, entries in lists.items():
            self.channel_len[name] = len(entries)
            for rank, (_, _, ci, row) in enumerate(entries, start=1):
                self.add(ci, row, name).ranks[name] = rank

    def drop_not_admitted(self) -> list[dict[str, str]]:
        """Remove candidates that may not be candidates; returns them with the reason. The
        retracted claims among them are kept aside first (`retracted`): the raw turns that
        said them go too."""
        for cand in list(self.cands.values()):
            if (cand.item.validation == "retracted" and cand.item.type in CLAIM_TYPES
                    and cand.id not in self.retracted):
                self.retracted[cand.id] = cand.item
                self.retracted_turns |= self._exchange_of(cand.item)
        dropped = []
        for cand in list(self.cands.values()):
            why = self.not_admitted(cand.ci, cand.row)
            if why:
                del self.cands[cand.id]
                dropped.append({"id": cand.id, "reason": why})
        return dropped

    # pull-ins ----------------------------------------------------------------------------

    def _partners_of(self, cand: Candidate) -> list[tuple[int, int]]:
        view, item_id = self.view, cand.item.id
        contested = [item_id, *(str(i) for i in cand.item.metadata.get("merged_from") or ())]
        own = view.corpora[cand.ci]
        if not own.may_have_partners(cand.row):
            # Nothing in its own corpus: only another corpus (the delta) could hold a partner.
            title = own.title_key(cand.row)
            for ci, c in enumerate(view.corpora):  # a loop, not any(): ~90 claims a recall ask
                if ci != cand.ci and (item_id in c.links_in or (title and title in c.title_rows)
                                      or any(i in c.disagreed_rows for i in contested)):
                    break
            else:
                return []
        partners = [loc for link in cand.item.links if link.rel in PARTNER_LINKS
                    for loc in [view.locate(link.to)] if loc]
        # the claims it disagreed with when written (or what consolidation merged them
        # into), and those that disagreed with it (or with a claim merged into it)
        partners.extend(loc for other in cand.item.metadata.get(DISAGREES_WITH) or ()
                        for loc in [view.locate_current(str(other))] if loc)
        title = view.corpora[cand.ci].title_key(cand.row)
        for ci, c in enumerate(view.corpora):
            for contested_id in contested:
                disagreed = c.disagreed_rows.get(contested_id)
                if disagreed:
                    partners.extend((ci, row) for row in disagreed if view.allowed[ci][row])
            linked = c.links_in.get(item_id)
            if linked:
                allowed = view.allowed[ci]
                partners.extend((ci, row) for rel, row in linked if rel in PARTNER_LINKS and allowed[row])
            rows = c.title_rows.get(title) if title else None
            if rows is not None and len(rows) <= MAX_TITLE_PARTNERS:
                if len(rows) == 1:  # most claims hold their title alone: no partner there
                    row = int(rows[0])
                    if (ci != cand.ci or row != cand.row) and view.allowed[ci][row]:
                        partners.append((ci, row))
                    continue
                partners.extend((ci, r) for r in rows[view.allowed[ci][rows]].tolist())
        return partners

    def pull_conflict_partners(self) -> None:
        """Bring in claims that contradict, supersede or share the title of a candidate, so
        a conflict is seen (and resolved or flagged) rather than silently half-shown."""
        for cand in [c for c in self.cands.values() if is_claim(c.item)]:
            for ci, row in self._partners_of(cand):
                item = self.view.corpora[ci].items[row]
                if item.id != cand.id and is_claim(item) and self.admissible(ci, row):
                    self.add(ci, row, "conflict-partner")

    def pull_corrections(self) -> None:
        """Bring in the corrections that put a candidate turn out: the turn said what they
        replaced, so they answer what it was found for."""
        for ci, row in self.correcting.values():
            if self.admissible(ci, row):
                self.add(ci, row, "correction-of-a-turn")

    def pull_summaries(self) -> None:
        view = self.view
        for cand in list(self.cands.values()):
            if cand.item.type != "message" or not cand.item.provenance.turn_refs:
                continue
            for ci, c in enumerate(view.corpora):
                for row in c.summaries_covering(cand.item.provenance.turn_refs, view.allowed[ci]):
                    self.add(ci, row, "summary-of")

    def pull_always(self, threshold: int, cap: int) -> None:
        view = self.view
        for ci, c in enumerate(view.corpora):
            # Only the most important few can be injected: do not score thousands. Most
            # important first, then by id.
            rows = c.rows_by_importance(threshold)
            rows = rows[view.allowed[ci][rows]]
            for row in rows[: cap * 4].tolist():
                if self.admissible(ci, int(row)):
                    self.add(ci, int(row), "always").always = True

    # scoring -----------------------------------------------------------------------------

    def relevance(self, dense: float, lexical: float, labels: int) -> float:
        """Absolute relevance in [0, 1]: the weighted mean of the enabled channels."""
        w_dense, w_lexical, w_labels, weights = self._weights
        if not weights:
            return 0.0
        total = 0.0
        if w_dense is not None:
            total += w_dense * (dense if dense > 0.0 else 0.0)
        if w_lexical is not None:
            total += w_lexical * lexical
        if w_labels is not None:
            total += w_labels * (labels / (labels + 1))
        return total / weights

    def signals(self, ci: int, rows: Sequence[int]) -> list[tuple[float, float, int]]:
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
            labels = c.label_counts(idx, grams).tolist()
        else:
            labels = [0] * len(idx)
        return list(zip(dense, lexical, labels))

    def score_all(self, cands: Sequence[Candidate] | None = None) -> None:
        by_corpus: dict[int, list[Candidate]] = {}
        for c in self.cands.values() if cands is None else cands:
            by_corpus.setdefault(c.ci, []).append(c)
        finish = self._finish
        for ci, group in by_corpus.items():
            rows = [c.row for c in group]
            # Each row's update time read in one go (the recency boost), not per candidate.
            updated = self.view.corpora[ci].updated_ts[rows].tolist()
            for cand, (dense, lexical, labels), then in zip(group, self.signals(ci, rows), updated):
                finish(cand, dense, lexical, labels, then)

    def _fused(self, cand: Candidate) -> float:
        opts = self.opts
        if opts.fusion != "rrf":
            return cand.relevance
        active = [ch for ch in CHANNELS if ch in self.channel_len]
        best = len(active) / (opts.rrf_k + 1) or 1.0
        fused = sum(1.0 / (opts.rrf_k + cand.ranks[ch]) for ch in active if ch in cand.ranks)
        if not cand.ranks:
            # Pulled in (partner, summary, Q*): rank it just after each list's end.
            fused = sum(1.0 / (opts.rrf_k + self.channel_len[ch] + 1) for ch in active)
            fused *= cand.relevance
        return fused / best

    def _boosts(self, cand: Candidate, then: float) -> dict[str, float]:
        """The multiplicative boosts of a candidate (`then`: its update time). Clamps are
        spelled out (the same values as max/min, without their calls: ~100 candidates a recall)."""
        opts, item = self.opts, cand.item
        boosts: dict[str, float] = {}
        if opts.scope_priority:
            boosts["scope"] = self._scope_boosts[item.scope.kind]
        if opts.recency:
            if math.isnan(then):
                boosts["recency"] = 0.0
            else:
                age = (self.now_ts - then) / 86400.0
                boosts["recency"] = opts.w_recency * math.exp(
                    -self.settings.recency_lambda * (age if age > 0.0 else 0.0))
        confidence = item.confidence if item.confidence < 1.0 else 1.0
        boosts["confidence"] = opts.w_confidence * (confidence if confidence > 0.0 else 0.0)
        importance = item.importance if item.importance < 10 else 10
        boosts["importance"] = opts.w_importance * ((importance if importance > 1 else 1) - 1) / 9
        boosts["validation"] = opts.w_validation * VALIDATION_BOOST.get(item.validation, 0.0)
        if self.said_in and opts.w_date and self._said_then(
                float(self.view.corpora[cand.ci].said_seconds()[cand.row])):
            boosts["date"] = opts.w_date
        if item.type == "message":
            if opts.w_speaker and self.speaker_named(cand):
                boosts["speaker"] = opts.w_speaker
            if self.dates and opts.w_date and self.said_on_named_date(item):
                boosts["date"] = opts.w_date
            if self.asks_time and opts.w_when and states_time(item.content):
                boosts["when"] = opts.w_when
            if opts.w_stated:
                n = stated_words(item.content)
                boosts["stated"] = opts.w_stated * n / (n + opts.stated_half)
        return boosts

    def said_on_named_date(self, item: MemoryItem) -> bool:
        """The raw turn was said around a date the question names (see `dates.py`), on the
        asker's calendar (as the block headers date it)."""
        said = said_date(item, self.zone)
        return said is not None and said_within(said, self.dates, self.opts.date_before_days,
                                                self.opts.date_after_days)

    def speaker_named(self, cand: Candidate) -> bool:
        """The raw turn's speaker (its title) is named in the question."""
        return self.view.corpora[cand.ci].title_key(cand.row) in self.grams

    def _finish(self, cand: Candidate, dense: float, lexical: float, labels: int, then: float) -> None:
        opts = self.opts
        cand.dense, cand.lexical, cand.labels = dense, lexical, labels
        relevance = cand.relevance = self.relevance(dense, lexical, labels)
        ranks = cand.ranks
        listed = [ranks[ch] for ch in self.listed if ch in ranks] if ranks else ()  # pulled in: no ranks
        cand.answers_as_listed = bool(ranks) and (("said_when" in ranks and "said_when" in self.listed) or (
            "self" in ranks and "self" in self.listed and cand.item.type == "message"))
        if listed:
            # A question about the caller, a kind of memory or a time: each one listed answers it.
            own = min(listed)
            relevance = cand.relevance = max(relevance, SELF_RELEVANCE / (1.0 + SELF_DECAY * (own - 1)))
        fused = cand.fused = self._fused(cand) if opts.fusion == "rrf" else relevance
        comps: dict[str, float] = {"dense": dense, "lexical": lexical, "labels": float(labels),
                                   "relevance": relevance, "fused": fused}
        for ch, rank in ranks.items():
            comps[_RANK_KEYS.get(ch) or "rank_" + ch] = float(rank)
        boosts = self._boosts(cand, then)
        comps.update(boosts)
        if cand.always:
            comps["always"] = 1.0
        multiplier = comps["multiplier"] = 1.0 + sum(boosts.values())
        weight = opts.message_weight if cand.item.type == "message" else 1.0
        if weight != 1.0:
            comps["message_weight"] = weight
        cand.score = comps["final"] = fused * multiplier * weight
        cand.components = comps

    def evidence_terms(self, cand: Candidate) -> frozenset[str]:
        return self.view.corpora[cand.ci].item_terms(cand.row)


__all__ = ["CHANNELS", "Candidate", "CandidateSearch", "SCOPE_BOOST", "VALIDATION_BOOST",
           "VisibleCorpora"]
