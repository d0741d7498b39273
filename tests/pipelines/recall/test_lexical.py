"""`LexicalIndex.scores` adds each term's postings itself (bm25s' np.add.at path was ~2 ms of
a 100k recall): its scores must stay bm25s' own, float for float."""

from __future__ import annotations

import random

import numpy as np

from pipelines.recall.lexical import LexicalIndex


def test_scores_equal_bm25s_own_scoring():
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(120)] + ["deploy", "deploys", "deployed", "running", "run"]
    docs = [[rng.choice(vocab) for _ in range(rng.randint(0, 25))] for _ in range(600)]
    index = LexicalIndex(docs)
    compared = 0
    for _ in range(60):
        terms = [rng.choice(vocab) for _ in range(rng.randint(1, 5))]
        ours = index.scores(terms)
        ids = index._bm25.get_tokens_ids(index._query(terms))
        assert (ours is None) == (not ids)
        if ours is not None:
            theirs = np.asarray(index._bm25.get_scores_from_ids(ids), dtype=np.float32)
            assert ours.dtype == np.float32 and np.array_equal(ours, theirs)
            compared += 1
    assert compared > 40


def test_no_known_term_scores_nothing():
    index = LexicalIndex([["alpha", "beta"], ["gamma"]])
    assert index.scores(["zeta"]) is None
    assert index.scores(["gamma"]).tolist()[0] == 0.0
