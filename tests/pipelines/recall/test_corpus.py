"""MemoryCorpus: scope masks, lexical index, labels, palace, and the FAISS vs exact paths."""

from __future__ import annotations

import hashlib
from datetime import date

import faiss
import numpy as np
import pytest

from pipelines.recall import corpus as corpus_module
from pipelines.recall.corpus import CorpusError, MemoryCorpus
from pipelines.recall.lexical import (
    LexicalIndex,
    label_ngrams,
    normalise_label,
    query_terms,
    tokenize,
    without_names,
)
from pipelines.recall.query import RecallFilters
from pipelines.records import Identity, Link, MemoryItem, PalaceLocation, Provenance, Scope

T0 = "2025-01-01T00:00:00+00:00"
WHO = Identity(user_id="u1", project_id="p1", session_id="s1", org_id="o1")


def embed(texts: list[str], dim: int = 64) -> np.ndarray:
    """Bag of words hashed into signed buckets, L2-normalised (deterministic)."""
    out = np.zeros((len(texts), dim), np.float32)
    for i, text in enumerate(texts):
        for tok in tokenize(text):
            h = int(hashlib.sha256(tok.encode()).hexdigest(), 16)
            out[i, h % dim] += 1.0 if (h >> 100) & 1 else -1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1, norms)


def item(id_: str, title: str, content: str, scope: Scope | None = None, **kw) -> MemoryItem:
    kw.setdefault("provenance", Provenance(source_id=f"turn-{id_}"))
    return MemoryItem(id=id_, tier=kw.pop("tier", "stm"), type=kw.pop("type", "fact"),
                      title=title, content=content,
                      scope=scope or Scope.for_identity("project", WHO),
                      created_at=T0, updated_at=T0, **kw)


def corpus_of(items: list[MemoryItem], **kw) -> MemoryCorpus:
    vecs = embed([f"{i.title} {i.content}" for i in items])
    return MemoryCorpus(items, vecs, **kw)


# -- lexical -------------------------------------------------------------------------------


def test_tokeniser_is_lowercase_word_split_without_stopwords_or_stemming():
    assert tokenize("The Inbox uses SQLite's WAL-mode, running 2 workers!") == [
        "inbox", "uses", "sqlite", "wal", "mode", "running", "2", "workers"]
    assert query_terms("What do we remember about the inbox inbox?") == ["inbox"]
    assert normalise_label("Project_Phoenix") == normalise_label("project  phoenix")
    assert "project phoenix" in label_ngrams("Tell me about Project Phoenix now")
    assert "the" not in label_ngrams("the inbox")  # single stopwords never match a label


def test_without_names_leaves_out_each_name_and_its_possessive_whatever_the_case():
    assert without_names("What do Melanie's kids like?", ["melanie"]) == "What do kids like?"
    assert without_names("Did mara  QUINN meet Jon?", ["mara quinn", "jon"]) == "Did meet ?"
    assert without_names("What did Johnny say to John’s son?", ["john"]) == "What did Johnny say to son?"
    assert without_names("Melanie?", ["melanie"]) == "Melanie?"  # nothing else to embed: as it was
    assert without_names("What did Ann say?", []) == "What did Ann say?"


def test_bm25_normalised_scores_are_in_unit_range_and_rank_matches_first():
    docs = [tokenize(t) for t in ["sqlite inbox wal", "duckdb warehouse", "inbox"]]
    lex = LexicalIndex(docs)
    raw = lex.scores(["inbox", "wal"])
    norm = lex.normalised(["inbox", "wal"])
    assert raw is not None and norm is not None
    assert norm[0] > norm[2] > 0 and norm[1] == 0
    assert (norm >= 0).all() and (norm <= 1).all()
    assert lex.scores(["nothing", "here"]) is None
    assert LexicalIndex([]).scores(["x"]) is None
    # Documents without a single token (a delta segment of one punctuation-only item): found
    # by schema fuzzing, once a 500.
    blank = LexicalIndex([[], []])
    assert blank.num_docs == 2 and blank.scores(["x"]) is None and blank.normalised(["x"]) is None


def test_bm25_matches_word_forms_by_stem_and_can_compare_surface_words():
    docs = [tokenize(t) for t in ["Researching adoption agencies", "We went camping at the beach",
                                  "the agency called"]]
    stemmed = LexicalIndex(docs).normalised(query_terms("What did Caroline research? Where has she camped?"))
    assert stemmed is not None and stemmed[0] > 0 and stemmed[1] > 0 and stemmed[2] == 0
    assert LexicalIndex(docs, stem=False).scores(["research", "camped"]) is None
    # "agencies" and "agency" share a stem: both rows match either form.
    agency = LexicalIndex(docs).scores(["agency"])
    assert agency is not None and agency[0] > 0 and agency[2] > 0


