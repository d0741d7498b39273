"""MemoryCorpus: an immutable, searchable set of memory items.

The service holds two kinds: the published snapshot (row i = FAISS id i, vectors from the
snapshot, an IndexIDMap2 over IndexFlatIP or HNSW, plus `exact_rows` the index does not
hold: a segmented snapshot's delta index, scored exactly and merged) and the small delta of
fresh writes (no index: searched exactly). Both expose the same operations to the recall engine:

- `allowed_mask(identity, ...)`: the rows the caller may see (scope first), active only,
  optionally narrowed by tier/type/tags/scope kind. Every other search takes this mask, so
  nothing invisible is ever scored, let alone returned.
- `dense_search`: exact matmul over the allowed rows when they are few (or there is no
  index), else FAISS with an ID selector restricted to the allowed rows.
- `lexical`: a BM25 index (bm25s) over title + content + tags + entities, on word stems
  unless `stemming=False`, built lazily (call `warm()` at load time to pay the cost up front).
- `claims`: the conflict rule's reading of every claim (`conflicts.ClaimTable`), also
  built lazily (and by `warm()`).
- tag / entity / normalised-title / turn-ref inverted indexes, the links graph (both
  directions) and the palace room map, for candidate generation and Q* expansion.

If an id occurs more than once the last occurrence wins (the earlier rows are treated as
inactive): a delta appends updates, the newest version must be the one searched.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import date
from functools import lru_cache
from typing import Any, NamedTuple

import faiss
import numpy as np

from pipelines.materialize import DISAGREES_WITH, held_against_ids, held_unnamed
from pipelines.message_context import lexical_text
from pipelines.records import Identity, MemoryItem, PalaceLocation, parse_time, timestamp
from pipelines.snapshot import HNSW_EF_SEARCH

from .conflicts import Claim, ClaimTable, is_claim, read_claim
from .dates import weekly_days, yearly_days
from .episodic import is_small_talk, said_time
from .lexical import LexicalIndex, normalise_label, tokenize
from .query import RecallFilters

# What makes a claim's conflict partner besides a shared title (`refines`: a correction of a
# detail), and how many rows may share a title for it to name partners.
PARTNER_LINKS = ("contradicts", "supersedes", "refines")
MAX_TITLE_PARTNERS = 50

_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()  # day 0 of POSIX time as a proleptic ordinal

# Below this many allowed rows the exact matmul is cheaper and exact; above, FAISS.
EXACT_MAX_ROWS = 8192
# A caller who sees more than `exact_max_rows` but at most this many rows of an indexed
# corpus scans the 8-bit codes of their audiences (`_AudienceCodes`) instead of searching
# the filtered index. At 100k rows (HNSW, 2 cores) the scan costs ~0.13 ms per 1k rows seen
# and the filtered HNSW search ~3,200 / rows seen ms (its beam widens as the filter
# narrows): they cross near 16k.
AUDIENCE_SCAN_MAX_ROWS = 16384
AUDIENCE_CODES_MIN_ROWS = 1024  # smaller audiences are scored on their float vectors
NO_FILTERS = RecallFilters()


class CorpusError(ValueError):
    """Inconsistent corpus input (vector shape, index size, bad item)."""


def _room_key(loc: PalaceLocation | Mapping[str, Any] | str | None) -> str | None:
    """`domain/room` for a palace location given as a record, a dict or a path string."""
    if loc is None:
        return None
    if isinstance(loc, PalaceLocation):
        return f"{loc.domain}/{loc.room}"
    if isinstance(loc, Mapping):
        domain, room = loc.get("domain"), loc.get("room")
        if domain and room:
            return f"{domain}/{room}"
        path = loc.get("path")
        return _room_key(path) if isinstance(path, str) else None
    if isinstance(loc, str):
        parts = [p for p in loc.split("/") if p]
        return "/".join(parts[:2]) if len(parts) >= 2 else None
    return None


class _RowTerms:
    """Each row's distinct index tokens (`MemoryCorpus.item_terms`), kept from the tokens the
    lexical index is built from: a row's terms without tokenising its text again in a recall
    (~9 rows a recall, each read once per snapshot). Compact: one id per distinct token of a
    row, each token's string once."""

    def __init__(self, docs: Sequence[Sequence[str]]) -> None:
        vocab: dict[str, int] = {}
        ids: list[int] = []
        indptr = [0]
        for doc in docs:
            ids.extend(vocab.setdefault(t, len(vocab)) for t in set(doc))
            indptr.append(len(ids))
        self._words = list(vocab)
        self._ids = np.asarray(ids, np.uint16 if len(vocab) <= 1 << 16 else np.int32)
        self._indptr = np.asarray(indptr, np.int64)

    def __call__(self, row: int) -> frozenset[str]:
        words = self._words
        return frozenset([words[k] for k in self._ids[self._indptr[row]:self._indptr[row + 1]].tolist()])


