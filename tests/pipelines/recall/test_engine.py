"""RecallEngine: determinism, filters, scope isolation and priority, conflicts, always-inject,
summaries, snapshot + delta, thresholds, modes, degradation and input errors."""

from __future__ import annotations

import hashlib
import json
import random

import faiss
import msgspec
import numpy as np
import pytest

from pipelines.embedders import Embedder
from pipelines.materialize import DISAGREES_WITH, HELD_AGAINST
from pipelines.recall import (
    MemoryCorpus,
    RecallEngine,
    RecallError,
    RecallOptions,
    estimate_tokens,
    tokenize,
)
from pipelines.records import Identity, Link, MemoryItem, Provenance, Scope
from pipelines.settings import Settings

NOW = "2025-06-01T00:00:00+00:00"
T0 = "2025-01-01T00:00:00+00:00"
ME = Identity(user_id="u1", project_id="p1", session_id="s1", org_id="o1")
DIM = 64


class BagOfWordsEmbedder(Embedder):
    """Deterministic fake: each token hashed into a signed bucket, rows L2-normalised."""

    name = "bow-64"
    dim = DIM

    def embed(self, texts):
        out = np.zeros((len(texts), DIM), np.float32)
        for i, text in enumerate(texts):
            for tok in tokenize(text):
                h = int(hashlib.sha256(tok.encode()).hexdigest(), 16)
                out[i, h % DIM] += 1.0 if (h >> 100) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


class BrokenEmbedder(BagOfWordsEmbedder):
    def embed(self, texts):
        raise ConnectionError("embedding server down")


EMB = BagOfWordsEmbedder()


def mem(id_: str, title: str, content: str, *, kind: str = "project", who: Identity = ME,
        **kw) -> MemoryItem:
    kw.setdefault("provenance", Provenance(source_id=f"turn-{id_}"))
    kw.setdefault("confidence", 0.9)
    return MemoryItem(id=id_, tier=kw.pop("tier", "stm"), type=kw.pop("type", "fact"),
                      title=title, content=content, scope=Scope.for_identity(kind, who),
                      created_at=kw.pop("created_at", T0), updated_at=kw.pop("updated_at", T0),
                      **kw)


def corpus(items: list[MemoryItem], source: str = "snapshot", **kw) -> MemoryCorpus:
    vecs = EMB.embed([f"{i.title}\n{i.content}" for i in items]) if items else None
    return MemoryCorpus(items, vecs, source=source, **kw)


def engine(options: RecallOptions | None = None, embedder=EMB, **settings) -> RecallEngine:
    return RecallEngine(Settings(**settings), embedder, options)


def store() -> list[MemoryItem]:
    return [
        mem("inbox", "Inbox storage", "The inbox is SQLite in WAL mode.", tags=["inbox", "storage"],
            tier="ltm", type="decision"),
        mem("wh", "Warehouse engine", "The warehouse is a DuckDB file.", tags=["warehouse",
            "storage"], entities=["DuckDB"]),
        mem("snap", "Snapshot publish", "Snapshots publish by replacing CURRENT atomically.",
            tags=["snapshot"]),
        mem("proxy", "Proxy port", "The Ollama proxy listens on port 11435.", tags=["proxy"],
            type="constraint"),
        mem("hnsw", "Vector index", "HNSW above fifty thousand vectors, flat inner product below.",
            tags=["faiss"], entities=["FAISS"]),
        mem("cron", "Schedule", "Consolidation runs hourly from a cron schedule.", tags=["dagster"]),
        mem("inbox2", "Inbox workers", "Many workers append to the inbox at once.", tags=["inbox"]),
    ]


def ids(result) -> list[str]:
    return [h.item.id for h in result.hits]


# -- determinism and ranking -------------------------------------------------------------------


def test_same_results_twice_and_from_two_freshly_built_corpora():
    queries = ["what storage does the inbox use?", "duckdb warehouse", "proxy port"]
    a, b = corpus(store()), corpus(store())
    eng = engine()
    for q in queries:
        r1 = eng.recall(q, ME, [a], now=NOW)
        r2 = eng.recall(q, ME, [a], now=NOW)
        r3 = engine().recall(q, ME, [b], now=NOW)
        assert r1.hits, q
        for other in (r2, r3):
            assert ids(other) == ids(r1)
            assert [h.score for h in other.hits] == [h.score for h in r1.hits]
            assert other.injection == r1.injection
            assert other.catalog == r1.catalog


def test_ranking_is_stable_under_corpus_order_and_prefers_fuller_matches():
    items = store()
    shuffled = items[:]
    random.Random(3).shuffle(shuffled)
    r1 = engine().recall("inbox storage sqlite", ME, [corpus(items)], now=NOW)
    r2 = engine().recall("inbox storage sqlite", ME, [corpus(shuffled)], now=NOW)
    assert ids(r1) == ids(r2)
    assert ids(r1)[0] == "inbox"  # matches all three terms (and two tags)
    assert ids(r1).index("inbox") < ids(r1).index("inbox2")
    scores = [h.score for h in r1.hits]
    assert scores == sorted(scores, reverse=True)


def test_tag_tier_type_and_scope_filters():
    c = corpus(store())
    eng = engine()
    r = eng.recall("storage inbox warehouse", ME, [c], tags=["storage"], now=NOW)
    assert set(ids(r)) == {"inbox", "wh"}
    r = eng.recall("storage inbox warehouse", ME, [c], tags=["storage", "inbox"], now=NOW)
    assert ids(r) == ["inbox"]
    r = eng.recall("storage inbox warehouse", ME, [c], tags=["warehouse", "inbox"], now=NOW,
                   options=RecallOptions(tag_match="any"))
    assert set(ids(r)) == {"inbox", "wh", "inbox2"}
    r = eng.recall("inbox", ME, [c], tier="ltm", now=NOW)
    assert ids(r) == ["inbox"]
    r = eng.recall("proxy port inbox", ME, [c], type="constraint", now=NOW)
    assert ids(r) == ["proxy"]
    r = eng.recall("inbox", ME, [c], scope="session", now=NOW)
    assert ids(r) == [] and not r.found


# -- scope ---------------------------------------------------------------------------------------


def test_scope_isolation_randomised():
    rng = random.Random(11)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda"]
    people = [Identity(user_id=f"u{u}", project_id=f"p{p}", session_id=f"s{s}", org_id=f"o{o}")
              for u in range(4) for p in range(3) for s in range(2) for o in range(2)]
    items = []
    for n in range(400):
        owner = rng.choice(people)
        kind = rng.choice(["session", "project", "user", "org"])
        text = " ".join(rng.choices(words, k=4))
        items.append(mem(f"id{n:04d}", text.split()[0], text, kind=kind, who=owner,
                         tags=[rng.choice(words)], importance=rng.choice([5, 9, 10]),
                         links=[Link(rel="contradicts", to=f"id{rng.randrange(400):04d}")]))
    snap = corpus(items[:350])
    delta = corpus(items[350:], source="delta")
    eng = engine()
    returned = 0
    for _ in range(40):
        who = rng.choice(people)
        q = " ".join(rng.choices(words, k=2))
        mode = rng.choice(["inject", "catalog", "hybrid"])
        r = eng.recall(q, who, [snap, delta], mode=mode, trace=True, now=NOW)
        visible = {it.id for it in items if it.scope.visible_to(who)}
        invisible = {it.id for it in items} - visible
        shown = set(r.used_ids) | {e["id"] for e in r.catalog["memory_catalog"]}
        shown |= {s["id"] for s in r.suppressed}
        assert shown <= visible
        text = r.injection + json.dumps(r.trace) + json.dumps(msgspec.to_builtins(r.suppressed))
        assert not any(i in text for i in invisible)
        returned += len(r.used_ids)
    assert returned > 40  # the test is not vacuous: visible memories were found


