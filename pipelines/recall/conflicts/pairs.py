"""The pair rule over a whole claim table at once (`_pairs`), and `find_conflicts`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import numpy as np
from scipy import sparse

from pipelines.records import MemoryItem

from .claim import Claim, is_claim
from .reasons import REASONS
from .rule import (
    CHANGED_COSINE,
    RETIRED_SUBJECT_OVERLAP,
    RETIRING_SUBJECT_OVERLAP,
    SUBJECT_COSINE,
    SUBJECT_OVERLAP,
    _back_from,
    _changed_count_of,
    _counted_alike_across_scopes,
    _denies_said,
    _left,
    _moved_within,
    _placed_apart,
    _says_changed,
    _states_a_place,
)
from .table import (
    AWAY,
    CHANGES,
    ID,
    KIND,
    LINKED,
    NAMES_ONLY,
    NUMBERS_ONLY,
    OF_WRITER,
    PLACED,
    PRESENT,
    SAYS_CHANGED,
    SPEAKER,
    ClaimTable,
)

VALUE_KINDS = 3  # the bits of the kinds code that are kinds of value (`values._value_kinds`): not `PLACED`, `AWAY`
MAX_BUCKET = 200  # a word shared by more claims than this does not propose pairs
_NO_ROWS = np.zeros(0, np.int64)  # no pair asked (an index that selects nothing)


VectorOf = Callable[[MemoryItem], "np.ndarray | None"]
# The vectors of these rows of a claim table in one go: (rows x dim float32, which rows have
# one), the other rows any filler; (None, ...) when none has one. Recall gathers its claims'
# vectors with one index per corpus instead of a call and a copy per claim.
VectorsOf = Callable[[np.ndarray], "tuple[np.ndarray | None, np.ndarray]"]


class _Pairs(NamedTuple):
    """The pairs (i < j) of a claim table that share a title, a content word or a link,
    each with whether one replaces the other and the conflict (an index into REASONS, 0: none)."""

    i: np.ndarray
    j: np.ndarray
    replaces: np.ndarray
    reason: np.ndarray
    ids: np.ndarray  # per row, one code per distinct item id


def _linked(items: Sequence[MemoryItem], links: Callable[[MemoryItem], Iterable[str]]
            ) -> tuple[np.ndarray, np.ndarray]:
    """Row pairs (x, y), both ways round, where `links(items[x])` names items[y]."""
    rows_of: dict[str, list[int]] = {}
    for x, it in enumerate(items):
        rows_of.setdefault(it.id, []).append(x)
    found = {(a, b) for x, it in enumerate(items) for to in links(it) for y in rows_of.get(to, ()) if y != x
             for a, b in ((x, y), (y, x))}
    return np.array([p[0] for p in found], np.int64), np.array([p[1] for p in found], np.int64)


def _block(pairs: tuple[np.ndarray, np.ndarray], start: int, stop: int, n: int) -> np.ndarray:
    """The rows start..stop of the n x n matrix that is True at `pairs`."""
    out = np.zeros((stop - start, n), bool)
    x, y = pairs
    inside = (x >= start) & (x < stop)
    out[x[inside] - start, y[inside]] = True
    return out


def _block_at(pairs: tuple[np.ndarray, np.ndarray], start: int, stop: int, n: int, at: np.ndarray) -> np.ndarray:
    """`_block(pairs, start, stop, n)` at the flat positions `at` (none without pairs: most
    recalls' claims link nowhere)."""
    if not len(pairs[0]):
        return np.zeros(len(at), bool)
    return _block(pairs, start, stop, n).take(at)


PAIR_BLOCK = 512  # claims per block of rows: the pair matrices of one block stay small
# Dense products (`_shared_counts`) while rows x rows x shared columns stays below this (a
# recall's ~100 claims: a few million); past it scipy's sparse products cost less.
DENSE_MAX_WORK = 30_000_000
# `_qualified_apart_rows` on a table too big for one dense product (DENSE_MAX_WORK): pair by
# pair up to this many pairs, else as sparse products
FEW_PAIRS = 64
GRAM_MAX_ROWS = 1024  # `_close` multiplies all vectors at once up to this many claims
# `_Lacking.words` keeps a table's words as one dense matrix up to this many cells (a
# recall's ~90 claims x a few hundred words); past it each product makes its own columns
DENSE_WORDS_MAX_CELLS = 1_000_000


def _pairs(table: ClaimTable, vector_of: VectorOf | None, vectors_of: VectorsOf | None = None) -> _Pairs:
    """`conflict_reason`, and whether one replaces the other, for every pair that shares a
    title, a content word (held by at most MAX_BUCKET claims) or a link: the same rule,
    evaluated for all pairs at once (products of claims x words, x values and x keys, see
    `_shared_counts`), the embedding cosine computed only for pairs whose
    values disagree and whose words half match."""
    n, items = len(table), table.items
    # one code per distinct item id (`_components` makes a node per code: numbered from 0 here)
    ids = np.unique(table.codes[:, ID], return_inverse=True)[1].reshape(n).astype(np.int64)
    if n < 2:
        none = np.zeros(0, np.int64)
        return _Pairs(none, none, none.astype(bool), none.astype(np.int8), ids)
    words = table.rows("words")
    # What proposes a pair: a word held by at most MAX_BUCKET claims, the title, a link.
    big = np.bincount(words.indices, minlength=words.shape[1]) > MAX_BUCKET
    title, content, subject_code, title_values, adds, measured, _, negated, kinds = table.codes[:, :KIND].T
    n_values, n_words = np.diff(table.rows("values").indptr), np.diff(words.indptr)
    if table.codes[:, LINKED].any():
        replacing = _linked(items, _replaced)
        contradicting = _linked(items, lambda it: (lk.to for lk in it.links if lk.rel == "contradicts"))
    else:  # most recalls' claims link nowhere: no pair to look for
        replacing = contradicting = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    retired = table.rows("retired")
    retired = retired if retired.indptr[-1] else None
    parts = []
    lacking = _Lacking(table)  # shared by the products and questions below (each made once)
    for start, stop, counts in _shared_counts(table, big, retired, lacking.words):
        (shared_all, proposed_by_word, shared_key, shared_value, retires, retired_by, shared_unit,
         shared_measure) = counts
        proposed = (shared_all if proposed_by_word is None else proposed_by_word) > 0
        upper = np.arange(n)[None, :] > np.arange(start, stop)[:, None]
        # the pairs as flat positions in the block: a block's matrix m gives m[bi, j] as m.take(at)
        at = np.flatnonzero(upper & (proposed | (shared_key > 0)))
        bi, j = np.divmod(at, n)
        # one names as replaced or denied a value the other states
        retiring = ((retires.take(at) > 0) | (retired_by.take(at) > 0) if retires is not None
                    else np.zeros(len(bi), bool))
        # or both count in one unit, differently (`_unit_differs`): half the words are enough
        units_shared = shared_unit.take(at) if shared_unit is not None else np.zeros(len(at), np.int32)
        relaxed = retiring | (units_shared > shared_measure.take(at)) if shared_unit is not None else retiring
        parts.append((bi + start, j, shared_all.take(at), shared_value.take(at),
                      _block_at(replacing, start, stop, n, at), _block_at(contradicting, start, stop, n, at),
                      retiring, relaxed, units_shared))
    i, j, shared, shared_values, replaces, contradicts, retiring, relaxed, units_shared = (
        np.concatenate(p) for p in zip(*parts))

    # each pair's codes and counts, gathered once (the rule below reads most several times)
    title_i, title_j, n_values_i, n_values_j = title[i], title[j], n_values[i], n_values[j]
    other = ids[i] != ids[j]
    same_title = (title_i >= 0) & (title_i == title_j)
    titles_differ = title_i != title_j
    contents_differ = content[i] != content[j]
    adding = (adds[i] > 0) | (adds[j] > 0)  # one says it adds to the subject (`_ADDS`)
    title_values_i, title_values_j, measured_i, measured_j = title_values[i], title_values[j], measured[i], measured[j]
    two_title_values = (title_values_i >= 0) & (title_values_j >= 0) & (title_values_i != title_values_j)
    two_measured = (measured_i >= 0) & (measured_j >= 0) & (measured_i != measured_j)  # two things measured
    kinds_i, kinds_j = kinds[i], kinds[j]
    two_sorts = (((kinds_i & NAMES_ONLY) > 0) & ((kinds_j & NUMBERS_ONLY) > 0)
                 | ((kinds_j & NAMES_ONLY) > 0) & ((kinds_i & NUMBERS_ONLY) > 0))  # names beside numbers only
    disagree = retiring | (
        (n_values_i > 0) & (n_values_j > 0) & (shared_values < n_values_i) & (shared_values < n_values_j)
        & ~two_title_values
        & ~two_measured
        & ~two_sorts
        & ~adding)
    overlap = shared / np.maximum(1, np.minimum(n_words[i], n_words[j]))
    subject = ((subject_code[i] >= 0) & (subject_code[i] == subject_code[j])) | (
        (shared >= 2) & (overlap >= SUBJECT_OVERLAP)) | (
        relaxed & (shared >= 2) & (overlap >= RETIRED_SUBJECT_OVERLAP)) | (
        retiring & (shared >= 2) & (overlap >= RETIRING_SUBJECT_OVERLAP))
    open_ = other & ~contradicts & disagree
    n_subject = np.diff(table.rows("subjects").indptr)
    ask = np.flatnonzero(open_ & ~subject & titles_differ & ((n_subject[i] >= 2) | (n_subject[j] >= 2)))
    if len(ask):  # one's subject among the other's words, under two titles (`_subject_within`), values
        x, y = i[ask], j[ask]  # of one kind (`_comparable`)
        comparable = (kinds[x] & kinds[y] & VALUE_KINDS) > 0
        comparable |= units_shared[ask] > 0  # or they count in one unit (the products' counts)
        within = (((n_subject[x] >= 2) & ~lacking("subjects", x, y))
                  | ((n_subject[y] >= 2) & ~lacking("subjects", y, x)))
        two_attributes = lacking("titles", x, y) & lacking("titles", y, x)
        subject[ask] = comparable & within & ~two_attributes
    changes = table.codes[:, CHANGES] > 0
    ask = np.flatnonzero(open_ & ~subject & titles_differ & (changes[i] | changes[j])
                         ) if changes.any() else _NO_ROWS  # most recalls' claims say nothing changed
    if len(ask):  # one says the time of what the other names moved (`_moved_within`)
        claim = _claims_of(table)
        subject[ask] = np.fromiter((_moved_within(claim(x), claim(y)) or _moved_within(claim(y), claim(x))
                                    for x, y in zip(i[ask].tolist(), j[ask].tolist())), bool, len(ask))
    n_units = np.diff(table.rows("units").indptr)
    ask = np.flatnonzero(open_ & ~subject & (table.codes[i, KIND] != table.codes[j, KIND])
                         & (n_units[i] > 0) & (n_units[j] > 0))
    if len(ask):  # two scopes count one thing in one unit (`_counted_alike_across_scopes`)
        claim = _claims_of(table)
        subject[ask] = np.fromiter((_counted_alike_across_scopes(claim(x), claim(y))
                                    for x, y in zip(i[ask].tolist(), j[ask].tolist())), bool, len(ask))
    ask = np.flatnonzero(open_ & ~subject & (changes[i] | changes[j]) & (n_units[i] > 0) & (n_units[j] > 0)
                         ) if changes.any() else _NO_ROWS
    if len(ask):  # one says it changed to a count of what the other counts (`_changed_count_of`)
        claim = _claims_of(table)
        subject[ask] = np.fromiter((_changed_count_of(claim(x), claim(y)) or _changed_count_of(claim(y), claim(x))
                                    for x, y in zip(i[ask].tolist(), j[ask].tolist())), bool, len(ask))
    ask = np.flatnonzero(open_ & ~subject & (title[i] != title[j]) & (shared >= 2)
                         & ((kinds[i] & kinds[j] & 1) > 0) & ((kinds[i] & kinds[j] & PLACED) > 0))
    if len(ask):  # both put one thing in places that exclude each other (`_placed_apart`): names both
        claim = _claims_of(table)
        # thousands of pairs share two words in a large store, few claims name a place: ask
        # each claim once (`_states_a_place`), then only the pairs where both do
        placing = {r: _states_a_place(claim(r)) for r in np.unique(np.concatenate((i[ask], j[ask]))).tolist()}
        ask = ask[np.fromiter((placing[x] and placing[y] for x, y in zip(i[ask].tolist(), j[ask].tolist())),
                              bool, len(ask))]
        subject[ask] = np.fromiter((_placed_apart(claim(x), claim(y))
                                    for x, y in zip(i[ask].tolist(), j[ask].tolist())), bool, len(ask))
    ask = np.flatnonzero(open_ & ~subject & (shared >= 2) & (overlap >= 0.5))
    if len(ask):  # one says it changed (`_says_changed`), else very close embeddings
        changed = _says_changed_rows(table, i[ask], j[ask])
        subject[ask[changed]] = True
        ask = ask[~changed]
    subject[ask] = _close(items, i[ask], j[ask], vector_of, vectors_of)
    if table.rows("qualifiers").indptr[-1]:  # titles that name two things of one kind (`_qualified_apart`):
        ask = np.flatnonzero(open_ & subject & ~retiring)  # asked of the pairs found only
        open_[ask[_qualified_apart_rows(table, i[ask], j[ask], lacking)]] = False
    reason = np.zeros(len(i), np.int8)
    reason[open_ & subject] = 3
    # one negates what the other says (`_denies`): same values, most words shared
    denies = np.flatnonzero(other & ~contradicts & (negated[i] != negated[j]) & ~adding
                            & (shared_values == n_values_i) & (shared_values == n_values_j)
                            & (shared >= 2) & (overlap >= SUBJECT_OVERLAP)) if negated.any() else _NO_ROWS
    if len(denies) and table.rows("qualifiers").indptr[-1]:
        denies = denies[~_qualified_apart_rows(table, i[denies], j[denies], lacking)]
    if len(denies):  # what the negated one denies is what the other says (`_denies_said`), asked of the few
        denies = denies[_denies_said_rows(table, i[denies], j[denies])]
    reason[denies] = 5
    if table.rows("ended").indptr[-1]:  # one says something ended that the other names (`_ends`)
        reason[other & ~contradicts & _ended_rows(table, i, j)] = 4
    away = (kinds & AWAY) > 0
    if away.any():  # one says its one is away or back, the other where it is or was (`_back_from`, `_left`)
        somewhere = (kinds & (AWAY | PRESENT)) > 0
        ask = np.flatnonzero(other & ~contradicts & ((away[i] & somewhere[j]) | (away[j] & somewhere[i])))
        if len(ask):
            claim = _claims_of(table)
            left = np.fromiter((_back_from(a, b) or _back_from(b, a) or _left(a, b) or _left(b, a)
                                for a, b in ((claim(x), claim(y)) for x, y in zip(i[ask].tolist(), j[ask].tolist()))),
                               bool, len(ask))
            reason[ask[left]] = 4
    # close in meaning, one saying something changed (`_may_have_changed`, then the cosine): asked of the pairs
    # no other reason joined
    says_changed = table.codes[:, SAYS_CHANGED] > 0
    if says_changed.any() and vector_of is not None:  # most recalls' claims say nothing changed: nothing to ask
        ask = np.flatnonzero((reason == 0) & other & ~contradicts & ~adding & (says_changed[i] | says_changed[j])
                             & contents_differ
                             & ~two_title_values
                             & ~two_measured
                             & ~((n_values_i > 0) & (n_values_j > 0) & ~retiring
                                 & ((shared_values == n_values_i) | (shared_values == n_values_j))))
    else:
        ask = _NO_ROWS
    if len(ask):  # the cosine first: two things of one kind asked of the close only
        ask = ask[_close(items, i[ask], j[ask], vector_of, vectors_of, CHANGED_COSINE)]
        reason[ask[~_qualified_apart_rows(table, i[ask], j[ask], lacking)]] = 6
    # Under one title, what the contents say decides; contents that do not compare are only
    # flagged (`MAY_UPDATE`); a note that says it adds is neither.
    reason[same_title & (~contents_differ | adding)] = 0
    reason[other & ~contradicts & same_title & contents_differ & ~adding & (reason == 0)] = 2
    # two people each speaking of themselves (`own_words_apart`): two subjects, no conflict
    of_writer, speakers = table.codes[:, OF_WRITER] > 0, table.codes[:, SPEAKER]
    reason[of_writer[i] & of_writer[j] & (speakers[i] >= 0) & (speakers[j] >= 0) & (speakers[i] != speakers[j])] = 0
    reason[other & contradicts] = 1
    return _Pairs(i, j, replaces, reason, ids)


def _claims_of(table: ClaimTable) -> Callable[[int], Claim]:
    """A row's claim, unpacked once (for the few pairs a question is asked of by claim)."""
    claims: dict[int, Claim] = {}

    def claim(row: int) -> Claim:
        if row not in claims:
            claims[row] = table.claim(row)  # type: ignore[assignment]
        return claims[row]

    return claim


def _denies_said_rows(table: ClaimTable, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """`_denies_said` both ways for the row pairs (i, j), from the rows' claims."""
    claim = _claims_of(table)
    return np.fromiter((_denies_said(claim(x), claim(y)) and _denies_said(claim(y), claim(x))
                        for x, y in zip(i.tolist(), j.tolist())), bool, len(i))


def _says_changed_rows(table: ClaimTable, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """`_says_changed` for the row pairs (i, j), from the rows' claims: asked only of the
    pairs where a row says something changed (`CHANGES`; a few of the hundreds asked)."""
    may = table.codes[:, CHANGES] > 0
    out = np.zeros(len(i), bool)
    ask = np.flatnonzero(may[i] | may[j])
    claim = _claims_of(table)
    out[ask] = np.fromiter((_says_changed(claim(x), claim(y)) for x, y in zip(i[ask].tolist(), j[ask].tolist())),
                           bool, len(ask))
    return out


def _ended_rows(table: ClaimTable, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """`_ends` either way for the row pairs (i, j), asked only of pairs where a row has ended words."""
    e = table.ended
    n_ended = np.diff(e.indptr)
    n_ended_values = np.diff(table.ended_values.indptr)
    out = np.zeros(len(i), bool)

    def ends(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        ask = np.flatnonzero(n_ended[x] > 0)
        if not len(ask):
            return np.zeros(len(x), bool)
        xa, ya = x[ask], y[ask]
        named = np.asarray(e[xa].multiply(table.words[ya]).sum(axis=1)).ravel() == n_ended[xa]
        stated = np.asarray(table.ended_values[xa].multiply(table.values[ya]).sum(axis=1)).ravel() == n_ended_values[xa]
        both = np.asarray(e[xa].multiply(e[ya]).sum(axis=1)).ravel() > 0
        hit = np.zeros(len(x), bool)
        hit[ask] = named & stated & ~both
        return hit

    out |= ends(i, j)
    out |= ends(j, i)
    return out


def _qualified_apart_rows(table: ClaimTable, i: np.ndarray, j: np.ndarray,
                          lacking: _Lacking | None = None) -> np.ndarray:
    """`_qualified_apart` for the row pairs (i, j): one scope kind, and each row has a
    qualifier (or a name) the other row's words lack, or one row names someone the other
    lacks and the other speaks of the writer. `lacking`: the table's `_Lacking`, shared by
    the calls of one `_pairs` (each product made once)."""
    lacks = lacking or _Lacking(table)
    kind = table.codes[:, KIND]
    same = kind[i] == kind[j]
    i, j = i[same], j[same]
    out = np.zeros(len(same), bool)
    if not len(i):
        return out
    apart = lacks("qualifiers", i, j) & lacks("qualifiers", j, i)
    title = table.codes[:, 0]
    n_subject = np.diff(table.rows("subjects").indptr)
    ask = np.flatnonzero(~apart & (title[i] >= 0) & (title[i] == title[j]) & (n_subject[i] > 0) & (n_subject[j] > 0))
    if len(ask):  # under one title, two items of the list (`_two_items`)
        apart[ask] = lacks("subjects", i[ask], j[ask]) & lacks("subjects", j[ask], i[ask])
    first_person = table.codes[:, 6] > 0
    # asked of the pairs where one names someone, the other the writer
    if table.rows("persons").indptr[-1] and first_person.any():
        n_persons = np.diff(table.rows("persons").indptr)
        for x, y in ((i, j), (j, i)):
            ask = np.flatnonzero(~apart & (n_persons[x] > 0) & first_person[y])
            if len(ask):
                apart[ask] = lacks("persons", x[ask], y[ask])
    out[same] = apart
    return out


# The matrices over the words' columns that `_Lacking` asks of (`_qualified_apart_rows` and
# `_pairs`' subjects within another's words).
LACKED = ("qualifiers", "subjects", "titles", "persons")


class _Lacking:
    """`_lacks` of one table's qualifiers, subjects, titles or persons against its words, for the
    pairs of one `_pairs` call: a small table's dense product (rows x rows) is made once per
    matrix and read for every pair and both orders; the words as one dense matrix, once, read
    over the columns each product needs (a small table's: all of them, no copy)."""

    def __init__(self, table: ClaimTable) -> None:
        self.table = table
        self._matched: dict[str, np.ndarray | None] = {}
        self._words: np.ndarray | None = None
        self._words_t: np.ndarray | None = None

    def words(self, columns: np.ndarray) -> np.ndarray:
        """The table's words as dense float32 rows over the columns `columns` marks
        (`_dense_columns`); a small table's over all its columns (a column no row of the other
        side holds adds nothing to a product, and there are few)."""
        w = self.table.rows("words")
        if w.shape[0] * w.shape[1] > DENSE_WORDS_MAX_CELLS:
            return _dense_columns([w], columns)[0]
        if self._words is None:
            (self._words,) = _dense_columns([w], None)
        return self._words

    def _all_at_once(self) -> None:
        """On a small table (a recall's claims, within DENSE_MAX_WORK and DENSE_WORDS_MAX_CELLS
        over all the words' columns), every matrix of `LACKED`'s products in one: their rows
        stacked, one product with the words (one call's overhead instead of one per matrix)."""
        w = self.table.rows("words")
        n, width = w.shape
        if n * n * width > DENSE_MAX_WORK or n * width > DENSE_WORDS_MAX_CELLS:
            return
        qs = [self.table.rows(name) for name in LACKED]
        held = np.concatenate([np.diff(q.indptr) for q in qs])  # per stacked row: its entries
        # over only the columns the stacked rows hold (titles, subjects, qualifiers, persons: a
        # few of the words' columns); the others add nothing to a count
        columns = np.concatenate([q.indices for q in qs])
        mark = np.zeros(width, bool)
        mark[columns] = True
        position = np.cumsum(mark) - 1
        stacked = np.zeros((len(qs) * n, int(position[-1]) + 1 if width else 0), np.float32)
        stacked[np.repeat(np.arange(len(held)), held), position[columns]] = np.concatenate([q.data for q in qs])
        words_t = np.ascontiguousarray(self.words(np.ones(width, bool))[:, mark].T)
        lacks = held[:, None] > stacked @ words_t  # row x of q holds a column row y's words lack
        for k, name in enumerate(LACKED):
            self._matched[name] = lacks[k * n:(k + 1) * n]

    def __call__(self, name: str, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        q, w = self.table.rows(name), self.table.rows("words")
        if not self._matched and name in LACKED:
            self._all_at_once()
        if name not in self._matched:
            columns = np.zeros(w.shape[1], bool)
            columns[q.indices] = True  # a word no row of q holds matches nothing asked
            if q.shape[0] ** 2 * int(columns.sum()) <= DENSE_MAX_WORK:  # a recall's claims: one small product
                words = self.words(columns)
                if words.shape[1] == len(columns):  # all columns: q's rows over them too
                    if self._words_t is None:
                        self._words_t = np.ascontiguousarray(words.T)
                    (dense_q,) = _dense_columns([q], None)
                    product = dense_q @ self._words_t
                else:
                    (dense_q,) = _dense_columns([q], columns)
                    product = dense_q @ words.T
                # rows x rows: row x of q holds a column row y's words lack
                self._matched[name] = np.diff(q.indptr)[:, None] > product
            else:
                self._matched[name] = None
        lacks = self._matched[name]
        if lacks is None:
            return _lacks(getattr(self.table, name), self.table.words, i, j)
        return lacks[i, j]


def _lacks(q: sparse.csr_matrix, w: sparse.csr_matrix, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Per row pair (i, j): row i of `q` holds a column row j of `w` lacks (both over the
    columns of the words), on a table too big for one dense product (`_Lacking`)."""
    if len(i) <= FEW_PAIRS:  # few pairs: sets of column ids cost less than scipy's indexing

        def row(m: sparse.csr_matrix, x: int) -> set[int]:
            return set(m.indices[m.indptr[x]:m.indptr[x + 1]].tolist())

        return np.fromiter((bool(row(q, x) - row(w, y)) for x, y in zip(i.tolist(), j.tolist())), bool, len(i))
    return np.diff(q.indptr)[i] > np.asarray(q[i].multiply(w[j]).sum(axis=1)).ravel()


def _shared_counts(table: ClaimTable, big: np.ndarray, retired: sparse.csr_matrix | None,
                   dense_words: Callable[[np.ndarray], np.ndarray] | None = None):
    """Per block of rows (start, stop, counts): how many words, proposing words, keys and
    values each row of the block shares with every row, how many values it retires of
    each row's / each row retires of its (None without retired values), and how many
    units and numbers with a unit it shares with every row (None without units). A small table (a
    recall's claims, see DENSE_MAX_WORK) in one dense product each over only the columns
    two or more rows hold (a column one row holds adds to no pair), which costs less than
    scipy's per-call overhead; bigger tables as sparse products, a block of rows at a time.
    `dense_words`: the words as dense rows over the columns marked (`_Lacking.words`)."""
    # read as arrays (`ClaimTable.rows`) for the dense products, as scipy matrices for the sparse ones
    n, words, values, keys = len(table), table.rows("words"), table.rows("values"), table.rows("keys")
    units = table.rows("units")
    units = units if units.indptr[-1] else None
    held = np.bincount(words.indices, minlength=words.shape[1])
    held_keys = np.bincount(keys.indices, minlength=keys.shape[1])
    both = [values] + ([retired] if retired is not None else [])
    held_values = sum(np.bincount(m.indices, minlength=values.shape[1]) for m in both)
    shared_columns = int((held >= 2).sum() + (held_keys >= 2).sum() + (held_values >= 2).sum())
    if n * n * shared_columns <= DENSE_MAX_WORK:
        w = dense_words(held >= 2) if dense_words is not None else _dense_columns([words], held >= 2)[0]
        # (the dense words may hold every column: one held by a single row adds to no pair)
        common = big if w.shape[1] == len(held) else big[held >= 2]
        (dense_keys,) = _dense_columns([keys], held_keys >= 2)
        dense_values = _dense_columns(both, held_values >= 2)
        v = dense_values[0]
        shared_all = w @ w.T
        proposed = (w[:, ~common] @ w[:, ~common].T) if common.any() else None
        retires = retired_by = shared_units = shared_measures = None
        if retired is not None:
            r = dense_values[1]
            retires, retired_by = r @ v.T, v @ r.T
        if units is not None:
            (u,) = _dense_columns([units], None)
            m = v[:, table.measures[held_values >= 2]]
            shared_units, shared_measures = u @ u.T, m @ m.T
        yield 0, n, tuple(None if m is None else m.astype(np.int32)
                          for m in (shared_all, proposed, dense_keys @ dense_keys.T, v @ v.T, retires, retired_by,
                                    shared_units, shared_measures))
        return
    words, values, keys = table.words, table.values, table.keys
    retired, units = (None if retired is None else table.retired), (None if units is None else table.units)
    proposing = words[:, np.flatnonzero(~big)] if big.any() else None
    measures = values[:, np.flatnonzero(table.measures)] if units is not None else None
    # Each right-hand side is transposed once (values.T serves two products).
    transposed = {name: m.T.tocsr() for name, m in (("words", words), ("proposing", proposing), ("keys", keys),
                                                    ("values", values), ("retired", retired), ("units", units),
                                                    ("measures", measures))
                  if m is not None}
    products = ((words, "words"), (proposing, "proposing"), (keys, "keys"), (values, "values"),
                (retired, "values"), (values if retired is not None else None, "retired"), (units, "units"),
                (measures, "measures"))
    for start in range(0, n, PAIR_BLOCK):
        stop = min(n, start + PAIR_BLOCK)
        yield start, stop, tuple((m[start:stop] @ transposed[right]).toarray()
                                 if m is not None and right in transposed else None for m, right in products)


def _dense_columns(matrices: Sequence[sparse.csr_matrix], keep: np.ndarray | None) -> list[np.ndarray]:
    """These matrices (the same columns) as dense float32 rows over the columns `keep`
    marks (None: all; counts of shared 0/1 columns stay exact in float32)."""
    column = None if keep is None else np.cumsum(keep) - 1
    out = []
    for m in matrices:
        rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
        if keep is None:
            dense = np.zeros(m.shape, np.float32)
            dense[rows, m.indices] = m.data
        else:
            inside = keep[m.indices]
            dense = np.zeros((m.shape[0], int(keep.sum())), np.float32)
            dense[rows[inside], column[m.indices[inside]]] = m.data[inside]
        out.append(dense)
    return out


def _replaced(it: MemoryItem) -> Iterable[str]:
    """Ids on the other end of a replacement: those `it` supersedes or corrects in part
    (`refines`: an answer to the conflict, like a replacement), and its `superseded_by`."""
    yield from (link.to for link in it.links if link.rel in ("supersedes", "refines"))
    if it.superseded_by:
        yield it.superseded_by


def _close(items: Sequence[MemoryItem], i: np.ndarray, j: np.ndarray, vector_of: VectorOf | None,
           vectors_of: VectorsOf | None = None, threshold: float = SUBJECT_COSINE) -> np.ndarray:
    """cosine >= `threshold` per pair (False without both vectors). Computed in one
    product; pairs within rounding of the threshold are decided by `_cosine` itself.
    `vectors_of` (optional) gathers the rows' vectors at once; `vector_of` still decides
    the pairs near the threshold."""
    out = np.zeros(len(i), bool)
    if vector_of is None or not len(i):
        return out
    # the rows asked, ascending, and each pair's positions among them (a mark per row: no sort)
    mark = np.zeros(max(int(i.max()), int(j.max())) + 1, bool)
    mark[i] = mark[j] = True
    rows = np.flatnonzero(mark)
    position = np.cumsum(mark) - 1
    if vectors_of is not None:
        matrix, has = vectors_of(rows)
        if matrix is None or not has.any():
            return out
    else:
        vectors = [vector_of(items[r]) for r in rows.tolist()]
        has = np.fromiter((v is not None for v in vectors), bool, len(rows))
        if not has.any():
            return out
        matrix = np.stack([v if v is not None else vectors[int(np.argmax(has))] for v in vectors]).astype(
            np.float32, copy=False)
    a, b = position[i], position[j]
    known = has[a] & has[b]
    if len(rows) <= GRAM_MAX_ROWS:  # a recall's few claims: all their cosines at once, no copied pair rows
        cosine = (matrix @ matrix.T)[a[known], b[known]]
    else:
        cosine = np.einsum("ij,ij->i", matrix[a[known]], matrix[b[known]])
    close = cosine >= threshold
    for x in np.flatnonzero(np.abs(cosine - threshold) < 1e-3).tolist():
        exact = _cosine(vector_of, items[int(i[known][x])], items[int(j[known][x])])
        close[x] = exact is not None and exact >= threshold
    out[known] = close
    return out


def _cosine(vector_of: VectorOf | None, a: MemoryItem, b: MemoryItem) -> float | None:
    if vector_of is None:
        return None
    va, vb = vector_of(a), vector_of(b)
    if va is None or vb is None:
        return None
    return float(np.dot(va, vb))


def _table(items: Iterable[MemoryItem]) -> ClaimTable:
    """The claims among `items`, in order."""
    return ClaimTable.read([it for it in items if is_claim(it)], cached=True)


def find_conflicts(items: Iterable[MemoryItem], vector_of: VectorOf | None = None
                   ) -> list[tuple[MemoryItem, MemoryItem, str]]:
    """Every conflicting pair among the claims of `items` as (a, b, reason), a.id < b.id,
    sorted by ids. A pair where one supersedes the other is not reported."""
    table = _table(it for it in sorted(items, key=lambda it: it.id) if it.active)
    found = _pairs(table, vector_of)
    shown = (found.reason > 0) & ~found.replaces
    out = [(table.items[i], table.items[j], REASONS[r])
           for i, j, r in zip(found.i[shown].tolist(), found.j[shown].tolist(), found.reason[shown].tolist())]
    return sorted(out, key=lambda p: (p[0].id, p[1].id))
