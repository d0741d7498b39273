"""Q* over the recall's top-k: the memory expander it searches through (restricted to what
the caller may see) and the merge of its answer back into the ranking.

Q* may add items around uncovered question entities (replacing at most
floor(k * qstar_max_added_fraction) of the lowest hits, so k holds) and drop weak ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipelines.records import MemoryItem

from .candidates import Candidate, CandidateSearch
from .qstar import Evidence, QStarConfig, QStarResult, QStarSearch, is_weak

POINTER_LINKS = ("references", "supports", "derived_from")


class Expander:
    """Q*'s view of the memory: related items, restricted to what the caller may see."""

    def __init__(self, search: CandidateSearch):
        self.search = search
        self.view = search.view

    def evidence(self, ci: int, row: int, relevance: float | None = None) -> Evidence:
        c = self.view.corpora[ci]
        if relevance is None:
            relevance = self.search.relevance(*self.search.signals(ci, [row])[0])
        return Evidence(item=c.items[row], relevance=relevance, vector=self.view.vector(ci, row),
                        terms=c.item_terms(row))

    def _usable(self, ci: int, row: int, exclude: set[str]) -> bool:
        item = self.view.corpora[ci].items[row]
        if item.id in exclude or not self.search.admissible(ci, row):
            return False
        cand = self.search.cands.get(item.id)
        if cand is not None and cand.suppressed is not None:
            return False  # a conflict loser stays out
        return self.view.locate(item.id) == (ci, row)

    def _related(self, support: Sequence[Evidence], focus: str | None, limit: int,
                 exclude: set[str]) -> dict[str, tuple[int, int]]:
        found: dict[str, tuple[int, int]] = {}
        for ci, c in enumerate(self.view.corpora):
            allowed = self.view.allowed[ci]
            refused: set[int] = set()
            if focus is not None:
                rows = c.rows_for_term(focus, allowed, limit * 2)
            else:
                rows = [r for e in support for r in sorted(c.neighbours(e.item, allowed))]
            for row in rows:
                # A row several support items lead to is checked once (the first decides).
                if c.ids[row] not in found and row not in refused:
                    if self._usable(ci, row, exclude):
                        found[c.ids[row]] = (ci, row)
                    else:
                        refused.add(row)
        return found

    def expand(self, support: Sequence[Evidence], focus: str | None, limit: int,
               exclude: set[str]) -> list[Evidence]:
        found = self._related(support, focus, limit, exclude)
        by_corpus: dict[int, list[int]] = {}
        for ci, row in found.values():
            by_corpus.setdefault(ci, []).append(row)
        focus_terms = set(focus.split()) if focus else set()
        # Ranked on the signals alone; only the `limit` kept become Evidence (most found rows
        # are neighbours that never make the cut: their words and vectors are not needed).
        ranked = []
        for ci, rows in by_corpus.items():
            c = self.view.corpora[ci]
            for row, sig in zip(rows, self.search.signals(ci, rows)):
                relevance = self.search.relevance(*sig)
                covers = -(focus_terms <= c.item_terms(row)) if focus_terms else 0
                ranked.append(((covers, -relevance, c.items[row].id), ci, row, relevance))
        ranked.sort(key=lambda r: r[0])
        return [self.evidence(ci, row, relevance) for _, ci, row, relevance in ranked[:limit]]

    def provenance_pointer(self, item: MemoryItem) -> Evidence | None:
        view = self.view
        options = [loc for link in item.links if link.rel in POINTER_LINKS
                   for loc in [view.locate(link.to)] if loc]
        for ci, c in enumerate(view.corpora):
            options.extend((ci, row) for rel, row in c.links_in.get(item.id, ())
                           if rel in ("references", "supports") and view.allowed[ci][row])
        for ci, row in sorted(options, key=lambda o: view.corpora[o[0]].ids[o[1]]):
            ptr = view.corpora[ci].items[row]
            if ptr.type == "pointer" and not is_weak(ptr) and view.locate(ptr.id) == (ci, row):
                return self.evidence(ci, row)
        return None


def run_qstar(search: CandidateSearch, selected: list[Candidate], k: int, question: str,
              engine: Any, suppressed: list[dict[str, Any]]) -> tuple[list[Candidate], QStarResult]:
    """Refine the top-k support set with Q*; returns the new top-k and Q*'s result."""
    opts = search.opts
    cfg = opts.qstar_config or QStarConfig.from_settings(search.settings)
    q = QStarSearch(cfg, Expander(search), engine.doc_source, engine.subgoal_generator, engine.clock)
    initial = [Evidence(item=c.item, relevance=c.relevance, vector=search.view.vector(c.ci, c.row),
                        terms=search.evidence_terms(c)) for c in selected]
    result = q.run(question, initial)
    added = [_admit(search, item_id) for item_id in result.added_ids]
    added = [c for c in added if c is not None]
    suppressed.extend({"id": i, "reason": "qstar verify: weak provenance"} for i in result.dropped_ids)
    by_id = {c.id: c for c in selected}
    kept = sorted((by_id[i] for i in result.best.support_memory_ids if i in by_id), key=Candidate.key)
    # Q* may displace at most a fraction of the ranked top-k (its additions close coverage
    # gaps; they should not crowd out the best direct hits).
    added = sorted(added, key=Candidate.key)[: int(k * opts.qstar_max_added_fraction)]
    room = max(0, k - len(added))
    return sorted(added + kept[:room], key=Candidate.key), result


def _admit(search: CandidateSearch, item_id: str) -> Candidate | None:
    cand = search.cands.get(item_id)
    if cand is None:
        loc = search.view.locate(item_id)
        if loc is None:  # cannot happen: the expander only offers allowed rows
            return None
        cand = search.add(loc[0], loc[1], "qstar")
        search.score_all([cand])
    elif "qstar" not in cand.via:
        cand.via.append("qstar")
    cand.components["qstar_added"] = 1.0
    return cand


def qstar_trace(result: QStarResult) -> dict[str, Any]:
    return {"stage": "qstar", "stop_reason": result.stop_reason,
            "goal_reached": result.goal_reached, "expansions": result.expansions,
            "retrieved_tokens": result.retrieved_tokens,
            "best": result.best.id, "best_score": result.best.score,
            "components": result.best.components,
            "added": result.added_ids, "dropped": result.dropped_ids,
            "expansions_trace": result.trace}


__all__ = ["Expander", "qstar_trace", "run_qstar"]
