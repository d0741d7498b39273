"""`loci bench conflicts`: the rule's verdicts on labelled pairs become confusion counts,
overall and per kind, for words only and with the embedder's cosine."""

from __future__ import annotations

import json

import pytest

from bench import conflicts, driver


def _pair(ta, ca, tb, cb, conflict, kind):
    return {"a": {"title": ta, "content": ca}, "b": {"title": tb, "content": cb}, "conflict": conflict, "kind": kind}


PAIRS = [
    # found: one subject, two numbers in one unit
    _pair("Free tier quota", "Free plan users get 5 projects.",
          "Free plan limits", "On the free plan you can create up to three projects.", True, "number"),
    # missed: the same limit, each worded with words the other never says
    _pair("Upload size limit", "Max upload size is 10 MB.",
          "Attachment limit", "Attachments can be up to 1 GB each.", True, "unit"),
    # false alarm: a limit for partners beside the general one (only one title names who)
    _pair("Rate limit", "The public API allows 100 requests per minute.",
          "Partner rate limit", "Partner keys are allowed 1000 requests per minute on the public API.", False,
          "other"),
    # right: the same value restated
    _pair("Replica count", "The search cluster has three replicas.",
          "Search replicas", "Search runs with 3 replicas.", False, "other"),
]


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(p) for p in PAIRS) + "\n", encoding="utf-8")
    return path


def test_counts_overall_and_per_kind_with_the_hash_embedder(pairs_file, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert conflicts.main(["--data", str(pairs_file), "--embedder", "hash", "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    for mode in ("words", "cosine"):
        s = result["modes"][mode]
        assert (s["tp"], s["fp"], s["fn"], s["tn"]) == (1, 1, 1, 1)
        assert (s["precision"], s["recall"], s["f1"]) == (0.5, 0.5, 0.5)
        assert result["by_kind"][mode]["number"]["tp"] == 1
        assert result["by_kind"][mode]["unit"]["fn"] == 1
        assert result["by_kind"][mode]["other"]["fp"] == 1 and result["by_kind"][mode]["other"]["tn"] == 1
        assert result["errors"][mode] == [2, 3]
    assert all(r["cos"] is not None for r in result["per_pair"])
    printed = capsys.readouterr().out
    assert "misclassified pairs" in printed and "Upload size limit" in printed


def test_words_only_skips_the_embedder(pairs_file, tmp_path):
    result = conflicts.run(pairs_file, "none")
    assert list(result["modes"]) == ["words", "write"] and result["per_pair"][0]["cos"] is None


def test_the_write_mode_leaves_out_a_case_beside_a_rule(tmp_path):
    """"write": would the second claim, written by the first one's author, replace it? Like
    words only, except that a case beside a rule ("Deploy window" / "Hotfix deploy window:
    hotfixes ...") replaces nothing (`names_a_case`)."""
    path = tmp_path / "pairs.jsonl"
    rows = [_pair("Deploy window", "Deploys happen between 14:00 and 16:00 UTC.", "Hotfix deploy window",
                 "Hotfix deploys happen between 08:00 and 10:00 UTC.", False, "case"),
            _pair("Standup time", "Standup is at 9:30.", "Standup time", "Standup is at 10:15.", True, "time")]
    path.write_text("\n".join(json.dumps(p) for p in rows) + "\n", encoding="utf-8")
    result = conflicts.run(path, "none")
    assert result["per_pair"][0]["words"] is not None and result["per_pair"][0]["write"] is None
    assert result["per_pair"][1]["write"] == result["per_pair"][1]["words"] is not None
    assert result["modes"]["write"]["precision"] == 1.0


def test_a_malformed_pair_is_a_data_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": {"title": "x"}, "conflict": true}\n', encoding="utf-8")
    with pytest.raises(driver.BenchDataError, match="bad.jsonl:1"):
        conflicts.load_pairs(bad)
    assert conflicts.main(["--data", str(tmp_path / "missing.jsonl"), "--embedder", "none"]) == 2


@pytest.mark.parametrize("name", ["conflict_pairs.jsonl", "conflict_pairs_heldout.jsonl",
                                  "conflict_pairs_blind2.jsonl"])
def test_the_shipped_pairs_load_and_are_balanced(name):
    pairs = conflicts.load_pairs(conflicts.DEFAULT_PAIRS.parent / name)
    assert len(pairs) >= 80
    assert 0.4 <= sum(p["conflict"] for p in pairs) / len(pairs) <= 0.6


def test_locomo_write_false_alarms_count_each_turn_against_its_speakers_earlier_turns(pairs_file, tmp_path):
    turns = [("Ana", "Our standup is at 9:30."), ("Ben", "Our standup is at 11:00."),
             ("Ana", "Our standup is at 10:00."), ("Ben", "Lovely weather today!")]
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps([{"sample_id": "s1", "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben", "session_1_date_time": "1:00 pm on 8 May, 2023",
        "session_1": [{"speaker": who, "dia_id": f"D1:{n}", "text": text} for n, (who, text) in enumerate(turns)]}}]),
        encoding="utf-8")
    fa = conflicts.run(pairs_file, "hash", locomo)["locomo_write"]
    # Ana's second turn corrects her first (words alone); Ben's turns are his own, never Ana's
    assert (fa["turns"], fa["words"]) == (2, 1) and fa["with_cosine"] >= 1
    assert all(e["new"] != e["old"] for e in fa["examples"])
    assert "locomo_write" not in conflicts.run(pairs_file, "none", locomo)
    assert conflicts.main(["--data", str(pairs_file), "--locomo", str(tmp_path / "missing.json")]) != 0
