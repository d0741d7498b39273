"""The command line as a user runs it (typer's CliRunner over `loci.cli.app`, real inbox,
DuckDB warehouse, Dagster job and snapshot in a temporary data directory): an imported
history stays findable after consolidation, bad ingest lines are named and fail the
command, and read commands keep answering while a consolidation holds the warehouse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loci.cli import app
from pipelines.settings import Settings
from pipelines.warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The test's own settings: no loci.toml of the working tree, fast embedder and merger.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")
    monkeypatch.setenv("LOCI_MERGER", "extractive")
    return tmp_path / "data"


def run(*args: str | Path) -> "CliRunner.Result":
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def chat_file(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


SAID_IN_MARCH = "2026-03-02T10:00:00+00:00"  # months before any run of this test
GARDEN = {"user_id": "ann", "project_id": "garden", "session_id": "s1"}


def test_an_imported_history_is_still_found_after_consolidation(data_dir: Path, tmp_path: Path) -> None:
    path = chat_file(tmp_path / "old.jsonl", [
        {**GARDEN, "role": "user", "at": SAID_IN_MARCH,
         "text": "We planted the blue hydrangeas along the north fence in spring."},
        {**GARDEN, "role": "assistant", "at": "2026-03-02T10:00:20+00:00",
         "text": "Noted: blue hydrangeas by the north fence."},
    ])
    assert run("ingest", path, "--data-dir", data_dir).exit_code == 0
    consolidated = run("consolidate", "--data-dir", data_dir)
    assert consolidated.exit_code == 0, consolidated.output
    found = run("search", "where are the hydrangeas planted?", "--user", "ann", "--project", "garden",
                "--data-dir", data_dir)
    assert found.exit_code == 0 and "No memory found" not in found.output
    assert found.output.count("message") == 2
    # The turns keep the date they were said (temporal questions), not the day they were learned.
    with Warehouse(Settings(data_dir=str(data_dir)).warehouse_path, read_only=True) as wh:
        items = [i for i in wh.active_items() if i.type == "message"]
    assert len(items) == 2 and min(i.created_at for i in items) == SAID_IN_MARCH
    assert all(i.metadata["learned_at"] > SAID_IN_MARCH for i in items)