def test_scope_priority_session_project_user_org():
    items = [mem(f"{kind}-item", "Deploy target", "We deploy to the staging cluster.",
                 kind=kind) for kind in ("org", "user", "project", "session")]
    c = corpus(items)
    r = engine().recall("deploy staging cluster", ME, [c], mode="catalog", now=NOW)
    assert ids(r) == ["session-item", "project-item", "user-item", "org-item"]
    assert r.hits[0].score > r.hits[1].score > r.hits[2].score > r.hits[3].score
    # Without the boost the scores tie and the scope rank still breaks the tie.
    r = engine(RecallOptions(scope_priority=False)).recall(
        "deploy staging cluster", ME, [c], mode="catalog", now=NOW)
    assert ids(r) == ["session-item", "project-item", "user-item", "org-item"]
    assert len({h.score for h in r.hits}) == 1


# -- conflicts -----------------------------------------------------------------------------------


def test_conflict_resolved_by_confidence():
    items = [mem("a", "Inbox engine", "The inbox uses SQLite.", confidence=0.95),
             mem("b", "Inbox engine", "The inbox uses Postgres.", confidence=0.8)]
    r = engine().recall("inbox engine", ME, [corpus(items)], now=NOW)
    assert ids(r) == ["a"]
    assert r.hits[0].conflict and r.hits[0].conflict_with == ["b"]
    assert r.hits[0].resolution == "confidence"
    assert r.suppressed == [{"id": "b", "reason": "conflict: lost on confidence", "winner": "a"}]
    assert "Postgres" not in r.injection and "CONFLICT" not in r.injection


def test_conflict_resolved_by_recency_at_equal_confidence():
    items = [mem("old", "Inbox engine", "The inbox uses Postgres.",
                 updated_at="2025-01-01T00:00:00+00:00"),
             mem("new", "Inbox engine", "The inbox uses SQLite.",
                 updated_at="2025-03-01T00:00:00+00:00")]
    r = engine().recall("inbox engine", ME, [corpus(items)], now=NOW)
    assert ids(r) == ["new"] and r.hits[0].resolution == "recency"
    assert r.suppressed[0]["id"] == "old"


def test_conflict_recency_reads_update_times_from_the_corpus(monkeypatch):
    """Recall resolves on the update times its corpora read at load (no parsing per recall):
    the same outcomes as parsing each member's `updated_at`, a missing one the oldest."""
    from pipelines.recall import conflicts

    items = [mem("old", "Inbox engine", "The inbox uses Postgres.", updated_at="2025-01-01T00:00:00+00:00"),
             mem("new", "Inbox engine", "The inbox uses SQLite.", updated_at="2025-03-01T00:00:00+00:00"),
             mem("none", "Inbox engine", "The inbox uses DuckDB.", updated_at="")]
    parsed = conflicts.resolve(items)
    c = corpus(items)

    def refuse(*args, **kwargs):
        raise AssertionError("update time parsed during recall")

    monkeypatch.setattr(conflicts.resolution, "timestamp", refuse)
    monkeypatch.setattr(conflicts.turns, "timestamp", refuse)
    r = engine().recall("inbox engine", ME, [c], now=NOW)
    assert ids(r) == ["new"] and r.hits[0].resolution == "recency"
    assert {s["id"]: s["reason"] for s in r.suppressed} == {
        i: f"conflict: lost on {o.resolution}" for i, o in parsed.items() if o.suppressed}


def test_ambiguous_conflict_injects_both_with_a_flag():
    items = [mem("a", "Inbox engine", "The inbox uses SQLite."),
             mem("b", "Inbox engine", "The inbox uses Postgres.")]
    r = engine().recall("inbox engine", ME, [corpus(items)], mode="inject", now=NOW)
    assert set(ids(r)) == {"a", "b"}
    assert all(h.resolution == "ambiguous" and h.conflict for h in r.hits)
    assert "| CONFLICT=b]" in r.injection and "| CONFLICT=a]" in r.injection
    assert "disagree" in r.injection


def test_flag_mode_keeps_every_member_flagged():
    items = [mem("a", "Inbox engine", "The inbox uses SQLite.", confidence=0.95),
             mem("b", "Inbox engine", "The inbox uses Postgres.", confidence=0.8)]
    r = engine(RecallOptions(conflict_mode="flag")).recall(
        "inbox engine", ME, [corpus(items)], mode="hybrid", now=NOW)
    assert set(ids(r)) == {"a", "b"} and not r.suppressed
    assert all(h.resolution == "flagged" for h in r.hits)


def test_contradicts_link_pulls_in_and_resolves_the_partner():
    items = [mem("claim", "Retry policy", "Retries use exponential backoff.", confidence=0.75),
             mem("fix", "Correction", "Backoff was replaced: retries are now fixed at 1 s.",
                 confidence=0.95, links=[Link(rel="contradicts", to="claim")]),
             mem("noise", "Unrelated", "Something else entirely.")]
    r = engine().recall("retry policy", ME, [corpus(items)], now=NOW, trace=True)
    assert ids(r) == ["fix"]  # pulled in by the link, wins on confidence
    assert r.suppressed[0]["id"] == "claim"
    stages = [t["stage"] for t in r.trace]
    assert "conflicts" in stages


def test_trace_entries_are_built_only_when_asked(monkeypatch):
    """With `trace` the scope, candidates and deliver stages leave their entries; without it
    none is built (the scope's entry counts every allowed row of every corpus)."""
    from pipelines.recall.candidates import VisibleCorpora

    items = [mem("a", "Retry policy", "Retries use exponential backoff."),
             mem("b", "Unrelated", "Something else entirely.")]
    on = engine().recall("retry policy", ME, [corpus(items)], now=NOW, trace=True)
    assert {"scope", "candidates", "deliver"} <= {t["stage"] for t in on.trace}

    def refuse(self):
        raise AssertionError("trace entry built with trace off")

    monkeypatch.setattr(VisibleCorpora, "trace", refuse)
    off = engine().recall("retry policy", ME, [corpus(items)], now=NOW)
    assert off.trace is None and ids(off) == ids(on)


def test_conflict_partners_held_only_by_another_corpus_are_still_pulled_in():
    """A claim alone in its own corpus (no partner link, its title held by it only) skips the
    partner search there, but a delta that shares its title, or links to it, still brings
    the partner in."""
    snap = corpus([mem("old", "Deploy window", "Deploys run on Tuesday at 10:00.", confidence=0.8),
                   mem("other", "Backup window", "Backups run nightly at 02:00.")])
    assert not snap.may_have_partners(snap.row_of["old"])
    same_title = corpus([mem("new", "Deploy window", "Deploys run on Thursday at 15:00.", confidence=0.95)],
                        source="delta")
    r = engine().recall("tuesday", ME, [snap, same_title], now=NOW)  # matches "old" only
    assert "new" in ids(r) and {"id": "old", "reason": "conflict: lost on confidence", "winner": "new"} in r.suppressed
    linked = corpus([mem("fix", "Correction", "Deploys moved to another weekday.", confidence=0.95,
                         links=[Link(rel="contradicts", to="old")])], source="delta")
    r = engine().recall("tuesday", ME, [snap, linked], now=NOW)
    assert "fix" in ids(r) and r.suppressed and r.suppressed[0]["id"] == "old"


