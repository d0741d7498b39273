"""The claims of many items kept compact for the rule over many pairs (`ClaimTable`)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import NamedTuple

import numpy as np
from scipy import sparse

from pipelines.records import MemoryItem

from .claim import Claim, _pack, _read_claim, _title_words, _unpack, is_claim, read_claim, speaker
from .patterns import PRESENCES
from .values import _measures, _stance, _value_kinds, names_only, numbers_only, places, present

# A bit of the kinds code beside `_value_kinds`' (1 names, 2 bare numbers): the claim names a
# place (`places`), so recall asks `_placed_apart` only of pairs where both do.
PLACED = 4
# Two more: it says where its one is (`values.present`: "I commute to the office"), and that
# its one is away from or back at such a place (`Claim.away`, `Claim.returns`: "I work
# remotely now"): recall asks `rule._back_from` / `rule._left` only of pairs where one says
# the second and the other either (a key, `_keys`, proposes them though they share no word).
PRESENT, AWAY = 8, 16
# And that its values are names only, or numbers only (`values.names_only`): the one beside
# the other is no disagreement (`rule._values_disagree`).
NAMES_ONLY, NUMBERS_ONLY = 32, 64


class ClaimTable:
    """The claims of a list of items, read once and kept compact for the rule over many
    pairs: per row its content words and values (sparse rows of small integers) and codes
    for its title, content, subject and title values (-1: none). Rows that are not claims
    stay empty. A corpus reads its table once (`MemoryCorpus.claims`, when a snapshot
    loads), so a recall only takes the rows of its candidates (`take`)."""

    def __init__(self, items: Sequence[MemoryItem], words: sparse.csr_matrix, values: sparse.csr_matrix,
                 codes: np.ndarray, retired: sparse.csr_matrix, keys: sparse.csr_matrix,
                 units: sparse.csr_matrix, measures: np.ndarray, qualifiers: sparse.csr_matrix,
                 ended: sparse.csr_matrix, ended_values: sparse.csr_matrix, persons: sparse.csr_matrix,
                 subjects: sparse.csr_matrix, titles: sparse.csr_matrix,
                 kept: Sequence[bytes | Claim | None] | None = None):
        self.items = list(items)
        # Per row its claim (None: not a claim), packed (`_pack`) in a snapshot's table, as
        # read in a recall's table over several corpora: `claim` gives it without reading it again.
        self.kept = kept
        self.words = words
        self.values = values
        # Values a claim names as replaced or denied, over the same columns as `values`.
        self.retired = retired
        # rows x (title, content, subject, title values, adds: 1 or 0, what it measures, first person: 1 or 0,
        # negated: 1 or 0, the kinds of value it states: `_value_kinds`; and of every row's item: its
        # scope kind, its id, whether it links anywhere or is superseded: 1 or 0), so a recall's
        # table reads them with its rows instead of from each item
        self.codes = codes
        # What else proposes a pair (`_keys`: the title, its own id, the ids it links to), read
        # with the rest so a recall's table takes these rows too.
        self.keys = keys
        self.units = units  # rows x unit words (`Claim.units`)
        self.measures = measures  # per column of `values`: a number with a unit
        self.qualifiers = qualifiers  # rows x the columns of `words` (`Claim.qualifiers` | `Claim.named`)
        self.persons = persons  # rows x the columns of `words` (`Claim.persons`)
        self.subjects = subjects  # rows x the columns of `words` (`Claim.subject`)
        self.titles = titles  # rows x the columns of `words` (`_title_words`)
        self.ended = ended  # rows x the columns of `words` (`Claim.ended`)
        self.ended_values = ended_values  # rows x the columns of `values` (`Claim.ended_values`)
        self._gathered: _Gathered | None = None  # made by the first `take`

    @classmethod
    def read(cls, items: Sequence[MemoryItem], cached: bool = False) -> ClaimTable:
        """Every row of `items` (non-claims empty); `cached` reads through the per-version
        claim cache (small corpora that are rebuilt often), else keeping each claim packed
        (a snapshot's table: `claim`)."""
        read = read_claim if cached else _read_claim
        return cls.of(items, (read(it) if is_claim(it) else None for it in items), keep=None if cached else "packed")

    @classmethod
    def of(cls, items: Sequence[MemoryItem], claims: Iterable[Claim | None], keep: str | None = None) -> ClaimTable:
        """The table of `claims` (one per item, None for a non-claim), each claim dropped
        once its row is written: a snapshot's claims are never all alive at once. `keep`:
        "packed" keeps each packed, "claims" as given (`claim`)."""
        n = len(items)
        kept: list[bytes | Claim | None] | None = None if keep is None else []
        words, values, keys, units = _Columns(), _Columns(), _Columns(), _Columns()
        retired = _Columns(vocab=values.vocab)  # one value, one column in both
        qualifiers = _Columns(vocab=words.vocab)  # a qualifier is one of the row's words
        ended, ended_values = _Columns(vocab=words.vocab), _Columns(vocab=values.vocab)  # so is what ended
        persons = _Columns(vocab=words.vocab)  # and who it names
        subjects = _Columns(vocab=words.vocab)  # and the words before its first value
        titles = _Columns(vocab=words.vocab)  # and its title's (`_title_words`)
        tables: list[dict[Hashable, int]] = [{}, {}, {}, {}, {}, {}]  # title, content, subject, title values,
        # -, what it measures

        def code(field: int, key: Hashable) -> int:
            return tables[field].setdefault(key, len(tables[field]))

        codes = np.full((n, CODES), -1, np.int64)
        codes[:, KIND] = _codes((it.scope.kind for it in items), n)
        codes[:, ID] = _codes((it.id for it in items), n)
        codes[:, LINKED] = np.fromiter((bool(it.links or it.superseded_by) for it in items), bool, n)
        speakers: dict[str, int] = {}
        codes[:, SPEAKER] = np.fromiter((-1 if (s := speaker(it)) is None else speakers.setdefault(s, len(speakers))
                                         for it in items), np.int64, n)
        for row, c in enumerate(claims):
            words.add(c.words if c is not None else ())
            values.add(c.values if c is not None else ())
            retired.add(c.retired if c is not None else ())
            units.add(c.units if c is not None else ())
            qualifiers.add(c.qualifiers | c.named if c is not None else ())  # `_qualified_apart` asks both
            ended.add(c.ended if c is not None else ())
            ended_values.add(c.ended_values if c is not None else ())
            persons.add(c.persons if c is not None else ())
            subjects.add(c.subject if c is not None else ())
            titles.add(_title_words(c) if c is not None else ())
            at = _where(c) if c is not None else frozenset()
            if c is not None:
                codes[row, :KIND] = (code(0, c.title) if c.title else -1, code(1, c.content),
                              code(2, c.subject) if c.subject else -1,
                              code(3, c.title_values) if c.title_values else -1, int(c.adds),
                              code(5, c.measured) if c.measured else -1, int(c.first_person), int(c.negated),
                              _value_kinds(c.values) | (PLACED if places(c.values) else 0)
                              | (AWAY if c.away or c.returns else 0) | (PRESENT if at else 0)
                              | (NAMES_ONLY if c.values and names_only(c.values) else 0)
                              | (NUMBERS_ONLY if c.values and numbers_only(c.values) else 0))
                codes[row, CHANGES] = c.changes is not None and bool(c.subject)  # `_says_changed` may ask it
                codes[row, SAYS_CHANGED] = c.changes is not None  # `_may_have_changed` may ask it
                codes[row, OF_WRITER] = c.of_writer
            keys.add(_keys(items[row], int(codes[row, 0]), at | (c.away | c.returns if c is not None else frozenset())))
            if kept is not None:
                kept.append(_pack(c) if keep == "packed" and c is not None else c)
        measure_values = _measures(str(v) for v in values.vocab)
        measures = np.fromiter((v in measure_values for v in values.vocab), bool, len(values.vocab))
        return cls(items, words.matrix(), values.matrix(), codes, retired.matrix(), keys.matrix(),
                   units.matrix(), measures, _Columns.matrix_of(qualifiers, len(words.vocab)),
                   _Columns.matrix_of(ended, len(words.vocab)), _Columns.matrix_of(ended_values, len(values.vocab)),
                   _Columns.matrix_of(persons, len(words.vocab)), _Columns.matrix_of(subjects, len(words.vocab)),
                   _Columns.matrix_of(titles, len(words.vocab)), kept)

    def __len__(self) -> int:
        return len(self.items)

    def claim(self, row: int) -> Claim | None:
        """The claim of a row (None: not a claim): the one the table keeps, unpacked, else
        read through the per-version claim cache."""
        item = self.items[row]
        if self.kept is not None:
            kept = self.kept[row]
            return _unpack(kept, item) if isinstance(kept, bytes) else kept
        return read_claim(item) if is_claim(item) else None

    def ready_to_take(self) -> ClaimTable:
        """Lay the matrices end to end for `take` now (~40 ms at 100k claims) rather than in
        the first recall after a snapshot loads."""
        if self._gathered is None:  # a table taken from once is taken from again (a snapshot's, per recall)
            self._gathered = _Gathered(self)
        return self

    def take(self, rows: Sequence[int]) -> ClaimTable:
        """These rows, in this order (their columns renumbered densely)."""
        idx = np.asarray(rows, np.int64)
        self.ready_to_take()
        parts, used_values = self._gathered.take(idx)
        at = idx.tolist()
        taken = ClaimTable.__new__(ClaimTable)
        taken.items = list(map(self.items.__getitem__, at))
        taken.codes, taken.measures = self.codes[idx], self.measures[used_values]
        taken.kept = None if self.kept is None else list(map(self.kept.__getitem__, at))
        taken._gathered, taken._parts = None, parts
        return taken

    def __getattr__(self, name: str) -> sparse.csr_matrix:
        # A taken table makes each matrix the first time it is asked for (a recall asks for few of
        # them; scipy's constructor costs more than the gathering): its parts are kept (`take`).
        parts = self.__dict__.get("_parts")
        if parts is None or name not in parts:
            raise AttributeError(name)
        data, indices, indptr, n_columns = parts[name]
        matrix = sparse.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, n_columns))
        setattr(self, name, matrix)
        return matrix

    def rows(self, name: str) -> _Rows | sparse.csr_matrix:
        """The matrix `name` for a reader of its arrays only (entries per row, a dense copy): a
        taken table's parts as they are, without making the matrix; else the matrix."""
        parts = self.__dict__.get("_parts")
        if parts is None or name not in parts:
            return getattr(self, name)
        data, indices, indptr, n_columns = parts[name]
        return _Rows(data, indices, indptr, (len(indptr) - 1, n_columns))


