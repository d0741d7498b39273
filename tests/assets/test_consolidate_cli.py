"""`loci consolidate` through the command line: one progress line per stage as it
completes (its count and seconds), then the summary."""

from __future__ import annotations

import functools
import re

from typer.testing import CliRunner

import assets.run
from assets.run import STAGE_COUNTS
from loci.cli import app
from tests.assets.support import BATCH_1, ingest, make_settings, shared_instance


def test_consolidate_prints_one_line_per_stage_with_count_and_seconds(tmp_path, monkeypatch):
    settings = make_settings(tmp_path)
    ingest(settings, BATCH_1)
    for name, value in {"CONFIG": str(tmp_path / "absent.toml"), "EMBEDDER": "hash", "MERGER": "extractive"}.items():
        monkeypatch.setenv(f"LOCI_{name}", value)
    # The real run, on the test session's in-memory Dagster instance (a fresh local one
    # costs seconds of schema migrations).
    monkeypatch.setattr(assets.run, "run_consolidation",
                        functools.partial(assets.run.run_consolidation, instance=shared_instance()))

    result = CliRunner().invoke(app, ["consolidate", "--data-dir", settings.data_dir])

    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()
             if line.split()[:1] and line.split()[0] in STAGE_COUNTS}
    assert list(lines) == list(STAGE_COUNTS)  # every stage, in the order they complete
    assert re.fullmatch(r"landed_events\s+13 events landed\s+\d+\.\d\d s", lines["landed_events"].strip())
    assert re.search(r"\b1 clusters merged\b", lines["merged_items"])
    assert "snapshot_published" in result.output  # the summary follows
