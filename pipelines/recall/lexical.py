"""Lexical side of recall: one tokeniser shared by BM25, tag/entity matching and Q* coverage,
and a thin wrapper over the `bm25s` index that scores every row for a query.

Tokens are lower-case runs of letters/digits, minus the NLTK English stopword list shipped
with bm25s. Queries additionally drop a few recall fillers ("remember", "recall", "know"...)
that say *that* the user wants memory, not *what* memory. Tokens stay surface words
everywhere (Q* coverage, entity matching); only the BM25 index compares their Snowball
stems, so "camped" finds "camping" and "research" finds "researching".
"""

from __future__ import annotations

import logging
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache

import bm25s
import numpy as np
import simplemma
import Stemmer
from bm25s.stopwords import STOPWORDS_EN_PLUS

# bm25s sets its own logger to DEBUG at import: every delta segment's index build (one per
# write) then logs a line through the service's log queue. Its warnings still get through.
logging.getLogger("bm25s").setLevel(logging.WARNING)

_WORD = re.compile(r"[^\W_]+")
STOPWORDS: frozenset[str] = frozenset(STOPWORDS_EN_PLUS)

# Words that make up acknowledgements, greetings and small talk.
SMALL_TALK = frozenset(
    "ok okay k kk thanks thank thx ty you great cool sure yes yeah yep yup no nope nah hi hello "
    "hey bye goodbye good morning evening night afternoon got it sounds perfect awesome nice "
    "right alright fine lol haha welcome np problem cheers noted done agreed indeed exactly "
    "wow oh ah hmm much very so well lots many "
    # an assistant's promise to comply, which names nothing ("Sure, I'll use that!", "Of
    # course, I'll keep that in mind"): it says nothing on its own
    "use course keep mind remember absolutely certainly definitely".split()
)
# Words that only signal a recall request; kept in documents, dropped from queries.
QUERY_FILLERS: frozenset[str] = frozenset(
    {
        "know", "knew", "remember", "remembered", "recall", "recalled", "memory", "memories",
        "tell", "say", "said", "mention", "mentioned", "please", "anything", "something",
        "earlier", "previously", "decided", "discussed", "us", "let", "could", "would",
    }
)


def words(text: str) -> list[str]:
    """Lower-case word tokens, stopwords kept (used for label n-grams)."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


def each_word(text: str) -> Iterator[str]:
    """`words` one at a time, for a test that may stop at the first."""
    return (m.group() for m in _WORD.finditer(unicodedata.normalize("NFKC", text).lower()))


def tokenize(text: str) -> list[str]:
    """Index tokens: words minus stopwords and one-letter non-digit tokens."""
    return [w for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]


def query_terms(text: str) -> list[str]:
    """Distinct query tokens in first-seen order, recall fillers removed."""
    seen: dict[str, None] = {}
    for tok in tokenize(text):
        if tok not in QUERY_FILLERS:
            seen.setdefault(tok, None)
    return list(seen)


@lru_cache(maxsize=8192)  # a recall compares the same candidates' contents and titles many times over
def normalise_label(label: str) -> str:
    """Tags, entities and titles compare in this form: 'Project_Phoenix' == 'project phoenix'."""
    return " ".join(words(label))


def without_names(text: str, names: Iterable[str]) -> str:
    """`text` with each of `names` (normalised labels: "mara quinn") left out, a possessive
    with it ("Melanie's"); the text as it was when nothing else would be left."""
    spelled = sorted({n for n in names if n}, key=len, reverse=True)
    if not spelled:
        return text
    pattern = re.compile(r"\b(?:" + "|".join(r"\s+".join(map(re.escape, n.split())) for n in spelled)
                         + r")(?:['\u2019]s)?\b", re.IGNORECASE)
    left = re.sub(r"\s+", " ", pattern.sub("", unicodedata.normalize("NFKC", text))).strip()
    return left if words(left) else text


def label_ngrams(text: str, max_n: int = 4) -> set[str]:
    """All 1..max_n word n-grams of the text, for exact tag/entity matching. Single stopwords
    are left out so a tag like "it" never matches by accident."""
    toks = words(text)
    grams: set[str] = set()
    for n in range(1, max_n + 1):
        for i in range(len(toks) - n + 1):
            if n == 1 and toks[i] in STOPWORDS:
                continue
            grams.add(" ".join(toks[i : i + n]))
    return grams


def lemma(token: str) -> str:
    """simplemma's English lemma of a lower-case word ("kept": "keep", "went": "go",
    "children": "child"), lower-case; a word of one or two letters, one with a digit, or a
    stopword is its own ("am" is not "be", "us" not "we", "ml" not "millileter")."""
    if len(token) < 3 or not token.isalpha() or token in STOPWORDS:
        return token
    return simplemma.lemmatize(token, lang="en").lower()


class Stems:
    """Snowball (English) stems of tokens, each distinct token stemmed once; of their lemmas
    (`lemma`) when `lemmas`: "kept" and "keeps" are one word, as "ships" and "ship" are."""

    def __init__(self, max_memo: int | None = None, *, lemmas: bool = False) -> None:
        self._stemmer = Stemmer.Stemmer("english")
        self._memo: dict[str, str] = {}
        self._max_memo = max_memo  # a long-lived instance forgets past this many tokens
        self._lemmas = lemmas

    def __call__(self, tokens: Iterable[str]) -> list[str]:
        return self.many([list(tokens)])[0]

    def many(self, docs: Sequence[Sequence[str]]) -> list[list[str]]:
        """Every document's stems; the distinct tokens of all of them are stemmed in one call."""
        memo = self._memo
        if self._max_memo is not None and len(memo) > self._max_memo:
            memo.clear()
        new = [t for t in set().union(*docs) if t not in memo] if docs else []
        if new:
            memo.update(zip(new, self._stemmer.stemWords(list(map(lemma, new)) if self._lemmas else new)))
        get = memo.__getitem__
        return [list(map(get, d)) for d in docs]


