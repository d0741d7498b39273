"""bench.locomo's tune / held-out split: each question scored once, per split and overall,
and `--conversations` selecting by sample id. Tiny hand-made data; no model."""

from __future__ import annotations

import json

import pytest

from bench import driver
from bench.locomo import _parse, _select_data, evaluate_splits
from bench.metrics import MetricError, RecallAccumulator, parse_locomo


def _sample(sample_id: str, answer_turn: str) -> dict:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog named Rex."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "A beagle?"},
            ],
        },
        "qa": [{"question": "What dog?", "answer": "Rex", "evidence": [answer_turn], "category": 1}],
    }


def _samples() -> list[dict]:
    return [_sample("conv-a", "D1:1"), _sample("conv-b", "D1:2"), _sample("conv-c", "D1:2")]


def test_splits_score_each_question_once_and_all_is_their_union():
    conversations = parse_locomo(_samples())
    asked = []

    def ranker(conv, qi, question):
        asked.append(conv.sample_id)
        return [["D1:1"]]  # right for conv-a only

    accs = evaluate_splits(conversations, ranker, (1,), frozenset({"conv-a"}))
    assert sorted(asked) == ["conv-a", "conv-b", "conv-c"]
    assert accs["tune"].summary()["turn_recall"]["1"]["1"] == 1.0
    assert accs["held_out"].summary()["turn_recall"]["1"]["1"] == 0.0
    assert accs["all"].summary()["turn_recall"]["1"]["1"] == pytest.approx(1 / 3, abs=1e-4)
    assert accs["held_out"].counts()["overall_1_4"] == 2


def test_merge_refuses_other_ks():
    with pytest.raises(MetricError):
        RecallAccumulator(ks=(5,)).merge(RecallAccumulator(ks=(10,)))


def test_conversations_by_sample_id_write_only_those_for_ingestion(tmp_path):
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(_samples()))
    args = _parse(["--data", str(data), "--conversations", "conv-c,conv-a", "--tune", "conv-a"])
    assert args.tune == frozenset({"conv-a"})
    _, path, conversations = _select_data(args, tmp_path)
    assert [c.sample_id for c in conversations] == ["conv-a", "conv-c"]
    assert [s["sample_id"] for s in json.loads(path.read_text())] == ["conv-a", "conv-c"]
    with pytest.raises(driver.BenchDataError, match="conv-z"):
        _select_data(_parse(["--data", str(data), "--conversations", "conv-z"]), tmp_path)
    first = _select_data(_parse(["--data", str(data), "--conversations", "2"]), tmp_path)[2]
    assert [c.sample_id for c in first] == ["conv-a", "conv-b"]


def test_reuse_needs_a_workdir_and_ablation_names_are_checked():
    with pytest.raises(SystemExit):
        _parse(["--reuse"])
    with pytest.raises(SystemExit):
        _parse(["--ablations", "no_such_row"])