class _Rows(NamedTuple):
    """A csr matrix's arrays and shape (`ClaimTable.rows`)."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]


class _Gathered:
    """A table's matrices that `take` reads (`_GATHERED`), laid end to end: the rows of all
    are gathered in one go rather than matrix by matrix."""

    def __init__(self, table: ClaimTable) -> None:
        matrices = [getattr(table, name) for family in _GATHERED for name in family]
        nnz = [int(m.indptr[-1]) for m in matrices]
        self.starts = np.concatenate([[0], np.cumsum(nnz)[:-1]]).astype(np.int64)  # of each matrix's entries
        small = np.int32 if sum(nnz) < 2**31 else np.int64
        self.offsets = np.stack([m.indptr.astype(np.int64) + start
                                 for m, start in zip(matrices, self.starts)]).astype(small)  # matrices x rows + 1
        self.indices = np.concatenate([m.indices[:k] for m, k in zip(matrices, nnz)]).astype(np.int32)
        ones = all(m.data.dtype == np.int32 and bool((m.data[:k] == 1).all()) for m, k in zip(matrices, nnz))
        self.data = None if ones else [m.data[:k] for m, k in zip(matrices, nnz)]  # `_Columns`' rows: all 1
        self.widths = [getattr(table, family[0]).shape[1] for family in _GATHERED]

    def take(self, idx: np.ndarray) -> tuple[dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, int]], np.ndarray]:
        """The matrices' rows `idx` by name, as csr parts (data, indices, indptr, columns), each
        family's columns renumbered densely (in column order); and the old column of each new
        column of the values."""
        k = len(idx)
        starts = self.offsets[:, idx].astype(np.int64)
        lengths = (self.offsets[:, idx + 1] - starts).ravel()
        indptr = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=indptr[1:])
        at = np.repeat(starts.ravel() - indptr[:-1], lengths) + np.arange(indptr[-1])
        indices = self.indices[at]
        ones = np.ones(len(at), np.int32) if self.data is None else None  # each matrix's data: a slice
        out, m, used_values = {}, 0, None
        for family, width in zip(_GATHERED, self.widths):
            lo, hi = int(indptr[m * k]), int(indptr[(m + len(family)) * k])
            used, columns = _renumber(indices[lo:hi], width)
            columns = columns.astype(np.int32)
            if family[0] == "values":
                used_values = used
            for name in family:
                start, stop = int(indptr[m * k]), int(indptr[(m + 1) * k])
                data = ones[start:stop] if ones is not None else self.data[m][at[start:stop] - self.starts[m]]
                rows = (indptr[m * k:(m + 1) * k + 1] - start).astype(np.int32)
                out[name] = (data, columns[start - lo:stop - lo], rows, len(used))
                m += 1
        return out, used_values


# The matrices `ClaimTable.take` gathers, by families of matrices over one set of columns.
_GATHERED = (("words", "qualifiers", "ended", "persons", "subjects", "titles"), ("values", "retired", "ended_values"),
             ("keys",), ("units",))


# `ClaimTable.codes` columns read by number elsewhere: the item's scope kind, id, and links;
# whether the claim says something changed of a subject it names (1 or 0); and whether it
# says something changed at all (1 or 0)
KIND, ID, LINKED, CHANGES, SAYS_CHANGED, CODES = 9, 10, 11, 12, 13, 16
# and whether the claim speaks of its writer alone (1 or 0), and who that is (a code; -1: not
# one known person): `rule.own_words_apart`
OF_WRITER, SPEAKER = 14, 15


def _codes(keys: Iterable[Hashable], n: int) -> np.ndarray:
    """One small integer per distinct key, so equality tests over many pairs are vector ops."""
    table: dict[Hashable, int] = {}
    return np.fromiter((table.setdefault(k, len(table)) for k in keys), np.int64, n)


class _Columns:
    """Rows x distinct keys, a row at a time: 1 where the row holds the key (no duplicates)."""

    def __init__(self, vocab: dict[Hashable, int] | None = None) -> None:
        self.vocab: dict[Hashable, int] = {} if vocab is None else vocab
        self.indices: list[int] = []
        self.indptr = [0]

    def add(self, keys: Iterable[Hashable]) -> None:
        vocab = self.vocab
        self.indices.extend(vocab.setdefault(k, len(vocab)) for k in keys)
        self.indptr.append(len(self.indices))

    def matrix(self) -> sparse.csr_matrix:
        return self.matrix_of(self, len(self.vocab))

    @staticmethod
    def matrix_of(columns: _Columns, n_columns: int) -> sparse.csr_matrix:
        """The rows over `n_columns` columns (a shared vocabulary may have grown since)."""
        return sparse.csr_matrix((np.ones(len(columns.indices), np.int32), np.asarray(columns.indices, np.int32),
                                  columns.indptr), shape=(len(columns.indptr) - 1, n_columns))


def _renumber(columns: np.ndarray, n_columns: int) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(columns, return_inverse=True)` for column ids below `n_columns`: through a
    mark per column when there are few columns for the ids (no sort), else np.unique."""
    if n_columns > 8 * len(columns) + 1024:
        return np.unique(columns, return_inverse=True)
    mark = np.zeros(n_columns, bool)
    mark[columns] = True
    used = np.flatnonzero(mark)
    at = np.empty(n_columns, np.int64)
    at[used] = np.arange(len(used))
    return used, at[columns]


def _keys(it: MemoryItem, title: int, at: frozenset[int] = frozenset()) -> set[tuple[str, Hashable]]:
    """What proposes a pair besides a content word: the title, the item's id and the ids it
    links to, and the places (of `ABSENCES`) it says its one is at, away from or back at."""
    return ({("id", to) for to in {link.to for link in it.links} | {it.id}} | ({("t", title)} if title >= 0 else set())
            | {("at", n) for n in at})


def _where(c: Claim) -> frozenset[int]:
    """Where (of `PRESENCES`) the claim says its one is (`values.present`), read only of a
    claim naming one at all (most claims name none: no `_stance` read)."""
    content = c.item.content
    if not any(there is not None and there[0].search(content) for there in PRESENCES):
        return frozenset()
    return present(_stance(content))