class LexicalIndex:
    """BM25 (Lucene variant, k1=1.5, b=0.75) over pre-tokenised documents, row-aligned with
    the corpus, comparing stems when `stem` (documents and queries alike). `scores` returns
    the raw BM25 score of every row; `normalised` divides by the query's ideal score (sum of
    its terms' IDF: what a document of average length with each query term once would get)
    so scores from corpora of different sizes are comparable."""

    def __init__(self, docs: Sequence[list[str]], *, stem: bool = True):
        self.num_docs = len(docs)
        self._bm25 = bm25s.BM25()
        self._stems = Stems() if stem else None
        if self._stems is not None:
            docs = self._stems.many(docs)
        # bm25s needs at least one token (a delta segment may hold a single item whose text
        # has none); a corpus without any simply scores nothing.
        self._indexed = any(len(d) for d in docs)
        if self._indexed:
            self._bm25.index(list(docs), show_progress=False)
            indptr = np.asarray(self._bm25.scores["indptr"])
            self._df = np.diff(indptr)
        else:
            self._df = np.zeros(0, dtype=np.int64)

    def _idf(self, df: int) -> float:
        n = self.num_docs
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def _query(self, terms: Iterable[str]) -> list[str]:
        terms = list(terms)
        return list(dict.fromkeys(self._stems(terms) if self._stems is not None else terms))

    def scores(self, terms: Iterable[str]) -> np.ndarray | None:
        """Raw BM25 per row, or None when no query term is in the vocabulary."""
        if not self._indexed:
            return None
        ids = self._bm25.get_tokens_ids(self._query(terms))
        if not ids:
            return None
        if self._bm25.nonoccurrence_array is not None:  # a variant with non-occurrence scores
            return np.asarray(self._bm25.get_scores_from_ids(ids), dtype=np.float32)
        # bm25s' `get_scores_from_ids` adds each term's postings with np.add.at (~2 ms of a
        # 100k recall's CPU); a term's postings name a row once, so adding them by index gives
        # the same floats in the same order (kernel11, docs/measurements.md).
        index = self._bm25.scores
        data, indices, indptr = index["data"], index["indices"], index["indptr"]
        out = np.zeros(index["num_docs"], dtype=np.float32)
        first, *rest = ids  # the first term's postings land on zeros: set, not read, added and set (0 + x is x)
        out[indices[indptr[first]:indptr[first + 1]]] = data[indptr[first]:indptr[first + 1]]
        for t in rest:
            out[indices[indptr[t]:indptr[t + 1]]] += data[indptr[t]:indptr[t + 1]]
        return out

    def idf(self, terms: Sequence[str]) -> list[float]:
        """IDF of each term (its stem) in this index; a term in no row gets the highest."""
        return self._stem_idf(self._stems(terms) if self._stems is not None else list(terms))

    def _stem_idf(self, stems: Iterable[str]) -> list[float]:
        vocab = self._bm25.vocab_dict if self._indexed else {}
        out = []
        for t in stems:
            tid = vocab.get(t)
            out.append(self._idf(int(self._df[tid]) if tid is not None and tid < len(self._df) else 0))
        return out

    def ideal(self, terms: Iterable[str]) -> float:
        return sum(self._stem_idf(self._query(terms)))

    def normalised(self, terms: Sequence[str]) -> np.ndarray | None:
        """BM25 / ideal, clipped to [0, 1]; None when nothing matches."""
        raw = self.scores(terms)
        if raw is None:
            return None
        ideal = self.ideal(terms)
        if ideal <= 0:
            return None
        out = raw / np.float32(ideal)  # a new float32 array: clipped in place
        return np.clip(out, 0.0, 1.0, out=out)