class _TurnTexts(NamedTuple):
    """What a recall asks of a raw turn's text, read for every turn of a snapshot once
    (`MemoryCorpus.warm`): whether it is small talk, and the hash of its normalised content
    (`content_key`: a copy of the question or of the conversation). A recall asks them of
    its candidate turns, and distinct questions over 100k items each meet turns not read
    before (a regex pass over the text each). Rows that are no turn are not read (`read`)."""

    read: np.ndarray  # bool per row
    small_talk: np.ndarray  # bool per row
    content_hash: np.ndarray  # int64 per row: hash(content_key(row))

    @classmethod
    def read_turns(cls, corpus: MemoryCorpus) -> _TurnTexts:
        n = corpus.n
        read, small_talk, content_hash = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, np.int64)
        key_of = normalise_label.__wrapped__  # not through its cache: each content is read once
        for row in np.flatnonzero(corpus.of_type(np.arange(n), "message")).tolist():
            content = corpus.items[row].content
            read[row], small_talk[row], content_hash[row] = True, is_small_talk(content), hash(key_of(content))
        return cls(read, small_talk, content_hash)


class MemoryCorpus:
    def __init__(
        self,
        items: Sequence[MemoryItem],
        vectors: np.ndarray | None = None,
        index: faiss.Index | None = None,
        *,
        source: str = "snapshot",
        locations: Mapping[str, PalaceLocation] | Sequence[PalaceLocation] | None = None,
        exact_max_rows: int = EXACT_MAX_ROWS,
        hnsw_ef_search: int = HNSW_EF_SEARCH,
        search_threads: int = 1,
        stemming: bool = True,
        exact_rows: np.ndarray | None = None,
        audience_scan_max_rows: int = AUDIENCE_SCAN_MAX_ROWS,
    ):
        self.items: tuple[MemoryItem, ...] = tuple(items)
        for i, it in enumerate(self.items):
            if not isinstance(it, MemoryItem):
                raise CorpusError(f"items[{i}] is {type(it).__name__}, expected MemoryItem")
        n = len(self.items)
        self.n = n
        self.source = source
        self.exact_max_rows = int(exact_max_rows)
        self.hnsw_ef_search = int(hnsw_ef_search)
        self.search_threads = max(1, int(search_threads))
        self.audience_scan_max_rows = int(audience_scan_max_rows)
        self._audience_codes: _AudienceCodes | None = None
        self._audience_codes_lock = threading.Lock()
        self.index = index
        # Rows the index does not hold (`pipelines.snapshot.LoadedSnapshot.exact_rows`).
        self.exact_rows = np.unique(np.asarray(exact_rows if exact_rows is not None else [], dtype=np.int64))
        if len(self.exact_rows) and (self.exact_rows[0] < 0 or self.exact_rows[-1] >= n):
            raise CorpusError(f"exact rows outside 0..{n - 1}")
        self.vectors = self._check_vectors(vectors, index, n, len(self.exact_rows))
        self.dim = None if self.vectors is None else int(self.vectors.shape[1])

        # id -> row; a later duplicate wins and the earlier row is deactivated.
        self.row_of: dict[str, int] = {}
        active = np.zeros(n, dtype=bool)
        for row, it in enumerate(self.items):
            prev = self.row_of.get(it.id)
            if prev is not None:
                active[prev] = False
            self.row_of[it.id] = row
            active[row] = it.active
        self.active = active
        self.ids: tuple[str, ...] = tuple(it.id for it in self.items)
        self.importance = np.fromiter((it.importance for it in self.items), np.int16, n)
        # Small integer codes so tier/type/scope-kind filters are one vector comparison.
        self._codes: dict[str, dict[str, int]] = {"tier": {}, "type": {}, "kind": {}}
        self._tier_of = self._encode("tier", (it.tier for it in self.items), n)
        self._type_of = self._encode("type", (it.type for it in self.items), n)
        self._kind_of = self._encode("kind", (it.scope.kind for it in self.items), n)

        # Normalised titles, read once here for the title index (None: not read yet).
        self._title_keys: list[str | None] = [None] * n
        self._title_words: list[frozenset[str] | None] = [None] * n
        self._index_labels_and_owners()
        self._index_rooms(locations)

        self.stemming = bool(stemming)
        self._lexical: LexicalIndex | None = None
        self._lexical_lock = threading.Lock()
        self._claims: ClaimTable | None = None
        self._id_rank: np.ndarray | None = None
        self._visible_cached = lru_cache(maxsize=128)(self._visible_uncached)
        self._shadowed: tuple[tuple[MemoryCorpus, ...], np.ndarray] | None = None
        self._terms_cache: dict[int, frozenset[str]] = {}
        self._row_terms: _RowTerms | None = None  # kept when the lexical index is built
        self._by_importance: dict[int, np.ndarray] = {}
        self._content_cache: dict[int, str] = {}
        self._small_talk_cache: dict[int, bool] = {}
        self._turn_texts: _TurnTexts | None = None  # raw turns' small talk and content hashes (`warm`)
        self._partnered_cache: dict[int, bool] = {}
        self._corrections: np.ndarray | None = None
        self._said_seconds: np.ndarray | None = None  # POSIX seconds each row was said, NaN unknown
        self._said_days: dict[int, np.ndarray] = {}  # per UTC offset of the asker
        self._windows: tuple[np.ndarray, np.ndarray] | None = None  # valid_from / valid_to, POSIX seconds
        self._weekly: np.ndarray | None = None  # days of the week a claim recurs on (bit mask)
        self._yearly: dict[int, frozenset[int]] | None = None  # rows of birthdays / anniversaries: their days
        self.updated_ts = np.fromiter((timestamp(it.updated_at) for it in self.items),
                                      np.float64, n)

    # -- construction helpers -------------------------------------------------------------

    def _index_labels_and_owners(self) -> None:
        """Audience key (Scope.audience_key, the one visibility rule) -> rows, tag / entity / title /
        summarised-turn -> rows, and incoming links; active rows only."""
        by_audience: dict[tuple[str, ...], list[int]] = defaultdict(list)
        tags: dict[str, list[int]] = defaultdict(list)
        entities: dict[str, list[int]] = defaultdict(list)
        titles: dict[str, list[int]] = defaultdict(list)
        summaries_by_turn: dict[str, list[int]] = defaultdict(list)
        links_in: dict[str, list[tuple[str, int]]] = defaultdict(list)
        held_against: dict[str, list[int]] = defaultdict(list)
        unnamed: list[int] = []
        disagreed: dict[str, list[int]] = defaultdict(list)
        merged_into: dict[str, list[int]] = defaultdict(list)
        for row in np.flatnonzero(self.active).tolist():
            it = self.items[row]
            by_audience[it.scope.audience_key()].append(row)
            for t in {normalise_label(t) for t in it.tags} - {""}:
                tags[t].append(row)
            for e in {normalise_label(e) for e in it.entities} - {""}:
                entities[e].append(row)
            title = self._title_keys[row] = normalise_label(it.title)
            if title:
                titles[title].append(row)
            if it.type == "summary":
                for ref in set(it.provenance.turn_refs):
                    summaries_by_turn[ref].append(row)
            for link in it.links:
                links_in[link.to].append((link.rel, row))
            for contested in held_against_ids(it):  # a claim (or an edit of one) held for contradicting it
                held_against[contested].append(row)
            if held_unnamed(it):  # held before the ids were kept: checked on read
                unnamed.append(row)
            for other in it.metadata.get(DISAGREES_WITH) or ():  # a claim that disagreed with it when written
                disagreed[str(other)].append(row)
            for member in it.metadata.get("merged_from") or ():  # consolidation merged it into this row
                merged_into[str(member)].append(row)
        # Arrays, not lists: a caller's mask is set from them on each new identity.
        self._by_audience = {k: np.asarray(v, dtype=np.int64) for k, v in by_audience.items()}
        self.tag_rows = {k: np.asarray(v, dtype=np.int64) for k, v in tags.items()}
        self.entity_rows = {k: np.asarray(v, dtype=np.int64) for k, v in entities.items()}
        self.title_rows = {k: np.asarray(v, dtype=np.int64) for k, v in titles.items()}
        self.summary_rows_by_turn = dict(summaries_by_turn)
        self.links_in = dict(links_in)
        self.held_against_rows = dict(held_against)  # contested id -> rows held against it
        self.disagreed_rows = dict(disagreed)  # id -> rows that disagreed with it when written
        self.merged_into_rows = dict(merged_into)  # merged id -> the rows consolidation merged it into
        self.held_unnamed_rows = unnamed  # held for contradicting claims they do not name (`held_unnamed`)

    def _index_rooms(self, locations: Mapping[str, PalaceLocation] | Sequence[PalaceLocation] | None) -> None:
        """Palace rooms: explicit locations win over item.metadata["palace"]."""
        loc_map: dict[str, Any] = {}
        if locations is not None:
            seq = locations.values() if isinstance(locations, Mapping) else locations
            for loc in seq:
                if not isinstance(loc, PalaceLocation):
                    raise CorpusError(f"locations must hold PalaceLocation, got {type(loc).__name__}")
                loc_map[loc.item_id] = loc
        self.room_of: dict[int, str] = {}
        rooms: dict[str, list[int]] = defaultdict(list)
        for row in np.flatnonzero(self.active).tolist():
            it = self.items[row]
            key = _room_key(loc_map.get(it.id, it.metadata.get("palace")))
            if key:
                self.room_of[row] = key
                rooms[key].append(row)
        self.room_rows = {k: np.asarray(v, dtype=np.int64) for k, v in rooms.items()}

    @staticmethod
    def _check_vectors(vectors: np.ndarray | None, index: faiss.Index | None, n: int, n_exact: int = 0):
        # An HNSW snapshot may hold dead slots too (labels >= n, never selected).
        if index is not None and index.ntotal + n_exact < n:
            raise CorpusError(f"index holds {index.ntotal} vectors (+{n_exact} exact rows) for {n} items")
        if vectors is None:
            if n_exact:
                raise CorpusError(f"{n_exact} rows outside the index need their vectors")
            if index is None or n == 0:
                return None
            # Only an index was given: rebuild the matrix once for exact scoring.
            try:
                vectors = index.reconstruct_batch(np.arange(n, dtype=np.int64))
            except RuntimeError as exc:
                raise CorpusError(f"cannot reconstruct vectors from the index: {exc}") from exc
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != n:
            raise CorpusError(f"vectors shape {vectors.shape} does not match {n} items")
        if index is not None and index.d != vectors.shape[1]:
            raise CorpusError(f"index dim {index.d} != vectors dim {vectors.shape[1]}")
        if n and not np.isfinite(vectors).all():
            raise CorpusError("vectors contain NaN or inf")
        return vectors

    def _encode(self, field: str, values: Iterable[str], n: int) -> np.ndarray:
        table = self._codes[field]
        return np.fromiter((table.setdefault(v, len(table)) for v in values), np.int16, n)

    @classmethod
    def empty(cls, source: str = "delta") -> "MemoryCorpus":
        return cls([], None, None, source=source)

    # What `warm` computes: `warm_state` hands these over, `restore_warm` takes them back
    # (`online.warm_cache`: one worker computes them for a snapshot, the others read them).
    WARM_FIELDS = ("_lexical", "_row_terms", "_claims", "_id_rank", "_audience_codes", "_partnered_cache",
                   "_turn_texts")

    def warm(self) -> "MemoryCorpus":
        """Build the lazy BM25 index and claim table now (seconds for 100k items) instead of
        on the first query."""
        for part in self.warm_parts().values():
            part()
        return self

    def warm_parts(self) -> dict[str, Callable[[], object]]:
        """`warm`'s parts by name, in order (`loci bench startup` times each)."""

        def partners() -> None:
            # Which rows can have a conflict partner, read for every row now: a recall asks it of
            # its ~90 claims, and distinct questions would each meet rows not read before.
            for row in range(self.n):
                self.may_have_partners(row)

        def turn_texts() -> None:
            self._turn_texts = _TurnTexts.read_turns(self)

        return {"lexical": lambda: self.lexical, "claims": lambda: self.claims.ready_to_take(),
                "id_rank": lambda: self.id_rank, "audience_codes": lambda: self.audience_codes,
                "partners": partners, "turn_texts": turn_texts}

    def warm_state(self) -> dict[str, Any]:
        """What `warm` computed (call it first)."""
        return {name: getattr(self, name) for name in self.WARM_FIELDS}

    def restore_warm(self, state: Mapping[str, Any]) -> "MemoryCorpus":
        """This corpus warmed with `state`, the `warm_state` of a corpus of the same items."""
        for name in self.WARM_FIELDS:
            setattr(self, name, state[name])
        return self

    # -- basic access ---------------------------------------------------------------------

    def __len__(self) -> int:
        return self.n

    def item(self, row: int) -> MemoryItem:
        return self.items[row]

    @property
    def id_rank(self) -> np.ndarray:
        """Each row's position in id order (ties in row order), to order rows by id in one
        vector operation."""
        if self._id_rank is None:
            order = np.argsort(np.asarray(self.ids, dtype=str), kind="stable")
            rank = np.empty(self.n, np.int64)
            rank[order] = np.arange(self.n)
            self._id_rank = rank
        return self._id_rank

    def rows_by_importance(self, threshold: int) -> np.ndarray:
        """Rows whose importance is at least `threshold`, most important first, then by id
        (the always-inject candidates before the caller's mask; kept per threshold)."""
        found = self._by_importance.get(threshold)
        if found is None:
            rows = np.flatnonzero(self.importance >= threshold)
            found = rows[np.lexsort((self.id_rank[rows], -self.importance[rows].astype(np.int32)))]
            self._by_importance[threshold] = found
        return found

    @property
    def lexical(self) -> LexicalIndex:
        if self._lexical is None:
            with self._lexical_lock:
                if self._lexical is None:
                    docs = [self._doc_tokens(it) for it in self.items]
                    self._row_terms = _RowTerms(docs)
                    self._lexical = LexicalIndex(docs, stem=self.stemming)
        return self._lexical

    @property
    def claims(self) -> ClaimTable:
        """Every row's claim (the conflict rule's words, values and codes), read once: a
        recall takes its candidates' rows. A snapshot keeps the compact table and each claim
        packed (`ClaimTable.claim`); delta segments, rebuilt as they merge, read through
        the per-version claim cache."""
        if self._claims is None:
            with self._lexical_lock:
                if self._claims is None:
                    self._claims = ClaimTable.read(self.items, cached=self.source != "snapshot")
        return self._claims

    def claim(self, row: int) -> Claim | None:
        """A row's claim (None: not a claim): a snapshot's unpacked from its table, any other
        read through the per-version claim cache."""
        if self.source == "snapshot":
            return self.claims.claim(row)
        item = self.items[row]
        return read_claim(item) if is_claim(item) else None

    @staticmethod
    def _doc_tokens(it: MemoryItem) -> list[str]:
        return tokenize(lexical_text(it))

    def item_terms(self, row: int) -> frozenset[str]:
        """Distinct index tokens of a row (Q* coverage)."""
        terms = self._terms_cache.get(row)
        if terms is None:
            kept = self._row_terms
            terms = kept(row) if kept is not None else frozenset(self._doc_tokens(self.items[row]))
            self._terms_cache[row] = terms
        return terms

    def content_key(self, row: int) -> str:
        """Normalised content (a raw turn that repeats the question)."""
        key = self._content_cache.get(row)
        if key is None:
            key = self._content_cache[row] = normalise_label(self.items[row].content)
        return key

    def content_hash(self, row: int) -> int:
        """`hash(content_key(row))`: a raw turn's read at `warm`, without making its key."""
        texts = self._turn_texts
        if texts is not None and texts.read[row]:
            return int(texts.content_hash[row])
        return hash(self.content_key(row))

    def content_in(self, row: int, keys: Collection[str]) -> bool:
        """`content_key(row) in keys`, the key made only when its hash is among theirs."""
        texts = self._turn_texts
        if texts is not None and texts.read[row] and int(texts.content_hash[row]) not in {hash(k) for k in keys}:
            return False
        return self.content_key(row) in keys

    def small_talk(self, row: int) -> bool:
        """The row's content is only acknowledgement, greeting or filler words."""
        texts = self._turn_texts
        if texts is not None and texts.read[row]:
            return bool(texts.small_talk[row])
        found = self._small_talk_cache.get(row)
        if found is None:
            found = self._small_talk_cache[row] = is_small_talk(self.items[row].content)
        return found

    def correction_rows(self) -> np.ndarray:
        """The active rows that replaced another item (a `supersedes` link) or corrected a
        detail of one (`refines`): corrections, whose subject's older raw turns recall leaves
        out. Few; found once per corpus."""
        if self._corrections is None:
            self._corrections = np.asarray(sorted({row for pairs in self.links_in.values() for rel, row in pairs
                                                   if rel in ("supersedes", "refines")}), np.int64)
        return self._corrections

    def may_have_partners(self, row: int) -> bool:
        """Whether the row links to anything with one of `PARTNER_LINKS`, is linked to with one
        of them from this corpus, or shares its title with 2..`MAX_TITLE_PARTNERS` rows here:
        the rows that can have a conflict partner (most claims have none; kept per row, so
        the two bounds are constants, not arguments a caller could vary)."""
        found = self._partnered_cache.get(row)
        if found is None:
            item, title = self.items[row], self.title_key(row)
            rows = self.title_rows.get(title) if title else None
            found = self._partnered_cache[row] = (
                any(link.rel in PARTNER_LINKS for link in item.links)
                or any(rel in PARTNER_LINKS for rel, _ in self.links_in.get(item.id, ()))
                or bool(item.metadata.get(DISAGREES_WITH)) or item.id in self.disagreed_rows
                or any(str(m) in self.disagreed_rows for m in item.metadata.get("merged_from") or ())
                or (rows is not None and len(rows) <= MAX_TITLE_PARTNERS
                    and not (len(rows) == 1 and int(rows[0]) == row)))
        return found

    def title_key(self, row: int) -> str:
        """Normalised title (conflict detection: same key, different content)."""
        key = self._title_keys[row]
        if key is None:
            key = self._title_keys[row] = normalise_label(self.items[row].title)
        return key

    def title_words(self, row: int) -> frozenset[str]:
        """The normalised title's words: one title saying another's and more names its subject
        with more (`select.rank`'s subjects across scopes), read at every recall that shows it."""
        words = self._title_words[row]
        if words is None:
            words = self._title_words[row] = frozenset(self.title_key(row).split())
        return words

    def label_counts(self, rows: np.ndarray, grams: Iterable[str]) -> np.ndarray:
        """Per (active) row, how many of the normalised `grams` equal one of its tags or
        entities (label matching), from the tag and entity indexes."""
        counts = np.zeros(len(rows), np.int64)
        for gram in grams:
            hit = np.zeros(len(rows), bool)
            for table in (self.tag_rows, self.entity_rows):
                found = table.get(gram)  # ascending rows: a binary search per candidate
                if found is not None and len(found):
                    hit |= found[np.minimum(np.searchsorted(found, rows), len(found) - 1)] == rows
            counts += hit
        return counts

    # -- scope and filters ----------------------------------------------------------------

    def of_type(self, rows: np.ndarray, item_type: str) -> np.ndarray:
        """Which of `rows` hold an item of this type (one comparison over those rows only)."""
        return self._type_of[rows] == self._codes["type"].get(item_type, -1)

    def type_mask(self, types: Iterable[str]) -> np.ndarray:
        """Rows whose item type is one of `types`."""
        codes = [self._codes["type"][t] for t in types if t in self._codes["type"]]
        return np.isin(self._type_of, codes)

    def said_seconds(self) -> np.ndarray:
        """Per row, the POSIX time it was said (`episodic.said_time`), NaN when unknown; read
        when a question first places something in time."""
        if self._said_seconds is None:
            times = (said_time(it) for it in self.items)
            self._said_seconds = np.fromiter((t.timestamp() if t else np.nan for t in times), np.float64, self.n)
        return self._said_seconds

    def window_seconds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per row, its validity window (`valid_from`, `valid_to`) as POSIX seconds, -inf / +inf
        where open, both NaN where it has none; read when a question first names a time to come."""
        if self._windows is None:
            start = np.full(self.n, np.nan)
            end = np.full(self.n, np.nan)
            for row, it in enumerate(self.items):
                if it.valid_from or it.valid_to:
                    first, last = parse_time(it.valid_from), parse_time(it.valid_to)
                    start[row] = first.timestamp() if first else -np.inf
                    end[row] = last.timestamp() if last else np.inf
            self._windows = (start, end)
        return self._windows

    def weekly_days(self) -> np.ndarray:
        """Per row, the days of the week a curated claim with no window recurs on
        (`dates.weekly_days`, bit 0 = Monday), 0 for none and for turns; read when a question
        first names a day to come."""
        if self._weekly is None:
            self._weekly = np.fromiter(
                (weekly_days(f"{it.title}. {it.content}") if it.type != "message" and not (
                    it.valid_from or it.valid_to) else 0 for it in self.items), np.int64, self.n)
        return self._weekly

    def yearly_days(self) -> dict[int, frozenset[int]]:
        """The rows of curated claims with no window about a day that comes round every year
        (a birthday, an anniversary: `dates.yearly_days`) and their days (`month * 100 +
        day`); read when a question first names days to come."""
        if self._yearly is None:
            self._yearly = {row: days for row, it in enumerate(self.items) if it.type != "message"
                            and not (it.valid_from or it.valid_to)  # "a gift for her birthday by March 1": once
                            and (days := yearly_days(f"{it.title}. {it.content}"))}
        return self._yearly

    def said_days(self, utc_offset_s: int = 0) -> np.ndarray:
        """Per row, the day it was said (`episodic.said_time`) where the clock is
        `utc_offset_s` ahead of UTC, as a proleptic ordinal, 0 when unknown; read when a
        question first places something in time."""
        days = self._said_days.get(utc_offset_s)
        if days is None:
            local = np.floor((self.said_seconds() + utc_offset_s) / 86400.0)
            known = ~np.isnan(local)
            days = np.zeros(self.n, np.int64)
            days[known] = local[known].astype(np.int64) + _EPOCH_ORDINAL
            self._said_days[utc_offset_s] = days
        return days

    def _visible_uncached(self, who: Identity) -> np.ndarray:
        mask = np.zeros(self.n, dtype=bool)
        for key in who.audience_keys():
            rows = self._by_audience.get(key)
            if rows is not None:
                mask[rows] = True
        mask.flags.writeable = False
        return mask

    def visible_mask(self, who: Identity) -> np.ndarray:
        """Active rows whose scope is visible to `who` (read-only array, cached per identity)."""
        if not isinstance(who, Identity):
            raise CorpusError(f"identity must be an Identity, got {type(who).__name__}")
        return self._visible_cached(who)

    def audience_rows(self, key: tuple[str, ...], allowed: np.ndarray) -> list[int]:
        """Active rows of one audience (`Scope.audience_key`) that `allowed` lets through."""
        rows = self._by_audience.get(key)
        return [] if rows is None else rows[allowed[rows]].tolist()

    def allowed_mask(
        self,
        who: Identity,
        filters: RecallFilters = NO_FILTERS,
        exclude_ids: Iterable[str] = (),
        exclude_rows: np.ndarray | None = None,
    ) -> np.ndarray:
        """Visible rows narrowed by the filters and with `exclude_ids` / `exclude_rows`
        removed (shadowed by a newer corpus, see `rows_shadowed_by`)."""
        mask = self.visible_mask(who).copy()
        if exclude_rows is not None:
            mask[exclude_rows] = False
        for field, value, codes in (("tier", filters.tier, self._tier_of),
                                    ("type", filters.type, self._type_of),
                                    ("kind", filters.scope, self._kind_of)):
            if value is not None:
                mask &= codes == self._codes[field].get(value, -1)
        self._narrow_to_tags(mask, filters)
        for item_id in exclude_ids:
            row = self.row_of.get(item_id)
            if row is not None:
                mask[row] = False
        return mask

    def rows_shadowed_by(self, newer: Sequence[MemoryCorpus]) -> np.ndarray:
        """Rows whose id one of the `newer` corpora holds (in any state): no caller sees
        them here. Kept for the last `newer` asked: one delta serves many requests, and
        looking up every delta id per request grows with the delta."""
        key = tuple(newer)
        cached = self._shadowed
        if cached is not None and len(cached[0]) == len(key) and all(a is b for a, b in zip(cached[0], key)):
            return cached[1]
        rows = {row for c in key for item_id in c.ids for row in [self.row_of.get(item_id)] if row is not None}
        found = np.asarray(sorted(rows), np.int64)
        self._shadowed = (key, found)
        return found

    def _narrow_to_tags(self, mask: np.ndarray, filters: RecallFilters) -> None:
        norm_tags = [t for t in (normalise_label(t) for t in filters.tags) if t]
        if norm_tags:
            if filters.tag_match == "any":
                tag_mask = np.zeros(self.n, dtype=bool)
                for t in norm_tags:
                    tag_mask[self.tag_rows.get(t, np.empty(0, np.int64))] = True
                mask &= tag_mask
            else:
                for t in norm_tags:
                    tag_mask = np.zeros(self.n, dtype=bool)
                    tag_mask[self.tag_rows.get(t, np.empty(0, np.int64))] = True
                    mask &= tag_mask

    # -- dense search ---------------------------------------------------------------------

    def dense_scores(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Inner products of the query with the given rows (exact)."""
        if self.vectors is None or len(rows) == 0:
            return np.zeros(len(rows), dtype=np.float32)
        return self.vectors[rows] @ query

    def dense_search(
        self, query: np.ndarray, allowed: np.ndarray, k: int, who: Identity | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k allowed rows by inner product: (rows, scores), best first, ties by id.
        `who`: the caller whose visible rows `allowed` narrows (`allowed_mask`), if so:
        only their audiences are looked at for the rows `allowed` holds."""
        if self.vectors is None or k <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        query = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dim:
            raise CorpusError(f"query dim {query.shape[0]} != corpus dim {self.dim}")
        n_allowed = int(allowed.sum())
        if n_allowed == 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        if self.index is not None and n_allowed > self.exact_max_rows:
            codes = self.audience_codes if n_allowed <= self.audience_scan_max_rows else None
            found = (codes.search(self, query, allowed, k, who) if codes is not None
                     else self._faiss_search(query, allowed, n_allowed, k))
            if found is not None:
                return found
        rows = np.flatnonzero(allowed)
        if n_allowed == self.n:
            sims = self.vectors @ query
        else:
            sims = self.vectors[rows] @ query
        return self._top(rows, sims, k)

    @property
    def audience_codes(self) -> _AudienceCodes | None:
        """The audiences' 8-bit codes (built once, ~dim bytes a row), or None when the
        corpus has no index (every search is exact then)."""
        if self._audience_codes is None and self.index is not None and self.vectors is not None:
            with self._audience_codes_lock:
                if self._audience_codes is None:
                    self._audience_codes = _AudienceCodes(self)
        return self._audience_codes

    def _top(self, rows: np.ndarray, sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if len(rows) > k:
            # Keep every row tied with the k-th score so the id tie-break below is exact.
            kth = np.partition(sims, len(sims) - k)[len(sims) - k]
            keep = sims >= kth
            rows, sims = rows[keep], sims[keep]
        # Best first, ties by id; the keys read out of the arrays once, not per comparison.
        neg, ids = (-sims).tolist(), [self.ids[r] for r in rows.tolist()]
        order = sorted(range(len(ids)), key=lambda i: (neg[i], ids[i]))[:k]
        return rows[order].astype(np.int64), sims[order].astype(np.float32)

    def _faiss_search(
        self, query: np.ndarray, allowed: np.ndarray, n_allowed: int, k: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        exact = self.exact_rows[allowed[self.exact_rows]] if len(self.exact_rows) else self.exact_rows
        if len(exact):  # the index holds the other rows: it searches those, the exact ones join below
            allowed = allowed.copy()
            allowed[exact] = False
        n_indexed = n_allowed - len(exact)
        bits = np.packbits(allowed, bitorder="little")
        # The size is in bytes: labels past the bitmap (dead HNSW slots) are never members.
        selector = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits))
        inner = self.index
        if isinstance(inner, (faiss.IndexIDMap, faiss.IndexIDMap2)):
            inner = faiss.downcast_index(inner.index)
        if isinstance(inner, faiss.IndexHNSW):
            # A filter hides part of the graph: search wider the more it hides.
            selectivity = n_allowed / max(1, self.n)
            ef = int(min(1024, max(self.hnsw_ef_search, k) / max(selectivity, 1e-3)))
            params = faiss.SearchParametersHNSW(sel=selector, efSearch=max(ef, k))
        else:
            params = faiss.SearchParameters(sel=selector)
        fetch = min(n_indexed, k + 8)  # a little extra so ties at the boundary are seen
        ids = np.empty(0, np.int64)
        if fetch > 0:
            # One query: a single OpenMP thread is fastest (more threads spin and, on a busy
            # machine, cost 10+ ms). The setting is per calling thread; restore it after.
            previous = faiss.omp_get_max_threads()
            faiss.omp_set_num_threads(self.search_threads)
            try:
                _, found = self.index.search(query.reshape(1, -1), fetch, params=params)
            finally:
                faiss.omp_set_num_threads(previous)
            ids = found[0][found[0] >= 0].astype(np.int64)
        del bits  # the selector points into `bits`: keep it alive until here
        if len(ids) < min(k, n_indexed):
            return None  # the filtered graph search came up short: the exact path answers
        if not allowed[ids].all():
            raise CorpusError("index returned a row outside the selector")  # never leak
        ids = np.concatenate([ids, exact])
        # Re-score exactly so both paths return identical numbers for the same rows.
        sims = self.vectors[ids] @ query
        return self._top(ids, sims, k)

    # -- lexical / labels -----------------------------------------------------------------

    def lexical_scores(self, terms: Sequence[str]) -> np.ndarray | None:
        """Normalised BM25 ([0,1]) for every row, or None when no term matches anything."""
        if not self.n or not terms:
            return None
        return self.lexical.normalised(terms)

    def label_matches(
        self, grams: Iterable[str], allowed: np.ndarray, max_rows: int = 1000
    ) -> dict[int, int]:
        """row -> number of distinct query n-grams equal to one of its tags or entities.
        A label carried by more than `max_rows` items is not discriminative (like a
        stopword) and is ignored here."""
        counts: dict[int, int] = defaultdict(int)
        for g in sorted(set(grams)):
            hit_rows: set[int] = set()
            for table in (self.tag_rows, self.entity_rows):
                rows = table.get(g)
                if rows is not None and len(rows) <= max_rows:
                    hit_rows.update(int(r) for r in rows[allowed[rows]])
            for r in hit_rows:
                counts[r] += 1
        return dict(counts)

    def summaries_covering(self, turn_refs: Sequence[str], allowed: np.ndarray) -> list[int]:
        """Allowed summary rows whose provenance.turn_refs include every given turn ref."""
        if not turn_refs:
            return []
        common: set[int] | None = None
        for ref in set(turn_refs):
            rows = set(self.summary_rows_by_turn.get(ref, ()))
            common = rows if common is None else common & rows
            if not common:
                return []
        return sorted(r for r in (common or ()) if allowed[r])

    def neighbours(
        self, item: MemoryItem, allowed: np.ndarray, per_label: int = 64
    ) -> dict[int, str]:
        """Rows of this corpus related to `item` (which may live in another corpus), each
        with how: links (both directions), shared entity, shared tag, same palace room.
        Large label groups are capped (first rows by position) so one very common tag
        cannot flood the expansion."""
        out: dict[int, str] = {}
        own = self.row_of.get(item.id)

        def add(rows: Iterable[int], how: str) -> None:
            for r in rows:
                r = int(r)
                if r != own and allowed[r] and r not in out:
                    out[r] = how

        add((self.row_of[link.to] for link in item.links if link.to in self.row_of), "link")
        add((r for _, r in self.links_in.get(item.id, ())), "link")
        for e in sorted({normalise_label(e) for e in item.entities} - {""}):
            add(self.entity_rows.get(e, np.empty(0, np.int64))[:per_label], "entity")
        for t in sorted({normalise_label(t) for t in item.tags} - {""}):
            add(self.tag_rows.get(t, np.empty(0, np.int64))[:per_label], "tag")
        room = self.room_of.get(own) if own is not None else None
        if room is None:
            room = _room_key(item.metadata.get("palace"))
        if room and room in self.room_rows:
            add(self.room_rows[room][:per_label], "room")
        return out

    def rows_for_term(self, term: str, allowed: np.ndarray, limit: int) -> list[int]:
        """Allowed rows whose tags/entities equal the term, then the best BM25 rows for it."""
        label = normalise_label(term)
        found: list[int] = []
        for table in (self.entity_rows, self.tag_rows):
            rows = table.get(label)
            if rows is not None:
                found.extend(int(r) for r in rows[allowed[rows]][:limit])
        scores = self.lexical_scores(tokenize(term))
        if scores is not None:
            nz = np.flatnonzero(scores > 0)  # the rows that match, then those allowed
            nz = nz[allowed[nz]]
            matched = scores[nz]
            if len(nz) > limit:
                kth = np.partition(matched, len(nz) - limit)[len(nz) - limit]
                keep = matched >= kth  # the top `limit` plus boundary ties
                nz, matched = nz[keep], matched[keep]
            ids = self.ids
            ranked = sorted(zip((-matched).tolist(), nz.tolist()), key=lambda p: (p[0], ids[p[1]]))
            found.extend(row for _, row in ranked[:limit])
        return list(dict.fromkeys(found))


class _AudienceCodes:
    """Each large audience's vectors (`Scope.audience_key`: the rows one owner's scope
    holds) as contiguous 8-bit codes in a faiss index. A caller sees a few audiences; when
    those are a small share of a big store, scanning their codes (a quarter of the float
    bytes, read in order) costs less than a filtered HNSW search, which widens its beam
    the more the filter hides, and it is exhaustive: each audience's best `k + margin` by
    code are re-scored on the float vectors, so the result is the exact top k unless
    8-bit rounding moves a row across that margin.

    The codes are faiss' `QT_8bit_uniform` (one range for every component: its fastest
    correct 8-bit scan here; `QT_8bit_direct` returns zeros on this build for dimensions
    that are multiples of 32)."""

    def __init__(self, corpus: MemoryCorpus) -> None:
        self.audience_of = np.full(corpus.n, -1, np.int32)
        self.number: dict[tuple[str, ...], int] = {}
        self.rows: list[np.ndarray] = []
        self.codes: list[faiss.Index | None] = []
        for a, (key, rows) in enumerate(corpus._by_audience.items()):
            self.audience_of[rows] = a
            self.number[key] = a
            self.rows.append(rows)
            index = None
            if len(rows) >= AUDIENCE_CODES_MIN_ROWS:
                block = np.ascontiguousarray(corpus.vectors[rows], dtype=np.float32)
                index = faiss.IndexScalarQuantizer(corpus.dim, faiss.ScalarQuantizer.QT_8bit_uniform,
                                                   faiss.METRIC_INNER_PRODUCT)
                index.train(block)
                index.add(block)
            self.codes.append(index)

    def search(self, corpus: MemoryCorpus, query: np.ndarray, allowed: np.ndarray, k: int,
               who: Identity | None = None) -> tuple[np.ndarray, np.ndarray]:
        if who is not None:  # `allowed` lies within the caller's audiences: count those only
            touched = [self.number[key] for key in who.audience_keys() if key in self.number]
            counts = {a: int(np.count_nonzero(allowed[self.rows[a]])) for a in touched}
        else:  # a scattered mask's compress is slow (~0.3 ms at 100k): only without a caller
            per = np.bincount(self.audience_of[allowed], minlength=len(self.rows))
            counts = {a: int(per[a]) for a in np.flatnonzero(per).tolist()}
        fetch = k + max(8, k // 2)  # 8-bit rounding moves a row by ~1e-3 of its score
        found: list[np.ndarray] = []
        query_row = query.reshape(1, -1)
        previous = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(corpus.search_threads)
        try:
            for a, count in counts.items():
                rows, index = self.rows[a], self.codes[a]
                if not count:
                    continue
                if index is None:
                    found.append(rows[allowed[rows]])
                    continue
                params = selector = bits = None
                if count < len(rows):  # part of the audience is filtered out
                    bits = np.packbits(allowed[rows], bitorder="little")
                    selector = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits))
                    params = faiss.SearchParameters(sel=selector)
                _, local = index.search(query_row, min(fetch, count), params=params)
                del selector, bits  # the selector points into `bits`: both lived until here
                found.append(rows[local[0][local[0] >= 0]])
        finally:
            faiss.omp_set_num_threads(previous)
        ids = np.concatenate(found) if found else np.empty(0, np.int64)
        if not allowed[ids].all():
            raise CorpusError("audience scan returned a row outside the caller's mask")  # never leak
        return corpus._top(ids, corpus.vectors[ids] @ query, k)


__all__ = ["MemoryCorpus", "CorpusError", "EXACT_MAX_ROWS"]
