"""A run killed with SIGKILL mid-way leaves the published snapshot and the warehouse's
committed state as they were (the killed stage's transaction leaves no trace), and the
next run completes; two runs started at once serialise on the warehouse lock."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from assets.run import run_consolidation
from pipelines import consolidate as stages
from tests.assets.support import (
    BATCH_1,
    BATCH_2,
    active_items,
    child_summary,
    inbox_max_seq,
    ingest,
    make_settings,
    shared_instance,
    snapshot_state,
    start_child_run,
    warehouse_state,
)

pytestmark = pytest.mark.slow  # one of the longest files: scheduled first (tests/conftest.py)

WAIT_S = 60.0  # generous: child processes start slowly on a loaded CI machine


def wait_for(path: Path, proc, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"child exited early ({proc.returncode}): {out[-1500:]} {err[-3000:]}")
        assert time.monotonic() < deadline, "child never reached the hook point"
        time.sleep(0.05)


def kill_at(settings, point: str, tmp_path: Path) -> None:
    marker = tmp_path / f"reached-{point.replace(':', '-')}"
    child = start_child_run(settings, LOCI_TEST_HOOK=f"{point}=sleep:120", LOCI_TEST_HOOK_MARKER=str(marker))
    try:
        wait_for(marker, child)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.communicate()
    assert child.returncode == -signal.SIGKILL


def shape(items) -> list[tuple]:
    """Active items in a comparable form (independent of timestamps)."""
    return sorted((i.id, i.tier, i.type, i.content_hash, i.superseded_by) for i in items)


def test_sigkill_mid_run_keeps_previous_state_and_next_run_completes(tmp_path):
    settings = make_settings(tmp_path / "crash")
    ingest(settings, BATCH_1)
    stages.consolidate_once(settings)
    ingest(settings, BATCH_2, name="more.jsonl")
    wh_before, snap_before = warehouse_state(settings), snapshot_state(settings)
    assert snap_before["current"] and wh_before["watermark"] < inbox_max_seq(settings)

    # Killed inside a late transaction (merging): the snapshot is untouched and the merge
    # left no trace; the stages before it committed, each whole (the watermark moved with
    # the items its events produced). (A failure inside governance itself leaves items and
    # watermark unchanged: tests/assets/test_graph.py.)
    kill_at(settings, "merge:before_commit", tmp_path)
    after = warehouse_state(settings)
    assert snapshot_state(settings) == snap_before
    assert after["watermark"] == inbox_max_seq(settings)
    new_items = {i: row for i, row in after["items"].items() if i not in wh_before["items"]}
    assert new_items and all(row["tier"] == "stm" for row in new_items.values())  # no merged item
    superseded = lambda state: {i for i, row in state["items"].items() if row["superseded_by"]}  # noqa: E731
    assert superseded(after) == superseded(wh_before)

    # The next run finishes the job; the result equals a run that was never interrupted.
    done = run_consolidation(settings, instance=shared_instance())
    assert done["status"] == "success", done
    assert set(done["checks"].values()) == {"passed"}
    assert done["merged"] == 1 and done["snapshot_published"]
    assert [s for _, s in warehouse_state(settings)["runs"]].count("abandoned") == 1  # the killed run

    control = make_settings(tmp_path / "control")
    ingest(control, BATCH_1)
    stages.consolidate_once(control)
    ingest(control, BATCH_2, name="more.jsonl")
    stages.consolidate_once(control)
    assert shape(active_items(settings)) == shape(active_items(control))


def test_two_runs_at_once_one_waits_both_succeed(tmp_path):
    settings = make_settings(tmp_path)
    ingest(settings, BATCH_1)
    marker = tmp_path / "first-holds-the-lock"
    first = start_child_run(settings, LOCI_TEST_HOOK="merged_items:start=sleep:3",
                            LOCI_TEST_HOOK_MARKER=str(marker))
    try:
        wait_for(marker, first)  # the first run is mid-way and holds the warehouse
        progress: list[str] = []
        second = run_consolidation(settings, instance=shared_instance(), progress=progress.append)
        out, err = first.communicate(timeout=WAIT_S)
    finally:
        first.kill()
    assert first.returncode == 0, err[-3000:]
    first_summary = child_summary(out)
    assert first_summary["status"] == "success" and second["status"] == "success", (first_summary, second)
    assert second["lock_wait_s"] > 0  # it waited for the first instead of failing
    assert any("waiting for it to finish" in line for line in progress)
    assert first_summary["landed"] == inbox_max_seq(settings) and second["landed"] == 0
    assert set(second["checks"].values()) == {"passed"}
    runs = warehouse_state(settings)["runs"]
    assert [s for _, s in runs] == ["success", "success"]