def test_a_warmed_corpus_knows_which_rows_may_have_partners_as_asking_each_row_would():
    """`warm` reads for every row whether it can have a conflict partner (a partner link
    either way, a title shared by 2..MAX_TITLE_PARTNERS rows), so a recall meeting a row
    for the first time does not read it: the same answers as a corpus asked row by row."""
    items = [mem("a", "Deploy window", "Deploys run on Tuesday."), mem("b", "Deploy window", "Deploys run on Friday."),
             mem("c", "Backup window", "Backups run nightly."),
             mem("d", "Fix", "Backups moved.", links=[Link(rel="supersedes", to="c")]),
             mem("e", "Note", "Unrelated.", links=[Link(rel="related", to="c")]), mem("f", "Alone", "Nothing else.")]
    lazy, warmed = corpus(items), corpus(items).warm()
    assert len(warmed._partnered_cache) == len(items)
    assert warmed.claims._gathered is not None and lazy.claims._gathered is None  # `take` laid out at load
    assert [c.items for c in (lazy.claims.take([3, 0]), warmed.claims.take([3, 0]))] == [[items[3], items[0]]] * 2
    asked = [lazy.may_have_partners(row) for row in range(len(items))]
    assert asked == [warmed.may_have_partners(row) for row in range(len(items))]
    assert asked == [True, True, True, True, False, False]


def test_a_warmed_corpus_reads_its_turns_texts_once_and_recalls_as_a_lazy_one():
    """`warm` reads each raw turn's small-talk verdict and content hash (`_TurnTexts`), so a
    recall does not run a regex over turns it meets for the first time: question copies,
    copies of the conversation, small talk and repeated turns are left out exactly as by a
    corpus that reads each turn when asked."""
    turns = [mem("m1", "u1", "Which port does the proxy use?", type="message"),
             mem("m2", "u1", "ok thanks!", type="message"),
             mem("m3", "u1", "The proxy uses port 11435 now.", type="message"),
             mem("m4", "u1", "the PROXY uses port 11435 now", type="message"),
             mem("m5", "u1", "Proxy port moved, see the runbook.", type="message"),
             mem("f1", "Proxy port", "The Ollama proxy listens on port 11435.")]
    lazy, warmed = corpus(turns), corpus(turns).warm()
    texts = warmed._turn_texts
    assert texts is not None and texts.read.tolist() == [True] * 5 + [False]  # turns only
    assert texts.small_talk.tolist() == [False, True, False, False, False, False]
    assert [warmed.content_hash(r) for r in range(6)] == [hash(lazy.content_key(r)) for r in range(6)]
    assert warmed.content_in(3, {"the proxy uses port 11435 now"}) and not warmed.content_in(3, {"ok thanks"})

    def seen(c: MemoryCorpus, query: str, said: tuple[str, ...] = ()) -> tuple:
        r = engine().recall(query, ME, [c], now=NOW, trace=True, said=said)
        return ids(r), r.injection, r.suppressed, [t for t in r.trace if t["stage"] in ("candidates", "repeats")]

    for query, said in (("Which port does the proxy use?", ()),
                        ("proxy port", ("Proxy port moved, see the runbook.",))):
        assert seen(warmed, query, said) == seen(lazy, query, said)
    found = seen(warmed, "Which port does the proxy use?")
    dropped = {d["id"]: d["reason"] for d in found[3][0]["not_candidates"]}
    assert dropped.get("m1") == "an earlier copy of the question" and "m3" not in dropped
    assert any(t["stage"] == "repeats" for t in found[3])  # one of m3 / m4 kept


def test_same_title_same_content_is_not_a_conflict():
    items = [mem("a", "Inbox engine", "The inbox uses SQLite."),
             mem("b", "inbox  ENGINE", "the inbox uses sqlite")]
    r = engine().recall("inbox engine", ME, [corpus(items)], now=NOW)
    assert set(ids(r)) == {"a", "b"} and not any(h.conflict for h in r.hits)


# -- always-inject, summaries, snapshot + delta ------------------------------------------------


def test_conflict_stage_with_one_claim_among_the_candidates_changes_nothing(monkeypatch):
    """Fewer than two live claims: the conflict rule is skipped (no claim table taken) and the
    answer is the one recall gives with the conflict rule off."""
    from pipelines.recall.candidates import VisibleCorpora

    items = [mem("f1", "Proxy port", "The proxy listens on port 8080."),
             mem("m1", "u1", "the proxy port came up in standup", type="message"),
             mem("m2", "u1", "we talked about the proxy again", type="message")]
    c = corpus(items)
    off = engine(RecallOptions(conflicts=False)).recall("proxy port", ME, [c], now=NOW)

    def no_table(*_a, **_k):
        raise AssertionError("the claim table was taken for a single claim")

    monkeypatch.setattr(VisibleCorpora, "claims", no_table)
    on = engine().recall("proxy port", ME, [c], now=NOW, trace=True)
    assert [h.item.id for h in on.hits] == [h.item.id for h in off.hits] and "f1" in ids(on)
    assert [h.score for h in on.hits] == [h.score for h in off.hits]
    assert (on.injection, on.catalog, on.message) == (off.injection, off.catalog, off.message)
    assert not any(t.get("stage") == "conflicts" for t in on.trace)


def test_always_inject_visible_high_importance_items_only():
    stranger = Identity(user_id="u9", project_id="p9", org_id="o9")
    items = store() + [
        mem("rule", "Never store secrets", "Secrets are never written to memory.", importance=10),
        mem("theirs", "Their critical rule", "Not for you.", importance=10, who=stranger),
        mem("meh", "Minor", "Minor thing.", importance=7)]
    c = corpus(items)
    r = engine().recall("proxy port", ME, [c], mode="hybrid", now=NOW)
    assert ids(r)[0] == "rule" and r.hits[0].always
    assert r.injection.index("[MEMORY: rule") < r.injection.index("[MEMORY: proxy")
    assert "theirs" not in r.used_ids and "meh" not in r.used_ids
    # Nothing relevant: the rule is still injected, but the answer says nothing was found.
    r = engine().recall("zebra xylophone", ME, [c], mode="inject", now=NOW)
    assert r.used_ids == ["rule"] and not r.found
    assert r.message == "No memory found for 'zebra xylophone'. (1 always-on memory shown)"
    # A search (catalog mode) lists what matches, not the always-inject set.
    r = engine().recall("proxy port", ME, [c], mode="catalog", now=NOW)
    assert "rule" not in r.used_ids
    r = engine(RecallOptions(always_inject=False)).recall("proxy port", ME, [c], now=NOW)
    assert "rule" not in r.used_ids


def test_always_inject_takes_the_most_important_then_the_first_ids_of_many():
    """More always-inject candidates than are pulled in (4 x max_always_inject): the most
    important come first, then ids in order, whatever the row order (`MemoryCorpus.id_rank`)."""
    rules = [mem(f"rule-{n:02d}", f"Rule {n}", f"Standing rule number {n}.", importance=9) for n in range(40)]
    rules += [mem(f"top-{n}", f"Top rule {n}", f"Top standing rule {n}.", importance=10) for n in range(3)]
    random.Random(3).shuffle(rules)
    c = corpus(store() + rules)
    assert [c.ids[r] for r in np.argsort(c.id_rank)] == sorted(c.ids)
    r = engine().recall("zebra xylophone", ME, [c], mode="inject", now=NOW)
    assert ids(r)[:5] == ["top-0", "top-1", "top-2", "rule-00", "rule-01"]


