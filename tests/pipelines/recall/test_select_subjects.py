"""select._on_subjects: which heads stand on a subject across scopes (the claims whose titles
say a head's words and more), as `_subject_in_scope_order` reads it."""

from __future__ import annotations

from pipelines.recall.candidates import Candidate
from pipelines.recall.select import _on_subjects, _subject_in_scope_order
from pipelines.records import Identity, MemoryItem, Provenance, Scope

WHO = Identity(user_id="u1", project_id="p1", session_id="s1", org_id="o1")
T0 = "2025-01-01T00:00:00+00:00"


def cand(id_: str, title: str, kind: str, score: float = 1.0) -> Candidate:
    item = MemoryItem(id=id_, tier="stm", type="fact", title=title, content=f"{title}: something",
                      scope=Scope.for_identity(kind, WHO), created_at=T0, updated_at=T0,
                      provenance=Provenance(source_id=f"turn-{id_}"))
    return Candidate(ci=0, row=0, item=item, source="snapshot", score=score)


def words(c: Candidate) -> frozenset[str]:
    return frozenset(c.item.title.lower().split())


def test_heads_on_a_subject_are_those_a_longer_title_of_another_scope_says():
    org = cand("org", "Indentation", "org")
    project = cand("proj", "Atlas indentation", "project")
    same_kind = cand("org2", "Org indentation", "org")  # one scope kind: not on the org's subject
    other = cand("other", "Deploy window", "project")
    below = cand("sess", "Indentation in this session", "session")  # below the floor, more specific
    heads = [org, project, same_kind, other, below]
    found = dict(_on_subjects(heads, [words(c) for c in heads], 4))
    assert found == {0: [1, 4]}  # the org's (same kind and unrelated titles are on none)
    assert _on_subjects(heads, [frozenset()] * len(heads), 4) == []  # no title names no subject


def test_subject_in_scope_order_orders_the_subject_most_specific_first():
    org = cand("org", "Indentation", "org", score=3.0)
    project = cand("proj", "Atlas indentation", "project", score=2.0)
    other = cand("other", "Deploy window", "project", score=1.0)
    ranked = [org, project, other]
    _subject_in_scope_order(ranked, {c.id: words(c) for c in ranked})
    assert (project.score, org.score) == (3.0, 2.0)
    assert project.resolution == org.resolution == "scope"
    assert other.resolution is None and other.score == 1.0