# -- scope, activity, duplicates -----------------------------------------------------------


def test_visible_mask_mirrors_scope_visible_to_for_every_kind():
    other = Identity(user_id="u2", project_id="p2", session_id="s9", org_id="o1")
    items = [
        item("sess", "a", "a", Scope.for_identity("session", WHO)),
        item("proj", "b", "b", Scope.for_identity("project", WHO)),
        item("user", "c", "c", Scope.for_identity("user", WHO)),
        item("org", "d", "d", Scope.for_identity("org", WHO)),
        item("other-sess", "e", "e", Scope.for_identity("session", other)),
        item("other-proj", "f", "f", Scope.for_identity("project", other)),
        item("other-user", "g", "g", Scope.for_identity("user", other)),
    ]
    c = corpus_of(items)
    for who in (WHO, other, Identity(), Identity(user_id="u1", session_id="s2", org_id="o1")):
        mask = c.visible_mask(who)
        assert [bool(m) for m in mask] == [it.scope.visible_to(who) for it in items]


def test_inactive_items_are_never_visible_and_a_later_duplicate_wins():
    items = [
        item("a", "old", "old version"),
        item("b", "gone", "archived", archived=True),
        item("c", "merged", "superseded", superseded_by="d"),
        item("a", "new", "new version"),
    ]
    c = corpus_of(items)
    mask = c.visible_mask(WHO)
    assert mask.tolist() == [False, False, False, True]
    assert c.row_of["a"] == 3


def test_allowed_mask_filters_tags_tier_type_and_excluded_ids():
    items = [
        item("a", "t", "x", tags=["Inbox", "storage"], tier="ltm", type="decision"),
        item("b", "t", "x", tags=["inbox"], tier="stm"),
        item("c", "t", "x", tags=["warehouse"], tier="ltm"),
    ]
    c = corpus_of(items)
    assert c.allowed_mask(WHO, RecallFilters(tags=("inbox",))).tolist() == [True, True, False]
    assert c.allowed_mask(WHO, RecallFilters(tags=("inbox", "storage"))).tolist() == [True, False, False]
    assert c.allowed_mask(WHO, RecallFilters(tags=("storage", "warehouse"), tag_match="any")).tolist() == [
        True, False, True]
    assert c.allowed_mask(WHO, RecallFilters(tier="ltm")).tolist() == [True, False, True]
    assert c.allowed_mask(WHO, RecallFilters(type="decision")).tolist() == [True, False, False]
    assert c.allowed_mask(WHO, exclude_ids=["b"]).tolist() == [True, False, True]
    with pytest.raises(CorpusError):
        c.visible_mask("u1")  # type: ignore[arg-type]


def test_rows_shadowed_by_newer_corpora_whatever_their_state():
    """The rows a newer corpus (the delta) hides are found once per set of newer corpora and
    found again when the delta changes; masking them is masking their ids."""
    old = corpus_of([item("a", "t", "x"), item("b", "t", "y"), item("c", "t", "z")])
    delta = corpus_of([item("b", "t", "y2"), item("z", "t", "new")])
    gone = corpus_of([item("c", "t", "z", archived=True)])
    first = old.rows_shadowed_by([delta])
    assert first.tolist() == [1] and old.rows_shadowed_by([delta]) is first
    assert old.rows_shadowed_by([delta, gone]).tolist() == [1, 2]
    assert old.rows_shadowed_by([]).tolist() == []
    rows = old.rows_shadowed_by([delta, gone])
    assert (old.allowed_mask(WHO, exclude_rows=rows) == old.allowed_mask(WHO, exclude_ids=["b", "z", "c"])).all()
    assert old.allowed_mask(WHO, exclude_rows=rows).tolist() == [True, False, False]


# -- construction errors and the empty corpus ----------------------------------------------


def test_bad_vectors_or_index_raise_corpus_error():
    items = [item("a", "t", "x"), item("b", "t", "y")]
    with pytest.raises(CorpusError, match="shape"):
        MemoryCorpus(items, np.zeros((3, 8), np.float32))
    with pytest.raises(CorpusError, match="NaN"):
        MemoryCorpus(items, np.full((2, 8), np.nan, np.float32))
    index = faiss.IndexIDMap2(faiss.IndexFlatIP(8))
    with pytest.raises(CorpusError, match="index holds"):
        MemoryCorpus(items, np.zeros((2, 8), np.float32), index)
    with pytest.raises(CorpusError, match="MemoryItem"):
        MemoryCorpus([{"id": "a"}])  # type: ignore[list-item]