def test_summary_outranks_the_messages_it_covers():
    items = [
        mem("t1", "Caroline", "Caroline went to the LGBTQ support group on Monday.",
            type="message", provenance=Provenance(turn_refs=["D1:3"])),
        mem("t2", "Melanie", "That sounds great, Caroline!", type="message",
            provenance=Provenance(turn_refs=["D1:4"])),
        mem("sum", "Session 1", "Caroline shared news; Melanie was supportive.", type="summary",
            provenance=Provenance(turn_refs=["D1:1", "D1:2", "D1:3", "D1:4"])),
    ]
    c = corpus(items)
    r = engine().recall("When did Caroline go to the LGBTQ support group?", ME, [c],
                        mode="catalog", now=NOW)
    assert ids(r).index("sum") < ids(r).index("t1")  # preferred...
    assert "summary_demotion" in r.hits[ids(r).index("t1")].components  # ...t1 demoted, kept
    off = engine(RecallOptions(summaries=False)).recall(
        "When did Caroline go to the LGBTQ support group?", ME, [c], mode="catalog", now=NOW)
    assert ids(off)[0] == "t1"


def test_delta_overrides_the_snapshot_for_the_same_id():
    snap = corpus(store())
    newer = mem("proxy", "Proxy port", "The Ollama proxy now listens on port 11500.",
                tags=["proxy"], type="constraint")
    delta = corpus([newer, mem("fresh", "Proxy auth", "The proxy requires a token.")],
                   source="delta")
    r = engine().recall("proxy port", ME, [snap, delta], now=NOW)
    hits = {h.item.id: h for h in r.hits}
    assert ids(r).count("proxy") == 1
    assert hits["proxy"].source == "delta" and "11500" in hits["proxy"].item.content
    assert "11435" not in r.injection
    assert hits["fresh"].source == "delta"
    # An archived delta version hides the snapshot copy as well.
    gone = msgspec.structs.replace(newer, archived=True)
    r = engine().recall("proxy port", ME, [snap, corpus([gone], source="delta")], now=NOW)
    assert "proxy" not in r.used_ids


# -- thresholds and modes -------------------------------------------------------------------------


def test_low_confidence_claims_are_catalogued_not_injected_but_messages_are_exempt():
    items = [mem("weak", "Cache size", "The cache holds 512 entries.", confidence=0.5),
             mem("turn", "Bob", "I think the cache holds 256 entries.", type="message",
                 confidence=0.3)]
    c = corpus(items)
    r = engine().recall("cache entries", ME, [c], mode="hybrid", now=NOW)
    by = {h.item.id: h for h in r.hits}
    assert by["weak"].delivery == "catalog" and by["weak"].low_confidence
    assert by["turn"].delivery == "inject" and not by["turn"].low_confidence
    assert "[MEMORY: weak" not in r.injection
    entry = next(e for e in r.catalog["memory_catalog"] if e["id"] == "weak")
    assert entry["low_confidence"] is True
    r = engine().recall("cache entries", ME, [c], mode="inject", now=NOW)
    assert r.used_ids == ["turn"]


def test_a_claim_held_in_quarantine_is_never_delivered_but_still_flags_what_it_contests():
    """Held for review (`metadata.verdict` quarantine): not injected, catalogued or a hit in
    any mode, even under a threshold low enough to inject it; a low-confidence claim the
    policy accepted is still catalogued. The held claim still takes part in the conflict
    stage: the claim it contradicts is marked as contested by it."""
    held = mem("held", "Cache size", "The cache holds 1024 entries.", confidence=0.5,
               metadata={"verdict": "quarantine", "rule_ids": ["soft.contradiction"]})
    unsure = mem("unsure", "Cache warmup", "The cache entries warm up at 06:00.", confidence=0.5,
                 metadata={"verdict": "quarantine", "rule_ids": ["soft.low_confidence"]})
    items = [held, unsure, mem("weak", "Cache note", "Cache entries are evicted hourly.", confidence=0.5),
             mem("rule", "Cache size", "The cache holds 512 entries.")]
    c = corpus(items)
    for mode in ("inject", "catalog", "hybrid"):
        r = engine(confidence_threshold=0.4).recall("cache size entries", ME, [c], mode=mode, now=NOW)
        shown = json.dumps([ids(r), r.injection, r.catalog])
        assert "held" not in shown and "unsure" not in shown and "weak" in shown, (mode, shown)
    r = engine().recall("cache size entries", ME, [c], mode="hybrid", now=NOW)
    by = {h.item.id: h for h in r.hits}
    assert by["weak"].low_confidence and by["rule"].conflict_with == ["held"], r.hits


def test_a_claim_held_against_one_consolidation_merged_still_says_a_change_waits():
    """A claim held for contradicting one (`held_against`) that consolidation then merged
    with its duplicate into a new item: the merged item, delivered, says a change waits,
    though the search never met the held claim (a tag filter leaves it out)."""
    held = mem("held", "Amoxicillin", "Leo takes 10 ml of amoxicillin twice a day.", confidence=0.5,
               who=Identity(user_id="jon", project_id=ME.project_id, session_id="j1", org_id=ME.org_id),
               metadata={"verdict": "quarantine", "rule_ids": ["soft.contradiction"], HELD_AGAINST: ["dose1"]})
    merged = mem("merged", "Leo amoxicillin dose", "Leo takes 5 ml of amoxicillin twice a day.",
                 tags=["medication"], metadata={"merged_from": ["dose1", "dose2"]})
    r = engine().recall("amoxicillin dose", ME, [corpus([held, merged, *store()])], mode="hybrid", now=NOW,
                        tags=["medication"])
    (hit,) = r.hits
    assert hit.item.id == "merged" and "a claim contradicting this memory by jon" in hit.pending_review, r.hits
    assert "PENDING_REVIEW" in r.injection and "10 ml" not in r.injection, r.injection


def test_a_claim_s_pending_review_is_looked_up_once_wherever_it_is_shown(monkeypatch):
    """Hybrid mode renders a claim for the block, its hit and its catalog entry: the held
    claims against it (an index lookup each, `VisibleCorpora.held_against`) are read once
    per claim, and every place says the same change waits."""
    from pipelines.recall.candidates import VisibleCorpora

    asked: list[str] = []
    looked_up = VisibleCorpora.held_against

    def counting(self, item):
        asked.append(item.id)
        return looked_up(self, item)

    monkeypatch.setattr(VisibleCorpora, "held_against", counting)
    held = mem("held", "Amoxicillin", "Leo takes 10 ml of amoxicillin twice a day.", confidence=0.5,
               metadata={"verdict": "quarantine", "rule_ids": ["soft.contradiction"], HELD_AGAINST: ["dose"]})
    dose = mem("dose", "Leo amoxicillin dose", "Leo takes 5 ml of amoxicillin twice a day.", tags=["medication"])
    other = mem("other", "Leo amoxicillin course", "Leo takes amoxicillin for ten days.", tags=["medication"])
    r = engine(catalog_k=10).recall("amoxicillin dose", ME, [corpus([held, dose, other])], mode="hybrid",
                                    now=NOW, tags=["medication"])
    assert sorted(asked) == sorted(set(asked)) and "dose" in asked, asked
    by = {h.item.id: h for h in r.hits}
    assert "PENDING_REVIEW" in r.injection and by["dose"].pending_review, (r.injection, r.hits)
    assert by.get("other") is None or not by["other"].pending_review


