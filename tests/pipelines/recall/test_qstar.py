"""Q* agenda search: the seed's score, pop order, operators, budgets and stop conditions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pipelines.recall.qstar import (
    DocRef,
    Evidence,
    QStarConfig,
    QStarError,
    QStarSearch,
    question_entities,
)
from pipelines.recall.render import estimate_tokens
from pipelines.records import Link, MemoryItem, Provenance, Scope

T0 = "2025-01-01T00:00:00+00:00"


def mem(id_: str, content: str, *, validation="unverified", prov: Provenance | None = None,
        links=(), type_="fact") -> MemoryItem:
    return MemoryItem(id=id_, tier="stm", type=type_, title=id_, content=content,
                      scope=Scope(), validation=validation, links=list(links),
                      provenance=prov if prov is not None else Provenance(source_id=f"t-{id_}"),
                      created_at=T0, updated_at=T0)


def ev(item: MemoryItem, relevance: float, vector=None) -> Evidence:
    return Evidence(item=item, relevance=relevance, vector=vector)


class FakeExpander:
    """Finds items whose text contains the focus term; without a focus, linked items."""

    def __init__(self, items: list[MemoryItem], relevance: dict[str, float],
                 pointers: dict[str, MemoryItem] | None = None):
        self.items = items
        self.relevance = relevance
        self.pointers = pointers or {}
        self.calls: list[str | None] = []

    def expand(self, support, focus, limit, exclude):
        self.calls.append(focus)
        if focus is not None:
            found = [i for i in self.items if focus in i.content.lower() and i.id not in exclude]
        else:
            linked = {link.to for e in support for link in e.item.links}
            found = [i for i in self.items if i.id in linked and i.id not in exclude]
        found.sort(key=lambda i: (-self.relevance[i.id], i.id))
        return [ev(i, self.relevance[i.id]) for i in found[:limit]]

    def provenance_pointer(self, item):
        p = self.pointers.get(item.id)
        return ev(p, 0.5) if p else None


# -- the score -------------------------------------------------------------------------------


def test_score_is_the_seed_weighted_formula():
    verified_doc = mem("a", "phoenix launch plan", validation="verified",
                       prov=Provenance(source_kind="doc", source_id="doc://plan",
                                       content_hashes=["h1"]))
    chat = mem("b", "launch is in may")
    search = QStarSearch(QStarConfig(w_r=1.0, w_p=0.3, w_c=0.5, w_d=0.5, w_x=0.5))
    s, comps = search.score([ev(verified_doc, 0.8), ev(chat, 0.4)], [], ["phoenix", "budget"])
    # R = mean(0.8, 0.4); P = mean(0.5*1 + 0.5*1, 0.5*0.5 + 0.5*0.5); C = 1 of 2 entities.
    assert comps["R"] == pytest.approx(0.6)
    assert comps["P"] == pytest.approx(0.75)
    assert comps["C"] == pytest.approx(0.5)
    assert comps["D"] == 0 and comps["X"] == 0
    assert s == pytest.approx(1.0 * 0.6 + 0.3 * 0.75 + 0.5 * 0.5)


def test_duplication_and_contradiction_penalties():
    a = mem("a", "the port is 8080")
    b = mem("b", "The port is 8080.")  # same normalised text
    v = np.ones(4, np.float32) / 2
    c = mem("c", "something else entirely")
    d = mem("d", "different words", links=[Link(rel="contradicts", to="a")])
    e = mem("e", "disputed", validation="contested")
    search = QStarSearch(QStarConfig())
    _, comps = search.score([ev(a, 1), ev(b, 1)], [], [])
    assert comps["D"] == pytest.approx(0.5)
    _, comps = search.score([ev(c, 1, v), ev(mem("c2", "other text", ), 1, v.copy())], [], [])
    assert comps["D"] == pytest.approx(0.5)  # cosine 1.0 >= dup_cosine
    _, comps = search.score([ev(a, 1), ev(d, 1), ev(e, 1), ev(c, 1)], [], [])
    assert comps["X"] == pytest.approx(3 / 4)  # a and d contradict, e is contested
    s_clean, _ = search.score([ev(a, 1), ev(c, 1)], [], [])
    s_risky, _ = search.score([ev(a, 1), ev(e, 1)], [], [])
    assert s_risky < s_clean


def test_question_entities_are_capitalised_phrases_then_content_words():
    assert question_entities("What is the budget of Project Phoenix in 2024?") == [
        "project phoenix", "budget", "2024"]
    assert question_entities("what do you remember?") == []


# -- pop order -------------------------------------------------------------------------------


def _world():
    items = [mem(f"x{i}", f"{topic} detail {i}") for i, topic in
             enumerate(["alpha", "beta", "gamma", "delta", "alpha", "beta", "gamma", "delta"])]
    rel = {i.id: 0.9 - 0.1 * n for n, i in enumerate(items)}
    return items, rel


def test_agenda_always_expands_the_highest_scoring_open_node():
    items, rel = _world()
    root = [ev(mem("r", "unrelated start"), 0.3)]
    search = QStarSearch(QStarConfig(score_threshold=99, max_expansions=10, max_tokens=10_000,
                                     max_ms=1e9, per_expand=1, branching=2),
                         expander=FakeExpander(items, rel))
    result = search.run("Alpha beta gamma delta?", root)
    steps = [t for t in result.trace if "children" in t]
    assert len(steps) == result.expansions == 10
    open_nodes = {result.trace[0]["node"]: result.trace[0]["score"]}
    for step in steps:
        popped = step["node"]
        assert popped in open_nodes
        assert step["score"] == max(open_nodes.values())  # best first...
        best_remaining = step["agenda_best_remaining"]
        del open_nodes[popped]
        if best_remaining is not None:
            assert step["score"] >= best_remaining  # ...so priority never increases on pop
        for child in step["children"]:
            open_nodes[child["node"]] = child["score"]
    assert result.stop_reason == "max_expansions"


def test_search_is_deterministic():
    items, rel = _world()

    def run():
        s = QStarSearch(QStarConfig(score_threshold=1.4, max_ms=1e9),
                        expander=FakeExpander(items, rel))
        return s.run("alpha gamma?", [ev(mem("r", "start"), 0.5)])

    a, b = run(), run()
    assert a.trace == b.trace
    assert a.best.support_memory_ids == b.best.support_memory_ids
    assert a.best.score == b.best.score


# -- operators ---------------------------------------------------------------------------------


def test_bridge_opens_subgoals_and_expand_memory_closes_them_to_a_goal():
    items, rel = _world()
    search = QStarSearch(QStarConfig(score_threshold=0.5, max_ms=1e9),
                         expander=FakeExpander(items, rel))
    result = search.run("What about beta and delta?", [ev(mem("r", "beta notes"), 0.7)])
    assert result.trace[0]["operator"] == "bridge"
    assert result.trace[0]["subgoals"] == ["delta"]  # beta is already covered
    assert result.goal_reached and result.stop_reason == "goal"
    assert result.best.open_subgoals == []
    assert result.best.components["C"] == 1.0
    assert result.added_ids and all("delta" in result.evidence[i].item.content
                                    for i in result.added_ids)


def test_without_subgoals_expand_memory_follows_links():
    linked = mem("l", "linked detail")
    start = mem("s", "start", links=[Link(rel="supports", to="l")])
    exp = FakeExpander([linked], {"l": 0.9})
    search = QStarSearch(QStarConfig(score_threshold=0.9, max_ms=1e9), expander=exp)
    result = search.run("start", [ev(start, 0.2)])
    assert None in exp.calls
    assert result.added_ids == ["l"]


def test_verify_drops_weak_items_or_swaps_in_a_pointer():
    good = mem("g", "solid fact about the cache")
    contested = mem("c", "claim about the cache", validation="contested")
    bare = mem("n", "no provenance cache note", prov=Provenance())
    pointer = mem("p", "pointer to the cache design doc", type_="pointer",
                  prov=Provenance(source_kind="doc", source_id="doc://cache", chunk_ids=["c1"]))
    exp = FakeExpander([], {}, pointers={"c": pointer})
    search = QStarSearch(QStarConfig(score_threshold=0.95, max_ms=1e9), expander=exp)
    result = search.run("cache", [ev(good, 0.8), ev(contested, 0.8), ev(bare, 0.8)])
    verify_children = [c for t in result.trace for c in t.get("children", [])
                       if c["operator"] == "verify"]
    assert verify_children
    assert set(result.best.support_memory_ids) == {"g", "p"}
    assert set(result.dropped_ids) == {"c", "n"}
    assert "p" in result.added_ids


def test_pluggable_subgoal_generator_and_doc_source():
    calls = []

    def generator(question, uncovered, support):
        calls.append((question, list(uncovered)))
        return ["define cache"]

    class Docs:
        def fetch(self, query, limit):
            return [DocRef(doc_id="doc://design", chunk_id=f"c{n}", text=f"{query} text {n}",
                           score=0.9, content_hash="h") for n in range(limit)]

    search = QStarSearch(QStarConfig(score_threshold=99, max_expansions=3, max_ms=1e9,
                                     per_expand=1),
                         expander=FakeExpander([], {}), docs=Docs(), subgoal_generator=generator)
    result = search.run("cache", [ev(mem("a", "cache"), 0.5)])
    ops = [c["operator"] for t in result.trace for c in t.get("children", [])]
    assert "bridge" in ops and "expand_docs" in ops
    assert calls and calls[0][0] == "cache"
    doc_children = [c for t in result.trace for c in t.get("children", [])
                    if c["operator"] == "expand_docs"]
    assert doc_children and all(c["docs"] for c in doc_children)
    assert all(d.startswith("doc://design#") for c in doc_children for d in c["docs"])
    # The generated subgoal opened a bridge child.
    assert any(c["operator"] == "bridge" and "define cache" in c["open_subgoals"]
               for t in result.trace for c in t.get("children", []))


# -- budgets and stop conditions ----------------------------------------------------------


def test_max_expansions_budget():
    items, rel = _world()
    for budget in (0, 1, 3):
        search = QStarSearch(QStarConfig(score_threshold=99, max_expansions=budget, max_ms=1e9),
                             expander=FakeExpander(items, rel))
        result = search.run("alpha beta gamma delta", [ev(mem("r", "x"), 0.1)])
        assert result.expansions == budget
        assert result.stop_reason == "max_expansions"


def test_max_tokens_budget_caps_retrieved_content():
    items = [mem(f"x{i}", "alpha " + "padding " * 10) for i in range(10)]
    rel = {i.id: 0.5 for i in items}
    root = ev(mem("r", "beta"), 0.5)
    per_item = estimate_tokens(f"{items[0].title}\n{items[0].content}")
    budget = root.tokens + 2 * per_item
    search = QStarSearch(QStarConfig(score_threshold=99, max_expansions=50, max_tokens=budget,
                                     max_ms=1e9, per_expand=3),
                         expander=FakeExpander(items, rel))
    result = search.run("alpha beta", [root])
    assert result.stop_reason == "max_tokens"
    assert result.retrieved_tokens <= budget
    assert len(result.evidence) == 3  # the root and the two items that fit
    # A root already over budget stops before any expansion.
    tiny = QStarSearch(QStarConfig(max_tokens=1, max_ms=1e9), expander=FakeExpander(items, rel))
    r2 = tiny.run("alpha", [root])
    assert r2.stop_reason == "max_tokens" and r2.expansions == 0


def test_max_ms_budget_with_an_injected_clock():
    ticks = itertools.count(0.0, 0.010)  # every reading advances 10 ms
    items, rel = _world()
    search = QStarSearch(QStarConfig(score_threshold=99, max_expansions=100, max_ms=25.0),
                         expander=FakeExpander(items, rel), clock=lambda: next(ticks))
    result = search.run("alpha beta gamma delta", [ev(mem("r", "x"), 0.1)])
    # start=0; checks read 10 and 20 ms (expand), then 30 ms >= 25 ms: stop.
    assert result.stop_reason == "max_ms"
    assert result.expansions == 2


def test_goal_at_the_root_and_exhausted_agenda():
    covered = QStarSearch(QStarConfig(score_threshold=0.1, max_ms=1e9))
    r = covered.run("cache", [ev(mem("a", "cache"), 0.9)])
    assert r.goal_reached and r.stop_reason == "goal" and r.expansions == 0
    assert r.best.support_memory_ids == ["a"]
    nothing = QStarSearch(QStarConfig(score_threshold=99, max_ms=1e9))  # no expander
    r = nothing.run("cache", [ev(mem("a", "cache"), 0.9)])
    assert r.stop_reason == "exhausted" and not r.goal_reached
    assert r.best.support_memory_ids == ["a"]


def test_config_validation():
    with pytest.raises(QStarError):
        QStarConfig(max_expansions=-1)
    with pytest.raises(QStarError):
        QStarConfig(per_expand=0)
    with pytest.raises(QStarError):
        QStarSearch().run(None, [])  # type: ignore[arg-type]
