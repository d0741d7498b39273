"""The pipeline benchmark's LoCoMo block reports CPU seconds next to wall time (on a shared
machine the CPU seconds are what compares runs)."""

from __future__ import annotations

import argparse
import json

from bench import pipeline


def test_locomo_run_reports_cpu_seconds_and_turns_per_cpu_second(tmp_path, monkeypatch):
    sample = {"sample_id": "conv-1", "qa": [], "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I moved to Lisbon."},
                      {"speaker": "Bob", "dia_id": "D1:2", "text": "Congratulations!"}]}}
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([sample]))
    monkeypatch.setattr(pipeline, "consolidate", lambda settings: {
        "wall_s": 4.0, "cpu_s": 2.0, "steps_s": {"item_embeddings": 3.0, "other": 1.0},
        "steps_cpu_s": {"item_embeddings": 1.5, "other": 0.5},
        "after_last_step_s": 0.1, "summary": {"status": "success"}})
    args = argparse.Namespace(embedder="hash", precision=None, composed=None, merger="extractive")
    block = pipeline.locomo_run(data, tmp_path, args, lambda *a, **k: None)
    assert block["turns"] == 2
    assert block["consolidate_cpu_s"] == 2.0 and block["turns_per_cpu_s"] == 1.0
    assert block["consolidate_turns_per_s"] == 0.5
    assert block["steps_cpu_s"] == {"item_embeddings": 1.5, "other": 0.5}  # each stage's own CPU, passed on