def test_modes_and_the_injection_budget():
    c = corpus(store())
    q = "storage inbox warehouse snapshot proxy schedule index"
    inj = engine().recall(q, ME, [c], mode="inject", now=NOW)
    assert inj.injection.startswith("PERSISTENT MEMORY (READ-ONLY)")
    assert inj.catalog == {"memory_catalog": []}
    assert all(h.delivery == "inject" for h in inj.hits)
    cat = engine(catalog_k=3).recall(q, ME, [c], mode="catalog", now=NOW)
    assert cat.injection == "" and len(cat.catalog["memory_catalog"]) == 3
    assert set(cat.catalog["memory_catalog"][0]) >= {"id", "title", "tags", "tier", "type",
                                                      "score"}
    assert [e["id"] for e in cat.catalog["memory_catalog"]] == cat.used_ids
    small = engine(inject_budget_tokens=160).recall(q, ME, [c], mode="hybrid", now=NOW)
    injected = [h.item.id for h in small.hits if h.delivery == "inject"]
    catalogued = [h.item.id for h in small.hits if h.delivery == "catalog"]
    assert injected and catalogued
    assert estimate_tokens(small.injection) <= 160
    assert small.used_ids == [h.item.id for h in small.hits]
    assert set(small.used_ids) == set(injected + catalogued)
    assert [e["id"] for e in small.catalog["memory_catalog"]] == catalogued


def test_empty_result_says_so_explicitly():
    r = engine().recall("zebra xylophone", ME, [corpus(store())], now=NOW)
    assert not r.found and r.hits == [] and r.used_ids == []
    assert r.injection == "" and r.catalog == {"memory_catalog": []}
    assert r.message == "No memory found for 'zebra xylophone'."
    r = engine().recall("anything", ME, [MemoryCorpus.empty()], now=NOW)
    assert not r.found and r.message.startswith("No memory found for")


# -- the FAISS path through the engine ---------------------------------------------------------


def test_engine_gives_the_same_hits_through_faiss_and_exact_search():
    items = store()
    vecs = EMB.embed([f"{i.title}\n{i.content}" for i in items])
    index = faiss.IndexIDMap2(faiss.IndexFlatIP(DIM))
    index.add_with_ids(vecs, np.arange(len(items), dtype=np.int64))
    exact = MemoryCorpus(items, vecs)
    via_faiss = MemoryCorpus(items, vecs, index, exact_max_rows=0)
    for q in ("inbox storage", "duckdb", "port"):
        a = engine().recall(q, ME, [exact], now=NOW)
        b = engine().recall(q, ME, [via_faiss], now=NOW)
        assert ids(a) == ids(b) and [h.score for h in a.hits] == [h.score for h in b.hits]


# -- ablation, degradation, errors ----------------------------------------------------------------


def test_components_can_be_switched_off():
    c = corpus(store())
    q = "inbox storage"
    full = engine().recall(q, ME, [c], now=NOW, trace=True)
    assert any(h.components.get("rank_dense") for h in full.hits)
    assert any(t["stage"] == "qstar" for t in full.trace)
    no_dense = engine(RecallOptions(dense=False)).recall(q, ME, [c], now=NOW, trace=True)
    assert no_dense.hits and all(h.components["dense"] == 0 for h in no_dense.hits)
    assert not any("rank_dense" in h.components for h in no_dense.hits)
    no_lex = engine(RecallOptions(lexical=False, labels=False)).recall(q, ME, [c], now=NOW)
    assert no_lex.hits and all(h.components["lexical"] == 0 for h in no_lex.hits)
    no_q = engine(RecallOptions(qstar=False)).recall(q, ME, [c], now=NOW, trace=True)
    assert not any(t["stage"] == "qstar" for t in no_q.trace)
    no_rec = engine(RecallOptions(recency=False)).recall(q, ME, [c], now=NOW)
    assert all("recency" not in h.components for h in no_rec.hits)
    rrf = engine(RecallOptions(fusion="rrf")).recall(q, ME, [c], now=NOW)
    assert ids(rrf)[0] == "inbox"


def test_embedder_outage_degrades_to_lexical():
    r = engine(embedder=BrokenEmbedder()).recall("inbox storage", ME, [corpus(store())], now=NOW)
    assert r.found and ids(r)[0] == "inbox"
    assert r.degraded and "embedding server down" in r.degraded[0]


def test_embedder_of_another_dimension_is_a_clear_error():
    class Wide(BagOfWordsEmbedder):
        def embed(self, texts):
            return np.ones((len(texts), DIM * 2), np.float32)

    with pytest.raises(RecallError, match="dim"):
        engine(embedder=Wide()).recall("inbox", ME, [corpus(store())], now=NOW)


@pytest.mark.parametrize("kwargs,needle", [
    ({"query": 42}, "query"),
    ({"identity": "u1"}, "identity"),
    ({"corpora": ["not a corpus"]}, "MemoryCorpus"),
    ({"mode": "shout"}, "mode"),
    ({"k": 0}, "k"),
    ({"k": True}, "k"),
    ({"tier": "forever"}, "tier"),
    ({"type": "gossip"}, "type"),
    ({"scope": "galaxy"}, "scope"),
    ({"tags": [3]}, "tags"),
    ({"now": "yesterday"}, "now"),
])
def test_bad_inputs_raise_recall_error(kwargs, needle):
    args = {"query": "inbox", "identity": ME, "corpora": [corpus(store())]}
    args.update(kwargs)
    query, who, corpora = args.pop("query"), args.pop("identity"), args.pop("corpora")
    with pytest.raises(RecallError, match=needle):
        engine().recall(query, who, corpora, **args)


def test_bad_options_raise_recall_error():
    with pytest.raises(RecallError):
        RecallOptions(fusion="max")
    with pytest.raises(RecallError):
        RecallOptions(conflict_mode="ignore")
    with pytest.raises(RecallError):
        RecallEngine(object(), EMB)  # type: ignore[arg-type]


def test_result_serialises_and_timings_are_reported():
    r = engine().recall("inbox storage", ME, [corpus(store())], trace=True, now=NOW)
    data = msgspec.json.decode(msgspec.json.encode(r))
    assert data["used_ids"] == r.used_ids
    assert {"scope", "embed", "candidates", "score", "qstar", "render", "total"} <= set(
        r.timings_ms)


# -- Q* inside the engine ------------------------------------------------------------------------


def test_qstar_adds_an_item_for_an_uncovered_question_entity():
    items = [mem(f"w{i}", f"Inbox workers {i}", f"Inbox workers append events, batch {i}.")
             for i in range(6)]
    items.append(mem("duck", "Analytics", "Analytics queries run on duckdb."))
    c = corpus(items)
    q = "inbox workers append events duckdb"
    off = engine(RecallOptions(qstar=False)).recall(q, ME, [c], k=4, now=NOW)
    assert "duck" not in off.used_ids and len(off.used_ids) == 4
    on = engine().recall(q, ME, [c], k=4, now=NOW, trace=True)
    assert "duck" in on.used_ids and len(on.used_ids) == 4  # k is still respected
    hit = next(h for h in on.hits if h.item.id == "duck")
    assert hit.components["qstar_added"] == 1.0
    stage = next(t for t in on.trace if t["stage"] == "qstar")
    assert stage["added"] == ["duck"] and stage["best_score"] > 0


def test_qstar_verify_drops_contested_items_without_a_pointer():
    items = [mem("ok", "Cache size", "The cache holds 512 entries.", validation="verified"),
             mem("bad", "Cache eviction", "The cache evicts entries randomly.",
                 validation="contested")]
    c = corpus(items)
    off = engine(RecallOptions(qstar=False)).recall("cache entries", ME, [c], now=NOW)
    assert set(off.used_ids) == {"ok", "bad"}
    on = engine().recall("cache entries", ME, [c], now=NOW)
    assert on.used_ids == ["ok"]
    assert {"id": "bad", "reason": "qstar verify: weak provenance"} in on.suppressed


