"""Unit tests of the LoCoMo recall metrics on tiny hand-made LoCoMo-shaped data."""

from __future__ import annotations

import json

import pytest

from bench.metrics import (
    MetricError,
    RecallAccumulator,
    load_locomo,
    normalise_dia_id,
    normalise_evidence,
    parse_locomo,
    ranked_turns,
    session_of,
    session_recall,
    split_evidence,
    turn_recall,
)


def _sample(sample_id: str = "conv-x") -> dict:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob"},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "I adopted a cat", "blip_caption": "a cat"},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "Nice"},
            ],
            "session_2_date_time": "2:00 pm on 9 May, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "The cat is named Tom"},
                {"speaker": "Ann", "dia_id": "D2:5", "text": "Cute"},
            ],
        },
        "qa": [
            {"question": "What did Bob adopt?", "answer": "a cat", "evidence": ["D1:2"], "category": 4},
            {"question": "Cat's name and when adopted?", "answer": "Tom",
             "evidence": ["D1:2; D2:1"], "category": 1},
            {"question": "Malformed ids", "answer": "x", "evidence": ["D:9:05", "D9:9", "D"], "category": 2},
            {"question": "No evidence", "answer": "x", "evidence": [], "category": 3},
            {"question": "Adversarial", "adversarial_answer": "dog", "evidence": ["D1:3"], "category": 5},
        ],
    }


# -- ids ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("D1:3", "D1:3"), ("D:11:26", "D11:26"), ("D30:05", "D30:5"), (" d4 : 7 ", "D4:7"),
     ("D", None), ("D10", None), ("X1:2", None), ("", None), (None, None), (12, None)],
)
def test_normalise_dia_id(raw, expected):
    assert normalise_dia_id(raw) == expected


def test_split_evidence_handles_joined_ids():
    assert split_evidence("D8:6; D9:17") == ["D8:6", "D9:17"]
    assert split_evidence("D8:6,D9:17 D10:1") == ["D8:6", "D9:17", "D10:1"]
    assert split_evidence("D:11:26") == ["D:11:26"]
    assert split_evidence(None) == []


def test_normalise_evidence_drops_unknown_and_duplicates():
    known = ["D8:6", "D9:17", "D11:26", "D30:5"]
    ev = ["D8:6; D9:17", "D:11:26", "D30:05", "D8:6", "D99:1", "D"]
    assert normalise_evidence(ev, known) == ["D8:6", "D9:17", "D11:26", "D30:5"]
    # Without a conversation to check against, only unparseable ids go.
    assert normalise_evidence(ev) == ["D8:6", "D9:17", "D11:26", "D30:5", "D99:1"]
    assert normalise_evidence("D1:1") == ["D1:1"]
    with pytest.raises(MetricError):
        normalise_evidence({"D1:1": 1})


def test_session_of():
    assert session_of("D12:3") == "D12"
    assert session_of("D:12:03") == "D12"
    with pytest.raises(MetricError):
        session_of("nope")


# -- ranking and recall ----------------------------------------------------------------------------


def test_ranked_turns_counts_distinct_turns_in_item_order():
    items = [["D1:2"], ["D1:2", "D2:1"], [], ["not-a-ref", "D1:02"], ["D2:5", "D1:1"]]
    assert ranked_turns(items) == ["D1:2", "D2:1", "D2:5", "D1:1"]
    # k counts distinct turns, not items: a duplicate turn does not use up a slot.
    assert ranked_turns(items, 2) == ["D1:2", "D2:1"]
    assert ranked_turns(items, 3) == ["D1:2", "D2:1", "D2:5"]


def test_ranked_turns_rejects_bad_input():
    with pytest.raises(MetricError):
        ranked_turns([["D1:1"]], 0)
    with pytest.raises(MetricError):
        ranked_turns([["D1:1"]], True)
    with pytest.raises(MetricError):
        ranked_turns(["D1:1"], 3)  # bare string item: would iterate characters


def test_turn_and_session_recall():
    evidence = ["D1:2", "D2:1", "D3:4"]
    assert turn_recall(evidence, ["D1:2", "D9:9"]) == pytest.approx(1 / 3)
    assert turn_recall(evidence, []) == 0.0
    assert turn_recall(evidence, ["D3:4", "D2:1", "D1:2"]) == 1.0
    # Sessions: D1 found via another turn of session 1, D2 and D3 missing.
    assert session_recall(evidence, ["D1:1"]) == pytest.approx(1 / 3)
    assert session_recall(["D1:2", "D1:3"], ["D1:9"]) == 1.0
    with pytest.raises(MetricError):
        turn_recall([], ["D1:1"])
    with pytest.raises(MetricError):
        session_recall([], ["D1:1"])


# -- accumulation ------------------------------------------------------------------------------------