def test_empty_corpus_searches_nothing():
    c = MemoryCorpus.empty()
    assert len(c) == 0 and c.source == "delta"
    assert c.visible_mask(WHO).tolist() == []
    rows, sims = c.dense_search(np.ones(4, np.float32), c.visible_mask(WHO), 5)
    assert len(rows) == 0 and len(sims) == 0
    assert c.lexical_scores(["x"]) is None


def test_vectors_are_rebuilt_from_an_index_when_not_given():
    items = [item(f"i{n}", "t", f"word{n} alpha") for n in range(5)]
    vecs = embed([f"{i.title} {i.content}" for i in items])
    index = faiss.IndexIDMap2(faiss.IndexFlatIP(vecs.shape[1]))
    index.add_with_ids(vecs, np.arange(5, dtype=np.int64))
    c = MemoryCorpus(items, None, index)
    assert np.allclose(c.vectors, vecs)


# -- dense: FAISS paths agree with the exact path ------------------------------------------


def _store(n: int = 300) -> tuple[list[MemoryItem], np.ndarray]:
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(60)]
    people = [Identity(user_id=f"u{i}", project_id=f"p{i % 3}", org_id="o1") for i in range(4)]
    items = []
    for i in range(n):
        who = people[i % 4]
        kind = ("project", "user", "org", "session")[i % 4]
        words = " ".join(rng.choice(vocab, size=6))
        items.append(item(f"m{i:04d}", f"note {i}", words, Scope.for_identity(kind, who)))
    return items, embed([f"{i.title} {i.content}" for i in items])


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_faiss_search_matches_exact_search_and_respects_the_selector(kind):
    items, vecs = _store()
    dim = vecs.shape[1]
    inner = (faiss.IndexFlatIP(dim) if kind == "flat"
             else faiss.IndexHNSWFlat(dim, 16, faiss.METRIC_INNER_PRODUCT))
    if kind == "hnsw":
        inner.hnsw.efConstruction = 200
    index = faiss.IndexIDMap2(inner)
    index.add_with_ids(vecs, np.arange(len(items), dtype=np.int64))
    exact = MemoryCorpus(items, vecs)
    # exact_max_rows=0 forces the FAISS path whenever an index is present.
    via_faiss = MemoryCorpus(items, vecs, index, exact_max_rows=0, hnsw_ef_search=400, audience_scan_max_rows=0)
    who = Identity(user_id="u1", project_id="p1", org_id="o1")
    allowed = exact.visible_mask(who)
    assert 0 < allowed.sum() < len(items)
    for q in range(0, 300, 37):
        query = embed([items[q].content + " w3"])[0]
        r_exact, s_exact = exact.dense_search(query, allowed, 5)
        r_faiss, s_faiss = via_faiss.dense_search(query, allowed, 5)
        # ...and the answer really came from FAISS, not from the exact fallback.
        direct = via_faiss._faiss_search(query, allowed, int(allowed.sum()), 5)
        assert direct is not None and direct[0].tolist() == r_faiss.tolist()
        assert allowed[r_faiss].all()  # the selector never lets an invisible row through
        assert r_faiss.tolist() == r_exact.tolist()
        assert np.allclose(s_faiss, s_exact)


def test_audience_scan_finds_the_exact_top_k_within_the_callers_mask(monkeypatch):
    monkeypatch.setattr(corpus_module, "AUDIENCE_CODES_MIN_ROWS", 100)  # code the test's audiences
    items, vecs = _store(600)
    index = faiss.IndexIDMap2(faiss.IndexHNSWFlat(vecs.shape[1], 16, faiss.METRIC_INNER_PRODUCT))
    index.add_with_ids(vecs, np.arange(len(items), dtype=np.int64))
    exact = MemoryCorpus(items, vecs)
    scan = MemoryCorpus(items, vecs, index, exact_max_rows=0)
    monkeypatch.setattr(scan, "_faiss_search", lambda *a: pytest.fail("the filtered index was searched"))
    codes = scan.audience_codes
    assert codes is not None and sum(c is not None for c in codes.codes) >= 2
    who = Identity(user_id="u1", project_id="p1", org_id="o1")
    allowed = exact.visible_mask(who)
    holes = allowed.copy()
    holes[np.flatnonzero(allowed)[::3]] = False  # a filter takes part of each audience out
    for mask in (allowed, holes):
        for q in range(0, 600, 53):
            query = embed([items[q].content + " w3"])[0]
            r_exact, s_exact = exact.dense_search(query, mask, 8)
            for r_scan, s_scan in (scan.dense_search(query, mask, 8, who), scan.dense_search(query, mask, 8)):
                assert mask[r_scan].all()  # never a row outside the caller's mask
                assert r_scan.tolist() == r_exact.tolist()
                assert np.allclose(s_scan, s_exact)


