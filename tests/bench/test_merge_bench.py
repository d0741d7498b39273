"""`loci bench merge`: labelled pairs through consolidation's merge stage; a restatement
merges with both sources kept and the later wording leading, a conflict never merges, nor
do two scopes' or two people's claims; a conflict merged fails the run (exit 1)."""

from __future__ import annotations

import json

import pytest

from bench import merge


def _pair(ca, cb, conflict, kind):
    return {"a": {"title": "t a", "content": ca}, "b": {"title": "t b", "content": cb},
            "conflict": conflict, "kind": kind}


RESTATED = _pair("The search cluster has three replicas.", "Search runs with 3 replicas.", False, "restated")
CONFLICT = _pair("The search cluster has three replicas.", "The search cluster has five replicas.", True, "number")
FIRST_PERSON = _pair("I work from home on Fridays.", "I work from home on Fridays.", False, "restated")


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(p) for p in (RESTATED, CONFLICT, FIRST_PERSON)) + "\n", encoding="utf-8")
    return path


def test_restatements_merge_and_nothing_else_does(pairs_file, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert merge.main(["--data", str(pairs_file), "--no-groups", "--json", str(out)]) == 0
    (entry,) = json.loads(out.read_text(encoding="utf-8"))["sets"]
    s = entry["summary"]
    assert s["conflicting merged"] == [0, 1] and s["teammates' conflicting merged"] == [0, 1]
    assert s["restated merged"] == [2, 2]
    assert s["restated: both sources kept"] == [2, 2] and s["restated: later wording leads"] == [2, 2]
    # two scopes and two people for each of 3 pairs, and the teammates' one first-person pair
    assert s["people or scopes merged"] == [0, 7]
    assert entry["per_pair"][2]["teammates"] is None  # "I work from home": two people's own words
    assert entry["per_pair"][0]["teammates"] is not None  # a shared fact restated by a teammate
    assert "merge decisions on labelled pairs" in capsys.readouterr().out


def test_a_merged_conflict_is_a_failure(monkeypatch, pairs_file, tmp_path, capsys):
    from pipelines.consolidate import merges

    monkeypatch.setattr(merges, "_plan_merges", _plan_without_members(merges._plan_merges))
    assert merge.main(["--data", str(pairs_file), "--no-groups"]) == 1
    assert "FAIL pairs: conflicting merged 1" in capsys.readouterr().out


def _plan_without_members(plan):
    """The merge stage with every member allowed to merge (as if no rule kept any apart)."""
    import pipelines.merging as merging

    def planned(*args, **kwargs):
        keep = merging.contradicting_ids, merging.for_other_times
        merging.contradicting_ids = merging.for_other_times = lambda cluster: set()
        try:
            return plan(*args, **kwargs)
        finally:
            merging.contradicting_ids, merging.for_other_times = keep
    return planned