def test_accumulator_means_per_category_and_headline():
    acc = RecallAccumulator(ks=(1, 2))
    assert acc.add(4, ["D1:1"], [["D1:1"], ["D1:2"]]) == {1: 1.0, 2: 1.0}
    assert acc.add("1", ["D1:2", "D2:1"], [["D1:1"], ["D2:1"]]) == {1: 0.0, 2: 0.5}
    assert acc.add(5, ["D1:3"], [["D1:1"]]) == {1: 0.0, 2: 0.0}
    assert acc.add(3, [], [["D1:1"]]) is None
    s = acc.summary()
    assert s["turn_recall"]["1"]["overall_1_4"] == 0.5  # (1 + 0) / 2, category 5 excluded
    assert s["turn_recall"]["2"]["overall_1_4"] == 0.75
    assert s["turn_recall"]["2"]["all"] == 0.5  # (1 + 0.5 + 0) / 3
    assert s["turn_recall"]["2"]["5"] == 0.0
    assert s["turn_recall"]["2"]["3"] is None  # skipped: nothing scored
    assert s["session_recall"]["1"]["1"] == 0.5  # D1 found (via D1:1), D2 not
    assert s["session_recall"]["2"]["1"] == 1.0
    counts = acc.counts()
    assert counts["overall_1_4"] == 2 and counts["5"] == 1 and counts["skipped_no_evidence"] == 1


def test_accumulator_rejects_bad_ks():
    with pytest.raises(MetricError):
        RecallAccumulator(ks=())
    with pytest.raises(MetricError):
        RecallAccumulator(ks=(0, 5))


# -- LoCoMo parsing ------------------------------------------------------------------------------------


def test_parse_locomo_normalises_and_filters_evidence():
    [conv] = parse_locomo([_sample()])
    assert conv.sample_id == "conv-x"
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:5"]
    assert conv.turns[1].caption == "a cat" and conv.turns[3].session == 2
    assert conv.turns[0].date == "1:56 pm on 8 May, 2023"
    ev = {q.question: q.evidence for q in conv.questions}
    assert ev["What did Bob adopt?"] == ("D1:2",)
    assert ev["Cat's name and when adopted?"] == ("D1:2", "D2:1")
    assert ev["Malformed ids"] == ()  # D9:5 and D9:9 are not in the conversation, "D" is no id
    assert [q.category for q in conv.questions] == ["4", "1", "2", "3", "5"]


def test_parse_locomo_keeps_existing_malformed_id():
    sample = _sample()
    sample["qa"][2]["evidence"] = ["D:2:05"]
    [conv] = parse_locomo([sample])
    assert conv.questions[2].evidence == ("D2:5",)


def test_parse_locomo_names_unnamed_samples_like_the_importer():
    sample = _sample()
    del sample["sample_id"]
    assert parse_locomo([sample, _sample("b")])[0].sample_id == "locomo-0"


@pytest.mark.parametrize("bad", [{}, [1], [{"conversation": []}],
                                 [{"conversation": {}, "qa": [{"answer": "no question"}]}]])
def test_parse_locomo_rejects_non_locomo(bad):
    with pytest.raises(MetricError):
        parse_locomo(bad)


def test_load_locomo_reads_file_and_reports_bad_json(tmp_path):
    good = tmp_path / "l.json"
    good.write_text(json.dumps([_sample()]), encoding="utf-8")
    assert len(load_locomo(good)[0].questions) == 5
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(MetricError):
        load_locomo(bad)
    with pytest.raises(MetricError):
        load_locomo(tmp_path / "missing.json")


def test_end_to_end_scoring_of_a_parsed_sample():
    [conv] = parse_locomo([_sample()])
    acc = RecallAccumulator(ks=(1, 3))
    # A system that returns a merged item covering D1:2 and D2:1, then D1:1.
    ranked = [["D1:2", "D2:1"], ["D1:1"]]
    for q in conv.questions:
        acc.add(q.category, q.evidence, ranked)
    s = acc.summary()["turn_recall"]
    assert s["1"]["4"] == 1.0 and s["1"]["1"] == 0.5 and s["3"]["1"] == 1.0
    assert s["3"]["5"] == 0.0  # D1:3 never returned
    assert acc.counts()["skipped_no_evidence"] == 2  # "Malformed ids" (all dropped) + empty


# -- measurement helpers -------------------------------------------------------------------------------


def test_percentiles_interpolate_and_handle_empty():
    from bench.metrics import percentiles

    p = percentiles([10, 20, 30, 40, 50])
    assert p["p50"] == 30 and p["n"] == 5 and p["max"] == 50 and p["mean"] == 30
    assert p["p95"] == pytest.approx(48.0)
    assert percentiles([7.0])["p99"] == 7.0
    assert percentiles([])["p50"] is None
    with pytest.raises(MetricError):
        percentiles([1.0], points=(101,))


def test_write_json_creates_parents(tmp_path):
    from bench.metrics import machine_info, write_json

    out = write_json(tmp_path / "a" / "b.json", {"machine": machine_info()})
    data = json.loads(out.read_text())
    assert data["machine"]["cpu_count"] >= 1
    assert write_json(None, {}) is None