def test_a_delta_without_vectors_is_still_searched_lexically():
    snap = corpus(store())
    delta = MemoryCorpus([mem("fresh", "Proxy auth", "The proxy requires a bearer token.")],
                         None, source="delta")
    r = engine().recall("proxy bearer token", ME, [snap, delta], now=NOW)
    assert r.used_ids[0] == "fresh" and r.hits[0].source == "delta"
    assert r.hits[0].components["dense"] == 0.0


# -- measured ideas, off by default (bench ablation rows) -----------------------------------------


def turn(id_: str, speaker: str, content: str, session: str, seq: int) -> MemoryItem:
    return mem(id_, speaker, content, kind="user", type="message", entities=[speaker],
               provenance=Provenance(source_id=f"turn-{id_}", turn_refs=[id_]),
               metadata={"session_id": session, "inbox_seq": seq})


def chat() -> list[MemoryItem]:
    return [
        turn("a1", "Ann", "We went camping at the lake with the kids.", "s-a", 1),
        turn("a2", "Bob", "Camping at the lake sounds lovely.", "s-a", 2),
        turn("a3", "Ann", "The lake camping trip was our best yet.", "s-a", 3),
        turn("b1", "Ann", "Next summer we go camping in the forest.", "s-b", 4),
        turn("c1", "Bob", "I painted the fence blue.", "s-c", 5),
    ]


def hit_ids(result) -> list[str]:
    return [h.item.id for h in result.hits]


def test_speaker_link_boosts_the_turns_of_the_named_speaker():
    c = corpus(chat())
    question = "What lake camping trip did Bob talk about?"
    # The name in the query vector too, so the plain ranking holds Bob's turns low.
    plain = engine().recall(question, ME, c, mode="catalog", k=5,
                            options=RecallOptions(qstar=False, dense_without_speakers=False))
    linked = engine().recall(question, ME, c, mode="catalog", k=5,
                             options=RecallOptions(qstar=False, w_speaker=0.5, dense_without_speakers=False))
    before = {h.item.id: h.score for h in plain.hits}
    after = {h.item.id: h for h in linked.hits}
    for item_id, hit in after.items():
        if hit.item.title == "Bob":
            assert hit.components["speaker"] == 0.5 and hit.score > before[item_id]
        else:
            assert "speaker" not in hit.components and hit.score == pytest.approx(before[item_id])
    assert hit_ids(plain).index("c1") > hit_ids(plain).index("a3") > 0
    assert hit_ids(linked)[:2] == ["a2", "a3"] and after["c1"].score / before["c1"] > 1.3


class RecordingEmbedder(BagOfWordsEmbedder):
    def __init__(self):
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return super().embed(texts)


def test_the_query_vector_leaves_out_the_speakers_the_question_names():
    # Vectors of the turns' own words: the other speaker's turn says the name, not the one
    # who did what is asked.
    items = [turn("a1", "Ann", "I like hiking in the hills.", "s-a", 1),
             turn("b1", "Bob", "Ann, you were great, thanks Ann.", "s-a", 2),
             mem("f1", "Cleo", "Cleo is the project's designer.", kind="user")]
    c = MemoryCorpus(items, EMB.embed([i.content for i in items]), source="snapshot")
    dense_only = RecallOptions(qstar=False, lexical=False, labels=False, rerank_pool=0)
    named = RecallOptions(qstar=False, lexical=False, labels=False, rerank_pool=0, dense_without_speakers=False)
    question = "What does Ann like?"
    assert hit_ids(engine().recall(question, ME, c, mode="catalog", k=2, options=dense_only))[0] == "a1"
    assert hit_ids(engine().recall(question, ME, c, mode="catalog", k=2, options=named))[0] == "b1"
    recording = RecordingEmbedder()
    eng = engine(embedder=recording)
    eng.recall("What does Ann's friend Cleo like?", ME, c, mode="catalog", options=dense_only)
    assert recording.texts[-1] == "What does friend Cleo like?"  # Cleo titles a fact, not a turn
    assert eng.query_vector_text("What does Ann's friend Cleo like?", ME, c, dense_only) == recording.texts[-1]
    other = Identity(user_id="u2", project_id="p1", session_id="s1", org_id="o1")
    eng.recall("What does Ann like?", other, c, mode="catalog", options=dense_only)
    assert recording.texts[-1] == "What does Ann like?"  # Ann's turns are not the caller's to see


def test_session_spread_reaches_another_session_sooner_and_keeps_the_head():
    c = corpus(chat())
    question = "lake camping"
    plain = hit_ids(engine().recall(question, ME, c, mode="catalog", k=5, options=RecallOptions(qstar=False)))
    spread = engine().recall(question, ME, c, mode="catalog", k=5,
                             options=RecallOptions(qstar=False, spread_decay=0.1, spread_after=1))
    ids = hit_ids(spread)
    assert ids[0] == plain[0] and plain.index("b1") > 1 and ids[1] == "b1"
    scores = [h.score for h in spread.hits]
    assert scores == sorted(scores, reverse=True)  # the spread order is the score order


def test_session_support_lifts_turns_of_the_session_holding_most_of_the_answer():
    c = corpus(chat())
    question = "camping"
    supported = engine().recall(question, ME, c, mode="catalog", k=5,
                                options=RecallOptions(qstar=False, w_session=1.0, session_top=3))
    factors = {h.item.id: h.components.get("session_support") for h in supported.hits}
    assert factors["a1"] == pytest.approx(2.0) and 1.0 < factors["b1"] < 2.0


def test_feedback_expands_the_query_with_words_of_the_best_candidates():
    c = corpus(chat() + [turn("d1", "Ann", "Lake Tahoe has the clearest water.", "s-d", 6)])
    opts = RecallOptions(qstar=False, dense=False, prf_docs=2, prf_terms=3, prf_lexical=0.5)
    plain = hit_ids(engine().recall("camping trip", ME, c, mode="catalog", k=6,
                                    options=RecallOptions(qstar=False, dense=False)))
    fed = hit_ids(engine().recall("camping trip", ME, c, mode="catalog", k=6, options=opts))
    assert "d1" not in plain and "d1" in fed  # reached only through the feedback word "lake"


def test_a_question_that_asks_for_several_things_is_expanded_with_words_of_the_first_found():
    c = corpus(chat() + [turn("d1", "Ann", "Lake Tahoe has the clearest water.", "s-d", 6)])
    lexical = RecallOptions(qstar=False, dense=False)
    several = "What trips have we taken?"  # the trips are told in turns that share words
    fed = engine().recall(several, ME, c, mode="catalog", k=6, options=lexical)
    plain = engine().recall(several, ME, c, mode="catalog", k=6,
                            options=RecallOptions(qstar=False, dense=False, prf_several_docs=0))
    assert "d1" not in hit_ids(plain) and "d1" in hit_ids(fed)  # through the feedback word "lake"
    # A question that asks for one thing is not expanded.
    assert "d1" not in hit_ids(engine().recall("Which trip did we take?", ME, c, mode="catalog", k=6,
                                               options=lexical))
    with pytest.raises(RecallError):
        RecallOptions(prf_several_docs=-1)


