"""The pipeline benchmark's per-stage clock reads the stage lines `loci consolidate` prints."""

from __future__ import annotations

from assets.run import stage_line
from bench.pipeline import StepClock, stage_cpu


def test_step_clock_reads_each_stage_line_once_and_keeps_the_rest_as_other():
    clock = StepClock()
    clock("waiting for the warehouse lock")
    clock(stage_line("landed_events", {"landed": 2760}, 1.25))
    clock(stage_line("item_embeddings", {"embedded": 2760}, 40.5))
    clock(stage_line("item_embeddings", {"embedded": 1}, 99.0))  # a repeat is ignored
    clock("check snapshot_matches_warehouse FAILED")
    steps = clock.durations(wall_s=50.0)
    assert steps == {"landed_events": 1.25, "item_embeddings": 40.5, "other": 8.25}


def test_stage_cpu_keeps_stages_sums_checks_and_leaves_the_rest_as_other():
    steps = {"landed_events": 0.5, "item_embeddings": 30.0, "embeddings_current": 0.25, "snapshot_ok": 0.5}
    assert stage_cpu(steps, total_cpu_s=33.0) == {"landed_events": 0.5, "item_embeddings": 30.0,
                                                  "checks": 0.75, "other": 1.75}
