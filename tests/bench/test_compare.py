"""Unit tests of bench_compare's pure helpers: replaying a runner's hits into the shared
LoCoMo scoring, scope checks, requirements hashing and the side-by-side rows. Tiny hand-made
data; no venv, no models, no mem0."""

from __future__ import annotations

import pytest

from bench.compare import (
    SEARCH_LIMIT,
    RunnerRanker,
    foreign_hits,
    hits_to_ranked,
    parse_variants,
    requirements_hash,
    runner_index,
    table_rows,
    throughput,
)
from bench.locomo import evaluate
from bench.metrics import MetricError, parse_locomo


def _conversations():
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog named Rex."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice! What breed?"},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "A beagle."},
            ],
            "session_2_date_time": "2:00 pm on 9 May, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "I run marathons."},
                {"speaker": "Ann", "dia_id": "D2:2", "text": "Rex ran with me today."},
            ],
        },
        "qa": [
            {"question": "What breed is Rex?", "answer": "beagle", "evidence": ["D1:1", "D1:3"], "category": 4},
            {"question": "Who runs marathons?", "answer": "Bob", "evidence": ["D:2:1"], "category": 1},
            {"question": "No evidence here", "answer": "x", "evidence": [], "category": 2},
        ],
    }
    return parse_locomo([sample])


def _runner_out(hits_by_index):
    return {"questions": [{"sample_id": "conv-x", "index": i, "category": "?", "latency_ms": 1.0, "hits": h}
                          for i, h in hits_by_index.items()]}


def test_hits_to_ranked_keeps_rank_and_skips_missing_ids():
    hits = [["D1:3", "conv-x", 0.9], [None, "conv-x", 0.8], ["D1:1", "conv-x", 0.7]]
    assert hits_to_ranked(hits) == [["D1:3"], [], ["D1:1"]]


def test_runner_hits_scored_like_any_ranker():
    (conv,) = _conversations()
    out = _runner_out({
        0: [["D1:3", "conv-x", 0.9], ["D2:2", "conv-x", 0.5], ["D1:1", "conv-x", 0.4]],
        1: [["D1:2", "conv-x", 0.9], ["D2:1", "conv-x", 0.8]],
        2: [],
    })
    ranker = RunnerRanker(out)
    acc = evaluate([conv], ranker, (1, 2, 3))
    s = acc.summary()["turn_recall"]
    # q0: evidence {D1:1, D1:3}; @1 -> 1/2, @2 -> 1/2, @3 -> 2/2. q1: evidence {D2:1} at rank 2.
    assert s["1"]["4"] == 0.5 and s["3"]["4"] == 1.0
    assert s["1"]["1"] == 0.0 and s["2"]["1"] == 1.0
    assert s["2"]["overall_1_4"] == pytest.approx((0.5 + 1.0) / 2)
    assert acc.counts()["skipped_no_evidence"] == 1
    assert ranker.foreign_hits == 0 and ranker.missing == []
    assert ranker.short_results == 2  # both scored questions returned fewer than SEARCH_LIMIT hits
    assert SEARCH_LIMIT == 20


def test_missing_questions_score_zero_and_are_counted():
    (conv,) = _conversations()
    ranker = RunnerRanker(_runner_out({0: [["D1:1", "conv-x", 1.0]]}))
    acc = evaluate([conv], ranker, (5,))
    assert ranker.missing == [("conv-x", 1)]
    assert acc.summary()["turn_recall"]["5"]["1"] == 0.0


def test_foreign_hits_catches_other_users_and_unknown_turns():
    (conv,) = _conversations()
    hits = [["D1:1", "conv-x", 1.0], ["D1:1", "conv-y", 0.9], ["D9:9", "conv-x", 0.8],
            [None, "conv-x", 0.7], ["D01:02", None, 0.6]]
    assert foreign_hits(conv, hits) == 3


def test_runner_index_rejects_malformed_output():
    with pytest.raises(MetricError):
        runner_index({})
    with pytest.raises(MetricError):
        runner_index({"questions": [{"index": 0, "hits": []}]})
    with pytest.raises(MetricError):
        runner_index({"questions": [{"sample_id": "a", "index": 0, "hits": []},
                                    {"sample_id": "a", "index": 0, "hits": []}]})
    with pytest.raises(MetricError):
        runner_index({"questions": [{"sample_id": "a", "index": 0}]})


def test_requirements_hash_ignores_comments_order_and_blank_lines():
    a = "# pinned\nmem0ai==2.2.1\n\ntorch==2.13.0  # cpu\n"
    b = "torch==2.13.0\nmem0ai==2.2.1\n"
    assert requirements_hash(a) == requirements_hash(b)
    assert requirements_hash(a) != requirements_hash("torch==2.13.0\nmem0ai==2.2.0\n")


def test_parse_variants():
    assert parse_variants("hybrid, dense,hybrid") == ["hybrid", "dense"]
    assert parse_variants("") == []
    with pytest.raises(ValueError):
        parse_variants("hybrid,graph")


def test_throughput():
    assert throughput(100, 4.0) == 25.0
    assert throughput(100, 0.0) is None
    assert throughput(100, None) is None


def test_table_rows_side_by_side_with_missing_values():
    systems = {
        "loci": {"turn_recall": {"5": {"overall_1_4": 0.5}, "10": {"overall_1_4": 0.6, "1": 0.25}},
                 "search_latency_ms": {"p50": 11.26}, "checks": {"foreign_hits": 0},
                 "ingest": {"turns_per_s_until_searchable": 38.3},
                 "counts": {"scored": {"overall_1_4": 150, "5": 47}}},
        "mem0": {"turn_recall": {"10": {"overall_1_4": 0.55}}},
    }
    rows = dict(table_rows(systems))
    assert rows["turn recall@5 (cat 1-4)"] == ["0.500", "-"]
    assert rows["turn recall@10 (cat 1-4)"] == ["0.600", "0.550"]
    assert rows["turn recall@10 cat 1 multi-hop"] == ["0.250", "-"]
    assert rows["search latency p50 ms"] == ["11.3", "-"]
    assert rows["ingest turns/s (until searchable)"] == ["38.3", "-"]
    assert rows["foreign hits (scope leaks)"] == ["0", "-"]
    assert rows["questions scored (cat 1-4 / 5)"] == ["150 / 47", "- / -"]