def test_dense_ties_break_by_id():
    items = [item(i, "same", "identical text") for i in ("c", "a", "b")]
    c = corpus_of(items)
    rows, _ = c.dense_search(embed(["identical text same"])[0], c.visible_mask(WHO), 3)
    assert [c.ids[r] for r in rows] == ["a", "b", "c"]


def test_query_of_wrong_dimension_is_rejected():
    c = corpus_of([item("a", "t", "x")])
    with pytest.raises(CorpusError, match="dim"):
        c.dense_search(np.ones(3, np.float32), c.visible_mask(WHO), 1)


# -- labels, links, palace, summaries --------------------------------------------------------


def test_neighbours_follow_links_entities_tags_and_palace_rooms():
    items = [
        item("a", "A", "x", entities=["DuckDB"], tags=["storage"],
             links=[Link(rel="supports", to="b")],
             metadata={"palace": {"domain": "loci", "room": "infra", "shelf": "fact", "card": "a"}}),
        item("b", "B", "y"),
        item("c", "C", "z", entities=["duckdb"]),
        item("d", "D", "w", tags=["Storage"]),
        item("e", "E", "v", metadata={"palace": "loci/infra/fact/e"}),
        item("f", "F", "u", links=[Link(rel="references", to="a")]),
        item("g", "G", "t"),
        item("h", "H", "s", scope=Scope(kind="user", user_id="someone-else"), entities=["duckdb"]),
    ]
    c = corpus_of(items)
    got = c.neighbours(items[0], c.visible_mask(WHO))
    assert {c.ids[r]: how for r, how in got.items()} == {
        "b": "link", "f": "link", "c": "entity", "d": "tag", "e": "room"}


def test_explicit_palace_locations_override_metadata():
    items = [item("a", "A", "x", metadata={"palace": "loci/infra/fact/a"}), item("b", "B", "y")]
    c = corpus_of(items, locations=[PalaceLocation(item_id="a", domain="loci", room="ux",
                                                   shelf="fact", card="a"),
                                    PalaceLocation(item_id="b", domain="loci", room="ux",
                                                   shelf="fact", card="b")])
    assert c.room_of == {0: "loci/ux", 1: "loci/ux"}
    with pytest.raises(CorpusError):
        corpus_of(items, locations=["loci/ux"])  # type: ignore[list-item]


def test_label_matches_and_summary_coverage():
    items = [
        item("a", "A", "x", tags=["project phoenix"]),
        item("b", "B", "y", entities=["Phoenix"]),
        item("s", "Summary", "z", type="summary", provenance=Provenance(turn_refs=["D1:1", "D1:2"])),
    ]
    c = corpus_of(items)
    allowed = c.visible_mask(WHO)
    assert c.label_matches(label_ngrams("status of Project Phoenix?"), allowed) == {0: 1, 1: 1}
    assert c.summaries_covering(["D1:1"], allowed) == [2]
    assert c.summaries_covering(["D1:1", "D1:3"], allowed) == []


def test_label_counts_are_the_normalised_tags_and_entities_each_row_shares_with_the_query():
    """label_counts (from the tag and entity indexes) equals, per row, the size of the set of
    its normalised tags and entities that are query grams (a tag that is also an entity once)."""
    rng = np.random.default_rng(5)
    pool = ["Project_Phoenix", "project phoenix", "DuckDB", "duckdb", "Orion", "inbox", "", "WAL mode"]
    items = [item(f"i{n:02d}", f"Title {n}", f"Content {n}.", tags=list(rng.choice(pool, 2)),
                  entities=list(rng.choice(pool, 2))) for n in range(40)]
    c = corpus_of(items)
    grams = label_ngrams("What did project phoenix decide about duckdb and the wal mode?")
    rows = np.array([3, 0, 17, 39, 8, 8], np.int64)
    expected = [len(({normalise_label(x) for x in (*items[r].tags, *items[r].entities)} - {""}) & grams)
                for r in rows.tolist()]
    assert c.label_counts(rows, grams).tolist() == expected and max(expected) >= 2


def test_the_day_a_turn_was_said_is_read_on_the_askers_calendar() -> None:
    turns = [item(f"m{i}", "user", "hi", type="message", valid_from=at)
             for i, at in enumerate(["2026-11-27T20:00:00Z", "2026-11-27T23:30:00-08:00"])]
    corpus = MemoryCorpus(turns)
    friday, saturday = date(2026, 11, 27).toordinal(), date(2026, 11, 28).toordinal()
    assert corpus.said_days().tolist() == [friday, saturday]  # UTC's days
    assert corpus.said_days(9 * 3600).tolist() == [saturday, saturday]  # Tokyo's
    assert corpus.said_days(-8 * 3600).tolist() == [friday, friday]  # Los Angeles'
