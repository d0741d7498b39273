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
    catalog = run("search", "where are the hydrangeas planted?", "--user", "ann", "--project", "garden",
                  "--mode", "catalog", "--data-dir", data_dir)
    assert "user on" in catalog.output and "assistant on" in catalog.output  # who said it, when, a gist
    # auto: the READ-ONLY block when a found memory is confident enough, else the catalog table
    auto = run("search", "where are the hydrangeas planted?", "--user", "ann", "--project", "garden",
               "--mode", "auto", "--data-dir", data_dir)
    assert auto.exit_code == 0 and "[TURN:" in auto.output and "user on" not in auto.output, auto.output
    # The turns keep the date they were said (temporal questions), not the day they were learned.
    with Warehouse(Settings(data_dir=str(data_dir)).warehouse_path, read_only=True) as wh:
        items = [i for i in wh.active_items() if i.type == "message"]
    assert len(items) == 2 and min(i.created_at for i in items) == SAID_IN_MARCH
    assert all(i.metadata["learned_at"] > SAID_IN_MARCH for i in items)


def test_the_demo_runs_the_main_job_end_to_end(data_dir: Path) -> None:
    """`loci demo` (the README's first command): sample chats in, consolidated memory and a
    snapshot out, each tier listed, a recall answered."""
    result = run("demo", "--data-dir", data_dir)
    assert result.exit_code == 0, result.output
    assert "status success" in result.output or "success" in result.output
    assert (data_dir / "snapshots" / "CURRENT").is_file()
    assert "No memory found" not in result.output.split("4. recall")[-1]
    assert "tile latency" in result.output.split("4. recall")[-1].lower()


# -- ingest: bad lines are named, and the command says it skipped them ---------------------------


def test_ingest_names_each_bad_line_and_exits_non_zero(data_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    path.write_text(
        '{"role": "user", "text": "The north fence gets hydrangeas."}\n'
        '{"role": "user", "text": ""}\n'
        '{"role": "user", "text": "When?", "at": "next spring"}\n'
        '{"role": "user", "text": "Fine too.", "at": "2026-03-02T10:00:00+00:00"}\n',
        encoding="utf-8",
    )
    result = run("ingest", path, "--data-dir", data_dir)
    assert result.exit_code == 1
    assert "line 2: text is blank" in result.output
    assert "line 3: at 'next spring' is not an ISO-8601 time" in result.output
    assert "2 line(s) skipped" in result.output
    assert "Traceback" not in result.output
    clean = chat_file(tmp_path / "clean.jsonl", [{"role": "user", "text": "All good."}])
    assert run("ingest", clean, "--data-dir", data_dir).exit_code == 0


# -- read commands while a consolidation holds the warehouse ------------------------------------

# Holds the warehouse as a consolidation run does (its lock and a read-write DuckDB
# connection) in another process, until its stdin closes.
HOLDER = """
import sys
from pipelines.consolidate.lock import WarehouseLock
from pipelines.settings import Settings
from pipelines.warehouse import Warehouse
settings = Settings(data_dir=sys.argv[1])
with WarehouseLock(settings.warehouse_path), Warehouse(settings.warehouse_path):
    print("holding", flush=True)
    sys.stdin.read()
"""


def test_read_commands_answer_from_snapshot_and_inbox_while_a_run_holds_the_warehouse(
        data_dir: Path, tmp_path: Path) -> None:
    path = chat_file(tmp_path / "chats.jsonl", [
        {**GARDEN, "role": "user", "text": "Where do the hydrangeas go?"},
        {**GARDEN, "role": "assistant", "text": (
            'North fence.<MEMORY_PROPOSALS_JSON>[{"type": "decision", "title": "Hydrangea bed", '
            '"content": "The hydrangeas go along the north fence.", "why_store": "plan"}]'
            '</MEMORY_PROPOSALS_JSON>')},
    ])
    assert run("ingest", path, "--data-dir", data_dir).exit_code == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(data_dir)], cwd=ROOT, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "holding"
        note = "note: a consolidation is running (it holds the warehouse)"

        stats = run("stats", "--data-dir", data_dir)
        assert stats.exit_code == 0 and "Traceback" not in stats.output
        assert stats.stderr.count(note) == 1 and len(stats.stderr.strip().splitlines()) == 1
        served = json.loads(stats.stdout)["served"]
        assert served == {"active_items": 3, "by_tier_type": {"stm/decision": 1, "stm/message": 2},
                          "by_state": {"recallable": 3}}

        listed = run("list", "--tier", "stm", "--data-dir", data_dir)
        assert listed.exit_code == 0 and note in listed.stderr
        assert "Hydrangea bed" in listed.stdout

        found = run("search", "hydrangeas north fence", "--user", "ann", "--project", "garden",
                    "--data-dir", data_dir)
        assert found.exit_code == 0 and note in found.stderr
        assert "Hydrangea bed" in found.stdout
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    # Once the run is over, the same commands read the warehouse again, without a note.
    after = run("stats", "--data-dir", data_dir)
    assert after.exit_code == 0 and "note:" not in after.stderr


def test_loci_proxy_refuses_a_negative_timeout_before_listening(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["proxy", "--total-timeout", "-1", "--data-dir", str(data_dir)])
    assert result.exit_code == 1
    assert "proxy timeouts must be >= 0 seconds" in result.output and "Traceback" not in result.output


def test_ingesting_a_file_again_reports_that_nothing_new_landed(data_dir: Path, tmp_path: Path) -> None:
    proposal = ('Noted. <MEMORY_PROPOSALS_JSON>[{"type": "fact", "title": "Hydrangeas", "content": '
                '"Blue hydrangeas grow by the north fence.", "why_store": "garden plan"}]</MEMORY_PROPOSALS_JSON>')
    path = chat_file(tmp_path / "chat.jsonl", [
        {**GARDEN, "role": "user", "at": SAID_IN_MARCH, "text": "We planted blue hydrangeas by the north fence."},
        {**GARDEN, "role": "assistant", "at": SAID_IN_MARCH, "text": proposal},
    ])
    first = run("ingest", path, "--data-dir", data_dir)
    assert first.exit_code == 0 and "2 turns landed, 1 accepted" in " ".join(first.output.split()), first.output
    again = run("ingest", path, "--data-dir", data_dir)
    assert again.exit_code == 0, again.output
    said = " ".join(again.output.split())
    assert "0 turns landed" in said and "2 already in the inbox" in said, again.output


def test_importing_a_history_again_as_another_speaker_says_how_it_was_imported(data_dir: Path, tmp_path: Path) -> None:
    """Nora imports her old chats as "Nora", then again as "Assistant" (a slip, or to fix the
    first): every turn was counted as already landed and kept its speaker, without a word.
    Now it fails, naming the earlier --speaker; nothing lands."""
    path = tmp_path / "old.json"
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": {
        "speaker_a": "Nora", "speaker_b": "Assistant", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Nora", "dia_id": "D1:1", "text": "I run the Lisbon half marathon."},
                      {"speaker": "Assistant", "dia_id": "D1:2", "text": "Good luck in March!"}]}}]))
    owner = ("--user", "nora", "--project", "home", "--data-dir", data_dir)
    assert run("import", path, *owner, "--speaker", "Nora").exit_code == 0
    again = CliRunner().invoke(app, ["import", str(path), *map(str, owner), "--speaker", "Assistant"])
    said = " ".join(again.output.split())
    assert again.exit_code != 0 and "imported before with --speaker Nora" in said, again.output
    same = run("import", path, *owner, "--speaker", "Nora")
    assert same.exit_code == 0 and "2 already in the inbox" in " ".join(same.output.split()), same.output