def test_a_turn_said_around_the_date_the_question_names_is_lifted():
    def dated(id_: str, content: str, when: str, seq: int) -> MemoryItem:
        item = turn(id_, "Ann", content, f"s-{id_}", seq)
        return msgspec.structs.replace(item, created_at=when, updated_at=when, valid_from=when)

    c = corpus([dated("jan", "I watched a movie: the movie was a great watch.", "2022-01-20T10:00:00+00:00", 1),
                dated("may", "I watched a movie last night.", "2022-05-02T10:00:00+00:00", 2),
                dated("nov", "I watched a movie, a long movie.", "2022-11-02T10:00:00+00:00", 3)])
    question = "What movie did Ann watch on 1 May, 2022?"
    # The date lift alone: the query vector as it was made before speakers were left out.
    plain = engine().recall(question, ME, c, mode="catalog", k=3,
                            options=RecallOptions(qstar=False, w_date=0.0, dense_without_speakers=False))
    dated_hits = engine().recall(question, ME, c, mode="catalog", k=3,
                                 options=RecallOptions(qstar=False, dense_without_speakers=False))
    assert hit_ids(dated_hits).index("may") < hit_ids(plain).index("may")
    before = {h.item.id: h for h in plain.hits}
    after = {h.item.id: h for h in dated_hits.hits}
    assert after["may"].components["multiplier"] == pytest.approx(before["may"].components["multiplier"] + 0.3)
    assert after["jan"].score == before["jan"].score and after["nov"].score == before["nov"].score
    assert {h.item.id: h.components.get("date") for h in dated_hits.hits} == {"may": 0.3, "jan": None, "nov": None}
    # No date named: nothing is lifted.
    undated = engine().recall("What movie did Ann watch?", ME, c, mode="catalog", k=3,
                              options=RecallOptions(qstar=False))
    assert all("date" not in h.components for h in undated.hits)
    with pytest.raises(RecallError):
        RecallOptions(date_after_days=-1)


def test_stated_lift_prefers_the_turn_that_says_more():
    c = corpus([turn("short", "Ann", "Camping? Fun!", "s-a", 1),
                turn("long", "Ann", "We went camping by the lake and stayed three nights in the tent.", "s-b", 2)])
    opts = RecallOptions(qstar=False, w_stated=0.5, stated_half=10.0)
    plain = {h.item.id: h for h in engine().recall("camping", ME, c, mode="catalog", k=2,
                                                   options=RecallOptions(qstar=False)).hits}
    lifted = {h.item.id: h for h in engine().recall("camping", ME, c, mode="catalog", k=2, options=opts).hits}
    assert "stated" not in plain["long"].components  # off by default
    assert lifted["long"].components["stated"] == pytest.approx(0.5 * 13 / 23)
    assert lifted["short"].components["stated"] == pytest.approx(0.5 * 1 / 11)
    assert lifted["long"].score / plain["long"].score > lifted["short"].score / plain["short"].score
    with pytest.raises(RecallError):
        RecallOptions(stated_half=0)


@pytest.mark.parametrize(("query", "about_self"), [
    ("What do you know about me?", True), ("Tell me about myself", True), ("me", True), ("Who am I?", True),
    ("What do you know about me and the team?", False),
    # naming a kind of memory asks for that kind (`asked_types`), not for everything said
    ("What are my preferences?", False), ("What facts do you know about me?", False),
    ("Tell me about the release", False), ("What did Caroline say about me?", True),
    ("Send it to me", False),
])
def test_questions_about_the_caller(query, about_self):
    from pipelines.recall.query import asks_about_self

    assert asks_about_self(query) is about_self


@pytest.mark.parametrize(("query", "types"), [
    ("What did we decide?", ("decision",)), ("What decisions have we made so far?", ("decision",)),
    ("List our decisions", ("decision",)), ("what did we agree on?", ("decision",)),
    ("Any open todos?", ("todo",)), ("What tasks do I have?", ("todo",)),
    ("Do you remember what we decided?", ("decision",)), ("What did we discuss?", ()),
    ("What rules do we have?", ("constraint",)), ("What do I prefer?", ("preference",)),
    ("what do you know about my preferences?", ("preference",)), ("What facts do you know about me?", ("fact",)),
    ("What facts do you have on the API?", ()),
    ("What did we decide about the API?", ()), ("Which database did we decide on?", ()),
    ("How do tasks run in celery?", ()), ("What is the weather?", ()),
])
def test_questions_that_ask_for_a_kind_of_memory(query, types):
    from pipelines.recall.query import asked_types

    assert asked_types(query) == types


def test_a_turn_that_said_what_a_correction_replaced_gives_way_to_the_correction():
    """Asked in the old turn's words only, recall does not hand back the replaced dose: the
    correction (which shares none of the question's words) answers in its place; a turn
    said after the correction, stating the old value again, is evidence again."""
    old_turn = mem("msg_old", "sam", "Dr. Okafor put me on amlodipine 5 mg every morning for my blood pressure.",
                   kind="user", type="message", created_at="2025-02-01T00:00:00+00:00")
    fix = mem("fix", "Amlodipine dose", "Sam takes amlodipine 10 mg every morning.", kind="user",
              created_at="2025-03-01T00:00:00+00:00", links=[Link(rel="supersedes", to="gone")])
    question = "What did Dr. Okafor prescribe for my blood pressure?"
    found = ids(engine().recall(question, ME, [corpus([old_turn, fix])], now=NOW))
    assert "fix" in found and "msg_old" not in found, found
    again = mem("msg_again", "sam", "Dr. Okafor put me back on amlodipine 5 mg every morning for my blood pressure.",
                kind="user", type="message", created_at="2025-04-01T00:00:00+00:00")
    assert "msg_again" in ids(engine().recall(question, ME, [corpus([old_turn, fix, again])], now=NOW))


def test_a_disagreement_with_a_claim_consolidation_merged_follows_it_into_the_merged_claim():
    """A user claim that disagreed with a project claim when written (`disagrees_with`),
    after consolidation merged that project claim with its duplicate into a new item: found
    from either side, the two come in together and are marked, as before the merge."""
    mine = mem("mine", "Morning boat", "The ferry to Ashford leaves at 8:40, from the pier by the blue kiosk.",
               kind="user", metadata={DISAGREES_WITH: ["ferry1"]})
    merged = mem("merged", "Ferry", "The ferry to Ashford leaves at 7:15.",
                 metadata={"merged_from": ["ferry1", "ferry2"]})
    c = corpus([mine, merged, *store()])
    r = engine().recall("blue kiosk pier", ME, [c], mode="hybrid", now=NOW)
    by = {h.item.id: h for h in r.hits}
    assert set(by) >= {"mine", "merged"}, r.hits  # before: the merged claim stayed out
    assert by["mine"].conflict_with == ["merged"] and by["merged"].conflict_with == ["mine"], r.hits
    r = engine().recall("Ferry to Ashford", ME, [c], mode="hybrid", now=NOW)
    assert {"mine", "merged"} <= {h.item.id for h in r.hits}, r.hits  # from the merged side too


# -- one subject across scopes -------------------------------------------------------------------


def test_a_narrower_claim_on_an_always_injected_rules_subject_comes_before_it():
    """The org's important rule is always injected, first; atlas's decision that narrows it
    (its title says the rule's and more) comes right before it, both marked with their scope,
    whether or not the question names a title."""
    rule = mem("rule", "Customer data region", "All customer data stays in the EU region.",
               kind="org", importance=9)
    narrow = mem("narrow", "Atlas customer data region", "Atlas customer data stays in eu-central-1.")
    other = mem("other", "Atlas API timeout", "The atlas API timeout is 30 seconds.")
    for question in ("where does customer data live?", "atlas customer data region"):
        r = engine().recall(question, ME, [corpus([rule, narrow, other])], now=NOW)
        assert ids(r)[:2] == ["narrow", "rule"], (question, ids(r))
        assert [h.resolution for h in r.hits[:2]] == ["scope", "scope"], question
        assert "| SCOPE=project" in r.injection and "| SCOPE=org" in r.injection, question


def test_a_session_instruction_less_relevant_in_words_still_comes_first_on_its_subject():
    """The session's "Indentation in this session", longer and so under half as relevant in
    words as the broader claims titled "Indentation", joins their subject and comes first;
    the org's and the user's, both titled "Indentation", are one subject with the project's
    and the session's, so all four come in scope order (session > project > user > org)."""
    org = mem("org", "Indentation", "Acme code is indented with 4 spaces.", kind="org")
    user = mem("user", "Indentation", "Mira prefers tabs for indentation.", kind="user", type="preference")
    project = mem("project", "Harbor indentation", "Harbor code is indented with 2 spaces.")
    session = mem("session", "Indentation in this session",
                  "In this session, indent with 8 spaces while we port the legacy parser module to the new "
                  "build, then the usual convention again.", kind="session")
    r = engine().recall("what indentation should I use?", ME, [corpus([org, user, project, session])], now=NOW)
    assert ids(r)[:4] == ["session", "project", "user", "org"], ids(r)
    assert "| SCOPE=session" in r.injection, r.injection


def test_an_untitled_claim_names_no_subject_across_scopes():
    untitled = mem("untitled", "", "Customer data stays in the EU region.", kind="org", importance=9)
    narrow = mem("narrow", "Atlas customer data region", "Atlas customer data stays in eu-central-1.")
    r = engine().recall("where does customer data live?", ME, [corpus([untitled, narrow])], now=NOW)
    assert "SCOPE=" not in r.injection and ids(r)[0] == "untitled", ids(r)


def test_a_named_date_lifts_the_turns_said_around_it_on_the_askers_calendar():
    """"On November 16" lifts turns said from 7 days before to 30 after (`said_on_named_date`),
    days on the asker's calendar, as the block headers date them: in Los Angeles a turn said
    on December 16 at 20:00 is inside (UTC's December 17 was not), one said on November 8 at
    20:00 is outside (UTC's November 9 was inside)."""
    late = turn("late", "u1", "The boat needs new sails.", "s-a", 1)
    early = turn("early", "u1", "The boat is back in the water.", "s-b", 2)
    late = msgspec.structs.replace(late, created_at="2026-12-17T04:00:00+00:00", valid_from="2026-12-17T04:00:00+00:00")
    early = msgspec.structs.replace(early, created_at="2026-11-09T04:00:00+00:00",
                                    valid_from="2026-11-09T04:00:00+00:00")
    hits = engine().recall("What did I say about the boat on November 16, 2026?", ME, corpus([late, early]),
                           mode="catalog", k=5, now="2026-12-20T00:00:00+00:00", tz="America/Los_Angeles").hits
    lifted = {h.item.id: "date" in h.components for h in hits}
    assert lifted == {"late": True, "early": False}, lifted


def test_a_question_naming_days_to_come_finds_what_holds_then_in_the_askers_zone():
    # asked Monday 2025-06-02 08:00 in Sydney (Sunday 22:00 in UTC): next week is June 9-15
    # there, June 2-8 in UTC
    def trip(id_: str, city: str, first: int, last: int) -> MemoryItem:
        return mem(id_, f"{city} trip", f"{city} from June {first} to June {last}.", type="todo",
                   valid_from=f"2025-06-{first:02d}T00:00:00+10:00", valid_to=f"2025-06-{last:02d}T23:59:59+10:00")

    items = [trip("melbourne", "Melbourne", 6, 8), trip("hobart", "Hobart", 13, 15), trip("perth", "Perth", 23, 25),
             mem("gym", "Gym", "Gym on Mondays at 7am.")]
    asked, question = "2025-06-01T22:00:00+00:00", "what did I plan for next week?"
    found = engine(timezone="Australia/Sydney").recall(question, ME, [corpus(items)], now=asked, mode="inject")
    assert ids(found)[0] == "hobart" and found.hits[0].score > found.hits[1].score, [
        (h.item.id, h.score) for h in found.hits]
    in_utc = engine(timezone="UTC").recall(question, ME, [corpus(items)], now=asked, mode="inject")
    assert ids(in_utc)[0] == "melbourne", [(h.item.id, h.score) for h in in_utc.hits]


def test_an_open_window_meets_the_days_named_only_at_its_edge():
    rent = mem("rent", "Rent", "From May 1, the rent is 1600 dollars.", valid_from="2025-05-01T00:00:00+00:00")
    move = mem("move", "Address", "From June 4, I live at 5 Elm Road.", valid_from="2025-06-04T00:00:00+00:00")
    eng, asked = engine(), "2025-06-01T10:00:00+00:00"  # a Sunday: next week is June 2-8
    found = eng.recall("anything coming up next week?", ME, [corpus([rent, move])], now=asked, trace=True)
    channels = next(t for t in found.trace if t.get("stage") == "candidates")["channels"]
    assert [e[0] for e in channels["held_then"]] == ["move"], channels


def test_tomorrow_lists_the_habits_of_its_weekday():
    gym = mem("gym", "Gym", "Gym on Mondays and Thursdays at 7am.")
    swim = mem("swim", "Swimming", "Swimming every Saturday at 8am.")
    found = engine().recall("anything I should remember for tomorrow?", ME, [corpus([gym, swim])],
                            now="2025-06-01T10:00:00+00:00", trace=True)  # a Sunday: tomorrow is a Monday
    channels = next(t for t in found.trace if t.get("stage") == "candidates")["channels"]
    assert [e[0] for e in channels["held_then"]] == ["gym"] and ids(found)[0] == "gym", channels


def test_next_month_lists_the_birthdays_then_every_year_not_a_once_only_errand():
    mom = mem("mom", "Mom's birthday", "Mom's birthday is March 3.")
    ben = mem("ben", "Ben's birthday", "Ben's birthday is October 12.")
    gift = mem("gift", "Gift", "Buy a gift for mom's birthday by March 1.", type="todo",
               valid_to="2025-03-01T23:59:59+00:00")
    for asked in ("2026-02-10T12:00:00+00:00", "2031-02-10T12:00:00+00:00"):
        found = engine().recall("what's coming up next month?", ME, [corpus([mom, ben, gift])], now=asked, trace=True)
        channels = next(t for t in found.trace if t.get("stage") == "candidates")["channels"]
        assert [e[0] for e in channels["held_then"]] == ["mom"], channels


def test_what_is_known_about_me_holds_the_projects_claims_about_me_not_others_of_themselves():
    other = Identity(user_id="u2", project_id="p1", session_id="s2", org_id="o1")
    items = [mem("diet", "Diet", "I'm vegetarian.", kind="user"),
             mem("work", "Work", "u1 works night shifts as a nurse."),
             mem("mine", "Allergy", "I'm allergic to cats."),
             mem("rule", "Bedtime", "The kids' bedtime is 8pm."),  # hers, not about her
             mem("his", "Job", "I'm a carpenter.", who=other),  # the partner's, of himself
             mem("of me", "Cats", "u1 is allergic to cats.", who=other),  # the partner's, of her
             mem("private", "Party", "Surprise party for u1's 40th.", kind="user", who=other)]  # not hers to see
    found = engine().recall("what do you know about me?", ME, [corpus(items)], trace=True)
    channels = next(t for t in found.trace if t.get("stage") == "candidates")["channels"]
    assert {e[0] for e in channels["self"]} == {"diet", "work", "mine", "of me"}, channels
    assert "private" not in ids(found)
